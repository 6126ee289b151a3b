/*
 * eytz_point.cuh
 *		Point lookup kernels (one result per query): the lean lower-bound
 *		walk (point_one, k_point), the whole index in shared memory
 *		(k_point_smem), sorted lookups that partition their own results
 *		(k_point_part) and the write-backs to query order (tiles, cluster
 *		tiles through distributed shared memory, window scatter).
 */
#ifndef EYTZ_POINT_CUH
#define EYTZ_POINT_CUH

#include <cooperative_groups.h>

#include "eytz_prim.cuh"

namespace eytzk
{

/* ===========================================================================
 * Point fast paths (POINT mode, one result per query)
 *
 * 1. k_point_smem: the whole index's keys in shared memory (tiny indexes),
 *    32-bit slot arithmetic, Q lookups per thread walked level by level so
 *    that Q independent node reads are in flight per thread (ILP), the
 *    binary copy (EBS) without a branch on its full levels, payload loads of
 *    all Q lookups issued before their stores.
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
 * What k_point_smem does with its results: a sink.  Sinks with TILED false
 * get each result (put(j, r)); the block walks tiles t, t + gridDim.x, ...
 * of BLOCK * Q queries (result u of thread i: query t * BLOCK * Q + u *
 * BLOCK + i).  Sinks with TILED true have tiles of TILE_THREADS threads
 * (a warp), claim them in order (first, next) and get a whole tile's
 * results at once (tile: every thread of the tile calls it with its Q
 * results and the warp's HeldTile; flush at the end), so they can scan
 * across tiles (CsrSink).
 */

/* A plain sink: store the result (out[j]) */
struct StoreSink
{
	static constexpr bool TILED = false;
	static constexpr int TILE_THREADS = 0;	/* 0: the block's */
	uint64_t   *out;

	__device__ __forceinline__ void put(uint64_t j, uint64_t r)
	{
		out[j] = r;
	}
	template <int BLOCK>
	__device__ __forceinline__ void finish()
	{
	}
};

/*
 * A warp tile's point results, kept until its look-back (CsrSink): per
 * query a value V that is all ones for no match (NO_MATCH payloads, or
 * NONE32 slots whose payloads are read at the write)
 */
template <int Q, class V>
struct HeldTile
{
	static constexpr uint64_t NONE = ~(uint64_t) 0;
	uint64_t	t;				/* the tile, NONE: none held */
	uint32_t	sum;			/* its match count */
	V			r[Q];
};

/* A held result: a match (not all ones)? */
template <class V>
__device__ __forceinline__ bool
held_match(V v)
{
	return v != (V) ~(V) 0;
}

/*
 * CSR results in one pass: each tile's point results (one match at most a
 * query, NO_MATCH for none) are compacted in query order where the tiles
 * before it left off.  A tile is one warp's: 32 x Q queries, result u of
 * lane l being query t * 32 * Q + u * 32 + l.  Warp w of the grid takes
 * tiles w, w + W, w + 2W, ... (W warps in all); the kernel is launched
 * cooperatively, so every warp is resident and the smallest unfinished
 * tile can always go on (the precondition of a decoupled look-back).  A
 * tile's first output place comes from a decoupled look-back over the
 * tiles' match counts, kept in CUB's single-pass scan tile states
 * (ScanTileState); within the tile the places come from ballots.
 *
 * The look-back is one tile late: a warp publishes tile t's count, keeps
 * t's results (HeldTile, in registers), walks and publishes its next tile,
 * and only then looks back for t and writes t's offsets and matches
 * (off[nq], the total, by the last tile; the last held tile at the end).
 * By then t's predecessors have published their counts (and the warp's
 * own tile before t its inclusive prefix), so the look-back reads instead
 * of waiting on tiles still being walked.  Warps never wait for each other's
 * barriers: while one looks back, the SM's other warps walk.  Measured
 * slower (cuda/bench/results/README.md, "One pass for the CSR API"):
 * looking back right after the walk of the tile (the look-back waited on
 * the partial tiles of the thousands in flight), CUB's
 * TilePrefixCallbackOp, which looks back for a whole block in its first
 * warp between two block barriers (with one 1024-thread block per SM the
 * SM idles at every look-back), and warps claiming their tiles with an
 * atomic counter (2^18 atomics on one address).  The shared-memory walk holds
 * slots, not payloads (fewer registers), and the write reads the payloads
 * (the first 4 a lane before the look-back, whose latency they share).  A
 * look-back reads ~12 windows of 32 partial tiles on average (ncu, tiles of
 * 32 x 4): the tiles of one round all become inclusive at about the same
 * time, so tiles of 32 x 8 (EYTZ_CSR_SMEM_Q) halve the number of
 * look-backs.  Needs csr_sink_init.
 */
struct CsrSink
{
	using TileState = cub::ScanTileState<uint32_t>;
	static constexpr bool TILED = true;
	static constexpr int TILE_THREADS = 32;
	TileState	ts;
	uint64_t   *off;			/* nq + 1 offsets */
	uint64_t   *out;			/* the matches (room for nq) */

