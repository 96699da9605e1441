// SPDX-License-Identifier: GPL-2.0
/*
 * chase.c - the chain of op chase, for the module and the runner alike: one
 * random cycle over the lines of a worker's region, each line's first 8
 * bytes the address of the next (pl_chase_loop in engine.c follows it).
 *
 * The lines: one per slot of the worker's generator in its first pass, where
 * place.c lays the slot (per-thread, global, per-DIMM: on the thread's
 * DIMMs); at the slot's start, or with chase_page at one of the slot's
 * lines drawn from the seed, anywhere in the slot (access_size 4096 or 2M:
 * one line per 4 KiB or 2 MiB page, at varying cache sets).  The cycle: Sattolo's algorithm, inside out (slot i
 * joins the cycle after a slot j < i drawn uniformly), kept in the lines'
 * own words, so that nothing but the caller's save buffer is needed: a
 * uniformly drawn cyclic permutation of the n lines.  The words each line
 * held are saved first and written back by pl_chase_restore: a chase leaves
 * the target as it found it.
 */
#include "pl_core.h"

u64 pl_chase_lines(const struct pl_eng *e)
{
	return e->gen.nslots;
}

/* splitmix64's finaliser: the line of a slot, with chase_page */
static u64 pl_chase_mix(u64 x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

char *pl_chase_line(const struct pl_eng *e, u64 k)
{
	const struct pl_gen_cfg *c = &e->gen.c;
	u64 off = pl_gen_map(c, k * c->step), lines = c->access / PL_LINE;

	if (e->chase_page && lines > 1)
		off += pl_chase_mix(e->chase_seed ^ (e->chase_stream << 40) ^ k) % lines * PL_LINE;
	return e->base + off;
}

static u64 *pl_chase_word(const struct pl_eng *e, u64 k)
{
	return (u64 *)pl_chase_line(e, k);
}

/*
 * Positions 0..n-1: save line i's word, then slot i joins the cycle after
 * slot j < i (the words hold slot numbers); n..2n-1: slot numbers become
 * addresses.  The chase starts at slot 0.
 */
bool pl_chase_build(struct pl_eng *e, u64 *save, u64 *pos, u64 budget)
{
	u64 n = pl_chase_lines(e), end, i, j, *w;

	if (!*pos)
		pl_rng_seed(&e->chase_rng, e->chase_seed, e->chase_stream);
	end = budget > ~0ULL - *pos ? ~0ULL : *pos + budget;
	for (; *pos < 2 * n && *pos < end; (*pos)++) {
		i = *pos;
		if (i < n) {
			w = pl_chase_word(e, i);
			save[i] = *w;
			if (!i) {
				*w = 0;
				continue;
			}
			j = pl_rng_below(&e->chase_rng, i);
			*w = *pl_chase_word(e, j);
			*pl_chase_word(e, j) = i;
		} else {
			w = pl_chase_word(e, i - n);
			*w = (u64)(unsigned long)pl_chase_line(e, *w);
		}
	}
	e->chase_p = pl_chase_line(e, 0);
	return *pos >= 2 * n;
}

/* laid: where pl_chase_build stopped (a build cut short saved only the lines below it) */
bool pl_chase_restore(struct pl_eng *e, const u64 *save, u64 laid, u64 *pos, u64 budget)
{
	u64 n = pl_chase_lines(e) < laid ? pl_chase_lines(e) : laid, end;

	end = budget > ~0ULL - *pos ? ~0ULL : *pos + budget;
	for (; *pos < n && *pos < end; (*pos)++)
		*pl_chase_word(e, *pos) = save[*pos];
	return *pos >= n;
}
