// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs.c - /sys/kernel/pmemlab: run parameters (one value per file,
 * validated on write), target facts, control files and results.
 * The contract is docs/interface.md.
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/cpumask.h>
#include <linux/log2.h>
#include <linux/stddef.h>
#include <asm/tsc.h>
#include "pmemlab.h"

enum pl_ptype { PT_NUM, PT_SIZE, PT_ENUM, PT_OPS, PT_CPUS };

struct pl_param {
	struct kobj_attribute attr;
	int type;			/* enum pl_ptype */
	size_t off;			/* in struct pl_config */
	u64 min, max, def;
	const char *const *names;	/* PT_ENUM, NULL-terminated */
	int (*check)(const struct pl_param *p, u64 v);
};

static const char *const mode_names[] = { "bandwidth", "latency", NULL };
static const char *const pattern_names[] = { "seq", "rand", "stride", "hotspot", NULL };
static const char *const fence_names[] = { "none", "sfence", "mfence", NULL };
static const char *const flush_names[] = { "line", "access", NULL };
static const char *const place_names[] = { "global", "per-thread", "per-dimm", NULL };
static const char *const onoff_names[] = { "on", "off", NULL };

/* mode, pattern, ... are stored as indexes; keep enums and names in step */
static_assert(PL_MODE_BW == 0 && PL_MODE_LAT == 1);
static_assert(PL_PAT_SEQ == 0 && PL_PAT_HOTSPOT == 3);
static_assert(PL_FENCE_MFENCE == 2 && PL_FLUSH_ACCESS == 1);
static_assert(PL_PLACE_GLOBAL == 0 && PL_PLACE_DIMM == 2);

int pl_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vscnprintf(pl.last_error, sizeof(pl.last_error), fmt, ap);
	va_end(ap);
	pr_warn_ratelimited("%s\n", pl.last_error);
	return err;
}

static u64 *pl_field(struct pl_config *c, const struct pl_param *p)
{
	return (u64 *)((char *)c + p->off);
}

/* ---- extra rules of single parameters ---- */
static int chk_width(const struct pl_param *p, u64 v)
{
	if (v && v != 8 && v != 16 && v != 32 && v != 64)
		return pl_fail(-EINVAL, "width: %llu is not 0, 8, 16, 32 or 64", v);
	return 0;
}

static int chk_access(const struct pl_param *p, u64 v)
{
	if (v < 64 ? !is_power_of_2(v) : v % 64)
		return pl_fail(-EINVAL,
			       "access_size: %llu must be 8, 16, 32 or a multiple of 64", v);
	return 0;
}

static int chk_mult8(const struct pl_param *p, u64 v)
{
	if (v % 8)
		return pl_fail(-EINVAL, "%s: %llu is not a multiple of 8",
			       p->attr.attr.name, v);
	return 0;
}

static int chk_mult64(const struct pl_param *p, u64 v)
{
	if (v % 64)
		return pl_fail(-EINVAL, "%s: %llu is not a multiple of 64",
			       p->attr.attr.name, v);
	return 0;
}

static int chk_window(const struct pl_param *p, u64 v)
{
	if (v % 4096)
		return pl_fail(-EINVAL, "window_offset: %llu is not a multiple of 4096", v);
	if (v >= pl.t.size)
		return pl_fail(-ERANGE, "window_offset: %llu is past the target (%llu bytes)",
			       v, pl.t.size);
	return 0;
}

static int chk_ws(const struct pl_param *p, u64 v)
{
	if (v > pl.t.size)
		return pl_fail(-ERANGE, "working_set: %llu exceeds the target (%llu bytes)",
			       v, pl.t.size);
	return chk_mult8(p, v);
}

static int chk_threads(const struct pl_param *p, u64 v)
{
	if (v > num_online_cpus())
		return pl_fail(-ERANGE, "threads: %llu exceeds the %u online CPUs",
			       v, num_online_cpus());
	return 0;
}

static int chk_prefetch(const struct pl_param *p, u64 v)
{
	if (v && !pl.prefetch_ok)
		return pl_fail(-EOPNOTSUPP,
			       "prefetch: this CPU has no documented prefetcher control the module can use");
	return 0;
}

static ssize_t pl_param_show(struct kobject *k, struct kobj_attribute *a, char *buf);
static ssize_t pl_param_store(struct kobject *k, struct kobj_attribute *a,
			      const char *buf, size_t count);

