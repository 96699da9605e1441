// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs.c - /sys/kernel/pmemlab: run parameters (one value per file,
 * judged on write by the core), target facts, control files and results.
 * The contract is docs/interface.md.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/cpumask.h>
#include <linux/stddef.h>
#include <asm/tsc.h>
#include "pmemlab.h"

/*
 * ---- run parameters: one file per row of core/params.def ----
 * A write is parsed and judged by the core (params.c, check.c) against
 * this machine; a refused value leaves the old one, with the reason in
 * last_error.
 */
struct pl_param_attr {
	struct kobj_attribute attr;
	int id;				/* PL_P_* */
};

static struct pl_param_attr pl_param_attrs[PL_NPARAMS];

static ssize_t param_store(struct kobject *k, struct kobj_attribute *a,
			   const char *buf, size_t count)
{
	struct pl_dev *d = pl_dev_of(k);
	int id = container_of(a, struct pl_param_attr, attr)->id;
	struct pl_verdict *v;
	struct pl_facts f;
	int err;

	v = kmalloc(sizeof(*v), GFP_KERNEL);
	mutex_lock(&d->lock);
	if (!v) {
		err = pl_fail(d, -ENOMEM, "%s: out of memory", pl_params[id].name);
	} else if (d->state == PL_RUNNING) {
		err = pl_fail(d, -EBUSY, "%s: a run is active", pl_params[id].name);
	} else {
		pl_facts(d, &f);
		err = pl_param_set(&d->cfg, id, buf, count, &f, v);
		if (err)
			pl_fail_verdict(d, v);
		else
			d->params_gen++;
	}
	mutex_unlock(&d->lock);
	kfree(v);
	return err ? err : count;
}

static ssize_t param_show(struct kobject *k, struct kobj_attribute *a, char *buf)
{
	struct pl_dev *d = pl_dev_of(k);
	int id = container_of(a, struct pl_param_attr, attr)->id;
	size_t n;

	mutex_lock(&d->lock);
	n = pl_param_show(&d->cfg, id, buf, PAGE_SIZE - 1);
	mutex_unlock(&d->lock);
	return n + sysfs_emit_at(buf, n, "\n");
}

/* ---- target facts ---- */
#define RO(_name, _mode) \
	static struct kobj_attribute pl_attr_##_name = __ATTR(_name, _mode, _name##_show, NULL)

static ssize_t version_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%s\n", PL_VERSION);
}

static ssize_t target_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%s\n", d->spec);
}

static ssize_t target_kind_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%s\n", d->t.kind == PL_TARGET_FSDAX ? "fsdax" : "dram");
}

static ssize_t target_size_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%llu\n", d->t.size);
}

static ssize_t target_node_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%d\n", d->t.node);
}

static ssize_t target_phys_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "0x%llx\n", (unsigned long long)d->t.phys);
}

static ssize_t target_page_size_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%llu\n", d->t.page_size);
}

/*
 * A DRAM target's placement: its nodes and weights as loaded, the bytes
 * found on each node, and how the pages got there; empty lines for fsdax.
 */
enum pl_place_fact { PL_PF_NODES, PL_PF_WEIGHTS, PL_PF_BYTES };

static ssize_t pl_place_show(struct pl_dev *d, char *b, enum pl_place_fact what)
{
	struct pl_buf t = { .p = b, .cap = PAGE_SIZE - 1 };

	if (d->t.kind == PL_TARGET_DRAM) {
		if (what == PL_PF_NODES)
			pl_tier_out_nodes(&t, &d->t.dram.tier);
		else if (what == PL_PF_WEIGHTS)
			pl_tier_out_weights(&t, &d->t.dram.tier);
		else
			pl_tally_out(&t, &d->t.dram.found);
	}
	return t.len + sysfs_emit_at(b, t.len, "\n");
}

static ssize_t target_nodes_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return pl_place_show(d, b, PL_PF_NODES);
}

static ssize_t target_weights_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return pl_place_show(d, b, PL_PF_WEIGHTS);
}

static ssize_t target_node_bytes_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return pl_place_show(d, b, PL_PF_BYTES);
}

