// SPDX-License-Identifier: GPL-2.0
/*
 * error.c - the reason of a refusal or a failed run: kept in last_error
 * (under the target's lock, which every path that refuses holds) and logged.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/lockdep.h>
#include "pmemlab.h"

int pl_fail(struct pl_dev *d, int err, const char *fmt, ...)
{
	va_list ap;

	lockdep_assert_held(&d->lock);
	va_start(ap, fmt);
	vscnprintf(d->last_error, sizeof(d->last_error), fmt, ap);
	va_end(ap);
	if (d->name[0])
		pr_warn_ratelimited("targets/%s: %s\n", d->name, d->last_error);
	else
		pr_warn_ratelimited("%s\n", d->last_error);
	return err;
}

int pl_fail_verdict(struct pl_dev *d, const struct pl_verdict *v)
{
	return pl_fail(d, v->err, "%s", v->why);
}

/* "target cxl" or "the top-level target", for reasons that name another run */
const char *pl_dev_label(const struct pl_dev *d, char *buf, size_t len)
{
	if (!d->name[0])
		return "the top-level target";
	snprintf(buf, len, "target %s", d->name);
	return buf;
}
