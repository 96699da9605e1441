// SPDX-License-Identifier: GPL-2.0
/*
 * chains.c - the chains of op chase in the runner: where a worker's chain
 * and the words it overwrote are kept, and, in the served runner, a chain
 * kept from one run to the next (docs/userspace.md, "A chase's chain").
 *
 * Laying a chain (core/chase.c: Sattolo's cycle over every line of the
 * worker's region, its words saved first) costs seconds for a region of
 * millions of lines, and writing the words back as much again; the run
 * itself may be 200 ms.  A served runner (--serve) that runs the same
 * chase again (a sweep's repeats, `pmemlab curves`' probe beside load
 * threads of varying mix and throttle) keeps the chain in the target after
 * its run, with the words it overwrote, and the next run whose worker
 * would lay the identical chain takes it as it is (its result says
 * chain=kept).  Identical: everything pl_chase_build's result depends on,
 * the worker's lines (base, its generator's configuration and slot count,
 * chase_page) and the permutation (seed, stream).  A kept chain is
 * restored, its words written back, before any run that has a worker whose
 * bytes (its region's extent, a copy's source too, on the same mapping)
 * meet its lines other than the worker that takes it: whatever that worker
 * does, a load, a store, another chain.  So a write anywhere near it, a
 * chase of another region, size or seed re-lays; load threads in regions
 * of their own (per-thread placement) leave it.  Every kept chain is
 * restored when the runner ends: EOF on stdin (a sweep's end, a restart
 * for another mapping) or a refusal's exit.  A runner killed (SIGKILL)
 * leaves its chains in the target: nothing to restore in DRAM, but a file
 * or device keeps the chain's pointers in the first 8 bytes of each of its
 * lines.  The one-shot runner restores every chain when its worker ends,
 * as before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

/*
 * A chain's key is pl_gen_cfg's fields one by one (no padding compared):
 * a field added there must be added to same_chain().
 */
_Static_assert(sizeof(struct pl_gen_cfg) == 12 * sizeof(u64),
	       "struct pl_gen_cfg changed: add its new field to same_chain() in chains.c");

struct plu_chain {
	bool used;			/* the slot holds a chain (or one being laid) */
	bool busy;			/* a worker of the run in progress has it */
	/* the key: what pl_chase_build's result depends on */
	char *base;
	struct pl_gen_cfg g;
	u64 nslots;
	bool page;
	u64 seed, stream;
	u64 *save;			/* the words its lines held, one per line */
	u64 laid;			/* where pl_chase_build stopped: 2 x lines when whole */
	uintptr_t lo, hi;		/* the bytes its lines lie in */
};

/* a run's chains and as many kept: a run takes or replaces at most one per worker */
#define PLU_CHAINS		(2 * PL_MAX_THREADS)
static struct plu_chain chains[PLU_CHAINS];
static bool at_exit;

static bool same_cfg(const struct pl_gen_cfg *a, const struct pl_gen_cfg *b)
{
	return a->pattern == b->pattern && a->access == b->access && a->step == b->step &&
	       a->span == b->span && a->passes == b->passes && a->pass_offset == b->pass_offset &&
	       a->ways == b->ways && a->gran == b->gran && a->dimms == b->dimms &&
	       a->first_dimm == b->first_dimm && a->seed == b->seed && a->stream == b->stream;
}

static bool same_chain(const struct plu_chain *c, const struct pl_eng *e)
{
	return c->base == e->base && same_cfg(&c->g, &e->gen.c) && c->nslots == e->gen.nslots &&
	       c->page == e->chase_page && c->seed == e->chase_seed && c->stream == e->chase_stream;
}

/* the bytes a worker may touch: its region's extent (place.c), a copy's source above it */
static void worker_bytes(const struct plu_worker *w, uintptr_t *lo, uintptr_t *hi)
{
	const struct pl_eng_cfg *ec = &w->t.ec;
	const char *why;
	u64 extent;

	*lo = (uintptr_t)ec->base;
	if (pl_gen_check(&ec->gen, &extent, &why))
		extent = ec->base_len;	/* not reached: pl_thread_setup checked it; the rest of the target */
	*hi = *lo + extent + ec->copy_delta;
}

static bool meets(const struct plu_chain *c, uintptr_t lo, uintptr_t hi)
{
	return c->lo < hi && lo < c->hi;
}

