/*
 * bench.cu
 *		The paper's section 8 workload on one GPU: builds and lookups of
 *		eytzgpu against thrust::lower_bound, a text-book binary search kernel
 *		and a plain CUB pair sort, all in one process with data on the GPU.
 *
 * Data is generated on the GPU (bijective hashes: unique uniform keys).
 * Every figure is the median of repeated runs timed with CUDA events, after a
 * warm-up; transfers are not in them (one section measures them apart).
 * Output: CSV lines "section,key_bits,log2n,variant,param,ms,per_unit_ns,bytes"
 * on stdout and in the file given by --csv, and a summary at the end.
 *
 *   eytz_bench [--csv FILE] [--quick] [--api-sizes L1,L2,...] [sections...]
 *   sections: build lookup zipf sorted range dups u64 xfer (default: all), fast api small (only when named)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <vector>
#include <string>
#include <algorithm>
#include <type_traits>

#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>

#include "eytzgpu_cuda_test.h"
#include "eytz_kernels.cuh"

using namespace eytzk;

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorString(e_), __FILE__, __LINE__, #x); exit(1); } } while (0)

static FILE *csv;
static bool quick;
static int	reps = 9;
static std::vector<std::string> summary;

static void
emit(const char *sec, int bits, int log2n, const char *variant, double param, double ms, double per_unit_ns,
	 double bytes)
{
	char		line[512];

	snprintf(line, sizeof(line), "%s,%d,%d,%s,%g,%.4f,%.4f,%.0f", sec, bits, log2n, variant, param, ms,
			 per_unit_ns, bytes);
	printf("%s\n", line);
	fflush(stdout);
	if (csv)
	{
		fprintf(csv, "%s\n", line);
		fflush(csv);
	}
}

/* Median of reps timings of f() with events (after one warm-up) */
template <class F>
static double
time_ms(F f, int r = 0)
{
	cudaEvent_t a,
				b;
	std::vector<float> t;

	if (r == 0)
		r = reps;
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	f();
	CK(cudaDeviceSynchronize());
	for (int i = 0; i < r; i++)
	{
		float		ms;

		CK(cudaEventRecord(a));
		f();
		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		CK(cudaEventElapsedTime(&ms, a, b));
		t.push_back(ms);
	}
	CK(cudaGetLastError());
	CK(cudaEventDestroy(a));
	CK(cudaEventDestroy(b));
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

/* ---- data generation (bijective mixes: distinct inputs give distinct keys) ---- */

__device__ __forceinline__ uint32_t
mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

__device__ __forceinline__ uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

template <class KT>
__device__ __forceinline__ KT
mixk(uint64_t i, uint64_t seed)
{
	if (sizeof(KT) == 4)
		return (KT) mix32((uint32_t) i ^ (uint32_t) seed);
	return (KT) mix64(i ^ seed);
}

/* key i = mix(i / rep): unique when rep = 1, rep copies each otherwise */
template <class KT>
__global__ void
k_gen_keys(KT *k, uint64_t *p, uint64_t n, uint64_t rep, uint64_t seed)
{
	uint64_t	s = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += s)
	{
		k[i] = mixk<KT>(i / rep, seed);
		p[i] = i;
	}
}

/* Lookups drawn uniformly from the build set (sorted keys), random order */
template <class KT>
__global__ void
k_gen_uniform(KT *q, uint64_t nq, const KT *sk, uint64_t n, uint64_t seed)
{
	uint64_t	s = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nq; i += s)
		q[i] = sk[mix64(i + seed) % n];
}

/* Zipf(s) over ranks by the inverse of the continuous CDF; rank r -> a scattered key */
template <class KT>
__global__ void
k_gen_zipf(KT *q, uint64_t nq, const KT *sk, uint64_t n, double zs, uint64_t seed)
{
	uint64_t	st = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nq; i += st)
	{
		double		u = ((mix64(i * 7 + seed) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
		double		x;
		uint64_t	r;

		if (fabs(zs - 1.0) < 1e-9)
			x = exp(u * log((double) n + 1.0));
		else
		{
			double		a = 1.0 - zs;
			double		hn = (pow((double) n + 1.0, a) - 1.0) / a;

			x = pow(1.0 + u * hn * a, 1.0 / a);
		}
		r = (uint64_t) x;
		r = r < 1 ? 0 : r - 1;
		if (r >= n)
			r = n - 1;
		q[i] = sk[(r * 2654435761ull) % n];
	}
}

/* range [lo, lo + width] with lo uniform over the key domain */
template <class KT>
__global__ void
k_gen_range(KT *lo, KT *hi, uint64_t nq, uint64_t width, uint64_t seed)
{
	uint64_t	st = (uint64_t) gridDim.x * blockDim.x;
	KT			kmax = (KT) ~(KT) 0;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nq; i += st)
	{
		KT			a = (KT) mix64(i + seed);

		lo[i] = a;
		hi[i] = (uint64_t) (kmax - a) < width ? kmax : (KT) (a + width);
	}
}

static uint32_t
host_mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static uint64_t
host_mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static const unsigned GEN_GRID = 132 * 8;

/* ---- a built index in every layout the benchmark needs ---- */

template <class KT>
struct Bench
{
	uint64_t	n;
	KT		   *sk;				/* sorted */
	uint64_t   *sp;
	KT		   *ek2;			/* k = 2 SoA (EBS) */
	uint64_t   *ep2;
	KT		   *ek9;			/* k = 9 SoA */
	uint64_t   *ep9;
	unsigned char *aos9;		/* k = 9 AoS */
};

template <class KT>
static Idx<KT>
idx_of(const Bench<KT> &b, uint32_t k, bool aos)
{
	if (k == 2)
		return make_idx<KT>(b.ek2, b.ep2, NULL, b.n, 2);
	return make_idx<KT>(b.ek9, b.ep9, aos ? b.aos9 : NULL, b.n, 9);
}

/* The sorted arrays, for the binary search baseline */
template <class KT>
static Idx<KT>
idx_sorted(const Bench<KT> &b)
{
	return make_idx<KT>(b.sk, b.sp, NULL, b.n, 2);
}

/* Sort pairs into sk/sp (tmp buffers of n), the build's first step */
template <class KT>
static void
sort_pairs(KT *k0, uint64_t *p0, KT *k1, uint64_t *p1, uint64_t n, void *temp, size_t tb, KT **sk, uint64_t **sp)
{
	cub::DoubleBuffer<KT> dk(k0, k1);
	cub::DoubleBuffer<uint64_t> dp(p0, p1);

	CK(cub::DeviceRadixSort::SortPairs(temp, tb, dk, dp, (int) n, 0, (int) (8 * sizeof(KT))));
	*sk = dk.Current();
	*sp = dp.Current();
}

template <class KT>
static Bench<KT>
make_bench(uint64_t n, uint64_t rep, bool want_soa9)
{
	Bench<KT>	b;
	uint64_t	pad = eytz_padded_slots(n, 9, sizeof(KT)) + 8;
	KT		   *k0,
			   *k1,
			   *sk;
	uint64_t   *p0,
			   *p1,
			   *sp;
	void	   *temp = NULL;
	size_t		tb = 0;
	uint32_t	tp = eytz_aos_tile_log2(9, sizeof(KT));
	uint32_t	tile = (uint32_t) ((sizeof(KT) + 8) << tp);

	memset(&b, 0, sizeof(b));
	b.n = n;
	CK(cudaMalloc(&k0, pad * sizeof(KT)));
	CK(cudaMalloc(&k1, pad * sizeof(KT)));
	CK(cudaMalloc(&p0, pad * 8));
	CK(cudaMalloc(&p1, pad * 8));
	k_gen_keys<KT><<<GEN_GRID, 256>>>(k0, p0, n, rep, 0x1234567);
	CK(cudaGetLastError());
	CK(cub::DeviceRadixSort::SortPairs(NULL, tb, (KT *) NULL, (KT *) NULL, (uint64_t *) NULL, (uint64_t *) NULL,
									   (int) n, 0, (int) (8 * sizeof(KT))));
	CK(cudaMalloc(&temp, tb));
	sort_pairs(k0, p0, k1, p1, n, temp, tb, &sk, &sp);
	b.sk = sk;
	b.sp = sp;
	/* keep sorted; the other buffer pair is recycled for the k = 2 copy */
	b.ek2 = sk == k0 ? k1 : k0;
	b.ep2 = sp == p0 ? p1 : p0;
	CK(cudaMemset(b.ek2, 0, pad * sizeof(KT)));
	k_permute<KT><<<GEN_GRID, 256>>>(make_perm_shape(n, 2), sk, sp, b.ek2, b.ep2, NULL, 0, 0);
	CK(cudaMalloc(&b.aos9, (pad >> tp) * tile + tile));
	CK(cudaMemset(b.aos9, 0, (pad >> tp) * tile + tile));
	k_permute<KT><<<GEN_GRID, 256>>>(make_perm_shape(n, 9), sk, sp, NULL, NULL, b.aos9, tp, tile);
	if (want_soa9)
	{
		CK(cudaMalloc(&b.ek9, pad * sizeof(KT)));
		CK(cudaMalloc(&b.ep9, pad * 8));
		CK(cudaMemset(b.ek9, 0, pad * sizeof(KT)));
		k_permute<KT><<<GEN_GRID, 256>>>(make_perm_shape(n, 9), sk, sp, b.ek9, b.ep9, NULL, 0, 0);
	}
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cudaFree(temp));
	return b;
}

