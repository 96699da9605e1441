// SPDX-License-Identifier: GPL-2.0
/*
 * userops.c - the ops only the user backend has (ops.def rows flagged
 * PL_OPF_USER), as the validator and the
 * worker set-up see them: copy and ntcopy (generated from ops.def with the
 * module's).
 */
#include "runner.h"

void plu_user_ops(struct pl_facts *f)
{
	int op;

	for (op = PL_OP_NR; op < PL_OP_ALL; op++)
		f->xops[op - PL_OP_NR] = &pl_ops[op];
}