static ssize_t target_placement_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%s\n", d->t.kind == PL_TARGET_DRAM ? d->t.dram.how : "");
}

static ssize_t tsc_khz_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%u\n", tsc_khz);
}

static ssize_t cpu_features_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_buf t = { .p = b, .cap = PAGE_SIZE };

	pl_out_features(&t, pl_mod.features);
	return t.len + sysfs_emit_at(b, t.len, "\n");
}

static ssize_t widths_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_buf t = { .p = b, .cap = PAGE_SIZE };

	pl_out_widths(&t, pl_mod.features);
	return t.len + sysfs_emit_at(b, t.len, "\n");
}

/* one line per op: name, then width:instruction:ok|missing-feature */
static ssize_t op_table_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	static const unsigned int w[PL_NWIDTH] = { 8, 16, 32, 64 };
	ssize_t n = 0;
	u32 miss;
	int op, i, f;

	for (op = 0; op < PL_OP_NR; op++) {
		n += sysfs_emit_at(b, n, "%s", pl_ops[op].name);
		for (i = 0; i < PL_NWIDTH; i++) {
			miss = pl_op_missing(op, w[i], pl_mod.features);
			if (miss & PL_F_NONE) {
				n += sysfs_emit_at(b, n, " %u:-:none", w[i]);
				continue;
			}
			/* the form this CPU runs (16 bytes: VEX where AVX exists) */
			n += sysfs_emit_at(b, n, " %u:%s:", w[i], miss ? pl_ops[op].insn[i] :
					   pl_op_insn(op, w[i], pl_mod.features));
			if (!miss) {
				n += sysfs_emit_at(b, n, "ok");
				continue;
			}
			for (f = 0; f < PL_F_NR; f++)
				if (miss & (1u << f)) {
					n += sysfs_emit_at(b, n, "no-%s", pl_feature_names[f]);
					break;
				}
		}
		n += sysfs_emit_at(b, n, "\n");
	}
	return n;
}

static ssize_t prefetch_control_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%s\n", pl_mod.prefetch_ok ? "msr-0x1a4" : "none");
}

static ssize_t fs_signature_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%s\n", d->t.fs_sig);
}

static ssize_t tsc_invariant_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%d\n", pl_tsc_invariant());
}

static ssize_t tsc_reliable_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%d\n", pl_tsc_reliable());
}

static ssize_t target_partitions_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);

	return sysfs_emit(b, "%u\n", d->t.nparts);
}

RO(version, 0444);
RO(tsc_invariant, 0444);
RO(tsc_reliable, 0444);
RO(target_partitions, 0444);
RO(target, 0444);
RO(target_kind, 0444);
RO(target_size, 0444);
RO(target_node, 0444);
RO(target_phys, 0400);
RO(target_page_size, 0444);
RO(target_nodes, 0444);
RO(target_weights, 0444);
RO(target_node_bytes, 0444);
RO(target_placement, 0444);
RO(tsc_khz, 0444);
RO(cpu_features, 0444);
RO(widths, 0444);
RO(op_table, 0444);
RO(prefetch_control, 0444);
RO(fs_signature, 0444);

/* ---- control ---- */
static int pl_parse_one(struct pl_dev *d, const char *buf, size_t count, const char *name)
{
	bool v;

	if (kstrtobool(buf, &v) || !v || count > 3)
		return pl_fail(d, -EINVAL, "%s: write 1", name);
	return 0;
}

static ssize_t run_store(struct kobject *k, struct kobj_attribute *a,
			 const char *buf, size_t count)
{
	struct pl_dev *d = pl_dev_of(k);
	u64 now = pl_rdtsc();		/* `run`: the run's setup starts (setup_ticks) */
	int err;

	mutex_lock(&pl_mod.lock);
	mutex_lock(&d->lock);
	err = pl_parse_one(d, buf, count, "run");
	if (!err)
		err = pl_run_start(d, now);
	mutex_unlock(&d->lock);
	mutex_unlock(&pl_mod.lock);
	if (!err)
		pl_state_notify(d);	/* running */
	return err ? err : count;
}