	__device__ __forceinline__ uint64_t first()
	{
		return ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	}

	__device__ __forceinline__ uint64_t next(uint64_t t)
	{
		return t + (((uint64_t) gridDim.x * blockDim.x) >> 5);
	}

	/* Tile t's match count */
	template <int Q, class V>
	__device__ __forceinline__ uint32_t count(uint64_t t, const V (&r)[Q], uint64_t nq)
	{
		const uint64_t j0 = t * (32 * Q) + (threadIdx.x & 31);
		uint32_t	sum = 0;

#pragma unroll
		for (int u = 0; u < Q; u++)
			sum += __popc(__ballot_sync(FULL, j0 + (uint64_t) u * 32 < nq && held_match(r[u])));
		return sum;
	}

	/* Makes tile t's count visible to the tiles after it (tile 0's is its inclusive prefix) */
	__device__ __forceinline__ void publish(uint64_t t, uint32_t sum)
	{
		if ((threadIdx.x & 31) == 0)
		{
			if (t == 0)
				ts.SetInclusive(0, sum);
			else
				ts.SetPartial((int) t, sum);
		}
	}

	/*
	 * The sum of the tiles before t (agg: t's own count, published).  Lane
	 * l looks at tile t - 1 - l, then 32 further back, until a tile whose
	 * inclusive prefix is known (or the padding before tile 0).
	 */
	__device__ __forceinline__ uint32_t look_back(uint64_t t, uint32_t agg)
	{
		const uint32_t lane = threadIdx.x & 31;
		uint32_t	excl = 0;

		if (t == 0)
			return 0;
		for (int p = (int) t - 1 - (int) lane;; p -= 32)
		{
			TileState::StatusWord st;
			uint32_t	v;
			unsigned	stop;

			ts.WaitForValid(p, st, v);
			stop = __ballot_sync(FULL, st != cub::SCAN_TILE_PARTIAL);
			if (stop)
			{
				/* the nearest inclusive (or padding) tile ends the sum */
				uint32_t	last = __ffs(stop) - 1;

				excl += __reduce_add_sync(FULL, lane <= last ? v : 0);
				break;
			}
			excl += __reduce_add_sync(FULL, v);
		}
		if (lane == 0)
			ts.SetInclusive((int) t, excl + agg);
		return excl;
	}

	/*
	 * Tile t's offsets and matches (sum of them), its count published;
	 * pay(r[u]): the payload of a match, read G at a time (the first G
	 * before the look-back, so that the latencies overlap)
	 */
	template <int Q, class V, class Pay>
	__device__ __forceinline__ void write(uint64_t t, const V (&r)[Q], uint32_t sum, uint64_t nq, Pay pay)
	{
		constexpr int G = Q < 4 ? Q : 4;
		const uint32_t lane = threadIdx.x & 31;
		const uint64_t j0 = t * (32 * Q) + lane;
		uint64_t	p[G];
		uint32_t	base,
					at;

#pragma unroll
		for (int u = 0; u < G; u++)
			p[u] = held_match(r[u]) ? pay(r[u]) : 0;
		base = look_back(t, sum);
		at = base;
#pragma unroll
		for (int g = 0; g < Q; g += G)
		{
			if (g > 0)
			{
#pragma unroll
				for (int u = 0; u < G; u++)
					p[u] = held_match(r[g + u]) ? pay(r[g + u]) : 0;
			}
#pragma unroll
			for (int u = 0; u < G; u++)
			{
				uint64_t	j = j0 + (uint64_t) (g + u) * 32;
				bool		m = j < nq && held_match(r[g + u]);
				unsigned	b = __ballot_sync(FULL, m);
				uint32_t	place = at + __popc(b & ((1u << lane) - 1));

				if (j < nq)
					off[j] = place;
				if (m)
					out[place] = p[u];
				at += __popc(b);
			}
		}
		if (lane == 0 && (t + 1) * (32 * Q) >= nq)
			off[nq] = base + sum;
	}

