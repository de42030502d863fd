/*
 * json_to_bson.c
 *		JSON text -> BSON in one pass, keys in the order written.
 *
 * A recursive-descent reader of the json type's text that writes each
 * member into the shared writer as soon as it is read: no jsonb, no token
 * list, no intermediate copies.  Strings without escapes (nearly all of
 * them) go to the writer straight from the text; strings with escapes are
 * decoded once into a scratch buffer, in the server encoding, as PostgreSQL
 * itself decodes them.  Duplicate keys are kept, in the order written (BSON
 * allows them).  Numbers are mapped by their written form: an integer
 * literal is int32 or int64 when it fits, anything else a correctly rounded
 * double, or an exact decimal128 beyond double's range.
 *
 * The json type validates its text on input, but this reader checks the
 * grammar again as it goes: a malformed text raises an error, never reads
 * past the end.
 */
#include "json_to_bson.h"

#include <ctype.h>

#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "port/pg_bitutils.h"

#include "extjson_to_bson.h"
#include "numeric_to_bson.h"
#include "extjson_scalars.h"
#include "json_grammar.h"

typedef struct JsonText
{
	BsonWriter *w;
	const char *text;			/* the whole text */
	const char *p;				/* next byte to read */
	const char *end;
	bool		extended;		/* apply Extended JSON wrappers */
	StringInfoData scratch;		/* decoded strings with escapes */
	const char *token;			/* start of the string being written */
	BsonExtJsonInput ej;
	MemoryContext call_cxt;		/* the caller's: scratch lives here */
	MemoryContext wrapper_cxt;	/* a loaded wrapper, reset after each */
	int			wrapper_depth;	/* wrappers being written (nested: $scope) */
} JsonText;

static void append_object_members(JsonText *t, const char *nested_at);
static void append_element(JsonText *t, const char *key, int keylen, uint32 index);
static void skip_value(JsonText *t);

/* Error paths: where in the text, for the messages */
pg_noreturn static void
syntax_error(JsonText *t, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type json"),
			 errdetail("%s at byte %d of the JSON text.", what,
					   (int) (t->p - t->text))));
}

static inline void
skip_ws(JsonText *t)
{
	while (t->p < t->end && json_is_space(*t->p))
		t->p++;
}

static inline void
expect(JsonText *t, char c, const char *what)
{
	skip_ws(t);
	if (t->p >= t->end || *t->p != c)
		syntax_error(t, what);
	t->p++;
}

/* Half of a UTF-16 surrogate pair without its other half */
pg_noreturn static void
surrogate_error(JsonText *t, const char *problem)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("invalid input syntax for type json"),
			 errdetail("%s, at byte %d of the JSON text.", problem,
					   (int) (t->p - t->text))));
}

/* The four hex digits of a \uXXXX escape starting at p (after "\u") */
static pg_wchar
read_hex4(JsonText *t)
{
	pg_wchar	c = 0;

	if (t->end - t->p < 4)
		syntax_error(t, "Truncated \\u escape");
	for (int i = 0; i < 4; i++)
	{
		int			h = extjson_hex_value(t->p[i]);

		if (h < 0)
			syntax_error(t, "Invalid \\u escape");
		c = (c << 4) | h;
	}
	t->p += 4;
	return c;
}

/*
 * Append code point c to the scratch buffer in the server encoding (UTF-8
 * bytes in a UTF8 or SQL_ASCII database; SQL_ASCII output is checked as
 * UTF-8 by the writer anyway), as PostgreSQL's own JSON input does.
 */
static void
append_code_point(JsonText *t, pg_wchar c)
{
	unsigned char buf[MAX_UNICODE_EQUIVALENT_STRING + 1];
	int			enc = GetDatabaseEncoding();

	if (c < 0x80)
		appendStringInfoChar(&t->scratch, (char) c);
	else if (enc == PG_UTF8 || enc == PG_SQL_ASCII)
	{
		unicode_to_utf8(c, buf);
		appendBinaryStringInfo(&t->scratch, (char *) buf, pg_utf_mblen(buf));
	}
	else
	{
		pg_unicode_to_server(c, buf);
		appendStringInfoString(&t->scratch, (char *) buf);
	}
}