/* judge the parameters as run does, start nothing */
static ssize_t check_store(struct kobject *k, struct kobj_attribute *a,
			   const char *buf, size_t count)
{
	struct pl_dev *d = pl_dev_of(k);
	struct pl_plan plan;
	int err;

	mutex_lock(&pl_mod.lock);
	mutex_lock(&d->lock);
	err = pl_parse_one(d, buf, count, "check");
	if (!err)
		err = pl_run_check(d, &plan);
	mutex_unlock(&d->lock);
	mutex_unlock(&pl_mod.lock);
	return err ? err : count;
}

static ssize_t abort_store(struct kobject *k, struct kobj_attribute *a,
			   const char *buf, size_t count)
{
	struct pl_dev *d = pl_dev_of(k);
	int err;

	mutex_lock(&d->lock);
	err = pl_parse_one(d, buf, count, "abort");
	if (!err)
		pl_run_abort(d);
	mutex_unlock(&d->lock);
	return err ? err : count;
}

/*
 * A file of one value of the target, read under its lock: _name_show and
 * its attribute pl_attr__name, the value an expression of d for _fmt.
 */
#define RO_LOCKED(_name, _fmt, ...)						\
	static ssize_t _name##_show(struct kobject *k, struct kobj_attribute *a, char *b) \
	{									\
		struct pl_dev *d = pl_dev_of(k);				\
		ssize_t n;							\
										\
		mutex_lock(&d->lock);						\
		n = sysfs_emit(b, _fmt "\n", __VA_ARGS__);			\
		mutex_unlock(&d->lock);						\
		return n;							\
	}									\
	RO(_name, 0444)

/* "error:<reason>" in state error */
RO_LOCKED(state, "%s%s", d->state == PL_ERROR ? "error:" : "",
	  d->state == PL_ERROR ? d->reason : pl_state_name(d->state));
RO_LOCKED(last_error, "%s", d->last_error);
RO_LOCKED(run_id, "%llu", d->run_id);
/* an opaque token: another value when a parameter write was taken, or the target is another */
RO_LOCKED(params_gen, "%llu", d->params_gen);

static struct kobj_attribute pl_attr_run = __ATTR(run, 0200, NULL, run_store);
static struct kobj_attribute pl_attr_check = __ATTR(check, 0200, NULL, check_store);
static struct kobj_attribute pl_attr_abort = __ATTR(abort, 0200, NULL, abort_store);

/* ---- results: bin attributes, restartable at any offset ---- */
enum pl_bin { PL_BIN_RESULT, PL_BIN_HISTO, PL_BIN_SAMPLES };

/*
 * The buffer and its length are read under the target's lock: a run that starts
 * frees them (pl_run_start -> pl_results_free) under the same lock.
 */
static ssize_t pl_bin_read(struct pl_dev *d, char *dst, loff_t off, size_t count, int which)
{
	const void *src;
	size_t len;
	ssize_t n;

	mutex_lock(&d->lock);
	switch (which) {
	case PL_BIN_RESULT:
		src = d->result;
		len = d->result_len;
		break;
	case PL_BIN_HISTO:
		src = d->histo;
		len = d->histo_len;
		break;
	default:
		src = d->samples;
		len = d->samples_len;
		break;
	}
	n = src ? memory_read_from_buffer(dst, count, &off, src, len) : 0;
	mutex_unlock(&d->lock);
	return n;
}

static ssize_t result_read(struct file *f, struct kobject *k,
			   PL_BIN_CONST struct bin_attribute *a, char *buf,
			   loff_t off, size_t count)
{
	struct pl_dev *d = pl_dev_of(k);

	return pl_bin_read(d, buf, off, count, PL_BIN_RESULT);
}

static ssize_t histogram_read(struct file *f, struct kobject *k,
			      PL_BIN_CONST struct bin_attribute *a, char *buf,
			      loff_t off, size_t count)
{
	struct pl_dev *d = pl_dev_of(k);

	return pl_bin_read(d, buf, off, count, PL_BIN_HISTO);
}

static ssize_t samples_read(struct file *f, struct kobject *k,
			    PL_BIN_CONST struct bin_attribute *a, char *buf,
			    loff_t off, size_t count)
{
	struct pl_dev *d = pl_dev_of(k);

	return pl_bin_read(d, buf, off, count, PL_BIN_SAMPLES);
}

