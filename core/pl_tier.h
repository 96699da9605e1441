/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pl_tier.h - a DRAM target over several NUMA nodes (DRAM and CXL memory,
 * say) in weighted round robin: the load parameters that describe it
 * (dram_nodes, dram_weights, or the plain dram_node), the arithmetic of
 * which page goes where, and the check of a placement once the pages are
 * there.  Portable (shim.h and pl_params.h only): the module (kmod/target.c),
 * the runner (userspace/runner/target.c) and the host tests (libplcore.so)
 * share it, so the rule and its reasons are written once.
 *
 * The pages of a target are counted in units of its page size (4 KiB or
 * 2 MiB).  Weights w0, w1, ... make stripes of w0 + w1 + ... units: the
 * first w0 units of a stripe on the first node, the next w1 on the second,
 * and so on, stripe after stripe from the start of the target.
 */
#ifndef PMEMLAB_TIER_H
#define PMEMLAB_TIER_H

#include "pl_params.h"

#define PL_TIER_MAX		16	/* nodes of one target */
#define PL_TIER_WEIGHT_MAX	255	/* as the kernel's weighted interleave weights */
#define PL_TIER_NODE_MAX	1023	/* the largest node number (MAX_NUMNODES is at most 1024) */

struct pl_tier {
	unsigned int n;			/* nodes given */
	int node[PL_TIER_MAX];		/* -1: the loading CPU's node (plain dram_node=-1) */
	u32 weight[PL_TIER_MAX];	/* units of each stripe on node[i] (0: none) */
	u32 stripe;			/* units of one stripe: the sum of the weights */
	bool listed;			/* given as dram_nodes (else the one dram_node) */
};

/*
 * The target's nodes from its load parameters: dram_nodes ("0,1"; NULL or
 * "": not given) with dram_weights ("3,1"; NULL or "": 1 for each node),
 * else the single node dram_node (-1: the loading CPU's, for the caller to
 * resolve).  Judges everything but whether the nodes exist here (the
 * backend's): 0, or -EINVAL and a reason that starts with the parameter at
 * fault.
 */
int pl_tier_parse(struct pl_tier *t, const char *nodes, const char *weights, long node,
		  char *why, size_t len);
/* the index in t->node[] of the node that unit (a page of the target) belongs to */
unsigned int pl_tier_index(const struct pl_tier *t, u64 unit);
/* how many of the first units units belong to node index i */
u64 pl_tier_units(const struct pl_tier *t, unsigned int i, u64 units);
/* nodes with a weight above 0 */
unsigned int pl_tier_used(const struct pl_tier *t);
/* the index of the first node with the largest weight; of the first with any weight */
unsigned int pl_tier_heaviest(const struct pl_tier *t);
unsigned int pl_tier_first(const struct pl_tier *t);
/* "0,1" and "3,1", as the load parameters take them */
void pl_tier_out_nodes(struct pl_buf *b, const struct pl_tier *t);
void pl_tier_out_weights(struct pl_buf *b, const struct pl_tier *t);

/*
 * What a target's pages were found on, taken in order from byte 0 (the
 * module from the pages themselves, the runner from move_pages), judged
 * stripe by stripe: each whole stripe must hold weight x unit bytes on each
 * node, the last (partial) one at most that, and nothing may be elsewhere.
 * That holds whatever the order of the nodes inside a stripe and wherever
 * the round robin started (the kernel's weighted interleave goes by node
 * number and by virtual address), and it is exact: one page off fails it.
 */
struct pl_tier_tally {
	const struct pl_tier *t;
	u64 unit;			/* bytes of one unit (the page size placed) */
	u64 stripe_bytes;
	u64 at;				/* bytes taken so far */
	u64 in_stripe[PL_TIER_MAX];	/* the current stripe's bytes on each node */
	u64 bytes[PL_TIER_MAX];		/* all bytes found on each node */
	u64 elsewhere;			/* bytes on no node of the target (or not found) */
	u64 stripes_off;		/* stripes whose bytes per node are not the weights' */
	u64 first_off;			/* byte offset of the first of them */
};

void pl_tally_init(struct pl_tier_tally *y, const struct pl_tier *t, u64 unit);
/* the next len bytes are on node (-1: on none the target could name, unmapped) */
void pl_tally_add(struct pl_tier_tally *y, u64 len, int node);
/*
 * After the last pl_tally_add: 0 when the placement is the weights', else
 * -ENOMEM and a one-line reason (why, what went where).
 */
int pl_tally_judge(struct pl_tier_tally *y, char *why, size_t len);
/* bytes per node, "0:201326592,1:67108864" (",other:N" for bytes elsewhere) */
void pl_tally_out(struct pl_buf *b, const struct pl_tier_tally *y);

#endif /* PMEMLAB_TIER_H */
