// SPDX-License-Identifier: GPL-2.0
/*
 * run.c - judging a run against this machine, starting it, and the threads
 * that execute it.
 *
 * One controller kthread per run creates one worker kthread per thread
 * (kthread_create_on_node + kthread_bind), turns prefetchers off if asked,
 * wakes the workers, waits, stops them, restores the prefetchers and
 * publishes the results.  Workers meet at a barrier, start at one common
 * TSC value and measure in IRQ-off segments of segment_ms milliseconds:
 *	dax_read_lock + dax_alive -> local_irq_save -> kernel_fpu_begin ->
 *	timed loop -> kernel_fpu_end -> local_irq_restore -> dax_read_unlock
 *	-> cond_resched
 * Nothing inside a segment sleeps.  Time between segments is excluded from
 * the figures and reported (segments, gap_ticks).
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/topology.h>
#include <linux/irqflags.h>
#include <linux/overflow.h>
#include <linux/lockdep.h>
#include <asm/fpu/api.h>
#include <asm/tsc.h>
#include "pmemlab.h"

const char *pl_state_name(int state)
{
	switch (state) {
	case PL_RUNNING:
		return "running";
	case PL_DONE:
		return "done";
	case PL_ERROR:
		return "error";
	default:
		return "idle";
	}
}

/* ---- judging a run (core/check.c) against this machine ---- */
void pl_facts(const struct pl_dev *d, struct pl_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->known = PL_FACT_TARGET | PL_FACT_CPU | PL_FACT_CPUS | PL_FACT_TSC |
		   PL_FACT_PREFETCH | PL_FACT_BACKEND | PL_FACT_FS | PL_FACT_LAYOUT;
	f->target_size = d->t.size;
	f->dead = READ_ONCE(d->t.dead);
	f->features = pl_mod.features;
	f->online = (const u64 *)cpumask_bits(cpu_online_mask);
	f->online_bits = nr_cpu_ids;
	f->nr_online = num_online_cpus();
	f->nr_possible = nr_cpu_ids;
	f->tsc_khz = tsc_khz;
	f->prefetch = READ_ONCE(pl_mod.prefetch_ok);
	f->user = false;
	f->fs_sig = d->t.fs_sig;
	f->nparts = d->t.nparts;
	f->allow_overwrite = d->allow_overwrite;
	f->scattered = d->t.kind == PL_TARGET_DRAM;
}

/* the load target's facts (load_target), for the core's check */
static void pl_facts_load(const struct pl_dev *ld, struct pl_facts *f)
{
	f->known |= PL_FACT_LOAD;
	f->load.size = ld->t.size;
	f->load.dead = READ_ONCE(ld->t.dead);
	f->load.fs_sig = ld->t.fs_sig;
	f->load.nparts = ld->t.nparts;
	f->load.allow_overwrite = ld->allow_overwrite;
	f->load.scattered = ld->t.kind == PL_TARGET_DRAM;
}

/* run and check on d (pl_mod.lock held): -EBUSY while another target is being added or removed (dev.c) */
static int pl_targets_changing(struct pl_dev *d)
{
	struct pl_dev *o;

	lockdep_assert_held(&pl_mod.lock);
	if (pl_mod.closing)
		return 0;	/* and d is gone: pl_run_start says so */
	list_for_each_entry(o, &pl_mod.named, entry) {
		if (o == d || !(o->opening || o->gone))
			continue;
		return pl_fail(d, -EBUSY, "run: target %s is being %s; runs start when targets/%s returns",
			       o->name, o->opening ? "added" : "removed", o->opening ? "add" : "remove");
	}
	return 0;
}

/*
 * load_target's named target (under pl_mod.lock): NULL and 0 for none
 * (empty, or this target's own name), else the target, or -errno and
 * last_error when there is none of that name or another run holds it.
 */
static int pl_load_dev(struct pl_dev *d, struct pl_dev **out)
{
	const char *name = d->cfg.load_target;
	char l1[PL_NAME_LEN + 8], l2[PL_NAME_LEN + 8];
	struct pl_dev *o;

	*out = NULL;
	if (!name[0] || !strcmp(name, d->name))
		return 0;
	o = pl_dev_find(name);
	*out = o;
	if (!o || o->gone)
		return pl_fail(d, -ENOENT, "load_target: no target named %s", name);
	if (o->active)
		return pl_fail(d, -EBUSY, "load_target: %s has a run active",
			       pl_dev_label(o, l1, sizeof(l1)));
	if (o->loaded_by)
		return pl_fail(d, -EBUSY, "load_target: %s is loaded by the run on %s",
			       pl_dev_label(o, l1, sizeof(l1)), pl_dev_label(o->loaded_by, l2, sizeof(l2)));
	return 0;
}

