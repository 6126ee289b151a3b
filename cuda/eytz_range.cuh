/*
 * eytz_range.cuh
 *		Range (and CSR point) lookup kernels: one thread per lookup (EBS when
 *		k = 2, EKS single when k > 2) with hybrid coalesced scanning of long
 *		per-level runs (paper 5.1), EKS group (k - 1 lanes per lookup, 6.2),
 *		and the text-book binary search baseline.  Each runs in one of the
 *		three modes of eytz_prim.cuh (POINT, COUNT, FILL).
 */
#ifndef EYTZ_RANGE_CUH
#define EYTZ_RANGE_CUH

#include "eytz_prim.cuh"

namespace eytzk
{

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
 * one level exceeds EYTZ_HYBRID_T hits, so the warp can take over.
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
					if (run >= EYTZ_HYBRID_T)
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

}								/* namespace eytzk */

#endif							/* EYTZ_RANGE_CUH */
