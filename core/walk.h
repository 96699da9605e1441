/* SPDX-License-Identifier: GPL-2.0 */
/*
 * walk.h - the address families, inline: the next offset of a generator
 * (struct pl_gen, set up by pl_gen_init in gen.c) without a call and
 * without a division.  The generated loops keep the generator in a local
 * copy so that the compiler holds its fields in registers.
 *
 * Every family yields exactly the offsets of the definition in gen.c
 * (slot j of pass k at (k mod passes) * pass_offset + j * step, the
 * per-DIMM map of pl_gen_map()); the host tests compare them.
 */
#ifndef PMEMLAB_WALK_H
#define PMEMLAB_WALK_H

#include "pl_core.h"

/*
 * The MCG's step: state * multiplier mod 2^128, a widening 64x64 multiply
 * of the low half, a 64-bit one of the high half and an add.  Few register
 * writes per draw keep more random loads in flight (method.md, Addresses).
 */
static __always_inline u64 pl_rng_step(struct pl_rng *r)
{
	pl_u128 x = (((pl_u128)r->hi << 64) | r->lo) * PL_MCG_MULT;

	r->lo = (u64)x;
	r->hi = (u64)(x >> 64);
	return r->hi;
}

/*
 * Lemire's bounded integer in [0, n): the high half of x * n, redrawn
 * while the low half is below thresh = 2^64 mod n (= -n % n), which the
 * caller computed once.  The same draws as pl_rng_below().
 */
static __always_inline u64 pl_rng_bounded(struct pl_rng *r, u64 n, u64 thresh)
{
	pl_u128 m = (pl_u128)pl_rng_step(r) * n;

	while (unlikely((u64)m < thresh))
		m = (pl_u128)pl_rng_step(r) * n;
	return (u64)(m >> 64);
}

/*
 * Start pass g->pass: its base, and where each family resumes.  Runs once
 * per pass (the per-DIMM families divide here, never per access); inline
 * so that the loops call nothing.
 */
static __always_inline void pl_gen_start_pass(struct pl_gen *g, const int fam)
{
	u64 chunk, round;

	g->pass_base = g->pass * g->c.pass_offset;
	g->left = g->nslots;
	g->off = g->pass_base;
	if (fam == PL_FAM_DIMM_LINEAR) {
		chunk = g->pass_base / g->c.gran;
		round = chunk / g->c.dimms;
		g->chunk = chunk % g->c.dimms;
		g->within = g->pass_base % g->c.gran;
		g->rbase = round * g->round_bytes;
		g->doff = (g->c.first_dimm + g->chunk) % g->c.ways * g->c.gran;
		g->chunk_left = (g->c.gran - g->within + g->c.step - 1) / g->c.step;
	} else if (fam == PL_FAM_DIMM_RAND) {
		g->pass_q = g->pass_base / g->c.step;
		g->pass_rem = g->pass_base % g->c.step;
		g->pass_add = g->first_off + g->pass_rem;
	}
}

static __always_inline void pl_gen_next_pass(struct pl_gen *g, const int fam)
{
	if (++g->pass == g->c.passes)
		g->pass = 0;
	pl_gen_start_pass(g, fam);
}

/*
 * Each family's step yields the next offset; counting the slots of a pass
 * and changing the pass is done apart from it (pl_walk, or per run of
 * accesses in the per-family loops).
 */

/* seq, stride, hotspot: slot after slot */
static __always_inline u64 pl_walk_linear(struct pl_gen *g)
{
	u64 v = g->off;

	g->off += g->c.step;
	return v;
}

/* rand: a uniform slot of the pass, from the pass's base */
static __always_inline u64 pl_walk_rand_rel(struct pl_gen *g)
{
	return pl_rng_bounded(&g->rng, g->nslots, g->thresh) * g->c.step;
}

/*
 * Per-DIMM, sequential: the region offset rbase + doff + within advances
 * by step inside a chunk; after its last slot the next chunk of the
 * thread's DIMMs follows (the next DIMM, wrapping at ways; after dimms
 * chunks the next interleave round).  A new pass starts over from its base
 * (divisions once per pass, in pl_gen_start_pass()).
 */
