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
#include "eytz_stage.h"
#include "eytz_strategy.h"

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

static int	splan_failed;

#define EXPECT(cond, ...) do { if (!(cond)) { splan_failed++; printf("FAIL strategy: " __VA_ARGS__); printf("\n"); } } while (0)

/* The plan of a batch whose queries reach the device in chunks of chunk (0: at once) */
static EytzPlan
plan_chunked(uint64_t n, int kw, uint32_t k, int copy, int points_ok, int point, int wide, uint64_t nq,
			 uint32_t flags, uint64_t chunk)
{
	EytzPlanInput in;

	in.n = n;
	in.key_width = kw;
	in.k = k;
	in.have_ebs_copy = copy;
	in.points_ok = points_ok;
	in.point = point;
	in.wide = wide;
	in.nq = nq;
	in.flags = flags;
	in.chunk = chunk;
	return eytz_plan(&in);
}

static EytzPlan
plan_of(uint64_t n, int kw, uint32_t k, int copy, int points_ok, int point, int wide, uint64_t nq, uint32_t flags)
{
	return plan_chunked(n, kw, k, copy, points_ok, point, wide, nq, flags, 0);
}

/* The composite strategy's choices (README "Composite strategy"); returns 1 when all held */
static int
check_strategy(void)
{
	EytzPlan	p;
	int			i;

	splan_failed = 0;
	/* 2^15 unique keys, point batch: the binary copy wholly in shared memory */
	p = plan_of(1 << 15, 4, 9, 1, 1, 1, 0, 1 << 25, 0);
	EXPECT(p.path == EYTZ_PATH_SMEM && p.smem_on_copy, "2^15 points: path %d copy %d", p.path, p.smem_on_copy);
	/* no binary copy: the index itself fits (k = 9 nodes) */
	p = plan_of(1 << 15, 4, 9, 0, 1, 1, 0, 1 << 25, 0);
	EXPECT(p.path == EYTZ_PATH_SMEM && !p.smem_on_copy, "2^15 points, no copy: path %d", p.path);
	/* 2^28 keys, 2^25 points: globally sorted lookups, no pinning */
	p = plan_of(1 << 28, 4, 9, 0, 1, 1, 0, 1 << 25, 0);
	EXPECT(p.path == EYTZ_PATH_SORTED && p.strat == EYTZGPU_STRAT_SINGLE && p.reord == EYTZGPU_REORDER_GLOBAL &&
		   p.pin_bytes == 0, "2^28 points: path %d strat %#x reord %#x pin %u", p.path, p.strat, p.reord,
		   p.pin_bytes);
	/* ... but not below 32 MiB of keys, nor for small batches: EKS single, 16 KiB pinned */
	p = plan_of((1 << 23) - 1, 4, 9, 0, 1, 1, 0, 1 << 25, 0);
	EXPECT(p.path == EYTZ_PATH_KERNELS && p.strat == EYTZGPU_STRAT_SINGLE && p.pin_bytes == EYTZ_PIN_BYTES_LARGE,
		   "2^23-1 points: path %d strat %#x pin %u", p.path, p.strat, p.pin_bytes);
	p = plan_of(1 << 28, 4, 9, 0, 1, 1, 0, 1000, 0);
	EXPECT(p.path == EYTZ_PATH_KERNELS, "2^28, 1000 points: path %d", p.path);
	/* duplicate keys: no fast path */
	p = plan_of(1 << 28, 4, 9, 0, 0, 1, 0, 1 << 25, 0);
	EXPECT(p.path == EYTZ_PATH_KERNELS && p.reord == EYTZGPU_REORDER_NONE, "2^28 duplicates: path %d", p.path);
	/* wide ranges: EKS group, no pinning; not for k = 2 */
	p = plan_of(1 << 20, 4, 9, 0, 1, 0, 1, 1000, 0);
	EXPECT(p.strat == EYTZGPU_STRAT_GROUP && p.pin == EYTZGPU_PIN_OFF && p.pin_bytes == 0,
		   "wide ranges: strat %#x pin %#x", p.strat, p.pin);
	p = plan_of(1 << 20, 4, 2, 0, 1, 0, 1, 1000, 0);
	EXPECT(p.strat == EYTZGPU_STRAT_SINGLE, "wide ranges k = 2: strat %#x", p.strat);
	/* tiny index, short ranges: EBS on the copy, (nearly) the whole index pinned */
	p = plan_of(1000, 8, 9, 1, 0, 0, 0, 1000, 0);
	EXPECT(p.strat == EYTZGPU_STRAT_EBS && p.on_copy && p.pin_bytes == EYTZ_PIN_BYTES_SMALL,
		   "tiny ranges: strat %#x copy %d pin %u", p.strat, p.on_copy, p.pin_bytes);
	/* explicit flags: EBS without a copy falls back; a global reordering of unique points sorts them */
	p = plan_of(1 << 20, 4, 9, 0, 0, 1, 0, 1000, EYTZGPU_STRAT_EBS);
	EXPECT(p.strat == EYTZGPU_STRAT_SINGLE && !p.on_copy, "EBS without copy: strat %#x", p.strat);
	p = plan_of(1 << 20, 4, 9, 0, 1, 1, 0, 1000, EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_GLOBAL);
	EXPECT(p.path == EYTZ_PATH_SORTED && p.pin == EYTZGPU_PIN_ON, "explicit global points: path %d", p.path);
	p = plan_of(1 << 20, 4, 9, 0, 1, 1, 0, 1000, EYTZGPU_STRAT_GROUP | EYTZGPU_REORDER_GLOBAL);
	EXPECT(p.path == EYTZ_PATH_KERNELS && p.strat == EYTZGPU_STRAT_GROUP, "explicit group: path %d", p.path);
	p = plan_of(1 << 15, 4, 9, 1, 1, 1, 0, 1 << 20, EYTZGPU_PIN_OFF);
	EXPECT(p.path == EYTZ_PATH_KERNELS && p.pin_bytes == 0, "explicit pin off: path %d", p.path);
	/* join points arriving in chunks of 2^20: each walked as it arrives (EKS single, 16 KiB pinned) */
	p = plan_chunked(1 << 28, 4, 9, 0, 1, 1, 0, 1 << 25, 0, 1 << 20);
	EXPECT(p.path == EYTZ_PATH_KERNELS && p.chunked && p.strat == EYTZGPU_STRAT_SINGLE &&
		   p.reord == EYTZGPU_REORDER_NONE && p.pin_bytes == EYTZ_PIN_BYTES_LARGE,
		   "2^28 chunked points: path %d chunked %d strat %#x pin %u", p.path, p.chunked, p.strat, p.pin_bytes);
	/* ... not in small chunks, nor when the index fits shared memory, nor for ranges or duplicates */
	p = plan_chunked(1 << 28, 4, 9, 0, 1, 1, 0, 1 << 20, 0, 1 << 16);
	EXPECT(p.path == EYTZ_PATH_SORTED && !p.chunked, "2^28, chunks of 2^16: path %d", p.path);
	p = plan_chunked(1 << 15, 4, 9, 1, 1, 1, 0, 1 << 25, 0, 1 << 20);
	EXPECT(p.path == EYTZ_PATH_SMEM && !p.chunked, "2^15 chunked points: path %d", p.path);
	p = plan_chunked(1 << 28, 4, 9, 0, 0, 1, 0, 1 << 25, 0, 1 << 20);
	EXPECT(!p.chunked, "chunked duplicates");
	/* an empty batch takes no fast path */
	p = plan_of(1 << 15, 4, 9, 1, 1, 1, 0, 0, 0);
	EXPECT(p.path == EYTZ_PATH_KERNELS, "empty batch: path %d", p.path);

	/* invariants on random inputs */
	for (i = 0; i < 20000; i++)
	{
		static const uint32_t ks[] = {2, 3, 5, 9, 17, 33};
		static const uint32_t fl[] = {0, EYTZGPU_STRAT_SINGLE, EYTZGPU_STRAT_GROUP, EYTZGPU_STRAT_EBS};
		uint32_t	k = ks[rnd() % 6];
		uint32_t	flags = fl[rnd() % 4] | (uint32_t) (rnd() % 4) << 8 | (uint32_t) (rnd() % 3) << 10;
		int			kw = rnd() % 2 ? 4 : 8;
		uint64_t	n = rnd() % 2 ? rnd() % 100000 : rnd() % (1ull << 30);
		int			copy = k != 2 && n * kw <= EYTZ_EBS_COPY_MAX_KEY_BYTES && rnd() % 4 != 0;
		int			pok = (int) (rnd() % 2),
					point = (int) (rnd() % 2),
					wide = (int) (rnd() % 2);
		uint64_t	nq = rnd() % 3 ? rnd() % (1u << 26) : rnd() % 10;

		if ((flags & EYTZGPU_REORDER_MASK) == EYTZGPU_REORDER_MASK)
			flags &= ~EYTZGPU_REORDER_MASK;
		p = plan_chunked(n, kw, k, copy, pok, point, wide, nq, flags, rnd() % 2 ? 0 : rnd() % (1u << 21));
		EXPECT(p.strat == EYTZGPU_STRAT_SINGLE || p.strat == EYTZGPU_STRAT_GROUP || p.strat == EYTZGPU_STRAT_EBS,
			   "strat %#x", p.strat);
		EXPECT(p.strat != EYTZGPU_STRAT_GROUP || k > 2, "group on k = 2");
		EXPECT(!p.on_copy || (copy && p.strat == EYTZGPU_STRAT_EBS), "on a copy that is not there");
		EXPECT(p.reord != EYTZGPU_REORDER_AUTO && p.pin != EYTZGPU_PIN_AUTO, "unresolved reord/pin");
		EXPECT((p.pin == EYTZGPU_PIN_OFF) == (p.pin_bytes == 0), "pin %#x with %u bytes", p.pin, p.pin_bytes);
		EXPECT(p.path == EYTZ_PATH_KERNELS || (point && pok && nq > 0), "fast path for a batch that has none");
		EXPECT(!p.chunked || (p.path == EYTZ_PATH_KERNELS && point && pok && flags == 0 && nq > 0),
			   "chunked walk of a batch that has none");
		EXPECT(p.path != EYTZ_PATH_SMEM ||
			   eytz_smem_point_fits(n, p.smem_on_copy ? 1 : k - 1, kw), "shared-memory path that does not fit");
		EXPECT(p.path != EYTZ_PATH_SORTED || flags == 0 || (flags & EYTZGPU_REORDER_MASK) == EYTZGPU_REORDER_GLOBAL,
			   "sorted path not asked for");
		EXPECT(flags != 0 || p.path == EYTZ_PATH_KERNELS ||
			   (p.strat == EYTZGPU_STRAT_SINGLE && (p.path == EYTZ_PATH_SORTED) == (p.reord == EYTZGPU_REORDER_GLOBAL)),
			   "automatic fast path with strat %#x reord %#x", p.strat, p.reord);
		if (splan_failed > 20)
			break;
	}
	return splan_failed == 0;
}