/*
 * Read a string token (t->p at its opening quote).  Returns its content in
 * the server encoding: a span of the text itself when it has no escapes,
 * else the scratch buffer, valid until the next string is read.
 */
static const char *
read_string(JsonText *t, int *len)
{
	const char *start;
	const char *s;

	Assert(*t->p == '"');
	start = ++t->p;
	s = start;

	/*
	 * Eight bytes at a time while none of them is a quote, a backslash or a
	 * control character: for each of the three, the classic "has a zero
	 * byte" test ((v - 0x01..) & ~v & 0x80..), exact as to whether any byte
	 * matches, on v XOR the character (or v less 0x20 for "below 0x20").
	 */
	while (t->end - s >= 8)
	{
		uint64		v;
		uint64		q;
		uint64		b;
		uint64		hit;

		memcpy(&v, s, 8);
		q = v ^ UINT64CONST(0x2222222222222222);
		b = v ^ UINT64CONST(0x5C5C5C5C5C5C5C5C);
		hit = (((q - UINT64CONST(0x0101010101010101)) & ~q) |
			   ((b - UINT64CONST(0x0101010101010101)) & ~b) |
			   ((v - UINT64CONST(0x2020202020202020)) & ~v)) &
			UINT64CONST(0x8080808080808080);
		if (hit)
		{
#ifndef WORDS_BIGENDIAN
			/* the lowest flagged byte is the first real match */
			s += pg_rightmost_one_pos64(hit) >> 3;
#endif
			break;
		}
		s += 8;
	}
	while (s < t->end && *s != '"' && *s != '\\')
	{
		if ((unsigned char) *s < 0x20)
		{
			t->p = s;
			syntax_error(t, "Control character in a string");
		}
		s++;
	}
	if (s >= t->end)
	{
		t->p = s;
		syntax_error(t, "Unterminated string");
	}
	if (*s == '"')
	{
		t->p = s + 1;
		*len = (int) (s - start);
		return start;
	}

	/* escapes: decode into scratch, made on first use */
	if (t->scratch.data == NULL)
	{
		/* in the call's context: a wrapper's context is reset under it */
		MemoryContext old = MemoryContextSwitchTo(t->call_cxt);

		initStringInfo(&t->scratch);
		MemoryContextSwitchTo(old);
	}
	else
		resetStringInfo(&t->scratch);
	appendBinaryStringInfo(&t->scratch, start, (int) (s - start));
	t->p = s;
	for (;;)
	{
		char		c;

		if (t->p >= t->end)
			syntax_error(t, "Unterminated string");
		c = *t->p;
		if (c == '"')
		{
			t->p++;
			break;
		}
		if ((unsigned char) c < 0x20)
			syntax_error(t, "Control character in a string");
		if (c != '\\')
		{
			const char *run = t->p;

			while (t->p < t->end && *t->p != '"' && *t->p != '\\' &&
				   (unsigned char) *t->p >= 0x20)
				t->p++;
			appendBinaryStringInfo(&t->scratch, run, (int) (t->p - run));
			continue;
		}
		if (++t->p >= t->end)
			syntax_error(t, "Unterminated string");
		c = *t->p++;
		switch (c)
		{
			case '"':
			case '\\':
			case '/':
				appendStringInfoChar(&t->scratch, c);
				break;
			case 'b':
				appendStringInfoChar(&t->scratch, '\b');
				break;
			case 'f':
				appendStringInfoChar(&t->scratch, '\f');
				break;
			case 'n':
				appendStringInfoChar(&t->scratch, '\n');
				break;
			case 'r':
				appendStringInfoChar(&t->scratch, '\r');
				break;
			case 't':
				appendStringInfoChar(&t->scratch, '\t');
				break;
			case 'u':
				{
					pg_wchar	cp = read_hex4(t);

					if (is_utf16_surrogate_first(cp))
					{
						pg_wchar	second;

						if (t->end - t->p < 6 || t->p[0] != '\\' || t->p[1] != 'u')
							surrogate_error(t, "A Unicode high surrogate must be followed by a low surrogate");
						t->p += 2;
						second = read_hex4(t);
						if (!is_utf16_surrogate_second(second))
							surrogate_error(t, "A Unicode high surrogate must be followed by a low surrogate");
						cp = surrogate_pair_to_codepoint(cp, second);
					}
					else if (is_utf16_surrogate_second(cp))
						surrogate_error(t, "A Unicode low surrogate must follow a high surrogate");
					if (cp == 0)
						appendStringInfoChar(&t->scratch, '\0');
					else
						append_code_point(t, cp);
					break;
				}
			default:
				t->p--;
				syntax_error(t, "Invalid escape sequence");
		}
	}
	*len = t->scratch.len;
	return t->scratch.data;
}

