/*
 * bson_out.c
 *		SQL-callable functions of the bson_out extension.
 *
 * Each function here only unpacks its arguments, runs an input walker
 * (src/bson_jsonb.c, ...) into the shared writer (src/bson_writer.h) and
 * returns the writer's buffer as the bytea result.
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#include "src/bson_compat.h"
#include "src/bson_jsonb.h"
#include "src/bson_writer.h"

PG_MODULE_MAGIC;

/* bson_out.ascii_fast_path: see BSON_ASCII_FAST_MAX in bson_writer.h */
bool		bson_ascii_fast_path_enabled = true;

/* bson_out.max_document_size: largest document written, in bytes */
int			bson_max_document_size = BSON_MAX_DOCUMENT_SIZE;

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
	BSON_RESERVE_GUC_PREFIX("bson_out");
}

/*
 * to_bson(doc jsonb) returns bytea: the jsonb object as one BSON document.
 */
PG_FUNCTION_INFO_V1(to_bson_jsonb);
Datum
to_bson_jsonb(PG_FUNCTION_ARGS)
{
	Jsonb	   *jb = PG_GETARG_JSONB_P(0);
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
	bson_append_jsonb_object_elements(&w, &jb->root);
	bson_close(&w, doc);

	PG_RETURN_BYTEA_P(bson_writer_finish(&w));
}
