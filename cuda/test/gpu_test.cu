/*
 * gpu_test.cu
 *		GPU test of eytzgpu: every kernel and configuration against the CPU
 *		reference (eytz_cpu_ref.h) on fresh random input.
 *
 * Covers key widths 4/8, every fan-out, sizes 0, 1, k^m-1, k^m, k^m+1 and a
 * large one, duplicates, misses, keys below/above all keys, ranges (also empty
 * ones), SoA/AoS, every strategy/reordering/pinning flag of the C API, the
 * POINT-mode kernels and the sorted-array baseline.  GPU builds must be
 * byte-identical to the CPU build.  Outputs are poisoned before each run.
 * Prints "cuda-gpu: N passed, N failed"; without a GPU it says it skipped and
 * exits 0.  --quick: small sizes only (for compute-sanitizer); --csr: only the
 * CSR lookups of many tiles (test_csr_large); --large: those and the large
 * joins (test_join_large).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>
#include <algorithm>
#include <unordered_set>

#include "eytzgpu_cuda_test.h"
#include "eytz_cpu_ref.h"
#include "eytz_kernels.cuh"

static int	passed,
			failed;
static bool tiny_run;			/* --tiny (racecheck): the join API once per case */
static uint64_t rng_state;

static uint64_t
rnd(void)
{
	return eytzref_random(&rng_state);
}

#define FAIL(...) do { failed++; if (failed < 30) { printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } } while (0)

struct Data
{
	int			kw;
	uint32_t	k;
	uint64_t	n;
	std::vector<uint64_t> keys,
				pays;			/* input, ascending payload order */
	std::vector<uint64_t> ek,
				ep;				/* CPU Eytzinger */
	std::vector<uint64_t> sk,
				sp;				/* CPU sorted */
	uint64_t	kmax;			/* largest key value of the width */
};

/* Payloads: heap-like TIDs; with tombstones (the last entries); spread over 2^48 (no one-key join sort) */
enum PayKind
{
	PAYS_TIDS = 0,
	PAYS_TOMBSTONES = 1,
	PAYS_WIDE = 2
};

static void
make_data(Data &d, int kw, uint32_t k, uint64_t n, bool dups, int pays = PAYS_TIDS)
{
	uint64_t	i;
	uint64_t	dom;
	uint64_t	tombs = pays == PAYS_TOMBSTONES ? std::min<uint64_t>(n / 16 + 1, 60000) : 0;
	std::unordered_set<uint64_t> seen;

	d.kw = kw;
	d.k = k;
	d.n = n;
	d.kmax = kw == 4 ? 0xFFFFFFFFull : ~0ull;
	/* duplicates: a small key domain; else the full width (leaving 0 and max free mostly) */
	dom = dups ? (n / 3 + 1) : d.kmax;
	d.keys.resize(n);
	d.pays.resize(n);
	/* without dups the keys are distinct: the point paths need that */
	if (!dups)
		seen.reserve(n);
	for (i = 0; i < n; i++)
	{
		uint64_t	key;

		do
		{
			key = dups ? 1000 + rnd() % dom : 1 + rnd() % (d.kmax - 1);
			if (kw == 4)
				key &= 0xFFFFFFFFull;
		} while (!dups && !seen.insert(key).second);
		d.keys[i] = key;
		/* ascending payloads, like a heap scan's TIDs (tombstones: block 0xFFFFFFFF, last) */
		if (pays == PAYS_WIDE)
			d.pays[i] = ((i * 2654435ull + 1) << 16) | (i % 60000 + 1);
		else if (i + tombs >= n)
			d.pays[i] = eytz_pack_tid(0xFFFFFFFFu, (uint16_t) (i + tombs - n + 1));
		else
			d.pays[i] = eytz_pack_tid((uint32_t) (i / 50 + 1), (uint16_t) (i % 50 + 1));
	}
	d.ek.resize(n);
	d.ep.resize(n);
	d.sk.resize(n);
	d.sp.resize(n);
	if (eytzref_build(d.keys.data(), d.pays.data(), n, k, d.ek.data(), d.ep.data(), d.sk.data(), d.sp.data()) != 0)
	{
		fprintf(stderr, "out of host memory\n");
		exit(2);
	}
}

/* Keys of the given width from 64-bit values */
static std::vector<unsigned char>
narrow(const std::vector<uint64_t> &v, int kw)
{
	std::vector<unsigned char> out(v.size() * kw + 8);

	for (size_t i = 0; i < v.size(); i++)
	{
		if (kw == 4)
		{
			uint32_t	x = (uint32_t) v[i];

			memcpy(&out[i * 4], &x, 4);
		}
		else
			memcpy(&out[i * 8], &v[i], 8);
	}
	return out;
}

/* Query batch: points (hi empty) or ranges */
static void
make_queries(const Data &d, uint64_t nq, bool ranges, std::vector<uint64_t> &lo, std::vector<uint64_t> &hi)
{
	lo.resize(nq);
	hi.resize(ranges ? nq : 0);
	for (uint64_t i = 0; i < nq; i++)
	{
		uint64_t	r = rnd() % 10;
		uint64_t	a;

		if (d.n > 0 && r < 5)
			a = d.sk[rnd() % d.n];		/* present */
		else if (r < 7)
			a = rnd() & d.kmax;			/* most likely a miss */
		else if (r == 7)
			a = 0;						/* below everything */
		else if (r == 8)
			a = d.kmax;					/* above everything */
		else
			a = d.n > 0 ? d.sk[0] - (d.sk[0] > 0) : 5;	/* just below the smallest */
		lo[i] = a;
		if (ranges)
		{
			/* mostly short ranges; some long ones (capped so the check stays cheap) */
			uint64_t	w = rnd() % 64;

			if (rnd() % 8 == 0)
				w = d.n <= 5000 ? (rnd() & d.kmax) >> (rnd() % 40)
					: rnd() % ((d.sk[d.n - 1] - d.sk[0]) / d.n * 2048 + 256);

			if (rnd() % 16 == 0)
				hi[i] = a > 0 ? a - 1 : 0;		/* empty range (or [0,0]) */
			else
				hi[i] = a + w > d.kmax || a + w < a ? d.kmax : a + w;
			/* a few very wide ranges over the whole index */
			if (d.n <= 5000 && rnd() % 64 == 0)
			{
				lo[i] = 0;
				hi[i] = d.kmax;
			}
		}
	}
}

/* A point result: NO_MATCH for a miss, else the payload of one of the key's matches */
static bool
point_result_ok(const Data &d, uint64_t key, uint64_t got)
{
	uint64_t	first,
				c = eytzref_sorted_range(d.sk.data(), d.n, key, key, &first);

	if (c == 0)
		return got == eytzk::NO_MATCH;
	return std::find(d.sp.begin() + first, d.sp.begin() + first + c, got) != d.sp.begin() + first + c;
}

static bool
check_csr(const Data &d, const std::vector<uint64_t> &lo, const std::vector<uint64_t> &hi,
		  const EytzGpuResult &res, const char *what)
{
	uint64_t	nq = lo.size();
	std::vector<uint64_t> ref,
				got;
	uint64_t	tot = 0;

	if (res.offsets[0] != 0)
	{
		FAIL("%s: offsets[0] = %llu", what, (unsigned long long) res.offsets[0]);
		return false;
	}
	for (uint64_t i = 0; i < nq; i++)
	{
		uint64_t	h = hi.empty() ? lo[i] : hi[i];
		uint64_t	c = eytzref_range(d.ek.data(), d.ep.data(), d.n, d.k, lo[i], h, NULL, 0);
		uint64_t	first,
					cs = eytzref_sorted_range(d.sk.data(), d.n, lo[i], h, &first);
		uint64_t	a = res.offsets[i],
					b = res.offsets[i + 1];

		if (c != cs)
		{
			FAIL("%s: reference disagrees with sorted array (query %llu)", what, (unsigned long long) i);
			return false;
		}
		if (b < a || b - a != c)
		{
			FAIL("%s: query %llu [%llu,%llu] count %llu, expected %llu (n=%llu k=%u kw=%d)", what,
				 (unsigned long long) i, (unsigned long long) lo[i], (unsigned long long) h,
				 (unsigned long long) (b - a), (unsigned long long) c, (unsigned long long) d.n, d.k, d.kw);
			return false;
		}
		ref.resize(c);
		eytzref_range(d.ek.data(), d.ep.data(), d.n, d.k, lo[i], h, ref.data(), c);
		got.assign(res.payloads + a, res.payloads + b);
		std::sort(ref.begin(), ref.end());
		std::sort(got.begin(), got.end());
		if (ref != got)
		{
			FAIL("%s: query %llu payloads differ (n=%llu k=%u kw=%d)", what, (unsigned long long) i,
				 (unsigned long long) d.n, d.k, d.kw);
			return false;
		}
		tot += c;
	}
	if (res.total != tot || res.offsets[nq] != tot)
	{
		FAIL("%s: total %llu, expected %llu", what, (unsigned long long) res.total, (unsigned long long) tot);
		return false;
	}
	return true;
}

