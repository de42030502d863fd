/*
 * bson_check.h
 *		The per-document checks made on the way out.
 *
 * Two levels.  The framing check is always made: it catches what would
 * corrupt a .bson file as a stream, where every document's length header is
 * the only framing.  A wrong length header or a missing final 0 byte would
 * make mongorestore or bsondump misread every later document; a document
 * over MongoDB's size limit would be refused by the server.  The full
 * validation (the default; --no-validate skips it) runs the extension's own
 * validator, bson_read_validate() of src/core/bson_reader.c, over every element:
 * the server's functions produce valid documents, but a --query can return
 * any bytea, and the client need not trust the server it reads from.
 */
#ifndef BSON_CHECK_H
#define BSON_CHECK_H

#include <stddef.h>

/* MongoDB's maximum document size (BSONObjMaxUserSize), the --max-size default */
#define BSON_MONGODB_MAX_SIZE	(16 * 1024 * 1024)

/* The smallest BSON document: int32 length 5 and the terminating 0 byte. */
#define BSON_MIN_SIZE	5

/*
 * How deeply documents and arrays may nest below the top-level document
 * for the full validation; see bson_check.c.
 */
#define BSON_CHECK_MAX_DEPTH	200

/*
 * The framing check of one document.  Returns NULL when it is fine, else
 * writes what is wrong (without the row number; the caller adds it) into
 * err and returns err.
 */
extern const char *bson_check_document(const char *data, size_t len,
									   size_t max_size, const char *max_size_option,
									   char *err, size_t errsize);

/*
 * The full validation of one document that passed bson_check_document:
 * NULL, or err with the byte offset (from the document's first byte) and
 * the reason of the first problem found.
 */
extern const char *bson_validate_document(const char *data, size_t len,
										  char *err, size_t errsize);

/*
 * The message for a document over max_size; shared with the COPY parser's
 * early refusal of an over-long field, so that both read the same.
 * max_size_option: the program's option that sets the limit, or NULL.
 */
extern const char *bson_too_large_message(size_t len, size_t max_size,
										  const char *max_size_option,
										  char *err, size_t errsize);

#endif							/* BSON_CHECK_H */
