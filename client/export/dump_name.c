/*
 * dump_name.c
 *		A dump directory's file names (see dump_name.h).
 */
#include "dump_name.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
dump_list(const char *dir, DumpFile **files, int *nfiles)
{
	DIR		   *d;
	struct dirent *de;
	int			n = 0;
	int			max = 0;
	DumpFile   *fs = NULL;
	size_t		suffix = strlen(DUMP_META_SUFFIX);

	*files = NULL;
	*nfiles = 0;
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((de = readdir(d)) != NULL)
	{
		char		dbdir[4400];
		DIR		   *dd;
		struct dirent *fe;

		if (de->d_name[0] == '.')
			continue;
		snprintf(dbdir, sizeof(dbdir), "%s/%s", dir, de->d_name);
		if ((dd = opendir(dbdir)) == NULL)
			continue;
		while ((fe = readdir(dd)) != NULL)
		{
			size_t		l = strlen(fe->d_name);
			int			stem = (int) (l - suffix);

			if (l <= suffix || strcmp(fe->d_name + stem, DUMP_META_SUFFIX) != 0)
				continue;
			if (n == max)
			{
				DumpFile   *more = realloc(fs, sizeof(DumpFile) * (max = max ? max * 2 : 16));

				if (more == NULL)
				{
					free(fs);
					closedir(dd);
					closedir(d);
					errno = ENOMEM;
					return -1;
				}
				fs = more;
			}
			snprintf(fs[n].db, sizeof(fs[n].db), "%s", de->d_name);
			snprintf(fs[n].data_path, sizeof(fs[n].data_path), "%s/%.*s" DUMP_DATA_SUFFIX, dbdir,
					 stem, fe->d_name);
			snprintf(fs[n].meta_path, sizeof(fs[n].meta_path), "%s/%s", dbdir, fe->d_name);
			n++;
		}
		closedir(dd);
	}
	closedir(d);
	*files = fs;
	*nfiles = n;
	return 0;
}

#define SHA1_LEN	20

static uint32_t
rol(uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

/* One 64-byte block into the state h (FIPS 180-4, 6.1.2) */
static void
sha1_block(uint32_t h[5], const unsigned char *p)
{
	uint32_t	w[80];
	uint32_t	a = h[0],
				b = h[1],
				c = h[2],
				d = h[3],
				e = h[4];

	for (int t = 0; t < 16; t++)
		w[t] = (uint32_t) p[4 * t] << 24 | (uint32_t) p[4 * t + 1] << 16 |
			(uint32_t) p[4 * t + 2] << 8 | p[4 * t + 3];
	for (int t = 16; t < 80; t++)
		w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
	for (int t = 0; t < 80; t++)
	{
		uint32_t	f,
					k,
					tmp;

		if (t < 20)
			f = (b & c) | (~b & d), k = 0x5A827999;
		else if (t < 40)
			f = b ^ c ^ d, k = 0x6ED9EBA1;
		else if (t < 60)
			f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
		else
			f = b ^ c ^ d, k = 0xCA62C1D6;
		tmp = rol(a, 5) + f + e + k + w[t];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = tmp;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

/* SHA-1 of a short string (a collection name) */
static void
sha1(const char *data, size_t len, unsigned char out[SHA1_LEN])
{
	uint32_t	h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
	unsigned char block[64];
	size_t		done = 0;
	uint64_t	bits = (uint64_t) len * 8;

	for (; len - done >= 64; done += 64)
		sha1_block(h, (const unsigned char *) data + done);

	/* the tail, 0x80, zeros, and the length in bits, in one or two blocks */
	memset(block, 0, sizeof(block));
	memcpy(block, data + done, len - done);
	block[len - done] = 0x80;
	if (len - done >= 56)
	{
		sha1_block(h, block);
		memset(block, 0, sizeof(block));
	}
	for (int i = 0; i < 8; i++)
		block[63 - i] = (unsigned char) (bits >> (8 * i));
	sha1_block(h, block);
	for (int i = 0; i < 5; i++)
	{
		out[4 * i] = (unsigned char) (h[i] >> 24);
		out[4 * i + 1] = (unsigned char) (h[i] >> 16);
		out[4 * i + 2] = (unsigned char) (h[i] >> 8);
		out[4 * i + 3] = (unsigned char) h[i];
	}
}

/* Base64 with the URL alphabet, no padding (Go's base64.RawURLEncoding) */
static size_t
base64url(const unsigned char *in, size_t len, char *out)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t		n = 0;

	for (size_t i = 0; i < len; i += 3)
	{
		uint32_t	v = (uint32_t) in[i] << 16;
		size_t		left = len - i;

		if (left > 1)
			v |= (uint32_t) in[i + 1] << 8;
		if (left > 2)
			v |= in[i + 2];
		out[n++] = alphabet[(v >> 18) & 63];
		out[n++] = alphabet[(v >> 12) & 63];
		if (left > 1)
			out[n++] = alphabet[(v >> 6) & 63];
		if (left > 2)
			out[n++] = alphabet[v & 63];
	}
	out[n] = '\0';
	return n;
}

char *
dump_file_name(const char *coll)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t		len = strlen(coll);
	char	   *name = malloc(3 * len + DUMP_NAME_MAX + 1);
	size_t		n = 0;

	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = (unsigned char) coll[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '-' || c == '_' || c == '.' || c == '~')
			name[n++] = (char) c;
		else if (c == ' ')
			name[n++] = '+';
		else
		{
			name[n++] = '%';
			name[n++] = hex[c >> 4];
			name[n++] = hex[c & 15];
		}
	}
	name[n] = '\0';
	if (n > DUMP_NAME_MAX)
	{
		unsigned char digest[SHA1_LEN];

		/* the cut may split a %XX: mongorestore reads the name from the metadata then */
		sha1(coll, len, digest);
		memcpy(name + DUMP_NAME_CUT, "%24", 3);
		base64url(digest, SHA1_LEN, name + DUMP_NAME_CUT + 3);
	}
	return name;
}

const char *
dump_db_name_problem(const char *db)
{
	if (db[0] == '\0')
		return "it is empty";
	if (strlen(db) > 63)
		return "it is longer than 63 bytes";
	if (strpbrk(db, "/\\. \"$") != NULL)
		return "it has one of the characters / \\ . \" $ or a blank";
	return NULL;
}
