/*
 * copy_binary.c
 *		Incremental parser of PostgreSQL's COPY binary format.
 *
 * See copy_binary.h for the format and the contract.  The parser is a state
 * machine over an arbitrary sequence of chunks: every item of the format
 * (signature, integer, field bytes) may be cut anywhere by a chunk boundary,
 * and is then gathered piece by piece.  The common case, a field wholly
 * inside the chunk, costs no copy.
 */
#include "copy_binary.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char copy_signature[11] = "PGCOPY\n\377\r\n\0";

static uint32_t
get_be32(const unsigned char *b)
{
	return ((uint32_t) b[0] << 24) | ((uint32_t) b[1] << 16) |
		((uint32_t) b[2] << 8) | (uint32_t) b[3];
}

static uint16_t
get_be16(const unsigned char *b)
{
	return (uint16_t) (((unsigned) b[0] << 8) | (unsigned) b[1]);
}

static CopyResult
parse_error(CopyParser *p, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
	va_end(ap);
	return COPY_ERROR;
}

void
copy_parser_init(CopyParser *p, int nfields, size_t max_field)
{
	memset(p, 0, sizeof(*p));
	p->state = CS_SIGNATURE;
	p->nfields = nfields;
	p->max_field = max_field;
}

void
copy_parser_free(CopyParser *p)
{
	free(p->buf);
	p->buf = NULL;
	p->buf_size = 0;
}

int
copy_parser_done(const CopyParser *p)
{
	return p->state == CS_DONE;
}

const char *
copy_parser_error(const CopyParser *p)
{
	return p->errmsg;
}

uint64_t
copy_parser_rows(const CopyParser *p)
{
	/* p->row counts the tuple being read as soon as its field count is seen */
	if (p->state == CS_FIELD_LEN || p->state == CS_FIELD_DATA)
		return p->row - 1;
	return p->row;
}

/*
 * Gather a fixed-size item of 'need' bytes.  Returns a pointer to its bytes
 * once complete (in place when the chunk holds all of it), else NULL after
 * taking what the chunk has.
 */
static const unsigned char *
gather(CopyParser *p, const unsigned char *s, size_t len, size_t *pos,
	   size_t need)
{
	size_t		take;

	if (p->small_have == 0 && len - *pos >= need)
	{
		const unsigned char *r = s + *pos;

		*pos += need;
		return r;
	}
	take = need - p->small_have;
	if (take > len - *pos)
		take = len - *pos;
	memcpy(p->small + p->small_have, s + *pos, take);
	p->small_have += take;
	*pos += take;
	if (p->small_have < need)
		return NULL;
	p->small_have = 0;
	return p->small;
}

/* After a field: the next field of the tuple, or the next tuple. */
static void
end_field(CopyParser *p)
{
	p->field++;
	p->state = (p->field == p->nfields) ? CS_TUPLE : CS_FIELD_LEN;
}

CopyResult
copy_parser_feed(CopyParser *p, const char *data, size_t len,
				 copy_field_cb cb, void *arg)
{
	const unsigned char *s = (const unsigned char *) data;
	size_t		pos = 0;
	const unsigned char *item;

	while (pos < len)
	{
		switch (p->state)
		{
			case CS_SIGNATURE:
				if ((item = gather(p, s, len, &pos, sizeof(copy_signature))) == NULL)
					break;
				if (memcmp(item, copy_signature, sizeof(copy_signature)) != 0)
					return parse_error(p, "the COPY data does not start with the binary format's signature");
				p->state = CS_FLAGS;
				break;

			case CS_FLAGS:
				{
					uint32_t	flags;

					if ((item = gather(p, s, len, &pos, 4)) == NULL)
						break;
					flags = get_be32(item);
					/* bit 16: OIDs included (servers before 12); 17-31: must be refused */
					if (flags & (1u << 16))
						return parse_error(p, "the COPY data includes OIDs, which this program does not expect");
					if (flags & 0xFFFE0000u)
						return parse_error(p, "the COPY data has unknown critical header flags 0x%08x", flags);
					p->state = CS_EXT_LEN;
					break;
				}

			case CS_EXT_LEN:
				if ((item = gather(p, s, len, &pos, 4)) == NULL)
					break;
				p->ext_left = get_be32(item);
				p->state = p->ext_left ? CS_EXT_DATA : CS_TUPLE;
				break;

			case CS_EXT_DATA:
				{
					size_t		skip = len - pos;

					if (skip > p->ext_left)
						skip = p->ext_left;
					pos += skip;
					p->ext_left -= (uint32_t) skip;
					if (p->ext_left == 0)
						p->state = CS_TUPLE;
					break;
				}

			case CS_TUPLE:
				{
					int16_t		n;

					if ((item = gather(p, s, len, &pos, 2)) == NULL)
						break;
					n = (int16_t) get_be16(item);
					if (n == -1)
					{
						p->state = CS_DONE;
						break;
					}
					if (n != p->nfields)
						return parse_error(p, "row %llu of the COPY data has %d fields, expected %d",
										   (unsigned long long) p->row + 1, n, p->nfields);
					p->row++;
					p->field = 0;
					p->state = CS_FIELD_LEN;
					break;
				}

			case CS_FIELD_LEN:
				{
					int32_t		flen;

					if ((item = gather(p, s, len, &pos, 4)) == NULL)
						break;
					flen = (int32_t) get_be32(item);
					if (flen == -1)
					{
						if (cb(arg, p->row, NULL, 0) != 0)
							return COPY_STOPPED;
						end_field(p);
						break;
					}
					if (flen < 0)
						return parse_error(p, "row %llu of the COPY data has a field of negative length %d",
										   (unsigned long long) p->row, flen);
					if ((size_t) flen > p->max_field)
					{
						/* refuse before gathering it: memory stays bounded */
						p->too_long_row = p->row;
						p->too_long_len = (size_t) flen;
						return COPY_TOO_LONG;
					}
					p->field_len = (size_t) flen;
					p->buf_have = 0;
					if (flen == 0)
					{
						/* an empty value: complete already, even at a chunk's end */
						if (cb(arg, p->row, "", 0) != 0)
							return COPY_STOPPED;
						end_field(p);
						break;
					}
					p->state = CS_FIELD_DATA;
					break;
				}

			case CS_FIELD_DATA:
				{
					size_t		take;

					if (p->buf_have == 0 && len - pos >= p->field_len)
					{
						/* the whole field is in this chunk: no copy */
						const char *f = data + pos;

						pos += p->field_len;
						if (cb(arg, p->row, f, p->field_len) != 0)
							return COPY_STOPPED;
						end_field(p);
						break;
					}
					if (p->buf_size < p->field_len)
					{
						char	   *nb = realloc(p->buf, p->field_len);

						if (nb == NULL)
							return parse_error(p, "out of memory for a field of %zu bytes", p->field_len);
						p->buf = nb;
						p->buf_size = p->field_len;
					}
					take = p->field_len - p->buf_have;
					if (take > len - pos)
						take = len - pos;
					memcpy(p->buf + p->buf_have, data + pos, take);
					p->buf_have += take;
					pos += take;
					if (p->buf_have == p->field_len)
					{
						p->buf_have = 0;
						if (cb(arg, p->row, p->buf, p->field_len) != 0)
							return COPY_STOPPED;
						end_field(p);
					}
					break;
				}

			case CS_DONE:
				return parse_error(p, "%zu bytes of COPY data after the end-of-data trailer", len - pos);
		}
	}
	return COPY_OK;
}