#define P(_name, _type, _min, _max, _def, _names, _check) {			\
	.attr = __ATTR(_name, 0644, pl_param_show, pl_param_store),		\
	.type = _type, .off = offsetof(struct pl_config, _name),		\
	.min = _min, .max = _max, .def = _def, .names = _names, .check = _check }

#define T40	(1ULL << 40)

static struct pl_param pl_params[] = {
	P(mode, PT_ENUM, 0, 1, PL_MODE_BW, mode_names, NULL),
	P(nops, PT_OPS, 0, 0, 0, NULL, NULL),		/* shown as "op" */
	P(read_pct, PT_NUM, 0, 100, 0, NULL, NULL),
	P(width, PT_NUM, 0, 64, 0, NULL, chk_width),
	P(access_size, PT_SIZE, 8, PL_MAX_ACCESS, 64, NULL, chk_access),
	P(stride, PT_SIZE, 0, T40, 0, NULL, chk_mult8),
	P(window_offset, PT_SIZE, 0, T40 << 8, 0, NULL, chk_window),
	P(working_set, PT_SIZE, 0, T40 << 8, 0, NULL, chk_ws),
	P(pattern, PT_ENUM, 0, 3, PL_PAT_SEQ, pattern_names, NULL),
	P(hotspot_size, PT_SIZE, 8, T40, 4096, NULL, chk_mult8),
	P(passes, PT_NUM, 1, 4096, 1, NULL, NULL),
	P(pass_offset, PT_SIZE, 0, T40, 0, NULL, chk_mult8),
	P(fence, PT_ENUM, 0, 2, PL_FENCE_NONE, fence_names, NULL),
	P(fence_interval, PT_SIZE, 0, T40, 0, NULL, chk_mult64),
	P(flush, PT_ENUM, 0, 1, PL_FLUSH_LINE, flush_names, NULL),
	P(threads, PT_NUM, 1, PL_MAX_THREADS, 1, NULL, chk_threads),
	P(cpus, PT_CPUS, 0, 0, 0, NULL, NULL),
	P(placement, PT_ENUM, 0, 2, PL_PLACE_THREAD, place_names, NULL),
	P(interleave_ways, PT_NUM, 1, 64, 1, NULL, NULL),
	P(interleave_gran, PT_SIZE, 64, 1ULL << 30, 4096, NULL, chk_mult64),
	P(dimms_per_thread, PT_NUM, 1, 64, 1, NULL, NULL),
	P(duration_ms, PT_NUM, 1, 3600000, 1000, NULL, NULL),
	P(count, PT_NUM, 0, T40, 0, NULL, NULL),
	P(delay_ticks, PT_NUM, 0, 1ULL << 36, 0, NULL, NULL),
	P(probe, PT_NUM, 0, 1, 0, NULL, NULL),
	P(seed, PT_NUM, 0, ~0ULL, 1, NULL, NULL),
	P(prefetch, PT_ENUM, 0, 1, 0, onoff_names, chk_prefetch),
	P(cold, PT_NUM, 0, 1, 0, NULL, NULL),
	P(warm, PT_NUM, 0, 1, 0, NULL, NULL),
	P(samples, PT_NUM, 0, PL_MAX_SAMPLES, 0, NULL, NULL),
	P(segment_ms, PT_NUM, 1, 200, 5, NULL, NULL),
};

void pl_config_defaults(struct pl_config *c)
{
	unsigned int i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < ARRAY_SIZE(pl_params); i++)
		if (pl_params[i].type != PT_OPS && pl_params[i].type != PT_CPUS)
			*pl_field(c, &pl_params[i]) = pl_params[i].def;
	c->ops[0] = PL_OP_LOAD;
	c->nops = 1;
	cpumask_clear(&c->cpus);
}

