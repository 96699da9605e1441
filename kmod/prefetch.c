// SPDX-License-Identifier: GPL-2.0
/*
 * prefetch.c - the hardware prefetchers (Intel MSR 0x1A4) around a run.
 *
 * Intel's "Disclosure of Hardware Prefetcher Control on Some Intel
 * Processors" documents bits 0-3 of MSR 0x1A4 as the L2 streamer, L2
 * adjacent line, DCU and DCU IP prefetchers on the big cores from Nehalem
 * on.  Atom cores use other bits, so only the models below are touched
 * (family 6; Sapphire Rapids is the last platform with Optane DIMMs).
 *
 * Every write is read back: where bits 0-3 do not read as written (a
 * hypervisor that ignores or filters the MSR) the run does not start, the
 * CPU keeps its value, and prefetch_control reads none from then on.
 *
 * MSR 0x1A4 is per core: SMT siblings share it.  A core's users are its
 * CPUs whose run has turned the prefetchers off (held); the first user
 * reads and saves the core's value, every user writes "off" (the same
 * value), and the last one to leave writes the saved value back.  Runs
 * with other prefetch settings never share a core (run.c refuses a run on
 * a sibling of a busy CPU whose run's setting differs), so no run measures
 * with prefetchers off it did not ask for.  Changes, restores and the
 * users go under pl_pf_lock inside cpus_read_lock(); a CPU that goes
 * offline in between leaves its core from the hotplug callback, on that
 * CPU, before it goes (pl_cpu_offline): as the core's last user it writes
 * the saved value back, so no CPU comes back with its prefetchers off.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/percpu.h>
#include <linux/mutex.h>
#include <linux/lockdep.h>
#include <linux/topology.h>
#include <asm/processor.h>
#include <asm/msr.h>
#include "pmemlab.h"

#define PL_MSR_PREFETCH		0x1a4
#define PL_MSR_PREFETCH_OFF	0xfULL

static const u8 pl_prefetch_models[] = {
	0x1a, 0x1e, 0x1f, 0x2e,			/* Nehalem */
	0x25, 0x2c, 0x2f,			/* Westmere */
	0x2a, 0x2d,				/* Sandy Bridge */
	0x3a, 0x3e,				/* Ivy Bridge */
	0x3c, 0x3f, 0x45, 0x46,			/* Haswell */
	0x3d, 0x47, 0x4f, 0x56,			/* Broadwell */
	0x4e, 0x5e, 0x55,			/* Skylake, Cascade/Cooper Lake */
	0x8e, 0x9e, 0xa5, 0xa6,			/* Kaby/Coffee/Comet Lake */
	0x6a, 0x6c, 0x7d, 0x7e,			/* Ice Lake */
	0x8f,					/* Sapphire Rapids */
};

/* a model whose MSR 0x1A4 is documented, and the MSR reads back */
bool pl_prefetch_probe(void)
{
	unsigned int i;
	u64 v;

	if (boot_cpu_data.x86_vendor != X86_VENDOR_INTEL || boot_cpu_data.x86 != 6)
		return false;
	for (i = 0; i < ARRAY_SIZE(pl_prefetch_models); i++)
		if (boot_cpu_data.x86_model == pl_prefetch_models[i])
			return !rdmsrq_safe(PL_MSR_PREFETCH, &v);
	return false;
}

struct pl_msr {
	u64 saved;			/* the core's value before its first user */
	bool held;			/* a run on this CPU has the core's prefetchers off */
};

static DEFINE_PER_CPU(struct pl_msr, pl_msr);
static DEFINE_MUTEX(pl_pf_lock);	/* every CPU's pl_msr, and the MSR writes */
static int pl_cpuhp_state = -1;

/*
 * The users of cpu's core other than cpu (under pl_pf_lock), and in *saved
 * the core's value the first of them saved
 */
static unsigned int pl_core_users(unsigned int cpu, u64 *saved)
{
	unsigned int s, users = 0;

	lockdep_assert_held(&pl_pf_lock);
	for_each_cpu(s, topology_sibling_cpumask(cpu)) {
		if (s != cpu && per_cpu_ptr(&pl_msr, s)->held) {
			if (!users++ && saved)
				*saved = per_cpu_ptr(&pl_msr, s)->saved;
		}
	}
	return users;
}

