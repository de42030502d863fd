/*
 * test_progress.c
 *		The progress line's ETA (client/progress.c): an absurd estimate
 *		(a few rows after a long wait) is clamped before its conversion to
 *		int, which is undefined beyond int's range; built by run.sh with
 *		-fsanitize=float-cast-overflow, which stops on such a conversion.
 *
 * Prints the progress lines on standard error; run.sh checks them.
 */
#include <stdio.h>

#include "progress.h"

int
main(void)
{
	Progress	p;

	/* 1 row of 1e15 after 10 s: an ETA of about 3e8 years */
	progress_init(&p, 1, 1e15);
	p.start = now_seconds() - 10;
	progress_update(&p, 1, 100);
	fputc('\n', stderr);

	/* half of 1000 rows after 10 s: 10 s to go */
	progress_init(&p, 1, 1000);
	p.start = now_seconds() - 10;
	progress_update(&p, 500, 100);
	fputc('\n', stderr);

	/* 1% after an hour: 99 hours to go */
	progress_init(&p, 1, 100);
	p.start = now_seconds() - 3600;
	progress_update(&p, 1, 100);
	fputc('\n', stderr);
	return 0;
}