template <class KT>
static void
free_bench(Bench<KT> &b)
{
	cudaFree(b.sk);
	cudaFree(b.sp);
	cudaFree(b.ek2);
	cudaFree(b.ep2);
	cudaFree(b.ek9);
	cudaFree(b.ep9);
	cudaFree(b.aos9);
	memset(&b, 0, sizeof(b));
}

/* Workspace for query reordering and CSR */
template <class KT>
struct Work
{
	uint64_t	cap;
	uint64_t   *comp_a,
			   *comp_b;
	KT			mn,
				mx;
	void	   *temp;
	size_t		tb;
	uint64_t   *out,
			   *cnt,
			   *off,
			   *first;
	uint64_t	out_cap;
};

template <class KT>
static Work<KT>
make_work(uint64_t nq, uint64_t out_cap, KT mn, KT mx)
{
	Work<KT>	w;
	size_t		a = 0,
				b = 0;

	memset(&w, 0, sizeof(w));
	w.cap = nq;
	CK(cudaMalloc(&w.comp_a, nq * 8));
	CK(cudaMalloc(&w.comp_b, nq * 8));
	CK(cudaMalloc(&w.cnt, (nq + 1) * 8));
	CK(cudaMalloc(&w.off, (nq + 1) * 8));
	CK(cudaMalloc(&w.first, nq * 8));
	CK(cudaMalloc(&w.out, (out_cap ? out_cap : 1) * 8));
	w.out_cap = out_cap;
	CK(reorder_chunked_temp(nq, &a));
	CK(csr_temp_bytes(nq, &b));
	w.tb = a > b ? a : b;
	CK(cudaMalloc(&w.temp, w.tb));
	w.mn = mn;
	w.mx = mx;
	return w;
}

template <class KT>
static void
free_work(Work<KT> &w)
{
	cudaFree(w.comp_a);
	cudaFree(w.comp_b);
	cudaFree(w.cnt);
	cudaFree(w.off);
	cudaFree(w.first);
	cudaFree(w.out);
	cudaFree(w.temp);
}

/* One lookup configuration */
struct Var
{
	const char *name;
	int			algo;			/* ALGO_* or -1 for thrust */
	uint32_t	k;
	bool		aos;
	bool		lsort;
	uint32_t	logc;			/* chunked global reordering: 2^logc a chunk; 0 = none */
	uint32_t	bits;
	uint32_t	pin;
	int			bps;
};

/* POINT mode: one payload per query (the paper's measure) */
template <class KT>
static double
run_point(const Bench<KT> &b, const Var &v, const KT *q, uint64_t nq, uint64_t *out, Work<KT> &w)
{
	if (v.algo == -1)
		return time_ms([&] {
			thrust::lower_bound(thrust::device, b.sk, b.sk + b.n, q, q + nq, (uint32_t *) out);
		});
	if (v.algo == -2)
		return time_ms([&] {
			Qs<KT>		qs = {q, NULL, NULL, nq};

			CK(reorder_chunked<KT>(qs, w.mn, w.mx, Reorder{v.logc, v.bits}, w.comp_a, w.comp_b, w.temp, w.tb, 0));
		});
	Idx<KT>		ix = v.algo == ALGO_BS ? idx_sorted(b) : idx_of(b, v.k, v.aos);
	Cfg			cfg = {v.algo, v.lsort, v.pin, v.bps};
	Outs		o = {out, NULL, NULL};

	return time_ms([&] {
		Qs<KT>		qs = {q, NULL, NULL, nq};

		if (v.logc)
			CK(reorder_chunked<KT>(qs, w.mn, w.mx, Reorder{v.logc, v.bits}, w.comp_a, w.comp_b, w.temp, w.tb, 0));
		CK((launch_lookup<KT, MODE_POINT>(ix, qs, o, cfg, 0)));
	});
}

/* CSR pipeline as the C API runs it: [reorder] count, scan, fill.  Returns total. */
template <class KT>
static double
run_csr(const Bench<KT> &b, const Var &v, const KT *lo, const KT *hi, uint64_t nq, Work<KT> &w, uint64_t *total)
{
	Idx<KT>		ix = v.algo == ALGO_BS ? idx_sorted(b) : idx_of(b, v.k, v.aos);
	Cfg			cfg = {v.algo, v.lsort, v.pin, v.bps};
	double		ms;
	auto		f = [&] {
		Qs<KT>		qs = {lo, hi, NULL, nq};
		CsrBufs		cb = {w.cnt, w.off, w.first, w.out, w.temp, w.tb};

		if (v.logc)
			CK(reorder_chunked<KT>(qs, w.mn, w.mx, Reorder{v.logc, v.bits}, w.comp_a, w.comp_b, w.temp, w.tb, 0));
		CK(csr_count<KT>(ix, qs, cfg, false, cb, 0));
		CK(csr_fill<KT>(ix, qs, cfg, cb, 0));
	};

	ms = time_ms(f, 5);
	CK(cudaMemcpy(total, w.off + nq, 8, cudaMemcpyDeviceToHost));
	if (*total > w.out_cap)
	{
		fprintf(stderr, "output buffer too small: %llu > %llu\n", (unsigned long long) *total,
				(unsigned long long) w.out_cap);
		exit(1);
	}
	return ms;
}

/* Spot check of POINT results against the sorted array (the GPU test does the full job) */
template <class KT>
static void
check_point(const Bench<KT> &b, const KT *q, const uint64_t *out, uint64_t nq, const char *name)
{
	const int	S = 512;
	std::vector<KT> hq(S);
	std::vector<uint64_t> ho(S);
	int			bad = 0;

	for (int s = 0; s < S; s++)
	{
		uint64_t	i = (nq - 1) * (uint64_t) s / (S - 1);
		KT			kk;
		uint64_t	pos = 0;

		CK(cudaMemcpy(&hq[s], q + i, sizeof(KT), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&ho[s], out + i, 8, cudaMemcpyDeviceToHost));
		/* every benchmark query is present: the payload is the row whose key it is */
		if (ho[s] == NO_MATCH || ho[s] >= b.n)
		{
			bad++;
			continue;
		}
		kk = sizeof(KT) == 4 ? (KT) host_mix32((uint32_t) ho[s] ^ (uint32_t) 0x1234567)
			: (KT) host_mix64(ho[s] ^ 0x1234567);
		bad += kk != hq[s];
		(void) pos;
	}
	if (bad)
	{
		fprintf(stderr, "CHECK FAILED: %s: %d of %d sampled lookups missed\n", name, bad, S);
		exit(1);
	}
}

static const Var point_vars[] = {
	{"thrust_lower_bound", -1, 0, false, false, 0, 0, 0, 0},
	{"bs_textbook", ALGO_BS, 0, false, false, 0, 0, 0, 0},
	{"ebs", ALGO_SINGLE, 2, false, false, 0, 0, 0, 0},
	{"ebs_pin64k", ALGO_SINGLE, 2, false, false, 0, 0, 64 * 1024, 0},
	{"ebs_pin200k_1blk", ALGO_SINGLE, 2, false, false, 0, 0, 200 * 1024, 1},
	{"ebs_pin32k_lsort", ALGO_SINGLE, 2, false, true, 0, 0, 32 * 1024, 0},
	{"eks_single_aos", ALGO_SINGLE, 9, true, false, 0, 0, 0, 0},
	{"eks_single_soa", ALGO_SINGLE, 9, false, false, 0, 0, 0, 0},
	{"eks_single_soa_pin16k", ALGO_SINGLE, 9, false, false, 0, 0, 16 * 1024, 0},
	{"eks_single_soa_pin200k_1blk", ALGO_SINGLE, 9, false, false, 0, 0, 200 * 1024, 1},
	{"eks_single_aos_lsort", ALGO_SINGLE, 9, true, true, 0, 0, 32 * 1024, 0},
	{"reorder_only_c21b16", -2, 9, false, false, 21, 16, 0, 0},
	{"eks_single_soa_c21b16", ALGO_SINGLE, 9, false, false, 21, 16, 0, 0},
	{"eks_single_soa_c25b16", ALGO_SINGLE, 9, false, false, 25, 16, 0, 0},
	{"eks_group_aos", ALGO_GROUP, 9, true, false, 0, 0, 0, 0},
	{"eks_group_soa", ALGO_GROUP, 9, false, false, 0, 0, 0, 0},
};

