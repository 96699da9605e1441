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

/*
 * The mean of the signed differences (truncated toward 0, in thousandths)
 * and their standard deviation; |sum| is divided as an unsigned 128-bit
 * value (pl_udiv128: the kernel has no 128-bit division) and the sign put
 * back.
 */
void pl_hist_moments(const struct pl_hist *h, s64 *mean_milli, u64 *sd_milli)
{
	pl_u128 mag, y, var;
	u64 q, r;

	*mean_milli = 0;
	*sd_milli = 0;
	if (!h->n)
		return;
	mag = h->sum < 0 ? (pl_u128)-h->sum : (pl_u128)h->sum;
	q = (u64)pl_udiv128(mag * 1000, h->n);
	*mean_milli = h->sum < 0 ? -(s64)q : (s64)q;
	/*
	 * n var = sumsq - sum^2 / n, with sum^2 / n as q^2 n + 2 q r + r^2 / n
	 * (q, r: |sum|'s quotient and remainder by n): each term is at most
	 * sumsq (Cauchy-Schwarz), so none overflows where sum^2 would; y is
	 * the exact integer part, r^2 / n the rest, taken off after the
	 * scaling to ticks^2 x 10^6 (a variance below a tick^2 keeps its
	 * digits)
	 */
	q = (u64)pl_udiv128(mag, h->n);
	r = (u64)(mag - (pl_u128)q * h->n);
	y = (pl_u128)q * q * h->n + (pl_u128)2 * q * r;
	if (h->sumsq <= y)
		return;
	y = h->sumsq - y;
	if (y > ((pl_u128)1 << 100) || r > (1ULL << 44)) {	/* x 10^6 out of range */
		var = pl_udiv128(y, h->n);
		*sd_milli = isqrt128(var) * 1000;
		return;
	}
	y = y * 1000000 - pl_udiv128((pl_u128)r * r * 1000000, h->n);
	*sd_milli = isqrt128(pl_udiv128(y, h->n));
}
