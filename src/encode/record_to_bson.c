/*
 * record_to_bson.c
 *		Typed rows -> BSON: each column as its native BSON type.
 *
 * The catalogs are read once per query: for the row type, each column's
 * BSON mapping (domains resolved to their base type, arrays to their element
 * type, composites to their own columns, output functions looked up) is
 * worked out into a BsonRecordCache kept in fn_extra, as contrib/hstore's
 * hstore_from_record keeps its column I/O data.  An anonymous record nested
 * in a row carries its row type in each value; each such row type is worked
 * out the first time it turns up and kept with the rest.  Per row there is
 * only the tuple to deform and the values to write.
 *
 * Mapping: boolean -> boolean; smallint, integer -> int32; bigint -> int64;
 * real, double precision -> double; numeric -> exact decimal128; text,
 * varchar, char(n), name -> string; bytea -> binary 0; uuid -> binary 4;
 * date, timestamp, timestamptz -> UTC datetime (milliseconds, floored);
 * with the fallback for values without a mapping (BsonUnmappable), +-infinity
 * as the latest / earliest datetime drivers decode and a numeric with no
 * exact decimal128 as the string of its digits;
 * json -> as json_to_bson reads it; jsonb -> as to_bson maps it; arrays ->
 * arrays (nested per dimension); composites -> embedded documents; anything
 * else -> string from the type's output function.
 */
#include "record_to_bson.h"

#include "access/htup_details.h"
#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/arrayaccess.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/timestamp.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/typcache.h"
#include "utils/uuid.h"

#include "json_to_bson.h"
#include "jsonb_to_bson.h"
#include "numeric_to_bson.h"

typedef enum ValueKind
{
	VK_BOOL,
	VK_INT2,
	VK_INT4,
	VK_INT8,
	VK_FLOAT4,
	VK_FLOAT8,
	VK_NUMERIC,
	VK_TEXT,					/* text, varchar, bpchar */
	VK_NAME,
	VK_BYTEA,
	VK_UUID,
	VK_DATE,
	VK_TIMESTAMP,				/* with or without time zone: both UTC */
	VK_JSON,
	VK_JSONB,
	VK_ARRAY,
	VK_COMPOSITE,
	VK_OUTPUT					/* anything else: the output function's text */
} ValueKind;

typedef struct ValueInfo ValueInfo;

/* A row type's columns */
struct BsonRecordCache
{
	Oid			typid;
	int32		typmod;
	TupleDesc	tupdesc;		/* our own copy, for heap_deform_tuple */
	struct ColumnInfo *columns;
	BsonRecordCache *next;		/* other row types seen by the same call */
	bool		has_composites; /* a column holds a named row type, at any
								 * depth: its definition is not in tupdesc */
};

struct ValueInfo
{
	ValueKind	kind;
	/* VK_ARRAY */
	ValueInfo  *element;
	Oid			elemtype;
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	/*
	 * VK_COMPOSITE: the columns of a named row type.  An anonymous record
	 * (record is NULL) carries its row type in each value, as a typmod; the
	 * row types met in this place are kept in records, made in mcxt (the
	 * call's memory) the first time each turns up, so that an array of a
	 * million records looks its row type up once, not per element.
	 */
	BsonRecordCache *record;
	BsonRecordCache *records;
	MemoryContext mcxt;
	/* VK_OUTPUT */
	FmgrInfo	output;
};

typedef struct ColumnInfo
{
	const char *name;
	int			namelen;
	bool		dropped;
	/*
	 * A value of this column, at any depth, was written by the fallback for
	 * values without a mapping, and the user was told: once is enough.  The
	 * cache lives as long as the query (the SQL functions) or as the table's
	 * definition (the output plugin), and so does the flag.
	 */
	bool		warned_fallback;
	ValueInfo	value;
} ColumnInfo;

/* Where a value is, for error messages: col.field[2] */
typedef struct ValuePath
{
	const struct ValuePath *parent;
	const char *name;			/* NULL for an array element */
	int			namelen;
	int			index;
	ColumnInfo *column;			/* the row's column, in the outermost step
								 * only */
} ValuePath;

