/*
 * cpu_test.c
 *		CI test (gcc, no CUDA): the CPU reference of the GPU kernels, i.e. the
 *		per-level range scan on the Eytzinger layout (eytz_cpu_ref.h), against
 *		a plain sorted-array lower_bound/upper_bound, on fresh random data.
 *
 * Every fan-out, sizes 0, 1, k^m-1, k^m, k^m+1 and random ones, 32- and 64-bit
 * key domains, duplicates, misses, keys below/above all keys, empty ranges.
 * Prints "cuda-cpu: N passed, N failed" and exits non-zero on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "eytz_cpu_ref.h"

static uint64_t rng_state;

static uint64_t
rnd(void)
{
	return eytzref_random(&rng_state);
}

static int
check(uint32_t k, uint64_t n, int wide, int dups)
{
	uint64_t	kmax = wide ? ~0ull : 0xFFFFFFFFull;
	uint64_t   *keys = malloc((n + 1) * 8),
			   *pays = malloc((n + 1) * 8),
			   *ek = malloc((n + 1) * 8),
			   *ep = malloc((n + 1) * 8),
			   *sk = malloc((n + 1) * 8),
			   *sp = malloc((n + 1) * 8),
			   *got = malloc((n + 1) * 8);
	uint64_t	i,
				q;
	int			ok = 1;

	for (i = 0; i < n; i++)
	{
		keys[i] = dups ? 100 + rnd() % (n / 4 + 1) : 1 + rnd() % (kmax - 1);
		pays[i] = eytz_pack_tid((uint32_t) (i / 7), (uint16_t) (i % 7 + 1));
	}
	if (eytzref_build(keys, pays, n, k, ek, ep, sk, sp) != 0)
		return 0;
	for (q = 0; q < 400 && ok; q++)
	{
		uint64_t	r = rnd() % 6,
					lo,
					hi,
					first,
					c,
					cs,
					j;

		lo = n && r < 3 ? sk[rnd() % n] : r == 3 ? 0 : r == 4 ? kmax : rnd() & kmax;
		hi = rnd() % 3 == 0 ? lo : rnd() % 10 == 0 ? (lo ? lo - 1 : 0) : lo + rnd() % (kmax / (n + 1) * 8 + 2);
		if (hi < lo && rnd() % 2)
			hi = kmax;
		c = eytzref_range(ek, ep, n, k, lo, hi, got, n + 1);
		cs = eytzref_sorted_range(sk, n, lo, hi, &first);
		if (c != cs)
		{
			printf("FAIL k=%u n=%llu: [%llu,%llu] count %llu vs %llu\n", k, (unsigned long long) n,
				   (unsigned long long) lo, (unsigned long long) hi, (unsigned long long) c, (unsigned long long) cs);
			ok = 0;
			break;
		}
		/* same payloads as the sorted run (which is sorted by payload within keys) */
		qsort(got, c, 8, eytzref_cmp_u64);
		{
			uint64_t   *want = malloc((c + 1) * 8);

			memcpy(want, sp + first, c * 8);
			qsort(want, c, 8, eytzref_cmp_u64);
			for (j = 0; j < c; j++)
				if (want[j] != got[j])
					ok = 0;
			free(want);
		}
		if (!ok)
			printf("FAIL k=%u n=%llu: payloads differ for [%llu,%llu]\n", k, (unsigned long long) n,
				   (unsigned long long) lo, (unsigned long long) hi);
	}
	/* the build itself: every level sorted, sorted array is a permutation of (key,payload) */
	for (i = 1; i < n && ok; i++)
		if (sk[i - 1] > sk[i] || (sk[i - 1] == sk[i] && sp[i - 1] >= sp[i]))
			ok = 0;
	free(keys);
	free(pays);
	free(ek);
	free(ep);
	free(sk);
	free(sp);
	free(got);
	return ok;
}

int
main(void)
{
	static const uint32_t ks[] = {2, 3, 5, 9, 17, 33};
	int			passed = 0,
				failed = 0;
	size_t		ki;

	rng_state = (uint64_t) time(NULL);
	if (getenv("EYTZ_SEED"))
		rng_state = strtoull(getenv("EYTZ_SEED"), NULL, 0);
	printf("seed %llu\n", (unsigned long long) rng_state);
	for (ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
	{
		uint32_t	k = ks[ki];
		uint64_t	sizes[24];
		int			ns = 0,
					m,
					si,
					wide,
					dups;
		uint64_t	pw = 1;

		sizes[ns++] = 0;
		sizes[ns++] = 1;
		sizes[ns++] = 2;
		for (m = 1; m <= 4 && pw * k < 200000; m++)
		{
			pw *= k;
			sizes[ns++] = pw - 1;
			sizes[ns++] = pw;
			sizes[ns++] = pw + 1;
		}
		sizes[ns++] = 1 + rnd() % 5000;
		sizes[ns++] = 50000 + rnd() % 50000;
		for (si = 0; si < ns; si++)
			for (wide = 0; wide < 2; wide++)
				for (dups = 0; dups < 2; dups++)
				{
					if (check(k, sizes[si], wide, dups))
						passed++;
					else
						failed++;
				}
	}
	printf("cuda-cpu: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
