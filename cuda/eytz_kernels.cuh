/*
 * eytz_kernels.cuh
 *		Device kernels of eytzgpu and thin host-side launchers for them.
 *
 * Shared by the library (eytzgpu_cuda.cu), the GPU test and the benchmark, so
 * that what is measured is exactly what the extension runs.  The layout math
 * comes from eytz_layout.h; here we only add shift-based fast paths for it
 * (k - 1 = 2^p), which the tests compare against eytz_sorted_rank.
 *
 * Kernels:
 *	- k_permute: one-read-one-write build into Eytzinger order (SoA or AoS);
 *	- k_single:  one thread per lookup (EBS when k = 2, EKS single when k > 2),
 *	             optional shared-memory pinning of the top levels, optional
 *	             block-local reordering of the lookup keys, hybrid coalesced
 *	             scanning of long per-level runs (paper section 5.1);
 *	- k_group:   EKS group, k - 1 lanes per lookup with warp ballots;
 *	- k_bs:      text-book binary search on the sorted array (baseline);
 *	- point fast paths: k_point_smem (whole index in shared memory) and
 *	  sorted_point (globally sorted lookups; k_point_part partitions its
 *	  results for k_cluster_tile_write, which writes them back in query order
 *	  through a cluster's distributed shared memory).
 * Each lookup kernel runs in one of three modes: POINT (one payload per query,
 * the paper's benchmark), COUNT (matches per query + first payload) and FILL
 * (write all matches at the query's CSR offset).
 */
#ifndef EYTZ_KERNELS_CUH
#define EYTZ_KERNELS_CUH

#include <stdint.h>
#include <cub/cub.cuh>
#include <cooperative_groups.h>

#include "eytz_layout.h"

namespace eytzk
{

enum Mode
{
	MODE_POINT = 0,
	MODE_COUNT = 1,
	MODE_FILL = 2
};

static constexpr uint64_t NO_MATCH = ~0ull;
/* a thread hands a per-level run to its warp after this many hits (5.1) */
static constexpr uint32_t HYBRID_T = 32;
static constexpr unsigned FULL = 0xffffffffu;

/* Device view of a resident index */
template <class KT>
struct Idx
{
	const KT   *keys;			/* SoA keys, padded to whole nodes; NULL for AoS */
	const uint64_t *pays;		/* SoA payloads; NULL for AoS */
	const unsigned char *aos;	/* AoS tiles: 2^tp keys then 2^tp payloads */
	uint64_t	n;
	uint32_t	k;
	uint32_t	p;				/* k - 1 = 2^p */
	uint32_t	levels;
	uint32_t	tp;				/* AoS tile = 2^tp entries */
	uint32_t	tile_bytes;
};

/* AoS tile: one node (k - 1 entries), but at least 8 bytes of keys for alignment */
static inline uint32_t
aos_tile_log2(uint32_t k, int key_width)
{
	uint32_t	p = 0;

	while ((1u << p) < k - 1)
		p++;
	if (((uint32_t) key_width << p) % 8 != 0)
		p = 1;
	return p;
}

/* Slots to allocate: n rounded up to whole nodes and whole AoS tiles */
static inline uint64_t
padded_slots(uint64_t n, uint32_t k, int key_width)
{
	uint64_t	unit = (uint64_t) 1 << aos_tile_log2(k, key_width);

	if (unit < k - 1)
		unit = k - 1;
	return (n + unit - 1) / unit * unit;
}

template <class KT>
__device__ __forceinline__ const KT *
key_ptr(const Idx<KT> &ix, uint64_t t)
{
	if (ix.aos)
		return (const KT *) (ix.aos + (t >> ix.tp) * ix.tile_bytes) + (t & ((1u << ix.tp) - 1));
	return ix.keys + t;
}

template <class KT>
__device__ __forceinline__ uint64_t
pay_at(const Idx<KT> &ix, uint64_t t)
{
	if (ix.aos)
	{
		const unsigned char *b = ix.aos + (t >> ix.tp) * ix.tile_bytes + ((uint64_t) sizeof(KT) << ix.tp);

		return __ldg((const uint64_t *) b + (t & ((1u << ix.tp) - 1)));
	}
	return __ldg(ix.pays + t);
}

/* Key of slot t, from the pinned copy when t is in it */
template <class KT>
__device__ __forceinline__ KT
key_at(const Idx<KT> &ix, const KT *pin, uint64_t npin, uint64_t t)
{
	return t < npin ? pin[t] : *key_ptr(ix, t);
}

/*
 * Scan one node of nk = 2^p keys at p (cnt of them exist): lt = keys < lo,
 * inr = keys in [lo, hi].  Wide nodes are read with 16-byte loads so that a
 * node costs one memory round trip.  Nodes are aligned to their size.
 */
template <class KT>
__device__ __forceinline__ void
node_count(const KT *p, uint32_t nk, uint32_t cnt, KT lo, KT hi, uint32_t &lt, uint32_t &inr)
{
	uint32_t	bytes = nk * (uint32_t) sizeof(KT);

	lt = 0;
	inr = 0;
	if (bytes >= 16)
	{
		constexpr int PER = 16 / sizeof(KT);
		const uint4 *v = (const uint4 *) p;

		for (uint32_t j = 0; j < bytes / 16; j++)
		{
			uint4		w = v[j];
			KT			kk[PER];

			memcpy(kk, &w, 16);
#pragma unroll
			for (int e = 0; e < PER; e++)
			{
				bool		val = j * PER + e < cnt;

				lt += val && kk[e] < lo;
				inr += val && kk[e] >= lo && kk[e] <= hi;
			}
		}
	}
	else if (bytes == 8 && sizeof(KT) == 4)
	{
		uint2		w = *(const uint2 *) p;
		KT			a = (KT) w.x,
					b = (KT) w.y;

		lt = (a < lo) + (cnt > 1 && b < lo);
		inr = (a >= lo && a <= hi) + (cnt > 1 && b >= lo && b <= hi);
	}
	else
	{
		for (uint32_t j = 0; j < nk; j++)
		{
			if (j < cnt)
			{
				KT			x = p[j];

				lt += x < lo;
				inr += x >= lo && x <= hi;
			}
		}
	}
}

/*
 * Queries.  Plain: query j is lo[j].  perm: lo[j] is query perm[j] (sorted
 * copy).  comp: globally reordered in chunks (see reorder_chunked): comp[j]
 * encodes the query id, whose key is then read from lo[id].
 */
template <class KT>
struct Qs
{
	const KT   *lo;
	const KT   *hi;				/* indexed by query id; NULL = point (hi = lo) */
	const uint32_t *perm;
	uint64_t	nq;
	const uint64_t *comp;
	uint32_t	logc;			/* comp: bits of the id within its chunk */
	uint32_t	cshift;			/* comp: where the chunk number starts */
};

template <class KT>
__device__ __forceinline__ void
get_query(const Qs<KT> &q, uint64_t j, uint64_t &i, KT &lo)
{
	if (q.comp)
	{
		uint64_t	c = q.comp[j];

		i = ((c >> q.cshift) << q.logc) | (c & ((1ull << q.logc) - 1));
		lo = q.lo[i];
	}
	else
	{
		i = q.perm ? q.perm[j] : j;
		lo = q.lo[j];
	}
}

struct Outs
{
	uint64_t   *pay;			/* POINT: per query; FILL: CSR payload array */
	uint64_t   *counts;			/* COUNT: per query; FILL: offsets[nq+1] */
	uint64_t   *first;			/* COUNT writes, FILL reads: first match of a query */
};

/* Result of query i after its search: acc matches, the first one's payload (FILL wrote them already) */
template <int MODE>
__device__ __forceinline__ void
put_result(const Outs &o, uint64_t i, uint64_t acc, uint64_t first)
{
	if (MODE == MODE_POINT)
		o.pay[i] = acc ? first : NO_MATCH;
	else if (MODE == MODE_COUNT)
	{
		o.counts[i] = acc;
		o.first[i] = first;
	}
}

/*
 * Warp-cooperative continuation of a long range scan (section 5.1): all 32
 * lanes finish level l from slot t, then follow the lower-bound path down,
 * scanning each level's run 32 slots per step.  acc is warp-uniform.
 */
template <class KT, int MODE>
__device__ __noinline__ uint64_t
warp_continue(const Idx<KT> &ix, const KT *pin, uint64_t npin, KT lo, KT hi,
			  uint32_t l, uint64_t s, uint64_t ls, uint64_t t, uint64_t acc, uint64_t *out)
{
	const int	lane = threadIdx.x & 31;
	const uint64_t k = ix.k;
	const uint32_t nk = 1u << ix.p;

	for (;;)
	{
		uint64_t	le = ls * k + (k - 1);

		if (le > ix.n)
			le = ix.n;
		while (t < le)
		{
			/* 4 x 32 slots per step: enough loads in flight to hide latency */
			bool		v[4];
			bool		done = false;

#pragma unroll
			for (int r = 0; r < 4; r++)
			{
				uint64_t	u = t + r * 32 + lane;

				v[r] = u < le && key_at(ix, pin, npin, u) <= hi;
			}
#pragma unroll
			for (int r = 0; r < 4; r++)
			{
				unsigned	b = __ballot_sync(FULL, v[r]);

				if (!done)
				{
					if (MODE == MODE_FILL && v[r])
						out[acc + lane] = pay_at(ix, t + r * 32 + lane);
					acc += __popc(b);
					done = b != FULL;
				}
			}
			t += 128;
			if (done)
				break;
		}
		if (l + 1 >= ix.levels)
			break;
		{
			uint64_t	cnt = ix.n - s < nk ? ix.n - s : nk;
			bool		lv = lane < cnt && key_at(ix, pin, npin, s + lane) < lo;
			uint32_t	c = __popc(__ballot_sync(FULL, lv));

			s = s * k + (uint64_t) (c + 1) * (k - 1);
			ls = ls * k + (k - 1);
			l++;
			if (s >= ix.n)
				break;
			cnt = ix.n - s < nk ? ix.n - s : nk;
			lv = lane < cnt && key_at(ix, pin, npin, s + lane) < lo;
			t = s + __popc(__ballot_sync(FULL, lv));
		}
	}
	return acc;
}

/*
 * One lookup by one thread along the lower-bound path, scanning each level's
 * run of [lo, hi] (section 5).  Returns false and the scan state when a run on
 * one level exceeds HYBRID_T hits, so the warp can take over.
 */
struct Defer
{
	uint32_t	l;
	uint64_t	s,
				ls,
				t;
};

template <class KT, int MODE, int NKC>
__device__ __forceinline__ bool
single_query(const Idx<KT> &ix, const KT *pin, uint64_t npin, KT lo, KT hi,
			 uint64_t &acc, uint64_t &first, uint64_t *out, Defer &d)
{
	/* NKC > 0: node size known at compile time (unrolled node loads) */
	const uint32_t nk = NKC > 0 ? (uint32_t) NKC : 1u << ix.p;
	const uint64_t k = nk + 1;
	uint64_t	s = 0,
				ls = 0;

	for (uint32_t l = 0; l < ix.levels; l++)
	{
		uint64_t	le = ls * k + (k - 1);
		uint32_t	cnt,
					lt,
					inr;

		if (s >= ix.n)
			break;				/* the path left the partial bottom level */
		if (le > ix.n)
			le = ix.n;
		cnt = (uint32_t) (ix.n - s < nk ? ix.n - s : nk);
		node_count(s < npin ? pin + s : key_ptr(ix, s), nk, cnt, lo, hi, lt, inr);
		if (MODE == MODE_POINT)
		{
			if (inr)
			{
				first = pay_at(ix, s + lt);
				acc = 1;
				return true;
			}
		}
		else
		{
			uint64_t	q = s + lt;

			if (inr && MODE == MODE_COUNT)
			{
				if (acc == 0)
					first = pay_at(ix, q);
				acc += inr;
			}
			else if (inr)
				for (uint32_t r = 0; r < inr; r++)
					out[acc++] = pay_at(ix, q + r);
			/* the level's run may start or go on right after this node */
			if (lt + inr == nk)
			{
				/* the run goes on past this node: scan the level */
				uint64_t	t = s + nk;
				uint32_t	run = inr;

				while (t < le && key_at(ix, pin, npin, t) <= hi)
				{
					if (run >= HYBRID_T)
					{
						d.l = l;
						d.s = s;
						d.ls = ls;
						d.t = t;
						return false;
					}
					if (MODE == MODE_FILL)
						out[acc] = pay_at(ix, t);
					acc++;
					run++;
					t++;
				}
			}
		}
		s = s * k + (uint64_t) (lt + 1) * (k - 1);
		ls = ls * k + (k - 1);
	}
	return true;
}

/*
 * Process query j (i = its id) by one thread, then let the warp finish any
 * deferred long scans.  Every lane of the warp must call this together.
 */
template <class KT, int MODE, int NKC>
__device__ __forceinline__ void
single_process(const Idx<KT> &ix, const KT *pin, uint64_t npin, const Outs &o,
			   bool active, uint64_t i, KT lo, KT hi)
{
	uint64_t	acc = 0,
				first = NO_MATCH,
				off = 0;
	uint64_t   *out = NULL;
	bool		deferred = false;
	Defer		d = {0, 0, 0, 0};

	if (active)
	{
		bool		run = true;

		if (MODE == MODE_FILL)
		{
			uint64_t	c;

			off = o.counts[i];
			c = o.counts[i + 1] - off;
			out = o.pay + off;
			if (c == 0)
				run = false;
			else if (c == 1)
			{
				out[0] = o.first[i];	/* the count pass saw the only match */
				run = false;
			}
		}
		if (run)
			deferred = !single_query<KT, MODE, NKC>(ix, pin, npin, lo, hi, acc, first, out, d);
	}
	if (MODE != MODE_POINT)
	{
		unsigned	m = __ballot_sync(FULL, deferred);

		while (m)
		{
			int			src = __ffs(m) - 1;
			KT			blo = __shfl_sync(FULL, lo, src);
			KT			bhi = __shfl_sync(FULL, hi, src);
			uint32_t	bl = __shfl_sync(FULL, d.l, src);
			uint64_t	bs = __shfl_sync(FULL, d.s, src);
			uint64_t	bls = __shfl_sync(FULL, d.ls, src);
			uint64_t	bt = __shfl_sync(FULL, d.t, src);
			uint64_t	bacc = __shfl_sync(FULL, acc, src);
			uint64_t	boff = __shfl_sync(FULL, off, src);
			uint64_t	r;

			r = warp_continue<KT, MODE>(ix, pin, npin, blo, bhi, bl, bs, bls, bt, bacc,
										MODE == MODE_FILL ? o.pay + boff : NULL);
			if ((threadIdx.x & 31) == src)
				acc = r;
			m &= m - 1;
		}
	}
	if (active)
		put_result<MODE>(o, i, acc, first);
}

/* Copy the top npin slots' keys into shared memory (cache pinning, 7.3) */
template <class KT>
__device__ __forceinline__ void
load_pin(const Idx<KT> &ix, KT *pin, uint64_t npin)
{
	for (uint64_t t = threadIdx.x; t < npin; t += blockDim.x)
		pin[t] = t < ix.n ? *key_ptr(ix, t) : (KT) 0;
	__syncthreads();
}

/*
 * One thread per lookup.  Grid-stride (persistent grid: the launcher sizes the
 * grid to what is resident at once, or one block per SM for limited
 * concurrency).  LSORT: each block sorts a tile of BLOCK * ITEMS lookup keys
 * (cub::BlockRadixSort, striped so that neighbouring lanes get neighbouring
 * keys) and results go to the queries' original positions.
 */
template <class KT, int MODE, bool LSORT, int BLOCK, int ITEMS, int NKC>
__global__ void __launch_bounds__(BLOCK)
k_single(Idx<KT> ix, Qs<KT> q, Outs o, uint64_t npin)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	KT		   *pin = (KT *) smem_raw;
	const int	lane = threadIdx.x & 31;