static void build_value_info(ValueInfo *vi, Oid typid, int32 typmod,
							 MemoryContext mcxt);
static bool value_has_composites(const ValueInfo *vi);
static void append_fields(BsonWriter *w, BsonRecordCache *cache,
						  HeapTupleHeader row, const BsonRecordOptions *opts,
						  const ValuePath *parent);

/* The columns of tupdesc, a copy the cache keeps, worked out into mcxt */
static void
build_columns(BsonRecordCache *cache, TupleDesc tupdesc, MemoryContext mcxt)
{
	cache->tupdesc = tupdesc;
	cache->columns = MemoryContextAllocZero(mcxt, sizeof(ColumnInfo) * Max(tupdesc->natts, 1));
	for (int i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		ColumnInfo *col = &cache->columns[i];

		col->dropped = att->attisdropped;
		if (col->dropped)
			continue;
		col->name = NameStr(att->attname);
		col->namelen = strlen(col->name);
		build_value_info(&col->value, att->atttypid, att->atttypmod, mcxt);
		if (value_has_composites(&col->value))
			cache->has_composites = true;
	}
}

static void
build_record(BsonRecordCache *cache, Oid typid, int32 typmod, MemoryContext mcxt)
{
	TupleDesc	tupdesc = lookup_rowtype_tupdesc(typid, typmod);
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	TupleDesc	copy = CreateTupleDescCopy(tupdesc);

	MemoryContextSwitchTo(old);
	ReleaseTupleDesc(tupdesc);
	cache->typid = typid;
	cache->typmod = typmod;
	build_columns(cache, copy, mcxt);
}

/* How values of typid are written, worked out once */
static void
build_value_info(ValueInfo *vi, Oid typid, int32 typmod, MemoryContext mcxt)
{
	Oid			base = getBaseTypeAndTypmod(typid, &typmod);
	Oid			elemtype;

	check_stack_depth();
	switch (base)
	{
		case BOOLOID:
			vi->kind = VK_BOOL;
			return;
		case INT2OID:
			vi->kind = VK_INT2;
			return;
		case INT4OID:
			vi->kind = VK_INT4;
			return;
		case INT8OID:
			vi->kind = VK_INT8;
			return;
		case FLOAT4OID:
			vi->kind = VK_FLOAT4;
			return;
		case FLOAT8OID:
			vi->kind = VK_FLOAT8;
			return;
		case NUMERICOID:
			vi->kind = VK_NUMERIC;
			return;
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
			vi->kind = VK_TEXT;
			return;
		case NAMEOID:
			vi->kind = VK_NAME;
			return;
		case BYTEAOID:
			vi->kind = VK_BYTEA;
			return;
		case UUIDOID:
			vi->kind = VK_UUID;
			return;
		case DATEOID:
			vi->kind = VK_DATE;
			return;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			vi->kind = VK_TIMESTAMP;
			return;
		case JSONOID:
			vi->kind = VK_JSON;
			return;
		case JSONBOID:
			vi->kind = VK_JSONB;
			return;
	}

	elemtype = get_element_type(base);
	if (OidIsValid(elemtype))
	{
		vi->kind = VK_ARRAY;
		vi->elemtype = elemtype;
		get_typlenbyvalalign(elemtype, &vi->elmlen, &vi->elmbyval, &vi->elmalign);
		vi->element = MemoryContextAllocZero(mcxt, sizeof(ValueInfo));
		build_value_info(vi->element, elemtype, -1, mcxt);
		return;
	}
	if (type_is_rowtype(base))
	{
		vi->kind = VK_COMPOSITE;
		/* anonymous records are told apart per value, by their typmod */
		if (base == RECORDOID)
			vi->mcxt = mcxt;
		else
		{
			vi->record = MemoryContextAllocZero(mcxt, sizeof(BsonRecordCache));
			build_record(vi->record, base, typmod, mcxt);
		}
		return;
	}

	{
		Oid			output;
		bool		varlena;

		vi->kind = VK_OUTPUT;
		getTypeOutputInfo(base, &output, &varlena);
		fmgr_info_cxt(output, &vi->output, mcxt);
	}
}

