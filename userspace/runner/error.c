// SPDX-License-Identifier: GPL-2.0
/*
 * error.c - how pmemlab-run refuses, as the module's error.c does: the
 * errno's name and the reason (pmemlab-run: ERRNO: reason) on stderr, and
 * a verdict of --check on stdout.  Every other file of the runner may call
 * it; it calls only the core's pl_printable.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "runner.h"

/* ---- errors: the module's errno and last_error, on stderr ---- */
const char *errno_name(int err)
{
	return err == EINVAL ? "EINVAL" : err == ERANGE ? "ERANGE" :
	       err == EOPNOTSUPP ? "EOPNOTSUPP" : err == EPERM ? "EPERM" :
	       err == ENOMEM ? "ENOMEM" : err == ENOENT ? "ENOENT" :
	       err == EBUSY ? "EBUSY" : err == EACCES ? "EACCES" : err == ENXIO ? "ENXIO" : "EIO";
}

void refuse(int err, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pl_printable(why);	/* a value quoted from the command line stays on the line */
	fprintf(stderr, "pmemlab-run: %s: %s\n", errno_name(err), why);
	exit(2);
}

/* `ok WIDTH` or `ERRNO PARAM MACHINE REASON` */
void print_verdict(const struct pl_verdict *v, unsigned int width)
{
	if (!v->err)
		printf("ok %u\n", width);
	else
		printf("%s %s %d %s\n", errno_name(-v->err),
		       v->param >= 0 ? pl_params[v->param].name : "-", v->machine, v->why);
}
