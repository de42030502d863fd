/*
 * bson_jsonb.c
 *		jsonb -> BSON: a direct walk of the jsonb container format.
 *
 * Rather than JsonbIteratorNext (which pallocs per container and fills a
 * JsonbValue per token), this walks the JEntry arrays of utils/jsonb.h
 * directly: an object of n pairs has its n keys in children[0..n), its n
 * values in children[n..2n), and the data of all of them after the JEntry
 * array, in that order; each JEntry holds either its length or (every
 * JB_OFFSET_STRIDE entries) its end offset, so one running offset per
 * sequence gives each child's start and end.  Numerics and nested containers
 * start at an INTALIGNed offset.  This is jsonb's on-disk format, stable
 * across versions.
 *
 * Keys come out in jsonb's stored order: by length, then bytewise.
 */
#include "bson_jsonb.h"

#include "miscadmin.h"

#include "bson_numeric.h"

static void append_container_elements(BsonWriter *w, const JsonbContainer *jc);

/* The data area of a container, after its JEntry array. */
static inline const char *
container_data(const JsonbContainer *jc, uint32 nchildren)
{
	return (const char *) &jc->children[nchildren];
}

static void pg_attribute_noreturn()
report_unrepresentable(BsonWriter *w, Numeric num)
{
	StringInfoData where;
	int			digits;
	int			exponent;

	initStringInfo(&where);
	bson_describe_location(w, (const char *) num, &where);
	bson_numeric_shape(num, &digits, &exponent);
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("number at %s is out of range for BSON", where.data),
			 errdetail("The number has %d significant digits and a decimal exponent of %d: a double would round it to %s, and decimal128 holds at most 34 significant digits, at magnitudes from 1E-6176 to 9.99...E+6144.",
					   digits, exponent, exponent > 0 ? "infinity" : "zero"),
			 errhint("Round the number, or store it as a JSON string.")));
}

/* Value bytes to reserve with a key: enough for any scalar's value. */
#define SCALAR_VALSIZE 16

/*
 * One element: the header (object key, or array index when key is NULL)
 * then the value.  data[start..end) is the value's area.  The key is written
 * first and the type byte filled in once the value's BSON type is known
 * (for a number that takes a look at its digits).
 */
static pg_attribute_always_inline void
append_element(BsonWriter *w, JEntry je, const char *data, uint32 start,
			   uint32 end, const char *key, int keylen, uint32 index)
{
	char	   *type_at = key ? bson_key_deferred(w, key, keylen, SCALAR_VALSIZE)
		: bson_index_key_deferred(w, index, SCALAR_VALSIZE);

	switch (je & JENTRY_TYPEMASK)
	{
		case JENTRY_ISSTRING:
			{
				int			len = (int) (end - start);

				*type_at = BSON_TYPE_STRING;
				bson_reserve(w, BSON_STRING_VALSIZE(len));
				bson_put_string(w, data + start, len);
				break;
			}
		case JENTRY_ISNUMERIC:
			{
				Numeric		num = (Numeric) (data + INTALIGN(start));
				BsonNumber n;

				if (likely(bson_numeric_small_int(num, &n.v.i32)))
				{
					*type_at = BSON_TYPE_INT32;
					bson_put_int32(w, n.v.i32);
					break;
				}
				if (bson_numeric_simple_double(num, &n.v.d))
				{
					*type_at = BSON_TYPE_DOUBLE;
					bson_put_double(w, n.v.d);
					break;
				}
				bson_number_from_json_numeric(num, &n);
				switch (n.kind)
				{
					case BSON_NUMBER_INT32:
						*type_at = BSON_TYPE_INT32;
						bson_put_int32(w, n.v.i32);
						break;
					case BSON_NUMBER_INT64:
						*type_at = BSON_TYPE_INT64;
						bson_put_int64(w, n.v.i64);
						break;
					case BSON_NUMBER_DOUBLE:
						*type_at = BSON_TYPE_DOUBLE;
						bson_put_double(w, n.v.d);
						break;
					case BSON_NUMBER_DECIMAL128:
						*type_at = BSON_TYPE_DECIMAL128;
						bson_put_decimal128(w, n.v.dec.low, n.v.dec.high);
						break;
					case BSON_NUMBER_UNREPRESENTABLE:
						report_unrepresentable(w, num);
				}
				break;
			}
		case JENTRY_ISBOOL_FALSE:
		case JENTRY_ISBOOL_TRUE:
			*type_at = BSON_TYPE_BOOL;
			bson_put_bool(w, (je & JENTRY_TYPEMASK) == JENTRY_ISBOOL_TRUE);
			break;
		case JENTRY_ISNULL:
			*type_at = BSON_TYPE_NULL;
			break;
		case JENTRY_ISCONTAINER:
			{
				const JsonbContainer *child =
					(const JsonbContainer *) (data + INTALIGN(start));
				Size		open;

				*type_at = JsonContainerIsObject(child) ? BSON_TYPE_DOCUMENT
					: BSON_TYPE_ARRAY;
				open = bson_open(w);
				append_container_elements(w, child);
				bson_close(w, open);
				break;
			}
		default:
			elog(ERROR, "unexpected jsonb entry type: 0x%08x",
				 je & JENTRY_TYPEMASK);
	}
}