/*
 * A query usually passes rows of one type, but may mix several (a UNION of
 * anonymous records): each type seen is kept, first in line the one of the
 * previous row.
 */
BsonRecordCache *
bson_record_cache(BsonRecordCache *cache, Oid typid, int32 typmod,
				  MemoryContext mcxt)
{
	BsonRecordCache *prev = NULL;

	for (BsonRecordCache *c = cache; c; prev = c, c = c->next)
	{
		if (c->typid == typid && c->typmod == typmod)
		{
			if (prev)
			{
				/* move it to the front */
				prev->next = c->next;
				c->next = cache;
			}
			return c;
		}
	}
	prev = MemoryContextAllocZero(mcxt, sizeof(BsonRecordCache));
	build_record(prev, typid, typmod, mcxt);
	prev->next = cache;
	return prev;
}

/*
 * Does a value of this kind hold a row type whose columns were looked up
 * (a named composite, or an array of them)?  An anonymous record's row type
 * comes with each value, so it does not count.
 */
static bool
value_has_composites(const ValueInfo *vi)
{
	if (vi->kind == VK_ARRAY)
		return value_has_composites(vi->element);
	return vi->kind == VK_COMPOSITE && vi->record != NULL;
}

BsonRecordCache *
bson_record_cache_for_tupdesc(TupleDesc tupdesc, MemoryContext mcxt)
{
	BsonRecordCache *cache = MemoryContextAllocZero(mcxt, sizeof(BsonRecordCache));
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	TupleDesc	copy = CreateTupleDescCopy(tupdesc);

	MemoryContextSwitchTo(old);
	cache->typid = tupdesc->tdtypeid;
	cache->typmod = tupdesc->tdtypmod;
	build_columns(cache, copy, mcxt);
	return cache;
}

bool
bson_record_cache_has_composites(const BsonRecordCache *cache)
{
	return cache->has_composites;
}

/* "col.field[2]", for error messages */
static char *
path_text(const ValuePath *path)
{
	StringInfoData buf;
	const ValuePath *parts[BSON_PATH_DEPTH_MAX];
	int			n = 0;

	initStringInfo(&buf);
	for (const ValuePath *p = path; p && n < (int) lengthof(parts); p = p->parent)
		parts[n++] = p;
	if (n == (int) lengthof(parts) && parts[n - 1]->parent)
		bson_path_append_elided(&buf);
	while (n > 0)
	{
		const ValuePath *p = parts[--n];

		if (p->name)
			bson_path_append_key(&buf, p->name, p->namelen, BSON_KEY_SERVER);
		else
			bson_path_append_index(&buf, p->index);
	}
	return buf.data;
}

/*
 * The fallback for a value without a mapping has been taken: say so, once
 * per column of the row (the outermost step of the path).
 */
static void
warn_fallback(const BsonRecordOptions *opts, const ValuePath *path,
			  const char *message)
{
	const ValuePath *top = path;

	while (top->parent)
		top = top->parent;
	if (top->column)
	{
		if (top->column->warned_fallback)
			return;
		top->column->warned_fallback = true;
	}
	ereport(WARNING,
			(errmsg("%s in \"%s\"%s%s written by the fallback for values without a BSON mapping",
					message, path_text(path),
					opts->table ? " of table " : "", opts->table ? opts->table : ""),
			 errdetail("With %s set to fallback, infinite dates and timestamps are written as the BSON datetimes "
					   BSON_DATETIME_INFINITY_TEXT " (infinity) and " BSON_DATETIME_MINUS_INFINITY_TEXT
					   " (-infinity), and numerics with no exact decimal128 as strings of all their digits. Other such values of this column are not reported.",
					   opts->policy_name)));
}

/*
 * An infinite date or timestamp: the fallback's datetime, or an error
 * naming the value.  The fallback datetimes are the latest and earliest that
 * drivers decode (record_to_bson.h), so that infinity still sorts after
 * (-infinity before) every value a consumer can read.
 */