static const uint32_t lookup_flags[] = {
	0,
	EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_NONE | EYTZGPU_PIN_OFF,
	EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_LOCAL | EYTZGPU_PIN_ON,
	EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_GLOBAL | EYTZGPU_PIN_ON,
	EYTZGPU_STRAT_GROUP | EYTZGPU_REORDER_NONE | EYTZGPU_PIN_OFF,
	EYTZGPU_STRAT_GROUP | EYTZGPU_REORDER_GLOBAL | EYTZGPU_PIN_ON,
	EYTZGPU_STRAT_EBS | EYTZGPU_REORDER_LOCAL | EYTZGPU_PIN_ON,
};

/* Lookups through the C API on one handle */
static void
test_handle(const Data &d, EytzGpuIndex *h, const char *what, bool quick)
{
	char		err[256];

	for (int ranges = 0; ranges < 2; ranges++)
	{
		std::vector<uint64_t> lo,
					hi;
		uint64_t	nq = quick ? 300 : 1000 + rnd() % 3000;

		make_queries(d, nq, ranges, lo, hi);
		std::vector<unsigned char> nlo = narrow(lo, d.kw),
					nhi = narrow(hi, d.kw);

		for (size_t f = 0; f < sizeof(lookup_flags) / sizeof(lookup_flags[0]); f++)
		{
			if (quick && (f == 2 || f == 4 || f == 6))
				continue;		/* sanitizer runs: keep to a representative half */
			EytzGpuResult res;
			char		name[200];
			int			rc;

			snprintf(name, sizeof(name), "%s %s flags=%#x", what, ranges ? "range" : "point", lookup_flags[f]);
			memset(&res, 0, sizeof(res));
			rc = eytzgpu_lookup(h, nlo.data(), ranges ? nhi.data() : NULL, nq,
								lookup_flags[f] | EYTZGPU_POISON, &res, err, sizeof(err));
			if (rc != EYTZGPU_OK)
			{
				FAIL("%s: lookup rc=%d %s", name, rc, err);
				continue;
			}
			if (check_csr(d, lo, hi, res, name))
				passed++;
		}
	}
	/* an empty batch */
	{
		EytzGpuResult res;

		if (eytzgpu_lookup(h, NULL, NULL, 0, 0, &res, err, sizeof(err)) == EYTZGPU_OK && res.total == 0 &&
			res.offsets[0] == 0)
			passed++;
		else
			FAIL("%s: empty batch", what);
	}
}