/*
 * Read a number token and return its literal; *is_integer tells whether it
 * has neither fraction nor exponent.
 */
static const char *
read_number(JsonText *t, int *len, bool *is_integer)
{
	const char *start = t->p;
	size_t		bad;
	size_t		n = json_scan_number(start, (size_t) (t->end - start), is_integer, &bad);

	if (n == 0)
	{
		t->p = start + bad;
		syntax_error(t, "Invalid number");
	}
	t->p = start + n;
	*len = (int) n;
	return start;
}

pg_noreturn static void
report_number_out_of_range(JsonText *t, const char *num, int len)
{
	StringInfoData where;

	initStringInfo(&where);
	bson_describe_location(t->w, num, &where);
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("number at %s is out of range for BSON", where.data),
			 errdetail("The number %.*s%s is beyond double precision, and decimal128 cannot hold it exactly (at most 34 significant digits, at magnitudes from 1E-6176 to 9.99...E+6144).",
					   Min(len, 40), num, len > 40 ? "..." : ""),
			 errhint("Round the number, or store it as a JSON string.")));
}

static void
write_number(JsonText *t, char *type_at, const char *num, int len, bool is_integer)
{
	BsonNumber n;

	bson_number_from_json_text(num, len, is_integer, &n);
	switch (n.kind)
	{
		case BSON_NUMBER_INT32:
			*type_at = BSON_TYPE_INT32;
			bson_put_int32(t->w, n.v.i32);
			break;
		case BSON_NUMBER_INT64:
			*type_at = BSON_TYPE_INT64;
			bson_put_int64(t->w, n.v.i64);
			break;
		case BSON_NUMBER_DOUBLE:
			*type_at = BSON_TYPE_DOUBLE;
			bson_put_double(t->w, n.v.d);
			break;
		case BSON_NUMBER_DECIMAL128:
			*type_at = BSON_TYPE_DECIMAL128;
			bson_put_decimal128(t->w, n.v.dec.low, n.v.dec.high);
			break;
		case BSON_NUMBER_UNREPRESENTABLE:
			report_number_out_of_range(t, num, len);
	}
}

static inline bool
match_literal(JsonText *t, const char *lit, int len)
{
	if (t->end - t->p >= len && memcmp(t->p, lit, len) == 0)
	{
		t->p += len;
		return true;
	}
	return false;
}

/*
 * Extended JSON: load the object at t->p (its '{') into an EjValue, with
 * nested objects loaded down to depth levels; t->p ends after it.  Strings
 * are copied, since the scratch buffer is reused.
 */
