/*
 * bson_out.c
 *		SQL-callable functions of the bson_out extension.
 *
 * Each writing function here only unpacks its arguments, runs an input
 * walker (src/encode/jsonb_to_bson.c, ...) into the shared writer (src/encode/bson_writer.h)
 * and returns the writer's buffer as the bytea result.  The reading
 * functions (from_bson, bson_to_json, bson_is_valid, bson_documents) hand
 * the bytes to the decoder (src/core/bson_reader.h), which validates all of a
 * document before anything is returned.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#include "bson_compat.h"
#include "json_to_bson.h"
#include "record_to_bson.h"
#include "jsonb_to_bson.h"
#include "bson_decode.h"
#include "bson_to_json.h"
#include "bson_to_jsonb.h"
#include "bson_writer.h"
#include "citus_tables.h"

PG_MODULE_MAGIC;

/* bson_out.ascii_fast_path: see BSON_ASCII_FAST_MAX in bson_writer.h */
bool		bson_ascii_fast_path_enabled = true;

/* bson_out.max_document_size: largest document written, in bytes */
int			bson_max_document_size = BSON_MAX_DOCUMENT_SIZE;

/* bson_out.unmappable_values: see BsonUnmappable in record_to_bson.h */
int			bson_unmappable_values = BSON_UNMAPPABLE_ERROR;

static const struct config_enum_entry unmappable_values_options[] = {
	{"error", BSON_UNMAPPABLE_ERROR, false},
	{"fallback", BSON_UNMAPPABLE_FALLBACK, false},
	{NULL, 0, false}
};

static const struct config_enum_entry citus_rows_options[] = {
	{"tables", BSON_CITUS_ROWS_TABLES, false},
	{"node", BSON_CITUS_ROWS_NODE, false},
	{NULL, 0, false}
};

void		_PG_init(void);

void
_PG_init(void)
{
	DefineCustomBoolVariable("bson_out.ascii_fast_path",
							 "Writes short pure-ASCII keys and strings with a byte loop instead of the general string path.",
							 "Both paths produce the same bytes; the setting exists to measure the difference.",
							 &bson_ascii_fast_path_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("bson_out.max_document_size",
							"Largest BSON document bson_out writes; larger ones raise an error.",
							"MongoDB refuses documents over 16MB; the default is what a bytea can hold.",
							&bson_max_document_size,
							BSON_MAX_DOCUMENT_SIZE,
							5,
							BSON_MAX_DOCUMENT_SIZE,
							PGC_USERSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);
	DefineCustomEnumVariable("bson_out.unmappable_values",
							 "What row_to_bson and bson_document do with values that have no BSON mapping: error or fallback.",
							 "fallback writes infinite dates and timestamps as the latest or earliest datetime drivers decode, and numerics with no exact decimal128 as strings of their digits, with a warning.",
							 &bson_unmappable_values,
							 BSON_UNMAPPABLE_ERROR,
							 unmappable_values_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomEnumVariable("bson_out.citus_rows",
							 "Where bson_collections() reads the rows of a Citus table: tables or node.",
							 "With tables, through the table, from every node; with node, in this node's shards only, as this node's change stream carries them (pg_bsonstream's first copy on each node of a cluster).",
							 &bson_citus_rows,
							 BSON_CITUS_ROWS_TABLES,
							 citus_rows_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	BSON_RESERVE_GUC_PREFIX("bson_out");
}

/* The jsonb object as one BSON document, or 22023 if it is not an object */
static bytea *
jsonb_to_bson(Jsonb *jb, bool extended_json, bool legacy_extended_json)
{
	BsonWriter	w;
	Size		doc;

	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot convert a jsonb %s to a BSON document",
						bson_jsonb_root_type_name(jb)),
				 errdetail("A BSON document is a set of key-value pairs, so only a jsonb object can become one."),
				 errhint("Wrap the value in an object, for example with jsonb_build_object('value', ...).")));

	bson_writer_init(&w, BSON_ESTIMATE_FROM_JSONB(VARSIZE(jb)));
	doc = bson_open(&w);
	bson_append_jsonb_object_elements(&w, &jb->root, extended_json,
									  legacy_extended_json);
	bson_close(&w, doc);
	return bson_writer_finish(&w);
}

/*
 * to_bson(doc jsonb) returns bytea: the jsonb object as one BSON document.
 */
PG_FUNCTION_INFO_V1(to_bson_jsonb);
Datum
to_bson_jsonb(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(jsonb_to_bson(PG_GETARG_JSONB_P(0), false, false));
}

/*
 * to_bson(doc jsonb, extended_json boolean, legacy_extended_json boolean)
 * returns bytea: the same, with Extended JSON v2 wrappers as native types.
 */
PG_FUNCTION_INFO_V1(to_bson_jsonb_ext);
Datum
to_bson_jsonb_ext(PG_FUNCTION_ARGS)
{
	PG_RETURN_BYTEA_P(jsonb_to_bson(PG_GETARG_JSONB_P(0), PG_GETARG_BOOL(1),
									PG_GETARG_BOOL(2)));
}

/*
 * json_to_bson(doc json, extended_json boolean, legacy_extended_json
 * boolean) returns bytea: the JSON text as one BSON document, keys in the
 * order written.
 */