/* POINT-mode kernels and the sorted-array baseline, called directly */
template <class KT>
static void
test_point_kernels(const Data &d, bool quick)
{
	using namespace eytzk;
	uint64_t	n = d.n,
				pad = eytz_padded_slots(n, d.k, sizeof(KT));
	std::vector<uint64_t> lo,
				hi;
	uint64_t	nq = quick ? 300 : 5000;
	KT		   *dk = NULL,
			   *dsk = NULL,
			   *dq = NULL;
	uint64_t   *dp = NULL,
			   *dsp = NULL,
			   *dout = NULL;
	unsigned char *daos = NULL;
	uint32_t	tp = eytz_aos_tile_log2(d.k, sizeof(KT));
	uint32_t	tb = (uint32_t) ((sizeof(KT) + 8) << tp);

	make_queries(d, nq, false, lo, hi);
	std::vector<KT> ek(pad, 0),
				sk(n + 1),
				q(nq);
	std::vector<uint64_t> ep(pad, 0),
				out(nq);

	for (uint64_t i = 0; i < n; i++)
	{
		ek[i] = (KT) d.ek[i];
		ep[i] = d.ep[i];
		sk[i] = (KT) d.sk[i];
	}
	for (uint64_t i = 0; i < nq; i++)
		q[i] = (KT) lo[i];
	if (cudaMalloc(&dk, pad * sizeof(KT)) || cudaMalloc(&dp, pad * 8) || cudaMalloc(&dsk, (n + 1) * sizeof(KT)) ||
		cudaMalloc(&dsp, (n + 1) * 8) || cudaMalloc(&dq, nq * sizeof(KT)) || cudaMalloc(&dout, nq * 8) ||
		cudaMalloc(&daos, (pad >> tp) * tb + 16))
	{
		FAIL("point kernels: cudaMalloc");
		return;
	}
	cudaMemcpy(dk, ek.data(), pad * sizeof(KT), cudaMemcpyHostToDevice);
	cudaMemcpy(dp, ep.data(), pad * 8, cudaMemcpyHostToDevice);
	cudaMemcpy(dsk, sk.data(), (n + 1) * sizeof(KT), cudaMemcpyHostToDevice);
	cudaMemcpy(dsp, d.sp.data(), n * 8, cudaMemcpyHostToDevice);
	cudaMemcpy(dq, q.data(), nq * sizeof(KT), cudaMemcpyHostToDevice);
	cudaMemset(daos, 0, (pad >> tp) * tb + 16);
	k_soa_to_aos<KT><<<64, 256>>>(n, dk, dp, daos, tp, tb);

	struct V
	{
		int			algo;
		bool		aos,
					lsort;
		uint32_t	pin;
		int			bps;
		uint32_t	logc;		/* chunked reordering, small chunks to cross boundaries */
	}			vs[] = {
		{ALGO_SINGLE, false, false, 0, 0, 0}, {ALGO_SINGLE, true, false, 0, 1, 0},
		{ALGO_SINGLE, false, true, 48 * 1024, 0, 0}, {ALGO_SINGLE, true, true, 96 * 1024, 1, 0},
		{ALGO_SINGLE, false, false, 200 * 1024, 1, 0}, {ALGO_SINGLE, false, false, 0, 0, 5},
		{ALGO_SINGLE, true, false, 16 * 1024, 0, 8},
		{ALGO_GROUP, false, false, 0, 0, 0}, {ALGO_GROUP, true, false, 16 * 1024, 0, 0},
		{ALGO_GROUP, true, false, 0, 0, 6},
		{ALGO_BS, false, false, 0, 0, 0}, {ALGO_BS, false, false, 0, 0, 4},
	};
	uint64_t   *ca = NULL,
			   *cb = NULL;
	void	   *ctemp = NULL;
	size_t		ctb = 0;
	KT			mn = n ? (KT) d.sk[0] : 0,
				mx = n ? (KT) d.sk[n - 1] : 0;

	if (reorder_chunked_temp(nq, &ctb) || cudaMalloc(&ca, nq * 8) || cudaMalloc(&cb, nq * 8) ||
		cudaMalloc(&ctemp, ctb))
	{
		FAIL("point kernels: reorder buffers");
		return;
	}

	for (size_t v = 0; v < sizeof(vs) / sizeof(vs[0]); v++)
	{
		Idx<KT>		ix;
		Qs<KT>		qs = {dq, NULL, NULL, nq};
		Outs		o = {dout, NULL, NULL};
		Cfg			cfg = {vs[v].algo, vs[v].lsort, vs[v].pin, vs[v].bps};
		cudaError_t e;
		bool		ok = true;

		if (vs[v].algo == ALGO_GROUP && d.k == 2)
			continue;
		if (vs[v].algo == ALGO_BS)
			ix = make_idx<KT>(dsk, dsp, NULL, n, d.k);
		else
			ix = make_idx<KT>(dk, dp, vs[v].aos ? daos : NULL, n, d.k);
		cudaMemset(dout, 0xAB, nq * 8);
		e = cudaSuccess;
		if (vs[v].logc)
			e = reorder_chunked<KT>(qs, mn, mx, Reorder{vs[v].logc, 16}, ca, cb, ctemp, ctb, 0);
		if (e == cudaSuccess)
			e = launch_lookup<KT, MODE_POINT>(ix, qs, o, cfg, 0);
		if (e == cudaSuccess)
			e = cudaDeviceSynchronize();
		if (e != cudaSuccess)
		{
			FAIL("point kernel %zu: %s", v, cudaGetErrorString(e));
			continue;
		}
		cudaMemcpy(out.data(), dout, nq * 8, cudaMemcpyDeviceToHost);
		for (uint64_t i = 0; i < nq && ok; i++)
		{
			ok = point_result_ok(d, lo[i], out[i]);
			if (!ok)
				FAIL("point kernel %zu (algo %d aos %d lsort %d pin %u): n=%llu k=%u kw=%d query %llu got %llx",
					 v, vs[v].algo, vs[v].aos, vs[v].lsort, vs[v].pin, (unsigned long long) n, d.k, d.kw,
					 (unsigned long long) i, (unsigned long long) out[i]);
		}
		if (ok)
			passed++;
	}
	/*
	 * Point fast paths: whole index in shared memory (1, 2, 4 lookups per
	 * thread; SoA and AoS), globally sorted lookups (payloads: partition +
	 * scatter and direct writes; positions only), poisoned outputs.
	 */
	{
		SortedWork<KT> sw;
		bool		okw = true;

		if (sorted_work_alloc<KT>(sw, nq) != cudaSuccess)
		{
			FAIL("point fast paths: cudaMalloc");
			okw = false;
		}
		/*
		 * 0-2: smem q 1/2/4 SoA, 3: smem q4 AoS, 4-6: sorted payloads, 7-8:
		 * positions only, 9-10: sorted payloads with the fused write-back
		 * (SoA, AoS), 11: its positions only
		 */
		for (int f = 0; okw && f < 12; f++)
		{
			Idx<KT>		ix;
			Cfg			cfg = {ALGO_SINGLE, false, (uint32_t) (f == 6 ? 16 * 1024 : 0), 0};
			KT			mn = n ? (KT) d.sk[0] : 0,
						mx = n ? (KT) d.sk[n - 1] : 0;
			bool		pos = f == 7 || f == 8 || f == 11;
			cudaError_t e = cudaSuccess;
			bool		ok = true;

			ix = make_idx<KT>(dk, dp, f == 3 || f == 5 || f == 10 ? daos : NULL, n, d.k);
			if (f <= 3 && !smem_point_fits(ix))
				continue;
			cudaMemset(dout, 0xAB, nq * 8);
			if (f <= 3)
				e = launch_point_smem<KT>(ix, dq, nq, dout, f == 3 ? 4 : 1 << f, 0, 0);
			else if (f == 4)
				e = sorted_point<KT, false>(ix, dq, nq, dout, cfg, mn, mx, 16, quick ? 8 : -1, sw, false, 0);
			else if (f == 5)
				e = sorted_point<KT, false>(ix, dq, nq, dout, cfg, mn, mx, 8, 0, sw, false, 0);
			else if (f == 6)
				e = sorted_point<KT, false>(ix, dq, nq, dout, cfg, mn, mx, 12, 5, sw, false, 0);
			else if (f == 7)
			{
				Qs<KT>		qs = {dq, NULL, NULL, nq};
				Outs		o = {dout, NULL, NULL};

				e = launch_point_k<KT, true>(ix, qs, o, cfg, 0, 0);
			}
			else if (f == 8)
				e = sorted_point<KT, true>(ix, dq, nq, dout, cfg, mn, mx, 16, -1, sw, false, 0);
			else if (f == 11)
				e = sorted_point<KT, true>(ix, dq, nq, dout, cfg, mn, mx, 16, -2, sw, false, 0);
			else
				e = sorted_point<KT, false>(ix, dq, nq, dout, cfg, mn, mx, f == 9 ? 16 : 12, -2, sw, false, 0);
			if (e == cudaSuccess)
				e = cudaDeviceSynchronize();
			if (e != cudaSuccess)
			{
				FAIL("point fast path %d: %s", f, cudaGetErrorString(e));
				continue;
			}
			cudaMemcpy(out.data(), dout, nq * 8, cudaMemcpyDeviceToHost);
			for (uint64_t i = 0; i < nq && ok; i++)
			{
				if (pos)
				{
					/* the lower-bound slot: its key is the smallest key >= the query */
					uint64_t	lb = 0,
								hi2 = n;

					while (lb < hi2)
					{
						uint64_t	mid = (lb + hi2) / 2;

						if ((KT) d.sk[mid] < (KT) lo[i])
							lb = mid + 1;
						else
							hi2 = mid;
					}
					if (lb == n)
						ok = out[i] == NO_MATCH;
					else
						ok = out[i] < n && (KT) d.ek[out[i]] == (KT) d.sk[lb];
				}
				else
					ok = point_result_ok(d, lo[i], out[i]);
				if (!ok)
					FAIL("point fast path %d: n=%llu k=%u kw=%d query %llu got %llx", f, (unsigned long long) n,
						 d.k, d.kw, (unsigned long long) i, (unsigned long long) out[i]);
			}
			if (ok)
				passed++;
		}
		sorted_work_free<KT>(sw);
	}
	cudaFree(dk);
	cudaFree(dp);
	cudaFree(dsk);
	cudaFree(dsp);
	cudaFree(dq);
	cudaFree(dout);
	cudaFree(daos);
	cudaFree(ca);
	cudaFree(cb);
	cudaFree(ctemp);
}

/*
 * The cluster tile write-backs of sorted point lookups (fused into the lookup
 * and after a CUB partition) over batch sizes around slice and tile
 * boundaries, against a binary search of the CPU's sorted keys; the payload
 * of any duplicate matches.
 */
template <class KT>
static void
test_fused_sizes(int kw, uint32_t k, bool quick)
{
	using namespace eytzk;
	Data		d;
	uint64_t	n = quick ? 5000 : 300000 + rnd() % 1000;
	uint64_t	pad;
	std::vector<uint64_t> sizes = {1, 2, 2047, 2049, 16383, 16384, 16385, 131071, 131072, 131073,
		6000 + rnd() % 3000};
	uint64_t	maxq = 0;

	make_data(d, kw, k, n, rnd() % 2);
	pad = eytz_padded_slots(n, k, sizeof(KT));
	if (!quick)
	{
		sizes.push_back(((uint64_t) 1 << 19) + 1);
		sizes.push_back(((uint64_t) 1 << 20) + rnd() % 100000);
		sizes.push_back(3000000 + rnd() % 1000);
	}
	for (uint64_t s : sizes)
		maxq = std::max(maxq, s);

	std::vector<KT> ek(pad, 0),
				q(maxq);
	std::vector<uint64_t> ep(pad, 0),
				out(maxq),
				lo,
				hi;
	KT		   *dk = NULL,
			   *dq = NULL;
	uint64_t   *dp = NULL,
			   *dout = NULL;
	SortedWork<KT> sw;
	Idx<KT>		ix;
	Cfg			cfg = {ALGO_SINGLE, false, 0, 0};

	for (uint64_t i = 0; i < n; i++)
	{
		ek[i] = (KT) d.ek[i];
		ep[i] = d.ep[i];
	}
	if (sorted_work_alloc<KT>(sw, maxq) != cudaSuccess || cudaMalloc(&dk, pad * sizeof(KT)) ||
		cudaMalloc(&dp, pad * 8) || cudaMalloc(&dq, maxq * sizeof(KT)) || cudaMalloc(&dout, maxq * 8))
	{
		FAIL("fused write-back: cudaMalloc");
		return;
	}
	cudaMemcpy(dk, ek.data(), pad * sizeof(KT), cudaMemcpyHostToDevice);
	cudaMemcpy(dp, ep.data(), pad * 8, cudaMemcpyHostToDevice);
	ix = make_idx<KT>(dk, dp, NULL, n, k);
	for (size_t si = 0; si < 2 * sizes.size(); si++)
	{
		uint64_t	nq = sizes[si / 2];
		int			sb = si % 2 ? -3 : -2;
		bool		ok = true;
		cudaError_t e;

		make_queries(d, nq, false, lo, hi);
		for (uint64_t i = 0; i < nq; i++)
			q[i] = (KT) lo[i];
		cudaMemcpy(dq, q.data(), nq * sizeof(KT), cudaMemcpyHostToDevice);
		cudaMemset(dout, 0xAB, nq * 8);
		cudaMemset(sw.temp, 0xCD, sw.temp_bytes);	/* cursors must be reset by the call */
		e = sorted_point<KT, false>(ix, dq, nq, dout, cfg, (KT) d.sk[0], (KT) d.sk[n - 1], 16, sb, sw, false, 0);
		if (e == cudaSuccess)
			e = cudaDeviceSynchronize();
		if (e != cudaSuccess)
		{
			FAIL("fused write-back %d kw=%d k=%u nq=%llu: %s", sb, kw, k, (unsigned long long) nq,
				 cudaGetErrorString(e));
			continue;
		}
		cudaMemcpy(out.data(), dout, nq * 8, cudaMemcpyDeviceToHost);
		for (uint64_t i = 0; i < nq && ok; i++)
		{
			ok = point_result_ok(d, lo[i], out[i]);
			if (!ok)
				FAIL("fused write-back %d kw=%d k=%u n=%llu nq=%llu: query %llu got %llx", sb, kw, k,
					 (unsigned long long) n, (unsigned long long) nq, (unsigned long long) i,
					 (unsigned long long) out[i]);
		}
		if (ok)
			passed++;
	}
	sorted_work_free<KT>(sw);
	cudaFree(dk);
	cudaFree(dp);
	cudaFree(dq);
	cudaFree(dout);
}