	/* Tile t's results: published now, written after the warp's next tile (held in h) */
	template <int Q, class V, class Pay>
	__device__ __forceinline__ void tile(uint64_t t, const V (&r)[Q], uint64_t nq, HeldTile<Q, V> &h, Pay pay)
	{
		uint32_t	sum = count<Q>(t, r, nq);

		publish(t, sum);
		flush<Q>(h, nq, pay);
		h.t = t;
		h.sum = sum;
#pragma unroll
		for (int u = 0; u < Q; u++)
			h.r[u] = r[u];
	}

	/* Writes the held tile, if any */
	template <int Q, class V, class Pay>
	__device__ __forceinline__ void flush(HeldTile<Q, V> &h, uint64_t nq, Pay pay)
	{
		if (h.t != HeldTile<Q, V>::NONE)
			write<Q>(h.t, h.r, h.sum, nq, pay);
		h.t = HeldTile<Q, V>::NONE;
	}

	template <int BLOCK>
	__device__ __forceinline__ void finish()
	{
	}
};

/* The tiles a block of k_point_smem (or k_csr_compact) walks: see the sinks above */
template <class Sink>
__device__ __forceinline__ uint64_t
first_tile(Sink &sink)
{
	if constexpr (Sink::TILED)
		return sink.first();
	else
		return blockIdx.x;
}

template <class Sink>
__device__ __forceinline__ uint64_t
next_tile(Sink &sink, uint64_t t)
{
	if constexpr (Sink::TILED)
		return sink.next(t);
	else
		return t + gridDim.x;
}

/*
 * Q lookups walked together in the shared-memory copy (pin: the n keys,
 * padded with the largest key to whole nodes): cand[u] is the slot whose key
 * is x[u], NONE32 if none (the keys are unique).
 */
template <class KT, int NK, int Q>
__device__ __forceinline__ void
smem_walk(const KT *pin, uint32_t n, uint32_t levels, const KT (&x)[Q], uint32_t (&cand)[Q])
{
	if constexpr (NK == 1)
	{
		/*
		 * EBS without a branch on the full levels: o is sizeof(KT) times the
		 * 1-based heap index i (children 2i and 2i + 1, key i at pin[i - 1]),
		 * each step appends a bit to i (1: key < x), so the lower bound is
		 * the node of the last 0 bit, i >> (trailing ones + 1); its key is
		 * read once at the end.
		 */
		const uint32_t full = 31 - __clz(n + 1);	/* levels with every node present */
		const char *pb = (const char *) pin - sizeof(KT);
		uint32_t	o[Q];

#pragma unroll
		for (int u = 0; u < Q; u++)
			o[u] = sizeof(KT);
		for (uint32_t l = 0; l < full; l++)
		{
#pragma unroll
			for (int u = 0; u < Q; u++)
			{
				KT			k = *(const KT *) (pb + o[u]);

				o[u] = 2 * o[u] + (k < x[u] ? (uint32_t) sizeof(KT) : 0);
			}
		}
		if (full < levels)
		{
			/* the partial bottom level: a step only where the node exists (else a right turn) */
#pragma unroll
			for (int u = 0; u < Q; u++)
			{
				bool		in = o[u] <= n * (uint32_t) sizeof(KT);
				KT			k = *(const KT *) (pb + (in ? o[u] : (uint32_t) sizeof(KT)));

				o[u] = 2 * o[u] + (!in || k < x[u] ? (uint32_t) sizeof(KT) : 0);
			}
		}
#pragma unroll
		for (int u = 0; u < Q; u++)
		{
			uint32_t	i = o[u] / (uint32_t) sizeof(KT),
						c = i >> __ffs(~i);	/* 1-based; 0: every key < x */

			cand[u] = c != 0 && pin[c ? c - 1 : 0] == x[u] ? c - 1 : NONE32;
		}
	}
	else
	{
		uint32_t	s[Q];

#pragma unroll
		for (int u = 0; u < Q; u++)
		{
			s[u] = 0;
			cand[u] = NONE32;
		}
		for (uint32_t l = 0; l < levels; l++)
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
#pragma unroll
		for (int u = 0; u < Q; u++)
			if (cand[u] != NONE32 && pin[cand[u]] != x[u])
				cand[u] = NONE32;
	}
}

/*
 * The whole index in shared memory, Q lookups per thread; query keys of
 * type QT (narrowed on load), each result handed to the sink (put, then
 * finish once per thread at the end: the sink may reduce over the block).
 * A tiled sink gets the tile's slots and reads the payloads itself.
 */
template <class KT, int NK, int BLOCK, int Q, class QT, class Sink>
__global__ void __launch_bounds__(BLOCK, 1)
k_point_smem(Idx<KT> ix, const QT *qk, uint64_t nq, Sink sink, uint32_t npad)
{
	extern __shared__ __align__(16) unsigned char smem_raw[];
	constexpr int COPY = 8;		/* loads in flight a thread while copying the index */
	KT		   *pin = (KT *) smem_raw;
	const uint32_t n = (uint32_t) ix.n;
	constexpr int TT = Sink::TILE_THREADS ? Sink::TILE_THREADS : BLOCK;	/* threads of a tile */
	const uint32_t tid = threadIdx.x % TT;
	HeldTile<Q, uint32_t> held = {HeldTile<Q, uint32_t>::NONE};	/* a tiled sink's deferred tile */
	auto		pay = [&](uint32_t c) { return pay_at(ix, c); };

	/* padding slots hold the largest key: never < x, so partial nodes need no count */
	for (uint32_t t0 = threadIdx.x; t0 < npad; t0 += COPY * BLOCK)
	{
		KT			v[COPY];

#pragma unroll
		for (int e = 0; e < COPY; e++)
		{
			uint32_t	t = t0 + e * BLOCK;

			v[e] = t < n ? *key_ptr(ix, t) : (KT) ~(KT) 0;
		}
#pragma unroll
		for (int e = 0; e < COPY; e++)
			if (t0 + e * BLOCK < npad)
				pin[t0 + e * BLOCK] = v[e];
	}
	__syncthreads();
	for (uint64_t t = first_tile(sink); t * (TT * Q) < nq; t = next_tile(sink, t))
	{
		uint64_t	base = t * (TT * Q) + tid;
		KT			x[Q];
		uint32_t	cand[Q];

#pragma unroll
		for (int u = 0; u < Q; u++)
		{
			uint64_t	j = base + (uint64_t) u * TT;

			x[u] = j < nq ? (KT) qk[j] : (KT) 0;
		}
		smem_walk<KT, NK, Q>(pin, n, ix.levels, x, cand);
		if constexpr (Sink::TILED)
			sink.template tile<Q>(t, cand, nq, held, pay);
		else
		{
			uint64_t	r[Q];

			/* all payload loads first, then the stores (the compiler must assume out may alias them) */
#pragma unroll
			for (int u = 0; u < Q; u++)
				r[u] = cand[u] != NONE32 ? pay(cand[u]) : NO_MATCH;
#pragma unroll
			for (int u = 0; u < Q; u++)
			{
				uint64_t	j = base + (uint64_t) u * TT;

				if (j < nq)
					sink.put(j, r[u]);
			}
		}
	}
	if constexpr (Sink::TILED)
		sink.template flush<Q>(held, nq, pay);
	sink.template finish<BLOCK>();
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK, 1)
k_cluster_tile_write(const uint32_t *idx, const uint64_t *val, uint64_t n, uint64_t *out)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	extern __shared__ __align__(16) unsigned char smem_raw[];
	constexpr uint32_t SLICE = 1u << EYTZ_CTILE_SLICE_LOG2;
	uint64_t   *buf = (uint64_t *) smem_raw;
	cooperative_groups::cluster_group cl = cooperative_groups::this_cluster();
	uint32_t	r = cl.block_rank();
	uint64_t	nclusters = gridDim.x / EYTZ_CTILE_CLUSTER;