static int64
infinite_datetime_ms(bool negative, const char *what,
					 const BsonRecordOptions *opts, const ValuePath *path)
{
	if (opts->unmappable == BSON_UNMAPPABLE_FALLBACK)
	{
		warn_fallback(opts, path,
					  psprintf("%s %s", what, negative ? "-infinity" : "infinity"));
		return negative ? BSON_DATETIME_MINUS_INFINITY_MS : BSON_DATETIME_INFINITY_MS;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("cannot convert infinite %s in \"%s\" to a BSON datetime",
					what, path_text(path)),
			 errdetail("With %s set to error, values without a BSON mapping are refused; with fallback, infinity is written as the BSON datetime "
					   BSON_DATETIME_INFINITY_TEXT " and -infinity as " BSON_DATETIME_MINUS_INFINITY_TEXT ".",
					   opts->policy_name),
			 errhint("Set %s to fallback, or filter or replace infinite values, for example with NULLIF or a CASE expression.",
					 opts->policy_name)));
	return 0;					/* keep the compiler quiet */
}

/* BSON datetime: milliseconds since 1970, floored (1969 stays right) */
static int64
timestamp_to_ms(Timestamp ts, const BsonRecordOptions *opts,
				const ValuePath *path)
{
	int64		ms;

	if (TIMESTAMP_NOT_FINITE(ts))
		return infinite_datetime_ms(TIMESTAMP_IS_NOBEGIN(ts), "timestamp", opts,
									path);
	/*
	 * Floor to milliseconds first, then move the epoch from 2000 to 1970:
	 * adding the 30 years in microseconds first would overflow int64 for the
	 * last 29 millennia of PostgreSQL's range.
	 */
	ms = ts / 1000;
	if (ts % 1000 < 0)
		ms--;
	ms += (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * 86400000;
	return ms;
}

/* The same for a date: its midnight, UTC */
static int64
date_to_ms(DateADT d, const BsonRecordOptions *opts, const ValuePath *path)
{
	if (DATE_NOT_FINITE(d))
		return infinite_datetime_ms(DATE_IS_NOBEGIN(d), "date", opts, path);
	return ((int64) d + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)) *
		INT64CONST(86400000);
}

/*
 * A numeric as decimal128, exactly (true), or else with the fallback false
 * (the caller writes its text), or an error naming the value.
 */
static bool
numeric_to_decimal128(Numeric num, uint64 *low, uint64 *high,
					  const BsonRecordOptions *opts, const ValuePath *path)
{
	int			digits;
	int			exponent;

	if (bson_decimal128_from_numeric(num, low, high))
		return true;
	if (opts->unmappable == BSON_UNMAPPABLE_FALLBACK)
	{
		warn_fallback(opts, path, "numeric without an exact decimal128");
		return false;
	}
	bson_numeric_shape(num, &digits, &exponent);
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("numeric value in \"%s\" has no exact decimal128 representation",
					path_text(path)),
			 errdetail("It has %d significant digits and a decimal exponent of %d; decimal128 holds at most 34 significant digits, at magnitudes from 1E-6176 to 9.99...E+6144. With %s set to fallback it is written as a string of all its digits.",
					   digits, exponent, opts->policy_name),
			 errhint("Round it or cast it, for example to numeric(34, 6) or to double precision, or set %s to fallback.",
					 opts->policy_name)));
	return false;				/* keep the compiler quiet */
}

static void write_value(BsonWriter *w, char *type_at, Datum value,
						ValueInfo *vi, const BsonRecordOptions *opts,
						const ValuePath *path);

/*
 * Where write_array_dim is in an array's elements, which are read one at a
 * time in storage order rather than copied out all at once: an array can
 * hold over a hundred million of them.
 */
typedef struct ArrayCursor
{
	array_iter	iter;
	int			next;			/* index of the next element */
} ArrayCursor;

/*
 * The elements of one dimension of an array, from the cursor's next element
 * on: nested arrays for the outer dimensions.
 */
