/*
 * eytz_layout.h
 *		Eytzinger layout math shared by the extension (C) and the kernels (CUDA).
 *
 * This header is the one definition of where an entry of a static index lives.
 * It is plain C99 with no PostgreSQL or CUDA includes, so both sides compile
 * the same formulas; the index pages and the GPU copy hold the same order.
 *
 * The layout (paper "Bigger Is Not Better", sections 3, 4 and 6.1):
 *	- the fan-out is k = 2^p + 1 (p = 0 gives k = 2, Eytzinger binary search,
 *	  EBS; p >= 1 gives Eytzinger k-ary search, EKS); a node holds k - 1 keys;
 *	- slots are 0-based and a tree level is one contiguous run: level l starts
 *	  at slot k^l - 1 and holds (k - 1) * k^l slots;
 *	- the child j (0 <= j < k) of the node that starts at slot s starts at
 *	  s * k + (j + 1) * (k - 1);
 *	- for n entries the top m levels are full (m is the largest with
 *	  k^m - 1 <= n) and the remaining b = n - (k^m - 1) entries fill the bottom
 *	  level from the left; every level is sorted, so a range is one run per
 *	  level (the per-level range scan of section 5).
 *
 * eytz_sorted_rank() is the one-read-one-write inverse permutation: slot t of
 * the Eytzinger array is loaded from position eytz_sorted_rank(t) of the
 * sorted array, independently for every t.
 */
#ifndef EYTZ_LAYOUT_H
#define EYTZ_LAYOUT_H

#include <stdint.h>

#ifdef __CUDACC__
#define EYTZ_HD static __host__ __device__ __forceinline__
#else
#define EYTZ_HD static inline
#endif

/* Fan-outs the layout supports: k = 2^p + 1 for p in [0, EYTZ_MAX_FANOUT_LOG2] */
#define EYTZ_MAX_FANOUT_LOG2	5
#define EYTZ_MAX_FANOUT			33
#define EYTZ_DEFAULT_FANOUT		9

/* Shape of an Eytzinger array of n entries with fan-out k */
typedef struct EytzShape
{
	uint64_t	n;				/* entries */
	uint32_t	k;				/* fan-out; k - 1 keys per node */
	uint32_t	full_levels;	/* m: levels that are completely filled */
	uint32_t	levels;			/* m, plus one if a partial bottom level exists */
	uint64_t	k_pow_m;		/* k^m */
	uint64_t	bottom;			/* b = n - (k^m - 1): entries on the partial level */
} EytzShape;

/* Is k a fan-out of the form 2^p + 1 that the layout supports? */
EYTZ_HD int
eytz_fanout_valid(uint32_t k)
{
	return k >= 2 && k <= EYTZ_MAX_FANOUT && ((k - 1) & (k - 2)) == 0;
}

EYTZ_HD EytzShape
eytz_shape(uint64_t n, uint32_t k)
{
	EytzShape	s;
	uint64_t	pw = 1;
	uint32_t	m = 0;

	/* largest m with k^m - 1 <= n, i.e. k^m <= n + 1 */
	while (pw <= (n + 1) / k)
	{
		pw *= k;
		m++;
	}
	s.n = n;
	s.k = k;
	s.full_levels = m;
	s.k_pow_m = pw;
	s.bottom = n - (pw - 1);
	s.levels = m + (s.bottom > 0 ? 1 : 0);
	return s;
}

/* First slot of level l: k^l - 1 */
EYTZ_HD uint64_t
eytz_level_start(uint32_t level, uint32_t k)
{
	uint64_t	pw = 1;

	while (level-- > 0)
		pw *= k;
	return pw - 1;
}

/* One past the last slot of level l that exists in an array of n entries */
EYTZ_HD uint64_t
eytz_level_end(uint32_t level, uint32_t k, uint64_t n)
{
	uint64_t	end = eytz_level_start(level + 1, k);

	return end < n ? end : n;
}

