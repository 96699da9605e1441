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

bool pl_ceil_reuse(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch, u64 others)
{
	struct pl_ceil_key k;
	struct pl_ceil_ent *ent;
	unsigned int i, m = 0;
	u64 set = 0;

	for (i = 0; i < ts->n; i++) {
		const struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		pl_ceil_key(&k, t, ts->n, prefetch, others);
		ent = pl_ceil_find(c, &k);
		if (!ent || (set && ent->set != set))
			return false;
		set = ent->set;
		m++;
	}
	if (!m || pl_ceil_set_size(c, set) != m)
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

void pl_ceil_store(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch, u64 others)
{
	struct pl_ceil_ent *ent;
	struct pl_ceil_key k;
	unsigned int i, j = 0, m = 0;

	for (i = 0; i < ts->n; i++) {
		const struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		if (t->ceil_reused || !t->e.ceil_ticks)
			return;
		m++;
	}
	if (!m || m > PL_CEIL_CACHE)
		return;
	/* the same keys measured again replace what the cache held of them */
	for (i = 0; i < ts->n; i++) {
		const struct pl_thread *t = pl_threads_at(ts, i);

		if (!pl_ceil_bw(t))
			continue;
		pl_ceil_key(&k, t, ts->n, prefetch, others);
		while ((ent = pl_ceil_find(c, &k)))
			ent->set = 0;
	}
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
		ent->bytes = t->e.ceil_bytes;
		ent->ticks = t->e.ceil_ticks;
		ent->ops = t->e.ceil_ops;
		ent->loop = t->e.ceil_loop;
	}
}