static void
write_array_dim(BsonWriter *w, const int *dims, int ndim, int level,
				ArrayCursor *cursor, ValueInfo *vi, const BsonRecordOptions *opts,
				const ValuePath *path)
{
	check_stack_depth();
	for (int i = 0; i < dims[level]; i++)
	{
		ValuePath	here = {path, NULL, 0, i, NULL};
		char	   *type_at;

		CHECK_FOR_INTERRUPTS();
		type_at = bson_index_key_deferred(w, (uint32) i, 16);
		if (level < ndim - 1)
		{
			Size		open;

			*type_at = BSON_TYPE_ARRAY;
			open = bson_open(w);
			write_array_dim(w, dims, ndim, level + 1, cursor, vi, opts,
							&here);
			bson_close(w, open);
		}
		else
		{
			bool		isnull;
			Datum		elem = array_iter_next(&cursor->iter, &isnull,
											   cursor->next++, vi->elmlen,
											   vi->elmbyval, vi->elmalign);

			if (isnull)
				*type_at = BSON_TYPE_NULL;
			else
				write_value(w, type_at, elem, vi->element, opts, &here);
		}
	}
}

/*
 * Error paths: a string or key the writer cannot convert is described by
 * the path of the value being written, kept in the writer's locate_arg.
 */
static void
locate_record(void *arg, const char *input, StringInfo path)
{
	(void) input;				/* the path says it all */
	appendStringInfoString(path, path_text((const ValuePath *) arg));
}

static void
write_string(BsonWriter *w, char *type_at, const char *s, int len,
			 const ValuePath *path)
{
	w->locate_arg = (void *) path;
	*type_at = BSON_TYPE_STRING;
	bson_reserve(w, BSON_STRING_VALSIZE(len));
	bson_put_string(w, s, len);
}

static void
write_binary(BsonWriter *w, char *type_at, const char *data, int len, uint8 subtype)
{
	*type_at = BSON_TYPE_BINARY;
	bson_reserve(w, 5 + len);
	bson_put_uint32_at(w->pos, (uint32) len);
	w->pos[4] = (char) subtype;
	memcpy(w->pos + 5, data, len);
	w->pos += 5 + len;
}

/*
 * The writers of the families of types follow, one value each, its element
 * header written with a deferred type; write_value picks one by the value's
 * kind.
 *
 * boolean, smallint, integer, bigint, real, double precision and numeric:
 * BSON's fixed-size values, the header having left room for them.
 */
static void
write_number(BsonWriter *w, char *type_at, Datum value, ValueKind kind,
			 const BsonRecordOptions *opts, const ValuePath *path)
{
	switch (kind)
	{
		case VK_BOOL:
			*type_at = BSON_TYPE_BOOL;
			bson_put_bool(w, DatumGetBool(value));
			break;
		case VK_INT2:
			*type_at = BSON_TYPE_INT32;
			bson_put_int32(w, DatumGetInt16(value));
			break;
		case VK_INT4:
			*type_at = BSON_TYPE_INT32;
			bson_put_int32(w, DatumGetInt32(value));
			break;
		case VK_INT8:
			*type_at = BSON_TYPE_INT64;
			bson_put_int64(w, DatumGetInt64(value));
			break;
		case VK_FLOAT4:
			*type_at = BSON_TYPE_DOUBLE;
			bson_put_double(w, (double) DatumGetFloat4(value));
			break;
		case VK_FLOAT8:
			*type_at = BSON_TYPE_DOUBLE;
			bson_put_double(w, DatumGetFloat8(value));
			break;
		case VK_NUMERIC:
			{
				uint64		low;
				uint64		high;

				if (numeric_to_decimal128(DatumGetNumeric(value), &low, &high,
										  opts, path))
				{
					*type_at = BSON_TYPE_DECIMAL128;
					bson_put_decimal128(w, low, high);
				}
				else
				{
					/* every digit, as numeric_out writes them (ASCII) */
					char	   *s = DatumGetCString(DirectFunctionCall1(numeric_out,
																		value));

					write_string(w, type_at, s, strlen(s), path);
					pfree(s);
				}
				break;
			}
		default:
			elog(ERROR, "unrecognized value kind for a number: %d", (int) kind);
	}
}

