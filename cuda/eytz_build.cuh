/*
 * eytz_build.cuh
 *		Build kernels: the one-read-one-write permutation of sorted entries
 *		into Eytzinger order (shift-based rank equal to eytz_sorted_rank, which
 *		the tests check), SoA to AoS tiles, and the way back to sorted order.
 */
#ifndef EYTZ_BUILD_CUH
#define EYTZ_BUILD_CUH

#include "eytz_prim.cuh"

namespace eytzk
{

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

/* Eytzinger keys back to sorted order (keys only) */
template <class KT>
__global__ void
k_unpermute_keys(PermShape ps, const KT *ek, KT *sk)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < ps.n; t += stride)
		sk[fast_rank(ps, t)] = ek[t];
}

/* inv[rank(t)] = t: the slot of each sorted rank */
static __global__ void
k_slot_of_rank(PermShape ps, uint32_t *inv)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < ps.n; t += stride)
		inv[fast_rank(ps, t)] = (uint32_t) t;
}

/* map[t] = inv[rank(t)] for the slots t of another layout (ps) of the same entries */
static __global__ void
k_slot_map(PermShape ps, const uint32_t *inv, uint32_t *map)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < ps.n; t += stride)
		map[t] = inv[fast_rank(ps, t)];
}

/*
 * *bad := 1 if sorted keys sk repeat a key or a payload equals NO_MATCH (sp
 * may be NULL): the point fast paths need unique keys and their miss marker.
 */
template <class KT>
__global__ void
k_points_bad(const KT *sk, const uint64_t *sp, uint64_t n, unsigned *bad)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		if ((i + 1 < n && sk[i] == sk[i + 1]) || (sp && sp[i] == NO_MATCH))
			*bad = 1;
}

}								/* namespace eytzk */

#endif							/* EYTZ_BUILD_CUH */
