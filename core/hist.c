// SPDX-License-Identifier: GPL-2.0
/*
 * hist.c - log-linear latency histogram.
 *
 * Values below 256 ticks have one bucket each.  Above, every power of two
 * [2^k, 2^(k+1)) is cut into 128 equal buckets, so a bucket is at most
 * 1/128 = 0.78% of its lower bound wide; percentiles report the bucket
 * midpoint (error <= 0.39%) clamped to the exact min and max.  Adding a
 * sample (pl_hist_add) is inline in pl_core.h: the latency loops call nothing.
 */
#include "pl_core.h"

void pl_hist_bounds(unsigned int idx, u64 *lo, u64 *hi)
{
	unsigned int k, sub;

	if (idx < PL_HIST_EXACT) {
		*lo = idx;
		*hi = idx;
		return;
	}
	k = 8 + (idx - PL_HIST_EXACT) / PL_HIST_SUB;
	sub = (idx - PL_HIST_EXACT) % PL_HIST_SUB;
	*lo = (u64)(PL_HIST_SUB + sub) << (k - 7);
	*hi = *lo + ((u64)1 << (k - 7)) - 1;
}

void pl_hist_reset(struct pl_hist *h)
{
	h->n = 0;
	h->min = ~0ULL;
	h->max = 0;
	h->sum = 0;
	h->sumsq = 0;
	if (h->b)
		memset(h->b, 0, PL_HIST_NB * sizeof(u64));
}

void pl_hist_merge(struct pl_hist *dst, const struct pl_hist *src)
{
	unsigned int i;

	if (!src->n)
		return;
	dst->n += src->n;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->sum += src->sum;
	dst->sumsq += src->sumsq;
	for (i = 0; i < PL_HIST_NB; i++)
		dst->b[i] += src->b[i];
}

u64 pl_hist_pct(const struct pl_hist *h, u32 q_ppm)
{
	u64 rank, cum = 0, lo, hi, v;
	unsigned int i;

	if (!h->n)
		return 0;
	/* rank = ceil(n * q), at least 1 */
	rank = (u64)pl_udiv128((pl_u128)h->n * q_ppm + 999999, 1000000);
	if (!rank)
		rank = 1;
	for (i = 0; i < PL_HIST_NB; i++) {
		cum += h->b[i];
		if (cum >= rank)
			break;
	}
	if (i == PL_HIST_NB)
		return h->max;
	pl_hist_bounds(i, &lo, &hi);
	v = lo + (hi - lo) / 2;
	if (v < h->min)
		v = h->min;
	if (v > h->max)
		v = h->max;
	return v;
}

static u64 isqrt128(pl_u128 x)
{
	pl_u128 r = 0, bit = (pl_u128)1 << 126;

	while (bit > x)
		bit >>= 2;
	while (bit) {
		if (x >= r + bit) {
			x -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
		bit >>= 2;
	}
	return (u64)r;
}

void pl_hist_moments(const struct pl_hist *h, u64 *mean_milli, u64 *sd_milli)
{
	pl_u128 mean2, var;

	*mean_milli = 0;
	*sd_milli = 0;
	if (!h->n)
		return;
	*mean_milli = (u64)pl_udiv128(h->sum * 1000, h->n);
	/* var = E[x^2] - E[x]^2, in ticks^2 times 10^6 */
	mean2 = pl_udiv128(h->sum * h->sum, h->n);
	if (h->sumsq <= mean2)
		return;
	var = pl_udiv128(h->sumsq - mean2, h->n);
	if (var > ((pl_u128)~0ULL << 40))	/* keep var * 10^6 in range */
		*sd_milli = isqrt128(var) * 1000;
	else
		*sd_milli = isqrt128(var * 1000000);
}