static struct bin_attribute pl_bin_result = {
	.attr = { .name = "result", .mode = 0444 },
	.PL_BIN_READ = result_read,
};

static struct bin_attribute pl_bin_histogram = {
	.attr = { .name = "histogram", .mode = 0444 },
	.PL_BIN_READ = histogram_read,
};

static struct bin_attribute pl_bin_samples = {
	.attr = { .name = "raw_samples", .mode = 0444 },
	.PL_BIN_READ = samples_read,
};

static PL_BIN_ARRAY pl_bin_attrs[] = {
	&pl_bin_result, &pl_bin_histogram, &pl_bin_samples, NULL,
};

/*
 * ---- results/: the scalars of the `all` row, one per file ----
 * Empty when there is no result (before the first run, while a run is
 * active) and for lat_* fields of runs without a latency thread.
 */
struct pl_rattr {
	struct kobj_attribute attr;
	size_t off;			/* in struct pl_scalars */
	bool milli;			/* three decimals */
	bool sgn;			/* an s64 (lat_mean) */
	bool lat;			/* only with a latency thread */
	bool bw;			/* only with a bandwidth thread */
	bool src;			/* ceiling_src: the word */
	bool timed;			/* setup_*, teardown_*, total_* */
};

static ssize_t pl_rattr_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	struct pl_dev *d = pl_dev_of(k);
	const struct pl_rattr *ra = container_of(a, struct pl_rattr, attr);
	ssize_t n;
	u64 v;

	mutex_lock(&d->lock);
	if (!d->agg_valid || (ra->lat && !d->agg.lat) || (ra->bw && !d->agg.ceil) ||
	    (ra->timed && !d->agg.timed)) {
		n = sysfs_emit(b, "\n");
	} else {
		v = *(const u64 *)((const char *)&d->agg + ra->off);
		if (ra->src)
			n = sysfs_emit(b, "%s\n", pl_ceil_src_name(v));
		else if (ra->sgn && (s64)v < 0)
			n = sysfs_emit(b, "-%llu.%03llu\n", -v / 1000, -v % 1000);
		else if (ra->milli)
			n = sysfs_emit(b, "%llu.%03llu\n", v / 1000, v % 1000);
		else
			n = sysfs_emit(b, "%llu\n", v);
	}
	mutex_unlock(&d->lock);
	return n;
}

#define R(_name, _field, _milli, _lat) {					\
	.attr = __ATTR(_name, 0444, pl_rattr_show, NULL),			\
	.off = offsetof(struct pl_scalars, _field), .milli = _milli, .lat = _lat }
#define RS(_name, _field) {						\
	.attr = __ATTR(_name, 0444, pl_rattr_show, NULL),			\
	.off = offsetof(struct pl_scalars, _field), .milli = true, .sgn = true, .lat = true }
#define RT(_name, _field) {							\
	.attr = __ATTR(_name, 0444, pl_rattr_show, NULL),			\
	.off = offsetof(struct pl_scalars, _field), .timed = true }
#define RBW(_name, _field) {							\
	.attr = __ATTR(_name, 0444, pl_rattr_show, NULL),			\
	.off = offsetof(struct pl_scalars, _field), .milli = true, .bw = true }

static struct pl_rattr pl_rattrs[] = {
	R(ops, ops, false, false),
	R(reads, reads, false, false),
	R(writes, writes, false, false),
	R(bytes, bytes, false, false),
	R(ticks, ticks, false, false),
	R(ns, ns, false, false),
	R(bw_mbps, bw_milli, true, false),
	RBW(ceiling_mbps, ceil_milli),
	{ .attr = __ATTR(ceiling_src, 0444, pl_rattr_show, NULL),
	  .off = offsetof(struct pl_scalars, ceil_src), .bw = true, .src = true },
	R(segments, segments, false, false),
	R(gap_ticks, gap_ticks, false, false),
	R(start_lag_ticks, start_lag, false, false),
	R(end_lag_ticks, end_lag, false, false),
	RT(setup_ticks, setup),
	RT(setup_ns, setup_ns),
	RT(teardown_ticks, teardown),
	RT(teardown_ns, teardown_ns),
	RT(total_ticks, total),
	RT(total_ns, total_ns),
	R(irqoff_pct, irqoff_milli, true, false),
	R(irqoff_max_ticks, irqoff_max, false, false),
	R(lat_overhead_ticks, lat_overhead, false, true),
	R(lat_n, lat_n, false, true),
	R(lat_min, lat_min, false, true),
	RS(lat_mean, lat_mean_milli),
	R(lat_stddev, lat_sd_milli, true, true),
	R(lat_p50, lat_p[0], false, true),
	R(lat_p90, lat_p[1], false, true),
	R(lat_p99, lat_p[2], false, true),
	R(lat_p999, lat_p[3], false, true),
	R(lat_p9999, lat_p[4], false, true),
	R(lat_max, lat_max, false, true),
};

