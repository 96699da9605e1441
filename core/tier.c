// SPDX-License-Identifier: GPL-2.0
/*
 * tier.c - a DRAM target over several NUMA nodes in weighted round robin
 * (pl_tier.h): its load parameters judged, the node of each page, and the
 * check of where the pages went.
 */
#include "pl_tier.h"

/* the next comma-separated item of s[*at, len): its bounds, or false at the end */
static bool pl_item(const char *s, size_t len, size_t *at, size_t *start, size_t *n)
{
	size_t i;

	if (*at > len)
		return false;
	for (i = *at; i < len && s[i] != ','; i++)
		;
	*start = *at;
	*n = i - *at;
	*at = i + 1;
	return true;
}

/* a list of numbers in lo..hi into out[]: their count, or -1 and why */
static int pl_list(const char *name, const char *s, u64 lo, u64 hi, u64 *out, char *why, size_t len)
{
	size_t slen = strlen(s), at = 0, start, n;
	int count = 0;
	u64 v;

	while (pl_item(s, slen, &at, &start, &n)) {
		if (count == PL_TIER_MAX) {
			snprintf(why, len, "%s: more than %d nodes", name, PL_TIER_MAX);
			return -1;
		}
		if (!n) {
			snprintf(why, len, "%s: '%.64s' has an empty item (want numbers separated by single commas)",
				 name, s);
			return -1;
		}
		if (pl_text_u64(s + start, n, false, &v) || v < lo || v > hi) {
			snprintf(why, len, "%s: '%.*s' is not a number in %llu..%llu", name,
				 (int)(n < 32 ? n : 32), s + start, lo, hi);
			return -1;
		}
		out[count++] = v;
	}
	return count;
}

int pl_tier_parse(struct pl_tier *t, const char *nodes, const char *weights, long node,
		  char *why, size_t len)
{
	u64 nv[PL_TIER_MAX], wv[PL_TIER_MAX];
	int nn, nw = 0, i, j;

	memset(t, 0, sizeof(*t));
	why[0] = '\0';
	if (!nodes || !*nodes) {
		if (weights && *weights) {
			snprintf(why, len, "dram_weights: needs dram_nodes (the nodes the weights are for)");
			return -EINVAL;
		}
		if (node < -1 || node > PL_TIER_NODE_MAX) {
			snprintf(why, len, "dram_node: %ld is not -1 (the loading CPU's node) or a node in 0..%d",
				 node, PL_TIER_NODE_MAX);
			return -EINVAL;
		}
		t->n = 1;
		t->node[0] = (int)node;
		t->weight[0] = 1;
		t->stripe = 1;
		return 0;
	}
	if (node != -1) {
		snprintf(why, len, "dram_nodes: give dram_nodes or dram_node, not both (dram_node=%ld)", node);
		return -EINVAL;
	}
	nn = pl_list("dram_nodes", nodes, 0, PL_TIER_NODE_MAX, nv, why, len);
	if (nn < 0)
		return -EINVAL;
	if (weights && *weights) {
		nw = pl_list("dram_weights", weights, 0, PL_TIER_WEIGHT_MAX, wv, why, len);
		if (nw < 0)
			return -EINVAL;
		if (nw != nn) {
			snprintf(why, len, "dram_weights: %d weight%s for %d node%s (one weight per node of dram_nodes)",
				 nw, nw == 1 ? "" : "s", nn, nn == 1 ? "" : "s");
			return -EINVAL;
		}
	}
	for (i = 0; i < nn; i++) {
		for (j = 0; j < i; j++)
			if (nv[j] == nv[i]) {
				snprintf(why, len, "dram_nodes: node %llu is listed twice", nv[i]);
				return -EINVAL;
			}
		t->node[i] = (int)nv[i];
		t->weight[i] = nw ? (u32)wv[i] : 1;
		t->stripe += t->weight[i];
	}
	t->n = nn;
	t->listed = true;
	if (!t->stripe) {
		snprintf(why, len, "dram_weights: every weight is 0 (give at least one node a weight)");
		return -EINVAL;
	}
	return 0;
}

unsigned int pl_tier_index(const struct pl_tier *t, u64 unit)
{
	u64 r = unit % t->stripe;
	unsigned int i;

	for (i = 0; i + 1 < t->n && r >= t->weight[i]; i++)
		r -= t->weight[i];
	return i;
}