/* ---- parsing ---- */
static int pl_parse_num(const struct pl_param *p, const char *s, u64 *v)
{
	const char *name = p->attr.attr.name;
	char num[32];
	size_t len = strlen(s);
	unsigned int shift = 0, base;

	if (len >= sizeof(num))
		return pl_fail(-EINVAL, "%s: value too long", name);
	memcpy(num, s, len + 1);
	if (p->type == PT_SIZE && len > 1) {
		switch (num[len - 1]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		}
		if (shift)
			num[len - 1] = '\0';
	}
	/* decimal, or hex with 0x; never octal (a leading 0 means nothing) */
	base = (num[0] == '0' && (num[1] == 'x' || num[1] == 'X')) ? 16 : 10;
	if (num[0] == '-' || num[0] == '+' || kstrtoull(num, base, v))
		return pl_fail(-EINVAL, "%s: '%s' is not a non-negative integer%s", name, s,
			       p->type == PT_SIZE ? " (K/M/G/T suffixes allowed)" : "");
	if (*v > (~0ULL >> shift))
		return pl_fail(-EINVAL, "%s: '%s' is too large", name, s);
	*v <<= shift;
	if (*v < p->min || *v > p->max)
		return pl_fail(-EINVAL, "%s: %llu is outside %llu..%llu", name, *v, p->min, p->max);
	return p->check ? p->check(p, *v) : 0;
}

static int pl_parse_enum(const struct pl_param *p, const char *s, u64 *v)
{
	u64 i;

	for (i = 0; p->names[i]; i++)
		if (!strcmp(s, p->names[i])) {
			*v = i;
			return p->check ? p->check(p, i) : 0;
		}
	return pl_fail(-EINVAL, "%s: '%s' is not one of the allowed names (see docs/interface.md)",
		       p->attr.attr.name, s);
}

static int pl_parse_ops(struct pl_config *c, const char *s)
{
	u8 ops[PL_MAX_THREADS];
	unsigned int n = 0;
	const char *tok = s, *end;
	size_t len;
	int op;

	for (;;) {
		end = strchrnul(tok, ',');
		len = end - tok;
		op = len ? pl_op_lookup(tok, len) : -1;
		if (op < 0)
			return pl_fail(-EINVAL, "op: '%.*s' is not an op (load ntload store ntstore store+clwb store+clflushopt store+clflush)",
				       (int)min_t(size_t, len, 32), tok);
		if (n == PL_MAX_THREADS)
			return pl_fail(-EINVAL, "op: more than %d entries", PL_MAX_THREADS);
		ops[n++] = op;
		if (!*end)
			break;
		tok = end + 1;
	}
	memcpy(c->ops, ops, n);
	c->nops = n;
	return 0;
}

static int pl_parse_cpus(struct pl_config *c, const char *s)
{
	cpumask_var_t m;
	int err = 0;

	if (!*s) {
		cpumask_clear(&c->cpus);
		return 0;
	}
	if (!alloc_cpumask_var(&m, GFP_KERNEL))
		return pl_fail(-ENOMEM, "cpus: out of memory");
	if (cpulist_parse(s, m))
		err = pl_fail(-EINVAL, "cpus: '%.32s' is not a CPU list like 0-3,6", s);
	else if (!cpumask_subset(m, cpu_possible_mask))
		err = pl_fail(-EINVAL, "cpus: '%.32s' names CPUs that do not exist", s);
	else
		cpumask_copy(&c->cpus, m);
	free_cpumask_var(m);
	return err;
}

static int pl_param_set(const struct pl_param *p, const char *buf, size_t count)
{
	const char *name = p->attr.attr.name;
	char *copy, *s;
	u64 v = 0;
	int err;

	copy = kstrndup(buf, count, GFP_KERNEL);
	if (!copy)
		return pl_fail(-ENOMEM, "%s: out of memory", name);
	s = strim(copy);
	if (memchr(buf, '\0', count)) {
		err = pl_fail(-EINVAL, "%s: value contains a NUL byte", name);
		goto out;
	}
	if (!*s && p->type != PT_CPUS) {
		err = pl_fail(-EINVAL, "%s: empty value", name);
		goto out;
	}
	switch (p->type) {
	case PT_OPS:
		err = pl_parse_ops(&pl.cfg, s);
		break;
	case PT_CPUS:
		err = pl_parse_cpus(&pl.cfg, s);
		break;
	case PT_ENUM:
		err = pl_parse_enum(p, s, &v);
		break;
	default:
		err = pl_parse_num(p, s, &v);
		break;
	}
	if (!err && p->type != PT_OPS && p->type != PT_CPUS)
		*pl_field(&pl.cfg, p) = v;
out:
	kfree(copy);
	return err;
}

