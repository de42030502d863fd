/*
 * copy_binary.h
 *		Incremental parser of PostgreSQL's COPY binary format.
 *
 * COPY ... TO STDOUT (FORMAT binary) arrives as a byte stream cut into
 * CopyData messages.  In practice every message holds one row (the first
 * also holds the file header, the last the trailer), but the protocol does
 * not promise it, so this parser accepts the stream in chunks of any size
 * and keeps only what it must: a field that lies entirely inside one chunk
 * is handed to the caller in place, without a copy; only a field cut by a
 * chunk boundary is gathered in an internal buffer.
 *
 * The format (all integers big-endian):
 *		11-byte signature "PGCOPY\n\377\r\n\0", int32 flags, int32 length of
 *		the header extension, the extension;
 *		per tuple: int16 field count, then per field int32 length (-1 for
 *		NULL) and that many bytes;
 *		trailer: int16 -1.
 *
 * The parser knows nothing about BSON: it checks the framing only.
 */
#ifndef COPY_BINARY_H
#define COPY_BINARY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Called once per field, in order.  row is the 1-based tuple number, data is
 * NULL for an SQL NULL (len is then 0).  data is valid only during the call.
 * A nonzero return stops the parser: copy_parser_feed returns COPY_STOPPED.
 */
typedef int (*copy_field_cb) (void *arg, uint64_t row, const char *data,
							  size_t len);

typedef enum CopyResult
{
	COPY_OK = 0,				/* chunk consumed, more may follow */
	COPY_ERROR,					/* malformed stream; see copy_parser_error */
	COPY_TOO_LONG,				/* a field longer than max_field; see too_long_* */
	COPY_STOPPED				/* the callback returned nonzero */
} CopyResult;

typedef enum CopyState
{
	CS_SIGNATURE,
	CS_FLAGS,
	CS_EXT_LEN,
	CS_EXT_DATA,
	CS_TUPLE,					/* expecting a tuple's field count or the trailer */
	CS_FIELD_LEN,
	CS_FIELD_DATA,
	CS_DONE						/* trailer seen; nothing may follow */
} CopyState;

typedef struct CopyParser
{
	CopyState	state;
	int			nfields;		/* fields every tuple must have */
	size_t		max_field;		/* longest field accepted */
	uint64_t	row;			/* current tuple, 1-based; rows so far after */
	int			field;			/* fields of the current tuple seen so far */

	/* a fixed-size item (signature, integer) being gathered */
	unsigned char small[16];
	size_t		small_have;

	/* header extension bytes still to skip */
	uint32_t	ext_left;

	/* the current field; gathered in buf only when it spans chunks */
	size_t		field_len;
	char	   *buf;
	size_t		buf_have;
	size_t		buf_size;

	/* details of COPY_TOO_LONG */
	uint64_t	too_long_row;
	size_t		too_long_len;

	char		errmsg[256];
} CopyParser;

extern void copy_parser_init(CopyParser *p, int nfields, size_t max_field);
extern void copy_parser_free(CopyParser *p);
extern CopyResult copy_parser_feed(CopyParser *p, const char *data, size_t len,
								   copy_field_cb cb, void *arg);

/* Has the whole stream, trailer included, been seen? */
extern int	copy_parser_done(const CopyParser *p);
extern const char *copy_parser_error(const CopyParser *p);

/* The tuples completed so far (the trailer is not one). */
extern uint64_t copy_parser_rows(const CopyParser *p);

#endif							/* COPY_BINARY_H */
