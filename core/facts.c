// SPDX-License-Identifier: GPL-2.0
/*
 * facts.c - facts of a CPU and a target as the module's files and the
 * runner's `#fact` lines say them: the CPU features and the widths load and
 * store run at (a target's signature is sig.c's).
 */
#include "pl_params.h"

void pl_out_features(struct pl_buf *b, u32 features)
{
	const char *sep = "";
	int i;

	for (i = 0; i < PL_F_NR; i++)
		if (features & (1u << i)) {
			pl_out(b, "%s%s", sep, pl_feature_names[i]);
			sep = " ";
		}
}

void pl_out_widths(struct pl_buf *b, u32 features)
{
	static const unsigned int w[PL_NWIDTH] = { 8, 16, 32, 64 };
	const char *sep = "";
	int i;

	for (i = 0; i < PL_NWIDTH; i++)
		if (!pl_op_missing(PL_OP_LOAD, w[i], features) &&
		    !pl_op_missing(PL_OP_STORE, w[i], features)) {
			pl_out(b, "%s%u", sep, w[i]);
			sep = " ";
		}
}
