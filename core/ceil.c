// SPDX-License-Identifier: GPL-2.0
/*
 * ceil.c - the engine's ceilings a target's earlier runs measured, kept
 * for the runs after them (pl_run.h; docs/method.md, "The engine's
 * ceiling").  The module keeps one cache per target, the served runner one
 * per process; both ask here, so that a ceiling is reused by one rule.
 */
#include "pl_run.h"

void pl_ceil_clear(struct pl_ceil_cache *c)
{
	memset(c, 0, sizeof(*c));
}

/*
 * What pl_eng_ceiling's measurement depends on: the loop it selects (the
 * ceiling's op, form, family, plain, split access), the ceiling's access
 * and generator (the run's pattern family, step and per-DIMM geometry, as
 * cut to the cache-resident buffer), what the loop reads of the engine
 * (fence and its interval, flush, read mix, delay, batch), where it runs
 * (CPU, threads beside it, prefetchers, other targets' runs).  Not the
 * seed and stream: they pick which lines of the buffer a random pattern
 * visits, not how many nor how; nor the target's window (the ceiling does
 * not touch the target).
 */
void pl_ceil_key(struct pl_ceil_key *k, const struct pl_thread *t, unsigned int n, u64 prefetch,
		 u64 others)
{
	const struct pl_eng *e = &t->e;

	memset(k, 0, sizeof(*k));	/* padding too: keys compare with memcmp */
	k->cpu = t->cpu;
	k->n = n;
	k->prefetch = prefetch;
	k->others = others;
	k->op = e->op;
	k->form = e->form;
	k->fam = e->fam;
	k->plain = e->plain;
	k->split = e->split;
	k->avx = e->avx;
	k->access = e->access;
	k->batch = e->batch;
	k->fence = e->fence;
	k->flush = e->flush;
	k->fence_interval = e->fence_interval;
	k->delay_ticks = e->delay_ticks;
	k->read_pct = e->read_pct;
	pl_eng_ceiling_inputs(e, &k->cop, &k->ceil_access, &k->gen);
	k->gen.seed = 0;
	k->gen.stream = 0;
}

/* a thread that measures a ceiling (its buffer is gone after the measurement: not asked) */
static bool pl_ceil_bw(const struct pl_thread *t)
{
	return t->e.mode == PL_MODE_BW;
}

static struct pl_ceil_ent *pl_ceil_find(struct pl_ceil_cache *c, const struct pl_ceil_key *k)
{
	unsigned int i;

	for (i = 0; i < PL_CEIL_CACHE; i++)
		if (c->e[i].set && !memcmp(&c->e[i].k, k, sizeof(*k)))
			return &c->e[i];
	return NULL;
}

static unsigned int pl_ceil_set_size(const struct pl_ceil_cache *c, u64 set)
{
	unsigned int i, m = 0;

	for (i = 0; i < PL_CEIL_CACHE; i++)
		m += c->e[i].set == set;
	return m;
}

/*
 * The set every bandwidth thread of ts (m of them) finds its key in, when
 * one set holds them all and nothing else; 0: none.
 */
static u64 pl_ceil_whole(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch,
			 u64 others, unsigned int m)
{
	struct pl_ceil_ent *ent;
	struct pl_ceil_key k;
	unsigned int i;
	u64 set = 0;

	for (i = 0; i < ts->n; i++) {
		const struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		pl_ceil_key(&k, t, ts->n, prefetch, others);
		ent = pl_ceil_find(c, &k);
		if (!ent || (set && ent->set != set))
			return 0;
		set = ent->set;
	}
	return set && pl_ceil_set_size(c, set) == m ? set : 0;
}

bool pl_ceil_reuse(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch, u64 others)
{
	struct pl_ceil_key k;
	struct pl_ceil_ent *ent;
	unsigned int i, m = 0;
	u64 set;

	for (i = 0; i < ts->n; i++)
		m += pl_ceil_bw(pl_threads_at(ts, i));
	set = pl_ceil_whole(c, ts, prefetch, others, m);
	if (!set)
		return false;
	/* credible only: a set of fewer measurements is still being measured */
	for (i = 0; i < PL_CEIL_CACHE; i++)
		if (c->e[i].set == set && c->e[i].count < PL_CEIL_TRUST)
			return false;
	/* a hit: the set is the newest now (the oldest leave first) */
	c->sets++;
	for (i = 0; i < ts->n; i++) {
		struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		pl_ceil_key(&k, t, ts->n, prefetch, others);
		ent = pl_ceil_find(c, &k);
		ent->set = c->sets;
		t->e.ceil_bytes = ent->bytes;
		t->e.ceil_ticks = ent->ticks;
		t->e.ceil_ops = ent->ops;
		t->e.ceil_loop = ent->loop;
		t->ceil_reused = true;
	}
	return true;
}