/* the bytes of the window on a target (the core judged the window to fit) */
static u64 pl_window_len(const struct pl_params *c, const struct pl_target *t)
{
	return c->working_set ? c->working_set : t->size - c->window_offset;
}

/*
 * The current parameters as `run` judges them (core/check.c), then
 * the bad ranges of the window on each target: 0, or -errno and last_error.
 */
static int pl_run_params(struct pl_dev *d, struct pl_dev *ld, struct pl_plan *plan)
{
	struct pl_verdict *v;
	struct pl_facts f;
	int err;

	v = kmalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return pl_fail(d, -ENOMEM, "run: out of memory");
	pl_facts(d, &f);
	if (ld)
		pl_facts_load(ld, &f);
	err = pl_check_run(&d->cfg, &f, plan, v);
	if (err)
		pl_fail_verdict(d, v);
	kfree(v);
	/* known bad ranges of the disk in the run's window (safety.c) */
	if (!err)
		err = pl_safety_run(d, &d->t, d->cfg.window_offset, pl_window_len(&d->cfg, &d->t));
	if (!err && ld)
		err = pl_safety_run(d, &ld->t, d->cfg.window_offset, pl_window_len(&d->cfg, &ld->t));
	return err;
}

/* every target of this load, the top level first: gathered once per run or check */
struct pl_devs {
	unsigned int n;
	struct pl_dev *d[PL_MAX_NAMED + 1];
};

/* under pl_mod.lock, which keeps the list as gathered until it is released */
static void pl_devs_gather(struct pl_devs *all)
{
	struct pl_dev *o;

	lockdep_assert_held(&pl_mod.lock);
	all->n = 0;
	all->d[all->n++] = pl_mod.top;
	list_for_each_entry(o, &pl_mod.named, entry)
		all->d[all->n++] = o;
}

/*
 * What other targets' active runs hold, for a run with prefetch setting pf
 * (under pl_mod.lock): their CPUs, and the siblings of those whose run's
 * prefetch setting differs (MSR 0x1A4 is per core), in *avoid; the siblings
 * of the others (sharing a core disturbs a measurement) in *near.
 */
static void pl_busy_cpus(const struct pl_dev *d, const struct pl_devs *all, u64 pf,
			 struct cpumask *avoid, struct cpumask *near)
{
	struct pl_dev *o;
	unsigned int k, cpu;

	lockdep_assert_held(&pl_mod.lock);
	for (k = 0; k < all->n; k++) {
		o = all->d[k];
		if (o == d || !o->active)
			continue;
		for_each_cpu(cpu, &o->busy) {
			struct cpumask *m = o->busy_prefetch != pf ? avoid : near;

			cpumask_set_cpu(cpu, avoid);
			cpumask_or(m, m, topology_sibling_cpumask(cpu));
		}
	}
	cpumask_andnot(near, near, avoid);
}

/*
 * default CPUs: distinct free cores of the target's node, then other free
 * cores, then siblings, then CPUs that share a core with another run of the
 * same prefetch setting; never a CPU of another active run nor a sibling of
 * one whose run's prefetch setting differs (docs/interface.md).  Returns how
 * many were found, or -ENOMEM.
 */