static ssize_t pl_param_store(struct kobject *k, struct kobj_attribute *a,
			      const char *buf, size_t count)
{
	const struct pl_param *p = container_of(a, struct pl_param, attr);
	int err;

	mutex_lock(&pl.lock);
	if (pl.state == PL_RUNNING)
		err = pl_fail(-EBUSY, "%s: a run is active", a->attr.name);
	else
		err = pl_param_set(p, buf, count);
	mutex_unlock(&pl.lock);
	return err ? err : count;
}

static ssize_t pl_param_show(struct kobject *k, struct kobj_attribute *a, char *buf)
{
	const struct pl_param *p = container_of(a, struct pl_param, attr);
	unsigned int i;
	ssize_t n = 0;
	u64 v;

	mutex_lock(&pl.lock);
	switch (p->type) {
	case PT_OPS:
		for (i = 0; i < pl.cfg.nops; i++)
			n += sysfs_emit_at(buf, n, "%s%s", i ? "," : "",
					   pl_ops[pl.cfg.ops[i]].name);
		n += sysfs_emit_at(buf, n, "\n");
		break;
	case PT_CPUS:
		n = sysfs_emit(buf, "%*pbl\n", cpumask_pr_args(&pl.cfg.cpus));
		break;
	case PT_ENUM:
		v = *pl_field(&pl.cfg, p);
		n = sysfs_emit(buf, "%s\n", p->names[v]);
		break;
	default:
		n = sysfs_emit(buf, "%llu\n", *pl_field(&pl.cfg, p));
		break;
	}
	mutex_unlock(&pl.lock);
	return n;
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
	return sysfs_emit(b, "%s\n", target);
}

static ssize_t target_kind_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%s\n", pl.t.kind == PL_TARGET_FSDAX ? "fsdax" : "dram");
}

static ssize_t target_size_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%llu\n", pl.t.size);
}

static ssize_t target_node_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%d\n", pl.t.node);
}

static ssize_t target_phys_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "0x%llx\n", (unsigned long long)pl.t.phys);
}

static ssize_t target_page_size_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%llu\n", pl.t.page_size);
}

static ssize_t tsc_khz_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%u\n", tsc_khz);
}

static ssize_t cpu_features_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	ssize_t n = 0;
	int i;

	for (i = 0; i < PL_F_NR; i++)
		if (pl.features & (1u << i))
			n += sysfs_emit_at(b, n, "%s%s", n ? " " : "", pl_feature_names[i]);
	return n + sysfs_emit_at(b, n, "\n");
}

static ssize_t widths_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	static const unsigned int w[PL_NWIDTH] = { 8, 16, 32, 64 };
	ssize_t n = 0;
	int i;

	for (i = 0; i < PL_NWIDTH; i++)
		if (!pl_op_missing(PL_OP_LOAD, w[i], pl.features) &&
		    !pl_op_missing(PL_OP_STORE, w[i], pl.features))
			n += sysfs_emit_at(b, n, "%s%u", n ? " " : "", w[i]);
	return n + sysfs_emit_at(b, n, "\n");
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
			miss = pl_op_missing(op, w[i], pl.features);
			if (miss & PL_F_NONE) {
				n += sysfs_emit_at(b, n, " %u:-:none", w[i]);
				continue;
			}
			n += sysfs_emit_at(b, n, " %u:%s:", w[i], pl_ops[op].insn[i]);
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
	return sysfs_emit(b, "%s\n", pl.prefetch_ok ? "msr-0x1a4" : "none");
}

static ssize_t fs_signature_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	return sysfs_emit(b, "%s\n", pl.t.fs_sig);
}

RO(version, 0444);
RO(target, 0444);
RO(target_kind, 0444);
RO(target_size, 0444);
RO(target_node, 0444);
RO(target_phys, 0400);
RO(target_page_size, 0444);
RO(tsc_khz, 0444);
RO(cpu_features, 0444);
RO(widths, 0444);
RO(op_table, 0444);
RO(prefetch_control, 0444);
RO(fs_signature, 0444);

/* ---- control ---- */
static int pl_parse_one(const char *buf, size_t count, const char *name)
{
	bool v;

	if (kstrtobool(buf, &v) || !v || count > 3)
		return pl_fail(-EINVAL, "%s: write 1", name);
	return 0;
}