/* date, timestamp and timestamptz: BSON datetimes */
static void
write_datetime(BsonWriter *w, char *type_at, Datum value, ValueKind kind,
			   const BsonRecordOptions *opts, const ValuePath *path)
{
	int64		ms;

	if (kind == VK_DATE)
		ms = date_to_ms(DatumGetDateADT(value), opts, path);
	else
		ms = timestamp_to_ms(DatumGetTimestamp(value), opts, path);
	*type_at = BSON_TYPE_DATETIME;
	bson_put_int64(w, ms);
}

/* text, varchar, char(n) and name: strings */
static void
write_text(BsonWriter *w, char *type_at, Datum value, ValueKind kind,
		   const ValuePath *path)
{
	if (kind == VK_NAME)
	{
		const char *s = NameStr(*DatumGetName(value));

		write_string(w, type_at, s, strlen(s), path);
	}
	else
	{
		text	   *t = DatumGetTextPP(value);

		write_string(w, type_at, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), path);
	}
}

/* bytea and uuid: binary subtypes 0 and 4 */
static void
write_bytes(BsonWriter *w, char *type_at, Datum value, ValueKind kind)
{
	if (kind == VK_UUID)
		write_binary(w, type_at, (const char *) DatumGetUUIDP(value)->data,
					 UUID_LEN, 4);
	else
	{
		bytea	   *b = DatumGetByteaPP(value);

		write_binary(w, type_at, VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b), 0);
	}
}

