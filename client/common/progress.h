/*
 * progress.h
 *		The progress line on a terminal.
 *
 * Shown only when standard error is a terminal (and not --quiet): a log file
 * or a pipe should not fill with carriage returns.  At most 4 updates per
 * second, each rewriting one line: rows, bytes, rate, and, when the table's
 * row estimate (pg_class.reltuples) is known, a percentage and an ETA.  The
 * estimate is the planner's, so it can be off: past 100% the percentage
 * and ETA are dropped rather than shown wrong.
 */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdint.h>

typedef struct Progress
{
	int			enabled;
	double		start;			/* seconds, monotonic */
	double		last;			/* last update shown */
	double		estimate;		/* rows expected; <= 0 if unknown */
	int			shown;			/* a progress line is on the screen */
} Progress;

extern double now_seconds(void);
extern void progress_init(Progress *p, int enabled, double estimate);
extern void progress_update(Progress *p, uint64_t rows, uint64_t bytes);

/* For other programs' own lines: is an update due (enabled, rate-limited),
 * and show one. */
extern int	progress_due(Progress *p);
extern void progress_show(Progress *p, const char *line);

/* Erase the progress line, e.g. before an error message or the summary. */
extern void progress_clear(Progress *p);

/* "12.3 MB" style, into buf; returns buf. */
extern const char *format_bytes(double bytes, char *buf, int size);

#endif							/* PROGRESS_H */
