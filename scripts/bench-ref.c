// SPDX-License-Identifier: GPL-2.0
/*
 * bench-ref - the independent reference loops of `make bench`: written
 * apart from pmemlab's engine (none of its code or headers), compiled by
 * scripts/bench, so that pmemlab's numbers are held against loops a reader
 * can check in one screen.
 *
 *	bench-ref randread BYTES MS PAGES CPU[,CPU...]	random 64 B lines, GB/s
 *	bench-ref randread-x BYTES MS PAGES CPU[,CPU...]	the same with a 128-bit
 *					multiplicative congruential generator and Lemire's
 *					bounded draw per load (the generator pmemlab's rand
 *					family uses), to tell its cost from the loop's
 *	bench-ref l1lat COUNT CPU			rdtscp-bracketed L1 load, median ticks
 *	bench-ref l1mean COUNT CPU			the same, mean ticks (less the empty median)
 *	bench-ref chase BYTES LOADS PAGES CPU		dependent loads, ns per load
 *
 * PAGES: 4k or 2m (madvise HUGEPAGE).  Output: one number on stdout (randread:
 * then the loads it issued).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static char *map(size_t bytes, const char *pages)
{
	size_t align = 2u << 20;
	char *p = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	p = (char *)(((uintptr_t)p + align - 1) & ~(align - 1));
	madvise(p, bytes, strcmp(pages, "2m") ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
	return p;
}

/* splitmix64 of a counter: each index independent of the loads before it */
static inline uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct rr {
	char *p;
	uint64_t lines, ns, loads;
	int cpu, mcg;
	uint64_t sink;
};

/*
 * Lehmer's multiplicative congruential generator mod 2^128 (the multiplier
 * of Lemire's lehmer64), its high half out; with Lemire's unbiased bounded
 * integer (Lemire 2019)
 */
static inline uint64_t mcg(unsigned __int128 *s)
{
	*s *= 0xda942042e4dd58b5ull;
	return (uint64_t)(*s >> 64);
}

static void *randread(void *arg)
{
	struct rr *r = arg;
	uint64_t i = (uint64_t)r->cpu << 40, t0, end, sum = 0, k;

	unsigned __int128 st = (unsigned __int128)mix(i) << 64 | mix(i + 1) | 1;
	uint64_t thresh = -r->lines % r->lines;

	pin(r->cpu);
	t0 = now_ns();
	end = t0 + r->ns;
	do {
		if (r->mcg) {
			for (k = 0; k < 4096; k++) {
				unsigned __int128 m = (unsigned __int128)mcg(&st) * r->lines;

				while ((uint64_t)m < thresh)
					m = (unsigned __int128)mcg(&st) * r->lines;
				sum += *(volatile uint64_t *)(r->p + (uint64_t)(m >> 64) * 64);
			}
		} else {
			for (k = 0; k < 4096; k++, i++) {
				uint64_t line = (uint64_t)(((unsigned __int128)mix(i) * r->lines) >> 64);

				sum += *(volatile uint64_t *)(r->p + line * 64);
			}
		}
		r->loads += 4096;
	} while (now_ns() < end);
	r->ns = now_ns() - t0;
	r->sink = sum;
	return NULL;
}

static inline uint64_t stamp(void)
{
	uint32_t lo, hi, aux;

	asm volatile("mfence\n\trdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	if (argc == 6 && (!strcmp(argv[1], "randread") || !strcmp(argv[1], "randread-x"))) {
		size_t bytes = strtoull(argv[2], NULL, 0);
		uint64_t ms = strtoull(argv[3], NULL, 0), loads = 0, ns = 0;
		char *p = map(bytes, argv[4]), *tok, *save;
		struct rr r[64];
		pthread_t th[64];
		int n = 0, i;

		memset(p, 1, bytes);
		for (tok = strtok_r(argv[5], ",", &save); tok && n < 64; tok = strtok_r(NULL, ",", &save)) {
			r[n] = (struct rr){ .p = p, .lines = bytes / 64, .ns = ms * 1000000, .cpu = atoi(tok),
					    .mcg = !strcmp(argv[1], "randread-x") };
			pthread_create(&th[n], NULL, randread, &r[n]);
			n++;
		}
		for (i = 0; i < n; i++) {
			pthread_join(th[i], NULL);
			loads += r[i].loads;
			ns = r[i].ns > ns ? r[i].ns : ns;
		}
		/* per thread: its own lines over its own time, summed (as pmemlab sums threads) */
		{
			double gbps = 0;

			for (i = 0; i < n; i++)
				gbps += r[i].loads * 64.0 / r[i].ns;
			printf("%.3f %llu\n", gbps, (unsigned long long)loads);
		}
		return 0;
	}
	if (argc == 4 && (!strcmp(argv[1], "l1lat") || !strcmp(argv[1], "l1mean"))) {
		size_t n = strtoull(argv[2], NULL, 0), i;
		uint64_t *empty = malloc(n * 8), *full = malloc(n * 8), t0, t1, v;
		volatile uint64_t line[8] __attribute__((aligned(64))) = { 1 };

		pin(atoi(argv[3]));
		v = line[0];
		for (i = 0; i < n; i++) {
			t0 = stamp();
			t1 = stamp();
			empty[i] = t1 - t0;
			t0 = stamp();
			asm volatile("mov (%1), %0" : "=r"(v) : "r"(line) : "memory");
			t1 = stamp();
			full[i] = t1 - t0;
		}
		if (!strcmp(argv[1], "l1mean")) {
			/* the mean of the brackets, unclamped, less the empty bracket's median */
			long double sum = 0;

			for (i = 0; i < n; i++)
				sum += full[i];
			printf("%.3Lf\n", sum / n - median(empty, n));
			return 0;
		}
		t0 = median(empty, n);
		t1 = median(full, n);
		printf("%lld\n", (long long)(t1 - t0));
		(void)v;
		return 0;
	}
	if (argc == 6 && !strcmp(argv[1], "chase")) {
		size_t bytes = strtoull(argv[2], NULL, 0), lines = bytes / 64, i, j;
		uint64_t loads = strtoull(argv[3], NULL, 0), t0, *perm, x = 1;
		char *p = map(bytes, argv[4]);
		void **q;

		pin(atoi(argv[5]));
		perm = malloc(lines * sizeof(*perm));
		for (i = 0; i < lines; i++)
			perm[i] = i;
		for (i = lines - 1; i > 0; i--) {	/* Sattolo: one cycle over every line */
			x = mix(x);
			j = (size_t)(((unsigned __int128)x * i) >> 64);
			uint64_t t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
		}
		for (i = 0; i < lines; i++)
			*(void **)(p + perm[i] * 64) = p + perm[(i + 1) % lines] * 64;
		free(perm);
		q = (void **)p;
		t0 = now_ns();
		for (i = 0; i < loads; i++)
			q = *q;
		printf("%.3f\n", (double)(now_ns() - t0) / loads);
		return q == NULL;
	}
	fprintf(stderr, "usage: bench-ref randread[-x] BYTES MS PAGES CPUS | l1lat COUNT CPU | "
			"chase BYTES LOADS PAGES CPU\n");
	return 2;
}
