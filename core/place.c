// SPDX-License-Identifier: GPL-2.0
/*
 * place.c - one worker's region: where its accesses may go and the
 * generator that walks them.  Shared by the module (run.c) and the
 * userspace runner, so that placement means the same in both.
 *
 * The window is [window_offset, window_offset + working_set) of the target
 * (working_set 0: to the end).  placement per-thread cuts it into n
 * line-aligned slices, one per worker; per-dimm gives every worker the
 * interleave chunks of its dimms_per_thread DIMMs (the generator's
 * mapping); global shares the window.  A split region (copy ops) keeps the
 * lower half as destination and the upper half as source (pl_place_split).
 * pattern hotspot then confines the worker to the first hotspot_size bytes
 * of its region.
 */
#include "pl_core.h"

/*
 * A copy's two halves in a region of span bytes: destination [0, *half),
 * source [*delta, *delta + *half), disjoint and inside the region.  From
 * PL_SPLIT_SKEW_MIN bytes on, delta is an odd multiple of 4 KiB: source
 * and destination a large power of two apart (half of a power-of-two
 * region) made a DRAM copy 0.64x as fast (method.md, "Addresses"); a page
 * between them costs at most 4 KiB of each half.  Smaller regions halve.
 */
#define PL_SPLIT_SKEW		4096ULL
#define PL_SPLIT_SKEW_MIN	(2ULL << 20)

static void pl_place_split(u64 span, u64 *half, u64 *delta)
{
	u64 d;

	if (span < PL_SPLIT_SKEW_MIN) {
		*half = span / 2 / PL_LINE * PL_LINE;
		*delta = *half;
		return;
	}
	d = (span / 2 & ~(PL_SPLIT_SKEW - 1)) | PL_SPLIT_SKEW;
	*delta = d;
	*half = (d < span - d ? d : span - d) / PL_LINE * PL_LINE;
}

u64 pl_place_step(u64 pattern, u64 access, u64 stride)
{
	switch (pattern) {
	case PL_PAT_STRIDE:
		return stride ? stride : (access + PL_LINE - 1) / PL_LINE * PL_LINE;
	case PL_PAT_RAND:
		return stride ? stride : access;
	default:
		return access;
	}
}

/* u64 is unsigned long in userspace, unsigned long long in the kernel */
#define PL_ULL(x)	((unsigned long long)(x))

int pl_place_worker(const struct pl_place *in, struct pl_region *out, char *why, size_t len)
{
	struct pl_gen_cfg *g = &out->g;
	u64 ws, extent, align, end;
	const char *gwhy;

	memset(out, 0, sizeof(*out));
	if (!in->n || in->idx >= in->n || in->window_offset >= in->target_size ||
	    in->working_set > in->target_size - in->window_offset) {
		snprintf(why, len,
			 "window_offset %llu + working_set %llu does not fit the target (%llu bytes)",
			 PL_ULL(in->window_offset), PL_ULL(in->working_set),
			 PL_ULL(in->target_size));
		return -ERANGE;
	}
	ws = in->working_set ? in->working_set : in->target_size - in->window_offset;
	end = in->window_offset + ws;
	out->base = in->window_offset;
	g->pattern = in->pattern;
	g->access = in->access;
	g->step = pl_place_step(in->pattern, in->access, in->stride);
	g->span = ws;
	g->passes = in->passes;
	g->pass_offset = in->pass_offset;
	g->seed = in->seed;
	g->stream = in->idx;
	if (in->per_thread) {
		g->span = ws / in->n / PL_LINE * PL_LINE;
		out->base += in->idx * g->span;
	} else if (in->ways) {
		g->ways = in->ways;
		g->gran = in->gran;
		g->dimms = in->dimms;
		g->first_dimm = in->dimms * in->idx % in->ways;
	}
	if (in->split)
		pl_place_split(g->span, &g->span, &out->copy_delta);
	if (in->pattern == PL_PAT_HOTSPOT) {
		if (in->hotspot_size > g->span) {
			snprintf(why, len, "hotspot_size %llu exceeds the thread's region (%llu bytes)",
				 PL_ULL(in->hotspot_size), PL_ULL(g->span));
			return -EINVAL;
		}
		g->span = in->hotspot_size;
	}
	/* every access stays inside one line (< 64 B) or starts on a line */
	align = in->access < PL_LINE ? in->access : PL_LINE;
	if (!align || g->step % align || g->pass_offset % align) {
		snprintf(why, len, "stride and pass_offset must be multiples of %llu here",
			 PL_ULL(align));
		return -EINVAL;
	}
	if (g->step < g->access) {
		snprintf(why, len, "stride %llu is smaller than access_size %llu",
			 PL_ULL(g->step), PL_ULL(g->access));
		return -EINVAL;
	}
	if (pl_gen_check(g, &extent, &gwhy)) {
		snprintf(why, len, "thread %llu: %s (region %llu bytes)", PL_ULL(in->idx), gwhy,
			 PL_ULL(g->span));
		return -EINVAL;
	}
	/* the whole run (a copy's source too) stays in the window */
	if (out->base + extent + out->copy_delta > end) {
		snprintf(why, len, "thread %llu: internal bound check failed", PL_ULL(in->idx));
		return -ERANGE;
	}
	return 0;
}
