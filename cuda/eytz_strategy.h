/*
 * eytz_strategy.h
 *		The composite strategy (paper section 8, tuned on the H100): which
 *		kernels answer a lookup batch, as a pure function of the facts about
 *		the index and the batch.
 *
 * Plain C99, header-only, no CUDA: the library calls it before it launches
 * anything, and the CPU test (test/cpu_test.c, run by CI) checks its choices
 * without a GPU.  The constants and where they come from: eytz_tuning.h.
 */
#ifndef EYTZ_STRATEGY_H
#define EYTZ_STRATEGY_H

#include <stdint.h>

#include "eytzgpu_cuda_test.h"
#include "eytz_layout.h"
#include "eytz_tuning.h"

/* What the strategy looks at */
typedef struct EytzPlanInput
{
	uint64_t	n;				/* entries of the index */
	int			key_width;		/* 4 or 8 */
	uint32_t	k;				/* fan-out */
	int			have_ebs_copy;	/* the handle keeps a binary (k = 2) copy */
	int			points_ok;		/* unique keys (checked, or EYTZGPU_UNIQUE), no payload equal to NO_MATCH */
	int			point;			/* a point batch (no hi array) */
	int			wide;			/* the sampled ranges are wide (eytz_wide_ranges) */
	uint64_t	nq;				/* lookups in the batch */
	uint32_t	flags;			/* EYTZGPU_STRAT_*, _REORDER_*, _PIN_* (0: automatic) */
	uint64_t	chunk;			/* the queries reach the device in chunks of this many (0: all at once) */
} EytzPlanInput;

/* Point fast paths: one result per query, no count pass */
#define EYTZ_PATH_KERNELS	0	/* the lookup kernels of strat (CSR count and fill) */
#define EYTZ_PATH_SMEM		1	/* the whole index in shared memory (k_point_smem) */
#define EYTZ_PATH_SORTED	2	/* globally sorted lookups (sorted_point) */

/* What runs */
typedef struct EytzPlan
{
	int			path;			/* EYTZ_PATH_* */
	int			smem_on_copy;	/* EYTZ_PATH_SMEM runs on the binary copy */
	int			on_copy;		/* the other paths run on the binary copy (EBS on k > 2) */
	uint32_t	strat;			/* EYTZGPU_STRAT_SINGLE, _GROUP or _EBS */
	uint32_t	reord;			/* EYTZGPU_REORDER_NONE, _LOCAL or _GLOBAL */
	uint32_t	pin;			/* EYTZGPU_PIN_ON or _OFF */
	uint32_t	pin_bytes;		/* shared memory for pinned top levels (0: none) */
	int			chunked;		/* EYTZ_PATH_KERNELS points: each chunk walked as soon as it arrives */
} EytzPlan;

/* Does the whole index of n keys fit the shared-memory point kernel (node size nk)? */
static inline int
eytz_smem_point_fits(uint64_t n, uint32_t nk, int key_width)
{
	return n > 0 && (n + nk - 1) / nk * nk * (uint64_t) key_width <= EYTZ_SMEM_POINT_MAX;
}

/*
 * Do the sampled ranges hold many matches each?  Expected hits of [lo, hi]
 * is its width times the index's key density; from EYTZ_WIDE_RANGE_HITS on,
 * group scans with coalesced loads win (paper 5.1, measured in README).
 * lo/hi hold elements of elem_width bytes (4 or 8), read as keys of
 * key_width bytes (the low bytes: keys are narrowed by truncation).
 */
static inline int
eytz_wide_ranges(const void *lo, const void *hi, int elem_width, int key_width, uint64_t nq,
				 uint64_t minkey, uint64_t maxkey, uint64_t n)
{
	const int	S = 64;
	uint64_t	mask = key_width == 4 ? 0xFFFFFFFFull : ~0ull;
	double		density;
	int			wide = 0,
				i;

	if (nq == 0 || n == 0 || !hi)
		return 0;
	density = n / ((double) maxkey - (double) minkey + 1.0);
	for (i = 0; i < S; i++)
	{
		uint64_t	j = (nq - 1) * (uint64_t) i / S;
		uint64_t	a = (elem_width == 4 ? ((const uint32_t *) lo)[j] : ((const uint64_t *) lo)[j]) & mask;
		uint64_t	b = (elem_width == 4 ? ((const uint32_t *) hi)[j] : ((const uint64_t *) hi)[j]) & mask;
		double		w = b >= a ? (double) b - (double) a + 1.0 : 0.0;

		wide += w * density >= EYTZ_WIDE_RANGE_HITS;
	}
	return wide * 2 > S;
}