	load_pin(ix, pin, npin);
	if (!LSORT)
	{
		const uint64_t stride = (uint64_t) gridDim.x * BLOCK;

		/* warp-uniform trip count: the hybrid scan needs all 32 lanes */
		for (uint64_t j = (uint64_t) blockIdx.x * BLOCK + threadIdx.x; j - lane < q.nq; j += stride)
		{
			bool		active = j < q.nq;
			uint64_t	i = 0;
			KT			lo = 0,
						hi = 0;

			if (active)
			{
				get_query(q, j, i, lo);
				hi = q.hi ? q.hi[i] : lo;
			}
			single_process<KT, MODE, NKC>(ix, pin, npin, o, active, i, lo, hi);
		}
	}
	else
	{
		typedef cub::BlockRadixSort<KT, BLOCK, ITEMS, uint32_t> Sort;
		__shared__ typename Sort::TempStorage tmp;
		const uint64_t tile = (uint64_t) BLOCK * ITEMS;

		for (uint64_t base = (uint64_t) blockIdx.x * tile; base < q.nq; base += (uint64_t) gridDim.x * tile)
		{
			KT			key[ITEMS];
			uint32_t	id[ITEMS];

#pragma unroll
			for (int it = 0; it < ITEMS; it++)
			{
				uint64_t	j = base + (uint64_t) threadIdx.x * ITEMS + it;

				key[it] = j < q.nq ? q.lo[j] : (KT) ~(KT) 0;
				id[it] = (uint32_t) (j - base);
			}
			Sort(tmp).SortBlockedToStriped(key, id);
#pragma unroll
			for (int it = 0; it < ITEMS; it++)
			{
				uint64_t	i = base + id[it];
				bool		active = i < q.nq;
				KT			hi = active && q.hi ? q.hi[i] : key[it];

				single_process<KT, MODE, NKC>(ix, pin, npin, o, active, i, key[it], hi);
			}
			__syncthreads();	/* tmp is reused by the next tile */
		}
	}
}

/* keys < x in one node of NK keys (node-aligned, whole nodes readable) */
template <class KT, int NK>
__device__ __forceinline__ uint32_t
node_lt(const KT *p, KT x)
{
	uint32_t	lt = 0;

	if (NK * sizeof(KT) >= 16)
	{
		constexpr int PER = 16 / sizeof(KT);

#pragma unroll
		for (int v = 0; v < (int) (NK * sizeof(KT) / 16); v++)
		{
			uint4		w = ((const uint4 *) p)[v];
			KT			kk[PER];

			memcpy(kk, &w, 16);
#pragma unroll
			for (int e = 0; e < PER; e++)
				lt += kk[e] < x;
		}
	}
	else
	{
#pragma unroll
		for (int e = 0; e < NK; e++)
			lt += p[e] < x;
	}
	return lt;
}

/* Node at slot s: the pinned copy, an AoS tile or the SoA keys */
template <class KT, bool AOS>
__device__ __forceinline__ const KT *
node_at(const Idx<KT> &ix, const KT *pin, uint64_t npin, uint64_t s)
{
	if (s < npin)
		return pin + s;
	if (AOS)
		return (const KT *) (ix.aos + (s >> ix.tp) * ix.tile_bytes) + (s & ((1u << ix.tp) - 1));
	return ix.keys + s;
}

