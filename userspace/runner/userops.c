// SPDX-License-Identifier: GPL-2.0
/*
 * userops.c - the ops only the user backend has, as the validator and the
 * worker set-up see them: copy and ntcopy (generated from ops.def with the
 * module's) and chase (chase.c runs its loop; a chase is a chain of
 * dependent 8-byte loads).
 */
#include "runner.h"

_Static_assert(PLU_OP_COPY == PL_OP_COPY && PLU_OP_NTCOPY == PL_OP_NTCOPY &&
	       PLU_OP_ALL == PL_OP_CHASE, "the runner's ops follow the core's numbering");

const struct pl_op_desc pl_chase_desc = {
	.name = "chase",
	.insn = { "mov", NULL, NULL, NULL },
	.needs = { 0, PL_F_NONE, PL_F_NONE, PL_F_NONE },
};

void plu_user_ops(struct pl_facts *f)
{
	f->xops[PL_OP_COPY - PL_OP_NR] = &pl_ops[PL_OP_COPY];
	f->xops[PL_OP_NTCOPY - PL_OP_NR] = &pl_ops[PL_OP_NTCOPY];
	f->xops[PL_OP_CHASE - PL_OP_NR] = &pl_chase_desc;
}