/* Wide-range sampling: expected hits of the sampled ranges against EYTZ_WIDE_RANGE_HITS */
static int
check_wide_ranges(void)
{
	uint64_t	lo[256],
				hi[256];
	uint32_t	lo4[256],
				hi4[256];
	/* 2^20 keys over 2^32: one key per 4096 values */
	uint64_t	n = 1 << 20,
				mx = 0xFFFFFFFFull;
	int			i,
				ok = 1;

	for (i = 0; i < 256; i++)
	{
		lo[i] = rnd() & 0x7FFFFFFFull;
		hi[i] = lo[i] + 4096ull * (EYTZ_WIDE_RANGE_HITS * 2);
		lo4[i] = (uint32_t) lo[i];
		hi4[i] = (uint32_t) hi[i];
	}
	ok &= eytz_wide_ranges(lo, hi, 8, 4, 256, 0, mx, n) == 1;
	ok &= eytz_wide_ranges(lo4, hi4, 4, 4, 256, 0, mx, n) == 1;
	/* junk above the index's 4 bytes is ignored (keys are narrowed by truncation) */
	for (i = 0; i < 256; i++)
		lo[i] |= (rnd() | 1) << 32;
	ok &= eytz_wide_ranges(lo, hi, 8, 4, 256, 0, mx, n) == 1;
	for (i = 0; i < 256; i++)
	{
		lo[i] &= 0x7FFFFFFFull;
		hi[i] = lo[i] + 4096ull * (EYTZ_WIDE_RANGE_HITS / 4);
	}
	ok &= eytz_wide_ranges(lo, hi, 8, 4, 256, 0, mx, n) == 0;
	ok &= eytz_wide_ranges(lo, NULL, 8, 4, 256, 0, mx, n) == 0;
	ok &= eytz_wide_ranges(lo, hi, 8, 4, 0, 0, mx, n) == 0;
	if (!ok)
		printf("FAIL wide-range sampling\n");
	return ok;
}