/*
 * The composite strategy (README "Composite strategy"), measured on the
 * H100: groups win ranges of 32+ expected hits; EBS with its top levels
 * pinned wins tiny indexes; above that one thread per lookup reading whole
 * nodes with 16-byte loads (EKS single) wins at every size, skew and order.
 * Point batches on unique keys take the fast paths: the whole index in
 * shared memory (the binary copy when it fits: it beat EKS there), or
 * globally sorted lookups from EYTZ_GSORT_MIN_KEY_BYTES of keys and
 * EYTZ_GSORT_MIN_BATCH lookups; an explicit global reordering of such points
 * also takes the sorted path.  Points that reach the device in chunks of at
 * least EYTZ_CHUNK_WALK_MIN queries (join batches staged from host memory)
 * are instead walked chunk by chunk by the point kernels while the next
 * chunks are sent: the walks hide under the transfers, where the sorted
 * path needs the whole batch first.  Explicit flags choose any other
 * combination.
 */
static inline EytzPlan
eytz_plan(const EytzPlanInput *in)
{
	EytzPlan	p;
	uint32_t	strat = in->flags & EYTZGPU_STRAT_MASK;
	uint32_t	reord = in->flags & EYTZGPU_REORDER_MASK;
	uint32_t	pin = in->flags & EYTZGPU_PIN_MASK;
	int			all_auto = (in->flags & (EYTZGPU_STRAT_MASK | EYTZGPU_REORDER_MASK | EYTZGPU_PIN_MASK)) == 0;
	int			tiny = in->n * (uint64_t) in->key_width <= EYTZ_EBS_COPY_MAX_KEY_BYTES;
	int			have_ebs = in->k == 2 || in->have_ebs_copy;
	uint64_t	pad_bytes = eytz_padded_slots(in->n, in->k, in->key_width) * (uint64_t) in->key_width;

	p.path = EYTZ_PATH_KERNELS;
	p.smem_on_copy = 0;
	p.chunked = 0;
	if (strat == EYTZGPU_STRAT_AUTO)
	{
		if (!in->point && in->wide && in->k > 2)
			strat = EYTZGPU_STRAT_GROUP;
		else if (tiny && have_ebs)
			strat = EYTZGPU_STRAT_EBS;
		else
			strat = EYTZGPU_STRAT_SINGLE;
	}
	if (in->point && in->points_ok && in->nq > 0)
	{
		int			copy_fits = in->k != 2 && in->have_ebs_copy &&
			eytz_smem_point_fits(in->n, 1, in->key_width);

		p.smem_on_copy = copy_fits;
		if (all_auto && (copy_fits || eytz_smem_point_fits(in->n, in->k - 1, in->key_width)))
			p.path = EYTZ_PATH_SMEM;
		else if (all_auto && in->chunk >= EYTZ_CHUNK_WALK_MIN && in->chunk < in->nq)
			p.chunked = 1;
		else if (all_auto && in->n * (uint64_t) in->key_width >= EYTZ_GSORT_MIN_KEY_BYTES &&
				 in->nq >= EYTZ_GSORT_MIN_BATCH)
			p.path = EYTZ_PATH_SORTED;
		else if (reord == EYTZGPU_REORDER_GLOBAL && strat != EYTZGPU_STRAT_GROUP)
			p.path = EYTZ_PATH_SORTED;
		if (p.path != EYTZ_PATH_KERNELS && all_auto)
		{
			strat = EYTZGPU_STRAT_SINGLE;
			reord = p.path == EYTZ_PATH_SORTED ? EYTZGPU_REORDER_GLOBAL : EYTZGPU_REORDER_NONE;
			pin = p.path == EYTZ_PATH_SORTED ? EYTZGPU_PIN_OFF : EYTZGPU_PIN_ON;
		}
	}
	if (strat == EYTZGPU_STRAT_EBS && !have_ebs)
		strat = EYTZGPU_STRAT_SINGLE;
	if (strat == EYTZGPU_STRAT_GROUP && in->k == 2)
		strat = EYTZGPU_STRAT_SINGLE;
	if (reord == EYTZGPU_REORDER_AUTO)
		reord = EYTZGPU_REORDER_NONE;
	if (pin == EYTZGPU_PIN_AUTO)
		pin = strat == EYTZGPU_STRAT_GROUP ? EYTZGPU_PIN_OFF : EYTZGPU_PIN_ON;
	p.on_copy = strat == EYTZGPU_STRAT_EBS && in->k != 2;
	p.strat = strat;
	p.reord = reord;
	p.pin = pin;
	/* a big pinned copy means one block per SM: worth it only for (nearly) the whole index */
	p.pin_bytes = 0;
	if (pin == EYTZGPU_PIN_ON)
		p.pin_bytes = strat == EYTZGPU_STRAT_EBS || pad_bytes <= EYTZ_PIN_BYTES_SMALL ? EYTZ_PIN_BYTES_SMALL
			: EYTZ_PIN_BYTES_LARGE;
	return p;
}

#endif							/* EYTZ_STRATEGY_H */