static int pl_default_cpus(const struct pl_dev *d, const struct pl_devs *all, int node,
			   unsigned int n, unsigned int *out)
{
	cpumask_var_t chosen, avoid, near;
	unsigned int cpu, k = 0;
	int pass;

	if (!zalloc_cpumask_var(&chosen, GFP_KERNEL))
		return -ENOMEM;
	if (!zalloc_cpumask_var(&avoid, GFP_KERNEL)) {
		free_cpumask_var(chosen);
		return -ENOMEM;
	}
	if (!zalloc_cpumask_var(&near, GFP_KERNEL)) {
		free_cpumask_var(avoid);
		free_cpumask_var(chosen);
		return -ENOMEM;
	}
	pl_busy_cpus(d, all, d->cfg.prefetch, avoid, near);
	for (pass = 0; pass < 4 && k < n; pass++) {
		for_each_online_cpu(cpu) {
			if (k == n)
				break;
			if (cpumask_test_cpu(cpu, chosen) || cpumask_test_cpu(cpu, avoid))
				continue;
			if (pass < 3 && cpumask_test_cpu(cpu, near))
				continue;
			if (pass == 0 && (node < 0 || cpu_to_node(cpu) != node))
				continue;
			if (pass < 2 &&
			    cpumask_intersects(topology_sibling_cpumask(cpu), chosen))
				continue;
			cpumask_set_cpu(cpu, chosen);
			out[k++] = cpu;
		}
	}
	free_cpumask_var(near);
	free_cpumask_var(avoid);
	free_cpumask_var(chosen);
	return k;
}

/* the listed CPUs (judged online by pl_check_run), or the default ones */
static int pl_pick_cpus(struct pl_dev *d, const struct pl_devs *all, const struct pl_params *c,
			unsigned int n, unsigned int *out)
{
	unsigned int cpu, k = 0;
	int got;

	for (cpu = pl_cpu_next(c->cpus, 0); cpu < PL_MAX_CPUS && k < n;
	     cpu = pl_cpu_next(c->cpus, cpu + 1))
		out[k++] = cpu;
	if (k)
		return 0;
	got = pl_default_cpus(d, all, d->t.node, n, out);
	if (got < 0)
		return pl_fail(d, got, "run: out of memory choosing CPUs");
	/* the check took threads <= CPUs online: the others are held by other targets' runs */
	if (got < n)
		return pl_fail(d, -EBUSY,
			       "threads: %u, but only %u CPUs online are free of other targets' runs (and of cores whose prefetchers another run set otherwise): give cpus= or wait",
			       n, got);
	return 0;
}

/*
 * What other targets' runs hold (under pl_mod.lock): this target, while
 * another run loads it; the CPUs of every active run, and their SMT
 * siblings where the two runs' prefetch settings differ.
 */
static int pl_run_others(struct pl_dev *d, const struct pl_devs *all, const unsigned int *cpus,
			 unsigned int n)
{
	struct pl_dev *o;
	unsigned int i, k, s;
	char l1[PL_NAME_LEN + 8], l2[PL_NAME_LEN + 8];

	lockdep_assert_held(&pl_mod.lock);
	if (d->gone)
		return pl_fail(d, -ENODEV, "run: the target is being removed");
	if (d->loaded_by)
		return pl_fail(d, -EBUSY, "run: %s is loaded by the run on %s",
			       pl_dev_label(d, l1, sizeof(l1)),
			       pl_dev_label(d->loaded_by, l2, sizeof(l2)));
	for (k = 0; k < all->n; k++) {
		o = all->d[k];
		if (o == d || !o->active)
			continue;
		for (i = 0; i < n; i++)
			if (cpumask_test_cpu(cpus[i], &o->busy))
				return pl_fail(d, -EBUSY, "run: cpu %u is used by the run on %s",
					       cpus[i], pl_dev_label(o, l1, sizeof(l1)));
		/* MSR 0x1A4 is per core: no sibling runs with the other prefetch setting */
		if (o->busy_prefetch == d->cfg.prefetch)
			continue;
		for (i = 0; i < n; i++) {
			s = cpumask_first_and(topology_sibling_cpumask(cpus[i]), &o->busy);
			if (s < nr_cpu_ids)
				return pl_fail(d, -EBUSY,
					       "run: cpu %u is an SMT sibling of cpu %u, used by the run on %s with prefetch=%s: siblings share the prefetchers (MSR 0x1a4); give this run prefetch=%s or cpus on other cores",
					       cpus[i], s, pl_dev_label(o, l1, sizeof(l1)),
					       pl_onoff_names[o->busy_prefetch],
					       pl_onoff_names[o->busy_prefetch]);
		}
	}
	return 0;
}

/*
 * Everything `run` judges before it builds anything: the parameters, the
 * window's bad ranges, the CPUs and what other runs hold.  With pl_mod.lock
 * and d->lock held; the targets in *all (gathered here, for what follows
 * under the same lock), and *cpus (kcalloc'ed, plan->n of them) on success.
 */