static ssize_t run_store(struct kobject *k, struct kobj_attribute *a,
			 const char *buf, size_t count)
{
	int err;

	mutex_lock(&pl.lock);
	err = pl_parse_one(buf, count, "run");
	if (!err)
		err = pl_run_start();
	mutex_unlock(&pl.lock);
	return err ? err : count;
}

static ssize_t abort_store(struct kobject *k, struct kobj_attribute *a,
			   const char *buf, size_t count)
{
	int err;

	mutex_lock(&pl.lock);
	err = pl_parse_one(buf, count, "abort");
	if (!err)
		pl_run_abort();
	mutex_unlock(&pl.lock);
	return err ? err : count;
}

static ssize_t state_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	ssize_t n;

	mutex_lock(&pl.lock);
	if (pl.state == PL_ERROR)
		n = sysfs_emit(b, "error:%s\n", pl.reason);
	else
		n = sysfs_emit(b, "%s\n", pl_state_name(pl.state));
	mutex_unlock(&pl.lock);
	return n;
}

static ssize_t last_error_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	ssize_t n;

	mutex_lock(&pl.lock);
	n = sysfs_emit(b, "%s\n", pl.last_error);
	mutex_unlock(&pl.lock);
	return n;
}

static ssize_t run_id_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	ssize_t n;

	mutex_lock(&pl.lock);
	n = sysfs_emit(b, "%llu\n", pl.run_id);
	mutex_unlock(&pl.lock);
	return n;
}

static struct kobj_attribute pl_attr_run = __ATTR(run, 0200, NULL, run_store);
static struct kobj_attribute pl_attr_abort = __ATTR(abort, 0200, NULL, abort_store);
RO(state, 0444);
RO(last_error, 0444);
RO(run_id, 0444);

/* ---- results: bin attributes, restartable at any offset ---- */
enum pl_bin { PL_BIN_RESULT, PL_BIN_HISTO, PL_BIN_SAMPLES };

/*
 * The buffer and its length are read under pl.lock: a run that starts
 * frees them (pl_run_start -> pl_results_free) under the same lock.
 */
static ssize_t pl_bin_read(char *dst, loff_t off, size_t count, int which)
{
	const void *src;
	size_t len;
	ssize_t n;

	mutex_lock(&pl.lock);
	switch (which) {
	case PL_BIN_RESULT:
		src = pl.result;
		len = pl.result_len;
		break;
	case PL_BIN_HISTO:
		src = pl.histo;
		len = pl.histo_len;
		break;
	default:
		src = pl.samples;
		len = pl.samples_len;
		break;
	}
	n = src ? memory_read_from_buffer(dst, count, &off, src, len) : 0;
	mutex_unlock(&pl.lock);
	return n;
}

static ssize_t result_read(struct file *f, struct kobject *k,
			   PL_BIN_CONST struct bin_attribute *a, char *buf,
			   loff_t off, size_t count)
{
	return pl_bin_read(buf, off, count, PL_BIN_RESULT);
}

static ssize_t histogram_read(struct file *f, struct kobject *k,
			      PL_BIN_CONST struct bin_attribute *a, char *buf,
			      loff_t off, size_t count)
{
	return pl_bin_read(buf, off, count, PL_BIN_HISTO);
}

static ssize_t samples_read(struct file *f, struct kobject *k,
			    PL_BIN_CONST struct bin_attribute *a, char *buf,
			    loff_t off, size_t count)
{
	return pl_bin_read(buf, off, count, PL_BIN_SAMPLES);
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
	bool lat;			/* only with a latency thread */
};

static ssize_t pl_rattr_show(struct kobject *k, struct kobj_attribute *a, char *b)
{
	const struct pl_rattr *ra = container_of(a, struct pl_rattr, attr);
	ssize_t n;
	u64 v;

	mutex_lock(&pl.lock);
	if (!pl.agg_valid || (ra->lat && !pl.agg.lat)) {
		n = sysfs_emit(b, "\n");
	} else {
		v = *(const u64 *)((const char *)&pl.agg + ra->off);
		if (ra->milli)
			n = sysfs_emit(b, "%llu.%03llu\n", v / 1000, v % 1000);
		else
			n = sysfs_emit(b, "%llu\n", v);
	}
	mutex_unlock(&pl.lock);
	return n;
}

