// SPDX-License-Identifier: GPL-2.0
/*
 * error.c - the reason of a refusal or a failed run: kept in last_error
 * (under pl.lock, which every path that refuses holds) and logged.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/lockdep.h>
#include "pmemlab.h"

int pl_fail(int err, const char *fmt, ...)
{
	va_list ap;

	lockdep_assert_held(&pl.lock);
	va_start(ap, fmt);
	vscnprintf(pl.last_error, sizeof(pl.last_error), fmt, ap);
	va_end(ap);
	pr_warn_ratelimited("%s\n", pl.last_error);
	return err;
}

int pl_fail_verdict(const struct pl_verdict *v)
{
	return pl_fail(v->err, "%s", v->why);
}
