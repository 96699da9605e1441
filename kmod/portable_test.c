// SPDX-License-Identifier: GPL-2.0
/*
 * portable_test.c - host-side check of the portable generators and histogram
 * (not part of the module; Kbuild does not build it):
 *	cc -O2 -I kmod kmod/portable_test.c kmod/gen.c kmod/hist.c -o /tmp/pt && /tmp/pt
 * gen.c and hist.c have no SIMD asm, so they build without -mgeneral-regs-only.
 */
#include "pl_core.h"
#include <stdio.h>
#include <stdlib.h>

static int fails;

#define CHECK(cond, ...) do { if (!(cond)) { fails++; printf("FAIL: " __VA_ARGS__); printf("\n"); } } while (0)

static void test_per_dimm(void)
{
	struct pl_gen_cfg c = { .pattern = PL_PAT_RAND, .access = 256, .step = 256,
				.span = 1 << 20, .passes = 1, .ways = 4, .gran = 4096,
				.dimms = 2, .first_dimm = 3, .seed = 5 };
	struct pl_gen g;
	const char *why;
	u64 ext, o, d;
	int i;

	CHECK(!pl_gen_check(&c, &ext, &why), "per-dimm check");
	pl_gen_init(&g, &c);
	for (i = 0; i < 200000; i++) {
		o = pl_gen_next(&g);
		d = (o / 4096) % 4;
		CHECK(d == 3 || d == 0, "per-dimm offset %llu on dimm %llu", (unsigned long long)o,
		      (unsigned long long)d);
		CHECK(o + 256 <= ext && ext <= c.span, "per-dimm offset out of range");
		if (fails > 5)
			return;
	}
}

static void test_rand(void)
{
	struct pl_gen_cfg c = { .pattern = PL_PAT_RAND, .access = 64, .step = 64,
				.span = 64 * 1000, .passes = 1, .seed = 7 };
	static u64 cnt[1000];
	struct pl_gen g, g2;
	const char *why;
	double chi = 0, e;
	u64 ext, o;
	int i, n = 4000000;

	CHECK(!pl_gen_check(&c, &ext, &why), "rand check");
	pl_gen_init(&g, &c);
	pl_gen_init(&g2, &c);
	for (i = 0; i < n; i++) {
		o = pl_gen_next(&g);
		CHECK(o % 64 == 0 && o < 64000, "rand offset %llu", (unsigned long long)o);
		CHECK(o == pl_gen_next(&g2), "rand not reproducible");
		cnt[o / 64]++;
		if (fails > 5)
			return;
	}
	e = n / 1000.0;
	for (i = 0; i < 1000; i++)
		chi += (cnt[i] - e) * (cnt[i] - e) / e;
	/* df 999: mean 999, sd ~45; 1200 is > 4 sd */
	CHECK(chi < 1200, "rand chi-square %.1f", chi);
}

static void test_passes(void)
{
	struct pl_gen_cfg c = { .pattern = PL_PAT_STRIDE, .access = 128, .step = 256,
				.span = 1024, .passes = 2, .pass_offset = 128 };
	static const u64 want[] = { 0, 256, 512, 768, 128, 384, 640, 896, 0, 256 };
	struct pl_gen g;
	const char *why;
	u64 ext;
	unsigned int i;

	CHECK(!pl_gen_check(&c, &ext, &why), "passes check");
	pl_gen_init(&g, &c);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		u64 o = pl_gen_next(&g);

		CHECK(o == want[i], "pass sequence [%u] = %llu, want %llu", i,
		      (unsigned long long)o, (unsigned long long)want[i]);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static void test_hist(void)
{
	static const u32 q[] = { 500000, 900000, 990000, 999000, 999900 };
	static u64 b[PL_HIST_NB];
	struct pl_hist h = { .b = b };
	int i, n = 1000000;
	u64 *v = malloc(sizeof(u64) * n), ex, hv;

	pl_hist_reset(&h);
	srand(1);
	for (i = 0; i < n; i++) {
		v[i] = 50 + (u64)rand() % 2000000;
		pl_hist_add(&h, v[i]);
	}
	qsort(v, n, sizeof(u64), cmp_u64);
	for (i = 0; i < 5; i++) {
		ex = v[((u64)n * q[i] + 999999) / 1000000 - 1];
		hv = pl_hist_pct(&h, q[i]);
		CHECK(hv >= ex - ex / 100 && hv <= ex + ex / 100, "p%u: exact %llu hist %llu", q[i],
		      (unsigned long long)ex, (unsigned long long)hv);
	}
	CHECK(h.min == v[0] && h.max == v[n - 1], "min/max");
	free(v);
}

int main(void)
{
	test_per_dimm();
	test_rand();
	test_passes();
	test_hist();
	printf("%s\n", fails ? "portable_test: FAILED" : "portable_test: ok");
	return !!fails;
}