static int pl_run_judge(struct pl_dev *d, struct pl_devs *all, struct pl_plan *plan,
			unsigned int **cpus, struct pl_dev **ld)
{
	unsigned int *c;
	int err;

	lockdep_assert_held(&pl_mod.lock);
	lockdep_assert_held(&d->lock);
	pl_devs_gather(all);
	if (d->state == PL_RUNNING)
		return pl_fail(d, -EBUSY, "run: a run is active");
	/* an unknown load_target is ENOENT after the core's verdict (load_target needs probe=1) */
	err = pl_load_dev(d, ld);
	if (err == -ENOENT) {
		err = pl_run_params(d, NULL, plan);
		if (!err)
			err = pl_load_dev(d, ld);
	} else if (!err) {
		err = pl_run_params(d, *ld, plan);
	}
	if (!err)
		err = pl_targets_changing(d);	/* targets change between runs */
	if (err)
		return err;
	c = kcalloc(plan->n, sizeof(*c), GFP_KERNEL);
	if (!c)
		return pl_fail(d, -ENOMEM, "run: out of memory");
	err = pl_pick_cpus(d, all, &d->cfg, plan->n, c);
	if (!err)
		err = pl_run_others(d, all, c, plan->n);
	if (err) {
		kfree(c);
		return err;
	}
	*cpus = c;
	return 0;
}

/* the CPUs other targets' active runs hold (under pl_mod.lock): a ceiling measured beside them differs */
static u64 pl_others_busy(const struct pl_dev *d, const struct pl_devs *all)
{
	unsigned int k;
	u64 n = 0;

	lockdep_assert_held(&pl_mod.lock);
	for (k = 0; k < all->n; k++)
		if (all->d[k] != d && all->d[k]->active)
			n += cpumask_weight(&all->d[k]->busy);
	return n;
}

/*
 * The ceilings an earlier run of d measured, if its key is this run's
 * (core/ceil.c): the workers then skip theirs.  The cache is made at the
 * first run and cleared when the module's state a key does not hold changed.
 */
static void pl_ceil_lookup(struct pl_dev *d, const struct pl_devs *all, struct pl_run *r)
{
	struct pl_threads ts = { (char *)&r->w[0].t, sizeof(r->w[0]), r->n };

	lockdep_assert_held(&pl_mod.lock);
	lockdep_assert_held(&d->lock);
	if (!d->ceil)
		d->ceil = kvzalloc(sizeof(*d->ceil), GFP_KERNEL);
	if (!d->ceil)
		return;			/* no cache: every run measures its ceiling */
	if (d->ceil_gen != pl_mod.ceil_gen) {
		pl_ceil_clear(d->ceil);
		d->ceil_gen = pl_mod.ceil_gen;
	}
	r->others = pl_others_busy(d, all);
	pl_ceil_reuse(d->ceil, &ts, r->c.prefetch, r->others);
}

/* a run that ran to its end keeps the ceilings it measured for the next (under the locks) */
static void pl_ceil_keep(struct pl_dev *d, struct pl_run *r)
{
	struct pl_threads ts = { (char *)&r->w[0].t, sizeof(r->w[0]), r->n };

	lockdep_assert_held(&d->lock);
	if (d->ceil && d->ceil_gen == pl_mod.ceil_gen)
		pl_ceil_store(d->ceil, &ts, r->c.prefetch, r->others);
}

/* `check`: judge as `run` does, start nothing */
int pl_run_check(struct pl_dev *d, struct pl_plan *plan)
{
	struct pl_devs all;
	unsigned int *cpus;
	struct pl_dev *ld;
	int err;

	err = pl_run_judge(d, &all, plan, &cpus, &ld);
	if (!err)
		kfree(cpus);
	return err;
}

