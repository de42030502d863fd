/*
 * error_path.c
 *		Paths in error messages, for every walker of bson_out.
 */
#include "error_path.h"

#include "mb/pg_wchar.h"

#include "bson_encoding.h"

/* Letters, digits, '_' and '$', not starting with a digit: shown as .key */
static bool
is_plain_key(const char *key, int keylen)
{
	if (keylen == 0 || keylen > BSON_PATH_KEY_MAX || (key[0] >= '0' && key[0] <= '9'))
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

/* How many of the key's bytes to show: whole characters, at most the limit */
static int
shown_length(const char *key, int keylen, BsonKeyText form)
{
	if (keylen <= BSON_PATH_KEY_MAX)
		return keylen;
	if (form == BSON_KEY_UTF8)
	{
		int			len = BSON_PATH_KEY_MAX;

		/* not inside a UTF-8 sequence */
		while (len > 0 && (key[len] & 0xC0) == 0x80)
			len--;
		return len;
	}
	if (form == BSON_KEY_SERVER)
		return pg_mbcliplen(key, keylen, BSON_PATH_KEY_MAX);
	return BSON_PATH_KEY_MAX;	/* every non-ASCII byte is shown as \xNN */
}

/* A UTF-8 character as \uXXXX, or a surrogate pair beyond the BMP */
static int
append_utf8_escaped(StringInfo out, const unsigned char *s, int avail)
{
	int			charlen = pg_utf_mblen(s);
	pg_wchar	c;

	if (charlen > avail)
	{
		appendStringInfo(out, "\\x%02x", s[0]);
		return 1;
	}
	c = utf8_to_unicode(s);
	if (c > 0xFFFF)
		appendStringInfo(out, "\\u%04x\\u%04x",
						 (unsigned) (0xD800 + ((c - 0x10000) >> 10)),
						 (unsigned) (0xDC00 + ((c - 0x10000) & 0x3FF)));
	else
		appendStringInfo(out, "\\u%04x", (unsigned) c);
	return charlen;
}

/* The key between the quotes of ["..."], escaped as JSON would and more */
static void
append_quoted(StringInfo out, const char *key, int keylen, BsonKeyText form)
{
	const unsigned char *s = (const unsigned char *) key;
	int			len = shown_length(key, keylen, form);
	bool		utf8_escapes = form == BSON_KEY_UTF8 &&
		bson_server_encoding()->kind == BSON_ENC_CONVERT;
	int			i = 0;

	appendStringInfoString(out, "[\"");
	while (i < len)
	{
		unsigned char c = s[i];

		if (c < 0x20 || c == 0x7F || (c >= 0x80 && form == BSON_KEY_SERVER_FAILED))
		{
			appendStringInfo(out, "\\x%02x", c);
			i++;
		}
		else if (c >= 0x80 && utf8_escapes)
			i += append_utf8_escaped(out, s + i, len - i);
		else
		{
			if (c == '"' || c == '\\')
				appendStringInfoChar(out, '\\');
			appendStringInfoChar(out, (char) c);
			i++;
		}
	}
	if (len < keylen)
		appendStringInfoString(out, "...");
	appendStringInfoString(out, "\"]");
}

void
bson_path_append_key(StringInfo out, const char *key, int keylen, BsonKeyText form)
{
	if (is_plain_key(key, keylen))
	{
		if (out->len > 0)
			appendStringInfoChar(out, '.');
		appendBinaryStringInfo(out, key, keylen);
	}
	else
		append_quoted(out, key, keylen, form);
}

void
bson_path_append_index(StringInfo out, int64 index)
{
	appendStringInfo(out, "[" INT64_FORMAT "]", index);
}

void
bson_path_append_array_key(StringInfo out, const char *key, int keylen)
{
	bool		digits = keylen > 0 && keylen <= 19;

	for (int i = 0; i < keylen && digits; i++)
		digits = key[i] >= '0' && key[i] <= '9';
	if (digits)
	{
		appendStringInfoChar(out, '[');
		appendBinaryStringInfo(out, key, keylen);
		appendStringInfoChar(out, ']');
	}
	else
		append_quoted(out, key, keylen, BSON_KEY_UTF8);
}

void
bson_path_append_elided(StringInfo out)
{
	appendStringInfoString(out, "...");
}
