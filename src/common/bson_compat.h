/*
 * bson_compat.h
 *		Every PostgreSQL-version difference bson_out cares about, in one place.
 *
 * Built and tested on PostgreSQL 13, 15, 17 and 18.  Code elsewhere includes
 * this header (first, in place of postgres.h) instead of testing
 * PG_VERSION_NUM itself.
 */
#ifndef BSON_COMPAT_H
#define BSON_COMPAT_H

#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"

#if PG_VERSION_NUM < 130000
#error "bson_out requires PostgreSQL 13 or later"
#endif

/* From 16 on, the varlena macros (VARSIZE, SET_VARSIZE...) have a header. */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * 18 replaced pg_attribute_noreturn(), written after a declarator, by
 * pg_noreturn, written before the declaration.  GCC and Clang take the old
 * attribute before the declaration too, so code writes pg_noreturn first.
 */
#ifndef pg_noreturn
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * Encoding conversion procedures gained a "noError" argument and an int
 * result (bytes of input converted) in PostgreSQL 14.  On 13 a procedure
 * raises its own error instead; bson_call_conversion() then catches that
 * error (only "untranslatable character" and "invalid byte sequence", raised
 * by a pure function, as core's xml_is_document() does) and finds the first
 * character that does not convert, so that callers report the same error,
 * naming the key or value, on every version.  Returns the number of source
 * bytes converted: srclen when the whole string converted.
 */
#if PG_VERSION_NUM >= 140000
static inline int
bson_call_conversion(FmgrInfo *flinfo, int src_encoding, int dest_encoding,
					 const char *src, int srclen, char *dest)
{
	return DatumGetInt32(FunctionCall6(flinfo,
									   Int32GetDatum(src_encoding),
									   Int32GetDatum(dest_encoding),
									   CStringGetDatum(src),
									   CStringGetDatum(dest),
									   Int32GetDatum(srclen),
									   BoolGetDatum(true)));
}
#else
#include "utils/memutils.h"

static inline bool
bson_try_conversion(FmgrInfo *flinfo, int src_encoding, int dest_encoding,
					const char *src, int srclen, char *dest)
{
	MemoryContext caller = CurrentMemoryContext;
	volatile bool converted = true;

	PG_TRY();
	{
		FunctionCall5(flinfo,
					  Int32GetDatum(src_encoding),
					  Int32GetDatum(dest_encoding),
					  CStringGetDatum(src),
					  CStringGetDatum(dest),
					  Int32GetDatum(srclen));
	}
	PG_CATCH();
	{
		MemoryContext errcxt = MemoryContextSwitchTo(caller);
		ErrorData  *edata = CopyErrorData();

		if (edata->sqlerrcode != ERRCODE_UNTRANSLATABLE_CHARACTER &&
			edata->sqlerrcode != ERRCODE_CHARACTER_NOT_IN_REPERTOIRE)
		{
			MemoryContextSwitchTo(errcxt);
			PG_RE_THROW();
		}
		FlushErrorState();
		FreeErrorData(edata);
		converted = false;
	}
	PG_END_TRY();
	return converted;
}

static inline int
bson_call_conversion(FmgrInfo *flinfo, int src_encoding, int dest_encoding,
					 const char *src, int srclen, char *dest)
{
	int			off = 0;
	char		one[MAX_MULTIBYTE_CHAR_LEN * MAX_CONVERSION_GROWTH + 1];

	if (bson_try_conversion(flinfo, src_encoding, dest_encoding, src, srclen, dest))
		return srclen;
	/* the error path only: one character at a time up to the first failure */
	while (off < srclen)
	{
		int			len = Min(pg_encoding_mblen(src_encoding, src + off), srclen - off);

		if (!bson_try_conversion(flinfo, src_encoding, dest_encoding,
								 src + off, len, one))
			break;
		off += len;
	}
	/* combining sequences can fail together though each character converts */
	return off < srclen ? off : 0;
}
#endif

/* int64_to_numeric() is exported from PostgreSQL 14 on */
#if PG_VERSION_NUM < 140000
#include "utils/builtins.h"
#include "utils/numeric.h"
#define int64_to_numeric(v) \
	DatumGetNumeric(DirectFunctionCall1(int8_numeric, Int64GetDatum(v)))
#endif

/* pg_lltoa() returns the length from PostgreSQL 14 on */
#if PG_VERSION_NUM >= 140000
#define bson_lltoa(v, buf) pg_lltoa((v), (buf))
#else
static inline int
bson_lltoa(int64 v, char *buf)
{
	pg_lltoa(v, buf);
	return (int) strlen(buf);
}
#endif

/* Reserve the GUC prefix so that misspelt bson_out.* settings warn. */
#if PG_VERSION_NUM >= 150000
#define BSON_RESERVE_GUC_PREFIX(prefix) MarkGUCPrefixReserved(prefix)
#else
#define BSON_RESERVE_GUC_PREFIX(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/*
 * Logical decoding.  A change's old and new rows are HeapTuples from 17 on,
 * before that ReorderBufferTupleBuf holding one; a transaction's commit time
 * moved into xact_time (shared with the prepare time) in 15.  Macros, so
 * that only the output plugin needs replication/reorderbuffer.h.
 */
#if PG_VERSION_NUM >= 170000
#define BSON_CHANGE_OLD_TUPLE(change) ((change)->data.tp.oldtuple)
#define BSON_CHANGE_NEW_TUPLE(change) ((change)->data.tp.newtuple)
#else
#define BSON_CHANGE_OLD_TUPLE(change) \
	((change)->data.tp.oldtuple ? &(change)->data.tp.oldtuple->tuple : NULL)
#define BSON_CHANGE_NEW_TUPLE(change) \
	((change)->data.tp.newtuple ? &(change)->data.tp.newtuple->tuple : NULL)
#endif

#if PG_VERSION_NUM >= 150000
#define BSON_TXN_COMMIT_TIME(txn) ((txn)->xact_time.commit_time)
#else
#define BSON_TXN_COMMIT_TIME(txn) ((txn)->commit_time)
#endif

/*
 * A table's primary key index; 18 can also return a deferrable one, which
 * earlier releases never do.
 */
#if PG_VERSION_NUM >= 180000
#define bson_primary_key_index(rel) RelationGetPrimaryKeyIndex((rel), false)
#else
#define bson_primary_key_index(rel) RelationGetPrimaryKeyIndex(rel)
#endif

/* build_attrmap_by_name() takes missing_ok from 16 on */
#if PG_VERSION_NUM >= 160000
#define bson_attrmap_by_name(indesc, outdesc) \
	build_attrmap_by_name((indesc), (outdesc), false)
#else
#define bson_attrmap_by_name(indesc, outdesc) \
	build_attrmap_by_name((indesc), (outdesc))
#endif

/*
 * Does a collation sort by the bytes of the strings (C, POSIX, or a
 * database default of C)?  Before 18, lc_collate_is_c(), declared here:
 * its header, utils/pg_locale.h, includes ICU's headers where the server
 * was built with ICU, and an extension's build need not have them.  18
 * asks the collation's pg_locale_t, which needs that header; without ICU's
 * headers only the C and POSIX collations count there.
 */
#if PG_VERSION_NUM < 180000
extern bool lc_collate_is_c(Oid collation);
#define bson_collation_is_c(collation) lc_collate_is_c(collation)
#elif !defined(USE_ICU) || (defined(__has_include) && __has_include(<unicode/ucol.h>))
#include "utils/pg_locale.h"
#define bson_collation_is_c(collation) \
	(pg_newlocale_from_collation(collation)->collate_is_c)
#else
#include "catalog/pg_collation_d.h"
#define bson_collation_is_c(collation) \
	((collation) == C_COLLATION_OID || (collation) == POSIX_COLLATION_OID)
#endif

/* Unique indexes can treat NULLs as equal (NULLS NOT DISTINCT) from 15 on */
#if PG_VERSION_NUM >= 150000
#define BSON_INDEX_NULLS_NOT_DISTINCT(index) ((index)->indnullsnotdistinct)
#else
#define BSON_INDEX_NULLS_NOT_DISTINCT(index) false
#endif

/* Ownership checks became object_ownercheck() in 16 */
#if PG_VERSION_NUM >= 160000
#define bson_table_owned_by(relid, role) \
	object_ownercheck(RelationRelationId, (relid), (role))
#else
#define bson_table_owned_by(relid, role) pg_class_ownercheck((relid), (role))
#endif

/*
 * The output plugin's entry point is declared by replication/output_plugin.h
 * from 16 on (exported, as extensions are built with hidden symbols).
 */
#if PG_VERSION_NUM < 160000
struct OutputPluginCallbacks;
extern PGDLLEXPORT void _PG_output_plugin_init(struct OutputPluginCallbacks *cb);
#endif

#endif							/* BSON_COMPAT_H */