static bool
on(const std::vector<std::string> &secs, const char *s)
{
	if (secs.empty())
		return true;
	for (auto &x : secs)
		if (x == s)
			return true;
	return false;
}

/* Lookups: every variant, one index size, one query set */
template <class KT>
static void
bench_points(const char *sec, const Bench<KT> &b, const KT *q, uint64_t nq, double param, bool all_vars,
			 const std::vector<const char *> *only = NULL)
{
	uint64_t   *out;
	int			log2n = (int) llround(log2((double) b.n));
	Work<KT>	w;
	KT			mn,
				mx;
	double		best = 1e30,
				thr = 0;
	const char *bestname = "";

	CK(cudaMemcpy(&mn, b.sk, sizeof(KT), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&mx, b.sk + b.n - 1, sizeof(KT), cudaMemcpyDeviceToHost));
	w = make_work<KT>(nq, 0, mn, mx);
	CK(cudaMalloc(&out, nq * 8));
	for (const Var &v : point_vars)
	{
		double		ms;

		if (!all_vars && only)
		{
			bool		f = false;

			for (const char *o : *only)
				f |= strcmp(o, v.name) == 0;
			if (!f)
				continue;
		}
		CK(cudaMemset(out, 0xFF, nq * 8));
		ms = run_point(b, v, q, nq, out, w);
		if (v.algo >= 0)
			check_point(b, q, out, nq, v.name);
		if (v.algo == -2)
		{
			emit(sec, 8 * (int) sizeof(KT), log2n, v.name, param, ms, ms * 1e6 / nq, 0);
			continue;
		}
		emit(sec, 8 * (int) sizeof(KT), log2n, v.name, param, ms, ms * 1e6 / nq, 0);
		if (v.algo == -1)
			thr = ms;
		else if (ms < best)
		{
			best = ms;
			bestname = v.name;
		}
	}
	{
		char		s[300];

		snprintf(s, sizeof(s), "%-7s %2d-bit n=2^%-2d param=%-6g thrust %.3f ms, best %s %.3f ms (%.2fx)", sec,
				 8 * (int) sizeof(KT), log2n, param, thr, bestname, best, thr / best);
		summary.push_back(s);
	}
	cudaFree(out);
	free_work(w);
}

/* Build: plain CUB pair sort against sort + Eytzinger permutation */
template <class KT>
static void
bench_build(int log2n)
{
	uint64_t	n = (uint64_t) 1 << log2n;
	uint64_t	pad = eytz_padded_slots(n, 9, sizeof(KT)) + 8;
	KT		   *k0,
			   *k1,
			   *kin,
			   *sk;
	uint64_t   *p0,
			   *p1,
			   *pin,
			   *sp;
	void	   *temp;
	size_t		tb = 0;
	uint32_t	tp = eytz_aos_tile_log2(9, sizeof(KT));
	uint32_t	tile = (uint32_t) ((sizeof(KT) + 8) << tp);
	unsigned char *aos;
	double		ms_sort,
				ms2,
				ms9,
				ms9a,
				ms_perm;
	char		s[300];

	CK(cudaMalloc(&k0, pad * sizeof(KT)));
	CK(cudaMalloc(&k1, pad * sizeof(KT)));
	CK(cudaMalloc(&kin, pad * sizeof(KT)));
	CK(cudaMalloc(&p0, pad * 8));
	CK(cudaMalloc(&p1, pad * 8));
	CK(cudaMalloc(&pin, pad * 8));
	CK(cudaMalloc(&aos, (pad >> tp) * tile + tile));
	k_gen_keys<KT><<<GEN_GRID, 256>>>(kin, pin, n, 1, 0xabcdef);
	CK(cub::DeviceRadixSort::SortPairs(NULL, tb, (KT *) NULL, (KT *) NULL, (uint64_t *) NULL, (uint64_t *) NULL,
									   (int) n, 0, (int) (8 * sizeof(KT))));
	CK(cudaMalloc(&temp, tb));

	/* the input is restored (outside the timed region) before every run */
	auto		timed = [&](auto body) {
		cudaEvent_t a,
					b;
		std::vector<float> t;

		CK(cudaEventCreate(&a));
		CK(cudaEventCreate(&b));
		for (int i = 0; i < reps + 1; i++)
		{
			float		ms;

			CK(cudaMemcpy(k0, kin, n * sizeof(KT), cudaMemcpyDeviceToDevice));
			CK(cudaMemcpy(p0, pin, n * 8, cudaMemcpyDeviceToDevice));
			CK(cudaEventRecord(a));
			body();
			CK(cudaEventRecord(b));
			CK(cudaEventSynchronize(b));
			CK(cudaEventElapsedTime(&ms, a, b));
			if (i > 0)
				t.push_back(ms);
		}
		CK(cudaGetLastError());
		cudaEventDestroy(a);
		cudaEventDestroy(b);
		std::sort(t.begin(), t.end());
		return (double) t[t.size() / 2];
	};

	ms_sort = timed([&] { sort_pairs(k0, p0, k1, p1, n, temp, tb, &sk, &sp); });
	ms2 = timed([&] {
		sort_pairs(k0, p0, k1, p1, n, temp, tb, &sk, &sp);
		k_permute<KT><<<GEN_GRID, 256>>>(make_perm_shape(n, 2), sk, sp, sk == k0 ? k1 : k0, sp == p0 ? p1 : p0,
										 NULL, 0, 0);
	});
	ms9 = timed([&] {
		sort_pairs(k0, p0, k1, p1, n, temp, tb, &sk, &sp);
		k_permute<KT><<<GEN_GRID, 256>>>(make_perm_shape(n, 9), sk, sp, sk == k0 ? k1 : k0, sp == p0 ? p1 : p0,
										 NULL, 0, 0);
	});
	ms9a = timed([&] {
		sort_pairs(k0, p0, k1, p1, n, temp, tb, &sk, &sp);
		k_permute<KT><<<GEN_GRID, 256>>>(make_perm_shape(n, 9), sk, sp, NULL, NULL, aos, tp, tile);
	});
	ms_perm = timed([&] {
		k_permute<KT><<<GEN_GRID, 256>>>(make_perm_shape(n, 9), k0, p0, k1, p1, NULL, 0, 0);
	});
	emit("build", 8 * (int) sizeof(KT), log2n, "cub_sort_pairs", 0, ms_sort, ms_sort * 1e6 / n, n * (sizeof(KT) + 8.0));
	emit("build", 8 * (int) sizeof(KT), log2n, "build_ebs_soa", 2, ms2, ms2 * 1e6 / n, n * (sizeof(KT) + 8.0));
	emit("build", 8 * (int) sizeof(KT), log2n, "build_eks9_soa", 9, ms9, ms9 * 1e6 / n, n * (sizeof(KT) + 8.0));
	emit("build", 8 * (int) sizeof(KT), log2n, "build_eks9_aos", 9, ms9a, ms9a * 1e6 / n, n * (sizeof(KT) + 8.0));
	emit("build", 8 * (int) sizeof(KT), log2n, "permute_only_eks9", 9, ms_perm, ms_perm * 1e6 / n, n * (sizeof(KT) + 8.0));
	/* the 8.7 ms reference figure was 32-bit keys with 32-bit values */
	if (sizeof(KT) == 4)
	{
		uint32_t   *v0 = (uint32_t *) p0,
				   *v1 = (uint32_t *) p1;
		double		ms32;

		ms32 = timed([&] {
			cub::DoubleBuffer<KT> dk(k0, k1);
			cub::DoubleBuffer<uint32_t> dv(v0, v1);

			CK(cub::DeviceRadixSort::SortPairs(temp, tb, dk, dv, (int) n, 0, 32));
		});
		emit("build", 32, log2n, "cub_sort_pairs_u32val", 0, ms32, ms32 * 1e6 / n, n * 8.0);
	}
	snprintf(s, sizeof(s), "build   %2d-bit n=2^%-2d sort %.3f ms; build EBS %.3f (%.2fx) EKS9 SoA %.3f (%.2fx) AoS %.3f (%.2fx)",
			 8 * (int) sizeof(KT), log2n, ms_sort, ms2, ms2 / ms_sort, ms9, ms9 / ms_sort, ms9a, ms9a / ms_sort);
	summary.push_back(s);
	cudaFree(k0);
	cudaFree(k1);
	cudaFree(kin);
	cudaFree(p0);
	cudaFree(p1);
	cudaFree(pin);
	cudaFree(aos);
	cudaFree(temp);
}