/* GPU copy geometry: whole nodes and whole AoS tiles, 8-byte aligned payloads */
static int
check_padding(void)
{
	static const uint32_t ks[] = {2, 3, 5, 9, 17, 33};
	int			ok = 1;

	for (int i = 0; i < 6; i++)
		for (int kw = 4; kw <= 8; kw += 4)
			for (int t = 0; t < 200; t++)
			{
				uint64_t	n = t < 100 ? (uint64_t) t : rnd() % 10000000;
				uint32_t	tp = eytz_aos_tile_log2(ks[i], kw);
				uint64_t	s = eytz_padded_slots(n, ks[i], kw);

				ok &= s >= n && s % (ks[i] - 1) == 0 && s % (1u << tp) == 0 && s - n < (ks[i] - 1) + (1u << tp);
				ok &= ((uint64_t) kw << tp) % 8 == 0;
			}
	if (!ok)
		printf("FAIL GPU copy padding\n");
	return ok;
}

/*
 * The staging copies (streaming stores): every length 0..200 at every
 * alignment of source and destination, nothing written outside
 */
static int
check_stage(void)
{
	uint64_t	src[256];
	uint32_t	dst[512];
	uint32_t	want[512];
	int			ok = 1;

	for (int i = 0; i < 256; i++)
		src[i] = rnd();
	for (int so = 0; so < 4; so++)
		for (int d = 0; d < 4; d++)
			for (uint64_t m = 0; m <= 200; m++)
			{
				memset(dst, 0xA5, sizeof(dst));
				memset(want, 0xA5, sizeof(want));
				for (uint64_t i = 0; i < m; i++)
					want[d + i] = (uint32_t) src[so + i];
				eytz_stage_narrow(dst + d, src + so, m);
				eytz_stage_fence();
				ok &= memcmp(dst, want, sizeof(dst)) == 0;

				memset(dst, 0xA5, sizeof(dst));
				memset(want, 0xA5, sizeof(want));
				memcpy(want + d, (const uint32_t *) src + so, m * 4);
				eytz_stage_copy(dst + d, (const uint32_t *) src + so, m * 4);
				eytz_stage_fence();
				ok &= memcmp(dst, want, sizeof(dst)) == 0;
			}
	if (!ok)
		printf("FAIL staging copies\n");
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
	passed += check_strategy() ? 1 : 0;
	failed += splan_failed ? 1 : 0;
	if (check_wide_ranges())
		passed++;
	else
		failed++;
	if (check_padding())
		passed++;
	else
		failed++;
	if (check_stage())
		passed++;
	else
		failed++;
	printf("cuda-cpu: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
