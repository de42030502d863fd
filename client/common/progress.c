/*
 * progress.c
 *		The progress line on a terminal (see progress.h).
 */
#include "progress.h"

#include <stdio.h>
#include <time.h>

#define UPDATE_INTERVAL		0.25	/* seconds */
#define ETA_MAX				(100 * 3600 - 1)	/* shown as ">99:59:59" */

double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *
format_bytes(double bytes, char *buf, int size)
{
	/* decimal units, as the MB/s figures of the benchmarks */
	if (bytes >= 1e9)
		snprintf(buf, size, "%.2f GB", bytes / 1e9);
	else if (bytes >= 1e6)
		snprintf(buf, size, "%.1f MB", bytes / 1e6);
	else if (bytes >= 1e3)
		snprintf(buf, size, "%.1f kB", bytes / 1e3);
	else
		snprintf(buf, size, "%.0f bytes", bytes);
	return buf;
}

void
progress_init(Progress *p, int enabled, double estimate)
{
	p->enabled = enabled;
	p->start = now_seconds();
	p->last = 0;
	p->estimate = estimate;
	p->shown = 0;
}

void
progress_update(Progress *p, uint64_t rows, uint64_t bytes)
{
	double		now;
	double		elapsed;
	char		b[32];
	char		r[32];
	char		line[160];
	int			n;

	if (!p->enabled)
		return;
	now = now_seconds();
	if (now - p->last < UPDATE_INTERVAL)
		return;
	p->last = now;
	elapsed = now - p->start;
	n = snprintf(line, sizeof(line), "%llu rows, %s", (unsigned long long) rows,
				 format_bytes((double) bytes, b, sizeof(b)));
	if (elapsed > 0.5)
		n += snprintf(line + n, sizeof(line) - n, ", %s/s",
					  format_bytes(bytes / elapsed, r, sizeof(r)));
	if (p->estimate > 0 && rows > 0 && rows < p->estimate && n < (int) sizeof(line))
	{
		double		frac = rows / p->estimate;
		double		eta = elapsed * (1 - frac) / frac;
		int			secs;

		/*
		 * A few rows after a long wait (a slow query's first rows) give an
		 * absurd ETA: clamp it before the conversion, which is undefined
		 * for a double beyond int's range.
		 */
		if (!(eta >= 0))
			eta = 0;
		if (eta > ETA_MAX)
			eta = ETA_MAX;
		secs = (int) eta;
		n += snprintf(line + n, sizeof(line) - n, ", %.0f%%", frac * 100);
		if (elapsed > 1 && n < (int) sizeof(line))
		{
			if (secs >= 3600)
				snprintf(line + n, sizeof(line) - n, ", ETA %s%d:%02d:%02d",
						 secs == ETA_MAX ? ">" : "", secs / 3600, secs / 60 % 60, secs % 60);
			else
				snprintf(line + n, sizeof(line) - n, ", ETA %d:%02d", secs / 60, secs % 60);
		}
	}
	progress_show(p, line);
}

void
progress_show(Progress *p, const char *line)
{
	/* \033[K erases what a longer previous line left */
	fprintf(stderr, "\r%s\033[K", line);
	fflush(stderr);
	p->shown = 1;
}

int
progress_due(Progress *p)
{
	double		now;

	if (!p->enabled)
		return 0;
	now = now_seconds();
	if (now - p->last < UPDATE_INTERVAL)
		return 0;
	p->last = now;
	return 1;
}

void
progress_clear(Progress *p)
{
	if (p->shown)
	{
		fputs("\r\033[K", stderr);
		fflush(stderr);
		p->shown = 0;
	}
}