static EjValue *
load_value(JsonText *t, int depth)
{
	EjValue    *ev = palloc0(sizeof(EjValue));

	skip_ws(t);
	if (t->p >= t->end)
		syntax_error(t, "Unexpected end");
	ev->locator = t->p;
	ev->nfields = -1;
	switch (*t->p)
	{
		case '"':
			{
				int			len;
				const char *s = read_string(t, &len);

				ev->kind = EJ_STRING;
				ev->str = s;
				if (s == t->scratch.data)
				{
					/* scratch is reused; copy (memcpy: it may hold \u0000) */
					char	   *copy = palloc(len + 1);

					memcpy(copy, s, len);
					copy[len] = '\0';
					ev->str = copy;
				}
				ev->len = len;
				break;
			}
		case '{':
			ev->kind = EJ_OBJECT;
			ev->source = t->p;
			if (depth <= 0)
			{
				skip_value(t);
				break;
			}
			t->p++;
			skip_ws(t);
			ev->nfields = 0;
			if (t->p < t->end && *t->p == '}')
			{
				t->p++;
				break;
			}
			for (;;)
			{
				int			cap = ev->nfields == 0 ? 4 : ev->nfields;
				int			keylen;
				const char *key;
				char	   *keycopy;

				if (ev->nfields == 0)
					ev->fields = palloc(sizeof(EjField) * cap);
				else if ((ev->nfields & (ev->nfields - 1)) == 0 && ev->nfields >= 4)
					ev->fields = repalloc(ev->fields, sizeof(EjField) * ev->nfields * 2);
				skip_ws(t);
				if (t->p >= t->end || *t->p != '"')
					syntax_error(t, "Expected a key");
				key = read_string(t, &keylen);
				keycopy = palloc(keylen + 1);
				memcpy(keycopy, key, keylen);
				keycopy[keylen] = '\0';
				expect(t, ':', "Expected \":\"");
				ev->fields[ev->nfields].key = keycopy;
				ev->fields[ev->nfields].keylen = keylen;
				ev->fields[ev->nfields].value = load_value(t, depth - 1);
				ev->nfields++;
				skip_ws(t);
				if (t->p < t->end && *t->p == ',')
				{
					t->p++;
					continue;
				}
				expect(t, '}', "Expected \",\" or \"}\"");
				break;
			}
			break;
		case '[':
			ev->kind = EJ_ARRAY;
			ev->source = t->p;
			skip_value(t);
			break;
		case 't':
			if (!match_literal(t, "true", 4))
				syntax_error(t, "Invalid literal");
			ev->kind = EJ_TRUE;
			break;
		case 'f':
			if (!match_literal(t, "false", 5))
				syntax_error(t, "Invalid literal");
			ev->kind = EJ_FALSE;
			break;
		case 'n':
			if (!match_literal(t, "null", 4))
				syntax_error(t, "Invalid literal");
			ev->kind = EJ_NULL;
			break;
		default:
			{
				bool		is_integer;

				ev->kind = EJ_NUMBER;
				ev->numtext = read_number(t, &ev->numlen, &is_integer);
				break;
			}
	}
	return ev;
}

/* Skip one value at t->p, checking its grammar. */
static void
skip_value(JsonText *t)
{
	skip_ws(t);
	if (t->p >= t->end)
		syntax_error(t, "Unexpected end");
	switch (*t->p)
	{
		case '"':
			{
				int			len;

				(void) read_string(t, &len);
				break;
			}
		case '{':
		case '[':
			{
				char		close = *t->p == '{' ? '}' : ']';
				bool		object = close == '}';

				check_stack_depth();
				t->p++;
				skip_ws(t);
				if (t->p < t->end && *t->p == close)
				{
					t->p++;
					break;
				}
				for (;;)
				{
					if (object)
					{
						int			len;

						skip_ws(t);
						if (t->p >= t->end || *t->p != '"')
							syntax_error(t, "Expected a key");
						(void) read_string(t, &len);
						expect(t, ':', "Expected \":\"");
					}
					skip_value(t);
					skip_ws(t);
					if (t->p < t->end && *t->p == ',')
					{
						t->p++;
						continue;
					}
					expect(t, close, object ? "Expected \",\" or \"}\"" : "Expected \",\" or \"]\"");
					break;
				}
				break;
			}
		case 't':
			if (!match_literal(t, "true", 4))
				syntax_error(t, "Invalid literal");
			break;
		case 'f':
			if (!match_literal(t, "false", 5))
				syntax_error(t, "Invalid literal");
			break;
		case 'n':
			if (!match_literal(t, "null", 4))
				syntax_error(t, "Invalid literal");
			break;
		default:
			{
				int			len;
				bool		is_integer;

				(void) read_number(t, &len, &is_integer);
			}
	}
}