/*
 * One point lookup, node size fixed at compile time: the paper's measure (one
 * payload or NO_MATCH; POS: the lower-bound slot, no key or payload read).  No
 * early exit: every lookup walks all levels (uniform warps); the deepest node
 * holding a key >= x gives the candidate, checked for equality at the end.
 * Full levels need no bounds checks.
 */
template <class KT, int NK, bool AOS, bool POS>
__device__ __forceinline__ uint64_t
point_one(const Idx<KT> &ix, const KT *pin, uint64_t npin, uint32_t full_levels, KT x)
{
	uint64_t	s = 0,
				cand = NO_MATCH;
	uint32_t	l;

	for (l = 0; l < full_levels; l++)
	{
		uint32_t	lt = node_lt<KT, NK>(node_at<KT, AOS>(ix, pin, npin, s), x);
		if (lt < NK)
			cand = s + lt;
		s = s * (NK + 1) + (uint64_t) (lt + 1) * NK;
	}
	if (l < ix.levels && s < ix.n)
	{
		/* the partial bottom level */
		uint32_t	cnt = ix.n - s < NK ? (uint32_t) (ix.n - s) : NK,
					lt,
					inr;
		node_count(node_at<KT, AOS>(ix, pin, npin, s), NK, cnt, x, x, lt, inr);
		if (lt < cnt)
			cand = s + lt;
	}
	if (POS)
		return cand;
	return cand != NO_MATCH && key_at(ix, pin, npin, cand) == x ? pay_at(ix, cand) : NO_MATCH;
}

/* Point lookups, one thread each; perm: globally sorted lookups, result to query perm[j] */
template <class KT, int NK, bool AOS, int BLOCK, bool POS = false>
__global__ void __launch_bounds__(BLOCK)
k_point(Idx<KT> ix, Qs<KT> q, uint64_t *out, uint64_t npin, uint32_t full_levels)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	KT		   *pin = (KT *) smem_raw;
	const uint64_t stride = (uint64_t) gridDim.x * blockDim.x;

	load_pin(ix, pin, npin);
	for (uint64_t j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; j < q.nq; j += stride)
	{
		uint64_t	i;
		KT			x;

		get_query(q, j, i, x);
		out[i] = point_one<KT, NK, AOS, POS>(ix, pin, npin, full_levels, x);
	}
}

/*
 * EKS group (section 6.2): G = k - 1 lanes per lookup, each lane compares one
 * pivot; a ballot over the group gives the child.  Ranges scan a level G slots
 * at a time with coalesced loads.
 */
template <class KT, int MODE, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
k_group(Idx<KT> ix, Qs<KT> q, Outs o, uint64_t npin)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	KT		   *pin = (KT *) smem_raw;
	const uint32_t G = 1u << ix.p;
	const int	lane = threadIdx.x & 31;
	const uint32_t gl = lane & (G - 1);
	const uint32_t gpw = 32 / G;		/* groups per warp */
	const unsigned gmask = (G == 32 ? FULL : ((1u << G) - 1)) << (lane - gl);
	const uint64_t k = ix.k;
	const uint64_t warp = ((uint64_t) blockIdx.x * BLOCK + threadIdx.x) >> 5;
	const uint64_t nwarps = ((uint64_t) gridDim.x * BLOCK) >> 5;

	load_pin(ix, pin, npin);
	for (uint64_t j = warp * gpw + lane / G; j < q.nq; j += nwarps * gpw)
	{
		uint64_t	i;
		KT			lo;
		KT			hi;
		uint64_t	acc = 0,
					first = NO_MATCH;
		uint64_t   *out = NULL;
		uint64_t	s = 0,
					ls = 0;

		get_query(q, j, i, lo);
		hi = q.hi ? q.hi[i] : lo;
		if (MODE == MODE_FILL)
		{
			uint64_t	off = o.counts[i],
						c = o.counts[i + 1] - off;

			if (c == 0)
				continue;
			if (c == 1)
			{
				if (gl == 0)
					o.pay[off] = o.first[i];
				continue;
			}
			out = o.pay + off;
		}
		for (uint32_t l = 0; l < ix.levels; l++)
		{
			uint64_t	le = ls * k + (k - 1);
			uint64_t	cnt;
			KT			x;
			bool		val;
			uint32_t	lt;

			if (s >= ix.n)
				break;
			if (le > ix.n)
				le = ix.n;
			cnt = ix.n - s < G ? ix.n - s : G;
			val = gl < cnt;
			x = val ? key_at(ix, pin, npin, s + gl) : (KT) 0;
			lt = __popc(__ballot_sync(gmask, val && x < lo));
			if (MODE == MODE_POINT)
			{
				if (__ballot_sync(gmask, val && x >= lo && x <= hi))
				{
					first = pay_at(ix, s + lt);
					acc = 1;
					break;
				}
			}
			else
			{
				for (uint64_t t = s + lt; t < le; t += G)
				{
					uint64_t	u = t + gl;
					bool		v = u < le && key_at(ix, pin, npin, u) <= hi;
					unsigned	b = __ballot_sync(gmask, v);
					uint32_t	c = __popc(b);

					if (MODE == MODE_FILL && v)
						out[acc + gl] = pay_at(ix, u);
					if (MODE == MODE_COUNT && acc == 0 && c > 0)
						first = pay_at(ix, t);
					acc += c;
					if (c < G)
						break;
				}
			}
			s = s * k + (uint64_t) (lt + 1) * (k - 1);
			ls = ls * k + (k - 1);
		}
		if (gl == 0)
			put_result<MODE>(o, i, acc, first);
	}
}

/* Text-book binary search on the sorted array (baseline), one thread per lookup */
template <class KT>
__device__ __forceinline__ uint64_t
lower_bound_dev(const KT *a, uint64_t n, KT x, bool upper)
{
	uint64_t	l = 0,
				r = n;

	while (l < r)
	{
		uint64_t	m = (l + r) >> 1;
		KT			v = a[m];

		if (upper ? v <= x : v < x)
			l = m + 1;
		else
			r = m;
	}
	return l;
}

template <class KT, int MODE>
__global__ void
k_bs(const KT *sk, const uint64_t *sp, uint64_t n, Qs<KT> q, Outs o)
{
	uint64_t	j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (j >= q.nq)
		return;
	{
		uint64_t	i;
		KT			lo;
		KT			hi;
		uint64_t	lb;

		get_query(q, j, i, lo);
		hi = q.hi ? q.hi[i] : lo;
		lb = lower_bound_dev(sk, n, lo, false);

		if (MODE == MODE_POINT)
			o.pay[i] = lb < n && sk[lb] == lo ? sp[lb] : NO_MATCH;
		else if (MODE == MODE_COUNT)
		{
			uint64_t	ub = hi < lo ? lb : lower_bound_dev(sk, n, hi, true);

			o.counts[i] = ub > lb ? ub - lb : 0;
			o.first[i] = ub > lb ? sp[lb] : NO_MATCH;
		}
		else
		{
			uint64_t	off = o.counts[i],
						c = o.counts[i + 1] - off;

			for (uint64_t r = 0; r < c; r++)
				o.pay[off + r] = sp[lb + r];
		}
	}
}

/*
 * Build: shift-based inverse permutation, equal to eytz_sorted_rank() (the
 * tests check it).  Level starts and strides come precomputed.
 */
struct PermShape
{
	uint64_t	n;
	uint64_t	bottom_start;	/* k^m - 1 */
	uint64_t	bottom;			/* entries on the partial level */
	uint32_t	p;
	uint32_t	m;				/* full levels */
	uint64_t	ls[66];			/* level starts, ls[m] = bottom_start */
	uint64_t	stride[66];		/* k^(m - l - 1) */
};

static inline PermShape
make_perm_shape(uint64_t n, uint32_t k)
{
	EytzShape	sh = eytz_shape(n, k);
	PermShape	ps;
	uint32_t	l;

	memset(&ps, 0, sizeof(ps));
	ps.n = n;
	ps.bottom_start = sh.k_pow_m - 1;
	ps.bottom = sh.bottom;
	ps.m = sh.full_levels;
	ps.p = 0;
	while ((1u << ps.p) < k - 1)
		ps.p++;
	for (l = 0; l <= ps.m && l < 66; l++)
		ps.ls[l] = eytz_level_start(l, k);
	for (l = 0; l < ps.m; l++)
	{
		uint64_t	st = 1;
		uint32_t	d;

		for (d = l + 1; d < ps.m; d++)
			st *= k;
		ps.stride[l] = st;
	}
	return ps;
}

__device__ __forceinline__ uint64_t
fast_rank(const PermShape &ps, uint64_t t)
{
	if (t >= ps.bottom_start)
	{
		uint64_t	i = t - ps.bottom_start;

		return i + (i >> ps.p);
	}
	else
	{
		/* level: largest l < m with ls[l] <= t (binary search, warp-uniform mostly) */
		uint32_t	a = 0,
					b = ps.m - 1;

		while (a < b)
		{
			uint32_t	c = (a + b + 1) >> 1;

			if (ps.ls[c] <= t)
				a = c;
			else
				b = c - 1;
		}
		{
			uint64_t	i = t - ps.ls[a];
			uint64_t	pp = ps.stride[a] * (1 + i + (i >> ps.p)) - 1;
			uint64_t	before = (pp + 1) << ps.p;

			return pp + (before < ps.bottom ? before : ps.bottom);
		}
	}
}

