/*
 * test_copy_binary.c
 *		Unit tests of client/copy_binary.c, the COPY binary format parser:
 *		the same stream fed whole, byte by byte, and cut at every chunk size
 *		from 1 to 64 and at pseudo-random points, must give the same fields;
 *		malformed streams must be refused with a message, never crash.
 *
 * Prints "copy_binary: N passed, M failed"; exit status 1 on a failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_binary.h"

static int	passed;
static int	failed;

#define CHECK(cond, ...) \
	do { \
		if (cond) passed++; \
		else { failed++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
	} while (0)

/* a growable byte string */
typedef struct Buf
{
	char	   *d;
	size_t		n;
	size_t		cap;
} Buf;

static void
put(Buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap)
	{
		b->cap = (b->n + n) * 2 + 64;
		b->d = realloc(b->d, b->cap);
	}
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void
put32(Buf *b, uint32_t v)
{
	unsigned char c[4] = {v >> 24, v >> 16, v >> 8, v};

	put(b, c, 4);
}

static void
put16(Buf *b, uint16_t v)
{
	unsigned char c[2] = {v >> 8, v};

	put(b, c, 2);
}

static void
header(Buf *b, uint32_t flags, uint32_t extlen)
{
	put(b, "PGCOPY\n\377\r\n\0", 11);
	put32(b, flags);
	put32(b, extlen);
	for (uint32_t i = 0; i < extlen; i++)
		put(b, "e", 1);
}

/* what the callback saw: "row:len:hash;" per field, NULL as "row:N;" */
static int
collect(void *arg, uint64_t row, const char *data, size_t len)
{
	Buf		   *out = arg;
	char		s[96];
	uint32_t	h = 2166136261u;

	if (data == NULL)
		snprintf(s, sizeof(s), "%llu:N;", (unsigned long long) row);
	else
	{
		for (size_t i = 0; i < len; i++)
			h = (h ^ (unsigned char) data[i]) * 16777619u;
		snprintf(s, sizeof(s), "%llu:%zu:%08x;", (unsigned long long) row, len, h);
	}
	put(out, s, strlen(s));
	return 0;
}

/* Feed 'in' in chunks (sizes from 'sizes', cycling; 0 = all at once). */
static CopyResult
run(const Buf *in, const size_t *sizes, int nsizes, size_t max_field, Buf *out,
	CopyParser *p)
{
	size_t		pos = 0;
	int			k = 0;
	CopyResult	r = COPY_OK;

	out->n = 0;
	copy_parser_init(p, 1, max_field);
	while (pos < in->n)
	{
		size_t		c = nsizes ? sizes[k++ % nsizes] : in->n;

		if (c > in->n - pos)
			c = in->n - pos;
		r = copy_parser_feed(p, in->d + pos, c, collect, out);
		if (r != COPY_OK)
			break;
		pos += c;
	}
	return r;
}

/* the reference stream: various field sizes, NULLs, an empty value */
static void
make_stream(Buf *b, int ext)
{
	static const size_t lens[] = {5, 0, 1, 17, 300, 70000, 6, 4096, 3};
	unsigned	seed = 1;

	header(b, 0, ext);
	for (int row = 0; row < 40; row++)
	{
		put16(b, 1);
		if (row % 7 == 3)
		{
			put32(b, 0xFFFFFFFFu);	/* NULL */
			continue;
		}
		size_t		n = lens[row % 9];

		put32(b, (uint32_t) n);
		for (size_t i = 0; i < n; i++)
		{
			seed = seed * 1103515245u + 12345u;
			char		c = (char) (seed >> 16);

			put(b, &c, 1);
		}
	}
	put16(b, 0xFFFF);			/* trailer */
}

