/*
 * unit_check.h
 *		The pass/fail counters and check() of the client's unit tests
 *		(test_applier, test_target_mongoc): a failed check prints "FAIL"
 *		and its message; each program ends with "unit: N passed, M failed".
 */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int	passed;
static int	failed;

__attribute__((format(printf, 2, 3)))
static void
check(int ok, const char *fmt,...)
{
	va_list		ap;

	if (ok)
	{
		passed++;
		return;
	}
	failed++;
	printf("FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#endif							/* UNIT_CHECK_H */
