/*
 * eytz_dispatch.cuh
 *		The dispatch layer: launch configuration (persistent grids, pinning),
 *		the lookup launchers over every fan-out through the one dispatcher
 *		(dispatch_nk, eytz_prim.cuh), and the one count/scan/fill pipeline of
 *		CSR results that the library and the benchmark both run.
 *
 * Sorted point lookups are in eytz_sorted.cuh, the join-shaped results in
 * eytz_join.cuh; both build on this file.
 */
#ifndef EYTZ_DISPATCH_CUH
#define EYTZ_DISPATCH_CUH

#include "eytz_range.cuh"
#include "eytz_point.cuh"
#include "eytz_reorder.cuh"

namespace eytzk
{

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

/*
 * Launch kernel, cooperatively when coop (every block resident at once: the
 * grid must not exceed what fits; kernels whose warps wait for others').
 */
template <class K, class... Args>
static inline cudaError_t
launch_kernel(K kernel, bool coop, int grid, int block, size_t smem, cudaStream_t st, Args... args)
{
	void	   *a[] = {(void *) &args...};

	if (coop)
		return cudaLaunchCooperativeKernel((const void *) kernel, grid, block, a, smem, st);
	kernel<<<grid, block, smem, st>>>(args...);
	return cudaGetLastError();
}

/*
 * Launch a persistent grid of kernel big (1024 threads) when the pinned
 * shared-memory copy is large, since it leaves room for one block per SM
 * (make it a big one), else of kernel small (EYTZ_SINGLE_BLOCK threads).
 * max_blocks (0 = no cap) trims the grid to the work there is.  coop: a
 * cooperative launch (launch_kernel).
 */
template <class KB, class KS, class... Args>
static inline cudaError_t
launch_persistent_as(bool coop, KB big, KS small, size_t smem, int blocks_per_sm, uint64_t max_blocks,
					 cudaStream_t st, Args... args)
{
	bool		b = smem > EYTZ_BIG_PIN;
	int			block = b ? 1024 : EYTZ_SINGLE_BLOCK;
	int			grid = 0;
	cudaError_t e;

	e = b ? grid_for(big, block, smem, blocks_per_sm, &grid) : grid_for(small, block, smem, blocks_per_sm, &grid);
	if (e != cudaSuccess)
		return e;
	if (max_blocks > 0 && (uint64_t) grid > max_blocks)
		grid = (int) max_blocks;
	if (b)
		return launch_kernel(big, coop, grid, block, smem, st, args...);
	return launch_kernel(small, coop, grid, block, smem, st, args...);
}

template <class KB, class KS, class... Args>
static inline cudaError_t
launch_persistent(KB big, KS small, size_t smem, int blocks_per_sm, uint64_t max_blocks, cudaStream_t st,
				  Args... args)
{
	return launch_persistent_as(false, big, small, smem, blocks_per_sm, max_blocks, st, args...);
}

/* POINT kernel (k_point) for any fan-out and layout; POS: the lower-bound slot, not the payload */
template <class KT, bool POS>
static inline cudaError_t
launch_point_k(const Idx<KT> &ix, const Qs<KT> &q, const Outs &o, const Cfg &cfg, uint64_t npin, cudaStream_t st)
{
	uint32_t	full = eytz_shape(ix.n, ix.k).full_levels;

	return dispatch_nk_aos(ix, [&](auto nk, auto aos) {
		return launch_persistent(k_point<KT, nk.value, aos.value, 1024, POS>,
								 k_point<KT, nk.value, aos.value, EYTZ_SINGLE_BLOCK, POS>,
								 npin * sizeof(KT), cfg.blocks_per_sm, 0, st, ix, q, o.pay, npin, full);
	});
}

/*
 * Launch one lookup kernel in the given mode.  For ALGO_BS, ix.keys/ix.pays
 * must be the sorted arrays.
 */
template <class KT, int MODE>
static inline cudaError_t
launch_lookup(const Idx<KT> &ix, const Qs<KT> &q, const Outs &o, const Cfg &cfg, cudaStream_t st)
{
	uint64_t	npin = pin_slots(ix, cfg.pin_bytes);
	size_t		smem = npin * sizeof(KT);
	int			grid = 0;
	cudaError_t e;

	if (q.nq == 0)
		return cudaSuccess;
	if (cfg.algo == ALGO_BS)
	{
		uint64_t	g = (q.nq + EYTZ_BS_BLOCK - 1) / EYTZ_BS_BLOCK;

		k_bs<KT, MODE><<<(unsigned) g, EYTZ_BS_BLOCK, 0, st>>>(ix.keys, ix.pays, ix.n, q, o);
		return cudaGetLastError();
	}
	if (cfg.algo == ALGO_GROUP)
	{
		auto		kern = k_group<KT, MODE, EYTZ_GROUP_BLOCK>;

		if ((e = grid_for(kern, EYTZ_GROUP_BLOCK, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		kern<<<grid, EYTZ_GROUP_BLOCK, smem, st>>>(ix, q, o, npin);
		return cudaGetLastError();
	}
	if (cfg.lsort && q.perm == NULL)
	{
		auto		kern = k_single<KT, MODE, true, EYTZ_LSORT_BLOCK, EYTZ_LSORT_ITEMS, 0>;

		if ((e = grid_for(kern, EYTZ_LSORT_BLOCK, smem, cfg.blocks_per_sm, &grid)) != cudaSuccess)
			return e;
		kern<<<grid, EYTZ_LSORT_BLOCK, smem, st>>>(ix, q, o, npin);
		return cudaGetLastError();
	}
	if (MODE == MODE_POINT)
		return launch_point_k<KT, false>(ix, q, o, cfg, npin, st);
	return dispatch_nk(ix.k, [&](auto nk) {
		return launch_persistent(k_single<KT, MODE, false, 1024, 1, nk.value>,
								 k_single<KT, MODE, false, EYTZ_SINGLE_BLOCK, 1, nk.value>,
								 smem, cfg.blocks_per_sm, 0, st, ix, q, o, npin);
	});
}

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
	return ix.n > 0 && smem_point_slots(ix) * sizeof(KT) <= EYTZ_SMEM_POINT_MAX;
}

/*
 * Point lookups with the whole index in shared memory: sink.put(j, payload
 * of qk[j] or NO_MATCH) (StoreSink: out[j]).  q_per_thread: 1, 2 or 4; a
 * tiled sink (CsrSink) always takes EYTZ_CSR_SMEM_Q, its tiles' height.
 * Needs smem_point_fits(ix).
 */
template <class KT, class QT, class Sink>
static inline cudaError_t
launch_point_smem_sink(const Idx<KT> &ix, const QT *qk, uint64_t nq, const Sink &sink, int q_per_thread,
					   int blocks_per_sm, cudaStream_t st)
{
	uint64_t	npad = smem_point_slots(ix);
	size_t		smem = npad * sizeof(KT);
	auto		launch = [&](auto q) {
		return dispatch_nk(ix.k, [&](auto nk) {
			/* no more blocks than there are lookups for */
			uint64_t	per = (uint64_t) (smem > EYTZ_BIG_PIN ? 1024 : EYTZ_SINGLE_BLOCK) * q.value;

			/* a tiled sink's warps wait for each other: every block must be resident */
			return launch_persistent_as(Sink::TILED, k_point_smem<KT, nk.value, 1024, q.value, QT, Sink>,
										k_point_smem<KT, nk.value, EYTZ_SINGLE_BLOCK, q.value, QT, Sink>,
										smem, blocks_per_sm, (nq + per - 1) / per, st, ix, qk, nq, sink,
										(uint32_t) npad);
		});
	};

	if (nq == 0)
		return cudaSuccess;
	if (!smem_point_fits(ix))
		return cudaErrorInvalidValue;
	if constexpr (Sink::TILED)
		return launch(IntC<EYTZ_CSR_SMEM_Q>());
	else
	{
		if (q_per_thread >= 4)
			return launch(IntC<4>());
		if (q_per_thread == 2)
			return launch(IntC<2>());
		return launch(IntC<1>());
	}
}

/* The same storing out[j] */
template <class KT>
static inline cudaError_t
launch_point_smem(const Idx<KT> &ix, const KT *qk, uint64_t nq, uint64_t *out, int q_per_thread,
				  int blocks_per_sm, cudaStream_t st)
{
	StoreSink	s = {out};

	return launch_point_smem_sink<KT, KT, StoreSink>(ix, qk, nq, s, q_per_thread, blocks_per_sm, st);
}

/* Launch configuration of k_cluster_tile_write; *nclusters: clusters resident at once (0: none fit) */
static inline cudaError_t
cluster_config(cudaLaunchConfig_t *lc, cudaLaunchAttribute *at, int *nclusters, cudaStream_t st)
{
	auto		kern = k_cluster_tile_write<EYTZ_CTILE_BLOCK>;
	size_t		smem = (size_t) 8 << EYTZ_CTILE_SLICE_LOG2;
	cudaError_t e;

	*nclusters = 0;
	if ((e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int) smem)) != cudaSuccess)
		return e;
	*lc = cudaLaunchConfig_t {};
	at->id = cudaLaunchAttributeClusterDimension;
	at->val.clusterDim.x = EYTZ_CTILE_CLUSTER;
	at->val.clusterDim.y = 1;
	at->val.clusterDim.z = 1;
	lc->blockDim = dim3(EYTZ_CTILE_BLOCK);
	lc->dynamicSmemBytes = smem;
	lc->stream = st;
	lc->attrs = at;
	lc->numAttrs = 1;
	lc->gridDim = dim3(EYTZ_CTILE_CLUSTER * 1024);
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

/* out[idx[j]] := val[j] where idx is partitioned on id >> EYTZ_CTILE_LOG2 (needs have_clusters()) */
static inline cudaError_t
cluster_tile_write(const uint32_t *idx, const uint64_t *val, uint64_t n, uint64_t *out, cudaStream_t st)
{
	uint64_t	tiles = (n + (1u << EYTZ_CTILE_LOG2) - 1) >> EYTZ_CTILE_LOG2;
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
	lc.gridDim = dim3(EYTZ_CTILE_CLUSTER * nclusters);
	return cudaLaunchKernelEx(&lc, k_cluster_tile_write<EYTZ_CTILE_BLOCK>, idx, val, n, out);
}
/* bits of the bucket (id >> EYTZ_CTILE_LOG2) */
static inline uint32_t
part_bits(uint64_t nq)
{
	uint32_t	b = bits_of(nq > 1 ? nq - 1 : 1);

	return b > (uint32_t) EYTZ_CTILE_LOG2 ? b - (uint32_t) EYTZ_CTILE_LOG2 : 0;
}

/* k_point_part over every fan-out and layout (sorted keys skeys with query ids ids) */
template <class KT, bool POS, int ITEMS>
static inline cudaError_t
launch_point_part(const Idx<KT> &ix, const KT *skeys, const uint32_t *ids, uint64_t nq, uint32_t shift,
				  uint32_t nb, uint32_t *cursor, uint32_t *dst_id, uint64_t *dst_val, cudaStream_t st)
{
	uint64_t	need = (nq + EYTZ_PART_BLOCK * ITEMS - 1) / (EYTZ_PART_BLOCK * ITEMS);
	uint32_t	full = eytz_shape(ix.n, ix.k).full_levels;

	return dispatch_nk_aos(ix, [&](auto nk, auto aos) {
		auto		kern = k_point_part<KT, nk.value, aos.value, POS, EYTZ_PART_BLOCK, ITEMS>;
		int			grid = 0;
		cudaError_t e;

		if ((e = grid_for(kern, EYTZ_PART_BLOCK, 0, 0, &grid)) != cudaSuccess)
			return e;
		if ((uint64_t) grid > need)
			grid = (int) need;
		kern<<<grid, EYTZ_PART_BLOCK, 0, st>>>(ix, skeys, ids, nq, full, shift, nb, cursor, dst_id, dst_val);
		return cudaGetLastError();
	});
}

/* ---------------------------------------------------------------------------
 * CSR results: count, exclusive scan, fill (one pipeline for library and benchmark)
 * ------------------------------------------------------------------------- */

/* Device buffers of a CSR lookup of nq queries */
struct CsrBufs
{
	uint64_t   *cnt;			/* nq + 1 */
	uint64_t   *off;			/* nq + 1: offsets, off[nq] = total */
	uint64_t   *first;			/* nq: first match (or the point result) of each query */
	uint64_t   *out;			/* total: the matches */
	void	   *temp;			/* csr_temp_bytes */
	size_t		temp_bytes;
};

/* Workspace of a CSR lookup: the count pass's scan, or a CsrSink's tiles (of at least 32 queries) */
static inline cudaError_t
csr_temp_bytes(uint64_t nq, size_t *bytes)
{
	size_t		tiles = 0;
	cudaError_t e;

	*bytes = 0;
	if ((e = cub::DeviceScan::ExclusiveSum(NULL, *bytes, (uint64_t *) NULL, (uint64_t *) NULL, (int) (nq + 1))) !=
		cudaSuccess ||
		(e = CsrSink::TileState::AllocationSize((int) (nq / 32 + 1), tiles)) != cudaSuccess)
		return e;
	*bytes = std::max(*bytes, tiles);
	return cudaSuccess;
}

/* A CsrSink writing b.off and b.out over warp tiles of tq queries, initialised on st (its state in b.temp) */
static inline cudaError_t
csr_sink_init(const CsrBufs &b, uint64_t nq, uint32_t tq, CsrSink *sink, cudaStream_t st)
{
	int			ntiles = (int) ((nq + tq - 1) / tq);
	size_t		need = 0;
	cudaError_t e;

	if ((e = CsrSink::TileState::AllocationSize(ntiles, need)) != cudaSuccess)
		return e;
	if (tq < 32 || need > b.temp_bytes)
		return cudaErrorInvalidValue;
	sink->off = b.off;
	sink->out = b.out;
	if ((e = sink->ts.Init(ntiles, b.temp, need)) != cudaSuccess)
		return e;
	k_csr_tiles_init<<<(ntiles + 255) / 256, 256, 0, st>>>(*sink, ntiles);
	return cudaGetLastError();
}

/*
 * CSR results of point lookups with the whole index in shared memory in
 * one pass: the walk compacts its own results (k_point_smem with a
 * CsrSink, tiles of 32 x EYTZ_CSR_SMEM_Q queries), writing b.off (nq + 1)
 * and b.out (room for nq).  Needs smem_point_fits(ix).
 */
template <class KT>
static inline cudaError_t
csr_point_smem(const Idx<KT> &ix, const KT *qk, uint64_t nq, const CsrBufs &b, cudaStream_t st)
{
	CsrSink		sink;
	cudaError_t e;

	if (nq == 0)
		return cudaMemsetAsync(b.off, 0, 8, st);
	if ((e = csr_sink_init(b, nq, 32 * EYTZ_CSR_SMEM_Q, &sink, st)) != cudaSuccess)
		return e;
	return launch_point_smem_sink<KT, KT, CsrSink>(ix, qk, nq, sink, EYTZ_CSR_SMEM_Q, 0, st);
}

/*
 * CSR results of point results already in query order (b.first: payload
 * or NO_MATCH), in one pass instead of count, scan and fill: b.off and b.out.
 */
static inline cudaError_t
csr_compact_first(uint64_t nq, const CsrBufs &b, cudaStream_t st)
{
	constexpr int BLOCK = EYTZ_SINGLE_BLOCK,
				Q = EYTZ_COMPACT_Q;
	CsrSink		sink;
	int			grid = 0;
	uint64_t	need = (nq + 32 * Q * (BLOCK / 32) - 1) / (32 * Q * (BLOCK / 32));	/* a tile per warp */
	cudaError_t e;

	if (nq == 0)
		return cudaMemsetAsync(b.off, 0, 8, st);
	if ((e = csr_sink_init(b, nq, 32 * Q, &sink, st)) != cudaSuccess ||
		(e = grid_for(k_csr_compact<BLOCK, Q>, BLOCK, 0, 0, &grid)) != cudaSuccess)
		return e;
	if ((uint64_t) grid > need)
		grid = (int) need;
	return launch_kernel(k_csr_compact<BLOCK, Q>, true, grid, BLOCK, 0, st, (const uint64_t *) b.first, nq, sink);
}

/*
 * Count pass and scan: b.off gets the offsets (b.off[nq] the total).
 * from_first: the point results are already in b.first (one match at most
 * per query: a point fast path ran), so only count them.
 */
template <class KT>
static inline cudaError_t
csr_count(const Idx<KT> &ix, const Qs<KT> &q, const Cfg &cfg, bool from_first, const CsrBufs &b, cudaStream_t st)
{
	size_t		tb = b.temp_bytes;
	cudaError_t e;

	if (from_first)
	{
		if (q.nq > 0)
			k_point_counts<<<grid1d(q.nq), 256, 0, st>>>(b.first, q.nq, b.cnt);
		e = cudaGetLastError();
	}
	else
	{
		Outs		o = {NULL, b.cnt, b.first};

		e = launch_lookup<KT, MODE_COUNT>(ix, q, o, cfg, st);
	}
	if (e != cudaSuccess)
		return e;
	if ((e = cudaMemsetAsync(b.cnt + q.nq, 0, 8, st)) != cudaSuccess)
		return e;
	return cub::DeviceScan::ExclusiveSum(b.temp, tb, b.cnt, b.off, (int) (q.nq + 1), st);
}

/* Fill pass: the matches of query i to b.out[b.off[i] ..) (b.out holds b.off[nq]) */
template <class KT>
static inline cudaError_t
csr_fill(const Idx<KT> &ix, const Qs<KT> &q, const Cfg &cfg, const CsrBufs &b, cudaStream_t st)
{
	Outs		o = {b.out, b.off, b.first};

	return launch_lookup<KT, MODE_FILL>(ix, q, o, cfg, st);
}

}								/* namespace eytzk */

#endif							/* EYTZ_DISPATCH_CUH */