/* an engine as far as core/chase.c reads one: the chain's lines */
static void chain_eng(const struct plu_chain *c, struct pl_eng *e)
{
	memset(e, 0, sizeof(*e));
	e->base = c->base;
	e->gen.c = c->g;
	e->gen.nslots = c->nslots;
	e->chase_page = c->page;
	e->chase_seed = c->seed;
	e->chase_stream = c->stream;
}

/* the words written back (the part laid), the slot freed */
static void restore(struct plu_chain *c)
{
	struct pl_eng e;
	u64 pos = 0;

	if (c->laid) {
		chain_eng(c, &e);
		pl_chase_restore(&e, c->save, c->laid, &pos, ~0ULL);
	}
	free(c->save);
	memset(c, 0, sizeof(*c));
}

void plu_chains_restore(void)
{
	unsigned int i;

	for (i = 0; i < PLU_CHAINS; i++)
		if (chains[i].used)
			restore(&chains[i]);
}

static void restore_at_exit(void)
{
	plu_chains_restore();
}

/* the run's worker w that would lay c's chain, or NULL */
static struct plu_worker *taker(struct plu_run *r, const struct plu_chain *c)
{
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (r->w[i].chase && !r->w[i].chain && same_chain(c, &r->w[i].t.e))
			return &r->w[i];
	return NULL;
}

static struct plu_chain *free_slot(void)
{
	unsigned int i;

	for (i = 0; i < PLU_CHAINS; i++)
		if (!chains[i].used)
			return &chains[i];
	/* full: a chain kept from before makes room (a run has at most PL_MAX_THREADS) */
	for (i = 0; i < PLU_CHAINS; i++)
		if (!chains[i].busy) {
			restore(&chains[i]);
			return &chains[i];
		}
	return NULL;
}

void plu_chains_settle(struct plu_run *r)
{
	struct plu_worker *w;
	struct plu_chain *c;
	uintptr_t lo, hi;
	unsigned int i, k;
	bool met;

	if (!at_exit) {
		atexit(restore_at_exit);
		at_exit = true;
	}
	/* the kept chains: taken by the worker that would lay them, or restored before anything meets them */
	for (k = 0; k < PLU_CHAINS; k++) {
		c = &chains[k];
		if (!c->used)
			continue;
		w = taker(r, c);
		for (i = 0, met = false; i < r->n && !met; i++) {
			if (&r->w[i] == w)
				continue;
			worker_bytes(&r->w[i], &lo, &hi);
			met = meets(c, lo, hi);
		}
		if (w && !met && c->laid == 2 * c->nslots) {
			c->busy = true;
			w->chain = c;
			w->t.chain_kept = true;
		} else if (w || met) {
			restore(c);
		}
	}
	/* a chain for each chase worker that takes none: its words saved, then laid by the worker */
	for (i = 0; i < r->n; i++) {
		w = &r->w[i];
		if (!w->chase || w->chain)
			continue;
		c = free_slot();
		if (!c)
			refuse(ENOMEM, "chase: no room to keep thread %u's chain", w->t.idx);
		c->save = malloc(pl_chase_lines(&w->t.e) * sizeof(u64));
		if (!c->save)
			refuse(ENOMEM, "chase: no memory to save the %llu lines of thread %u",
			       pl_chase_lines(&w->t.e), w->t.idx);
		c->used = c->busy = true;
		c->base = w->t.e.base;
		c->g = w->t.e.gen.c;
		c->nslots = w->t.e.gen.nslots;
		c->page = w->t.e.chase_page;
		c->seed = w->t.e.chase_seed;
		c->stream = w->t.e.chase_stream;
		worker_bytes(w, &c->lo, &c->hi);
		w->chain = c;
	}
}

void plu_chain_lay(struct plu_worker *w)
{
	struct plu_chain *c = w->chain;
	struct pl_eng *e = &w->t.e;

	if (w->t.chain_kept) {
		e->chase_p = pl_chase_line(e, 0);	/* where pl_chase_build starts the chase */
		return;
	}
	pl_chase_build(e, c->save, &c->laid, ~0ULL);
}

void plu_chain_leave(struct plu_worker *w)
{
	struct plu_chain *c = w->chain;

	if (!c)
		return;
	if (w->run->keep_chains && c->laid == 2 * c->nslots)
		c->busy = false;	/* kept for the next run */
	else
		restore(c);		/* a chase leaves the target as it found it */
	w->chain = NULL;
}