/* one worker: the core's set-up (core/worker.c), then its buffers */
static int pl_setup_worker(struct pl_run *r, struct pl_worker *w, const struct pl_setup *s,
			   unsigned int idx, unsigned int cpu)
{
	struct pl_eng_cfg *ec = &w->t.ec;
	char *why;
	int err;

	why = kmalloc(PL_ERR_LEN, GFP_KERNEL);
	if (!why)
		return pl_fail(r->dev, -ENOMEM, "run: out of memory");
	w->run = r;
	err = pl_thread_setup(&w->t, s, idx, cpu, why, PL_ERR_LEN);
	if (err)
		goto out;
	w->t.node = cpu_to_node(cpu);
	err = -ENOMEM;
	if (ec->mode == PL_MODE_LAT) {
		ec->hist_buckets = kvcalloc(PL_HIST_NB, sizeof(u64), GFP_KERNEL);
		if (!ec->hist_buckets) {
			snprintf(why, PL_ERR_LEN, "run: out of memory for thread %u's histogram", idx);
			goto out;
		}
		if (ec->nsamples_max) {
			ec->samples = kvcalloc(ec->nsamples_max, sizeof(u64), GFP_KERNEL);
			if (!ec->samples) {
				snprintf(why, PL_ERR_LEN, "run: out of memory for thread %u's %llu samples",
					 idx, ec->nsamples_max);
				goto out;
			}
		}
	} else {
		/*
		 * The engine's ceiling runs on a buffer of the worker's node
		 * (method.md), from vmalloc and ending at its last page: the
		 * engine's accesses are inline asm, which KASAN does not see, and
		 * vmalloc's unmapped guard page makes an overrun fault at once.
		 */
		ec->ceil_len = pl_eng_ceiling_len(ec);
		w->ceil_alloc = vmalloc_node(PAGE_ALIGN(ec->ceil_len), w->t.node);
		if (w->ceil_alloc)
			ec->ceil_buf = w->ceil_alloc + ((PAGE_ALIGN(ec->ceil_len) - ec->ceil_len) &
							~(PL_LINE - 1));
		if (!ec->ceil_buf) {
			snprintf(why, PL_ERR_LEN, "run: out of memory for thread %u's ceiling buffer", idx);
			goto out;
		}
	}
	err = pl_thread_engine(&w->t, why, PL_ERR_LEN);
	if (!err && w->t.op == PL_OP_CHASE) {
		u64 lines = pl_chase_lines(&w->t.e);

		w->chase_save = kvmalloc_array(lines, sizeof(u64), GFP_KERNEL);
		if (!w->chase_save) {
			err = -ENOMEM;
			snprintf(why, PL_ERR_LEN, "run: out of memory to save the %llu lines of thread %u's chase",
				 lines, idx);
		}
	}
out:
	if (err)
		pl_fail(r->dev, err, "%s", why);
	kfree(why);
	return err;
}

static void pl_free_ceiling(struct pl_worker *w)
{
	vfree(w->ceil_alloc);
	w->ceil_alloc = NULL;
	w->t.ec.ceil_buf = NULL;
	w->t.e.ceil_buf = NULL;
}

static void pl_run_free(struct pl_run *r)
{
	unsigned int i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++) {
		kvfree(r->w[i].t.ec.hist_buckets);
		kvfree(r->w[i].t.ec.samples);
		kvfree(r->w[i].chase_save);
		pl_free_ceiling(&r->w[i]);
	}
	kvfree(r);
}

static int pl_run_build(struct pl_dev *d, struct pl_run **out)
{
	unsigned int n, i, *cpus;
	struct pl_setup s, sl;
	struct pl_devs all;
	struct pl_dev *ld;
	struct pl_plan plan;
	struct pl_facts f;
	struct pl_run *r;
	int err;

	err = pl_run_judge(d, &all, &plan, &cpus, &ld);
	if (err)
		return err;
	n = plan.n;
	r = kvzalloc(struct_size(r, w, n), GFP_KERNEL);
	if (!r) {
		err = pl_fail(d, -ENOMEM, "run: out of memory for %u threads", n);
		goto out_cpus;
	}
	r->dev = d;
	r->lt = ld ? &ld->t : &d->t;
	r->c = d->cfg;
	r->n = n;
	r->width = plan.width;
	atomic_set(&r->loaders, n - (r->c.probe ? 1 : 0));
	init_waitqueue_head(&r->wq);
	pl_facts(d, &f);
	s = (struct pl_setup){ .p = &r->c, .f = &f, .target = d->t.kaddr,
			       .target_size = d->t.size, .n = n, .width = plan.width,
			       .stop = &r->stop, .probe_stop = &r->probe_stop };
	/* the load threads on the load target, if any: its memory, its size */
	sl = s;
	sl.target = r->lt->kaddr;
	sl.target_size = r->lt->size;
	for (i = 0; i < n && !err; i++) {
		r->w[i].tgt = i ? r->lt : &d->t;
		err = pl_setup_worker(r, &r->w[i], i ? &sl : &s, i, cpus[i]);
	}
	/* the free path sees every worker that got buffers */
	if (err) {
		pl_run_free(r);
		goto out_cpus;
	}
	pl_ceil_lookup(d, &all, r);
	*out = r;
out_cpus:
	kfree(cpus);
	return err;
}

