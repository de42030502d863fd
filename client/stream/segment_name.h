/*
 * segment_name.h
 *		The names of pg_bsonstream's change segments in DIR/changes, the one
 *		place that writes and reads them (segment.c names the segments, the
 *		--to applier lists them).
 *
 * A closed segment is <first>-<last>.bson: the resume tokens of its first
 * and last events (RESUME_TOKEN_LEN hexadecimal digits each), so the names
 * sort in stream order.  An open one is <first>-open.bson until its rename.
 */
#ifndef SEGMENT_NAME_H
#define SEGMENT_NAME_H

#include <stdio.h>
#include <string.h>

#include "resume_token.h"

#define SEGMENT_SUFFIX		".bson"
#define SEGMENT_NAME_LEN	(2 * RESUME_TOKEN_LEN + 1 + 5)

/* A closed segment's file name from its first and last tokens */
static inline void
segment_name_format(char *out, size_t outsize, const char *first, const char *last)
{
	snprintf(out, outsize, "%.*s-%.*s" SEGMENT_SUFFIX, RESUME_TOKEN_LEN, first, RESUME_TOKEN_LEN, last);
}

/* An open segment's file name */
static inline void
segment_name_open(char *out, size_t outsize, const char *first)
{
	snprintf(out, outsize, "%.*s-open" SEGMENT_SUFFIX, RESUME_TOKEN_LEN, first);
}

/* Is name a closed segment's? */
static inline int
segment_name_valid(const char *name)
{
	size_t		n = strlen(name);

	return n == SEGMENT_NAME_LEN && name[RESUME_TOKEN_LEN] == '-' &&
		strcmp(name + n - 5, SEGMENT_SUFFIX) == 0 && resume_token_is_valid(name) &&
		resume_token_is_valid(name + RESUME_TOKEN_LEN + 1);
}

/* A closed segment's last token (RESUME_TOKEN_LEN characters, not terminated) */
static inline const char *
segment_name_last(const char *name)
{
	return name + RESUME_TOKEN_LEN + 1;
}

#endif							/* SEGMENT_NAME_H */