	/* every block of the cluster must run before others write its shared memory */
	cl.sync();
	/* the loop is uniform over a cluster (consecutive blocks share c) */
	for (uint64_t c = blockIdx.x / EYTZ_CTILE_CLUSTER; (c << EYTZ_CTILE_LOG2) < n; c += nclusters)
	{
		uint64_t	s0 = (c << EYTZ_CTILE_LOG2) + ((uint64_t) r << EYTZ_CTILE_SLICE_LOG2);
		uint32_t	cnt = s0 >= n ? 0 : n - s0 < SLICE ? (uint32_t) (n - s0) : SLICE;

		for (uint32_t t = threadIdx.x; t < cnt; t += BLOCK)
		{
			uint32_t	i = idx[s0 + t];
			uint64_t   *dst = cl.map_shared_rank(buf, (i >> EYTZ_CTILE_SLICE_LOG2) & (EYTZ_CTILE_CLUSTER - 1));

			dst[i & (SLICE - 1)] = val[s0 + t];
		}
		cl.sync();
		for (uint32_t t = threadIdx.x; t < cnt; t += BLOCK)
			out[s0 + t] = buf[t];
		cl.sync();
	}
#endif
}

template <int BLOCK, int ITEMS>
struct PartSmem
{
	uint32_t	start[1u << EYTZ_PART_MAX_BITS];	/* counts, then the runs' starts in the chunk */
	uint32_t	delta[1u << EYTZ_PART_MAX_BITS];	/* global position - position in the chunk */
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