/* ---- join-shaped lookups (eytzgpu_lookup_join) ---- */

typedef std::vector<std::pair<uint64_t, uint32_t>> Pairs;

/* The expected answer of a join batch: the prefix of queries, its live (payload, row) pairs sorted */
static uint64_t
join_ref(const Data &d, const uint64_t *lo, const uint64_t *hi, const uint32_t *rows, uint64_t nq,
		 uint64_t max_matches, Pairs &pairs)
{
	uint64_t	mask = d.kw == 4 ? 0xFFFFFFFFull : ~0ull;
	uint64_t	sum = 0;

	pairs.clear();
	for (uint64_t i = 0; i < nq; i++)
	{
		uint64_t	first,
					c = eytzref_sorted_range(d.sk.data(), d.n, lo[i] & mask, (hi ? hi[i] : lo[i]) & mask, &first);

		if (sum + c > max_matches)
		{
			std::sort(pairs.begin(), pairs.end());
			return i;
		}
		sum += c;
		for (uint64_t r = first; r < first + c; r++)
			if (eytz_tid_block(d.sp[r]) != 0xFFFFFFFFu)
				pairs.push_back(std::make_pair(d.sp[r], rows[i]));
	}
	std::sort(pairs.begin(), pairs.end());
	return nq;
}

/*
 * Included columns attached to a handle: column c's value at a slot is a
 * hash of the slot's payload (payloads are unique), of width w[c], NULL for
 * about one value in eight when the column has NULLs (value bytes 0 then).
 */
struct ColSpec
{
	int			m;
	int			w[EYTZGPU_MAX_COLUMNS];
	bool		has_nulls[EYTZGPU_MAX_COLUMNS];
	uint64_t	salt;
	uint32_t	mask;			/* what the join batches return */
};

static uint64_t
col_value(const ColSpec &cs, int c, uint64_t pay, bool *isnull)
{
	uint64_t	st = pay ^ cs.salt ^ ((uint64_t) (c + 1) << 56);
	uint64_t	h = eytzref_random(&st);

	*isnull = cs.has_nulls[c] && (h >> 61) == 0;
	if (*isnull)
		return 0;
	return cs.w[c] == 8 ? h : h & ((1ull << (8 * cs.w[c])) - 1);
}

/*
 * Attach m random columns (random widths, some with NULLs) to h, an index of
 * d in slot order; checks the device bytes accounted (detached, attached
 * again: the same).  m = 0 detaches.
 */
static bool
attach_test_columns(const Data &d, EytzGpuIndex *h, int m, ColSpec &cs, const char *what)
{
	std::vector<std::vector<unsigned char>> vals(m);
	std::vector<std::vector<uint8_t>> nulls(m);
	const void *vp[EYTZGPU_MAX_COLUMNS];
	const uint8_t *np[EYTZGPU_MAX_COLUMNS];
	int			w[EYTZGPU_MAX_COLUMNS];
	uint64_t	after = 0,
				none = 0,
				again = 0,
				least = 0;
	char		err[256];

	memset(&cs, 0, sizeof(cs));
	cs.m = m;
	cs.salt = rnd();
	for (int c = 0; c < m; c++)
	{
		cs.w[c] = 1 << (rnd() % 4);
		cs.has_nulls[c] = rnd() % 3 != 0;
		w[c] = cs.w[c];
		vals[c].resize(d.n * cs.w[c] + 8);
		nulls[c].assign((d.n + 7) / 8 + 1, 0);
		for (uint64_t t = 0; t < d.n; t++)
		{
			bool		isnull;
			uint64_t	v = col_value(cs, c, d.ep[t], &isnull);

			memcpy(&vals[c][t * cs.w[c]], &v, cs.w[c]);	/* little-endian: the low bytes */
			if (isnull)
				nulls[c][t / 8] |= 1 << (t % 8);
		}
		vp[c] = vals[c].data();
		np[c] = cs.has_nulls[c] ? nulls[c].data() : NULL;
		least += d.n * cs.w[c] + (cs.has_nulls[c] ? (d.n + 7) / 8 : 0);
	}
	if (eytzgpu_attach_columns(h, m, w, vp, np, &after, err, sizeof(err)) != EYTZGPU_OK ||
		eytzgpu_attach_columns(h, 0, NULL, NULL, NULL, &none, err, sizeof(err)) != EYTZGPU_OK ||
		eytzgpu_attach_columns(h, m, w, vp, np, &again, err, sizeof(err)) != EYTZGPU_OK)
	{
		FAIL("%s: attach %d columns: %s", what, m, err);
		return false;
	}
	if (again != after || after < none + least || (m == 0 && after != none))
	{
		FAIL("%s: device bytes with %d columns: %llu, without %llu, again %llu (columns %llu)", what, m,
			 (unsigned long long) after, (unsigned long long) none, (unsigned long long) again,
			 (unsigned long long) least);
		return false;
	}
	return true;
}

/* A random mask of the attached columns (0 at times) for the next join batches */
static void
pick_columns(EytzGpuIndex *h, ColSpec &cs)
{
	char		err[256];

	cs.mask = cs.m == 0 || rnd() % 5 == 0 ? 0 : (uint32_t) (rnd() & ((1ull << cs.m) - 1));
	if (eytzgpu_join_columns(h, cs.mask, err, sizeof(err)) != EYTZGPU_OK)
		FAIL("join columns %#x of %d: %s", cs.mask, cs.m, err);
}

/* The columns of a join result: the mask's at every match, NULL pointers for the others */
static bool
columns_ok(const ColSpec &cs, const EytzGpuJoinResult &res, const char *what)
{
	for (int c = 0; c < EYTZGPU_MAX_COLUMNS; c++)
	{
		bool		on = c < cs.m && (cs.mask & (1u << c));

		if (!on)
		{
			if (res.columns[c] || res.column_nulls[c])
			{
				FAIL("%s: column %d returned though not asked for", what, c);
				return false;
			}
			continue;
		}
		if (!res.columns[c] || !res.column_nulls[c])
		{
			FAIL("%s: column %d missing", what, c);
			return false;
		}
		for (uint64_t j = 0; j < res.nmatch; j++)
		{
			bool		isnull;
			uint64_t	want = col_value(cs, c, res.payloads[j], &isnull),
						got = 0;

			memcpy(&got, (const unsigned char *) res.columns[c] + j * cs.w[c], cs.w[c]);
			if (res.column_nulls[c][j] != (uint8_t) isnull || got != want)
			{
				FAIL("%s: column %d (width %d) of match %llu is %llx%s, expected %llx%s", what, c, cs.w[c],
					 (unsigned long long) j, (unsigned long long) got, res.column_nulls[c][j] ? " NULL" : "",
					 (unsigned long long) want, isnull ? " NULL" : "");
				return false;
			}
		}
	}
	return true;
}