static const Var csr_vars[] = {
	{"bs_textbook", ALGO_BS, 0, false, false, 0, 0, 0, 0},
	{"ebs_hybrid", ALGO_SINGLE, 2, false, false, 0, 0, 32 * 1024, 0},
	{"eks_single_aos", ALGO_SINGLE, 9, true, false, 0, 0, 32 * 1024, 0},
	{"eks_single_soa", ALGO_SINGLE, 9, false, false, 0, 0, 32 * 1024, 0},
	{"eks_group_aos", ALGO_GROUP, 9, true, false, 0, 0, 0, 0},
	{"eks_group_soa", ALGO_GROUP, 9, false, false, 0, 0, 0, 0},
};

/* Range lookups with expected hits per query; full CSR pipeline, time per hit */
template <class KT>
static void
bench_ranges(const Bench<KT> &b)
{
	int			log2n = (int) llround(log2((double) b.n));
	uint64_t	maxq = 1u << 18;
	KT		   *lo,
			   *hi;
	Work<KT>	w;
	KT			mn = 0,
				mx = (KT) ~(KT) 0;
	/* unique uniform keys: density n / 2^bits */
	double		density = (double) b.n / pow(2.0, 8.0 * sizeof(KT));

	CK(cudaMalloc(&lo, maxq * sizeof(KT)));
	CK(cudaMalloc(&hi, maxq * sizeof(KT)));
	w = make_work<KT>(maxq, (uint64_t) 1 << 28, mn, mx);
	for (int lh = 2; lh <= 14; lh += 2)
	{
		uint64_t	hits = (uint64_t) 1 << lh;
		uint64_t	nq = std::min<uint64_t>(maxq, ((uint64_t) 1 << 26) / hits);
		uint64_t	width = (uint64_t) (hits / density) - 1;
		double		bsns = 0;
		char		s[400];
		int			sl;

		k_gen_range<KT><<<GEN_GRID, 256>>>(lo, hi, nq, width, 77 + lh);
		sl = snprintf(s, sizeof(s), "range   %2d-bit n=2^%d hits=%-5llu ns/hit:", 8 * (int) sizeof(KT), log2n,
					  (unsigned long long) hits);
		for (const Var &v : csr_vars)
		{
			uint64_t	total = 0;
			double		ms = run_csr(b, v, lo, hi, nq, w, &total);
			double		per = ms * 1e6 / (double) (total ? total : 1);

			emit("range", 8 * (int) sizeof(KT), log2n, v.name, (double) hits, ms, per, (double) total);
			if (v.algo == ALGO_BS)
				bsns = per;
			if (sl < (int) sizeof(s) - 40)
				sl += snprintf(s + sl, sizeof(s) - sl, " %s %.3f%s", v.name, per,
							   v.algo == ALGO_BS ? "" : (per < bsns ? "+" : ""));
		}
		summary.push_back(s);
	}
	cudaFree(lo);
	cudaFree(hi);
	free_work(w);
}

/* Duplicates: each key rep times, point lookups of present keys, full CSR */
template <class KT>
static void
bench_dups(int log2n)
{
	for (uint64_t rep = 1; rep <= 256; rep *= 4)
	{
		uint64_t	n = (uint64_t) 1 << log2n;
		Bench<KT>	b = make_bench<KT>(n, rep, true);
		uint64_t	nq = std::min<uint64_t>((uint64_t) 1 << 24, ((uint64_t) 1 << 27) / rep);
		KT		   *q;
		Work<KT>	w;
		char		s[400];
		int			sl;

		CK(cudaMalloc(&q, nq * sizeof(KT)));
		k_gen_uniform<KT><<<GEN_GRID, 256>>>(q, nq, b.sk, n, 99);
		w = make_work<KT>(nq, nq * rep + 1024, 0, (KT) ~(KT) 0);
		sl = snprintf(s, sizeof(s), "dups    %2d-bit n=2^%d rep=%-4llu ms:", 8 * (int) sizeof(KT), log2n,
					  (unsigned long long) rep);
		for (const Var &v : csr_vars)
		{
			uint64_t	total = 0;
			double		ms = run_csr(b, v, q, (const KT *) NULL, nq, w, &total);

			if (total != nq * rep)
			{
				fprintf(stderr, "CHECK FAILED: dups %s rep %llu: total %llu, expected %llu\n", v.name,
						(unsigned long long) rep, (unsigned long long) total, (unsigned long long) (nq * rep));
				exit(1);
			}
			emit("dups", 8 * (int) sizeof(KT), log2n, v.name, (double) rep, ms, ms * 1e6 / total, (double) total);
			if (sl < (int) sizeof(s) - 40)
				sl += snprintf(s + sl, sizeof(s) - sl, " %s %.3f", v.name, ms);
		}
		summary.push_back(s);
		cudaFree(q);
		free_work(w);
		free_bench(b);
	}
}

/* CSR pipeline cost of the composite strategy's choices on uniform point lookups */
template <class KT>
static void
bench_csr_points(const Bench<KT> &b, const KT *q, uint64_t nq)
{
	int			log2n = (int) llround(log2((double) b.n));
	KT			mn,
				mx;
	Work<KT>	w;
	static const Var vs[] = {
		{"csr_ebs_pin64k", ALGO_SINGLE, 2, false, false, 0, 0, 64 * 1024, 0},
		{"csr_eks_single_soa", ALGO_SINGLE, 9, false, false, 0, 0, 16 * 1024, 0},
		{"csr_eks_single_soa_pin200k", ALGO_SINGLE, 9, false, false, 0, 0, 200 * 1024, 0},
		{"csr_eks_single_soa_c21b16", ALGO_SINGLE, 9, false, false, 21, 16, 16 * 1024, 0},
		{"csr_eks_group_soa", ALGO_GROUP, 9, false, false, 0, 0, 0, 0},
		{"csr_bs_textbook", ALGO_BS, 0, false, false, 0, 0, 0, 0},
	};

	CK(cudaMemcpy(&mn, b.sk, sizeof(KT), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&mx, b.sk + b.n - 1, sizeof(KT), cudaMemcpyDeviceToHost));
	w = make_work<KT>(nq, nq + 16, mn, mx);
	for (const Var &v : vs)
	{
		uint64_t	total = 0;
		double		ms = run_csr(b, v, q, (const KT *) NULL, nq, w, &total);

		if (total != nq)
		{
			fprintf(stderr, "CHECK FAILED: csr %s total %llu != %llu\n", v.name, (unsigned long long) total,
					(unsigned long long) nq);
			exit(1);
		}
		emit("csr", 8 * (int) sizeof(KT), log2n, v.name, 0, ms, ms * 1e6 / nq, 0);
	}
	free_work(w);
}

