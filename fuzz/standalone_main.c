/*
 * standalone_main.c
 *		Replays files through a libFuzzer harness without libFuzzer.
 *
 *	  standalone_main FILE-OR-DIRECTORY...
 *
 * Feeds every file named, and every regular file directly inside every
 * directory named (in name order, skipping names that start with '.' or
 * "README"), to LLVMFuzzerTestOneInput once, each from an exact-size heap
 * copy so that a sanitizer sees reads past its end.  Build it with the
 * harness and any C compiler, e.g. gcc -fsanitize=address,undefined.
 * A failed check in the harness aborts; otherwise the exit status is 0
 * after printing "replayed N inputs", or 2 if a file cannot be read.
 */
#define _DEFAULT_SOURCE			/* DT_REG and friends under -std=c99 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int	replayed;

static int
run_file(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *data = NULL;
	size_t		len = 0;
	size_t		cap = 0;
	uint8_t    *exact;

	if (f == NULL)
	{
		perror(path);
		return 2;
	}
	for (;;)
	{
		size_t		n;

		if (len == cap)
		{
			cap = cap ? 2 * cap : 4096;
			data = realloc(data, cap);
			if (data == NULL)
			{
				fprintf(stderr, "out of memory reading %s\n", path);
				exit(2);
			}
		}
		n = fread(data + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	if (ferror(f))
	{
		perror(path);
		fclose(f);
		free(data);
		return 2;
	}
	fclose(f);

	/* an exact-size copy: the harness must not read past len */
	exact = malloc(len > 0 ? len : 1);
	if (exact == NULL)
	{
		fprintf(stderr, "out of memory reading %s\n", path);
		exit(2);
	}
	if (len > 0)
		memcpy(exact, data, len);
	free(data);

	fprintf(stderr, "%s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	replayed++;
	return 0;
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static int
run_directory(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *e;
	char	  **names = NULL;
	size_t		n = 0;
	size_t		cap = 0;
	int			rc = 0;

	if (d == NULL)
	{
		perror(dir);
		return 2;
	}
	while ((e = readdir(d)) != NULL)
	{
		if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0)
			continue;
		if (n == cap)
		{
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			if (names == NULL)
			{
				fprintf(stderr, "out of memory listing %s\n", dir);
				exit(2);
			}
		}
		names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
		if (names[n] == NULL)
		{
			fprintf(stderr, "out of memory listing %s\n", dir);
			exit(2);
		}
		sprintf(names[n], "%s/%s", dir, e->d_name);
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), compare_names);
	for (size_t i = 0; i < n; i++)
	{
		struct stat st;

		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
		{
			if (run_file(names[i]) != 0)
				rc = 2;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int
main(int argc, char **argv)
{
	int			rc = 0;

	if (argc < 2)
	{
		fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++)
	{
		struct stat st;

		if (stat(argv[i], &st) != 0)
		{
			perror(argv[i]);
			rc = 2;
		}
		else if (S_ISDIR(st.st_mode))
		{
			if (run_directory(argv[i]) != 0)
				rc = 2;
		}
		else if (run_file(argv[i]) != 0)
			rc = 2;
	}
	printf("replayed %d inputs\n", replayed);
	return rc;
}
