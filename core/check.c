// SPDX-License-Identifier: GPL-2.0
/*
 * check.c - the one validator of pmemlab's run parameters: the rules of
 * each value, of their combination, and against the facts of the machine
 * and target (struct pl_facts).  The module judges every sysfs write and
 * `check`/`run` here, the runner its arguments, the controller its configs
 * (libplcore.so), so all three give the same verdict: an errno, the
 * parameter at fault, a reason starting with its name, and whether a fact
 * of this machine decided it.
 */
#include "pl_run.h"

void pl_verdict_clear(struct pl_verdict *v)
{
	v->err = 0;
	v->param = -1;
	v->machine = false;
	v->why[0] = '\0';
}

static bool pl_word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* does text start with the word name? */
static bool pl_starts_with_word(const char *text, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(text, name, n) && !pl_word_char(text[n]);
}

void pl_printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int pl_refuse(struct pl_verdict *v, int err, int param, bool machine, const char *fmt, ...)
{
	const char *name = param >= 0 ? pl_params[param].name : NULL;
	size_t n, len = sizeof(v->why);
	va_list ap;

	v->err = err;
	v->param = param;
	v->machine = machine;
	va_start(ap, fmt);
	vsnprintf(v->why, len, fmt, ap);
	va_end(ap);
	pl_printable(v->why);
	if (!name || pl_starts_with_word(v->why, name))
		return err;
	/* "<name>: " in front, the text cut where it no longer fits */
	n = strlen(name) + 2;
	memmove(v->why + n, v->why, len - n - 1);
	v->why[len - 1] = '\0';
	memcpy(v->why, name, n - 2);
	memcpy(v->why + n - 2, ": ", 2);
	return err;
}

static bool pl_known(const struct pl_facts *f, u32 fact)
{
	return f->known & fact;
}

int pl_judge_value(int id, u64 val, const struct pl_facts *f, struct pl_verdict *v)
{
	const struct pl_param *d = &pl_params[id];

	if (val < d->lo || val > d->hi)
		return pl_refuse(v, -EINVAL, id, false, "%llu is outside %llu..%llu", val, d->lo,
				 d->hi);
	if (d->mult && val % d->mult)
		return pl_refuse(v, -EINVAL, id, false, "%llu is not a multiple of %llu", val,
				 d->mult);
	switch (d->rule) {
	case PL_R_WIDTH:
		if (val && val != 8 && val != 16 && val != 32 && val != 64)
			return pl_refuse(v, -EINVAL, id, false, "%llu is not 0, 8, 16, 32 or 64", val);
		break;
	case PL_R_ACCESS:
		if (val < PL_LINE ? (val & (val - 1)) : val % PL_LINE)
			return pl_refuse(v, -EINVAL, id, false,
					 "%llu must be 8, 16, 32 or a multiple of 64", val);
		break;
	case PL_R_BELOW_TARGET:
		if (pl_known(f, PL_FACT_TARGET) && val >= f->target_size)
			return pl_refuse(v, -ERANGE, id, true, "%llu is past the target (%llu bytes)",
					 val, f->target_size);
		break;
	case PL_R_IN_TARGET:
		if (pl_known(f, PL_FACT_TARGET) && val > f->target_size)
			return pl_refuse(v, -ERANGE, id, true, "%llu exceeds the target (%llu bytes)",
					 val, f->target_size);
		break;
	case PL_R_ONLINE:
		if (pl_known(f, PL_FACT_CPUS) && val > f->nr_online)
			return pl_refuse(v, -ERANGE, id, true, "%llu exceeds the %u online CPUs", val,
					 f->nr_online);
		break;
	case PL_R_PREFETCH:
		if (val && pl_known(f, PL_FACT_PREFETCH) && !f->prefetch)
			return pl_refuse(v, -EOPNOTSUPP, id, true, "%s",
					 f->user ? "userspace cannot control hardware prefetchers (prefetch_control none)" :
					 "this CPU has no documented prefetcher control the module can use");
		break;
	}
	return 0;
}