/* ---- workers ---- */
static void pl_stop_all(struct pl_run *r)
{
	WRITE_ONCE(r->stop, 1);
	WRITE_ONCE(r->probe_stop, 1);
}

/* all workers arrive, the last one sets a start time 1 ms ahead; latency threads calibrate again */
static u64 pl_barrier(struct pl_run *r, struct pl_worker *w)
{
	unsigned long flags;
	u64 go;

	if (atomic_inc_return(&r->arrived) == r->n)
		smp_store_release(&r->go_tsc, pl_rdtsc() + tsc_khz);
	while (!(go = smp_load_acquire(&r->go_tsc))) {
		if (READ_ONCE(r->stop))
			return 0;
		cond_resched();
		cpu_relax();
	}
	if (w->t.e.mode == PL_MODE_LAT) {
		while (pl_rdtsc() < pl_thread_recal_at(&w->t, go))
			cpu_relax();
		local_irq_save(flags);
		pl_thread_calibrate(&w->t);
		local_irq_restore(flags);
	}
	while (pl_rdtsc() < go)
		cpu_relax();
	return go;
}

/* one timed segment; false if the worker is not on its CPU (CPU hotplug) */
static bool pl_segment(struct pl_worker *w)
{
	struct pl_eng *e = &w->t.e;
	unsigned long flags;
	u64 until, t0, t1;

	local_irq_save(flags);
	/*
	 * A bound kthread whose CPU goes offline is moved to another CPU
	 * and would go on measuring there: stop instead.
	 */
	if (raw_smp_processor_id() != w->t.cpu) {
		local_irq_restore(flags);
		return false;
	}
	kernel_fpu_begin();
	/* its end first: at the warm-up's end that resets the counts, outside [t0, t1) */
	until = pl_thread_until(&w->t, pl_rdtsc());
	t0 = pl_rdtsc();
	pl_eng_run(e, until);
	t1 = pl_rdtsc();
	kernel_fpu_end();
	local_irq_restore(flags);
	pl_thread_segment(&w->t, t0, t1);
	return true;
}

static void pl_worker_loop(struct pl_run *r, struct pl_worker *w, u64 go)
{
	struct pl_eng *e = &w->t.e;
	u64 end = pl_thread_begin(&w->t, &r->c, go, tsc_khz), now;
	int id;

	while (!READ_ONCE(*e->stop) && e->left && pl_thread_more(&w->t, pl_rdtsc())) {
		id = pl_target_enter(w->tgt);
		if (id < 0) {
			WRITE_ONCE(r->dead, 1);
			pl_stop_all(r);
			break;
		}
		if (!pl_segment(w)) {
			pl_target_leave(w->tgt, id);
			WRITE_ONCE(r->cpu_lost, w->t.cpu + 1);
			pl_stop_all(r);
			break;
		}
		pl_target_leave(w->tgt, id);
		cond_resched();
	}
	/* ran to its end (count or duration), not stopped early */
	now = pl_rdtsc();
	pl_thread_end(&w->t, now);
	w->complete = !e->left || now >= end;
}

/*
 * Op chase: lay the chain (core/chase.c) in the worker's target, or take it
 * down again (restore), in steps of PL_CHASE_STEP lines inside the target's
 * read side, rescheduling between them.  Laying stops at an abort; false
 * when the target went away (the run stops: target-gone).
 */
