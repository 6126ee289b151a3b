/*
 * eytz_reorder.cuh
 *		Chunked global reordering of lookups (EYTZGPU_REORDER_GLOBAL): one
 *		radix sort of composite keys orders lookups by key within chunks, so
 *		that a chunk's result writes stay in an L2-sized window.  Measured
 *		slower than no reordering on the H100 (README), kept as a flag.
 */
#ifndef EYTZ_REORDER_CUH
#define EYTZ_REORDER_CUH

#include "eytz_prim.cuh"

namespace eytzk
{

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

}								/* namespace eytzk */

#endif							/* EYTZ_REORDER_CUH */
