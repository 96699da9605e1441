/* SPDX-License-Identifier: GPL-2.0 */
/* runner.h - pieces of the userspace runner shared between its files. */
#ifndef PMEMLAB_RUNNER_H
#define PMEMLAB_RUNNER_H

#include "pl_run.h"
#include "pl_tier.h"

/* args.c: the runner's own options (the target, as the module's load-time parameters) */
struct opts {
	const char *target;
	u64 dram_size, dram_pages, allow_overwrite, allow_file, size, tsc_khz, dram_node_strict;
	long dram_node;
	const char *dram_nodes, *dram_weights;
	const char *raw_samples;
};
/* one argument KEY=VALUE: an option into o, or a run parameter's text into vals[its id] */
void plu_set_arg(struct opts *o, const char **vals, char *arg);

/* error.c: refuse a run as the module does (pmemlab-run: ERRNO: reason), exit 2 */
void refuse(int err, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* the name of a positive errno as the module's last_error gives it */
const char *errno_name(int err);
/* --check's verdict: `ok WIDTH` or `ERRNO PARAM MACHINE REASON` */
void print_verdict(const struct pl_verdict *v, unsigned int width);

/* target.c: the memory the user backend measures */
struct plu_target {
	char kind[16];			/* dram, file, devdax */
	char *addr;
	u64 size;
	u64 run_size;			/* what a run would map (a file it would extend) */
	long node;
	u64 page_size;			/* smallest page size of the mapping, as obtained */
	u64 fallback_page;		/* the page size when smaps does not say */
	u64 huge_pct;			/* % of the mapped bytes in pages > 4 KiB */
	const char *pages;		/* how it was mapped: 4k, thp, hugetlbfs, file, devdax */
	int map_sync;			/* the mapping has MAP_SYNC */
	const char *fs_sig;
	u64 map_len;
	int dax;			/* a file's pages are the medium's: 1, 0, -1 unknown */
	int fd;				/* a file not mapped yet (plu_map), else -1 */
	u64 file_len;			/* its length when opened */
	/* dram: the nodes its pages go to (pl_tier.h), and where they went */
	struct pl_tier tier;
	bool placed;			/* on nodes asked for (not: dram on any node, files) */
	bool strict;			/* dram_node_strict: refuse a placement that is off */
	const char *placement;		/* node, any, weighted-interleave, first-touch ("" for files) */
	char placement_note[320];	/* why first-touch, where weighted interleave is not used */
	u64 unit;			/* bytes of the pages placed */
	struct pl_tier_tally found;	/* bytes per node, from move_pages (plu_prefault) */
};

extern const char *const plu_pages_names[3];	/* dram_pages: 4k, 2m (THP), hugetlb */
/*
 * Anonymous memory on the nodes of tier (one node -1: any), mapped and
 * given its policy; pre-faulted (placed) later, once the run is judged.
 */
void plu_open_dram(struct plu_target *t, u64 len, unsigned int pages, const struct pl_tier *tier,
		   bool strict);
/* how a file or devdax device is opened */
struct plu_path_opts {
	u64 size;			/* size=: the bytes to use; creates or extends a file */
	bool may_write;			/* the run writes (or may: --facts, --check-batch) */
	bool probe;			/* --facts, --check, --check-batch: nothing changes */
	bool allow_file;		/* allow_file=1: a file that is not on DAX */
};

/*
 * A devdax device is mapped here (for writing when the run writes); a
 * file is judged (DAX, size) and mapped by plu_map once the run is judged:
 * a refused run leaves it as it was.  A file size= creates is removed at
 * exit unless plu_map keeps it for a write run.
 */
void plu_open_path(struct plu_target *t, const char *path, const struct plu_path_opts *o);
/* map a file (a write run: extended to size= first); a probe maps what is there */
void plu_map(struct plu_target *t, const char *path, bool writes);
/*
 * Touch what the run uses before anything is timed (write runs and DRAM:
 * non-zero data); DRAM on several nodes is placed by it, and every DRAM
 * target on nodes asked for is checked with move_pages (refused when off,
 * unless not strict).
 */
void plu_prefault(struct plu_target *t, bool writes, u64 bytes);

/*
 * Buffers the engine is handed, between PROT_NONE guard pages (target.c):
 * address space for len bytes at an align-aligned address with a guard page
 * on each side (map over it with MAP_FIXED), and zeroed memory of len bytes
 * that ends at its upper guard page, 64-byte aligned (NULL on failure).
 */
#define PLU_GUARD	4096ULL
char *plu_reserve(u64 len, u64 align);
void *plu_guarded_alloc(u64 len);
void plu_guarded_free(void *buf, u64 len);


/* schema.c: the parameter table as JSON (NUL-terminated, static) */
const char *plu_schema_json(void);

#endif
