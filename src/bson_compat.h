/*
 * bson_compat.h
 *		Every PostgreSQL-version difference bson_out cares about, in one place.
 *
 * Built and tested on PostgreSQL 15; written for 13 to 17.  Code elsewhere
 * includes this header instead of testing PG_VERSION_NUM itself.
 */
#ifndef BSON_COMPAT_H
#define BSON_COMPAT_H

#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"

#if PG_VERSION_NUM < 130000
#error "bson_out requires PostgreSQL 13 or later"
#endif

/*
 * Encoding conversion procedures gained a "noError" argument and an int
 * result (bytes of input converted) in PostgreSQL 14.  On 13 a failure is
 * raised by the conversion procedure itself, with PostgreSQL's own message.
 * Returns the number of source bytes converted.
 */
static inline int
bson_call_conversion(FmgrInfo *flinfo, int src_encoding, int dest_encoding,
					 const char *src, int srclen, char *dest)
{
#if PG_VERSION_NUM >= 140000
	return DatumGetInt32(FunctionCall6(flinfo,
									   Int32GetDatum(src_encoding),
									   Int32GetDatum(dest_encoding),
									   CStringGetDatum(src),
									   CStringGetDatum(dest),
									   Int32GetDatum(srclen),
									   BoolGetDatum(true)));
#else
	FunctionCall5(flinfo,
				  Int32GetDatum(src_encoding),
				  Int32GetDatum(dest_encoding),
				  CStringGetDatum(src),
				  CStringGetDatum(dest),
				  Int32GetDatum(srclen));
	return srclen;
#endif
}

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

#endif							/* BSON_COMPAT_H */