/* The object at ev->source, written as an embedded document (for $scope) */
static void
write_document_at(void *arg, const EjValue *ev)
{
	JsonText   *t = (JsonText *) arg;
	const char *saved = t->p;
	Size		doc;

	t->p = (const char *) ev->source;
	Assert(*t->p == '{');
	t->p++;
	doc = bson_open(t->w);
	append_object_members(t, ev->source);
	bson_close(t->w, doc);
	t->p = saved;
}

/*
 * Does the object at t->p (its '{') start with a "$" key?  Only such
 * objects can be Extended JSON wrappers; a wrapper key further down is an
 * error found while the object is read.
 */
static inline bool
object_starts_with_dollar(JsonText *t)
{
	const char *p = t->p + 1;

	while (p < t->end && json_is_space(*p))
		p++;
	if (p + 1 >= t->end || p[0] != '"')
		return false;
	if (p[1] == '$')
		return true;
	/* "$" may be written as the escape \u0024 */
	return t->end - p >= 7 && p[1] == '\\' && p[2] == 'u' &&
		p[3] == '0' && p[4] == '0' && p[5] == '2' && p[6] == '4';
}

/*
 * The object at t->p, which starts with a "$" key, written as an Extended
 * JSON wrapper if it is one (t->p then after it); false, with t->p back at
 * its '{', for a plain document.  The loaded object lives in a memory
 * context reset after each wrapper, so that memory stays flat however many
 * wrappers a text holds.  A wrapper written inside another (a $scope
 * document holding wrappers) gets a context of its own, deleted after it,
 * since the outer wrapper's object is still in use.
 */
static bool
write_wrapper(JsonText *t, char *type_at)
{
	const char *start = t->p;
	const EjValue *saved_current = t->ej.current;
	MemoryContext cxt;
	MemoryContext old;
	bool		written;

	if (t->wrapper_depth == 0)
	{
		if (t->wrapper_cxt == NULL)
			t->wrapper_cxt = AllocSetContextCreate(t->call_cxt, "json_to_bson wrapper",
												   ALLOCSET_SMALL_SIZES);
		cxt = t->wrapper_cxt;
	}
	else
		cxt = AllocSetContextCreate(t->call_cxt, "json_to_bson nested wrapper",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cxt);
	t->wrapper_depth++;
	written = bson_extjson_write(&t->ej, type_at, load_value(t, EJ_LOAD_DEPTH));
	t->wrapper_depth--;
	MemoryContextSwitchTo(old);
	t->ej.current = saved_current;
	if (cxt == t->wrapper_cxt)
		MemoryContextReset(cxt);
	else
		MemoryContextDelete(cxt);
	if (!written)
		t->p = start;			/* a plain document after all: read it again */
	return written;
}

/*
 * The value at t->p, its element header written already; its BSON type goes
 * to *type_at.
 */
static pg_attribute_always_inline void
write_value(JsonText *t, char *type_at)
{
	BsonWriter *w = t->w;

	skip_ws(t);
	if (t->p >= t->end)
		syntax_error(t, "Unexpected end");
	switch (*t->p)
	{
		case '"':
			{
				int			len;
				const char *s;

				t->token = t->p;
				s = read_string(t, &len);
				*type_at = BSON_TYPE_STRING;
				bson_reserve(w, BSON_STRING_VALSIZE(len));
				bson_put_string(w, s, len);
				break;
			}
		case '{':
			{
				Size		open;

				if (t->extended && object_starts_with_dollar(t) &&
					write_wrapper(t, type_at))
					break;
				*type_at = BSON_TYPE_DOCUMENT;
				open = bson_open(w);
				append_object_members(t, t->p++);
				bson_close(w, open);
				break;
			}
		case '[':
			{
				Size		open;
				uint32		i = 0;

				check_stack_depth();
				*type_at = BSON_TYPE_ARRAY;
				t->p++;
				open = bson_open(w);
				skip_ws(t);
				if (t->p < t->end && *t->p == ']')
					t->p++;
				else
				{
					for (;;)
					{
						append_element(t, NULL, 0, i++);
						if ((i & 4095) == 0)
							CHECK_FOR_INTERRUPTS();
						skip_ws(t);
						if (t->p < t->end && *t->p == ',')
						{
							t->p++;
							continue;
						}
						expect(t, ']', "Expected \",\" or \"]\"");
						break;
					}
				}
				bson_close(w, open);
				break;
			}
		case 't':
			if (!match_literal(t, "true", 4))
				syntax_error(t, "Invalid literal");
			*type_at = BSON_TYPE_BOOL;
			bson_put_bool(w, true);
			break;
		case 'f':
			if (!match_literal(t, "false", 5))
				syntax_error(t, "Invalid literal");
			*type_at = BSON_TYPE_BOOL;
			bson_put_bool(w, false);
			break;
		case 'n':
			if (!match_literal(t, "null", 4))
				syntax_error(t, "Invalid literal");
			*type_at = BSON_TYPE_NULL;
			break;
		default:
			{
				int			len;
				bool		is_integer;
				const char *num;

				t->token = t->p;
				num = read_number(t, &len, &is_integer);
				write_number(t, type_at, num, len, is_integer);
			}
	}
}

