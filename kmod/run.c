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
void pl_facts(struct pl_facts *f)
{
	memset(f, 0, sizeof(*f));
	f->known = PL_FACT_TARGET | PL_FACT_CPU | PL_FACT_CPUS | PL_FACT_TSC |
		   PL_FACT_PREFETCH | PL_FACT_BACKEND | PL_FACT_FS;
	f->target_size = pl.t.size;
	f->dead = READ_ONCE(pl.t.dead);
	f->features = pl.features;
	f->online = (const u64 *)cpumask_bits(cpu_online_mask);
	f->online_bits = nr_cpu_ids;
	f->nr_online = num_online_cpus();
	f->nr_possible = nr_cpu_ids;
	f->tsc_khz = tsc_khz;
	f->prefetch = pl.prefetch_ok;
	f->user = false;
	f->fs_sig = pl.t.fs_sig;
	f->nparts = pl.t.nparts;
	f->allow_overwrite = pl.allow_overwrite;
}

/* the current parameters as `run` judges them: 0, or -errno and last_error */
int pl_run_check(struct pl_plan *plan)
{
	struct pl_verdict *v;
	struct pl_facts f;
	int err;

	lockdep_assert_held(&pl.lock);
	if (pl.state == PL_RUNNING)
		return pl_fail(-EBUSY, "run: a run is active");
	v = kmalloc(sizeof(*v), GFP_KERNEL);
	if (!v)
		return pl_fail(-ENOMEM, "run: out of memory");
	pl_facts(&f);
	err = pl_check_run(&pl.cfg, &f, plan, v);
	if (err)
		pl_fail_verdict(v);
	kfree(v);
	/* known bad ranges of the disk in the run's window (guard.c) */
	if (!err)
		err = pl_guard_run(pl.cfg.window_offset, pl.cfg.working_set ?
				   pl.cfg.working_set : pl.t.size - pl.cfg.window_offset);
	return err;
}

/*
 * default CPUs: distinct cores of the target's node, then other cores, then
 * siblings; returns how many were found, or -ENOMEM
 */