/* The elements of an object or array, in stored order. */
static void
append_container_elements(BsonWriter *w, const JsonbContainer *jc)
{
	uint32		count = JsonContainerSize(jc);

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();

	if (JsonContainerIsObject(jc))
	{
		const char *data = container_data(jc, count * 2);
		uint32		key_off = 0;
		uint32		val_off = getJsonbOffset(jc, count);

		for (uint32 i = 0; i < count; i++)
		{
			JEntry		kje = jc->children[i];
			JEntry		vje = jc->children[count + i];
			uint32		key_start = key_off;
			uint32		val_start = val_off;

			JBE_ADVANCE_OFFSET(key_off, kje);
			JBE_ADVANCE_OFFSET(val_off, vje);
			append_element(w, vje, data, val_start, val_off,
						   data + key_start, (int) (key_off - key_start), 0);
			if ((i & 4095) == 4095)
				CHECK_FOR_INTERRUPTS();
		}
	}
	else
	{
		const char *data = container_data(jc, count);
		uint32		off = 0;

		for (uint32 i = 0; i < count; i++)
		{
			JEntry		je = jc->children[i];
			uint32		start = off;

			JBE_ADVANCE_OFFSET(off, je);
			append_element(w, je, data, start, off, NULL, 0, i);
			if ((i & 4095) == 4095)
				CHECK_FOR_INTERRUPTS();
		}
	}
}

/*
 * Error paths only: find the key or value whose data starts at target and
 * write its path ("a.b[2]") into out.  Walking the document again after the
 * fact keeps path bookkeeping out of the hot loop.
 */
static bool
is_plain_key(const char *key, int keylen)
{
	if (keylen == 0 || (key[0] >= '0' && key[0] <= '9'))
		return false;
	for (int i = 0; i < keylen; i++)
	{
		char		c = key[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '$'))
			return false;
	}
	return true;
}

/*
 * orders[2].at, or ["odd key"] where a key is not a plain identifier.  The
 * key that failed conversion itself is shown with its non-ASCII bytes as
 * \xNN, since they are what could not be converted; every other key on the
 * path was converted already and is shown as it is.
 */
static void
append_path_part(StringInfo out, const char *key, int keylen, int index,
				 bool escape_non_ascii)
{
	if (key == NULL)
	{
		appendStringInfo(out, "[%d]", index);
		return;
	}
	if (is_plain_key(key, keylen))
	{
		if (out->len > 0)
			appendStringInfoChar(out, '.');
		appendBinaryStringInfo(out, key, keylen);
		return;
	}
	appendStringInfoString(out, "[\"");
	for (int i = 0; i < keylen; i++)
	{
		unsigned char c = (unsigned char) key[i];

		if (c < 0x20 || c == 0x7F || (c >= 0x80 && escape_non_ascii))
			appendStringInfo(out, "\\x%02x", c);
		else
		{
			if (c == '"' || c == '\\')
				appendStringInfoChar(out, '\\');
			appendStringInfoChar(out, (char) c);
		}
	}
	appendStringInfoString(out, "\"]");
}

static bool
locate_in_container(const JsonbContainer *jc, const char *target, StringInfo out)
{
	uint32		count = JsonContainerSize(jc);
	bool		is_object = JsonContainerIsObject(jc);
	uint32		nchildren = is_object ? count * 2 : count;
	const char *data = container_data(jc, nchildren);
	uint32		key_off = 0;
	uint32		val_off = is_object ? getJsonbOffset(jc, count) : 0;
	int			saved_len = out->len;

	check_stack_depth();
	for (uint32 i = 0; i < count; i++)
	{
		const char *key = NULL;
		int			keylen = 0;
		JEntry		vje = jc->children[is_object ? count + i : i];
		uint32		val_start = val_off;

		if (is_object)
		{
			uint32		key_start = key_off;

			JBE_ADVANCE_OFFSET(key_off, jc->children[i]);
			key = data + key_start;
			keylen = (int) (key_off - key_start);
		}
		JBE_ADVANCE_OFFSET(val_off, vje);

		append_path_part(out, key, keylen, (int) i, key == target);
		if (key == target)
			return true;
		if (JBE_ISCONTAINER(vje))
		{
			if (locate_in_container((const JsonbContainer *) (data + INTALIGN(val_start)),
									target, out))
				return true;
		}
		else if (data + val_start == target ||
				 (JBE_ISNUMERIC(vje) && data + INTALIGN(val_start) == target))
			return true;
		out->len = saved_len;
		out->data[out->len] = '\0';
	}
	return false;
}

static void
locate_jsonb(void *arg, const char *input, StringInfo path)
{
	if (!locate_in_container((const JsonbContainer *) arg, input, path))
	{
		resetStringInfo(path);
		appendStringInfoString(path, "an unknown position");
	}
}

void
bson_append_jsonb_object_elements(BsonWriter *w, const JsonbContainer *jc)
{
	BsonLocateCallback saved_locate = w->locate;
	void	   *saved_arg = w->locate_arg;

	Assert(JsonContainerIsObject(jc));
	w->locate = locate_jsonb;
	w->locate_arg = (void *) jc;
	append_container_elements(w, jc);
	w->locate = saved_locate;
	w->locate_arg = saved_arg;
}

const char *
bson_jsonb_root_type_name(const Jsonb *jb)
{
	if (JB_ROOT_IS_OBJECT(jb))
		return "object";
	if (!JB_ROOT_IS_SCALAR(jb))
		return "array";
	switch (jb->root.children[0] & JENTRY_TYPEMASK)
	{
		case JENTRY_ISSTRING:
			return "string";
		case JENTRY_ISNUMERIC:
			return "number";
		case JENTRY_ISBOOL_FALSE:
		case JENTRY_ISBOOL_TRUE:
			return "boolean";
		case JENTRY_ISNULL:
			return "null";
	}
	return "scalar";
}
