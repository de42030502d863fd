/*
 * jsonb_to_bson.c
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
#include "jsonb_to_bson.h"

#include "miscadmin.h"

#include "extjson_to_bson.h"
#include "numeric_to_bson.h"

static void append_container_elements(BsonWriter *w, const JsonbContainer *jc,
									  BsonExtJsonInput *ej);

/* The data area of a container, after its JEntry array. */
static inline const char *
container_data(const JsonbContainer *jc, uint32 nchildren)
{
	return (const char *) &jc->children[nchildren];
}

/*
 * A cursor over the children of a container, for the walks off the hot
 * path (Extended JSON loading, error paths); append_container_elements
 * unrolls the same steps by hand.
 */
typedef struct ChildCursor
{
	const JsonbContainer *jc;
	const char *data;
	uint32		count;
	uint32		i;
	uint32		key_off;
	uint32		val_off;
	bool		object;
} ChildCursor;

typedef struct Child
{
	const char *key;			/* NULL in an array */
	int			keylen;
	uint32		index;
	JEntry		je;
	uint32		start;			/* value area: data[start..end) */
	uint32		end;
} Child;

static pg_attribute_always_inline void
cursor_init(ChildCursor *c, const JsonbContainer *jc)
{
	c->jc = jc;
	c->count = JsonContainerSize(jc);
	c->object = JsonContainerIsObject(jc);
	c->data = container_data(jc, c->object ? c->count * 2 : c->count);
	c->i = 0;
	c->key_off = 0;
	c->val_off = c->object ? getJsonbOffset(jc, c->count) : 0;
}

static pg_attribute_always_inline bool
cursor_next(ChildCursor *c, Child *child)
{
	if (c->i >= c->count)
		return false;
	child->key = NULL;
	child->keylen = 0;
	child->index = c->i;
	if (c->object)
	{
		uint32		key_start = c->key_off;

		JBE_ADVANCE_OFFSET(c->key_off, c->jc->children[c->i]);
		child->key = c->data + key_start;
		child->keylen = (int) (c->key_off - key_start);
		child->je = c->jc->children[c->count + c->i];
	}
	else
		child->je = c->jc->children[c->i];
	child->start = c->val_off;
	JBE_ADVANCE_OFFSET(c->val_off, child->je);
	child->end = c->val_off;
	c->i++;
	return true;
}

/* Where a child's value starts: numerics and containers are INTALIGNed */
static inline const char *
child_value(const ChildCursor *c, const Child *child)
{
	JEntry		type = child->je & JENTRY_TYPEMASK;

	return c->data + (type == JENTRY_ISNUMERIC || type == JENTRY_ISCONTAINER
					  ? INTALIGN(child->start) : child->start);
}

/*
 * Extended JSON: may the object be a wrapper, that is, has it a wrapper key?
 * Runs for every nested object, so it only looks at the keys.
 */
static bool
has_wrapper_key(const JsonbContainer *jc)
{
	uint32		count = JsonContainerSize(jc);
	const char *data = container_data(jc, count * 2);
	uint32		off = 0;

	for (uint32 i = 0; i < count; i++)
	{
		uint32		start = off;

		JBE_ADVANCE_OFFSET(off, jc->children[i]);
		if (off - start > 1 && data[start] == '$' &&
			bson_extjson_is_wrapper_key(data + start, (int) (off - start),
										JBE_ISSTRING(jc->children[count + i])))
			return true;
	}
	return false;
}

/* Extended JSON: a container as an EjValue, objects down to depth levels */
static EjValue *
load_container(EjArena *arena, const JsonbContainer *jc, int depth)
{
	EjValue    *ev = ej_new_value(arena);
	ChildCursor c;
	Child		child;

	ev->kind = JsonContainerIsObject(jc) ? EJ_OBJECT : EJ_ARRAY;
	ev->source = jc;
	ev->locator = (const char *) jc;
	if (ev->kind != EJ_OBJECT || depth <= 0)
		return ev;

	cursor_init(&c, jc);
	ev->nfields = 0;
	ev->fields = ej_new_fields(arena, Max(c.count, 1));
	while (cursor_next(&c, &child))
	{
		EjField    *f = &ev->fields[ev->nfields++];
		const char *value = child_value(&c, &child);
		EjValue    *v;

		f->key = child.key;
		f->keylen = child.keylen;
		if (JBE_ISCONTAINER(child.je))
			v = load_container(arena, (const JsonbContainer *) value, depth - 1);
		else
		{
			v = ej_new_value(arena);
			v->locator = value;
			switch (child.je & JENTRY_TYPEMASK)
			{
				case JENTRY_ISSTRING:
					v->kind = EJ_STRING;
					v->str = value;
					v->len = (int) (child.end - child.start);
					break;
				case JENTRY_ISNUMERIC:
					v->kind = EJ_NUMBER;
					v->num = (Numeric) value;
					break;
				case JENTRY_ISBOOL_TRUE:
					v->kind = EJ_TRUE;
					break;
				case JENTRY_ISBOOL_FALSE:
					v->kind = EJ_FALSE;
					break;
				default:
					v->kind = EJ_NULL;
					break;
			}
		}
		f->value = v;
	}
	return ev;
}

/* Extended JSON: the object ev (a $scope) as an embedded document */
static void
write_jsonb_document(void *arg, const EjValue *ev)
{
	BsonExtJsonInput *ej = (BsonExtJsonInput *) arg;
	Size		doc = bson_open(ej->w);

	append_container_elements(ej->w, (const JsonbContainer *) ev->source, ej);
	bson_close(ej->w, doc);
}