/* The pairs (and with cs the included columns) of a join result against the reference */
static bool
join_ok(const Pairs &ref, uint64_t ref_done, const EytzGpuJoinResult &res, const char *what,
		const ColSpec *cs = NULL)
{
	if (res.nq_done != ref_done || res.nmatch != ref.size())
	{
		FAIL("%s: %llu queries, %llu pairs; expected %llu, %llu", what, (unsigned long long) res.nq_done,
			 (unsigned long long) res.nmatch, (unsigned long long) ref_done, (unsigned long long) ref.size());
		return false;
	}
	for (uint64_t j = 0; j < ref.size(); j++)
		if (res.payloads[j] != ref[j].first || res.rows[j] != ref[j].second)
		{
			FAIL("%s: pair %llu is (%llx, %u), expected (%llx, %u)", what, (unsigned long long) j,
				 (unsigned long long) res.payloads[j], res.rows[j], (unsigned long long) ref[j].first,
				 ref[j].second);
			return false;
		}
	return !cs || columns_ok(*cs, res, what);
}

/* A join batch: keys (for 4-byte indexes at times with junk in the high bytes) and random rows */
static void
join_batch(const Data &d, uint64_t nq, bool ranges, std::vector<uint64_t> &lo, std::vector<uint64_t> &hi,
		   std::vector<uint32_t> &rows)
{
	bool		junk = d.kw == 4 && rnd() % 2;

	make_queries(d, nq, ranges, lo, hi);
	rows.resize(nq);
	for (uint64_t i = 0; i < nq; i++)
	{
		rows[i] = (uint32_t) (rnd() % 4 == 0 ? rnd() % 64 : rnd());	/* repeats too */
		if (junk)
		{
			lo[i] |= rnd() << 32;
			if (ranges)
				hi[i] |= rnd() << 32;
		}
	}
}

/*
 * Rows that ascend strictly (EYTZGPU_ROWS_ASCENDING): with gaps of 1-3
 * everywhere, or (runs) consecutive but for about three gaps, as an outer
 * batch's are where a few outer rows ask nothing
 */
static void
ascending_rows(std::vector<uint32_t> &rows, bool runs)
{
	uint32_t	r = (uint32_t) (rnd() % 100);

	for (size_t i = 0; i < rows.size(); i++)
	{
		rows[i] = r;
		if (runs)
			r += rnd() % (rows.size() / 3 + 1) == 0 ? 2 + (uint32_t) (rnd() % 3) : 1;
		else
			r += 1 + (uint32_t) (rnd() % 3);
	}
}

/*
 * EYTZGPU_ROWS_ASCENDING: a batch whose rows ascend (no bound, a random one)
 * gives the reference's answer; one whose rows do not (a repeat; with runs
 * two neighbours swapped) fails at its wait.
 */
static void
test_join_ascending(const Data &d, EytzGpuIndex *h, const std::vector<uint64_t> &lo, const std::vector<uint64_t> &hi,
					bool ranges, ColSpec *cs, const char *what, bool runs)
{
	std::vector<uint32_t> rows(lo.size());
	uint64_t	nq = lo.size();
	char		err[256],
				name[200];
	Pairs		ref;

	ascending_rows(rows, runs);
	join_ref(d, lo.data(), ranges ? hi.data() : NULL, rows.data(), nq, UINT64_MAX, ref);
	for (uint64_t bound : {(uint64_t) UINT64_MAX, ref.empty() ? 0 : rnd() % (ref.size() + 1)})
	{
		EytzGpuJoinResult res;
		uint64_t	done = join_ref(d, lo.data(), ranges ? hi.data() : NULL, rows.data(), nq, bound, ref);

		if (cs)
			pick_columns(h, *cs);
		snprintf(name, sizeof(name), "%s join %s rows ascending%s max=%llu", what, ranges ? "range" : "point",
				 runs ? " in runs" : "", (unsigned long long) bound);
		if (eytzgpu_lookup_join(h, lo.data(), ranges ? hi.data() : NULL, rows.data(), nq, bound,
								EYTZGPU_ROWS_ASCENDING | EYTZGPU_POISON, &res, err, sizeof(err)) != EYTZGPU_OK)
			FAIL("%s: %s", name, err);
		else if (join_ok(ref, done, res, name, cs))
			passed++;
	}
	if (nq > 1)
	{
		EytzGpuJoinResult res;
		uint64_t	i = rnd() % (nq - 1);

		if (runs)
			std::swap(rows[i], rows[i + 1]);
		else
			rows[i + 1] = rows[i];	/* a repeat: not strictly ascending */
		if (eytzgpu_lookup_join(h, lo.data(), ranges ? hi.data() : NULL, rows.data(), nq, UINT64_MAX,
								EYTZGPU_ROWS_ASCENDING, &res, err, sizeof(err)) == EYTZGPU_EINVAL)
			passed++;
		else
			FAIL("%s: rows that do not ascend accepted with EYTZGPU_ROWS_ASCENDING", what);
	}
}

static const uint32_t join_flags[] = {
	0,
	EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_GLOBAL | EYTZGPU_PIN_ON,
	EYTZGPU_STRAT_GROUP | EYTZGPU_REORDER_NONE | EYTZGPU_PIN_OFF,
	EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_LOCAL | EYTZGPU_PIN_ON,
	EYTZGPU_STRAT_EBS | EYTZGPU_PIN_OFF,
	EYTZGPU_UNIQUE,
};

/*
 * Join batches on one handle: points and ranges, every flag set, bounds
 * that split the batch (no bound, a random one, 0), the walk of a whole
 * batch in prefixes as a caller does it, poisoned device buffers; with cs a
 * random mask of its included columns for each batch.  Point batches of
 * up to EYTZ_JOIN_SMALL queries (one launch where the flags choose nothing;
 * with duplicates their matches often outnumber what it sorts, and the
 * pipeline answers) and of more (the pipeline).
 */
static void
test_join(const Data &d, EytzGpuIndex *h, bool unique, const char *what, bool quick, ColSpec *cs)
{
	char		err[256];

	for (int pass = 0; pass < 3; pass++)
	{
		int			ranges = pass == 1;
		std::vector<uint64_t> lo,
					hi;
		std::vector<uint32_t> rows;
		uint64_t	nq = pass == 2 ? EYTZ_JOIN_SMALL + 1 + rnd() % (quick ? 100 : 2000)
			: quick ? 300 : 500 + rnd() % 1500;
		uint64_t	matches = 0;
		Pairs		ref;

		join_batch(d, nq, ranges, lo, hi, rows);
		for (uint64_t i = 0; i < nq; i++)
		{
			uint64_t	mask = d.kw == 4 ? 0xFFFFFFFFull : ~0ull,
						first;

			matches += eytzref_sorted_range(d.sk.data(), d.n, lo[i] & mask, (ranges ? hi[i] : lo[i]) & mask, &first);
		}
		for (size_t f = 0; f < sizeof(join_flags) / sizeof(join_flags[0]); f++)
		{
			uint64_t	all = UINT64_MAX;
			uint64_t	maxes[3];

			if (join_flags[f] == EYTZGPU_UNIQUE && !unique)
				continue;		/* it promises unique keys */
			if ((quick && (f == 3 || f == 4)) || (tiny_run && f > 0))
				continue;
			join_ref(d, lo.data(), ranges ? hi.data() : NULL, rows.data(), nq, all, ref);
			maxes[0] = all;
			maxes[1] = ref.size() ? rnd() % (ref.size() + 1) : 0;
			maxes[2] = 0;
			for (int m = 0; m < (tiny_run ? 1 : 3); m++)
			{
				EytzGpuJoinResult res;
				uint64_t	done;
				char		name[200];
				int			rc;

				snprintf(name, sizeof(name), "%s join %s flags=%#x max=%llu", what, ranges ? "range" : "point",
						 join_flags[f], (unsigned long long) maxes[m]);
				memset(&res, 0, sizeof(res));
				if (cs)
					pick_columns(h, *cs);
				rc = eytzgpu_lookup_join(h, lo.data(), ranges ? hi.data() : NULL, rows.data(), nq, maxes[m],
										 join_flags[f] | EYTZGPU_POISON, &res, err, sizeof(err));
				if (rc != EYTZGPU_OK)
				{
					FAIL("%s: rc=%d %s", name, rc, err);
					continue;
				}
				done = join_ref(d, lo.data(), ranges ? hi.data() : NULL, rows.data(), nq, maxes[m], ref);
				if (join_ok(ref, done, res, name, cs))
					passed++;
			}
		}
		if (!tiny_run)
			test_join_ascending(d, h, lo, hi, ranges, cs, what, false);
		/* a caller's walk: prefixes under a bound, a query over it alone goes to the CPU */
		if (!tiny_run)
		{
			uint64_t	bound = matches / 4 + 1 + rnd() % 8,
						start = 0;
			bool		ok = true;

			if (cs)
				pick_columns(h, *cs);
			while (start < nq && ok)
			{
				EytzGpuJoinResult res;
				uint64_t	done,
							first;
				int			rc = eytzgpu_lookup_join(h, lo.data() + start, ranges ? hi.data() + start : NULL,
													 rows.data() + start, nq - start, bound, 0, &res, err,
													 sizeof(err));

				if (rc != EYTZGPU_OK)
				{
					FAIL("%s join walk: rc=%d %s", what, rc, err);
					ok = false;
					break;
				}
				done = join_ref(d, lo.data() + start, ranges ? hi.data() + start : NULL, rows.data() + start,
								nq - start, bound, ref);
				ok = join_ok(ref, done, res, "join walk", cs);
				if (done == 0)
				{
					uint64_t	mask = d.kw == 4 ? 0xFFFFFFFFull : ~0ull;
					uint64_t	h0 = ranges ? hi[start] : lo[start];

					ok = ok && eytzref_sorted_range(d.sk.data(), d.n, lo[start] & mask, h0 & mask, &first) > bound;
					done = 1;	/* the CPU's */
				}
				start += done;
			}
			if (ok)
				passed++;
		}
	}
}

