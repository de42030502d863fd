/*
 * bson_check.c
 *		The per-document checks made on the way out (see bson_check.h).
 */
#include "bson_check.h"

#include <stdint.h>
#include <stdio.h>

#include "bson_reader.h"

/*
 * The validator's limits in this client.  It recurses once for every
 * nested document or array, and a document of up to 2 GiB could nest
 * hundreds of millions of levels: a server that sent one (a hostile server,
 * or a --query returning any bytea) would overflow the stack of the job's
 * thread.  So nesting is capped at BSON_CHECK_MAX_DEPTH levels below the
 * top-level document: MongoDB's own validator stops at 200 and MongoDB
 * stores at most 100, so no document that mongorestore could load is
 * refused, and 200 levels of the validator's recursion take some tens of
 * kB of stack, far below any thread's.  No hooks: the tick hook exists for
 * a server's cancellation checks, and here a signal or a failed job stops
 * the export at the next row; validating one document takes time linear
 * in its size.
 */
static const BsonReadLimits check_limits = {
	.max_depth = BSON_CHECK_MAX_DEPTH,
	.enter = NULL,
	.arg = NULL,
	.tick = NULL,
};

const char *
bson_too_large_message(size_t len, size_t max_size, const char *max_size_option,
					   char *err, size_t errsize)
{
	if (max_size == BSON_MONGODB_MAX_SIZE)
		snprintf(err, errsize,
				 "the document is %zu bytes, more than MongoDB's limit of %zu bytes (16 MiB)%s%s%s",
				 len, max_size, max_size_option ? "; use " : "",
				 max_size_option ? max_size_option : "",
				 max_size_option ? " to change the limit" : "");
	else
		snprintf(err, errsize,
				 "the document is %zu bytes, more than the %s limit of %zu bytes",
				 len, max_size_option ? max_size_option : "size", max_size);
	return err;
}

const char *
bson_check_document(const char *data, size_t len, size_t max_size,
					const char *max_size_option, char *err, size_t errsize)
{
	const unsigned char *b = (const unsigned char *) data;
	uint32_t	header;

	if (len > max_size)
		return bson_too_large_message(len, max_size, max_size_option, err, errsize);
	if (len < BSON_MIN_SIZE)
	{
		snprintf(err, errsize,
				 "the value is not a BSON document: %zu bytes, fewer than the %d of the smallest document",
				 len, BSON_MIN_SIZE);
		return err;
	}
	/* BSON integers are little-endian */
	header = (uint32_t) b[0] | ((uint32_t) b[1] << 8) |
		((uint32_t) b[2] << 16) | ((uint32_t) b[3] << 24);
	if (header != len)
	{
		snprintf(err, errsize,
				 "the value is not a BSON document: its length header says %lu bytes, but the value has %zu bytes",
				 (unsigned long) header, len);
		return err;
	}
	if (b[len - 1] != 0)
	{
		snprintf(err, errsize,
				 "the value is not a BSON document: its last byte is 0x%02x, not 0x00",
				 b[len - 1]);
		return err;
	}
	return NULL;
}

const char *
bson_validate_document(const char *data, size_t len, char *err, size_t errsize)
{
	BsonReadError rerr;

	if (bson_read_validate((const uint8_t *) data, len, &check_limits, &rerr))
		return NULL;
	snprintf(err, errsize, "the document is not valid BSON at byte offset %zu: %s",
			 rerr.offset, rerr.message);
	return err;
}
