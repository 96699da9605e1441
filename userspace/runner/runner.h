/* SPDX-License-Identifier: GPL-2.0 */
/* runner.h - pieces of the userspace runner shared between its files. */
#ifndef PMEMLAB_RUNNER_H
#define PMEMLAB_RUNNER_H

#include "pl_core.h"

/* ops the runner has beyond the module's: ops.def lists them after the module's */
#define PLU_NOPS	(PL_OP_ALL - PL_OP_NR)
#define PLU_OP_COPY	PL_OP_COPY
#define PLU_OP_NTCOPY	PL_OP_NTCOPY
#define PLU_OP_ALL	PL_OP_ALL

#endif