/*
 * The asynchronous pair: results of batch i stay intact while batch i + 1
 * runs (and until its wait returns); inputs filled in place; one batch in
 * flight at a time.
 */
static void
test_join_async(const Data &d, EytzGpuIndex *h, const char *what, bool quick, const ColSpec &cs)
{
	char		err[256];
	std::vector<uint64_t> lo[3],
				hi[3];
	std::vector<uint32_t> rows[3];
	uint64_t	nq[3] = {quick ? 200u : 3000u, quick ? 500u : 20000u, quick ? 300u : 50000u};
	Pairs		ref[3];
	uint64_t	done[3];
	EytzGpuJoinResult res[3];
	ColSpec		c[3] = {cs, cs, cs};	/* each batch with its own mask of the columns */
	uint64_t   *plo,
			   *phi;
	uint32_t   *prows;
	bool		ok = true;

	for (int b = 0; b < 3; b++)
	{
		join_batch(d, nq[b], b == 1, lo[b], hi[b], rows[b]);
		done[b] = join_ref(d, lo[b].data(), b == 1 ? hi[b].data() : NULL, rows[b].data(), nq[b], UINT64_MAX,
						   ref[b]);
	}
	memset(res, 0, sizeof(res));
	pick_columns(h, c[0]);
	ok = eytzgpu_lookup_join(h, lo[0].data(), NULL, rows[0].data(), nq[0], UINT64_MAX, 0, &res[0], err,
							 sizeof(err)) == EYTZGPU_OK && join_ok(ref[0], done[0], res[0], "async batch 0", &c[0]);
	pick_columns(h, c[1]);
	/* batch 1 (ranges) filled in place into the next set's pinned inputs */
	ok = ok && eytzgpu_lookup_join_inputs(h, nq[1], &plo, &phi, &prows, err, sizeof(err)) == EYTZGPU_OK;
	if (ok)
	{
		memcpy(plo, lo[1].data(), nq[1] * 8);
		memcpy(phi, hi[1].data(), nq[1] * 8);
		memcpy(prows, rows[1].data(), nq[1] * 4);
		ok = eytzgpu_lookup_join_submit(h, plo, phi, prows, nq[1], UINT64_MAX, EYTZGPU_POISON, err,
										sizeof(err)) == EYTZGPU_OK;
	}
	/* while it runs: batch 0 intact, no second batch, no copy of this one's inputs wanted */
	ok = ok && join_ok(ref[0], done[0], res[0], "async batch 0 during batch 1", &c[0]);
	pick_columns(h, c[2]);
	ok = ok && eytzgpu_lookup_join_submit(h, lo[2].data(), NULL, rows[2].data(), nq[2], UINT64_MAX, 0, err,
										  sizeof(err)) == EYTZGPU_EINVAL;
	ok = ok && eytzgpu_lookup_join_wait(h, &res[1], err, sizeof(err)) == EYTZGPU_OK &&
		join_ok(ref[1], done[1], res[1], "async batch 1", &c[1]);
	ok = ok && eytzgpu_lookup_join_submit(h, lo[2].data(), NULL, rows[2].data(), nq[2], UINT64_MAX, EYTZGPU_POISON,
										  err, sizeof(err)) == EYTZGPU_OK;
	ok = ok && join_ok(ref[1], done[1], res[1], "async batch 1 during batch 2", &c[1]);
	/* polled until the GPU finished it, then its wait must not block on anything left */
	{
		int			ready = 0;

		for (long spins = 0; ok && !ready && spins < 100000000L; spins++)
			ok = eytzgpu_lookup_join_ready(h, &ready) == EYTZGPU_OK;
		ok = ok && ready == 1;
	}
	ok = ok && eytzgpu_lookup_join_wait(h, &res[2], err, sizeof(err)) == EYTZGPU_OK &&
		join_ok(ref[2], done[2], res[2], "async batch 2", &c[2]);
	ok = ok && eytzgpu_lookup_join_wait(h, &res[2], err, sizeof(err)) == EYTZGPU_EINVAL;
	{
		int			ready = 0;

		ok = ok && eytzgpu_lookup_join_ready(h, &ready) == EYTZGPU_EINVAL;
	}
	if (ok)
		passed++;
	else
		FAIL("%s: asynchronous join batches (%s)", what, err);
}

/*
 * The globally sorted path as the composite strategy picks it: 2^23+ unique
 * 32-bit keys (32 MiB), 2^20+ point lookups, with and without a bound.
 */
static void
test_join_large(void)
{
	Data		d;
	EytzGpuIndex *h = NULL;
	char		err[256];
	uint64_t	n = ((uint64_t) 1 << 23) + rnd() % 1000;
	uint64_t	nq = ((uint64_t) 1 << 20) + rnd() % 1000;
	std::vector<uint64_t> lo,
				hi;
	std::vector<uint32_t> rows;
	std::vector<unsigned char> ek;
	Pairs		ref;
	ColSpec		cs;

	make_data(d, 4, 9, n, false, PAYS_TOMBSTONES);
	ek = narrow(d.ek, 4);
	if (eytzgpu_upload(0, ek.data(), d.ep.data(), n, 4, 9, 0, &h, NULL, err, sizeof(err)) != EYTZGPU_OK)
	{
		FAIL("large join: upload %s", err);
		return;
	}
	join_batch(d, nq, false, lo, hi, rows);
	if (!attach_test_columns(d, h, 3, cs, "large join"))
		cs.m = 0;
	test_join_ascending(d, h, lo, hi, false, &cs, "large join", false);
	test_join_ascending(d, h, lo, hi, false, &cs, "large join", true);
	for (uint64_t bound : {(uint64_t) UINT64_MAX, nq / 3})
		for (uint32_t mask : {0u, 7u})
		{
			EytzGpuJoinResult res;
			uint64_t	done = join_ref(d, lo.data(), NULL, rows.data(), nq, bound, ref);

			cs.mask = cs.m ? mask : 0;
			if (eytzgpu_join_columns(h, cs.mask, err, sizeof(err)) != EYTZGPU_OK ||
				eytzgpu_lookup_join(h, lo.data(), NULL, rows.data(), nq, bound, EYTZGPU_POISON, &res, err,
									sizeof(err)) != EYTZGPU_OK)
				FAIL("large join: %s", err);
			else if (!res.point_mode)
				FAIL("large join: unique keys not joined as points");
			else if (join_ok(ref, done, res, "large join", &cs))
				passed++;
		}

	/*
	 * 2^23 queries reach the device in chunks of 2^17 or more: each chunk is
	 * walked as it arrives (no global reordering), from the caller's arrays
	 * (keys narrowed while staged) and from the pinned inputs filled in place
	 * (64-bit keys narrowed on the GPU chunk by chunk)
	 */
	nq = ((uint64_t) 1 << 23) + rnd() % 1000;
	join_batch(d, nq, false, lo, hi, rows);
	for (int in_place = 0; in_place < 2; in_place++)
		for (uint64_t bound : {(uint64_t) UINT64_MAX, nq / 3})
		{
			EytzGpuJoinResult res;
			uint64_t	done = join_ref(d, lo.data(), NULL, rows.data(), nq, bound, ref);
			uint64_t   *plo = NULL;
			uint32_t   *prows = NULL;
			const char *what = in_place ? "chunked join in place" : "chunked join";

			cs.mask = cs.m && bound == UINT64_MAX ? 7 : 0;
			if (eytzgpu_join_columns(h, cs.mask, err, sizeof(err)) != EYTZGPU_OK ||
				(in_place && eytzgpu_lookup_join_inputs(h, nq, &plo, NULL, &prows, err, sizeof(err)) != EYTZGPU_OK))
			{
				FAIL("%s: %s", what, err);
				continue;
			}
			if (in_place)
			{
				memcpy(plo, lo.data(), nq * 8);
				memcpy(prows, rows.data(), nq * 4);
			}
			if (eytzgpu_lookup_join(h, in_place ? plo : lo.data(), NULL, in_place ? prows : rows.data(), nq, bound,
									EYTZGPU_POISON, &res, err, sizeof(err)) != EYTZGPU_OK)
				FAIL("%s: %s", what, err);
			else if ((res.strategy & EYTZGPU_REORDER_MASK) != EYTZGPU_REORDER_NONE)
				FAIL("%s: strategy %#x, not the chunked walk", what, res.strategy);
			else if (!res.point_mode)
				FAIL("%s: unique keys not joined as points", what);
			else if (join_ok(ref, done, res, what, &cs))
				passed++;
		}
	eytzgpu_free(h);
}