static int pl_default_cpus(int node, unsigned int n, unsigned int *out)
{
	cpumask_var_t chosen;
	unsigned int cpu, k = 0;
	int pass;

	if (!zalloc_cpumask_var(&chosen, GFP_KERNEL))
		return -ENOMEM;
	for (pass = 0; pass < 3 && k < n; pass++) {
		for_each_online_cpu(cpu) {
			if (k == n)
				break;
			if (cpumask_test_cpu(cpu, chosen))
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
	free_cpumask_var(chosen);
	return k;
}

/* the listed CPUs (judged online by pl_check_run), or the default ones */
static int pl_pick_cpus(const struct pl_params *c, unsigned int n, unsigned int *out)
{
	unsigned int cpu, k = 0;
	int got;

	for (cpu = pl_cpu_next(c->cpus, 0); cpu < PL_MAX_CPUS && k < n;
	     cpu = pl_cpu_next(c->cpus, cpu + 1))
		out[k++] = cpu;
	if (k)
		return 0;
	got = pl_default_cpus(pl.t.node, n, out);
	if (got < 0)
		return pl_fail(got, "run: out of memory choosing CPUs");
	if (got < n)
		return pl_fail(-EINVAL, "threads: %u, but only %u CPUs online", n, got);
	return 0;
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
		return pl_fail(-ENOMEM, "run: out of memory");
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
out:
	if (err)
		pl_fail(err, "%s", why);
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
		pl_free_ceiling(&r->w[i]);
	}
	kvfree(r);
}

static int pl_run_build(struct pl_run **out)
{
	unsigned int n, i, *cpus;
	struct pl_plan plan;
	struct pl_setup s;
	struct pl_facts f;
	struct pl_run *r;
	int err;

	err = pl_run_check(&plan);
	if (err)
		return err;
	n = plan.n;
	cpus = kcalloc(n, sizeof(*cpus), GFP_KERNEL);
	if (!cpus)
		return pl_fail(-ENOMEM, "run: out of memory");
	err = pl_pick_cpus(&pl.cfg, n, cpus);
	if (err)
		goto out_cpus;
	r = kvzalloc(struct_size(r, w, n), GFP_KERNEL);
	if (!r) {
		err = pl_fail(-ENOMEM, "run: out of memory for %u threads", n);
		goto out_cpus;
	}
	r->c = pl.cfg;
	r->n = n;
	r->width = plan.width;
	atomic_set(&r->loaders, n - (r->c.probe ? 1 : 0));
	init_waitqueue_head(&r->wq);
	pl_facts(&f);
	s = (struct pl_setup){ .p = &r->c, .f = &f, .target = pl.t.kaddr,
			       .target_size = pl.t.size, .n = n, .width = plan.width,
			       .stop = &r->stop, .probe_stop = &r->probe_stop };
	for (i = 0; i < n && !err; i++)
		err = pl_setup_worker(r, &r->w[i], &s, i, cpus[i]);
	/* the free path sees every worker that got buffers */
	if (err) {
		pl_run_free(r);
		goto out_cpus;
	}
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
	u64 end = pl_thread_begin(&w->t, &r->c, go, tsc_khz);
	int id;

	while (!READ_ONCE(*e->stop) && e->left && pl_thread_more(&w->t, pl_rdtsc())) {
		id = pl_target_enter(&pl.t);
		if (id < 0) {
			WRITE_ONCE(r->dead, 1);
			pl_stop_all(r);
			break;
		}
		if (!pl_segment(w)) {
			pl_target_leave(&pl.t, id);
			WRITE_ONCE(r->cpu_lost, w->t.cpu + 1);
			pl_stop_all(r);
			break;
		}
		pl_target_leave(&pl.t, id);
		cond_resched();
	}
	/* ran to its end (count or duration), not stopped early */
	w->complete = !e->left || pl_rdtsc() >= end;
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

	local_irq_save(flags);
	if (w->t.e.mode == PL_MODE_LAT) {
		pl_thread_calibrate(&w->t);
	} else {
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
	int err;

	mutex_lock(&pl.lock);
	err = pl_results_build(r);
	pl.state = PL_ERROR;
	if (r->err)
		scnprintf(pl.reason, sizeof(pl.reason), "setup failed (%d)", r->err);
	else if (r->dead)
		strscpy(pl.reason, "target-gone", sizeof(pl.reason));
	else if (r->cpu_lost)
		strscpy(pl.reason, "cpu-offline", sizeof(pl.reason));
	else if (r->aborted && !pl_run_complete(r))
		strscpy(pl.reason, "aborted", sizeof(pl.reason));
	else if (unloading)
		strscpy(pl.reason, "unloaded", sizeof(pl.reason));
	else if (err)
		scnprintf(pl.reason, sizeof(pl.reason), "results (%d)", err);
	else
		pl.state = PL_DONE;
	if (r->prefetch_lost)
		pl.prefetch_ok = false;	/* a prefetcher write did not take: say so from now on */
	if (pl.state == PL_ERROR && r->cpu_lost)
		pl_fail(0, "run %llu: cpu-offline (CPU %d went offline under its thread)",
			pl.run_id, r->cpu_lost - 1);
	else if (pl.state == PL_ERROR)
		pl_fail(0, "run %llu: %s%s%s", pl.run_id, pl.reason, r->err && r->why[0] ? ": " : "",
			r->err ? r->why : "");
	mutex_unlock(&pl.lock);
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
static void pl_reap_locked(void)
{
	lockdep_assert_held(&pl.lock);
	if (pl.ctl) {
		kthread_stop(pl.ctl);
		pl.ctl = NULL;
	}
	pl_run_free(pl.run);
	pl.run = NULL;
}

int pl_run_start(void)
{
	struct task_struct *ctl;
	struct pl_run *r;
	int err;

	lockdep_assert_held(&pl.lock);
	err = pl_run_build(&r);
	if (err)
		return err;
	ctl = kthread_create(pl_ctl_fn, r, "pmemlab-ctl");
	if (IS_ERR(ctl)) {
		pl_run_free(r);
		return pl_fail(PTR_ERR(ctl), "run: cannot create the controller thread");
	}
	/* the new run starts: only now do the last run's controller and results go */
	pl_reap_locked();
	pl_results_free();
	pl.run = r;
	pl.ctl = ctl;
	pl.run_id++;
	pl.state = PL_RUNNING;
	pl.reason[0] = '\0';
	wake_up_process(ctl);
	return 0;
}

void pl_run_abort(void)
{
	lockdep_assert_held(&pl.lock);
	if (pl.state != PL_RUNNING || !pl.run)
		return;
	WRITE_ONCE(pl.run->aborted, 1);
	pl_stop_all(pl.run);
}

/* module exit: stop a run in flight, then free everything */
void pl_run_reap(void)
{
	struct task_struct *ctl;

	mutex_lock(&pl.lock);
	if (pl.run && pl.state == PL_RUNNING)
		pl_stop_all(pl.run);
	ctl = pl.ctl;
	pl.ctl = NULL;
	mutex_unlock(&pl.lock);
	if (ctl)
		kthread_stop(ctl);	/* the controller takes pl.lock to publish */
	mutex_lock(&pl.lock);
	pl_run_free(pl.run);
	pl.run = NULL;
	pl_results_free();
	mutex_unlock(&pl.lock);
}