static struct attribute *pl_rattr_list[ARRAY_SIZE(pl_rattrs) + 1];

static const struct attribute_group pl_results_group = {
	.name = "results",
	.attrs = pl_rattr_list,
};

/*
 * ---- the groups of a target, one list: the module's own files (every
 * directory has them; a top level without target= has only them), the
 * target's, its results ----
 */
static struct attribute *pl_mod_attrs[] = {
	&pl_attr_version.attr, &pl_attr_tsc_khz.attr, &pl_attr_cpu_features.attr,
	&pl_attr_widths.attr, &pl_attr_op_table.attr, &pl_attr_prefetch_control.attr,
	&pl_attr_tsc_invariant.attr, &pl_attr_tsc_reliable.attr, &pl_attr_last_error.attr,
	NULL,
};

static const struct attribute_group pl_mod_group = {
	.attrs = pl_mod_attrs,
};

static struct kobj_attribute *pl_fixed_attrs[] = {
	&pl_attr_target, &pl_attr_target_kind, &pl_attr_target_size,
	&pl_attr_target_node, &pl_attr_target_phys, &pl_attr_target_page_size,
	&pl_attr_target_nodes, &pl_attr_target_weights, &pl_attr_target_node_bytes,
	&pl_attr_target_placement, &pl_attr_fs_signature, &pl_attr_target_partitions,
	&pl_attr_run, &pl_attr_check, &pl_attr_abort, &pl_attr_state, &pl_attr_run_id,
	&pl_attr_params_gen,
};

static struct attribute *pl_attrs[PL_NPARAMS + ARRAY_SIZE(pl_fixed_attrs) + 1];

static const struct attribute_group pl_target_group = {
	.attrs = pl_attrs,
	.PL_BIN_ATTRS = pl_bin_attrs,
};

const struct attribute_group *pl_dev_groups[] = {
	&pl_mod_group, &pl_target_group, &pl_results_group, NULL,
};

const struct attribute_group *pl_bare_groups[] = {
	&pl_mod_group, NULL,
};

static void pl_dev_release(struct kobject *k)
{
	struct pl_dev *d = pl_dev_of(k);

	sysfs_put(d->state_kn);
	kfree(d->spec);
	kvfree(d->ceil);
	kfree(d);
}

struct kobj_type pl_dev_ktype = {
	.release = pl_dev_release,
	.sysfs_ops = &kobj_sysfs_ops,
};

/* the attribute lists, once at load */
void pl_sysfs_init(void)
{
	unsigned int i, n = 0;

	for (i = 0; i < PL_NPARAMS; i++) {
		pl_param_attrs[i].id = i;
		pl_param_attrs[i].attr.attr.name = pl_params[i].name;
		pl_param_attrs[i].attr.attr.mode = 0644;
		pl_param_attrs[i].attr.show = param_show;
		pl_param_attrs[i].attr.store = param_store;
		pl_attrs[n++] = &pl_param_attrs[i].attr.attr;
	}
	for (i = 0; i < ARRAY_SIZE(pl_fixed_attrs); i++)
		pl_attrs[n++] = &pl_fixed_attrs[i]->attr;
	pl_attrs[n] = NULL;
	for (i = 0; i < ARRAY_SIZE(pl_rattrs); i++)
		pl_rattr_list[i] = &pl_rattrs[i].attr.attr;
	pl_rattr_list[i] = NULL;
}