/*
 * CSR lookups of many tiles (decoupled look-back across windows of tiles):
 * 2^22 points into 2^15 unique keys (the shared-memory walk compacts its own
 * results) and into 2^17 (explicit global reordering: sorted lookups, then
 * the one-pass compaction), a third of them misses.
 */
static void
test_csr_large(void)
{
	for (uint64_t n : {(uint64_t) 1 << 15, (uint64_t) 1 << 17})
	{
		Data		d;
		EytzGpuIndex *h = NULL;
		char		err[256],
					what[100];
		uint64_t	nq = ((uint64_t) 1 << 22) + rnd() % 5000;
		uint32_t	flags = n > (1 << 15) ? EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_GLOBAL | EYTZGPU_PIN_ON : 0;
		std::vector<uint64_t> lo(nq),
					hi;
		std::vector<unsigned char> ek;
		EytzGpuResult res;

		make_data(d, 4, 9, n, false);
		ek = narrow(d.ek, 4);
		for (uint64_t i = 0; i < nq; i++)
			lo[i] = rnd() % 3 ? d.sk[rnd() % n] : rnd() & d.kmax;
		std::vector<unsigned char> nlo = narrow(lo, 4);

		snprintf(what, sizeof(what), "large CSR lookup n=%llu flags=%#x", (unsigned long long) n, flags);
		if (eytzgpu_upload(0, ek.data(), d.ep.data(), n, 4, 9, 0, &h, NULL, err, sizeof(err)) != EYTZGPU_OK)
		{
			FAIL("%s: upload %s", what, err);
			continue;
		}
		if (eytzgpu_lookup(h, nlo.data(), NULL, nq, flags | EYTZGPU_POISON, &res, err, sizeof(err)) != EYTZGPU_OK)
			FAIL("%s: %s", what, err);
		else if (check_csr(d, lo, hi, res, what))
			passed++;
		eytzgpu_free(h);
	}
}

static void
test_case(int kw, uint32_t k, uint64_t n, bool dups, bool quick)
{
	Data		d;
	char		err[256],
				what[160];
	EytzGpuIndex *hb = NULL,
			   *hs = NULL,
			   *ha = NULL;
	uint64_t	bytes = 0;
	int			rc;

	make_data(d, kw, k, n, dups, (int) (rnd() % 3));
	std::vector<unsigned char> nk = narrow(d.keys, kw);
	std::vector<unsigned char> ok(n * kw + 8, 0xEE);	/* poisoned build output */
	std::vector<uint64_t> op(n + 1, 0xEEEEEEEEEEEEEEEEull);
	std::vector<unsigned char> ref = narrow(d.ek, kw);

	snprintf(what, sizeof(what), "kw=%d k=%u n=%llu%s", kw, k, (unsigned long long) n, dups ? " dups" : "");
	rc = eytzgpu_build(0, nk.data(), d.pays.data(), n, kw, k, 0, ok.data(), op.data(), &hb, &bytes, err, sizeof(err));
	if (rc != EYTZGPU_OK)
	{
		FAIL("%s: build rc=%d %s", what, rc, err);
		return;
	}
	if (memcmp(ok.data(), ref.data(), n * kw) != 0 || memcmp(op.data(), d.ep.data(), n * 8) != 0)
		FAIL("%s: GPU build differs from the CPU build", what);
	else
		passed++;
	rc = eytzgpu_upload(0, ref.data(), d.ep.data(), n, kw, k, EYTZGPU_LAYOUT_SOA, &hs, NULL, err, sizeof(err));
	if (rc == EYTZGPU_OK)
		rc = eytzgpu_upload(0, ref.data(), d.ep.data(), n, kw, k, EYTZGPU_LAYOUT_AOS | EYTZGPU_NO_EBS_COPY,
							&ha, NULL, err, sizeof(err));
	if (rc != EYTZGPU_OK)
		FAIL("%s: upload rc=%d %s", what, rc, err);
	else
	{
		char		w2[200];

		/* random keys of a wide domain repeat at times: EYTZGPU_UNIQUE only where none does */
		bool		unique = std::adjacent_find(d.sk.begin(), d.sk.end()) == d.sk.end();

		ColSpec		cs;

		snprintf(w2, sizeof(w2), "%s built", what);
		test_handle(d, hb, w2, quick);
		test_join(d, hb, unique, w2, quick, NULL);
		/* included columns: up to all 16, every width, with and without NULLs */
		if (attach_test_columns(d, hb, (int) (rnd() % (EYTZGPU_MAX_COLUMNS + 1)), cs, w2))
		{
			test_join(d, hb, unique, w2, quick, &cs);
			if (!tiny_run)
				test_join_async(d, hb, w2, quick, cs);
		}
		snprintf(w2, sizeof(w2), "%s soa", what);
		if (!quick)
			test_handle(d, hs, w2, quick);
		snprintf(w2, sizeof(w2), "%s aos", what);
		test_handle(d, ha, w2, quick);
		if (!quick && attach_test_columns(d, ha, 1 + (int) (rnd() % 4), cs, w2))
			test_join(d, ha, unique, w2, quick, &cs);
	}
	eytzgpu_free(hb);
	eytzgpu_free(hs);
	eytzgpu_free(ha);
	if (kw == 4)
		test_point_kernels<uint32_t>(d, quick);
	else
		test_point_kernels<uint64_t>(d, quick);
}

static void
test_errors(void)
{
	char		err[256];
	EytzGpuIndex *h = NULL;
	uint64_t	key = 1,
				pay = 1;

	if (eytzgpu_upload(0, &key, &pay, 1, 5, 9, 0, &h, NULL, err, sizeof(err)) == EYTZGPU_EINVAL && h == NULL)
		passed++;
	else
		FAIL("bad key width accepted");
	if (eytzgpu_upload(0, &key, &pay, 1, 8, 7, 0, &h, NULL, err, sizeof(err)) == EYTZGPU_EINVAL && h == NULL)
		passed++;
	else
		FAIL("bad fan-out accepted");
	if (eytzgpu_join_columns(NULL, 0, err, sizeof(err)) == EYTZGPU_EINVAL &&
		eytzgpu_attach_columns(NULL, 0, NULL, NULL, NULL, NULL, err, sizeof(err)) == EYTZGPU_EINVAL)
		passed++;
	else
		FAIL("columns of no handle accepted");
	/* one key, a miss */
	{
		EytzGpuInfo info;
		int			rc = eytzgpu_probe(0, &info, err, sizeof(err));

		if (rc == EYTZGPU_OK)
		{
			std::vector<uint64_t> lo(1, 0);

			rc = eytzgpu_upload(0, &key, &pay, 1, 8, 9, 0, &h, NULL, err, sizeof(err));
			if (rc == EYTZGPU_OK)
			{
				EytzGpuResult res;

				rc = eytzgpu_lookup(h, lo.data(), NULL, 1, 0, &res, err, sizeof(err));
				if (rc == EYTZGPU_OK && res.total == 0)
					passed++;
				else
					FAIL("tiny lookup rc=%d %s", rc, err);
				/* columns: a width of 3, more than 16, a mask beyond the attached ones */
				{
					int			w3 = 3,
								w4 = 4;
					uint32_t	v = 7;
					const void *vp = &v;

					if (eytzgpu_attach_columns(h, 1, &w3, &vp, NULL, NULL, err, sizeof(err)) == EYTZGPU_EINVAL &&
						eytzgpu_attach_columns(h, EYTZGPU_MAX_COLUMNS + 1, &w4, &vp, NULL, NULL, err,
											   sizeof(err)) == EYTZGPU_EINVAL &&
						eytzgpu_attach_columns(h, 1, &w4, &vp, NULL, NULL, err, sizeof(err)) == EYTZGPU_OK &&
						eytzgpu_join_columns(h, 2, err, sizeof(err)) == EYTZGPU_EINVAL &&
						eytzgpu_join_columns(h, 1, err, sizeof(err)) == EYTZGPU_OK)
						passed++;
					else
						FAIL("bad columns accepted or good ones refused: %s", err);
				}
				eytzgpu_free(h);
			}
			else
				FAIL("tiny upload rc=%d %s", rc, err);
		}
	}
}