/* json as json_to_bson reads its text; jsonb as to_bson maps it */
static void
write_json(BsonWriter *w, char *type_at, Datum value, ValueKind kind)
{
	if (kind == VK_JSONB)
		bson_write_jsonb_value(w, type_at, DatumGetJsonbP(value));
	else
	{
		text	   *t = DatumGetTextPP(value);

		bson_write_json_value(w, type_at, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
	}
}

/* Any other type: the string its output function writes */
static void
write_output(BsonWriter *w, char *type_at, Datum value, ValueInfo *vi,
			 const ValuePath *path)
{
	char	   *s = OutputFunctionCall(&vi->output, value);

	write_string(w, type_at, s, strlen(s), path);
	pfree(s);
}

/* Arrays: BSON arrays, nested per dimension, NULL elements as BSON null */
static void
write_array(BsonWriter *w, char *type_at, Datum value, ValueInfo *vi,
			const BsonRecordOptions *opts, const ValuePath *path)
{
	ArrayType  *arr = DatumGetArrayTypeP(value);
	Size		open;

	*type_at = BSON_TYPE_ARRAY;
	open = bson_open(w);
	if (ARR_NDIM(arr) > 0)
	{
		ArrayCursor cursor;

		Assert(ARR_ELEMTYPE(arr) == vi->elemtype);
		array_iter_setup(&cursor.iter, (AnyArrayType *) arr);
		cursor.next = 0;
		write_array_dim(w, ARR_DIMS(arr), ARR_NDIM(arr), 0, &cursor, vi,
						opts, path);
	}
	bson_close(w, open);
}

/* Composites, named or anonymous: embedded documents */
static void
write_record(BsonWriter *w, char *type_at, Datum value, ValueInfo *vi,
			 const BsonRecordOptions *opts, const ValuePath *path)
{
	HeapTupleHeader row = DatumGetHeapTupleHeader(value);
	BsonRecordCache *rec = vi->record;
	Size		open;

	if (rec == NULL)
	{
		/* an anonymous record: its type comes with the value */
		vi->records = bson_record_cache(vi->records,
										HeapTupleHeaderGetTypeId(row),
										HeapTupleHeaderGetTypMod(row),
										vi->mcxt);
		rec = vi->records;
	}
	*type_at = BSON_TYPE_DOCUMENT;
	open = bson_open(w);
	append_fields(w, rec, row, opts, path);
	bson_close(w, open);
}

/*
 * One non-NULL value, its element header written with a deferred type, by
 * the writer of its family.  opts->omit_nulls applies to the fields of composites
 * inside it too (array elements keep their NULLs: their positions are their
 * keys).
 */
static void
write_value(BsonWriter *w, char *type_at, Datum value, ValueInfo *vi,
			const BsonRecordOptions *opts, const ValuePath *path)
{
	switch (vi->kind)
	{
		case VK_BOOL:
		case VK_INT2:
		case VK_INT4:
		case VK_INT8:
		case VK_FLOAT4:
		case VK_FLOAT8:
		case VK_NUMERIC:
			write_number(w, type_at, value, vi->kind, opts, path);
			break;
		case VK_DATE:
		case VK_TIMESTAMP:
			write_datetime(w, type_at, value, vi->kind, opts, path);
			break;
		case VK_TEXT:
		case VK_NAME:
			write_text(w, type_at, value, vi->kind, path);
			break;
		case VK_BYTEA:
		case VK_UUID:
			write_bytes(w, type_at, value, vi->kind);
			break;
		case VK_JSON:
		case VK_JSONB:
			write_json(w, type_at, value, vi->kind);
			break;
		case VK_ARRAY:
			write_array(w, type_at, value, vi, opts, path);
			break;
		case VK_COMPOSITE:
			write_record(w, type_at, value, vi, opts, path);
			break;
		case VK_OUTPUT:
			write_output(w, type_at, value, vi, path);
			break;
	}
}

static void
append_fields(BsonWriter *w, BsonRecordCache *cache, HeapTupleHeader row,
			  const BsonRecordOptions *opts, const ValuePath *parent)
{
	TupleDesc	tupdesc = cache->tupdesc;
	int			natts = tupdesc->natts;
	HeapTupleData tuple;
	Datum	   *values;
	bool	   *nulls;

	check_stack_depth();
	tuple.t_len = HeapTupleHeaderGetDatumLength(row);
	ItemPointerSetInvalid(&(tuple.t_self));
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = row;

	values = palloc(sizeof(Datum) * Max(natts, 1));
	nulls = palloc(sizeof(bool) * Max(natts, 1));
	heap_deform_tuple(&tuple, tupdesc, values, nulls);

	for (int i = 0; i < natts; i++)
	{
		ColumnInfo *col = &cache->columns[i];
		ValuePath	here = {parent, col->name, col->namelen, 0,
		parent ? NULL : col};
		char	   *type_at;

		CHECK_FOR_INTERRUPTS();
		if (col->dropped || (nulls[i] && opts->omit_nulls))
			continue;
		w->locate_arg = &here;
		type_at = bson_key_deferred(w, col->name, col->namelen, 16);
		if (nulls[i])
			*type_at = BSON_TYPE_NULL;
		else
			write_value(w, type_at, values[i], &col->value, opts, &here);
	}
	pfree(values);
	pfree(nulls);
}

void
bson_append_record_fields(BsonWriter *w, BsonRecordCache *cache,
						  HeapTupleHeader row, const BsonRecordOptions *opts)
{
	BsonLocateCallback saved_locate = w->locate;
	void	   *saved_arg = w->locate_arg;

	w->locate = locate_record;
	append_fields(w, cache, row, opts, NULL);
	w->locate = saved_locate;
	w->locate_arg = saved_arg;
}

void
bson_append_record_column(BsonWriter *w, BsonRecordCache *cache, int column,
						  const char *key, int keylen, Datum value,
						  bool isnull, const BsonRecordOptions *opts)
{
	ColumnInfo *col = &cache->columns[column];
	ValuePath	here = {NULL, col->name, col->namelen, 0, col};
	BsonLocateCallback saved_locate = w->locate;
	void	   *saved_arg = w->locate_arg;
	char	   *type_at;

	Assert(column >= 0 && column < cache->tupdesc->natts && !col->dropped);
	if (key == NULL)
	{
		key = col->name;
		keylen = col->namelen;
	}
	w->locate = locate_record;
	w->locate_arg = &here;
	type_at = bson_key_deferred(w, key, keylen, 16);
	if (isnull)
		*type_at = BSON_TYPE_NULL;
	else
		write_value(w, type_at, value, &col->value, opts, &here);
	w->locate = saved_locate;
	w->locate_arg = saved_arg;
}