static __always_inline void pl_walk_next_chunk(struct pl_gen *g)
{
	g->within -= g->c.gran;	/* what the last step went past the chunk */
	g->chunk_left = g->chunk_slots;
	g->doff += g->c.gran;
	if (g->doff == g->round_bytes)
		g->doff = 0;
	if (++g->chunk == g->c.dimms) {
		g->chunk = 0;
		g->rbase += g->round_bytes;
		g->doff = g->first_off;
	}
}

static __always_inline u64 pl_walk_dimm_linear(struct pl_gen *g)
{
	u64 v = g->rbase + g->doff + g->within;

	g->within += g->c.step;
	if (unlikely(!--g->chunk_left))
		pl_walk_next_chunk(g);
	return v;
}

/*
 * The per-family loops walk per-DIMM sequential accesses as runs inside a
 * chunk (PL_WALK_DIMM_RUNS): the chunk's base rbase + doff is added once
 * per run, and an access steps within as the linear family steps off (one
 * add); the chunk changes between runs.  Same offsets as
 * pl_walk_dimm_linear().
 */
#define PL_WALK_DIMM_RUNS	(PL_NFAM + 1)

/*
 * Per-DIMM, random: slot s of the pass is virtual offset t * step + rem
 * with t = pass_q + s; its chunk is t / (gran / step) (rem < step), the
 * chunk's round and DIMM follow by a second division.  Both divisions are
 * multiplications by precomputed inverses (pl_divc), or a shift where the
 * slots per chunk are a power of two, and nothing where a thread has one
 * DIMM: fewer instructions per access keep more random accesses in flight.
 */
static __always_inline u64 pl_walk_dimm_rand(struct pl_gen *g)
{
	u64 t = g->pass_q + pl_rng_bounded(&g->rng, g->nslots, g->thresh);
	u64 chunk, within, round, dimm;

	if (g->spc_shift >= 0) {
		chunk = t >> g->spc_shift;
		within = (t & g->spc_mask) * g->c.step + g->pass_rem;
	} else {
		chunk = pl_divc_div(&g->spc_div, t);
		within = t * g->c.step - chunk * g->c.gran + g->pass_rem;
	}
	if (g->c.dimms == 1)
		return chunk * g->round_bytes + g->first_off + within;
	round = pl_divc_div(&g->dimm_div, chunk);
	dimm = g->c.first_dimm + (chunk - round * g->c.dimms);
	if (dimm >= g->c.ways)
		dimm -= g->c.ways;
	return round * g->round_bytes + dimm * g->c.gran + within;
}

/*
 * Per-DIMM random with one DIMM a thread and a power of two of slots per
 * chunk (g->dimm_fast): chunk c of slot t is t >> shift, and its region
 * offset (c * ways * spc + t - c * spc) * step + first_off + rem is
 * (t + c * skip) * step + pass_add with skip = (ways - 1) * spc: a shift,
 * two multiplications, two adds.  The per-family loops run it as a walk of
 * its own (PL_WALK_DIMM_RAND1), chosen once per call.
 */
#define PL_WALK_DIMM_RAND1	PL_NFAM

static __always_inline u64 pl_walk_dimm_rand1_rel(struct pl_gen *g)
{
	u64 t = g->pass_q + pl_rng_bounded(&g->rng, g->nslots, g->thresh);

	return (t + (t >> g->spc_shift) * g->skip) * g->c.step;
}

/*
 * The same where a thread's chunks follow each other (skip 0: one
 * interleave way, or the thread holds every way): slot t's offset is
 * t * step + pass_add, i.e. the random family's draw times step plus a
 * part that stays for the pass (pass_q * step + pass_add).  The
 * per-family loops run it as a walk of its own (PL_WALK_DIMM_RAND0), the
 * instructions of the per-thread random loop (bench row 3, issue 37).
 */
#define PL_WALK_DIMM_RAND0	(PL_NFAM + 2)

/*
 * The part of family fam's next offsets that stays the same until the pass
 * changes (the random families' pass base, 0 for the others): the
 * per-family loops add it to their base pointer once per run of accesses,
 * not once per access (a random load's every instruction counts: method.md).
 */
