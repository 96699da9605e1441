/* SPDX-License-Identifier: GPL-2.0 */
/* runner.h - pieces of the userspace runner shared between its files. */
#ifndef PMEMLAB_RUNNER_H
#define PMEMLAB_RUNNER_H

#include "pl_core.h"

/* ops the runner has beyond the module's (indexes PL_OP_NR + i) */
#define PLU_NOPS	2
#define PLU_OP_COPY	(PL_OP_NR + 0)
#define PLU_OP_NTCOPY	(PL_OP_NR + 1)
#define PLU_OP_ALL	(PL_OP_NR + PLU_NOPS)

extern const struct pl_op_desc pl_user_ops[PLU_NOPS];
/* source of a copy = destination + pl_copy_delta (per thread) */
extern __thread u64 pl_copy_delta;

#endif