/*
 * Every visible GPU (the service's contexts): the count, a device beyond
 * it refused, and an index built on each device answering a join batch
 * submitted to all of them before any is waited for (the service's round),
 * each answer checked against a count of the keys
 */
static void
test_devices(void)
{
	char		err[256];
	int			count = 0;
	const uint64_t n = 50000;
	const uint64_t nq = 4000;
	std::vector<uint64_t> keys(n),
				pays(n),
				lo(nq);
	std::vector<uint32_t> rows(nq);
	std::vector<uint64_t> want(nq, 0);
	std::vector<EytzGpuIndex *> hs;
	EytzGpuIndex *h = NULL;

	if (eytzgpu_device_count(&count, err, sizeof(err)) != EYTZGPU_OK || count < 1)
	{
		FAIL("device count: %s", err);
		return;
	}
	printf("devices: %d visible\n", count);
	if (eytzgpu_probe(count, NULL, err, sizeof(err)) == EYTZGPU_ENODEV &&
		eytzgpu_build(count, keys.data(), pays.data(), 1, 8, 9, 0, NULL, NULL, &h, NULL, err,
					  sizeof(err)) == EYTZGPU_ENODEV && h == NULL &&
		eytzgpu_device_count(NULL, err, sizeof(err)) == EYTZGPU_EINVAL)
		passed++;
	else
		FAIL("a device beyond the count (or a NULL count) accepted");
	/* keys 0..n/2 twice each (duplicates), payloads ascending */
	for (uint64_t i = 0; i < n; i++)
	{
		keys[i] = (i * 7919) % (n / 2);
		pays[i] = i + 1;
	}
	for (uint64_t i = 0; i < nq; i++)
	{
		lo[i] = (i * 104729) % (n / 2 + n / 10);	/* a tenth of misses */
		rows[i] = (uint32_t) i;
		want[i] = lo[i] < n / 2 ? 2 : 0;
	}
	for (int d = 0; d < count; d++)
	{
		h = NULL;
		int			rc = eytzgpu_build(d, keys.data(), pays.data(), n, 8, 9, 0, NULL, NULL, &h, NULL,
									   err, sizeof(err));

		if (rc != EYTZGPU_OK)
		{
			FAIL("build on GPU %d: rc=%d %s", d, rc, err);
			continue;
		}
		hs.push_back(h);
	}
	for (size_t d = 0; d < hs.size(); d++)
		if (eytzgpu_lookup_join_submit(hs[d], lo.data(), NULL, rows.data(), nq, nq * 2,
									   EYTZGPU_ROWS_ASCENDING, err, sizeof(err)) != EYTZGPU_OK)
			FAIL("submit on GPU %zu: %s", d, err);
	for (size_t d = 0; d < hs.size(); d++)
	{
		EytzGpuJoinResult res;
		std::vector<uint64_t> got(nq, 0);
		uint64_t	total = 0;
		bool		ok = true;

		if (eytzgpu_lookup_join_wait(hs[d], &res, err, sizeof(err)) != EYTZGPU_OK)
		{
			FAIL("wait on GPU %zu: %s", d, err);
			continue;
		}
		for (uint64_t j = 0; j < res.nmatch; j++)
		{
			uint64_t	p = res.payloads[j];

			ok &= res.rows[j] < nq && p >= 1 && p <= n && keys[p - 1] == lo[res.rows[j]];
			if (res.rows[j] < nq)
				got[res.rows[j]]++;
		}
		for (uint64_t i = 0; i < nq; i++)
		{
			ok &= got[i] == want[i];
			total += want[i];
		}
		if (ok && res.nq_done == nq && res.nmatch == total)
			passed++;
		else
			FAIL("GPU %zu: wrong join answer (%llu matches)", d, (unsigned long long) res.nmatch);
	}
	for (size_t d = 0; d < hs.size(); d++)
		eytzgpu_free(hs[d]);
}

int
main(int argc, char **argv)
{
	EytzGpuInfo info;
	char		err[256];
	bool		tiny = argc > 1 && strcmp(argv[1], "--tiny") == 0;
	bool		quick = tiny || (argc > 1 && strcmp(argv[1], "--quick") == 0);
	bool		csr_only = argc > 1 && strcmp(argv[1], "--csr") == 0;
	bool		large_only = argc > 1 && strcmp(argv[1], "--large") == 0;

	tiny_run = tiny;
	int			rc;
	static const uint32_t ks[] = {2, 3, 5, 9, 17, 33};

	setvbuf(stdout, NULL, _IOLBF, 0);
	rc = eytzgpu_probe(0, &info, err, sizeof(err));
	if (rc != EYTZGPU_OK)
	{
		printf("cuda-gpu: skipped, no usable GPU (code %d: %s)\n", rc, err);
		return 0;
	}
	rng_state = (uint64_t) time(NULL) ^ ((uint64_t) clock() << 32);
	if (getenv("EYTZ_SEED"))
		rng_state = strtoull(getenv("EYTZ_SEED"), NULL, 0);
	printf("device: %s, %d SMs, L2 %llu MB; seed %llu%s\n", info.name, info.sm_count,
		   (unsigned long long) (info.l2_bytes >> 20), (unsigned long long) rng_state, quick ? " (quick)" : "");
	if (csr_only || large_only)
	{
		if (large_only)
			test_join_large();
		test_csr_large();
		printf("cuda-gpu: %d passed, %d failed\n", passed, failed);
		return failed ? 1 : 0;
	}
	test_errors();
	test_devices();
	test_fused_sizes<uint32_t>(4, 9, quick);
	if (!tiny)
		test_fused_sizes<uint64_t>(8, 2, quick);
	printf("fused write-back sizes: %d passed, %d failed so far\n", passed, failed);
	if (!quick)
	{
		test_join_large();
		test_csr_large();
		printf("large join and CSR: %d passed, %d failed so far\n", passed, failed);
	}
	for (int kw = 4; kw <= 8; kw += 4)
		for (size_t ki = 0; ki < sizeof(ks) / sizeof(ks[0]); ki++)
		{
			uint32_t	k = ks[ki];
			std::vector<uint64_t> sizes = {0, 1};
			uint64_t	pw = 1;

			if (quick && k != 2 && k != 9)
				continue;
			if (tiny && (kw != 4 || k != 9))
				continue;
			for (int m = 1; m <= (quick ? 2 : 3); m++)
			{
				pw *= k;
				if (pw > 40000)
					break;
				sizes.push_back(pw - 1);
				sizes.push_back(pw);
				sizes.push_back(pw + 1);
			}
			if (!quick)
			{
				sizes.push_back(1000 + rnd() % 5000);
				if (k == 2 || k == 9 || k == 17)
					sizes.push_back(((uint64_t) 1 << 20) + rnd() % 100000);
			}
			for (size_t si = 0; si < sizes.size(); si++)
				for (int dups = 0; dups < 2; dups++)
					test_case(kw, k, sizes[si], dups, quick);
			printf("kw=%d k=%u: %d passed, %d failed so far\n", kw, k, passed, failed);
		}
	printf("cuda-gpu: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