/* cpu leaves its core (under pl_pf_lock): the last user writes the saved value back */
static int pl_core_leave(unsigned int cpu)
{
	struct pl_msr *m = per_cpu_ptr(&pl_msr, cpu);
	int err = 0;

	lockdep_assert_held(&pl_pf_lock);
	if (!m->held)
		return 0;
	m->held = false;
	if (!pl_core_users(cpu, NULL))
		err = wrmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, m->saved);
	return err;
}

/* write v to MSR 0x1A4 of cpu and read it back: 1 (*got) when bits 0-3 did not take */
static int pl_msr_write(unsigned int cpu, u64 v, u64 *got)
{
	int err = wrmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, v);

	if (!err)
		err = rdmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, got);
	if (!err && (*got & PL_MSR_PREFETCH_OFF) != (v & PL_MSR_PREFETCH_OFF))
		err = 1;
	return err;
}

/* from the run's controller thread, IRQs on; a failure says why in r->why */
int pl_prefetch_off(struct pl_run *r)
{
	struct pl_msr *m;
	unsigned int i, cpu;
	int err = 0;
	u64 v, got = 0;

	cpus_read_lock();
	mutex_lock(&pl_pf_lock);
	for (i = 0; i < r->n && !err; i++) {
		cpu = r->w[i].t.cpu;
		m = per_cpu_ptr(&pl_msr, cpu);
		if (m->held)
			continue;
		if (!cpu_online(cpu)) {
			pr_err("cannot turn prefetchers off on CPU %u: offline\n", cpu);
			err = -ENXIO;
			break;
		}
		/* the core's first user saves its value; the others take that one, not "off" */
		if (!pl_core_users(cpu, &v))
			err = rdmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, &v);
		if (!err)
			err = pl_msr_write(cpu, v | PL_MSR_PREFETCH_OFF, &got);
		if (err > 0) {
			/* what the CPU had stays (a write that did not take may have taken in part) */
			if (wrmsrq_safe_on_cpu(cpu, PL_MSR_PREFETCH, v))
				pr_err("cannot restore MSR 0x1a4 on CPU %u\n", cpu);
			scnprintf(r->why, sizeof(r->why),
				  "prefetch=off: MSR 0x1a4 of CPU %u reads 0x%llx after 0x%llx was written: the prefetchers cannot be turned off here (prefetch_control is none from now on)",
				  cpu, got, v | PL_MSR_PREFETCH_OFF);
			r->prefetch_lost = true;
			err = -EIO;
			break;
		}
		if (err) {
			scnprintf(r->why, sizeof(r->why),
				  "prefetch=off: MSR 0x1a4 of CPU %u: error %d", cpu, err);
			break;
		}
		m->saved = v;
		m->held = true;
	}
	mutex_unlock(&pl_pf_lock);
	cpus_read_unlock();
	return err;
}

void pl_prefetch_restore(struct pl_run *r)
{
	unsigned int i, cpu;

	cpus_read_lock();
	mutex_lock(&pl_pf_lock);
	for (i = 0; i < r->n; i++) {
		cpu = r->w[i].t.cpu;
		if (pl_core_leave(cpu))
			pr_err("cannot restore MSR 0x1a4 on CPU %u\n", cpu);
	}
	mutex_unlock(&pl_pf_lock);
	cpus_read_unlock();
}

/* CPU hotplug teardown: runs on @cpu, still online (its siblings still listed), hotplug lock held */
static int pl_cpu_offline(unsigned int cpu)
{
	struct pl_msr *m = per_cpu_ptr(&pl_msr, cpu);

	mutex_lock(&pl_pf_lock);
	if (m->held) {
		bool last = !pl_core_users(cpu, NULL);

		if (pl_core_leave(cpu))
			pr_err("cannot restore MSR 0x1a4 on CPU %u going offline\n", cpu);
		else if (last)
			pr_info("CPU %u going offline: prefetchers restored\n", cpu);
	}
	mutex_unlock(&pl_pf_lock);
	return 0;
}

int pl_prefetch_init(void)
{
	int st;

	if (!READ_ONCE(pl_mod.prefetch_ok))
		return 0;
	st = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "pmemlab:prefetch",
				       NULL, pl_cpu_offline);
	if (st < 0)
		return st;
	pl_cpuhp_state = st;
	return 0;
}

void pl_prefetch_exit(void)
{
	if (pl_cpuhp_state >= 0)
		cpuhp_remove_state_nocalls(pl_cpuhp_state);
	pl_cpuhp_state = -1;
}
