/*
 * eytz_prim.cuh
 *		Primitives of the GPU side: the device view of an index (Idx), node
 *		reads, query and output descriptors, pinning, grid sizing and the one
 *		fan-out dispatcher (a run-time fan-out to a compile-time node size).
 *
 * Layered like CUB: these primitives; kernels by family (eytz_range.cuh,
 * eytz_point.cuh, eytz_build.cuh, eytz_reorder.cuh); one dispatch layer
 * (eytz_dispatch.cuh, eytz_sorted.cuh, eytz_join.cuh).  The layout math comes
 * from eytz_layout.h, the measured constants from eytz_tuning.h.
 */
#ifndef EYTZ_PRIM_CUH
#define EYTZ_PRIM_CUH

#include <stdint.h>
#include <string.h>
#include <type_traits>
#include <cub/cub.cuh>

#include "eytz_layout.h"
#include "eytz_tuning.h"

namespace eytzk
{

enum Mode
{
	MODE_POINT = 0,
	MODE_COUNT = 1,
	MODE_FILL = 2
};

static constexpr uint64_t NO_MATCH = ~0ull;
static constexpr unsigned FULL = 0xffffffffu;

static constexpr uint32_t NONE32 = 0xffffffffu;

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
	bool		slots;			/* a match's "payload" is its slot (joins that gather included columns) */
};

/*
 * The device view of an index of n entries and fan-out k: SoA arrays (keys,
 * pays) or AoS tiles (aos).  The one place an Idx is assembled.
 */
template <class KT>
static inline Idx<KT>
make_idx(const void *keys, const uint64_t *pays, const unsigned char *aos, uint64_t n, uint32_t k)
{
	Idx<KT>		ix;

	memset(&ix, 0, sizeof(ix));
	ix.keys = aos ? NULL : (const KT *) keys;
	ix.pays = aos ? NULL : pays;
	ix.aos = aos;
	ix.n = n;
	ix.k = k;
	while ((1u << ix.p) < k - 1)
		ix.p++;
	ix.levels = eytz_shape(n, k).levels;
	ix.tp = eytz_aos_tile_log2(k, sizeof(KT));
	ix.tile_bytes = (uint32_t) ((sizeof(KT) + 8) << ix.tp);
	return ix;
}

template <int V>
using IntC = std::integral_constant<int, V>;
template <bool V>
using BoolC = std::integral_constant<bool, V>;

/*
 * The fan-out dispatcher: f(IntC<k - 1>()) with the node size known at
 * compile time (unrolled node reads), for every fan-out the layout supports.
 */
template <class F>
static inline cudaError_t
dispatch_nk(uint32_t k, F &&f)
{
	switch (k)
	{
		case 2:
			return f(IntC<1>());
		case 3:
			return f(IntC<2>());
		case 5:
			return f(IntC<4>());
		case 9:
			return f(IntC<8>());
		case 17:
			return f(IntC<16>());
		case 33:
			return f(IntC<32>());
		default:
			return cudaErrorInvalidValue;
	}
}

/* The same with the layout as well: f(IntC<k - 1>(), BoolC<AoS>()) */
template <class KT, class F>
static inline cudaError_t
dispatch_nk_aos(const Idx<KT> &ix, F &&f)
{
	return dispatch_nk(ix.k, [&](auto nk) {
		return ix.aos ? f(nk, BoolC<true>()) : f(nk, BoolC<false>());
	});
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
	if (ix.slots)
		return t;
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

/* Copy the top npin slots' keys into shared memory (cache pinning, 7.3) */
template <class KT>
__device__ __forceinline__ void
load_pin(const Idx<KT> &ix, KT *pin, uint64_t npin)
{
	for (uint64_t t = threadIdx.x; t < npin; t += blockDim.x)
		pin[t] = t < ix.n ? *key_ptr(ix, t) : (KT) 0;
	__syncthreads();
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

template <class T>
__global__ void
k_iota(T *a, uint64_t n)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride)
		a[t] = (T) t;
}

/* Grid of a grid-stride kernel over n items in 256-thread blocks */
static inline unsigned
grid1d(uint64_t n)
{
	uint64_t	g = (n + 255) / 256;

	return (unsigned) (g < 1 ? 1 : g > 65535 * 8 ? 65535 * 8 : g);
}

/* Persistent grid: the blocks of kernel resident at once (at most blocks_per_sm per SM, 0 = no cap) */
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

static inline uint32_t
bits_of(uint64_t v)
{
	uint32_t	b = 0;

	while (b < 64 && (v >> b) != 0)
		b++;
	return b;
}

}								/* namespace eytzk */

#endif							/* EYTZ_PRIM_CUH */