template <class KT>
static void
run_lookup_sections(const std::vector<std::string> &secs, std::vector<int> sizes)
{
	uint64_t	nq = (uint64_t) 1 << (quick ? 22 : 25);
	KT		   *q;

	CK(cudaMalloc(&q, nq * sizeof(KT)));
	for (int log2n : sizes)
	{
		uint64_t	n = (uint64_t) 1 << log2n;
		bool		top = log2n == sizes.back();
		Bench<KT>	b = make_bench<KT>(n, 1, true);
		double		fp = (double) n * (sizeof(KT) + 8);

		emit("footprint", 8 * (int) sizeof(KT), log2n, "eytzinger_bytes", 0, 0, 0, fp);
		k_gen_uniform<KT><<<GEN_GRID, 256>>>(q, nq, b.sk, n, 5);
		bench_points<KT>(sizeof(KT) == 4 ? "lookup" : "u64", b, q, nq, (double) nq, true);
		if (sizeof(KT) == 4 && (log2n == 15 || top))
			bench_csr_points<KT>(b, q, nq);
		if (top && sizeof(KT) == 4)
		{
			std::vector<const char *> sel = {"thrust_lower_bound", "bs_textbook", "ebs", "ebs_pin64k",
				"eks_single_aos", "eks_single_soa", "eks_single_soa_pin16k", "eks_group_soa"};

			if (on(secs, "zipf"))
				for (double zs : {0.5, 0.75, 1.0, 1.25, 1.5, 2.0})
				{
					k_gen_zipf<KT><<<GEN_GRID, 256>>>(q, nq, b.sk, n, zs, 11);
					bench_points<KT>("zipf", b, q, nq, zs, false, &sel);
				}
			if (on(secs, "sorted"))
			{
				KT		   *q2;
				void	   *t = NULL;
				size_t		tb = 0;

				k_gen_uniform<KT><<<GEN_GRID, 256>>>(q, nq, b.sk, n, 5);
				CK(cudaMalloc(&q2, nq * sizeof(KT)));
				CK(cub::DeviceRadixSort::SortKeys(t, tb, q, q2, (int) nq));
				CK(cudaMalloc(&t, tb));
				CK(cub::DeviceRadixSort::SortKeys(t, tb, q, q2, (int) nq));
				CK(cudaDeviceSynchronize());
				cudaFree(t);
				bench_points<KT>("sorted", b, q2, nq, 1, false, &sel);
				cudaFree(q2);
			}
			if (on(secs, "range"))
				bench_ranges<KT>(b);
		}
		free_bench(b);
	}
	cudaFree(q);
}

/*
 * Section "fast": the point fast paths against thrust and the earlier best.
 * smem_qQ: whole index in shared memory, Q lookups per thread.  gsortB_sS:
 * CUB sort of (key, id) on the top B key bits, lookups in sorted order,
 * results back through a one-pass partition on the id's top S bits and a
 * local scatter (S = 0: direct writes out[id]).  The step rows time each
 * step alone (on the data the full run left).  pos_*: POSITIONS ONLY (the
 * lower-bound Eytzinger slot, no key or payload read), the analogue of
 * thrust::lower_bound's position output.
 */
template <class KT>
static void
bench_fast(const std::vector<int> &sizes)
{
	uint64_t	nq = (uint64_t) 1 << (quick ? 22 : 25);
	KT		   *q;
	uint64_t   *out;
	SortedWork<KT> sw;

	CK(cudaMalloc(&q, nq * sizeof(KT)));
	CK(cudaMalloc(&out, nq * 8));
	CK(sorted_work_alloc<KT>(sw, nq));
	for (int log2n : sizes)
	{
		uint64_t	n = (uint64_t) 1 << log2n;
		Bench<KT>	b = make_bench<KT>(n, 1, true);
		Idx<KT>		ix9 = idx_of(b, 9, false),
					ix2 = idx_of(b, 2, false);
		KT			mn,
					mx;
		Cfg			cfg = {ALGO_SINGLE, false, 16 * 1024, 0};
		Cfg			cfg0 = {ALGO_SINGLE, false, 0, 0};
		double		thr,
					ms,
					best = 1e30;
		const char *bestname = "";
		int			bits = 8 * (int) sizeof(KT);
		auto		row = [&](const char *name, double t, bool payload) {
			emit("fast", bits, log2n, name, (double) nq, t, t * 1e6 / nq, 0);
			if (payload && t < best)
			{
				best = t;
				bestname = name;
			}
		};
		auto		check_pos = [&](const char *name) {
			/* positions only: the slot's key must be the query (every benchmark query is present) */
			std::vector<KT> hq(512);
			int			bad = 0;

			for (int s = 0; s < 512; s++)
			{
				uint64_t	i = (nq - 1) * (uint64_t) s / 511,
							slot;
				KT			kk = 0;

				CK(cudaMemcpy(&hq[s], q + i, sizeof(KT), cudaMemcpyDeviceToHost));
				CK(cudaMemcpy(&slot, out + i, 8, cudaMemcpyDeviceToHost));
				if (slot >= n)
				{
					bad++;
					continue;
				}
				CK(cudaMemcpy(&kk, b.ek9 + slot, sizeof(KT), cudaMemcpyDeviceToHost));
				bad += kk != hq[s];
			}
			if (bad)
			{
				fprintf(stderr, "CHECK FAILED: %s: %d of 512 sampled positions wrong\n", name, bad);
				exit(1);
			}
		};

		CK(cudaMemcpy(&mn, b.sk, sizeof(KT), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&mx, b.sk + b.n - 1, sizeof(KT), cudaMemcpyDeviceToHost));
		k_gen_uniform<KT><<<GEN_GRID, 256>>>(q, nq, b.sk, n, 5);
		CK(cudaGetLastError());
		thr = time_ms([&] {
			thrust::lower_bound(thrust::device, b.sk, b.sk + b.n, q, q + nq, (uint32_t *) out);
		});
		row("thrust_lower_bound", thr, false);
		CK(cudaMemset(out, 0xFF, nq * 8));
		ms = time_ms([&] {
			Qs<KT>		qs = {q, NULL, NULL, nq};
			Outs		o = {out, NULL, NULL};

			CK((launch_lookup<KT, MODE_POINT>(ix9, qs, o, cfg, 0)));
		});
		check_point(b, q, out, nq, "eks_single_soa_pin16k");
		row("eks_single_soa_pin16k", ms, true);
		if (smem_point_fits(ix9))
		{
			for (int qq : {1, 2, 4})
			{
				char		name[64];

				snprintf(name, sizeof(name), "eks_smem_q%d", qq);
				CK(cudaMemset(out, 0xFF, nq * 8));
				ms = time_ms([&] { CK(launch_point_smem<KT>(ix9, q, nq, out, qq, 0, 0)); });
				check_point(b, q, out, nq, name);
				row(name, ms, true);
			}
			if (smem_point_fits(ix2))
			{
				CK(cudaMemset(out, 0xFF, nq * 8));
				ms = time_ms([&] { CK(launch_point_smem<KT>(ix2, q, nq, out, 4, 0, 0)); });
				check_point(b, q, out, nq, "ebs_smem_q4");
				row("ebs_smem_q4", ms, true);
			}
		}
		if (log2n >= 20)
		{
			struct
			{
				const char *name;
				int			kb,
							sb;
			}			gv[] = {{"eks_gsort16_tiles", 16, -1}, {"eks_gsort16_s8", 16, 8}, {"eks_gsort8_s8", 8, 8},
							   {"eks_gsort16_direct", 16, 0}, {"eks_gsort12_tiles", 12, -1},
							   {"eks_gsort16_ctiles", 16, -3},
							   {"eks_gsort16_fused", 16, -2}, {"eks_gsort12_fused", 12, -2}};

			for (auto &g : gv)
			{
				CK(cudaMemset(out, 0xFF, nq * 8));
				ms = time_ms([&] {
					CK((sorted_point<KT, false>(ix9, q, nq, out, cfg0, mn, mx, g.kb, g.sb, sw, false, 0)));
				});
				check_point(b, q, out, nq, g.name);
				row(g.name, ms, true);
				if (g.kb == 16 && g.sb == -1)
				{
					ms = time_ms([&] { CK(sorted_point_scatter<KT>(nq, out, -1, sw, 0)); });
					row("step_partition14_tile_write", ms, false);
					ms = time_ms([&] {
						k_tile_write<256><<<132 * 8, 256>>>(sw.perm2, sw.pay2, nq, out);
					});
					row("step_tile_write_only", ms, false);
					ms = time_ms([&] {
						size_t		tb = sw.temp_bytes;

						CK(cub::DeviceRadixSort::SortPairs(sw.temp, tb, sw.perm, sw.perm2, sw.tmp, sw.pay2, (int) nq,
														   17, 25, 0));
					});
					row("step_cub_pairs_u32u64_8bits_only", ms, false);
					ms = time_ms([&] {
						k_scatter<uint64_t><<<132 * 16, 256>>>(sw.perm2, sw.pay2, nq, out);
					});
					row("step_window_scatter_only", ms, false);
					CK(cudaMemset(out, 0xFF, nq * 8));
					CK((sorted_point<KT, false>(ix9, q, nq, out, cfg0, mn, mx, 16, -1, sw, false, 0)));
					check_point(b, q, out, nq, "steps_tiles");
				}
				if (g.kb == 16 && g.sb == -3)
				{
					ms = time_ms([&] { CK(cluster_tile_write(sw.perm2, sw.pay2, nq, out, 0)); });
					row("step_cluster_tile_write_only", ms, false);
					CK(cudaMemset(out, 0xFF, nq * 8));
					CK((sorted_point<KT, false>(ix9, q, nq, out, cfg0, mn, mx, 16, -3, sw, false, 0)));
					check_point(b, q, out, nq, "steps_ctiles");
				}
				if (g.kb == 16 && g.sb == 8)
				{
					/* the steps alone (buffers hold the full run's data) */
					ms = time_ms([&] { CK(sorted_point_sort<KT>(q, NULL, nq, mn, mx, 16, sw, false, 0)); });
					row("step_sort16_iota", ms, false);
					ms = time_ms([&] { CK((sorted_point_lookup<KT, false>(ix9, nq, out, cfg0, 8, sw, 0))); });
					row("step_lookup_sorted16", ms, false);
					ms = time_ms([&] { CK(sorted_point_scatter<KT>(nq, out, 8, sw, 0)); });
					row("step_partition8_scatter", ms, false);
					ms = time_ms([&] { CK((sorted_point_lookup<KT, false>(ix9, nq, out, cfg0, 0, sw, 0))); });
					row("step_lookup_sorted16_direct_writes", ms, false);
					CK(cudaMemset(out, 0xFF, nq * 8));
					CK((sorted_point<KT, false>(ix9, q, nq, out, cfg0, mn, mx, 16, 8, sw, false, 0)));
					check_point(b, q, out, nq, "steps");
				}
			}
			/* the fused write-back with 2 and 8 lookups per thread (the library uses PART_ITEMS) */
			auto		fused_items = [&](const char *name, auto items) {
				CK(cudaMemset(out, 0xFF, nq * 8));
				ms = time_ms([&] {
					CK(sorted_point_sort<KT>(q, NULL, nq, mn, mx, 16, sw, false, 0));
					CK((sorted_point_fused<KT, false, decltype(items)::value>(ix9, nq, out, sw, 0)));
				});
				check_point(b, q, out, nq, name);
				row(name, ms, true);
			};
			fused_items("eks_gsort16_fused_i8", std::integral_constant<int, 8>());
			fused_items("eks_gsort16_fused_i2", std::integral_constant<int, 2>());
			/* POSITIONS ONLY: lower-bound slot, no payload (compare with thrust's positions) */
			CK(cudaMemset(out, 0xFF, nq * 8));
			ms = time_ms([&] {
				Qs<KT>		qs = {q, NULL, NULL, nq};
				Outs		o = {out, NULL, NULL};

				CK((launch_point_k<KT, true>(ix9, qs, o, cfg, pin_slots(ix9, cfg.pin_bytes), 0)));
			});
			check_pos("pos_eks_single_soa_pin16k");
			row("pos_eks_single_soa_pin16k", ms, false);
			CK(cudaMemset(out, 0xFF, nq * 8));
			ms = time_ms([&] {
				CK((sorted_point<KT, true>(ix9, q, nq, out, cfg0, mn, mx, 16, -1, sw, false, 0)));
			});
			check_pos("pos_eks_gsort16_tiles");
			row("pos_eks_gsort16_tiles", ms, false);
			CK(cudaMemset(out, 0xFF, nq * 8));
			ms = time_ms([&] {
				CK((sorted_point<KT, true>(ix9, q, nq, out, cfg0, mn, mx, 16, -2, sw, false, 0)));
			});
			check_pos("pos_eks_gsort16_fused");
			row("pos_eks_gsort16_fused", ms, false);
		}
		{
			char		s[300];

			snprintf(s, sizeof(s), "fast    %2d-bit n=2^%-2d thrust %.3f ms, best payload path %s %.3f ms (%.2fx)",
					 bits, log2n, thr, bestname, best, thr / best);
			summary.push_back(s);
		}
		free_bench(b);
	}
	cudaFree(q);
	cudaFree(out);
	sorted_work_free<KT>(sw);
}

