/*
 * read_libbson.c
 *		An independent reader of .bson files for the exporter's tests: reads
 *		the documents back to back with libbson's bson_reader (Debian's
 *		libbson-dev), validates each one (bson_validate: structure and UTF-8),
 *		and prints per document its CRC-32 and length, so that the
 *		test can compare the bytes with the source rows, then "count N".
 *		With --json it prints each document's canonical Extended JSON
 *		instead of the hash.
 *
 *	read_libbson [--json] FILE|-
 *
 * Exit status 1, with a message, if a document is invalid or the file does
 * not end exactly after the last document.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <bson/bson.h>

/* CRC-32 (zlib's, so that Python's zlib.crc32 gives the same) */
static uint32_t
crc32(const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	uint32_t	c = 0xFFFFFFFFu;

	if (table[1] == 0)
		for (uint32_t i = 0; i < 256; i++)
		{
			uint32_t	v = i;

			for (int k = 0; k < 8; k++)
				v = (v & 1) ? 0xEDB88320u ^ (v >> 1) : v >> 1;
			table[i] = v;
		}
	while (n--)
		c = table[(c ^ *p++) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

int
main(int argc, char **argv)
{
	int			json = 0;
	const char *path;
	bson_reader_t *reader;
	bson_error_t error;
	const bson_t *doc;
	bool		eof = false;
	unsigned long count = 0;
	unsigned long long total = 0;
	struct stat st;

	if (argc == 3 && strcmp(argv[1], "--json") == 0)
		json = 1;
	else if (argc != 2)
	{
		fprintf(stderr, "usage: read_libbson [--json] FILE|-\n");
		return 2;
	}
	path = argv[argc - 1];
	if (strcmp(path, "-") == 0)
		reader = bson_reader_new_from_fd(0, false);
	else
		reader = bson_reader_new_from_file(path, &error);
	if (reader == NULL)
	{
		fprintf(stderr, "read_libbson: cannot open %s: %s\n", path, error.message);
		return 1;
	}
	while ((doc = bson_reader_read(reader, &eof)) != NULL)
	{
		size_t		offset;

		count++;
		total += doc->len;
		if (!bson_validate(doc, BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL, &offset))
		{
			fprintf(stderr, "read_libbson: document %lu is invalid at offset %zu\n", count, offset);
			bson_reader_destroy(reader);
			return 1;
		}
		if (json)
		{
			char	   *s = bson_as_canonical_extended_json(doc, NULL);

			printf("%s\n", s ? s : "(cannot print)");
			bson_free(s);
		}
		else
			printf("%08x %u\n", (unsigned) crc32(bson_get_data(doc), doc->len), doc->len);
	}
	if (!eof)
	{
		/* bson_reader_read returned NULL before the end: a corrupt stream */
		fprintf(stderr, "read_libbson: corrupt data after document %lu (offset %lld)\n",
				count, (long long) bson_reader_tell(reader));
		bson_reader_destroy(reader);
		return 1;
	}
	/*
	 * libbson's reader reports a truncated last document as a clean end of
	 * file: the lengths must add up to the file's size
	 */
	if (((strcmp(path, "-") == 0) ? fstat(0, &st) : stat(path, &st)) == 0 &&
		S_ISREG(st.st_mode) && (unsigned long long) st.st_size != total)
	{
		fprintf(stderr, "read_libbson: the file has %lld bytes, its %lu documents %llu: "
				"truncated or trailing data\n", (long long) st.st_size, count, total);
		bson_reader_destroy(reader);
		return 1;
	}
	bson_reader_destroy(reader);
	printf("count %lu\n", count);
	return 0;
}