bool pl_target_name_ok(const char *s, size_t len)
{
	size_t i;

	if (!len || len > PL_TARGET_NAME_MAX || (len == 3 && !memcmp(s, "add", 3)) ||
	    (len == 6 && !memcmp(s, "remove", 6)))
		return false;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

int pl_judge_name(int id, const char *s, size_t len, const struct pl_facts *f, struct pl_verdict *v)
{
	int shown = len > PL_TARGET_NAME_MAX + 1 ? PL_TARGET_NAME_MAX + 1 : (int)len;

	if (!len || id != PL_P_load_target || !pl_known(f, PL_FACT_BACKEND) || f->user ||
	    pl_target_name_ok(s, len))
		return 0;
	return pl_refuse(v, -EINVAL, id, false,
			 "'%.*s%s' is not a target name (%s, as targets/add names them)",
			 shown, s, (size_t)shown < len ? "..." : "", PL_TARGET_NAME_RULE);
}

int pl_judge_cpus(unsigned int top, const struct pl_facts *f, struct pl_verdict *v)
{
	if (pl_known(f, PL_FACT_CPUS) && top > f->nr_possible)
		return pl_refuse(v, -EINVAL, PL_P_cpus, true, "CPU %u does not exist (%u possible)",
				 top - 1, f->nr_possible);
	return 0;
}

static bool pl_op_writes(const struct pl_facts *f, int op)
{
	return pl_ops[op].writes;
}

/* features op lacks at width (PL_F_NONE: no such instruction); 0 when not known */
static u32 pl_missing(const struct pl_facts *f, int op, unsigned int width)
{
	u32 need = pl_ops[op].needs[pl_width_idx(width)];

	if (need & PL_F_NONE)
		return PL_F_NONE;
	return pl_known(f, PL_FACT_CPU) ? need & ~f->features : 0;
}

static const unsigned int pl_widths[PL_NWIDTH] = { 8, 16, 32, 64 };

/* the op lacks something at every width it has: the op, not the width, is at fault */
static bool pl_op_unrunnable(const struct pl_facts *f, int op)
{
	int i;

	for (i = 0; i < PL_NWIDTH; i++)
		if (!pl_missing(f, op, pl_widths[i]))
			return false;
	return true;
}

static const char *pl_feature_name(u32 miss)
{
	int i;

	for (i = 0; i < PL_F_NR; i++)
		if (miss & (1u << i))
			return pl_feature_names[i];
	return "?";
}

/*
 * Does a thread running op write its target?  A store does unless read_pct
 * makes it loads only; a chase lays its chain in the target's lines (and
 * writes their words back at the end; with chase_write it also leaves its
 * data in them): the mapping and the overwrite guard treat it as a write.
 */
static bool pl_op_alters(const struct pl_params *p, const struct pl_facts *f, int op)
{
	return op == PL_OP_CHASE || (pl_op_writes(f, op) && p->read_pct < 100);
}

bool pl_run_writes(const struct pl_params *p, const struct pl_facts *f)
{
	unsigned int i;

	for (i = 0; i < p->threads && i < PL_MAX_THREADS; i++)
		if (pl_op_alters(p, f, p->ops[i % p->nops]))
			return true;
	return false;
}

/*
 * Does a thread of the run store data (then the runner's pre-fault fills
 * the window)?  A chase only lays its chain, then restores it; with
 * chase_write it stores to the lines it has laid, whose pages the lay has
 * already written: no fill, so that a chase leaves every byte but its
 * lines' data as it was.
 */
bool pl_run_stores(const struct pl_params *p, const struct pl_facts *f)
{
	unsigned int i;

	for (i = 0; i < p->threads && i < PL_MAX_THREADS; i++)
		if (p->ops[i % p->nops] != PL_OP_CHASE && pl_op_alters(p, f, p->ops[i % p->nops]))
			return true;
	return false;
}

/* the ops the run uses (the load kernel too where read_pct mixes) */
static void pl_used_ops(const struct pl_params *p, const struct pl_facts *f, unsigned int n,
			bool *used)
{
	unsigned int i;
	int op;

	memset(used, 0, PL_OP_NR * sizeof(*used));
	for (i = 0; i < n; i++) {
		op = p->ops[i % p->nops];
		used[op] = true;
		if (pl_op_writes(f, op) && p->read_pct)
			used[PL_OP_LOAD] = true;
	}
}

/* the probe's chase (its own 8-byte loop, pl_check_own_ops) leaves the load threads their width */
static bool pl_width_free(const struct pl_params *p, int op)
{
	return op == PL_OP_CHASE && p->probe;
}

static int pl_resolve_width(const struct pl_params *p, const struct pl_facts *f,
			    const bool *used, unsigned int *width, struct pl_verdict *v)
{
	const struct pl_op_desc *d;
	bool exists = false;
	int op, i;
	u32 miss;

	if (p->width) {
		if (p->access_size % p->width)
			return pl_refuse(v, -EINVAL, PL_P_access_size, false,
					 "access_size %llu is not a multiple of width %llu",
					 p->access_size, p->width);
		for (op = 0; op < PL_OP_NR; op++) {
			if (!used[op] || pl_width_free(p, op))
				continue;
			d = &pl_ops[op];
			miss = pl_missing(f, op, p->width);
			if (miss & PL_F_NONE)
				return pl_refuse(v, -EOPNOTSUPP, PL_P_width, false,
						 "op %s has no %llu-byte instruction", d->name, p->width);
			if (miss)
				return pl_refuse(v, -EOPNOTSUPP,
						 pl_op_unrunnable(f, op) ? PL_P_op : PL_P_width, true,
						 "%s at width %llu (%s) needs %s, which this CPU lacks",
						 d->name, p->width, d->insn[pl_width_idx(p->width)],
						 pl_feature_name(miss));
		}
		*width = p->width;
		return 0;
	}
	for (i = PL_NWIDTH - 1; i >= 0; i--) {
		bool none = false, lacks = false;

		if (pl_widths[i] > p->access_size)
			continue;
		for (op = 0; op < PL_OP_NR; op++) {
			if (!used[op] || pl_width_free(p, op))
				continue;
			miss = pl_missing(f, op, pl_widths[i]);
			none |= !!(miss & PL_F_NONE);
			lacks |= !!miss;
		}
		if (!lacks) {
			*width = pl_widths[i];
			return 0;
		}
		exists |= !none;
	}
	if (!exists)
		return pl_refuse(v, -EOPNOTSUPP, PL_P_access_size, false,
				 "access_size %llu: no instruction width up to it exists for every op of this run",
				 p->access_size);
	/* name an op that lacks a feature at the narrowest width it has */
	for (op = 0; op < PL_OP_NR; op++) {
		if (!used[op])
			continue;
		for (i = 0; i < PL_NWIDTH && pl_widths[i] <= p->access_size; i++) {
			miss = pl_missing(f, op, pl_widths[i]);
			if (miss & PL_F_NONE)
				continue;
			if (!miss)
				break;
			d = &pl_ops[op];
			return pl_refuse(v, -EOPNOTSUPP, PL_P_op, true,
					 "%s at width %u (%s) needs %s, which this CPU lacks",
					 d->name, pl_widths[i], d->insn[i], pl_feature_name(miss));
		}
	}
	return pl_refuse(v, -EOPNOTSUPP, PL_P_op, true,
			 "no instruction width <= access_size %llu runs every op of this run on this CPU",
			 p->access_size);
}

/* do two threads on this target share lines, so that one can overwrite a chase's chain? */
static bool pl_chase_shares_lines(const struct pl_params *p, bool probe_only)
{
	/* the probe's chase alone on this target: its load threads run on load_target */
	unsigned int on_target = probe_only && p->load_target[0] ? 1 : p->threads;

	if (on_target < 2)
		return false;
	switch (p->placement) {
	case PL_PLACE_THREAD:
		return false;		/* the window cut into regions of their own */
	case PL_PLACE_DIMM:
		return (u64)on_target * p->dimms_per_thread > p->interleave_ways;
	default:
		return true;		/* global: every thread over the whole window */
	}
}

/* the rules of ops that are not one access of the plain loops: chase and the copies */
static int pl_check_own_ops(const struct pl_params *p, const bool *used, struct pl_verdict *v)
{
	if (used[PL_OP_CHASE]) {
		/*
		 * Its loop (pl_chase_loop, engine.c) has no mix, delay or prep to
		 * honour: every thread in latency mode, or the probe's op alone
		 * (thread 0 of probe=1, which runs without the load's mix and
		 * delay, worker.c) beside load threads of other ops.
		 */
		bool probe_only = p->probe && p->ops[0] == PL_OP_CHASE;
		unsigned int i;

		for (i = 1; probe_only && i < p->threads && i < PL_MAX_THREADS; i++)
			probe_only = p->ops[i % p->nops] != PL_OP_CHASE;
		if (probe_only ? p->cold || p->warm :
		    p->nops > 1 || p->mode != PL_MODE_LAT || p->read_pct || p->probe ||
		    p->delay_ticks || p->cold || p->warm)
			return pl_refuse(v, -EINVAL, PL_P_op, false,
					 "chase: one op for every thread, mode latency, no read_pct, probe, delay_ticks, cold or warm; or the probe's op alone (probe=1, thread 0; no cold or warm)");
		/*
		 * A chain is followed while it lies in the target: no other
		 * thread may write its lines (another chain, a store, the
		 * restore at a thread's end), or a hop reads a word that is
		 * no pointer (a wild load: an oops in the module).  So the
		 * threads on this target need regions of their own.
		 */
		if (pl_chase_shares_lines(p, probe_only))
			return pl_refuse(v, -EINVAL, PL_P_placement, false,
					 "op chase: every thread on the target needs lines of its own (another thread's chain, stores or restore would overwrite the chain's pointers): placement per-thread, per-dimm with threads x dimms_per_thread <= interleave_ways, or one thread (or the load on load_target)");
		if (p->access_size % PL_LINE)
			return pl_refuse(v, -EINVAL, PL_P_access_size, false,
					 "op chase: access_size (the slot) must be a multiple of 64");
		/* a slot of a 4 KiB page, or of a 2 MiB one (the TLB of each page size) */
		if (p->chase_page && p->access_size != 4096 && p->access_size != (2ULL << 20))
			return pl_refuse(v, -EINVAL, PL_P_chase_page, false,
					 "chase_page=1 lays one line of the chain per page-sized slot: access_size must be 4096 or 2097152 (2M), not %llu",
					 p->access_size);
	}
	if ((used[PL_OP_COPY] || used[PL_OP_NTCOPY]) && p->placement == PL_PLACE_DIMM)
		return pl_refuse(v, -EINVAL, PL_P_op, false,
				 "op %s does not combine with placement per-dimm",
				 pl_op_name(used[PL_OP_COPY] ? PL_OP_COPY : PL_OP_NTCOPY));
	return 0;
}

static bool pl_online(const struct pl_facts *f, unsigned int cpu)
{
	if (!f->online)
		return cpu < f->nr_online;
	return cpu < f->online_bits && ((f->online[cpu / 64] >> (cpu % 64)) & 1);
}

static int pl_check_cpus(const struct pl_params *p, const struct pl_facts *f, unsigned int n,
			 struct pl_verdict *v)
{
	unsigned int cpu, k = 0;

	cpu = pl_cpu_next(p->cpus, 0);
	if (cpu == PL_MAX_CPUS)
		return 0;		/* default placement */
	for (; cpu < PL_MAX_CPUS && k < n; cpu = pl_cpu_next(p->cpus, cpu + 1), k++)
		if (pl_known(f, PL_FACT_CPUS) && !pl_online(f, cpu))
			return pl_refuse(v, -EINVAL, PL_P_cpus, true, "CPU %u is offline", cpu);
	if (k < n)
		return pl_refuse(v, -EINVAL, PL_P_cpus, false, "cpus lists %u CPUs, threads wants %u",
				 k, n);
	return 0;
}

/* the first parameter a reason names, as a word; -1 if none */
static int pl_named_param(const char *why)
{
	const char *at, *first = NULL;
	int id, best = -1;
	size_t n;

	for (id = 0; id < PL_NPARAMS; id++) {
		n = strlen(pl_params[id].name);
		for (at = strstr(why, pl_params[id].name); at; at = strstr(at + 1, pl_params[id].name))
			if ((at == why || !pl_word_char(at[-1])) && !pl_word_char(at[n]))
				break;
		if (at && (!first || at < first)) {
			first = at;
			best = id;
		}
	}
	return best;
}

/*
 * Each thread's region exactly as run sets it up (place.c).  Its reasons
 * name the parameters in words: the first one named is the one at fault;
 * a region too small names none, and is the hotspot's or the window's.
 */
static int pl_check_regions(const struct pl_params *p, bool known, u64 target_size,
			    unsigned int from, unsigned int n, struct pl_verdict *v)
{
	struct pl_region reg;
	struct pl_place in;
	char why[PL_WHY_LEN];
	unsigned int i;
	u64 size;
	int err, id;

	if (known)
		size = target_size;
	else if (p->working_set)
		size = p->window_offset + p->working_set;	/* the least target it needs */
	else	/* the largest window: what fails there fails on every target */
		size = p->window_offset + pl_params[PL_P_working_set].hi;
	for (i = from; i < n; i++) {
		pl_place_input(p, size, i, n, &in);
		err = pl_place_worker(&in, &reg, why, sizeof(why));
		if (err) {
			id = pl_named_param(why);
			if (id < 0)
				id = p->pattern == PL_PAT_HOTSPOT ? PL_P_hotspot_size : PL_P_working_set;
			return pl_refuse(v, err, id, known && !p->working_set, "%s", why);
		}
		/* a raw chase's batch reads each line at most once after the round's writes */
		if (p->ops[i % p->nops] == PL_OP_CHASE && p->chase_write == PL_CW_RAW &&
		    pl_gen_nslots(&reg.g) < p->chase_batch)
			return pl_refuse(v, -EINVAL, PL_P_chase_batch, known && !p->working_set,
					 "chase_write=raw: thread %u's chain has %llu lines, fewer than chase_batch %llu (a batch would read a line twice after one write): a smaller chase_batch or a larger region",
					 i, pl_gen_nslots(&reg.g), p->chase_batch);
	}
	return 0;
}

/* some thread of from..n-1 writes */
static bool pl_threads_write(const struct pl_params *p, const struct pl_facts *f,
			     unsigned int from, unsigned int n)
{
	unsigned int i;

	for (i = from; i < n && i < PL_MAX_THREADS; i++)
		if (pl_op_alters(p, f, p->ops[i % p->nops]))
			return true;
	return false;
}

/* the overwrite guard of one target ("the target", "the load target"): what it carries, or its partitions */
static int pl_guard_target(const char *fs_sig, unsigned int nparts, const char *what,
			   struct pl_verdict *v)
{
	if (fs_sig && !strcmp(fs_sig, "unreadable"))
		return pl_refuse(v, -EPERM, PL_P_op, true,
				 "refusing a write run: %s's signature area is unreadable (a bad range or media error), so what it carries is unknown (load with allow_overwrite=1)",
				 what);
	if (fs_sig && strcmp(fs_sig, "none"))
		return pl_refuse(v, -EPERM, PL_P_op, true,
				 "refusing a write run: %s carries a %s signature (load with allow_overwrite=1)",
				 what, fs_sig);
	if (nparts)
		return pl_refuse(v, -EPERM, PL_P_op, true,
				 "refusing a write run: %s has %u partitions (load with allow_overwrite=1)",
				 what, nparts);
	return 0;
}

/* the window on a target of size bytes: the bytes it spans (working_set, or up to the end) */
static int pl_check_window(const struct pl_params *p, u64 size, const char *what, u64 *ws,
			   struct pl_verdict *v)
{
	if (p->window_offset >= size)
		return pl_refuse(v, -ERANGE, PL_P_window_offset, true,
				 "window_offset %llu is not below the size of %s (%llu bytes)",
				 p->window_offset, what, size);
	*ws = p->working_set ? p->working_set : size - p->window_offset;
	if (*ws > size - p->window_offset)
		return pl_refuse(v, -ERANGE, PL_P_working_set, true,
				 "window_offset + working_set = %llu exceeds %s (%llu bytes)",
				 p->window_offset + *ws, what, size);
	return 0;
}

int pl_check_run(const struct pl_params *p, const struct pl_facts *f, struct pl_plan *plan,
		 struct pl_verdict *v)
{
	bool load = p->load_target[0] && pl_known(f, PL_FACT_LOAD);
	u64 load_ws = 0;
	bool used[PL_OP_NR];
	unsigned int n = p->threads;
	u64 size, ws, lat_threads;
	int id, err;

	pl_verdict_clear(v);
	/* a CPU list says best what a CPU gone offline since the values were set means */
	err = pl_check_cpus(p, f, n, v);
	if (err)
		return err;
	/* every value again: the machine may have changed since it was set */
	for (id = 0; id < PL_NPARAMS; id++) {
		switch (pl_params[id].kind) {
		case PL_K_OPS:
			err = 0;	/* parsed into ops both backends run: nothing of the machine to judge */
			break;
		case PL_K_CPUS:
			err = pl_judge_cpus(pl_cpu_top(p->cpus), f, v);
			break;
		case PL_K_NAME:
			err = pl_judge_name(id, (const char *)p + pl_params[id].off,
					    strlen((const char *)p + pl_params[id].off), f, v);
			break;
		default:
			err = pl_judge_value(id, *(const u64 *)((const char *)p + pl_params[id].off),
					     f, v);
			break;
		}
		if (err)
			return err;
	}
	if (pl_known(f, PL_FACT_TARGET) && f->dead)
		return pl_refuse(v, -ENXIO, -1, true, "the target is gone");
	if (p->load_target[0] && (!p->probe || n < 2 || p->mode != PL_MODE_BW))
		return pl_refuse(v, -EINVAL, PL_P_load_target, false,
				 "load_target needs probe=1 (mode=bandwidth, threads >= 2): the load threads run there while thread 0 probes this target");
	if (load && f->load.dead)
		return pl_refuse(v, -ENXIO, PL_P_load_target, true, "load_target: the load target is gone");
	pl_used_ops(p, f, n, used);
	err = pl_check_own_ops(p, used, v);
	if (!err)
		err = pl_resolve_width(p, f, used, &plan->width, v);
	if (err)
		return err;
	plan->n = n;
	plan->writes = pl_run_writes(p, f);
	/*
	 * The overwrite guard: what the target carries (sig.c), or its
	 * partitions; with a load target, each target for the threads on it.
	 */
	if (pl_known(f, PL_FACT_FS) && !f->allow_overwrite &&
	    pl_threads_write(p, f, 0, load ? 1 : n)) {
		err = pl_guard_target(f->fs_sig, f->nparts, "the target", v);
		if (err)
			return err;
	}
	if (load && pl_known(f, PL_FACT_FS) && !f->load.allow_overwrite &&
	    pl_threads_write(p, f, 1, n)) {
		err = pl_guard_target(f->load.fs_sig, f->load.nparts, "the load target", v);
		if (err)
			return err;
	}
	if (pl_known(f, PL_FACT_TARGET)) {
		size = f->target_size;
		err = pl_check_window(p, size, "the target", &ws, v);
		if (err)
			return err;
	} else {
		ws = p->working_set;
	}
	if (load) {
		err = pl_check_window(p, f->load.size, "the load target", &load_ws, v);
		if (err)
			return err;
		if (load_ws < p->access_size)
			return pl_refuse(v, -ERANGE, PL_P_working_set, !p->working_set,
					 "working_set %llu is smaller than access_size %llu (on the load target)",
					 load_ws, p->access_size);
	}
	if (ws && ws < p->access_size)
		return pl_refuse(v, -ERANGE, PL_P_working_set, !p->working_set,
				 "working_set %llu is smaller than access_size %llu", ws,
				 p->access_size);
	if (p->fence != PL_FENCE_NONE && p->fence_interval &&
	    p->fence_interval < p->access_size && p->access_size % p->fence_interval)
		return pl_refuse(v, -EINVAL, PL_P_fence_interval, false,
				 "fence_interval %llu must divide access_size %llu",
				 p->fence_interval, p->access_size);
	if (p->probe && (n < 2 || p->mode != PL_MODE_BW))
		return pl_refuse(v, -EINVAL, PL_P_probe, false,
				 "probe needs mode=bandwidth and threads >= 2");
	if (p->cold && p->warm)
		return pl_refuse(v, -EINVAL, PL_P_warm, false, "cold and warm exclude each other");
	if (p->placement == PL_PLACE_DIMM && p->pattern == PL_PAT_HOTSPOT)
		return pl_refuse(v, -EINVAL, PL_P_pattern, false,
				 "pattern hotspot does not combine with placement per-dimm");
	if (p->placement == PL_PLACE_DIMM &&
	    p->window_offset % (p->interleave_ways * p->interleave_gran))
		return pl_refuse(v, -EINVAL, PL_P_window_offset, false,
				 "per-dimm: window_offset must be a multiple of interleave_ways * interleave_gran");
	if (p->dimms_per_thread > p->interleave_ways)
		return pl_refuse(v, -EINVAL, PL_P_dimms_per_thread, false,
				 "dimms_per_thread %llu exceeds interleave_ways %llu",
				 p->dimms_per_thread, p->interleave_ways);
	/*
	 * The delay busy-waits with IRQs off after every access: keep it
	 * well inside one segment, so that a segment never runs far over
	 * segment_ms (a large delay would hold IRQs off for seconds).
	 */
	if (pl_known(f, PL_FACT_TSC) && p->delay_ticks &&
	    p->delay_ticks >= p->segment_ms * f->tsc_khz / 2)
		return pl_refuse(v, -EINVAL, PL_P_delay_ticks, true,
				 "delay_ticks %llu: must be below half a segment (segment_ms %llu = %llu ticks)",
				 p->delay_ticks, p->segment_ms, p->segment_ms * f->tsc_khz);
	lat_threads = p->mode == PL_MODE_LAT ? n : p->probe ? 1 : 0;
	/*
	 * A latency sample is one access in one bracket with interrupts off:
	 * bandwidth mode splits a long access into pieces between segments,
	 * a sample cannot be split, so its access is bounded instead.  A
	 * chase's sample is a batch of 8-byte hops: its access_size is the
	 * slot a hop's line lies in (chase_page: up to a 2 MiB page), not read.
	 */
	if (lat_threads && p->access_size > PL_LAT_MAX_ACCESS && p->ops[0] != PL_OP_CHASE)
		return pl_refuse(v, -EINVAL, PL_P_access_size, false,
				 "%llu: a latency sample (mode latency, probe) is one access timed with interrupts off and cannot be split: at most %llu (bandwidth mode splits longer accesses)",
				 p->access_size, PL_LAT_MAX_ACCESS);
	if (lat_threads * p->samples > PL_MAX_SAMPLE_BYTES / sizeof(u64))
		return pl_refuse(v, -EINVAL, PL_P_samples, false,
				 "samples: %llu x %llu threads exceeds %llu MiB", p->samples,
				 lat_threads, PL_MAX_SAMPLE_BYTES >> 20);
	/* each thread's region on the target it runs on */
	err = pl_check_regions(p, pl_known(f, PL_FACT_TARGET), f->target_size, 0, load ? 1 : n, v);
	if (!err && load)
		err = pl_check_regions(p, true, f->load.size, 1, n, v);
	if (err)
		return err;
	/*
	 * per-dimm names the DIMM (CXL device) of target offset o by the
	 * offset's position in one physically contiguous interleave set; a
	 * DRAM target's pages lie anywhere in physical memory (and with
	 * 3/6/12 ways even 2 MiB pages start at different positions), so
	 * no offset of it names a device (with one way every offset is the
	 * one device: allowed).  Judged last, so that every other rule of a
	 * per-dimm run gets the same verdict on DRAM as elsewhere.
	 */
	if (p->placement == PL_PLACE_DIMM && p->interleave_ways > 1 && pl_known(f, PL_FACT_LAYOUT) &&
	    (f->scattered || (load && f->load.scattered)))
		return pl_refuse(v, -EINVAL, PL_P_placement, true,
				 "per-dimm needs a physically contiguous target (fsdax, devdax): %s is DRAM, its pages scattered in physical memory, so no offset names one DIMM or device; use per-thread or global",
				 f->scattered ? "the target" : "the load target");
	return 0;
}