	static_assert(BLOCK == 1 << EYTZ_PART_MAX_BITS, "one bucket per thread");

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

template <class VT>
__global__ void
k_scatter(const uint32_t *idx, const VT *val, uint64_t n, VT *out)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride)
		out[idx[j]] = val[j];
}

/*
 * Bucketed write-back: ids are a permutation of [0, nq), so after a partition
 * on id >> EYTZ_SCATTER_TILE_LOG2 bucket b holds exactly the ids of out's tile b,
 * at positions [b * TILE, (b + 1) * TILE).  A block places its tile in shared
 * memory and writes it out whole: no scattered global writes at all.
 */

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK)
k_tile_write(const uint32_t *idx, const uint64_t *val, uint64_t n, uint64_t *out)
{
	constexpr uint32_t TILE = 1u << EYTZ_SCATTER_TILE_LOG2;
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

/* CSR of point results (one match at most each, NO_MATCH for none): the counts */
static __global__ void
k_point_counts(const uint64_t *first, uint64_t nq, uint64_t *cnt)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nq; i += stride)
		cnt[i] = first[i] != NO_MATCH;
}

/* The tile states of a CsrSink over ntiles tiles */
static __global__ void
k_csr_tiles_init(CsrSink sink, int ntiles)
{
	sink.ts.InitializeStatus(ntiles);
}

/* CSR of point results already in query order (first[i]: payload or NO_MATCH), in one pass */
template <int BLOCK, int Q>
__global__ void __launch_bounds__(BLOCK)
k_csr_compact(const uint64_t *first, uint64_t nq, CsrSink sink)
{
	HeldTile<Q, uint64_t> held = {HeldTile<Q, uint64_t>::NONE};
	auto		same = [](uint64_t r) { return r; };

	for (uint64_t t = first_tile(sink); t * (32 * Q) < nq; t = next_tile(sink, t))
	{
		uint64_t	r[Q];

#pragma unroll
		for (int u = 0; u < Q; u++)
		{
			uint64_t	j = t * (32 * Q) + (uint64_t) u * 32 + (threadIdx.x & 31);

			r[u] = j < nq ? first[j] : NO_MATCH;
		}
		sink.template tile<Q>(t, r, nq, held, same);
	}
	sink.template flush<Q>(held, nq, same);
}

}								/* namespace eytzk */

#endif							/* EYTZ_POINT_CUH */
