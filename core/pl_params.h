/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pl_params.h - the run parameters (params.def) and the one validator that
 * judges them, for the module, the userspace runner and the controller
 * (through libplcore.so).  Portable: only shim.h and pl_core.h.
 *
 * A verdict names the parameter at fault and says whether it rests on a
 * fact of the machine or target (struct pl_facts); the controller records
 * such points as skipped instead of refusing the config.
 */
#ifndef PMEMLAB_PARAMS_H
#define PMEMLAB_PARAMS_H

#include "pl_core.h"

#define PL_MAX_THREADS		256
#define PL_MAX_ACCESS		(64ULL << 20)
#define PL_MAX_SAMPLES		(1ULL << 20)
#define PL_MAX_SAMPLE_BYTES	(256ULL << 20)	/* all threads together */
#define PL_MAX_CPUS		8192		/* the kernel's largest NR_CPUS */
#define PL_CPU_WORDS		(PL_MAX_CPUS / 64)
#define PL_WHY_LEN		256
/*
 * The longest value text, without the newline a sysfs write ends with.
 * The kernel hands a sysfs store at most a page (some kernels a page less
 * one byte) and drops the rest of a longer write; a value and its newline
 * fit in 4094 bytes, so a store of 4095 bytes or more is always a write cut
 * short, and refusing it keeps a cut from landing on a valid prefix (a
 * shorter op list).  The runner keeps the same limit, so both backends and
 * the controller's judgement agree.
 */
#define PL_TEXT_MAX		4093

enum pl_placement { PL_PLACE_GLOBAL, PL_PLACE_THREAD, PL_PLACE_DIMM };

enum pl_kind { PL_K_NUM, PL_K_SIZE, PL_K_BOOL, PL_K_ENUM, PL_K_OPS, PL_K_CPUS, PL_K_NAME };

/* a NAME value: printable, no white space, at most this long; empty is its default */
#define PL_NAME_MAX		255

/*
 * The name of one of the module's named targets (targets/add, and
 * load_target where the module runs): the rule's one place (check.c).
 */
#define PL_TARGET_NAME_MAX	31
#define PL_TARGET_NAME_RULE	"1 to 31 of a-z 0-9 _ -, not add or remove"

enum pl_rule {
	PL_R_NONE,
	PL_R_WIDTH,		/* 0, 8, 16, 32 or 64 */
	PL_R_ACCESS,		/* 8, 16, 32 or a multiple of 64 */
	PL_R_BELOW_TARGET,	/* < target_size */
	PL_R_IN_TARGET,		/* <= target_size */
	PL_R_ONLINE,		/* <= the online CPUs */
	PL_R_PREFETCH,		/* off needs prefetcher control */
};

extern const char *const pl_mode_names[];
extern const char *const pl_pattern_names[];
extern const char *const pl_fence_names[];
extern const char *const pl_flush_names[];
extern const char *const pl_placement_names[];
extern const char *const pl_onoff_names[];
extern const char *const pl_chase_write_names[];

enum pl_param_id {
#define PL_PARAM(name, ...) PL_P_##name,
#include "params.def"
#undef PL_PARAM
	PL_NPARAMS
};

#define PL_FIELD_NUM(n)		u64 n;
#define PL_FIELD_SIZE(n)	u64 n;
#define PL_FIELD_BOOL(n)	u64 n;
#define PL_FIELD_ENUM(n)	u64 n;
#define PL_FIELD_OPS(n)		u8 ops[PL_MAX_THREADS]; unsigned int nops;
#define PL_FIELD_CPUS(n)	u64 cpus[PL_CPU_WORDS];	/* none: default placement */
#define PL_FIELD_NAME(n)	char n[PL_NAME_MAX + 1];

/* one run's parameters (enums as the index of their name) */
struct pl_params {
#define PL_PARAM(name, kind, ...) PL_FIELD_##kind(name)
#include "params.def"
#undef PL_PARAM
};

struct pl_param {
	const char *name;
	u8 kind;			/* enum pl_kind */
	u8 rule;			/* enum pl_rule */
	const char *unit;		/* "B", "ms", "ticks", "%" or "" */
	u64 lo, hi, def, mult;		/* range, default, 0 or the multiple */
	const char *const *names;	/* PL_K_ENUM: NULL-terminated */
	const char *desc;		/* NULL in the module */
	size_t off;			/* of the u64 value (not OPS, CPUS), of the string (NAME) */
};

extern const struct pl_param pl_params[PL_NPARAMS];

/* ---- facts of the machine and target a verdict may rest on ---- */
#define PL_FACT_TARGET		(1u << 0)	/* target_size, dead */
#define PL_FACT_CPU		(1u << 1)	/* features */
#define PL_FACT_CPUS		(1u << 2)	/* online, nr_online, nr_possible */
#define PL_FACT_TSC		(1u << 3)	/* tsc_khz */
#define PL_FACT_PREFETCH	(1u << 4)	/* prefetch */
#define PL_FACT_BACKEND		(1u << 5)	/* user */
#define PL_FACT_FS		(1u << 6)	/* fs_sig, nparts, allow_overwrite */
#define PL_FACT_LOAD		(1u << 7)	/* load: the load_target's facts */
#define PL_FACT_LAYOUT		(1u << 8)	/* scattered (load.scattered with PL_FACT_LOAD) */

