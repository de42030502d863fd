/*
 * bson_encoding.c
 *		Server encoding to UTF-8, for strings bound for BSON.
 */
#include "bson_encoding.h"

#include "bson_reader.h"

#include "catalog/namespace.h"
#include "lib/stringinfo.h"
#include "utils/memutils.h"

/*
 * The database encoding never changes within a session, and the default
 * conversion for it is fixed once found (PostgreSQL's own client-encoding
 * machinery caches it the same way), so the lookup happens once per backend
 * rather than once per query, row or string.
 */
static BsonEncoding session_encoding;
static bool session_encoding_valid = false;

const BsonEncoding *
bson_server_encoding(void)
{
	if (likely(session_encoding_valid))
		return &session_encoding;

	session_encoding.server_encoding = GetDatabaseEncoding();
	if (session_encoding.server_encoding == PG_UTF8)
		session_encoding.kind = BSON_ENC_UTF8;
	else if (session_encoding.server_encoding == PG_SQL_ASCII)
		session_encoding.kind = BSON_ENC_SQL_ASCII;
	else
	{
		Oid			proc;

		proc = FindDefaultConversionProc(session_encoding.server_encoding, PG_UTF8);
		if (!OidIsValid(proc))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("no conversion from server encoding \"%s\" to \"UTF8\"",
							GetDatabaseEncodingName()),
					 errdetail("BSON strings must be UTF-8, and bson_out converts them with the default conversion.")));
		fmgr_info_cxt(proc, &session_encoding.conv_proc, TopMemoryContext);
		session_encoding.kind = BSON_ENC_CONVERT;
	}
	session_encoding_valid = true;
	return &session_encoding;
}

int
bson_convert_to_utf8(const BsonEncoding *enc, const char *src, int len,
					 char *dest, int *bad_offset)
{
	int			converted;

	Assert(enc->kind == BSON_ENC_CONVERT);
	converted = bson_call_conversion((FmgrInfo *) &enc->conv_proc,
									 enc->server_encoding, PG_UTF8,
									 src, len, dest);
	if (converted != len)
	{
		*bad_offset = converted;
		return -1;
	}
	return (int) strlen(dest);
}

int
bson_invalid_utf8_offset(const char *s, int len)
{
	/* the decoder's validator: the same rules on the way in and out */
	size_t		ok = bson_read_utf8_valid_prefix((const uint8 *) s, (size_t) len);

	return ok == (size_t) len ? -1 : (int) ok;
}

char *
bson_convert_from_utf8(const BsonEncoding *enc, const char *src, int len,
					   int *bad_offset)
{
	BsonEncoding *e = (BsonEncoding *) enc;
	char	   *dest;
	int			converted;

	Assert(enc->kind == BSON_ENC_CONVERT);
	if (!e->from_utf8_valid)
	{
		Oid			proc = FindDefaultConversionProc(PG_UTF8, enc->server_encoding);

		if (!OidIsValid(proc))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("no conversion from \"UTF8\" to server encoding \"%s\"",
							GetDatabaseEncodingName()),
					 errdetail("BSON strings are UTF-8, and bson_out converts them with the default conversion.")));
		fmgr_info_cxt(proc, &e->from_utf8_proc, TopMemoryContext);
		e->from_utf8_valid = true;
	}
	dest = palloc((Size) len * MAX_CONVERSION_GROWTH + 1);
	converted = bson_call_conversion(&e->from_utf8_proc, PG_UTF8,
									 enc->server_encoding, src, len, dest);
	if (converted != len)
	{
		*bad_offset = converted;
		pfree(dest);
		return NULL;
	}
	return dest;
}

char *
bson_hex_bytes(const char *s, int len)
{
	StringInfoData out;

	initStringInfo(&out);
	for (int i = 0; i < len; i++)
		appendStringInfo(&out, "%s0x%02x", i ? " " : "", (unsigned char) s[i]);
	return out.data;
}