/* free entries, the oldest sets leaving until m are */
static void pl_ceil_room(struct pl_ceil_cache *c, unsigned int m)
{
	unsigned int i, nfree;
	u64 oldest;

	for (;;) {
		nfree = 0;
		oldest = 0;
		for (i = 0; i < PL_CEIL_CACHE; i++) {
			if (!c->e[i].set)
				nfree++;
			else if (!oldest || c->e[i].set < oldest)
				oldest = c->e[i].set;
		}
		if (nfree >= m || !oldest)
			return;
		for (i = 0; i < PL_CEIL_CACHE; i++)
			if (c->e[i].set == oldest)
				c->e[i].set = 0;
	}
}

bool pl_ceil_low(const struct pl_thread *t)
{
	const struct pl_eng *e = &t->e;

	/* bytes / ticks > ceil_bytes / ceil_ticks */
	return pl_ceil_bw(t) && t->ceil_reused && e->st.ticks && e->ceil_ticks &&
	       (pl_u128)e->st.bytes * e->ceil_ticks > (pl_u128)e->ceil_bytes * e->st.ticks;
}

const char *pl_ceil_src_name(u64 src)
{
	switch (src) {
	case PL_CEIL_REUSED:
		return "reused";
	case PL_CEIL_REUSED_LOW:
		return "reused-low";
	default:
		return "measured";
	}
}

/* what the cache holds of ts's keys leaves it */
static void pl_ceil_drop(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch,
			 u64 others)
{
	struct pl_ceil_ent *ent;
	struct pl_ceil_key k;
	unsigned int i;

	for (i = 0; i < ts->n; i++) {
		const struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		pl_ceil_key(&k, t, ts->n, prefetch, others);
		while ((ent = pl_ceil_find(c, &k)))
			ent->set = 0;
	}
}

/* a thread's measured ceiling into its entry, where the faster (a ceiling is the fastest window) */
static void pl_ceil_best(struct pl_ceil_ent *ent, const struct pl_eng *e)
{
	if (ent->ticks &&
	    (pl_u128)e->ceil_bytes * ent->ticks <= (pl_u128)ent->bytes * e->ceil_ticks)
		return;
	ent->bytes = e->ceil_bytes;
	ent->ticks = e->ceil_ticks;
	ent->ops = e->ceil_ops;
	ent->loop = e->ceil_loop;
}

void pl_ceil_store(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch, u64 others)
{
	struct pl_ceil_ent *ent;
	struct pl_ceil_key k;
	unsigned int i, j = 0, m = 0, reused = 0, low = 0;
	u64 set;

	for (i = 0; i < ts->n; i++) {
		const struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		m++;
		reused += t->ceil_reused;
		low += pl_ceil_low(t);
		if (!t->ceil_reused && !t->e.ceil_ticks)
			return;
	}
	if (!m || m > PL_CEIL_CACHE)
		return;
	if (reused) {
		/* reused whole (pl_ceil_reuse); outrun, it is stale: the next run measures again */
		if (low)
			pl_ceil_drop(c, ts, prefetch, others);
		return;
	}
	/* a set of these keys still being measured: each thread's fastest, one measurement more */
	set = pl_ceil_whole(c, ts, prefetch, others, m);
	if (set) {
		c->sets++;
		for (i = 0; i < PL_CEIL_CACHE; i++) {
			if (c->e[i].set != set)
				continue;
			c->e[i].set = c->sets;
			if (c->e[i].count < PL_CEIL_TRUST)
				c->e[i].count++;
		}
		for (i = 0; i < ts->n; i++) {
			const struct pl_thread *t = pl_threads_at(ts, i);

			if (!pl_ceil_bw(t))
				continue;
			pl_ceil_key(&k, t, ts->n, prefetch, others);
			pl_ceil_best(pl_ceil_find(c, &k), &t->e);
		}
		return;
	}
	/* the same keys measured in another set leave it: a new set of one measurement */
	pl_ceil_drop(c, ts, prefetch, others);
	pl_ceil_room(c, m);
	c->sets++;
	for (i = 0; i < ts->n; i++) {
		const struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		while (c->e[j].set)
			j++;
		ent = &c->e[j];
		pl_ceil_key(&ent->k, t, ts->n, prefetch, others);
		ent->set = c->sets;
		ent->count = 1;
		ent->ticks = 0;
		pl_ceil_best(ent, &t->e);
	}
}