/*
 * Section "api": the C API as the extension calls it, at 2^25 point lookups:
 * eytzgpu_lookup_join with 64-bit keys and rows in host arrays (the caller's
 * own, or the handle's pinned inputs filled in place), sorted (payload, row)
 * pairs out, with 0, 1 and 3 included columns gathered for the matches;
 * against the pinned transfer of those bytes (keys and rows in; payloads,
 * rows and the columns' values and NULL flags out) timed in the same run.
 * Payloads are heap TIDs as the extension packs them (200 tuples a block,
 * heap order uncorrelated with the keys); the rows ascend, as an outer
 * batch's do, and the calls say so (EYTZGPU_ROWS_ASCENDING: the matches are
 * sorted by payload alone); the kernels without that flag are timed too.
 * Also the CSR API (eytzgpu_lookup) on 32-bit keys, and one join batch of
 * the executor's size (2^20 queries) from the caller's arrays.  Wall times are the
 * medians of reps calls.
 */
#define API_TUPLES_PER_BLOCK 200
#define API_JOIN_BATCH (1u << 20)	/* the extension's batches: eytzgpu.batch_size */
#define API_SLOT_MULT 0x9E3779B97F4A7C15ull	/* slot -> heap row: a bijection mod 2^log2n */

/* Included columns of the api section: value of column c at slot t (column 2 has NULLs) */
static const int api_widths[3] = {4, 8, 2};

static uint64_t
api_col_value(int c, uint64_t t, bool *isnull)
{
	*isnull = c == 2 && t % 5 == 0;
	if (*isnull)
		return 0;
	return c == 0 ? (uint32_t) (t * 7) : c == 1 ? t * 0x100000001ull : (uint16_t) (t ^ 0x5A5A);
}