u64 pl_tier_units(const struct pl_tier *t, unsigned int i, u64 units)
{
	u64 full = units / t->stripe, rem = units % t->stripe, before = 0, part;
	unsigned int j;

	for (j = 0; j < i; j++)
		before += t->weight[j];
	part = rem > before ? rem - before : 0;
	if (part > t->weight[i])
		part = t->weight[i];
	return full * t->weight[i] + part;
}

unsigned int pl_tier_used(const struct pl_tier *t)
{
	unsigned int i, n = 0;

	for (i = 0; i < t->n; i++)
		n += t->weight[i] > 0;
	return n;
}

unsigned int pl_tier_heaviest(const struct pl_tier *t)
{
	unsigned int i, best = 0;

	for (i = 1; i < t->n; i++)
		if (t->weight[i] > t->weight[best])
			best = i;
	return best;
}

unsigned int pl_tier_first(const struct pl_tier *t)
{
	unsigned int i;

	for (i = 0; i < t->n && !t->weight[i]; i++)
		;
	return i < t->n ? i : 0;
}

void pl_tier_out_nodes(struct pl_buf *b, const struct pl_tier *t)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		pl_out(b, "%s%d", i ? "," : "", t->node[i]);
}

void pl_tier_out_weights(struct pl_buf *b, const struct pl_tier *t)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		pl_out(b, "%s%u", i ? "," : "", t->weight[i]);
}

/* ---- the check of a placement ---- */
void pl_tally_init(struct pl_tier_tally *y, const struct pl_tier *t, u64 unit)
{
	memset(y, 0, sizeof(*y));
	y->t = t;
	y->unit = unit;
	y->stripe_bytes = (u64)t->stripe * unit;
}

/* the stripe that ends here (whole, or the last and partial one): as the weights say? */
static void pl_tally_close(struct pl_tier_tally *y, bool whole)
{
	u64 start = (y->at - 1) / y->stripe_bytes * y->stripe_bytes, want;
	bool off = false;
	unsigned int i;

	for (i = 0; i < y->t->n; i++) {
		want = (u64)y->t->weight[i] * y->unit;
		if (whole ? y->in_stripe[i] != want : y->in_stripe[i] > want)
			off = true;
		y->in_stripe[i] = 0;
	}
	if (off && !y->stripes_off++)
		y->first_off = start;
}

void pl_tally_add(struct pl_tier_tally *y, u64 len, int node)
{
	unsigned int i;
	u64 room, n;

	for (i = 0; i < y->t->n && (node < 0 || y->t->node[i] != node); i++)
		;
	while (len) {
		room = y->stripe_bytes - y->at % y->stripe_bytes;
		n = len < room ? len : room;
		if (i < y->t->n) {
			y->in_stripe[i] += n;
			y->bytes[i] += n;
		} else {
			y->elsewhere += n;
		}
		y->at += n;
		len -= n;
		if (!(y->at % y->stripe_bytes))
			pl_tally_close(y, true);
	}
}

int pl_tally_judge(struct pl_tier_tally *y, char *why, size_t len)
{
	struct pl_buf b = { .p = why, .cap = len };
	const struct pl_tier *t = y->t;
	unsigned int one;
	u64 stripes;

	if (y->at % y->stripe_bytes)
		pl_tally_close(y, false);
	why[0] = '\0';
	if (!y->stripes_off && !y->elsewhere)
		return 0;
	stripes = (y->at + y->stripe_bytes - 1) / y->stripe_bytes;
	if (pl_tier_used(t) == 1) {
		one = pl_tier_first(t);
		pl_out(&b, "%llu of %llu KiB are not on node %d; ", (y->at - y->bytes[one]) >> 10,
		       y->at >> 10, t->node[one]);
	} else {
		pl_out(&b, "%llu of %llu stripes of %u pages do not hold ", y->stripes_off, stripes, t->stripe);
		pl_tier_out_weights(&b, t);
		pl_out(&b, " pages of nodes ");
		pl_tier_out_nodes(&b, t);
		if (y->stripes_off)
			pl_out(&b, " (the first at byte %llu)", y->first_off);
		pl_out(&b, "; ");
	}
	pl_out(&b, "bytes per node ");
	pl_tally_out(&b, y);
	return -ENOMEM;
}

void pl_tally_out(struct pl_buf *b, const struct pl_tier_tally *y)
{
	unsigned int i;

	for (i = 0; i < y->t->n; i++)
		pl_out(b, "%s%d:%llu", i ? "," : "", y->t->node[i], y->bytes[i]);
	if (y->elsewhere)
		pl_out(b, ",other:%llu", y->elsewhere);
}
