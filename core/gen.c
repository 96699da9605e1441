// SPDX-License-Identifier: GPL-2.0
/*
 * gen.c - pmemlab address generators and PRNG.
 *
 * A generator yields byte offsets inside one worker's region.  Slot j of
 * pass k starts at (k mod passes) * pass_offset + j * step; a pass has
 * nslots slots, the largest count for which the last access of the last
 * pass still ends inside the span.  seq/stride/hotspot walk the slots in
 * order, rand draws each slot uniformly (a 128-bit MCG, Lemire's unbiased
 * bounded integers).  With a per-DIMM mapping the offsets first live in a
 * "virtual" region made of this worker's interleave chunks only and are
 * then mapped to the region: chunk c of the virtual region is DIMM
 * first_dimm + (c mod dimms) (mod ways) of interleave round c / dimms.
 *
 * This file is the definition and the set-up; the loops walk the same
 * sequences inline, without calls or divisions (walk.h).
 */
#include "walk.h"

static u64 splitmix64(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * Thread idx's store data start: splitmix64 twice, the thread's index added
 * between the rounds.  splitmix64 is a bijection of its input, so two
 * threads of a run never start at the same value, and the starts of any
 * two threads lie a random distance apart (whatever the seed's parity):
 * their sequences (start + k x PL_DATA_INC) share no value over any run's
 * length but by a 2^-64-scale chance.
 */
u64 pl_data_seed(u64 seed, u64 idx)
{
	u64 x = seed;

	x = splitmix64(&x) + idx;
	return splitmix64(&x);
}

void pl_rng_seed(struct pl_rng *r, u64 seed, u64 stream)
{
	u64 x = seed ^ (stream * 0xd1342543de82ef95ULL);

	r->hi = splitmix64(&x);
	r->lo = splitmix64(&x) | 1;	/* odd: the MCG's full period */
}

u64 pl_rng_next(struct pl_rng *r)
{
	return pl_rng_step(r);
}

u64 pl_rng_below(struct pl_rng *r, u64 n)
{
	pl_u128 m = (pl_u128)pl_rng_next(r) * n;
	u64 lo = (u64)m;

	if (lo < n) {
		u64 thresh = -n % n;

		while (lo < thresh) {
			m = (pl_u128)pl_rng_next(r) * n;
			lo = (u64)m;
		}
	}
	return (u64)(m >> 64);
}

/*
 * l = ceil(log2 d), m = floor(2^64 * (2^l - d) / d) + 1, sh1 = min(l, 1),
 * sh2 = max(l - 1, 0) (Granlund and Montgomery, figure 4.1).
 */
void pl_divc_init(struct pl_divc *c, u64 d)
{
	unsigned int l = 0;

	while (l < 63 && ((u64)1 << l) < d)
		l++;
	c->m = (u64)pl_udiv128((pl_u128)(((u64)1 << l) - d) << 64, d) + 1;
	c->sh1 = l ? 1 : 0;
	c->sh2 = l ? l - 1 : 0;
}

/* bytes of the virtual region of a per-DIMM mapping */
static u64 dimm_span(const struct pl_gen_cfg *c)
{
	u64 rounds = c->span / (c->ways * c->gran);

	return rounds * c->dimms * c->gran;
}

static u64 gen_span(const struct pl_gen_cfg *c)
{
	return c->ways ? dimm_span(c) : c->span;
}

static u64 gen_nslots(const struct pl_gen_cfg *c, u64 span)
{
	u64 last = (c->passes - 1) * c->pass_offset + c->access;

	if (last > span)
		return 0;
	return (span - last) / c->step + 1;
}

u64 pl_gen_nslots(const struct pl_gen_cfg *c)
{
	return gen_nslots(c, gen_span(c));
}

u64 pl_gen_map(const struct pl_gen_cfg *c, u64 v)
{
	u64 chunk, within, round, dimm;

	if (!c->ways)
		return v;
	chunk = v / c->gran;
	within = v % c->gran;
	round = chunk / c->dimms;
	dimm = (c->first_dimm + chunk % c->dimms) % c->ways;
	return (round * c->ways + dimm) * c->gran + within;
}

int pl_gen_check(const struct pl_gen_cfg *c, u64 *extent, const char **why)
{
	u64 span, k;

	if (!c->access || !c->step || !c->passes || c->step < c->access) {
		*why = "access, step and passes must be non-zero and step >= access";
		return -1;
	}
	if (c->passes > 1 && c->pass_offset > c->span / (c->passes - 1)) {
		*why = "(passes - 1) * pass_offset exceeds the region";
		return -1;
	}
	if (c->ways) {
		if (!c->gran || !c->dimms || c->dimms > c->ways) {
			*why = "per-dimm needs interleave_gran > 0 and 1 <= dimms_per_thread <= interleave_ways";
			return -1;
		}
		if (c->gran % c->step) {
			*why = "per-dimm: the slot step must divide interleave_gran";
			return -1;
		}
		for (k = 0; k < c->passes; k++)
			if ((k * c->pass_offset) % c->step + c->access > c->step) {
				*why = "per-dimm: a pass offset makes accesses straddle interleave chunks";
				return -1;
			}
		if (!dimm_span(c)) {
			*why = "per-dimm: region smaller than one interleave round (ways x gran)";
			return -1;
		}
	}
	span = gen_span(c);
	if (!gen_nslots(c, span)) {
		*why = "region too small for one access per pass";
		return -1;
	}
	/*
	 * Largest virtual offset + 1: (passes-1)*pass_offset + (nslots-1)*step
	 * + access <= span by construction of nslots.  The per-DIMM map sends
	 * [0, dimm_span) into [0, rounds * ways * gran) <= c->span, and an
	 * access never straddles a chunk (checked above), so it stays inside.
	 */
	*extent = c->ways ? (c->span / (c->ways * c->gran)) * c->ways * c->gran : span;
	return 0;
}

int pl_gen_fam(const struct pl_gen_cfg *c)
{
	if (c->ways)
		return c->pattern == PL_PAT_RAND ? PL_FAM_DIMM_RAND : PL_FAM_DIMM_LINEAR;
	return c->pattern == PL_PAT_RAND ? PL_FAM_RAND : PL_FAM_LINEAR;
}

void pl_gen_init(struct pl_gen *g, const struct pl_gen_cfg *c)
{
	memset(g, 0, sizeof(*g));
	g->c = *c;
	g->fam = pl_gen_fam(c);
	g->nslots = gen_nslots(c, gen_span(c));
	g->thresh = g->nslots ? -g->nslots % g->nslots : 0;
	pl_rng_seed(&g->rng, c->seed, c->stream);
	if (c->ways) {
		g->round_bytes = c->ways * c->gran;
		g->first_off = c->first_dimm * c->gran;
		g->chunk_slots = c->gran / c->step;
		pl_divc_init(&g->spc_div, c->gran / c->step);
		g->spc_shift = -1;
		if (!((c->gran / c->step) & (c->gran / c->step - 1))) {
			g->spc_shift = __builtin_ctzll(c->gran / c->step);
			g->spc_mask = c->gran / c->step - 1;
			g->dimm_fast = c->dimms == 1;
			g->skip = (c->ways - 1) * (c->gran / c->step);
		}
		pl_divc_init(&g->dimm_div, c->dimms);
		pl_divc_init(&g->gran_div, c->gran);
	}
	pl_gen_start_pass(g, g->fam);
}

u64 pl_gen_next(struct pl_gen *g)
{
	return pl_walk(g, g->fam);
}