pg_noreturn static void
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


/*
 * One value, its element header written already: the type byte goes to
 * *type_at once the value's BSON type is known (for a number that takes a
 * look at its digits).  data[start..end) is the value's area.
 */
static pg_attribute_always_inline void
write_value(BsonWriter *w, char *type_at, JEntry je, const char *data,
			uint32 start, uint32 end, BsonExtJsonInput *ej)
{
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

				if (unlikely(ej != NULL) && JsonContainerIsObject(child) &&
					JsonContainerSize(child) == 1 &&
					JBE_ISSTRING(child->children[1]))
				{
					/*
					 * {"$oid": "..."} and its kind, the most common wrappers:
					 * straight from the key and string, one lookup, nothing
					 * loaded.  One pair: the key, then the string.
					 */
					const char *kv = container_data(child, 2);
					uint32		keylen = 0;
					uint32		valend;

					JBE_ADVANCE_OFFSET(keylen, child->children[0]);
					valend = keylen;
					JBE_ADVANCE_OFFSET(valend, child->children[1]);
					if (keylen > 1 && kv[0] == '$' &&
						bson_extjson_write_string_wrapper(w, type_at, kv, (int) keylen,
														  kv + keylen, (int) (valend - keylen)))
						break;
				}
				if (unlikely(ej != NULL) && JsonContainerIsObject(child) &&
					has_wrapper_key(child))
				{
					int			values_mark = ej->arena.nvalues;
					int			fields_mark = ej->arena.nfields;
					bool		written;

					written = bson_extjson_write(ej, type_at,
												 load_container(&ej->arena, child,
																EJ_LOAD_DEPTH));
					ej->arena.nvalues = values_mark;
					ej->arena.nfields = fields_mark;
					if (written)
						break;
				}
				*type_at = JsonContainerIsObject(child) ? BSON_TYPE_DOCUMENT
					: BSON_TYPE_ARRAY;
				open = bson_open(w);
				append_container_elements(w, child, ej);
				bson_close(w, open);
				break;
			}
		default:
			elog(ERROR, "unexpected jsonb entry type: 0x%08x",
				 je & JENTRY_TYPEMASK);
	}
}

static pg_attribute_always_inline void
append_element(BsonWriter *w, JEntry je, const char *data, uint32 start,
			   uint32 end, const char *key, int keylen, uint32 index,
			   BsonExtJsonInput *ej)
{
	char	   *type_at = key ? bson_key_deferred(w, key, keylen, BSON_SCALAR_VALSIZE)
		: bson_index_key_deferred(w, index, BSON_SCALAR_VALSIZE);

	write_value(w, type_at, je, data, start, end, ej);
}

/* The elements of an object or array, in stored order. */
static void
append_container_elements(BsonWriter *w, const JsonbContainer *jc,
						  BsonExtJsonInput *ej)
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
						   data + key_start, (int) (key_off - key_start), 0, ej);
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
			append_element(w, je, data, start, off, NULL, 0, i, ej);
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
locate_in_container(const JsonbContainer *jc, const char *target, StringInfo out)
{
	ChildCursor c;
	Child		child;
	int			saved_len = out->len;

	check_stack_depth();
	cursor_init(&c, jc);
	while (cursor_next(&c, &child))
	{
		const char *value = child_value(&c, &child);

		if (child.key)
			bson_path_append_key(out, child.key, child.keylen,
								 child.key == target ? BSON_KEY_SERVER_FAILED : BSON_KEY_SERVER);
		else
			bson_path_append_index(out, (int) child.index);
		if (child.key == target || value == target ||
			c.data + child.start == target)
			return true;
		if (JBE_ISCONTAINER(child.je) &&
			locate_in_container((const JsonbContainer *) value, target, out))
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
bson_append_jsonb_object_elements(BsonWriter *w, const JsonbContainer *jc,
								  bool extended_json, bool legacy_extended_json)
{
	BsonLocateCallback saved_locate = w->locate;
	void	   *saved_arg = w->locate_arg;
	BsonExtJsonInput ej;

	Assert(JsonContainerIsObject(jc));
	w->locate = locate_jsonb;
	w->locate_arg = (void *) jc;
	ej.w = w;
	ej.legacy = legacy_extended_json;
	ej.write_document = write_jsonb_document;
	ej.arg = &ej;
	ej.current = NULL;
	ej.arena.nvalues = 0;
	ej.arena.nfields = 0;
	append_container_elements(w, jc, extended_json ? &ej : NULL);
	w->locate = saved_locate;
	w->locate_arg = saved_arg;
}

void
bson_write_jsonb_value(BsonWriter *w, char *type_at, const Jsonb *jb)
{
	BsonLocateCallback saved_locate = w->locate;
	void	   *saved_arg = w->locate_arg;

	w->locate = locate_jsonb;
	w->locate_arg = (void *) &jb->root;
	if (JB_ROOT_IS_SCALAR(jb))
	{
		/* a scalar is stored as a one-element array */
		const JsonbContainer *root = &jb->root;
		uint32		end = 0;

		JBE_ADVANCE_OFFSET(end, root->children[0]);
		write_value(w, type_at, root->children[0], container_data(root, 1), 0, end, NULL);
	}
	else
	{
		Size		open;

		*type_at = JB_ROOT_IS_OBJECT(jb) ? BSON_TYPE_DOCUMENT : BSON_TYPE_ARRAY;
		open = bson_open(w);
		append_container_elements(w, &jb->root, NULL);
		bson_close(w, open);
	}
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
