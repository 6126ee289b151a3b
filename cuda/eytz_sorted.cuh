/*
 * eytz_sorted.cuh
 *		Dispatch of globally sorted point lookups (sorted_point): a CUB radix
 *		sort of (key, query id) on the top significant key bits, lookups in
 *		sorted order (neighbouring lanes walk neighbouring paths, the deep
 *		levels and payloads stream from DRAM), and the write-back of the
 *		results to query order (README "Point fast paths").
 */
#ifndef EYTZ_SORTED_CUH
#define EYTZ_SORTED_CUH

#include "eytz_dispatch.cuh"

namespace eytzk
{

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
	if (*bytes < ((size_t) 4 << EYTZ_PART_MAX_BITS))
		*bytes = (size_t) 4 << EYTZ_PART_MAX_BITS;	/* cursors of the fused write-back */
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

/*
 * Step 1: w.skeys/w.perm := lo sorted on its top key_bits significant bits
 * (of [mn, mx]), carrying vals (the query ids in w.iota when NULL; made
 * there unless iota_ready).
 */
template <class KT>
static inline cudaError_t
sorted_point_sort(const KT *lo, const uint32_t *vals, uint64_t nq, KT mn, KT mx, int key_bits,
				  const SortedWork<KT> &w, bool iota_ready, cudaStream_t st)
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
	if (!vals && !iota_ready)
	{
		k_iota<<<grid1d(nq), 256, 0, st>>>(w.iota, nq);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return e;
	}
	return cub::DeviceRadixSort::SortPairs(w.temp, tb, lo, w.skeys, vals ? vals : w.iota, w.perm, (int) nq,
										   (int) bb, (int) hb, st);
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
 * Step 3: out[perm[j]] := tmp[j].  scatter_bits > 0: a one-pass partition on
 * the id's top scatter_bits bits, then a scatter inside windows of
 * nq >> scatter_bits results.  scatter_bits = -1: partition on all id bits
 * above EYTZ_SCATTER_TILE_LOG2, then whole tiles through shared memory; -3: on
 * the bits above EYTZ_CTILE_LOG2, then the cluster tile write (have_clusters()).
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
		uint32_t	tl = scatter_bits == -3 ? EYTZ_CTILE_LOG2 : EYTZ_SCATTER_TILE_LOG2;
		uint64_t	tiles = (nq + (1u << EYTZ_SCATTER_TILE_LOG2) - 1) >> EYTZ_SCATTER_TILE_LOG2;

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

/* Steps 2 and 3 fused (scatter_bits = -2; needs part_bits(nq) <= EYTZ_PART_MAX_BITS and have_clusters()) */
template <class KT, bool POS, int ITEMS>
static inline cudaError_t
sorted_point_fused(const Idx<KT> &ix, uint64_t nq, uint64_t *out, const SortedWork<KT> &w, cudaStream_t st)
{
	uint32_t	pb = part_bits(nq);
	cudaError_t e;

	if (nq == 0)
		return cudaSuccess;
	if (pb > (uint32_t) EYTZ_PART_MAX_BITS || w.temp_bytes < ((size_t) 4 << pb))
		return cudaErrorInvalidValue;
	if ((e = cudaMemsetAsync(w.temp, 0, (size_t) 4 << pb, st)) != cudaSuccess)
		return e;
	if ((e = launch_point_part<KT, POS, ITEMS>(ix, w.skeys, w.perm, nq, EYTZ_CTILE_LOG2, 1u << pb, (uint32_t *) w.temp,
											   w.perm2, w.pay2, st)) != cudaSuccess)
		return e;
	return cluster_tile_write(w.perm2, w.pay2, nq, out, st);
}

/*
 * Globally sorted point lookups: out[i] = payload of lo[i] or NO_MATCH (POS:
 * its lower-bound slot).  key_bits: significant key bits sorted on (16: two
 * radix passes); scatter_bits: 8 (one partition pass), 0 = direct writes,
 * -1 = partition into tiles of 2^EYTZ_SCATTER_TILE_LOG2 ids written whole, -3 =
 * into cluster tiles of 2^EYTZ_CTILE_LOG2, -2 = cluster tiles partitioned by the
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
	if (scatter_bits == -2 && part_bits(nq) > (uint32_t) EYTZ_PART_MAX_BITS)
		scatter_bits = -3;
	if ((e = sorted_point_sort<KT>(lo, NULL, nq, mn, mx, key_bits, w, iota_ready, st)) != cudaSuccess)
		return e;
	if (scatter_bits == -2)
		return sorted_point_fused<KT, POS, EYTZ_PART_ITEMS>(ix, nq, out, w, st);
	if ((e = sorted_point_lookup<KT, POS>(ix, nq, out, cfg, scatter_bits, w, st)) != cudaSuccess)
		return e;
	return sorted_point_scatter<KT>(nq, out, scatter_bits, w, st);
}

}								/* namespace eytzk */

#endif							/* EYTZ_SORTED_CUH */