/* Level of slot t: the largest l with k^l - 1 <= t */
EYTZ_HD uint32_t
eytz_level_of(uint64_t t, uint32_t k)
{
	uint64_t	pw = 1;
	uint32_t	l = 0;

	while (pw <= (t + 1) / k)
	{
		pw *= k;
		l++;
	}
	return l;
}

/* First slot of child j of the node that starts at slot s */
EYTZ_HD uint64_t
eytz_child(uint64_t s, uint32_t j, uint32_t k)
{
	return s * k + (uint64_t) (j + 1) * (k - 1);
}

/*
 * Stride of level l (< m) in the perfect tree of the m full levels: k^(m-l-1).
 * Hoisted out of per-slot loops by callers that walk a level at a time.
 */
EYTZ_HD uint64_t
eytz_level_stride(const EytzShape *shape, uint32_t level)
{
	uint64_t	stride = 1;
	uint32_t	d;

	for (d = level + 1; d < shape->full_levels; d++)
		stride *= shape->k;
	return stride;
}

/*
 * Position in the ascending array of the entry at offset i of level l, where
 * stride = eytz_level_stride(shape, l) (ignored on the partial bottom level).
 */
EYTZ_HD uint64_t
eytz_rank_in_level(const EytzShape *shape, uint32_t level, uint64_t i,
				   uint64_t stride)
{
	uint64_t	km1 = shape->k - 1;

	if (level >= shape->full_levels)
	{
		/* partial bottom level: before bottom node q come q upper entries */
		return i + i / km1;
	}
	else
	{
		/* rank among the m full levels, then skip the bottom entries before it */
		uint64_t	p = stride * (1 + i + i / km1) - 1;
		uint64_t	before = km1 * (p + 1);

		return p + (before < shape->bottom ? before : shape->bottom);
	}
}

/*
 * Position in the ascending array of the entry that Eytzinger slot t holds
 * (the inverse permutation of sections 4 and 6.1).  t < shape->n.
 */
EYTZ_HD uint64_t
eytz_sorted_rank(const EytzShape *shape, uint64_t t)
{
	uint32_t	l = eytz_level_of(t, shape->k);

	return eytz_rank_in_level(shape, l, t - eytz_level_start(l, shape->k),
							  eytz_level_stride(shape, l));
}

/*
 * GPU copies: an AoS tile holds 2^p entries, one node (k - 1 entries) but
 * at least 8 bytes of keys (alignment of the payloads behind them).
 */
EYTZ_HD uint32_t
eytz_aos_tile_log2(uint32_t k, int key_width)
{
	uint32_t	p = 0;

	while ((1u << p) < k - 1)
		p++;
	if (((uint32_t) key_width << p) % 8 != 0)
		p = 1;
	return p;
}

/* GPU copies: slots to allocate, n rounded up to whole nodes and whole AoS tiles */
EYTZ_HD uint64_t
eytz_padded_slots(uint64_t n, uint32_t k, int key_width)
{
	uint64_t	unit = (uint64_t) 1 << eytz_aos_tile_log2(k, key_width);

	if (unit < k - 1)
		unit = k - 1;
	return (n + unit - 1) / unit * unit;
}

/*
 * A TID (block, offset) packed into 48 bits of a 64-bit payload, ordered like
 * ItemPointerCompare.  The GPU copy stores payloads in this form.
 */
EYTZ_HD uint64_t
eytz_pack_tid(uint32_t block, uint16_t offset)
{
	return ((uint64_t) block << 16) | offset;
}

EYTZ_HD uint32_t
eytz_tid_block(uint64_t packed)
{
	return (uint32_t) (packed >> 16);
}

EYTZ_HD uint16_t
eytz_tid_offset(uint64_t packed)
{
	return (uint16_t) (packed & 0xFFFF);
}

#endif							/* EYTZ_LAYOUT_H */