int
main(void)
{
	Buf			in = {0};
	Buf			ref = {0};
	Buf			out = {0};
	CopyParser	p;
	CopyResult	r;
	size_t		one = 1;

	for (int ext = 0; ext <= 5; ext += 5)
	{
		in.n = 0;
		make_stream(&in, ext);

		/* all at once: the reference */
		r = run(&in, NULL, 0, 1 << 20, &ref, &p);
		CHECK(r == COPY_OK && copy_parser_done(&p), "whole stream: result %d", r);
		CHECK(copy_parser_rows(&p) == 40, "rows %llu", (unsigned long long) copy_parser_rows(&p));
		copy_parser_free(&p);

		/* every fixed chunk size */
		for (size_t c = 1; c <= 64; c++)
		{
			r = run(&in, &c, 1, 1 << 20, &out, &p);
			CHECK(r == COPY_OK && copy_parser_done(&p) && out.n == ref.n &&
				  memcmp(out.d, ref.d, ref.n) == 0, "chunk size %zu (ext %d)", c, ext);
			copy_parser_free(&p);
		}
		/* pseudo-random cuts */
		for (unsigned s = 1; s <= 50; s++)
		{
			size_t		sizes[16];

			for (int i = 0; i < 16; i++)
				sizes[i] = 1 + (s * 2654435761u + i * 40503u) % 9000;
			r = run(&in, sizes, 16, 1 << 20, &out, &p);
			CHECK(r == COPY_OK && copy_parser_done(&p) && out.n == ref.n &&
				  memcmp(out.d, ref.d, ref.n) == 0, "random cuts seed %u", s);
			copy_parser_free(&p);
		}
	}

	/* truncated anywhere: never done, never an error about the data seen */
	for (size_t cut = 0; cut < in.n; cut += 997)
	{
		Buf			t = {in.d, cut, cut};

		r = run(&t, &one, 1, 1 << 20, &out, &p);
		CHECK(r == COPY_OK && !copy_parser_done(&p), "truncated at %zu", cut);
		copy_parser_free(&p);
	}

	/* a field longer than the limit: refused before it is gathered */
	r = run(&in, NULL, 0, 4096, &out, &p);
	CHECK(r == COPY_TOO_LONG && p.too_long_row == 6 && p.too_long_len == 70000,
		  "too long: result %d row %llu len %zu", r, (unsigned long long) p.too_long_row,
		  p.too_long_len);
	copy_parser_free(&p);

	/* bad signature */
	{
		Buf			b = {0};

		put(&b, "PGCOPY\n\377\r\n\1", 11);
		put32(&b, 0);
		put32(&b, 0);
		put16(&b, 0xFFFF);
		r = run(&b, &one, 1, 100, &out, &p);
		CHECK(r == COPY_ERROR && strstr(copy_parser_error(&p), "signature"), "bad signature");
		copy_parser_free(&p);
		free(b.d);
	}
	/* OIDs flag, unknown critical flag */
	{
		Buf			b = {0};

		header(&b, 1u << 16, 0);
		put16(&b, 0xFFFF);
		r = run(&b, NULL, 0, 100, &out, &p);
		CHECK(r == COPY_ERROR && strstr(copy_parser_error(&p), "OIDs"), "OID flag");
		copy_parser_free(&p);
		b.n = 0;
		header(&b, 1u << 20, 0);
		put16(&b, 0xFFFF);
		r = run(&b, NULL, 0, 100, &out, &p);
		CHECK(r == COPY_ERROR && strstr(copy_parser_error(&p), "critical"), "critical flag");
		copy_parser_free(&p);
		free(b.d);
	}
	/* two fields where one is expected */
	{
		Buf			b = {0};

		header(&b, 0, 0);
		put16(&b, 2);
		put32(&b, 0);
		put32(&b, 0);
		put16(&b, 0xFFFF);
		r = run(&b, &one, 1, 100, &out, &p);
		CHECK(r == COPY_ERROR && strstr(copy_parser_error(&p), "2 fields"), "field count: %s",
			  copy_parser_error(&p));
		copy_parser_free(&p);
		free(b.d);
	}
	/* a negative length other than -1 */
	{
		Buf			b = {0};

		header(&b, 0, 0);
		put16(&b, 1);
		put32(&b, 0xFFFFFFFEu);
		r = run(&b, NULL, 0, 100, &out, &p);
		CHECK(r == COPY_ERROR && strstr(copy_parser_error(&p), "negative"), "negative length");
		copy_parser_free(&p);
		free(b.d);
	}
	/* data after the trailer */
	{
		Buf			b = {0};

		header(&b, 0, 0);
		put16(&b, 0xFFFF);
		put(&b, "x", 1);
		r = run(&b, NULL, 0, 100, &out, &p);
		CHECK(r == COPY_ERROR && strstr(copy_parser_error(&p), "after the end-of-data trailer"),
			  "data after trailer");
		copy_parser_free(&p);
		free(b.d);
	}
	/* an empty table: header and trailer only, in one or many chunks */
	{
		Buf			b = {0};

		header(&b, 0, 0);
		put16(&b, 0xFFFF);
		r = run(&b, &one, 1, 100, &out, &p);
		CHECK(r == COPY_OK && copy_parser_done(&p) && copy_parser_rows(&p) == 0 && out.n == 0,
			  "empty stream");
		copy_parser_free(&p);
		free(b.d);
	}

	free(in.d);
	free(ref.d);
	free(out.d);
	printf("copy_binary: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
