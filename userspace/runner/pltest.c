// SPDX-License-Identifier: GPL-2.0
/*
 * pltest.c - entry points of libplcore.so, the shared kernels as a library
 * for the host tests (ctypes): one access kernel, the generator, a worker's
 * region, the histogram, the fence rate.
 */
#include "pl_core.h"
#include "runner.h"

/* op: index into the module's op table, or PL_OP_NR + i for the runner's copy ops */
int pl_test_kernel(int op, unsigned int width, char *p, u64 n, u64 v, int flush, u64 copy_delta)
{
	const struct pl_op_desc *d = op < PL_OP_NR ? &pl_ops[op] :
				     op < PLU_OP_ALL ? &pl_user_ops[op - PL_OP_NR] : NULL;
	pl_kernel_fn fn;

	if (!d)
		return -1;
	fn = d->fn[pl_width_idx(width)];
	if (!fn)
		return -1;
	pl_copy_delta = copy_delta;
	fn(p, n, v, flush);
	return 0;
}

int pl_test_nops(void)
{
	return PL_OP_NR;
}

const char *pl_test_op_name(int op)
{
	return op < PL_OP_NR ? pl_ops[op].name :
	       op < PLU_OP_ALL ? pl_user_ops[op - PL_OP_NR].name : NULL;
}

/* the first n offsets of a generator; returns 0, or -1 with *why */
int pl_test_gen(int pattern, u64 access, u64 step, u64 span, u64 passes, u64 pass_offset,
		u64 seed, u64 stream, u64 *out, u64 n, u64 *extent, u64 *nslots, const char **why)
{
	struct pl_gen_cfg c = { .pattern = pattern, .access = access, .step = step, .span = span,
				.passes = passes, .pass_offset = pass_offset, .seed = seed,
				.stream = stream };
	struct pl_gen g;
	u64 i;

	if (pl_gen_check(&c, extent, why))
		return -1;
	pl_gen_init(&g, &c);
	*nslots = g.nslots;
	for (i = 0; i < n; i++)
		out[i] = pl_gen_next(&g);
	return 0;
}

/*
 * Worker in->idx's region (place.c, as the module and the runner set it up)
 * and the first n target offsets its generator gives; 0, or -errno and why.
 */
int pl_test_place(const struct pl_place *in, u64 *base, u64 *copy_delta, u64 *span, u64 *out,
		  u64 n, char *why, size_t len)
{
	struct pl_region reg;
	struct pl_gen g;
	int err = pl_place_worker(in, &reg, why, len);
	u64 i;

	if (err)
		return err;
	pl_gen_init(&g, &reg.g);
	*base = reg.base;
	*copy_delta = reg.copy_delta;
	*span = reg.g.span;
	for (i = 0; i < n; i++)
		out[i] = reg.base + pl_gen_next(&g);
	return 0;
}

/* percentiles (q in ppm) of n samples through the histogram, plus min, max */
void pl_test_hist(const u64 *v, u64 n, const u32 *q, unsigned int nq, u64 *out, u64 *buckets)
{
	struct pl_hist h = { .b = buckets };
	unsigned int i;
	u64 k;

	pl_hist_reset(&h);
	for (k = 0; k < n; k++)
		pl_hist_add(&h, v[k]);
	for (i = 0; i < nq; i++)
		out[i] = pl_hist_pct(&h, q[i]);
	out[nq] = h.min;
	out[nq + 1] = h.max;
}

/* fences the bandwidth loop issues over n accesses of access bytes, one per fi bytes */
u64 pl_test_fences(u64 access, u64 fi, u64 n)
{
	u64 acc = 0, fences = 0, k;

	for (k = 0; k < n; k++)
		fences += pl_fence_due(&acc, access, fi);
	return fences;
}