PG_FUNCTION_INFO_V1(json_to_bson);
Datum
json_to_bson(PG_FUNCTION_ARGS)
{
	text	   *json = PG_GETARG_TEXT_PP(0);
	int			len = VARSIZE_ANY_EXHDR(json);
	BsonWriter	w;
	Size		doc;

	bson_writer_init(&w, (Size) len + 64);
	doc = bson_open(&w);
	bson_append_json_text_object(&w, VARDATA_ANY(json), len,
								 PG_GETARG_BOOL(1), PG_GETARG_BOOL(2));
	bson_close(&w, doc);
	PG_RETURN_BYTEA_P(bson_writer_finish(&w));
}

/*
 * row_to_bson(rec record, omit_nulls boolean) returns bytea: the row as one
 * BSON document, each column as its native BSON type, in column order.  The
 * mapping of the row type's columns is worked out once per query and kept
 * in fn_extra.
 */
PG_FUNCTION_INFO_V1(row_to_bson);
Datum
row_to_bson(PG_FUNCTION_ARGS)
{
	HeapTupleHeader row = PG_GETARG_HEAPTUPLEHEADER(0);
	BsonRecordOptions opts = {0};
	BsonRecordCache *cache;
	BsonWriter	w;
	Size		doc;

	opts.omit_nulls = PG_GETARG_BOOL(1);
	opts.unmappable = (BsonUnmappable) bson_unmappable_values;
	opts.policy_name = "bson_out.unmappable_values";

	cache = bson_record_cache((BsonRecordCache *) fcinfo->flinfo->fn_extra,
							  HeapTupleHeaderGetTypeId(row),
							  HeapTupleHeaderGetTypMod(row),
							  fcinfo->flinfo->fn_mcxt);
	fcinfo->flinfo->fn_extra = cache;

	bson_writer_init(&w, (Size) HeapTupleHeaderGetDatumLength(row) * 2 + 64);
	doc = bson_open(&w);
	bson_append_record_fields(&w, cache, row, &opts);
	bson_close(&w, doc);
	PG_RETURN_BYTEA_P(bson_writer_finish(&w));
}

/*
 * from_bson(bson bytea) returns jsonb: the BSON document as a jsonb object,
 * JSON's types as themselves and the others as Extended JSON v2 wrappers.
 */
PG_FUNCTION_INFO_V1(from_bson);
Datum
from_bson(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_JSONB_P(bson_document_to_jsonb((const uint8 *) VARDATA_ANY(b),
											 VARSIZE_ANY_EXHDR(b)));
}

/*
 * bson_to_json(bson bytea, canonical boolean) returns json: the BSON
 * document as Extended JSON v2 text, relaxed or canonical, in key order.
 */
PG_FUNCTION_INFO_V1(bson_to_json);
Datum
bson_to_json(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_TEXT_P(bson_document_to_json((const uint8 *) VARDATA_ANY(b),
										   VARSIZE_ANY_EXHDR(b),
										   PG_GETARG_BOOL(1)));
}

/*
 * bson_is_valid(bson bytea) returns boolean: is it exactly one valid BSON
 * document?  Never raises for bad bytes.
 */
PG_FUNCTION_INFO_V1(bson_is_valid);
Datum
bson_is_valid(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_BOOL(bson_decode_is_valid((const uint8 *) VARDATA_ANY(b),
									  VARSIZE_ANY_EXHDR(b)));
}

/* Where bson_documents is in its stream, across calls */
typedef struct DocumentStream
{
	const uint8 *data;			/* the stream, detoasted once */
	size_t		len;
	size_t		offset;			/* the next document's first byte */
} DocumentStream;

/*
 * bson_documents(stream bytea) returns setof bytea: the documents of a
 * stream of concatenated BSON documents (a .bson file as mongodump writes
 * it), one per call, each validated before it is returned.
 */
PG_FUNCTION_INFO_V1(bson_documents);
Datum
bson_documents(PG_FUNCTION_ARGS)
{
	FuncCallContext *funcctx;
	DocumentStream *st;
	BsonReadError err;
	size_t		doclen;
	bytea	   *result;

	if (SRF_IS_FIRSTCALL())
	{
		MemoryContext old;
		bytea	   *stream;

		funcctx = SRF_FIRSTCALL_INIT();
		old = MemoryContextSwitchTo(funcctx->multi_call_memory_ctx);
		/* detoasted (if it is toasted) into memory that lasts all calls */
		stream = PG_GETARG_BYTEA_PP(0);
		st = palloc(sizeof(DocumentStream));
		st->data = (const uint8 *) VARDATA_ANY(stream);
		st->len = VARSIZE_ANY_EXHDR(stream);
		st->offset = 0;
		funcctx->user_fctx = st;
		MemoryContextSwitchTo(old);
	}
	funcctx = SRF_PERCALL_SETUP();
	st = (DocumentStream *) funcctx->user_fctx;
	if (st->offset >= st->len)
		SRF_RETURN_DONE(funcctx);

	doclen = bson_read_document_length(st->data + st->offset, st->len - st->offset, &err);
	if (doclen == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("truncated or invalid BSON document at byte offset %zu of the stream",
						st->offset),
				 errdetail("At byte offset %zu: %s; %zu complete documents came before it.",
						   st->offset + err.offset, err.message, (size_t) funcctx->call_cntr)));
	bson_decode_validate(st->data + st->offset, doclen, st->offset);

	result = palloc(VARHDRSZ + doclen);
	SET_VARSIZE(result, VARHDRSZ + doclen);
	memcpy(VARDATA(result), st->data + st->offset, doclen);
	st->offset += doclen;
	SRF_RETURN_NEXT(funcctx, PointerGetDatum(result));
}