struct pl_facts {
	u32 known;			/* PL_FACT_* of the fields set */
	u64 target_size;
	bool dead;			/* the target went away */
	u32 features;			/* PL_F_* */
	const u64 *online;		/* bitmap; NULL: CPUs 0 .. nr_online - 1 */
	unsigned int online_bits;	/* bits valid in online */
	unsigned int nr_online, nr_possible;
	u64 tsc_khz;
	bool prefetch;			/* prefetchers can be turned off */
	bool user;			/* the user backend: no prefetch control, no named targets */
	const char *fs_sig;		/* "none", "unreadable" or the signature found (sig.c) */
	unsigned int nparts;		/* partitions of the target's disk */
	bool allow_overwrite;
	bool scattered;			/* pages scattered over physical memory (DRAM), not one range */
	/* load_target's target, where the load threads run (PL_FACT_LOAD; its FS facts with PL_FACT_FS) */
	struct pl_load_facts {
		u64 size;
		bool dead;
		const char *fs_sig;
		unsigned int nparts;
		bool allow_overwrite;
		bool scattered;
	} load;
};

struct pl_verdict {
	int err;			/* 0, or a negative errno */
	int param;			/* PL_P_* at fault, -1 for none */
	bool machine;			/* decided by a fact of this machine or target */
	char why[PL_WHY_LEN];		/* starts with the parameter's name */
};

/* what judging a whole run resolved */
struct pl_plan {
	unsigned int n;			/* threads */
	unsigned int width;		/* instruction width */
	bool writes;			/* some thread stores */
};

/* text written into a buffer: at most cap - 1 bytes and a NUL, the rest cut */
struct pl_buf {
	char *p;
	size_t len, cap;
};

void pl_out(struct pl_buf *b, const char *fmt, ...) __printf(2, 3);

/* ---- params.c: the table, values as text ---- */
int pl_param_find(const char *name, size_t len);
void pl_params_defaults(struct pl_params *p);
/* a number as the parameters take it: 0, -EINVAL, -ERANGE (too large), -E2BIG (too long) */
int pl_text_u64(const char *s, size_t len, bool size, u64 *v);
/* s[0..len) without white space at either end */
void pl_text_trim(const char **s, size_t *len);
/* where parameter id (not ops or cpus) is stored in p */
u64 *pl_param_slot(struct pl_params *p, int id);
/* the value as the module shows it (no newline); bytes written, < len */
size_t pl_param_show(const struct pl_params *p, int id, char *buf, size_t len);
/* the allowed values in words, for documentation */
size_t pl_param_allowed(int id, char *buf, size_t len);
bool pl_cpu_test(const u64 *mask, unsigned int cpu);
/* the first CPU >= from in mask, or PL_MAX_CPUS */
unsigned int pl_cpu_next(const u64 *mask, unsigned int from);
/* the highest CPU in mask + 1; 0 for none */
unsigned int pl_cpu_top(const u64 *mask);
/*
 * A CPU list as the kernel writes them: "0-3,6", also "0-7:2/4" (the first
 * 2 of every 4 CPUs of 0-7).  Sets the CPUs in mask (when not NULL) and
 * *top to the highest + 1; false when it is no such list.
 */
bool pl_cpus_parse(const char *s, size_t len, u64 *mask, unsigned int *top);

/* ---- facts.c: facts of the CPU and target, as text ---- */
void pl_out_features(struct pl_buf *b, u32 features);	/* "sse2 avx ..." */
void pl_out_widths(struct pl_buf *b, u32 features);	/* "8 16 32": load and store run */

/* ---- check.c: the validator ---- */
void pl_verdict_clear(struct pl_verdict *v);
/* control characters of s (a value a user wrote, quoted in a reason) as '?': one line */
void pl_printable(char *s);
/* v says err; why is "<param>: " and the text (the prefix only once), on one line */
int pl_refuse(struct pl_verdict *v, int err, int param, bool machine, const char *fmt, ...)
	__printf(5, 6);
/* the rules of one value of its own: range, multiple, rule, machine */
int pl_judge_value(int id, u64 val, const struct pl_facts *f, struct pl_verdict *v);
/* a CPU list whose highest CPU is top - 1 (top 0: empty) */
int pl_judge_cpus(unsigned int top, const struct pl_facts *f, struct pl_verdict *v);
/* s[0..len) is a named target's name (PL_TARGET_NAME_RULE) */
bool pl_target_name_ok(const char *s, size_t len);
/*
 * A NAME value (load_target) for this backend: the module's is a named
 * target's name or empty (EINVAL otherwise); the runner's is a spec.
 */
int pl_judge_name(int id, const char *s, size_t len, const struct pl_facts *f, struct pl_verdict *v);
/*
 * Judge a whole run as `run` does: every value, then their combination,
 * the CPU features, the target and each thread's region.  0 and the plan,
 * or -errno and the verdict.  Facts not in f->known are not judged.
 */
int pl_check_run(const struct pl_params *p, const struct pl_facts *f, struct pl_plan *plan,
		 struct pl_verdict *v);
/* some thread of the run stores (read_pct 100 makes every access a load) */
bool pl_run_writes(const struct pl_params *p, const struct pl_facts *f);	/* stores, or a chase's chain */
bool pl_run_stores(const struct pl_params *p, const struct pl_facts *f);

/* ---- apply.c: a value's text parsed (params.c), judged (check.c) and stored ---- */
/*
 * Parse and judge one value (text of len bytes, white space around it
 * ignored) and store it: 0, or -errno and the verdict, p unchanged.
 */
int pl_param_set(struct pl_params *p, int id, const char *text, size_t len,
		 const struct pl_facts *f, struct pl_verdict *v);
/* values given as text (NULL: not given), set in table order as the module's files are written */
int pl_params_apply(struct pl_params *p, const char *const *text, const struct pl_facts *f,
		    struct pl_verdict *v);

/* ---- ops.c: the ops a parameter names ---- */
const char *pl_op_name(int op);
/* the op a name names, or -1 */
int pl_op_find(const char *s, size_t len);

#endif /* PMEMLAB_PARAMS_H */