#define PL_CHASE_STEP	4096
static bool pl_chase_lay(struct pl_run *r, struct pl_worker *w, bool restore)
{
	u64 pos = 0;
	bool done;
	int id;

	do {
		if (!restore && READ_ONCE(r->stop))
			return true;
		id = pl_target_enter(w->tgt);
		if (id < 0)
			return false;
		if (restore)
			done = pl_chase_restore(&w->t.e, w->chase_save, w->chase_laid, &pos,
						PL_CHASE_STEP);
		else
			done = pl_chase_build(&w->t.e, w->chase_save, &w->chase_laid, PL_CHASE_STEP);
		pl_target_leave(w->tgt, id);
		cond_resched();
	} while (!done);
	return true;
}

static void pl_park(void)
{
	while (!kthread_should_stop()) {
		set_current_state(TASK_IDLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
}

static int pl_worker_fn(void *arg)
{
	struct pl_worker *w = arg;
	struct pl_run *r = w->run;
	unsigned long flags;
	u64 go;

	if (w->chase_save && !pl_chase_lay(r, w, false)) {
		WRITE_ONCE(r->dead, 1);
		pl_stop_all(r);
	}
	local_irq_save(flags);
	if (w->t.e.mode == PL_MODE_LAT) {
		pl_thread_calibrate(&w->t);
	} else if (!w->t.ceil_reused) {
		/* the loop on a cache-resident buffer: the engine's own ceiling */
		kernel_fpu_begin();
		pl_eng_ceiling(&w->t.e, PL_CEILING_MS * tsc_khz);
		kernel_fpu_end();
	}
	local_irq_restore(flags);
	pl_free_ceiling(w);
	go = pl_barrier(r, w);
	if (go)
		pl_worker_loop(r, w, go);
	/* a chase leaves the target as it found it (unless the target is gone) */
	if (w->chase_save && w->chase_laid && !pl_chase_lay(r, w, true))
		WRITE_ONCE(r->dead, 1);
	if (!w->t.probe && atomic_dec_and_test(&r->loaders))
		WRITE_ONCE(r->probe_stop, 1);
	atomic_inc(&r->finished);
	wake_up(&r->wq);
	pl_park();
	return 0;
}

/* ---- controller ---- */
static int pl_create_workers(struct pl_run *r)
{
	struct pl_worker *w;
	unsigned int i;

	for (i = 0; i < r->n; i++) {
		w = &r->w[i];
		w->task = kthread_create_on_node(pl_worker_fn, w, cpu_to_node(w->t.cpu),
						 "pmemlab/%u", w->t.cpu);
		if (IS_ERR(w->task)) {
			int err = PTR_ERR(w->task);

			w->task = NULL;
			return err;
		}
		kthread_bind(w->task, w->t.cpu);
	}
	return 0;
}

/* every loading thread ran to its end: an abort that came later changed nothing */
static bool pl_run_complete(const struct pl_run *r)
{
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (!r->w[i].t.probe && !r->w[i].complete)
			return false;
	return true;
}

static void pl_publish(struct pl_run *r, bool unloading)
{
	struct pl_dev *d = r->dev;
	int err;

	mutex_lock(&pl_mod.lock);
	mutex_lock(&d->lock);
	r->done_tsc = pl_rdtsc();	/* done: the run's teardown ends (teardown_ticks) */
	err = pl_results_build(d, r);
	d->state = PL_ERROR;
	if (r->err)
		scnprintf(d->reason, sizeof(d->reason), "setup failed (%d)", r->err);
	else if (r->dead)
		strscpy(d->reason, "target-gone", sizeof(d->reason));
	else if (r->cpu_lost)
		strscpy(d->reason, "cpu-offline", sizeof(d->reason));
	else if (r->aborted && !pl_run_complete(r))
		strscpy(d->reason, "aborted", sizeof(d->reason));
	else if (unloading)
		strscpy(d->reason, "unloaded", sizeof(d->reason));
	else if (err)
		scnprintf(d->reason, sizeof(d->reason), "results (%d)", err);
	else
		d->state = PL_DONE;
	if (r->prefetch_lost) {
		WRITE_ONCE(pl_mod.prefetch_ok, false);	/* a prefetcher write did not take: say so from now on */
		pl_mod.ceil_gen++;	/* and no ceiling measured before is known to hold */
	}
	if (d->state == PL_DONE)
		pl_ceil_keep(d, r);
	if (d->state == PL_ERROR && r->cpu_lost)
		pl_fail(d, 0, "run %llu: cpu-offline (CPU %d went offline under its thread)",
			d->run_id, r->cpu_lost - 1);
	else if (d->state == PL_ERROR)
		pl_fail(d, 0, "run %llu: %s%s%s", d->run_id, d->reason, r->err && r->why[0] ? ": " : "",
			r->err ? r->why : "");
	/* what the run held, the others may have now */
	d->active = false;
	cpumask_clear(&d->busy);
	if (d->load) {
		d->load->loaded_by = NULL;
		d->load = NULL;
	}
	mutex_unlock(&d->lock);
	mutex_unlock(&pl_mod.lock);
	pl_state_notify(d);	/* done or error: the controller waiting on `state` wakes */
}

static int pl_ctl_fn(void *arg)
{
	struct pl_run *r = arg;
	bool unloading;
	unsigned int i;

	r->err = pl_create_workers(r);
	if (!r->err && r->c.prefetch)
		r->err = pl_prefetch_off(r);
	if (r->err) {
		/* never woken: kthread_stop() below runs nothing of them */
		pl_stop_all(r);
	} else {
		for (i = 0; i < r->n; i++)
			wake_up_process(r->w[i].task);
		wait_event_idle(r->wq, atomic_read(&r->finished) == r->n ||
				       kthread_should_stop());
	}
	unloading = kthread_should_stop();
	if (unloading)
		pl_stop_all(r);
	for (i = 0; i < r->n; i++)
		if (r->w[i].task)
			kthread_stop(r->w[i].task);
	pl_prefetch_restore(r);
	pl_publish(r, unloading);
	pl_park();
	return 0;
}

/* stop the previous run's controller (parked, or running on rmmod) and free it */
static void pl_reap_locked(struct pl_dev *d)
{
	lockdep_assert_held(&d->lock);
	if (d->ctl) {
		kthread_stop(d->ctl);
		d->ctl = NULL;
	}
	pl_run_free(d->run);
	d->run = NULL;
}

/* with pl_mod.lock and d->lock held */
int pl_run_start(struct pl_dev *d, u64 run_tsc)
{
	struct task_struct *ctl;
	struct pl_run *r;
	unsigned int i;
	int err;

	lockdep_assert_held(&d->lock);
	err = pl_run_build(d, &r);
	if (err)
		return err;
	r->run_tsc = run_tsc;
	ctl = kthread_create(pl_ctl_fn, r, "pmemlab-ctl");
	if (IS_ERR(ctl)) {
		pl_run_free(r);
		return pl_fail(d, PTR_ERR(ctl), "run: cannot create the controller thread");
	}
	/* the new run starts: only now do the last run's controller and results go */
	pl_reap_locked(d);
	pl_results_free(d);
	d->run = r;
	d->ctl = ctl;
	d->run_id++;
	d->state = PL_RUNNING;
	d->reason[0] = '\0';
	d->active = true;
	if (r->lt != &d->t) {
		d->load = container_of(r->lt, struct pl_dev, t);
		d->load->loaded_by = d;
	}
	cpumask_clear(&d->busy);
	for (i = 0; i < r->n; i++)
		cpumask_set_cpu(r->w[i].t.cpu, &d->busy);
	d->busy_prefetch = r->c.prefetch;
	wake_up_process(ctl);
	return 0;
}

void pl_run_abort(struct pl_dev *d)
{
	lockdep_assert_held(&d->lock);
	if (d->state != PL_RUNNING || !d->run)
		return;
	WRITE_ONCE(d->run->aborted, 1);
	pl_stop_all(d->run);
}

/* rmmod or remove: stop a run in flight (no new one: d->gone) */
void pl_run_stop(struct pl_dev *d)
{
	mutex_lock(&d->lock);
	if (d->run && d->state == PL_RUNNING)
		pl_stop_all(d->run);
	mutex_unlock(&d->lock);
}

/* then wait for its controller and free everything (without pl_mod.lock: it publishes) */
void pl_run_reap(struct pl_dev *d)
{
	struct task_struct *ctl;

	mutex_lock(&d->lock);
	ctl = d->ctl;
	d->ctl = NULL;
	mutex_unlock(&d->lock);
	if (ctl)
		kthread_stop(ctl);	/* the controller takes the locks to publish */
	mutex_lock(&d->lock);
	pl_run_free(d->run);
	d->run = NULL;
	pl_results_free(d);
	mutex_unlock(&d->lock);
}
