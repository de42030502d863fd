/*
 * json_grammar.h
 *		JSON's whitespace and number grammar (RFC 8259), for every reader of
 *		JSON text in bson_out: the json_to_bson parser and the Extended JSON
 *		value parsers.
 *
 * Plain C, header only: also built by fuzz/ and test/unit/.
 */
#ifndef JSON_GRAMMAR_H
#define JSON_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>

/* The four whitespace characters JSON allows between tokens */
static inline bool
json_is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* ASCII only: isdigit() depends on the locale and takes an int */
static inline bool
json_is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Scan the number at s[0..len): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
 * Returns the length of the number, which ends where the grammar does (the
 * caller decides what may follow), with *is_integer true when it has neither
 * fraction nor exponent; or 0 when s does not start with a complete number,
 * with *bad at the offset of the first byte that breaks the grammar.
 */
static inline size_t
json_scan_number(const char *s, size_t len, bool *is_integer, size_t *bad)
{
	size_t		i = 0;

	*is_integer = true;
	*bad = 0;
	if (i < len && s[i] == '-')
		i++;
	if (i >= len || !json_is_digit(s[i]))
		goto invalid;
	if (s[i] == '0')
		i++;
	else
		while (i < len && json_is_digit(s[i]))
			i++;
	if (i < len && s[i] == '.')
	{
		*is_integer = false;
		i++;
		if (i >= len || !json_is_digit(s[i]))
			goto invalid;
		while (i < len && json_is_digit(s[i]))
			i++;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E'))
	{
		*is_integer = false;
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= len || !json_is_digit(s[i]))
			goto invalid;
		while (i < len && json_is_digit(s[i]))
			i++;
	}
	return i;

invalid:
	*bad = i;
	return 0;
}

#endif							/* JSON_GRAMMAR_H */