static __always_inline u64 pl_walk_pass_part(const struct pl_gen *g, const int fam)
{
	switch (fam) {
	case PL_FAM_RAND:
		return g->pass_base;
	case PL_WALK_DIMM_RAND1:
		return g->pass_add;
	case PL_WALK_DIMM_RAND0:
		return g->pass_q * g->c.step + g->pass_add;
	case PL_WALK_DIMM_RUNS:
		return g->rbase + g->doff;
	default:
		return 0;
	}
}

/*
 * The next offset of family fam (a constant in the per-family loops) less
 * pl_walk_pass_part(), without counting the slot: the per-family loops
 * count a run of accesses at once against g->left and change the pass
 * between runs.
 */
static __always_inline u64 pl_walk_step_rel(struct pl_gen *g, const int fam)
{
	switch (fam) {
	case PL_FAM_RAND:
	case PL_WALK_DIMM_RAND0:
		return pl_walk_rand_rel(g);
	case PL_FAM_DIMM_LINEAR:
		return pl_walk_dimm_linear(g);
	case PL_FAM_DIMM_RAND:
		return g->dimm_fast ? pl_walk_dimm_rand1_rel(g) + g->pass_add : pl_walk_dimm_rand(g);
	case PL_WALK_DIMM_RAND1:
		return pl_walk_dimm_rand1_rel(g);
	case PL_WALK_DIMM_RUNS: {
		u64 v = g->within;

		g->within += g->c.step;
		return v;
	}
	default:
		return pl_walk_linear(g);
	}
}

/*
 * How many of nb accesses the per-family loops run before the part of the
 * offset that pl_walk_pass_part() gives changes: the rest of the pass, and
 * for PL_WALK_DIMM_RUNS the rest of the chunk.
 */
static __always_inline u64 pl_walk_run_len(const struct pl_gen *g, const int walk, u64 nb)
{
	u64 run = nb < g->left ? nb : g->left;

	if (walk == PL_WALK_DIMM_RUNS && g->chunk_left < run)
		run = g->chunk_left;
	return run;
}

/* after a run of run accesses: count them, change the chunk and the pass */
static __always_inline void pl_walk_run_end(struct pl_gen *g, const int walk, const int fam, u64 run)
{
	if (walk == PL_WALK_DIMM_RUNS) {
		g->chunk_left -= run;
		if (!g->chunk_left)
			pl_walk_next_chunk(g);
	}
	g->left -= run;
	if (!g->left)
		pl_gen_next_pass(g, fam);
}

/* the next offset of family fam, without counting the slot */
static __always_inline u64 pl_walk_step(struct pl_gen *g, const int fam)
{
	return pl_walk_pass_part(g, fam) + pl_walk_step_rel(g, fam);
}

/* the next offset, counting the slot and changing the pass after the last */
static __always_inline u64 pl_walk(struct pl_gen *g, const int fam)
{
	u64 v = pl_walk_step(g, fam);

	if (unlikely(!--g->left))
		pl_gen_next_pass(g, fam);
	return v;
}

/*
 * Any family, decided at run time, in one code path: the loops whose
 * family is a run-time value (latency, and bandwidth with fences, read_pct
 * or a delay) carry this one walker instead of four.  The same offsets as
 * pl_walk(): the per-DIMM map of a virtual offset v is computed by
 * multiplications (chunk = v / gran, round = chunk / dimms).
 */
static __always_inline u64 pl_walk_any(struct pl_gen *g)
{
	u64 v, chunk, round, dimm;

	if (g->fam == PL_FAM_RAND || g->fam == PL_FAM_DIMM_RAND) {
		v = g->pass_base + pl_walk_rand_rel(g);
	} else {
		v = g->off;
		g->off += g->c.step;
	}
	if (g->c.ways) {
		chunk = pl_divc_div(&g->gran_div, v);
		round = pl_divc_div(&g->dimm_div, chunk);
		dimm = g->c.first_dimm + (chunk - round * g->c.dimms);
		if (dimm >= g->c.ways)
			dimm -= g->c.ways;
		v = round * g->round_bytes + dimm * g->c.gran + (v - chunk * g->c.gran);
	}
	if (unlikely(!--g->left))
		pl_gen_next_pass(g, g->fam);
	return v;
}

#endif /* PMEMLAB_WALK_H */