static void
append_element(JsonText *t, const char *key, int keylen, uint32 index)
{
	char	   *type_at = key ? bson_key_deferred(t->w, key, keylen, BSON_SCALAR_VALSIZE)
		: bson_index_key_deferred(t->w, index, BSON_SCALAR_VALSIZE);

	write_value(t, type_at);
}

/*
 * The members of an object, t->p just after its '{'; ends after its '}'.
 * nested_at: where the object starts, if it is not the top-level document
 * (and so possibly an Extended JSON wrapper); NULL for the top level.
 */
static void
append_object_members(JsonText *t, const char *nested_at)
{
	int			n = 0;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	skip_ws(t);
	if (t->p < t->end && *t->p == '}')
	{
		t->p++;
		return;
	}
	for (;;)
	{
		const char *key;
		int			keylen;

		skip_ws(t);
		if (t->p >= t->end || *t->p != '"')
			syntax_error(t, "Expected a key");
		t->token = t->p;
		key = read_string(t, &keylen);
		expect(t, ':', "Expected \":\"");

		/*
		 * A wrapper key anywhere but first (where it would have been seen
		 * already) means a wrapper with extra keys.
		 */
		if (t->extended && nested_at && n > 0 && keylen > 1 && key[0] == '$')
		{
			skip_ws(t);
			if (bson_extjson_is_wrapper_key(key, keylen, t->p < t->end && *t->p == '"'))
			{
				StringInfoData where;

				initStringInfo(&where);
				bson_describe_location(t->w, nested_at, &where);
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
						 errmsg("invalid Extended JSON %.*s", keylen, key),
						 errdetail("The object at %s has other keys before %.*s; an Extended JSON wrapper has no other keys.",
								   where.data, keylen, key)));
			}
		}

		append_element(t, key, keylen, 0);
		n++;
		if ((n & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		skip_ws(t);
		if (t->p < t->end && *t->p == ',')
		{
			t->p++;
			continue;
		}
		expect(t, '}', "Expected \",\" or \"}\"");
		break;
	}
}

/*
 * Error paths only: the path ("orders[2].at") of the value or key that
 * starts at target, found by reading the text again.  Strings decoded into
 * the scratch buffer are located by the token being written.
 */