#define R(_name, _field, _milli, _lat) {					\
	.attr = __ATTR(_name, 0444, pl_rattr_show, NULL),			\
	.off = offsetof(struct pl_scalars, _field), .milli = _milli, .lat = _lat }

static struct pl_rattr pl_rattrs[] = {
	R(ops, ops, false, false),
	R(reads, reads, false, false),
	R(writes, writes, false, false),
	R(bytes, bytes, false, false),
	R(ticks, ticks, false, false),
	R(ns, ns, false, false),
	R(bw_mbps, bw_milli, true, false),
	R(segments, segments, false, false),
	R(gap_ticks, gap_ticks, false, false),
	R(irqoff_pct, irqoff_milli, true, false),
	R(lat_overhead_ticks, lat_overhead, false, true),
	R(lat_n, lat_n, false, true),
	R(lat_min, lat_min, false, true),
	R(lat_mean, lat_mean_milli, true, true),
	R(lat_stddev, lat_sd_milli, true, true),
	R(lat_p50, lat_p[0], false, true),
	R(lat_p90, lat_p[1], false, true),
	R(lat_p99, lat_p[2], false, true),
	R(lat_p999, lat_p[3], false, true),
	R(lat_p9999, lat_p[4], false, true),
	R(lat_max, lat_max, false, true),
};

static struct attribute *pl_rattr_list[ARRAY_SIZE(pl_rattrs) + 1];

static struct attribute_group pl_results_group = {
	.name = "results",
	.attrs = pl_rattr_list,
};

static struct kobj_attribute *pl_fixed_attrs[] = {
	&pl_attr_version, &pl_attr_target, &pl_attr_target_kind, &pl_attr_target_size,
	&pl_attr_target_node, &pl_attr_target_phys, &pl_attr_target_page_size,
	&pl_attr_tsc_khz, &pl_attr_cpu_features, &pl_attr_widths, &pl_attr_op_table,
	&pl_attr_prefetch_control, &pl_attr_fs_signature,
	&pl_attr_run, &pl_attr_abort, &pl_attr_state, &pl_attr_last_error, &pl_attr_run_id,
};

static struct attribute *pl_attrs[ARRAY_SIZE(pl_params) + ARRAY_SIZE(pl_fixed_attrs) + 1];

static struct attribute_group pl_group = {
	.attrs = pl_attrs,
	.PL_BIN_ATTRS = pl_bin_attrs,
};

int pl_sysfs_init(void)
{
	unsigned int i, n = 0;
	int err;

	/* the op list is stored in ops[]/nops but its file is called "op" */
	for (i = 0; i < ARRAY_SIZE(pl_params); i++) {
		if (pl_params[i].type == PT_OPS)
			pl_params[i].attr.attr.name = "op";
		pl_attrs[n++] = &pl_params[i].attr.attr;
	}
	for (i = 0; i < ARRAY_SIZE(pl_fixed_attrs); i++)
		pl_attrs[n++] = &pl_fixed_attrs[i]->attr;
	pl_attrs[n] = NULL;
	for (i = 0; i < ARRAY_SIZE(pl_rattrs); i++)
		pl_rattr_list[i] = &pl_rattrs[i].attr.attr;
	pl_rattr_list[i] = NULL;

	pl.kobj = kobject_create_and_add("pmemlab", kernel_kobj);
	if (!pl.kobj)
		return -ENOMEM;
	err = sysfs_create_group(pl.kobj, &pl_group);
	if (!err) {
		err = sysfs_create_group(pl.kobj, &pl_results_group);
		if (err)
			sysfs_remove_group(pl.kobj, &pl_group);
	}
	if (!err) {
		err = sysfs_create_group(pl.kobj, &pl_guard_group);
		if (err) {
			sysfs_remove_group(pl.kobj, &pl_results_group);
			sysfs_remove_group(pl.kobj, &pl_group);
		}
	}
	if (err) {
		kobject_put(pl.kobj);
		pl.kobj = NULL;
	}
	return err;
}

void pl_sysfs_exit(void)
{
	if (!pl.kobj)
		return;
	sysfs_remove_group(pl.kobj, &pl_guard_group);
	sysfs_remove_group(pl.kobj, &pl_results_group);
	sysfs_remove_group(pl.kobj, &pl_group);
	kobject_put(pl.kobj);
	pl.kobj = NULL;
}
