/*
 * status_file.c
 *		DIR/status.json: see status_file.h.
 */
#include "status_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* s as a JSON string: quotes, backslashes and control characters escaped */
static void
put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
put_lsn(FILE *f, const char *name, uint64_t lsn)
{
	fprintf(f, "\"%s\": \"%X/%08X\"", name, (unsigned) (lsn >> 32), (unsigned) lsn);
}

/* A time in ISO 8601, UTC, to the millisecond */
static void
put_time(FILE *f, const char *name, int64_t ms)
{
	time_t		secs = (time_t) (ms / 1000);
	struct tm	tm;
	char		buf[40];

	gmtime_r(&secs, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "\"%s\": \"%s.%03dZ\"", name, buf, (int) (ms % 1000));
}

int
status_file_write(const char *dir, const StreamStatus *s)
{
	char		path[4096];
	char		tmp[4200];
	FILE	   *f;
	struct timeval tv;
	int			fd;

	snprintf(path, sizeof(path), "%s/status.json", dir);
	snprintf(tmp, sizeof(tmp), "%s/.status.json.tmp", dir);
	/* row positions and the program's state: private, like the segments */
	(void) unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || (f = fdopen(fd, "w")) == NULL)
	{
		if (fd >= 0)
			close(fd);
		return -1;
	}
	gettimeofday(&tv, NULL);
	fputs("{", f);
	put_time(f, "time", (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000);
	fputs(", \"slot\": ", f);
	put_string(f, s->slot);
	fputs(", \"state\": ", f);
	put_string(f, s->phase);
	if (strcmp(s->phase, "copying") == 0)
		fprintf(f, ", \"copy\": {\"documents\": %llu, \"bytes\": %llu}",
				(unsigned long long) s->copied_docs, (unsigned long long) s->copied_bytes);
	fprintf(f, ", \"pid\": %d, \"received\": {\"events\": %llu, \"bytes\": %llu, \"segments\": %llu}, ",
			(int) getpid(), (unsigned long long) s->events, (unsigned long long) s->bytes,
			(unsigned long long) s->segments);
	put_lsn(f, "serverLsn", s->server_lsn);
	fputs(", ", f);
	put_lsn(f, "confirmedLsn", s->confirmed_lsn);
	fprintf(f, ", \"lagBytes\": %llu, \"lagSeconds\": %.1f",
			(unsigned long long) (s->server_lsn > s->confirmed_lsn ?
								  s->server_lsn - s->confirmed_lsn : 0),
			s->lag_seconds);
	if (s->to)
	{
		fputs(", \"mongodb\": {\"state\": ", f);
		put_string(f, s->state);
		fprintf(f, ", \"applied\": %llu, \"appliedPerSecond\": %.1f, \"refused\": %llu, \"token\": ",
				(unsigned long long) s->applied, s->applied_per_second,
				(unsigned long long) s->refused);
		put_string(f, s->token);
		fputs(", ", f);
		if (s->wall_ms > 0)
			put_time(f, "wallTime", s->wall_ms);
		else
			fputs("\"wallTime\": null", f);
		fprintf(f, ", \"bufferBytes\": %llu, \"lagSeconds\": %.1f, \"caughtUp\": %s}",
				(unsigned long long) s->buffer_bytes, s->apply_lag_seconds,
				s->caught_up ? "true" : "false");
	}
	fputs("}\n", f);
	if (fclose(f) != 0)
	{
		unlink(tmp);
		return -1;
	}
	return rename(tmp, path);
}