static bool
locate_in_value(const char **pp, const char *end, const char *target,
				StringInfo path)
{
	const char *p = *pp;

	while (p < end && json_is_space(*p))
		p++;
	if (p >= end)
		return false;
	if (p == target)
		return true;
	if (*p == '{' || *p == '[')
	{
		bool		object = *p == '{';
		char		close = object ? '}' : ']';
		int			index = 0;
		int			saved_len = path->len;

		check_stack_depth();
		p++;
		for (;;)
		{
			while (p < end && (json_is_space(*p) || *p == ','))
				p++;
			if (p >= end || *p == close)
				break;
			path->len = saved_len;
			path->data[saved_len] = '\0';
			if (object)
			{
				const char *kstart = p;
				const char *k = p + 1;

				/* the raw key text, escapes and all */
				while (k < end && *k != '"')
					k += (*k == '\\') ? 2 : 1;
				bson_path_append_key(path, kstart + 1, (int) (k - kstart - 1), BSON_KEY_SERVER);
				if (kstart == target || kstart + 1 == target)
					return true;
				p = k + 1;
				while (p < end && *p != ':')
					p++;
				p++;
			}
			else
				bson_path_append_index(path, index++);
			if (locate_in_value(&p, end, target, path))
				return true;
		}
		path->len = saved_len;
		path->data[saved_len] = '\0';
		*pp = p + 1;
		return false;
	}
	if (*p == '"')
	{
		if (p + 1 == target)
			return true;
		p++;
		while (p < end && *p != '"')
			p += (*p == '\\') ? 2 : 1;
		*pp = p + 1;
		return false;
	}
	while (p < end && *p != ',' && *p != '}' && *p != ']')
		p++;
	*pp = p;
	return false;
}

static void
locate_json(void *arg, const char *input, StringInfo path)
{
	JsonText   *t = (JsonText *) arg;
	const char *p = t->text;
	const char *target = input;

	/* decoded strings live in scratch: use the token being written */
	if (target < t->text || target >= t->end)
		target = t->token;
	if (target == NULL || !locate_in_value(&p, t->end, target, path) || path->len == 0)
	{
		resetStringInfo(path);
		appendStringInfo(path, "byte %d", target ? (int) (target - t->text) : 0);
	}
}

static void
json_text_init(JsonText *t, BsonWriter *w, const char *text, int len,
			   bool extended_json, bool legacy_extended_json)
{
	t->w = w;
	t->text = text;
	t->p = text;
	t->end = text + len;
	t->extended = extended_json;
	t->token = NULL;
	t->scratch.data = NULL;		/* most texts have no escapes */
	t->ej.w = w;
	t->ej.legacy = legacy_extended_json;
	t->ej.write_document = write_document_at;
	t->ej.arg = t;
	t->ej.current = NULL;
	t->ej.arena.nvalues = 0;
	t->ej.arena.nfields = 0;
	t->call_cxt = CurrentMemoryContext;
	t->wrapper_cxt = NULL;
	t->wrapper_depth = 0;
}

void
bson_write_json_value(BsonWriter *w, char *type_at, const char *text, int len)
{
	JsonText	t;
	BsonLocateCallback saved_locate = w->locate;
	void	   *saved_arg = w->locate_arg;

	json_text_init(&t, w, text, len, false, false);
	w->locate = locate_json;
	w->locate_arg = &t;
	write_value(&t, type_at);
	skip_ws(&t);
	if (t.p != t.end)
		syntax_error(&t, "Trailing characters");
	w->locate = saved_locate;
	w->locate_arg = saved_arg;
}

void
bson_append_json_text_object(BsonWriter *w, const char *text, int len,
							 bool extended_json, bool legacy_extended_json)
{
	JsonText	t;
	BsonLocateCallback saved_locate = w->locate;
	void	   *saved_arg = w->locate_arg;

	json_text_init(&t, w, text, len, extended_json, legacy_extended_json);

	skip_ws(&t);
	if (t.p >= t.end || *t.p != '{')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot convert a JSON %s to a BSON document",
						t.p >= t.end ? "empty text" : *t.p == '[' ? "array"
						: *t.p == '"' ? "string" : *t.p == 't' || *t.p == 'f' ? "boolean"
						: *t.p == 'n' ? "null" : "number"),
				 errdetail("A BSON document is a set of key-value pairs, so only a JSON object can become one."),
				 errhint("Wrap the value in an object, for example with json_build_object('value', ...).")));
	t.p++;

	w->locate = locate_json;
	w->locate_arg = &t;
	append_object_members(&t, NULL);
	skip_ws(&t);
	if (t.p != t.end)
		syntax_error(&t, "Trailing characters");
	w->locate = saved_locate;
	w->locate_arg = saved_arg;
	if (t.wrapper_cxt != NULL)
		MemoryContextDelete(t.wrapper_cxt);
}