static void
bench_api(const std::vector<int> &sizes)
{
	uint64_t	nq = (uint64_t) 1 << (quick ? 22 : 25);
	std::vector<uint64_t> hq(nq);
	std::vector<uint32_t> hq32(nq),
				hrows(nq);
	uint32_t   *dq;
	void	   *xh,
			   *xd;
	char		err[256];
	uint64_t	inv = API_SLOT_MULT;

	for (int i = 0; i < 6; i++)
		inv *= 2 - API_SLOT_MULT * inv;	/* Newton: the multiplier's inverse mod 2^64 */
	CK(cudaMalloc(&dq, nq * 4));
	CK(cudaMallocHost(&xh, nq * 32));
	CK(cudaMalloc(&xd, nq * 32));
	memset(xh, 1, nq * 32);
	for (uint64_t i = 0; i < nq; i++)
		hrows[i] = (uint32_t) i;
	for (int log2n : sizes)
	{
		uint64_t	n = (uint64_t) 1 << log2n;
		Bench<uint32_t> b = make_bench<uint32_t>(n, 1, true);
		std::vector<uint32_t> ek(n);
		std::vector<uint64_t> ep(n);
		std::vector<std::vector<unsigned char>> cv(3);
		std::vector<uint8_t> cn((n + 7) / 8, 0);
		const void *cvp[3];
		const uint8_t *cnp[3] = {NULL, NULL, cn.data()};
		EytzGpuIndex *h = NULL;
		auto		med = [](std::vector<double> &v) {
			std::sort(v.begin(), v.end());
			return v[v.size() / 2];
		};
		int			ncols = 0;
		auto		check = [&](const EytzGpuJoinResult &r, const char *what) {
			/* every query is present: nq pairs, ascending payloads, the slot's key is the row's query's */
			bool		ok = r.nmatch == nq && r.nq_done == nq;

			for (uint64_t s = 0; ok && s < 4096; s++)
			{
				uint64_t	j = (nq - 1) * s / 4095;
				uint64_t	row = (r.payloads[j] >> 16) * API_TUPLES_PER_BLOCK + (r.payloads[j] & 0xFFFF) - 1;
				uint64_t	t = (row * inv) & (n - 1);

				ok = ek[t] == (uint32_t) hq[r.rows[j]] && (j == 0 || r.payloads[j - 1] <= r.payloads[j]);
				for (int c = 0; ok && c < ncols; c++)
				{
					bool		isnull;
					uint64_t	want = api_col_value(c, t, &isnull),
								got = 0;

					memcpy(&got, (const unsigned char *) r.columns[c] + j * api_widths[c], api_widths[c]);
					ok = got == want && r.column_nulls[c][j] == isnull;
				}
			}
			if (!ok)
			{
				fprintf(stderr, "CHECK FAILED: api %s at 2^%d with %d columns\n", what, log2n, ncols);
				exit(1);
			}
		};

		k_gen_uniform<uint32_t><<<GEN_GRID, 256>>>(dq, nq, b.sk, n, 5);
		CK(cudaMemcpy(hq32.data(), dq, nq * 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(ek.data(), b.ek9, n * 4, cudaMemcpyDeviceToHost));
		free_bench(b);
		for (uint64_t i = 0; i < nq; i++)
			hq[i] = hq32[i];
		for (int c = 0; c < 3; c++)
			cv[c].resize(n * api_widths[c]);
		for (uint64_t t = 0; t < n; t++)
		{
			uint64_t	row = (t * API_SLOT_MULT) & (n - 1);

			ep[t] = eytz_pack_tid((uint32_t) (row / API_TUPLES_PER_BLOCK),
								  (uint16_t) (row % API_TUPLES_PER_BLOCK + 1));
			for (int c = 0; c < 3; c++)
			{
				bool		isnull;
				uint64_t	v = api_col_value(c, t, &isnull);

				memcpy(&cv[c][t * api_widths[c]], &v, api_widths[c]);
				if (isnull)
					cn[t / 8] |= 1 << (t % 8);
			}
		}
		for (int c = 0; c < 3; c++)
			cvp[c] = cv[c].data();
		if (eytzgpu_upload(0, ek.data(), ep.data(), n, 4, 9, 0, &h, NULL, err, sizeof(err)) != EYTZGPU_OK ||
			eytzgpu_attach_columns(h, 3, api_widths, cvp, cnp, NULL, err, sizeof(err)) != EYTZGPU_OK)
		{
			fprintf(stderr, "api: upload failed: %s\n", err);
			exit(1);
		}
		for (ncols = 0; ncols <= 3; ncols += ncols == 0 ? 1 : 2)
		{
			std::vector<double> wall_own,
						wall_in,
						kern,
						xfer,
						kern_csr,
						kern_rowsort,
						wall_batch,
						kern_batch;
			uint64_t	col_bytes = 0;
			double		ref;

			for (int c = 0; c < ncols; c++)
				col_bytes += api_widths[c] + 1;
			if (eytzgpu_join_columns(h, (1u << ncols) - 1, err, sizeof(err)) != EYTZGPU_OK)
			{
				fprintf(stderr, "api: join columns failed: %s\n", err);
				exit(1);
			}
			ref = time_ms([&] {
				CK(cudaMemcpyAsync(xd, xh, nq * 12, cudaMemcpyHostToDevice));
				CK(cudaMemcpyAsync(xh, xd, nq * (12 + col_bytes), cudaMemcpyDeviceToHost));
			});
			for (int r = 0; r <= reps; r++)
			{
				EytzGpuJoinResult res;
				EytzGpuResult cres;
				uint64_t   *plo;
				uint32_t   *prows;

				/* the caller's own arrays */
				if (eytzgpu_lookup_join(h, hq.data(), NULL, hrows.data(), nq, UINT64_MAX, EYTZGPU_ROWS_ASCENDING,
										&res, err, sizeof(err)) != EYTZGPU_OK)
				{
					fprintf(stderr, "api: join failed: %s\n", err);
					exit(1);
				}
				check(res, "join");
				if (r > 0)
					wall_own.push_back(res.total_ms);
				/* inputs filled in place (the fill is the caller's work, not timed) */
				if (eytzgpu_lookup_join_inputs(h, nq, &plo, NULL, &prows, err, sizeof(err)) != EYTZGPU_OK)
				{
					fprintf(stderr, "api: join inputs failed: %s\n", err);
					exit(1);
				}
				memcpy(plo, hq.data(), nq * 8);
				memcpy(prows, hrows.data(), nq * 4);
				if (eytzgpu_lookup_join(h, plo, NULL, prows, nq, UINT64_MAX, 0, &res, err, sizeof(err)) !=
					EYTZGPU_OK)
				{
					fprintf(stderr, "api: join in place failed: %s\n", err);
					exit(1);
				}
				check(res, "join in place, (payload, row) sort");
				if (r > 0)
					kern_rowsort.push_back(res.kernel_ms);
				if (eytzgpu_lookup_join_inputs(h, nq, &plo, NULL, &prows, err, sizeof(err)) != EYTZGPU_OK)
				{
					fprintf(stderr, "api: join inputs failed: %s\n", err);
					exit(1);
				}
				memcpy(plo, hq.data(), nq * 8);
				memcpy(prows, hrows.data(), nq * 4);
				if (eytzgpu_lookup_join(h, plo, NULL, prows, nq, UINT64_MAX, EYTZGPU_ROWS_ASCENDING, &res, err,
										sizeof(err)) != EYTZGPU_OK)
				{
					fprintf(stderr, "api: join in place failed: %s\n", err);
					exit(1);
				}
				check(res, "join in place");
				if (r > 0)
				{
					wall_in.push_back(res.total_ms);
					kern.push_back(res.kernel_ms);
					xfer.push_back(res.transfer_ms);
				}
				if (ncols == 0 &&
					(eytzgpu_lookup(h, hq32.data(), NULL, nq, 0, &cres, err, sizeof(err)) != EYTZGPU_OK ||
					 cres.total != nq))
				{
					fprintf(stderr, "api: lookup failed: %s\n", err);
					exit(1);
				}
				/* one batch of the join's size (eytzgpu.batch_size) from the caller's arrays */
				if (ncols == 0 &&
					(eytzgpu_lookup_join(h, hq.data(), NULL, hrows.data(), API_JOIN_BATCH, UINT64_MAX,
										 EYTZGPU_ROWS_ASCENDING, &res, err, sizeof(err)) != EYTZGPU_OK ||
					 res.nmatch != API_JOIN_BATCH))
				{
					fprintf(stderr, "api: join batch failed: %s\n", err);
					exit(1);
				}
				if (ncols == 0 && r > 0)
				{
					wall_batch.push_back(res.total_ms);
					kern_batch.push_back(res.kernel_ms);
				}
				if (r > 0 && ncols == 0)
					kern_csr.push_back(cres.kernel_ms);
			}
			{
				double		wo = med(wall_own),
							wi = med(wall_in),
							k = med(kern),
							x = med(xfer),
							kr = med(kern_rowsort);
				char		s[400],
							v[64];

				snprintf(v, sizeof(v), "_cols%d", ncols);
				emit("api", 32, log2n, (std::string("pinned_transfer_ref") + v).c_str(), (double) nq, ref,
					 ref * 1e6 / nq, nq * (24.0 + col_bytes));
				emit("api", 32, log2n, (std::string("join_caller_arrays") + v).c_str(), (double) nq, wo,
					 wo * 1e6 / nq, 0);
				emit("api", 32, log2n, (std::string("join_inputs_in_place") + v).c_str(), (double) nq, wi,
					 wi * 1e6 / nq, 0);
				emit("api", 32, log2n, (std::string("join_kernel") + v).c_str(), (double) nq, k, k * 1e6 / nq, 0);
				emit("api", 32, log2n, (std::string("join_transfer") + v).c_str(), (double) nq, x, x * 1e6 / nq, 0);
				emit("api", 32, log2n, (std::string("join_kernel_row_sort") + v).c_str(), (double) nq, kr,
					 kr * 1e6 / nq, 0);
				snprintf(s, sizeof(s), "api     32-bit n=2^%-2d %d cols join: caller arrays %.2f ms (%.2fx), in place "
						 "%.2f ms (%.2fx) of pinned transfer %.2f ms; kernels %.3f (with the (payload, row) sort "
						 "%.3f), copies %.3f", log2n, ncols, wo, wo / ref, wi, wi / ref, ref, k, kr, x);
				summary.push_back(s);
				if (ncols == 0)
				{
					double		kc = med(kern_csr);

					double		wb = med(wall_batch),
								kb = med(kern_batch);

					emit("api", 32, log2n, "csr_lookup_kernel", (double) nq, kc, kc * 1e6 / nq, 0);
					emit("api", 32, log2n, "join_batch_caller_arrays", (double) API_JOIN_BATCH, wb,
						 wb * 1e6 / API_JOIN_BATCH, 0);
					emit("api", 32, log2n, "join_batch_kernel", (double) API_JOIN_BATCH, kb,
						 kb * 1e6 / API_JOIN_BATCH, 0);
					snprintf(s, sizeof(s), "api     32-bit n=2^%-2d CSR lookup kernels %.3f; a join batch of 2^20 "
							 "from the caller's arrays %.3f ms = %.2f ns/key (kernels %.3f)", log2n, kc, wb,
							 wb * 1e6 / API_JOIN_BATCH, kb);
					summary.push_back(s);
				}
			}
		}
		eytzgpu_free(h);
	}
	cudaFree(dq);
	cudaFreeHost(xh);
	cudaFree(xd);
}

/*
 * Section "small": a join batch's round trip through the C API at the sizes
 * a LIMIT's first batch, a rescan or a service request has (1 to 10,000
 * keys): the wall time of eytzgpu_lookup_join (submit to wait, as the
 * library clocks it) and its kernel and transfer times, medians of many
 * calls, on indexes of 2^20 and 2^24 32-bit keys, unique and each key twice
 * (the CSR pipeline).  "auto" is the library's choice (one launch for
 * batches of up to EYTZ_JOIN_SMALL points); "pipeline" names a strategy
 * (EKS single, no reordering, pinned top levels), which keeps the chain of
 * launches: the two side by side in one run.  Rows ascend, as an outer
 * batch's do.
 */
static void
bench_small(void)
{
	const int	calls = quick ? 50 : 400;
	char		err[256];

	for (int log2n : {20, 24})
		for (int dup = 0; dup < 2; dup++)
		{
			uint64_t	n = (uint64_t) 1 << log2n;
			std::vector<uint32_t> keys(n);
			std::vector<uint64_t> pays(n);
			EytzGpuIndex *h = NULL;

			/* sorted input: key i (or i / 2), spread over int4 by a bijection of the rank */
			for (uint64_t i = 0; i < n; i++)
			{
				keys[i] = (uint32_t) ((dup ? i / 2 : i) * 2654435761u);
				pays[i] = eytz_pack_tid((uint32_t) (i / 200 + 1), (uint16_t) (i % 200 + 1));
			}
			if (eytzgpu_build(0, keys.data(), pays.data(), n, 4, 9, 0, NULL, NULL, &h, NULL, err, sizeof(err)) !=
				EYTZGPU_OK)
			{
				fprintf(stderr, "small: build failed: %s\n", err);
				exit(1);
			}
			for (uint64_t nq : {1ull, 10ull, 100ull, 1000ull, 2000ull, 4000ull, 10000ull})
			{
				std::vector<uint64_t> lo(nq);
				std::vector<uint32_t> rows(nq);

				for (uint64_t i = 0; i < nq; i++)
				{
					uint64_t	r = (i * 0x9E3779B97F4A7C15ull + nq) % (n + n / 16);	/* ~6% misses */

					lo[i] = r < n ? keys[r] : (uint32_t) (r * 2654435761u + 1);
					rows[i] = (uint32_t) (i * 3);
				}
				for (int mode = 0; mode < 2; mode++)
				{
					uint32_t	flags = EYTZGPU_ROWS_ASCENDING |
						(mode ? EYTZGPU_STRAT_SINGLE | EYTZGPU_REORDER_NONE | EYTZGPU_PIN_ON : 0);
					std::vector<double> wall,
								kern,
								xfer;
					uint64_t	pairs = 0;
					char		variant[64];

					for (int c = 0; c <= calls; c++)
					{
						EytzGpuJoinResult res;

						if (eytzgpu_lookup_join(h, lo.data(), NULL, rows.data(), nq, UINT64_MAX, flags, &res, err,
												sizeof(err)) != EYTZGPU_OK)
						{
							fprintf(stderr, "small: join failed: %s\n", err);
							exit(1);
						}
						if (c == 0)
						{
							pairs = res.nmatch;
							continue;	/* warm-up: buffers grow */
						}
						if (res.nmatch != pairs)
						{
							fprintf(stderr, "CHECK FAILED: small: %llu pairs, then %llu\n",
									(unsigned long long) pairs, (unsigned long long) res.nmatch);
							exit(1);
						}
						wall.push_back(res.total_ms);
						kern.push_back(res.kernel_ms);
						xfer.push_back(res.transfer_ms);
					}
					std::sort(wall.begin(), wall.end());
					std::sort(kern.begin(), kern.end());
					std::sort(xfer.begin(), xfer.end());
					snprintf(variant, sizeof(variant), "%s_%s_wall", mode ? "pipeline" : "auto", dup ? "dups" : "unique");
					emit("small", 32, log2n, variant, (double) nq, wall[wall.size() / 2],
						 wall[wall.size() / 2] * 1e6 / nq, (double) pairs);
					snprintf(variant, sizeof(variant), "%s_%s_kernel", mode ? "pipeline" : "auto", dup ? "dups" : "unique");
					emit("small", 32, log2n, variant, (double) nq, kern[kern.size() / 2], 0, (double) pairs);
					snprintf(variant, sizeof(variant), "%s_%s_transfer", mode ? "pipeline" : "auto", dup ? "dups" : "unique");
					emit("small", 32, log2n, variant, (double) nq, xfer[xfer.size() / 2], 0, (double) pairs);
				}
			}
			eytzgpu_free(h);
		}
}

int
main(int argc, char **argv)
{
	std::vector<std::string> secs;
	std::vector<int> api_sizes;
	cudaDeviceProp prop;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
			csv = fopen(argv[++i], "w");
		else if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else if (strcmp(argv[i], "--api-sizes") == 0 && i + 1 < argc)
		{
			/* the api section's index sizes (log2), instead of its own */
			for (char *tok = strtok(argv[++i], ","); tok; tok = strtok(NULL, ","))
				api_sizes.push_back(atoi(tok));
		}
		else
			secs.push_back(argv[i]);
	}
	if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess)
	{
		printf("bench: no usable GPU\n");
		return 0;
	}
	if (quick)
		reps = 3;
	printf("# device %s, %d SMs, L2 %d MB, CUDA runtime via CUB %d\n", prop.name, prop.multiProcessorCount,
		   prop.l2CacheSize >> 20, CUB_VERSION);
	printf("section,key_bits,log2n,variant,param,ms,per_unit_ns,bytes\n");
	if (csv)
		fprintf(csv, "section,key_bits,log2n,variant,param,ms,per_unit_ns,bytes\n");

	if (on(secs, "xfer"))
	{
		/* transfers, reported apart: 2^25 32-bit queries in, 2^25 payloads out, pinned */
		uint64_t	nq = (uint64_t) 1 << 25;
		void	   *h,
				   *d;
		double		ms;

		CK(cudaMallocHost(&h, nq * 8));
		CK(cudaMalloc(&d, nq * 8));
		memset(h, 1, nq * 8);
		ms = time_ms([&] { CK(cudaMemcpyAsync(d, h, nq * 4, cudaMemcpyHostToDevice)); });
		emit("xfer", 32, 25, "h2d_queries_pinned", 0, ms, ms * 1e6 / nq, nq * 4.0);
		ms = time_ms([&] { CK(cudaMemcpyAsync(h, d, nq * 8, cudaMemcpyDeviceToHost)); });
		emit("xfer", 32, 25, "d2h_payloads_pinned", 0, ms, ms * 1e6 / nq, nq * 8.0);
		ms = time_ms([&] { CK(cudaMemcpyAsync(d, (char *) d + nq * 4, nq * 4, cudaMemcpyDeviceToDevice)); });
		emit("xfer", 32, 25, "d2d_copy_128MiB", 0, ms, 2.0 * nq * 4 / (ms * 1e6), nq * 8.0);
		cudaFreeHost(h);
		cudaFree(d);
	}
	if (on(secs, "build"))
		for (int l : quick ? std::vector<int>{15, 20, 24} : std::vector<int>{15, 18, 21, 24, 26, 28})
			bench_build<uint32_t>(l);
	if (on(secs, "lookup") || on(secs, "zipf") || on(secs, "sorted") || on(secs, "range"))
		run_lookup_sections<uint32_t>(secs, quick ? std::vector<int>{15, 20, 24}
									  : std::vector<int>{15, 18, 21, 24, 26, 28});
	if (!secs.empty() && on(secs, "fast"))
		bench_fast<uint32_t>(quick ? std::vector<int>{15, 20, 24} : std::vector<int>{15, 21, 22, 23, 24, 26, 28});
	if (!secs.empty() && on(secs, "api"))
		bench_api(!api_sizes.empty() ? api_sizes
				  : quick ? std::vector<int>{15, 20} : std::vector<int>{15, 21, 24, 28});
	if (!secs.empty() && on(secs, "small"))
		bench_small();
	if (on(secs, "dups"))
		bench_dups<uint32_t>(quick ? 22 : 26);
	if (on(secs, "u64"))
	{
		bench_build<uint64_t>(quick ? 22 : 27);
		run_lookup_sections<uint64_t>(secs, quick ? std::vector<int>{15, 22} : std::vector<int>{15, 20, 24, 27});
	}
	printf("\n== summary ==\n");
	for (auto &s : summary)
		printf("%s\n", s.c_str());
	if (csv)
		fclose(csv);
	return 0;
}