/* Slot t takes sorted entry fast_rank(t): coalesced writes, one read each */
template <class KT>
__global__ void
k_permute(PermShape ps, const KT *sk, const uint64_t *sp, KT *ok, uint64_t *op,
		  unsigned char *aos, uint32_t tp, uint32_t tile_bytes)
{
	const uint64_t stride = (uint64_t) gridDim.x * blockDim.x;

	/* 4 slots per thread per step: eight gathers in flight before the first store */
	for (uint64_t t0 = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t0 < ps.n; t0 += 4 * stride)
	{
		KT			key[4];
		uint64_t	pay[4];

#pragma unroll
		for (int u = 0; u < 4; u++)
		{
			uint64_t	t = t0 + u * stride;

			if (t < ps.n)
			{
				uint64_t	r = fast_rank(ps, t);

				key[u] = sk[r];
				pay[u] = sp[r];
			}
		}
#pragma unroll
		for (int u = 0; u < 4; u++)
		{
			uint64_t	t = t0 + u * stride;

			if (t >= ps.n)
				break;
			if (aos)
			{
				unsigned char *b = aos + (t >> tp) * tile_bytes;
				uint32_t	e = (uint32_t) (t & ((1u << tp) - 1));

				((KT *) b)[e] = key[u];
				((uint64_t *) (b + ((uint64_t) sizeof(KT) << tp)))[e] = pay[u];
			}
			else
			{
				ok[t] = key[u];
				op[t] = pay[u];
			}
		}
	}
}

/* SoA (Eytzinger order) to AoS tiles, for uploads */
template <class KT>
__global__ void
k_soa_to_aos(uint64_t n, const KT *k_in, const uint64_t *p_in, unsigned char *aos,
			 uint32_t tp, uint32_t tile_bytes)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride)
	{
		unsigned char *b = aos + (t >> tp) * tile_bytes;
		uint32_t	e = (uint32_t) (t & ((1u << tp) - 1));

		((KT *) b)[e] = k_in[t];
		((uint64_t *) (b + ((uint64_t) sizeof(KT) << tp)))[e] = p_in[t];
	}
}

/* Eytzinger (any k) back to sorted order: sorted[rank(t)] = E[t] */
template <class KT>
__global__ void
k_unpermute(PermShape ps, const KT *ek, const uint64_t *ep, KT *sk, uint64_t *sp)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < ps.n; t += stride)
	{
		uint64_t	r = fast_rank(ps, t);

		sk[r] = ek[t];
		sp[r] = ep[t];
	}
}

template <class T>
__global__ void
k_iota(T *a, uint64_t n)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride)
		a[t] = (T) t;
}

/* ---------------------------------------------------------------------------
 * Host-side launch configuration
 * ------------------------------------------------------------------------- */

enum Algo
{
	ALGO_SINGLE = 0,			/* EBS (k = 2) / EKS single */
	ALGO_GROUP = 1,				/* EKS group */
	ALGO_BS = 2					/* sorted array baseline */
};

struct Cfg
{
	int			algo;
	bool		lsort;			/* block-local reordering (single only) */
	uint32_t	pin_bytes;		/* shared memory for pinned top levels; 0 = off */
	int			blocks_per_sm;	/* 0 = as many as fit (occupancy) */
};

static constexpr int SINGLE_BLOCK = 256;
static constexpr int LSORT_BLOCK = 256;
static constexpr int LSORT_ITEMS = 8;
static constexpr int GROUP_BLOCK = 256;
static constexpr int BS_BLOCK = 256;
/* pinned copies larger than this run in 1024-thread blocks (one per SM) */
static constexpr size_t BIG_PIN = 64 * 1024;

/* Whole levels of keys that fit in pin_bytes */
template <class KT>
static inline uint64_t
pin_slots(const Idx<KT> &ix, uint32_t pin_bytes)
{
	uint64_t	cap = pin_bytes / sizeof(KT);
	uint64_t	ls = 0,
				best = 0;
	uint64_t	padded = (ix.n + (1u << ix.p) - 1) >> ix.p << ix.p;

	if (pin_bytes == 0 || ix.n == 0)
		return 0;
	if (padded <= cap)
		return padded;			/* the whole index fits: pin all of it */
	for (;;)
	{
		uint64_t	next = ls * ix.k + (ix.k - 1);

		if (next > cap || ls >= padded)
			break;
		ls = next;
		best = ls;
	}
	return best < padded ? best : padded;
}

template <class F>
static inline cudaError_t
grid_for(F kernel, int block, size_t smem, int blocks_per_sm, int *grid)
{
	int			dev,
				sms,
				nb = 0;
	cudaError_t e;

	if ((e = cudaGetDevice(&dev)) != cudaSuccess)
		return e;
	if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
		return e;
	if (smem > 0 &&
		(e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem)) != cudaSuccess)
		return e;
	if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, block, smem)) != cudaSuccess)
		return e;
	if (nb < 1)
		return cudaErrorInvalidConfiguration;
	if (blocks_per_sm > 0 && blocks_per_sm < nb)
		nb = blocks_per_sm;
	*grid = sms * nb;
	return cudaSuccess;
}

