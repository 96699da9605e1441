// SPDX-License-Identifier: GPL-2.0
/*
 * facts.c - facts of a CPU and a target as the module's files and the
 * runner's `#fact` lines say them: the CPU features, the widths load and
 * store run at, and the file system a target starts with (which protects
 * it from write runs).
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

const char *pl_fs_signature(pl_read_fn read, void *ctx, u64 size)
{
	u8 buf[8];

	if (size >= 4) {
		if (read(ctx, 0, buf, 4))
			return "unreadable";
		if (!memcmp(buf, "XFSB", 4))
			return "xfs";
	}
	if (size >= 0x43a) {
		if (read(ctx, 0x438, buf, 2))
			return "unreadable";
		if (buf[0] == 0x53 && buf[1] == 0xef)
			return "ext4";
	}
	if (size >= 0x10048) {
		if (read(ctx, 0x10040, buf, 8))
			return "unreadable";
		if (!memcmp(buf, "_BHRfS_M", 8))
			return "btrfs";
	}
	return "none";
}
