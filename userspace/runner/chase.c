// SPDX-License-Identifier: GPL-2.0
/*
 * chase.c - the runner's pointer-chase op (mode latency only): one random
 * cycle over the slots of a thread's region, each slot's first 8 bytes
 * pointing to the next; a sample is the mean of CHASE_UNROLL dependent
 * loads.  Same conventions as core/engine.c.
 */
#include <stdlib.h>
#include "runner.h"

#define CHASE_UNROLL		256

int plu_chase_build(struct pl_eng *e, u64 seed, unsigned int idx)
{
	struct pl_gen *g = &e->gen;
	u64 n = g->nslots, i, j, *perm;
	struct pl_rng r;

	/* Sattolo's shuffle: a single cycle, slot perm[i] -> perm[i + 1] */
	perm = malloc(n * sizeof(u64));
	if (!perm)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		perm[i] = i;
	pl_rng_seed(&r, seed, idx);
	for (i = n - 1; i > 0; i--) {
		u64 t;

		j = pl_rng_below(&r, i);
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	/* slot s of the first pass, where the thread's generator puts it (per-dimm: its DIMMs) */
	for (i = 0; i < n; i++) {
		char *from = e->base + pl_gen_map(&g->c, perm[i] * g->c.step);
		char *to = e->base + pl_gen_map(&g->c, perm[(i + 1) % n] * g->c.step);

		*(char **)from = to;
	}
	free(perm);
	return 0;
}

char *plu_chase_loop(struct pl_eng *e, char *p, u64 until)
{
	u64 t0, t1, d, i;

	while (e->left && !__atomic_load_n(e->stop, __ATOMIC_RELAXED) && pl_rdtsc() < until) {
		t0 = pl_rdtsc_serial(e->rdtscp);
		for (i = 0; i < CHASE_UNROLL; i += 16) {
			asm volatile(
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\t"
				"mov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0\n\tmov (%0), %0"
				: "+r"(p) :: "memory");
		}
		t1 = pl_rdtsc_serial(e->rdtscp);
		d = t1 - t0;
		d = d > e->overhead ? d - e->overhead : 0;
		d = (d + CHASE_UNROLL / 2) / CHASE_UNROLL;
		pl_hist_add(&e->hist, d, 0);
		if (e->nsamples < e->nsamples_max)
			e->samples[e->nsamples++] = d;
		e->st.ops += CHASE_UNROLL;
		e->st.reads += CHASE_UNROLL;
		e->st.bytes += CHASE_UNROLL * e->access;
		e->left = e->left > CHASE_UNROLL ? e->left - CHASE_UNROLL : 0;
	}
	return p;
}