template <class KT, int NK, bool AOS, bool POS = false>
static inline cudaError_t
launch_point(const Idx<KT> &ix, const Qs<KT> &q, const Outs &o, const Cfg &cfg, uint64_t npin, cudaStream_t st)
{
	size_t		smem = npin * sizeof(KT);
	int			grid = 0;
	cudaError_t e;

	/* a large pinned copy allows one block per SM: make it a big one */
	if (smem > BIG_PIN)
	{
		auto		kern = k_point<KT, NK, AOS, 1024, POS>;

		if ((e = grid_for(kern, 1024, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		kern<<<grid, 1024, smem, st>>>(ix, q, o.pay, npin, eytz_shape(ix.n, ix.k).full_levels);
	}
	else
	{
		auto		kern = k_point<KT, NK, AOS, 256, POS>;

		if ((e = grid_for(kern, 256, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		kern<<<grid, 256, smem, st>>>(ix, q, o.pay, npin, eytz_shape(ix.n, ix.k).full_levels);
	}
	return cudaGetLastError();
}

/* POINT kernel for any fan-out; POS: return the lower-bound slot, not the payload */
template <class KT, bool POS>
static inline cudaError_t
launch_point_k(const Idx<KT> &ix, const Qs<KT> &q, const Outs &o, const Cfg &cfg, uint64_t npin, cudaStream_t st)
{
	switch (ix.k)
	{
		case 2:
			return ix.aos ? launch_point<KT, 1, true, POS>(ix, q, o, cfg, npin, st)
				: launch_point<KT, 1, false, POS>(ix, q, o, cfg, npin, st);
		case 3:
			return ix.aos ? launch_point<KT, 2, true, POS>(ix, q, o, cfg, npin, st)
				: launch_point<KT, 2, false, POS>(ix, q, o, cfg, npin, st);
		case 5:
			return ix.aos ? launch_point<KT, 4, true, POS>(ix, q, o, cfg, npin, st)
				: launch_point<KT, 4, false, POS>(ix, q, o, cfg, npin, st);
		case 9:
			return ix.aos ? launch_point<KT, 8, true, POS>(ix, q, o, cfg, npin, st)
				: launch_point<KT, 8, false, POS>(ix, q, o, cfg, npin, st);
		case 17:
			return ix.aos ? launch_point<KT, 16, true, POS>(ix, q, o, cfg, npin, st)
				: launch_point<KT, 16, false, POS>(ix, q, o, cfg, npin, st);
		default:
			return ix.aos ? launch_point<KT, 32, true, POS>(ix, q, o, cfg, npin, st)
				: launch_point<KT, 32, false, POS>(ix, q, o, cfg, npin, st);
	}
}

template <class KT, int MODE, int NKC>
static inline cudaError_t
launch_single(const Idx<KT> &ix, const Qs<KT> &q, const Outs &o, const Cfg &cfg, uint64_t npin, cudaStream_t st)
{
	size_t		smem = npin * sizeof(KT);
	int			grid = 0;
	cudaError_t e;

	if (smem > BIG_PIN)
	{
		auto		kern = k_single<KT, MODE, false, 1024, 1, NKC>;

		if ((e = grid_for(kern, 1024, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		kern<<<grid, 1024, smem, st>>>(ix, q, o, npin);
	}
	else
	{
		auto		kern = k_single<KT, MODE, false, SINGLE_BLOCK, 1, NKC>;

		if ((e = grid_for(kern, SINGLE_BLOCK, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		kern<<<grid, SINGLE_BLOCK, smem, st>>>(ix, q, o, npin);
	}
	return cudaGetLastError();
}

/*
 * Launch one lookup kernel in the given mode.  For ALGO_BS, ix.keys/ix.pays
 * must be the sorted arrays.
 */
template <class KT, int MODE>
static inline cudaError_t
launch_lookup(const Idx<KT> &ix, const Qs<KT> &q, const Outs &o, const Cfg &cfg, cudaStream_t st)
{
	cudaError_t e;
	int			grid = 0;

	if (q.nq == 0)
		return cudaSuccess;
	if (cfg.algo == ALGO_BS)
	{
		uint64_t	g = (q.nq + BS_BLOCK - 1) / BS_BLOCK;

		k_bs<KT, MODE><<<(unsigned) g, BS_BLOCK, 0, st>>>(ix.keys, ix.pays, ix.n, q, o);
		return cudaGetLastError();
	}
	{
		uint64_t	npin = pin_slots(ix, cfg.pin_bytes);
		size_t		smem = npin * sizeof(KT);

		if (cfg.algo == ALGO_GROUP)
		{
			auto		kern = k_group<KT, MODE, GROUP_BLOCK>;

			if ((e = grid_for(kern, GROUP_BLOCK, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
				return e;
			kern<<<grid, GROUP_BLOCK, smem, st>>>(ix, q, o, npin);
		}
		else if (cfg.lsort && q.perm == NULL)
		{
			auto		kern = k_single<KT, MODE, true, LSORT_BLOCK, LSORT_ITEMS, 0>;

			if ((e = grid_for(kern, LSORT_BLOCK, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
				return e;
			kern<<<grid, LSORT_BLOCK, smem, st>>>(ix, q, o, npin);
		}
		else if (MODE == MODE_POINT)
			return launch_point_k<KT, false>(ix, q, o, cfg, npin, st);
		else
		{
			switch (ix.k)
			{
				case 2:
					return launch_single<KT, MODE, 1>(ix, q, o, cfg, npin, st);
				case 3:
					return launch_single<KT, MODE, 2>(ix, q, o, cfg, npin, st);
				case 5:
					return launch_single<KT, MODE, 4>(ix, q, o, cfg, npin, st);
				case 9:
					return launch_single<KT, MODE, 8>(ix, q, o, cfg, npin, st);
				case 17:
					return launch_single<KT, MODE, 16>(ix, q, o, cfg, npin, st);
				default:
					return launch_single<KT, MODE, 32>(ix, q, o, cfg, npin, st);
			}
		}
	}
	return cudaGetLastError();
}

/* Bit range of keys worth sorting for global lookup reordering */
template <class KT>
static inline void
sort_bits(KT minkey, KT maxkey, int *begin_bit, int *end_bit)
{
	uint64_t	diff = (uint64_t) (minkey ^ maxkey);
	int			hb = 0;

	while (hb < (int) (8 * sizeof(KT)) && (diff >> hb) != 0)
		hb++;
	if (hb == 0)
		hb = 1;
	*end_bit = hb;
	/* the top 24 significant bits give neighbours that share their paths */
	*begin_bit = hb > 24 ? hb - 24 : 0;
}

/* Device workspace sizes for global reordering (CUB two-phase call) */
template <class KT>
static inline cudaError_t
reorder_temp_bytes(uint64_t nq, size_t *bytes)
{
	*bytes = 0;
	return cub::DeviceRadixSort::SortPairs((void *) NULL, *bytes, (const KT *) NULL, (KT *) NULL,
										   (const uint32_t *) NULL, (uint32_t *) NULL, (int) nq,
										   0, (int) (8 * sizeof(KT)));
}

/* sorted_lo/perm := lo sorted (on the given bits) with the query ids */
template <class KT>
static inline cudaError_t
reorder_queries(const KT *lo, uint64_t nq, KT *sorted_lo, uint32_t *iota, uint32_t *perm,
				void *temp, size_t temp_bytes, int begin_bit, int end_bit, cudaStream_t st)
{
	cudaError_t e;

	if (nq == 0)
		return cudaSuccess;
	k_iota<<<(unsigned) ((nq + 1023) / 1024 < 65535 ? (nq + 1023) / 1024 : 65535), 1024, 0, st>>>(iota, nq);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, lo, sorted_lo, iota, perm, (int) nq,
										   begin_bit, end_bit, st);
}

/*
 * Chunked global reordering of lookups.  One radix sort of 64-bit composite
 * keys (chunk | top B bits of the key's position in [minkey, maxkey] | id in
 * chunk) orders the lookups by key within chunks of 2^logc queries.  Lookups
 * of one chunk then walk neighbouring paths (fewer, more local DRAM reads),
 * and their scattered result writes stay inside one chunk-sized region that
 * L2 absorbs, instead of costing a read-modify-write of a DRAM sector each.
 */
struct Reorder
{
	uint32_t	logc;			/* chunk = 2^logc lookups */
	uint32_t	bits;			/* key bits sorted on */
};

template <class KT>
__global__ void
k_make_comp(const KT *lo, uint64_t nq, uint64_t *comp, KT mn, KT mx, uint32_t shift, uint32_t bits, uint32_t logc)
{
	uint64_t	st = (uint64_t) gridDim.x * blockDim.x;
	uint64_t	top = (1ull << bits) - 1;

	for (uint64_t j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; j < nq; j += st)
	{
		KT			x = lo[j];
		uint64_t	kb = x < mn ? 0 : x > mx ? top : (uint64_t) ((KT) (x - mn) >> shift);

		comp[j] = ((j >> logc) << (bits + logc)) | (kb << logc) | (j & ((1ull << logc) - 1));
	}
}

static inline uint32_t
bits_of(uint64_t v)
{
	uint32_t	b = 0;

	while (b < 64 && (v >> b) != 0)
		b++;
	return b;
}

/* Geometry of a chunked reordering of nq lookups: sort bit range and decode shift */
template <class KT>
static inline void
reorder_geometry(uint64_t nq, KT mn, KT mx, Reorder r, uint32_t *logc, uint32_t *shift, uint32_t *begin_bit,
				 uint32_t *end_bit)
{
	uint32_t	span = bits_of((uint64_t) (KT) (mx - mn));
	uint32_t	lc = r.logc;

	if (nq <= 1)
		lc = 1;
	else if (bits_of(nq - 1) < lc)
		lc = bits_of(nq - 1);
	*logc = lc;
	*shift = span > r.bits ? span - r.bits : 0;
	*begin_bit = lc;
	*end_bit = lc + r.bits + bits_of((nq ? nq - 1 : 0) >> lc);
}

static inline cudaError_t
reorder_chunked_temp(uint64_t nq, size_t *bytes)
{
	*bytes = 0;
	return cub::DeviceRadixSort::SortKeys((void *) NULL, *bytes, (const uint64_t *) NULL, (uint64_t *) NULL,
										  (int) nq, 0, 64);
}

/* Fill q.comp/logc/cshift; comp_a, comp_b: nq each (comp_b gets the result) */
template <class KT>
static inline cudaError_t
reorder_chunked(Qs<KT> &q, KT mn, KT mx, Reorder r, uint64_t *comp_a, uint64_t *comp_b, void *temp,
				size_t temp_bytes, cudaStream_t st)
{
	uint32_t	logc,
				shift,
				bb,
				eb;
	cudaError_t e;
	unsigned	g;

	if (q.nq == 0)
		return cudaSuccess;
	reorder_geometry<KT>(q.nq, mn, mx, r, &logc, &shift, &bb, &eb);
	g = (unsigned) ((q.nq + 255) / 256 < 132 * 16 ? (q.nq + 255) / 256 : 132 * 16);
	k_make_comp<KT><<<g, 256, 0, st>>>(q.lo, q.nq, comp_a, mn, mx, shift, r.bits, logc);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	if ((e = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, comp_a, comp_b, (int) q.nq, (int) bb, (int) eb,
											st)) != cudaSuccess)
		return e;
	q.comp = comp_b;
	q.logc = logc;
	q.cshift = r.bits + logc;
	q.perm = NULL;
	return cudaSuccess;
}

/* ===========================================================================
 * Point fast paths (POINT mode, one result per query)
 *
 * 1. k_point_smem: the whole index's keys in shared memory (tiny indexes),
 *    32-bit slot arithmetic, Q lookups per thread walked level by level so
 *    that Q independent node reads are in flight per thread (ILP), payload
 *    loads of all Q lookups issued before their stores.
 * 2. sorted_point: globally sorted lookups.  CUB radix sort of (key, query
 *    id) on the top key_bits significant bits only; the lookup kernel reads
 *    the sorted keys coalesced, so neighbouring lanes walk neighbouring paths
 *    and the deep levels and payloads stream from DRAM instead of costing a
 *    random sector each; results go to a temporary in sorted order; a
 *    one-pass radix partition of (query id, result) on the id's top
 *    scatter_bits bits, then a scatter whose writes stay in a window of
 *    nq / 2^scatter_bits results (L2 merges them into whole sectors).
 *    scatter_bits = 0 writes out[id] directly from the lookup kernel (random
 *    8-byte writes over the whole output: partial sectors to DRAM); -1, -2
 *    and -3 write whole tiles (below: the fastest).
 * ========================================================================= */

static constexpr uint32_t NONE32 = 0xffffffffu;
/* largest whole-index copy the shared-memory point kernel takes */
static constexpr size_t SMEM_POINT_MAX = 200 * 1024;

/* Slots of the shared-memory copy: n rounded up to whole nodes */
template <class KT>
static inline uint64_t
smem_point_slots(const Idx<KT> &ix)
{
	uint64_t	nk = (uint64_t) 1 << ix.p;

	return (ix.n + nk - 1) / nk * nk;
}

template <class KT>
static inline bool
smem_point_fits(const Idx<KT> &ix)
{
	return ix.n > 0 && smem_point_slots(ix) * sizeof(KT) <= SMEM_POINT_MAX;
}

template <class KT, int NK, int BLOCK, int Q>
__global__ void __launch_bounds__(BLOCK, 1)
k_point_smem(Idx<KT> ix, const KT *qk, uint64_t nq, uint64_t *out, uint32_t npad)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	KT		   *pin = (KT *) smem_raw;
	const uint32_t n = (uint32_t) ix.n;
	const uint64_t step = (uint64_t) gridDim.x * BLOCK * Q;

	/* padding slots hold the largest key: never < x, so partial nodes need no count */
	for (uint32_t t = threadIdx.x; t < npad; t += BLOCK)
		pin[t] = t < n ? *key_ptr(ix, t) : (KT) ~(KT) 0;
	__syncthreads();
	for (uint64_t base = (uint64_t) blockIdx.x * BLOCK * Q + threadIdx.x; base < nq; base += step)
	{
		KT			x[Q];
		uint32_t	s[Q],
					cand[Q];
		uint64_t	r[Q];

#pragma unroll
		for (int u = 0; u < Q; u++)
		{
			uint64_t	j = base + (uint64_t) u * BLOCK;

			x[u] = j < nq ? qk[j] : (KT) 0;
			s[u] = 0;
			cand[u] = NONE32;
		}
		for (uint32_t l = 0; l < ix.levels; l++)
		{
#pragma unroll
			for (int u = 0; u < Q; u++)
			{
				if (s[u] < n)
				{
					uint32_t	lt = node_lt<KT, NK>(pin + s[u], x[u]);

					if (lt < NK && s[u] + lt < n)
						cand[u] = s[u] + lt;
					s[u] = s[u] * (NK + 1) + (lt + 1) * NK;
				}
				else
					s[u] = n;
			}
		}
		/* all payload loads first, then the stores (the compiler must assume out may alias them) */
#pragma unroll
		for (int u = 0; u < Q; u++)
			r[u] = cand[u] != NONE32 && pin[cand[u]] == x[u] ? pay_at(ix, cand[u]) : NO_MATCH;
#pragma unroll
		for (int u = 0; u < Q; u++)
		{
			uint64_t	j = base + (uint64_t) u * BLOCK;

			if (j < nq)
				out[j] = r[u];
		}
	}
}

template <class KT, int NK, int Q>
static inline cudaError_t
launch_smem_nk(const Idx<KT> &ix, const KT *qk, uint64_t nq, uint64_t *out, int blocks_per_sm, cudaStream_t st)
{
	uint64_t	npad = smem_point_slots(ix);
	size_t		smem = npad * sizeof(KT);
	int			grid = 0;
	uint64_t	need;
	cudaError_t e;

	if (smem > BIG_PIN)
	{
		auto		kern = k_point_smem<KT, NK, 1024, Q>;

		if ((e = grid_for(kern, 1024, smem, blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		need = (nq + 1024 * Q - 1) / (1024 * Q);
		if ((uint64_t) grid > need)
			grid = (int) need;
		kern<<<grid, 1024, smem, st>>>(ix, qk, nq, out, (uint32_t) npad);
	}
	else
	{
		auto		kern = k_point_smem<KT, NK, 256, Q>;

		if ((e = grid_for(kern, 256, smem, blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		need = (nq + 256 * Q - 1) / (256 * Q);
		if ((uint64_t) grid > need)
			grid = (int) need;
		kern<<<grid, 256, smem, st>>>(ix, qk, nq, out, (uint32_t) npad);
	}
	return cudaGetLastError();
}

template <class KT, int Q>
static inline cudaError_t
launch_smem_q(const Idx<KT> &ix, const KT *qk, uint64_t nq, uint64_t *out, int blocks_per_sm, cudaStream_t st)
{
	switch (ix.k)
	{
		case 2:
			return launch_smem_nk<KT, 1, Q>(ix, qk, nq, out, blocks_per_sm, st);
		case 3:
			return launch_smem_nk<KT, 2, Q>(ix, qk, nq, out, blocks_per_sm, st);
		case 5:
			return launch_smem_nk<KT, 4, Q>(ix, qk, nq, out, blocks_per_sm, st);
		case 9:
			return launch_smem_nk<KT, 8, Q>(ix, qk, nq, out, blocks_per_sm, st);
		case 17:
			return launch_smem_nk<KT, 16, Q>(ix, qk, nq, out, blocks_per_sm, st);
		default:
			return launch_smem_nk<KT, 32, Q>(ix, qk, nq, out, blocks_per_sm, st);
	}
}

/*
 * Point lookups with the whole index in shared memory: out[j] = payload of
 * qk[j] or NO_MATCH.  q_per_thread: 1, 2 or 4.  Needs smem_point_fits(ix).
 */
template <class KT>
static inline cudaError_t
launch_point_smem(const Idx<KT> &ix, const KT *qk, uint64_t nq, uint64_t *out, int q_per_thread,
				  int blocks_per_sm, cudaStream_t st)
{
	if (nq == 0)
		return cudaSuccess;
	if (!smem_point_fits(ix))
		return cudaErrorInvalidValue;
	if (q_per_thread >= 4)
		return launch_smem_q<KT, 4>(ix, qk, nq, out, blocks_per_sm, st);
	if (q_per_thread == 2)
		return launch_smem_q<KT, 2>(ix, qk, nq, out, blocks_per_sm, st);
	return launch_smem_q<KT, 1>(ix, qk, nq, out, blocks_per_sm, st);
}

/* ids per tile of the bucketed write-back (k_tile_write) */
static constexpr int SCATTER_TILE_LOG2 = 11;

/*
 * Cluster tile write (Hopper): a tile of 2^CTILE_LOG2 ids is spread over the
 * shared memory of a cluster of CTILE_CLUSTER blocks (2^CTILE_SLICE_LOG2
 * results, 128 KB, each); every block places its slice of the tile's pairs
 * into the owner's shared memory (distributed shared memory), then writes its
 * own slice out whole.  64x larger tiles than k_tile_write: one partition
 * pass over the ids fewer.
 */
static constexpr int CTILE_SLICE_LOG2 = 14;
static constexpr int CTILE_CLUSTER = 8;	/* the portable cluster size maximum */
static constexpr int CTILE_LOG2 = CTILE_SLICE_LOG2 + 3;
static constexpr int CTILE_BLOCK = 1024;

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
k_cluster_tile_write(const uint32_t *idx, const uint64_t *val, uint64_t n, uint64_t *out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	extern __shared__ __align__(16) unsigned char smem_raw[];
	constexpr uint32_t SLICE = 1u << CTILE_SLICE_LOG2;
	uint64_t   *buf = (uint64_t *) smem_raw;
	cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
	uint32_t	r = cl.block_rank();
	uint64_t	nclusters = gridDim.x / CTILE_CLUSTER;

	/* every block of the cluster must run before others write its shared memory */
	cl.sync();
	/* the loop is uniform over a cluster (consecutive blocks share c) */
	for (uint64_t c = blockIdx.x / CTILE_CLUSTER; (c << CTILE_LOG2) < n; c += nclusters)
	{
		uint64_t	s0 = (c << CTILE_LOG2) + ((uint64_t) r << CTILE_SLICE_LOG2);
		uint32_t	cnt = s0 >= n ? 0 : n - s0 < SLICE ? (uint32_t) (n - s0) : SLICE;

		for (uint32_t t = threadIdx.x; t < cnt; t += BLOCK)
		{
			uint32_t	i = idx[s0 + t];
			uint64_t   *dst = cl.map_shared_rank(buf, (i >> CTILE_SLICE_LOG2) & (CTILE_CLUSTER - 1));

			dst[i & (SLICE - 1)] = val[s0 + t];
		}
		cl.sync();
		for (uint32_t t = threadIdx.x; t < cnt; t += BLOCK)
			out[s0 + t] = buf[t];
		cl.sync();
	}
#endif
}

/* Launch configuration of k_cluster_tile_write; *nclusters: clusters resident at once (0: none fit) */
static inline cudaError_t
cluster_config(cudaLaunchConfig_t *lc, cudaLaunchAttribute *at, int *nclusters, cudaStream_t st)
{
	auto		kern = k_cluster_tile_write<CTILE_BLOCK>;
	size_t		smem = (size_t) 8 << CTILE_SLICE_LOG2;
	cudaError_t e;

	*nclusters = 0;
	if ((e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem)) != cudaSuccess)
		return e;
	*lc = cudaLaunchConfig_t {};
	at->id = cudaLaunchAttributeClusterDimension;
	at->val.clusterDim.x = CTILE_CLUSTER;
	at->val.clusterDim.y = 1;
	at->val.clusterDim.z = 1;
	lc->blockDim = dim3(CTILE_BLOCK);
	lc->dynamicSmemBytes = smem;
	lc->stream = st;
	lc->attrs = at;
	lc->numAttrs = 1;
	lc->gridDim = dim3(CTILE_CLUSTER * 1024);
	return cudaOccupancyMaxActiveClusters(nclusters, kern, lc);
}

/*
 * Whether the current device runs k_cluster_tile_write: compute capability
 * 9.0+ and room for at least one cluster (not so on small partitions).
 */
static inline bool
have_clusters(void)
{
	int			dev,
				major = 0,
				nclusters = 0;
	cudaLaunchConfig_t lc;
	cudaLaunchAttribute at;

	if (cudaGetDevice(&dev) != cudaSuccess ||
		cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 9)
		return false;
	if (cluster_config(&lc, &at, &nclusters, 0) != cudaSuccess)
	{
		(void) cudaGetLastError();	/* not sticky: clear it */
		return false;
	}
	return nclusters > 0;
}

/* out[idx[j]] := val[j] where idx is partitioned on id >> CTILE_LOG2 (needs have_clusters()) */
static inline cudaError_t
cluster_tile_write(const uint32_t *idx, const uint64_t *val, uint64_t n, uint64_t *out, cudaStream_t st)
{
	uint64_t	tiles = (n + (1u << CTILE_LOG2) - 1) >> CTILE_LOG2;
	cudaLaunchConfig_t lc;
	cudaLaunchAttribute at;
	int			nclusters = 0;
	cudaError_t e;

	if (n == 0)
		return cudaSuccess;
	if ((e = cluster_config(&lc, &at, &nclusters, st)) != cudaSuccess)
		return e;
	if (nclusters < 1)
		return cudaErrorInvalidConfiguration;
	if ((uint64_t) nclusters > tiles)
		nclusters = (int) tiles;
	lc.gridDim = dim3(CTILE_CLUSTER * nclusters);
	return cudaLaunchKernelEx(&lc, k_cluster_tile_write<CTILE_BLOCK>, idx, val, n, out);
}

/*
 * Fused write-back (scatter_bits = -2).  The ids are a permutation of
 * [0, nq), so a partition of the (id, result) pairs on id >> CTILE_LOG2 has
 * bucket b at [b << CTILE_LOG2, (b + 1) << CTILE_LOG2) without a histogram
 * pass, and the order inside a bucket is free (the tile write places by id).
 * The lookup kernel partitions its own results: a block ranks the pairs of
 * its chunk by bucket in shared memory, reserves each bucket's run with one
 * atomic on the bucket's cursor and writes the runs out coalesced, so no
 * results in sorted order go through memory; the cluster tile write finishes.
 * Up to 2^PART_MAX_BITS buckets (nq <= 2^25); larger batches use the CUB
 * partition (scatter_bits = -3).
 */
static constexpr int PART_MAX_BITS = 8;	/* one bucket counter per thread of a block */
static constexpr int PART_BLOCK = 256;
static constexpr int PART_ITEMS = 4;	/* lookups per thread in a chunk */

/* bits of the bucket (id >> CTILE_LOG2) */
static inline uint32_t
part_bits(uint64_t nq)
{
	uint32_t	b = bits_of(nq > 1 ? nq - 1 : 1);

	return b > (uint32_t) CTILE_LOG2 ? b - (uint32_t) CTILE_LOG2 : 0;
}

template <int BLOCK, int ITEMS>
struct PartSmem
{
	uint32_t	start[1u << PART_MAX_BITS];	/* counts, then the runs' starts in the chunk */
	uint32_t	delta[1u << PART_MAX_BITS];	/* global position - position in the chunk */
	uint32_t	sid[BLOCK * ITEMS];
	uint64_t	sval[BLOCK * ITEMS];
	typename cub::BlockScan<uint32_t, BLOCK>::TempStorage scan;
};

/*
 * Write m (id, val) pairs of a chunk (item u of thread t is pair u * BLOCK +
 * t) to their buckets (id >> shift, nb of them).  sm.start: zeroed.
 */
template <int BLOCK, int ITEMS>
__device__ __forceinline__ void
part_write(PartSmem<BLOCK, ITEMS> &sm, uint32_t nb, uint32_t shift, uint32_t *cursor, uint32_t m,
		   const uint32_t (&id)[ITEMS], const uint64_t (&val)[ITEMS], uint32_t *dst_id, uint64_t *dst_val)
{
	uint32_t	rank[ITEMS],
				c,
				st;

	static_assert(BLOCK == 1 << PART_MAX_BITS, "one bucket per thread");

#pragma unroll
	for (int u = 0; u < ITEMS; u++)
		rank[u] = u * BLOCK + threadIdx.x < m ? atomicAdd(&sm.start[id[u] >> shift], 1u) : 0;
	__syncthreads();
	/* runs in the chunk in bucket order; reserve each bucket's run globally */
	c = threadIdx.x < nb ? sm.start[threadIdx.x] : 0;
	cub::BlockScan<uint32_t, BLOCK>(sm.scan).ExclusiveSum(c, st);
	if (threadIdx.x < nb)
	{
		sm.start[threadIdx.x] = st;
		if (c)
			sm.delta[threadIdx.x] = (threadIdx.x << shift) + atomicAdd(&cursor[threadIdx.x], c) - st;
	}
	__syncthreads();
#pragma unroll
	for (int u = 0; u < ITEMS; u++)
		if (u * BLOCK + threadIdx.x < m)
		{
			uint32_t	at = sm.start[id[u] >> shift] + rank[u];

			sm.sid[at] = id[u];
			sm.sval[at] = val[u];
		}
	__syncthreads();
	/* consecutive threads write consecutive places of a run */
	for (uint32_t t = threadIdx.x; t < m; t += BLOCK)
	{
		uint32_t	i = sm.sid[t],
					pos = sm.delta[i >> shift] + t;

		dst_id[pos] = i;
		dst_val[pos] = sm.sval[t];
	}
	__syncthreads();
}

/* Lookups of sorted keys (query ids in ids), results partitioned on id >> shift */
template <class KT, int NK, bool AOS, bool POS, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK)
k_point_part(Idx<KT> ix, const KT *skeys, const uint32_t *ids, uint64_t nq, uint32_t full_levels,
			 uint32_t shift, uint32_t nb, uint32_t *cursor, uint32_t *dst_id, uint64_t *dst_val)
{
	__shared__ PartSmem<BLOCK, ITEMS> sm;
	constexpr uint32_t CH = BLOCK * ITEMS;

	for (uint64_t base = (uint64_t) blockIdx.x * CH; base < nq; base += (uint64_t) gridDim.x * CH)
	{
		uint32_t	m = nq - base < CH ? (uint32_t) (nq - base) : CH;
		uint32_t	id[ITEMS];
		uint64_t	r[ITEMS];

		for (uint32_t b = threadIdx.x; b < nb; b += BLOCK)
			sm.start[b] = 0;
#pragma unroll
		for (int u = 0; u < ITEMS; u++)
		{
			uint32_t	t = u * BLOCK + threadIdx.x;

			id[u] = 0;
			r[u] = NO_MATCH;
			if (t < m)
			{
				id[u] = ids[base + t];
				r[u] = point_one<KT, NK, AOS, POS>(ix, NULL, 0, full_levels, skeys[base + t]);
			}
		}
		__syncthreads();
		part_write<BLOCK, ITEMS>(sm, nb, shift, cursor, m, id, r, dst_id, dst_val);
	}
}

template <class KT, int NK, bool AOS, bool POS, int ITEMS>
static inline cudaError_t
launch_point_part_nk(const Idx<KT> &ix, const KT *skeys, const uint32_t *ids, uint64_t nq, uint32_t shift,
					 uint32_t nb, uint32_t *cursor, uint32_t *dst_id, uint64_t *dst_val, cudaStream_t st)
{
	auto		kern = k_point_part<KT, NK, AOS, POS, PART_BLOCK, ITEMS>;
	uint64_t	need = (nq + PART_BLOCK * ITEMS - 1) / (PART_BLOCK * ITEMS);
	int			grid = 0;
	cudaError_t e;

	if ((e = grid_for(kern, PART_BLOCK, 0, 0, &grid)) != cudaSuccess)
		return e;
	if ((uint64_t) grid > need)
		grid = (int) need;
	kern<<<grid, PART_BLOCK, 0, st>>>(ix, skeys, ids, nq, eytz_shape(ix.n, ix.k).full_levels, shift, nb, cursor,
									  dst_id, dst_val);
	return cudaGetLastError();
}

template <class KT, bool POS, int ITEMS>
static inline cudaError_t
launch_point_part(const Idx<KT> &ix, const KT *skeys, const uint32_t *ids, uint64_t nq, uint32_t shift,
				  uint32_t nb, uint32_t *cursor, uint32_t *dst_id, uint64_t *dst_val, cudaStream_t st)
{
#define PART_NK(NK) (ix.aos ? launch_point_part_nk<KT, NK, true, POS, ITEMS>(ix, skeys, ids, nq, shift, nb, cursor, \
																		  dst_id, dst_val, st) \
	: launch_point_part_nk<KT, NK, false, POS, ITEMS>(ix, skeys, ids, nq, shift, nb, cursor, dst_id, dst_val, st))
	switch (ix.k)
	{
		case 2:
			return PART_NK(1);
		case 3:
			return PART_NK(2);
		case 5:
			return PART_NK(4);
		case 9:
			return PART_NK(8);
		case 17:
			return PART_NK(16);
		default:
			return PART_NK(32);
	}
#undef PART_NK
}

/* Workspace of sorted_point (nq each; temp of sorted_point_temp_bytes) */
template <class KT>
struct SortedWork
{
	KT		   *skeys;
	uint32_t   *iota,
			   *perm,
			   *perm2;
	uint64_t   *tmp,
			   *pay2;
	void	   *temp;
	size_t		temp_bytes;
};

template <class KT>
static inline cudaError_t
sorted_point_temp_bytes(uint64_t nq, size_t *bytes)
{
	size_t		a = 0,
				b = 0;
	cudaError_t e;

	if ((e = cub::DeviceRadixSort::SortPairs((void *) NULL, a, (const KT *) NULL, (KT *) NULL,
											 (const uint32_t *) NULL, (uint32_t *) NULL, (int) nq, 0,
											 (int) (8 * sizeof(KT)))) != cudaSuccess)
		return e;
	if ((e = cub::DeviceRadixSort::SortPairs((void *) NULL, b, (const uint32_t *) NULL, (uint32_t *) NULL,
											 (const uint64_t *) NULL, (uint64_t *) NULL, (int) nq, 0,
											 32)) != cudaSuccess)
		return e;
	*bytes = a > b ? a : b;
	if (*bytes < ((size_t) 4 << PART_MAX_BITS))
		*bytes = (size_t) 4 << PART_MAX_BITS;	/* cursors of the fused write-back */
	return cudaSuccess;
}

/* Allocate a SortedWork for nq lookups (tests and benchmark; the library keeps its own buffers) */
template <class KT>
static inline cudaError_t
sorted_work_alloc(SortedWork<KT> &w, uint64_t nq)
{
	cudaError_t e;

	memset(&w, 0, sizeof(w));
	if ((e = sorted_point_temp_bytes<KT>(nq, &w.temp_bytes)) != cudaSuccess ||
		(e = cudaMalloc(&w.skeys, nq * sizeof(KT))) != cudaSuccess || (e = cudaMalloc(&w.iota, nq * 4)) != cudaSuccess ||
		(e = cudaMalloc(&w.perm, nq * 4)) != cudaSuccess || (e = cudaMalloc(&w.perm2, nq * 4)) != cudaSuccess ||
		(e = cudaMalloc(&w.tmp, nq * 8)) != cudaSuccess || (e = cudaMalloc(&w.pay2, nq * 8)) != cudaSuccess ||
		(e = cudaMalloc(&w.temp, w.temp_bytes)) != cudaSuccess)
		return e;
	return cudaSuccess;
}

template <class KT>
static inline void
sorted_work_free(SortedWork<KT> &w)
{
	cudaFree(w.skeys);
	cudaFree(w.iota);
	cudaFree(w.perm);
	cudaFree(w.perm2);
	cudaFree(w.tmp);
	cudaFree(w.pay2);
	cudaFree(w.temp);
	memset(&w, 0, sizeof(w));
}

template <class VT>
__global__ void
k_scatter(const uint32_t *idx, const VT *val, uint64_t n, VT *out)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride)
		out[idx[j]] = val[j];
}

/* Step 1: w.skeys/w.perm := lo sorted on its top key_bits significant bits (of [mn, mx]) */
template <class KT>
static inline cudaError_t
sorted_point_sort(const KT *lo, uint64_t nq, KT mn, KT mx, int key_bits, const SortedWork<KT> &w,
				  bool iota_ready, cudaStream_t st)
{
	uint32_t	hb = bits_of((uint64_t) (KT) (mn ^ mx));
	uint32_t	bb;
	size_t		tb = w.temp_bytes;
	cudaError_t e;

	if (nq == 0)
		return cudaSuccess;
	if (hb == 0)
		hb = 1;
	bb = hb > (uint32_t) key_bits ? hb - (uint32_t) key_bits : 0;
	if (!iota_ready)
	{
		k_iota<<<(unsigned) ((nq + 1023) / 1024 < 65535 ? (nq + 1023) / 1024 : 65535), 1024, 0, st>>>(w.iota, nq);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return e;
	}
	return cub::DeviceRadixSort::SortPairs(w.temp, tb, lo, w.skeys, w.iota, w.perm, (int) nq, (int) bb, (int) hb,
										   st);
}

/* Step 2: lookups in sorted order, to w.tmp (scatter_bits > 0) or straight to out[perm[j]] */
template <class KT, bool POS>
static inline cudaError_t
sorted_point_lookup(const Idx<KT> &ix, uint64_t nq, uint64_t *out, const Cfg &cfg, int scatter_bits,
					const SortedWork<KT> &w, cudaStream_t st)
{
	Qs<KT>		qs;
	Outs		o = {scatter_bits != 0 ? w.tmp : out, NULL, NULL};

	memset(&qs, 0, sizeof(qs));
	qs.lo = w.skeys;
	qs.nq = nq;
	qs.perm = scatter_bits != 0 ? NULL : w.perm;
	if (nq == 0)
		return cudaSuccess;
	return launch_point_k<KT, POS>(ix, qs, o, cfg, pin_slots(ix, cfg.pin_bytes), st);
}

/*
 * Bucketed write-back: ids are a permutation of [0, nq), so after a partition
 * on id >> SCATTER_TILE_LOG2 bucket b holds exactly the ids of out's tile b,
 * at positions [b * TILE, (b + 1) * TILE).  A block places its tile in shared
 * memory and writes it out whole: no scattered global writes at all.
 */

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
k_tile_write(const uint32_t *idx, const uint64_t *val, uint64_t n, uint64_t *out)
{
	constexpr uint32_t TILE = 1u << SCATTER_TILE_LOG2;
	__shared__ uint64_t buf[TILE];

	for (uint64_t b = blockIdx.x; b * TILE < n; b += gridDim.x)
	{
		uint64_t	base = b * TILE;
		uint32_t	cnt = n - base < TILE ? (uint32_t) (n - base) : TILE;

		for (uint32_t t = threadIdx.x; t < cnt; t += BLOCK)
			buf[idx[base + t] & (TILE - 1)] = val[base + t];
		__syncthreads();
		for (uint32_t t = threadIdx.x; t < cnt; t += BLOCK)
			out[base + t] = buf[t];
		__syncthreads();
	}
}

/*
 * Step 3: out[perm[j]] := tmp[j].  scatter_bits > 0: a one-pass partition on
 * the id's top scatter_bits bits, then a scatter inside windows of
 * nq >> scatter_bits results.  scatter_bits = -1: partition on all id bits
 * above SCATTER_TILE_LOG2, then whole tiles through shared memory; -3: on
 * the bits above CTILE_LOG2, then the cluster tile write (have_clusters()).
 */
template <class KT>
static inline cudaError_t
sorted_point_scatter(uint64_t nq, uint64_t *out, int scatter_bits, const SortedWork<KT> &w, cudaStream_t st)
{
	uint32_t	b = bits_of(nq > 1 ? nq - 1 : 1);
	uint32_t	bb = b > (uint32_t) scatter_bits ? b - (uint32_t) scatter_bits : 0;
	size_t		tb = w.temp_bytes;
	unsigned	g;
	cudaError_t e;

	if (nq == 0 || scatter_bits == 0)
		return cudaSuccess;
	if (scatter_bits < 0)
	{
		const uint32_t *id = w.perm;
		const uint64_t *v = w.tmp;
		uint32_t	tl = scatter_bits == -3 ? CTILE_LOG2 : SCATTER_TILE_LOG2;
		uint64_t	tiles = (nq + (1u << SCATTER_TILE_LOG2) - 1) >> SCATTER_TILE_LOG2;

		if (b > tl)
		{
			if ((e = cub::DeviceRadixSort::SortPairs(w.temp, tb, w.perm, w.perm2, w.tmp, w.pay2, (int) nq, (int) tl,
													 (int) b, st)) != cudaSuccess)
				return e;
			id = w.perm2;
			v = w.pay2;
		}
		if (scatter_bits == -3)
			return cluster_tile_write(id, v, nq, out, st);
		k_tile_write<256><<<(unsigned) (tiles < 132 * 8 ? tiles : 132 * 8), 256, 0, st>>>(id, v, nq, out);
		return cudaGetLastError();
	}
	if ((e = cub::DeviceRadixSort::SortPairs(w.temp, tb, w.perm, w.perm2, w.tmp, w.pay2, (int) nq, (int) bb,
											 (int) b, st)) != cudaSuccess)
		return e;
	g = (unsigned) ((nq + 255) / 256 < 132 * 16 ? (nq + 255) / 256 : 132 * 16);
	k_scatter<uint64_t><<<g, 256, 0, st>>>(w.perm2, w.pay2, nq, out);
	return cudaGetLastError();
}

/* Steps 2 and 3 fused (scatter_bits = -2; needs part_bits(nq) <= PART_MAX_BITS and have_clusters()) */
template <class KT, bool POS, int ITEMS>
static inline cudaError_t
sorted_point_fused(const Idx<KT> &ix, uint64_t nq, uint64_t *out, const SortedWork<KT> &w, cudaStream_t st)
{
	uint32_t	pb = part_bits(nq);
	cudaError_t e;

	if (nq == 0)
		return cudaSuccess;
	if (pb > (uint32_t) PART_MAX_BITS || w.temp_bytes < ((size_t) 4 << pb))
		return cudaErrorInvalidValue;
	if ((e = cudaMemsetAsync(w.temp, 0, (size_t) 4 << pb, st)) != cudaSuccess)
		return e;
	if ((e = launch_point_part<KT, POS, ITEMS>(ix, w.skeys, w.perm, nq, CTILE_LOG2, 1u << pb, (uint32_t *) w.temp,
											   w.perm2, w.pay2, st)) != cudaSuccess)
		return e;
	return cluster_tile_write(w.perm2, w.pay2, nq, out, st);
}

/*
 * Globally sorted point lookups: out[i] = payload of lo[i] or NO_MATCH (POS:
 * its lower-bound slot).  key_bits: significant key bits sorted on (16: two
 * radix passes); scatter_bits: 8 (one partition pass), 0 = direct writes,
 * -1 = partition into tiles of 2^SCATTER_TILE_LOG2 ids written whole, -3 =
 * into cluster tiles of 2^CTILE_LOG2, -2 = cluster tiles partitioned by the
 * lookup kernel (sorted_point_fused).  Without clusters -2 and -3 run as -1.
 */
template <class KT, bool POS>
static inline cudaError_t
sorted_point(const Idx<KT> &ix, const KT *lo, uint64_t nq, uint64_t *out, const Cfg &cfg, KT mn, KT mx,
			 int key_bits, int scatter_bits, const SortedWork<KT> &w, bool iota_ready, cudaStream_t st)
{
	cudaError_t e;

	if ((scatter_bits == -2 || scatter_bits == -3) && !have_clusters())
		scatter_bits = -1;
	if (scatter_bits == -2 && part_bits(nq) > (uint32_t) PART_MAX_BITS)
		scatter_bits = -3;
	if ((e = sorted_point_sort<KT>(lo, nq, mn, mx, key_bits, w, iota_ready, st)) != cudaSuccess)
		return e;
	if (scatter_bits == -2)
		return sorted_point_fused<KT, POS, PART_ITEMS>(ix, nq, out, w, st);
	if ((e = sorted_point_lookup<KT, POS>(ix, nq, out, cfg, scatter_bits, w, st)) != cudaSuccess)
		return e;
	return sorted_point_scatter<KT>(nq, out, scatter_bits, w, st);
}

}								/* namespace eytzk */

#endif							/* EYTZ_KERNELS_CUH */
