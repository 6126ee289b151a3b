/*
 * eytzgpu_cuda_test.h
 *		The GPU library's entry points and flags that only the kernels'
 *		tests and benchmarks use (cuda/test, cuda/bench), beside the API the
 *		extension calls (eytzgpu_cuda.h, which this includes): the general
 *		CSR lookup, the synchronous join, the pinned input arrays, and the
 *		flags that force a layout, a search strategy or poisoned outputs.
 *		Implemented in cuda/eytzgpu_*.cu like the rest; the extension's C
 *		code does not include this header.
 */
#ifndef EYTZGPU_CUDA_TEST_H
#define EYTZGPU_CUDA_TEST_H

#include "eytzgpu_cuda.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * Flags for upload/build (resident layout) and for lookup (strategy).
 * Zero means "let the library choose" everywhere.  EYTZGPU_UNIQUE and
 * EYTZGPU_POISON also apply to join batches (eytzgpu_lookup_join_submit).
 */
#define EYTZGPU_LAYOUT_AUTO		0x0000u
#define EYTZGPU_LAYOUT_SOA		0x0001u	/* keys[] and payloads[] apart */
#define EYTZGPU_LAYOUT_AOS		0x0002u	/* per node: k-1 keys, then k-1 payloads */
#define EYTZGPU_NO_EBS_COPY		0x0004u	/* no binary (k = 2) copy of tiny indexes (README) */

#define EYTZGPU_STRAT_AUTO		0x0000u	/* composite strategy (paper section 8) */
#define EYTZGPU_STRAT_SINGLE	0x0010u	/* one thread per lookup: EBS if k = 2, else EKS single */
#define EYTZGPU_STRAT_GROUP		0x0020u	/* EKS group: k-1 threads per lookup (k > 2) */
#define EYTZGPU_STRAT_EBS		0x0030u	/* EBS on the binary copy (or the index if k = 2) */
#define EYTZGPU_STRAT_MASK		0x00F0u
#define EYTZGPU_REORDER_AUTO	0x0000u
#define EYTZGPU_REORDER_NONE	0x0100u
#define EYTZGPU_REORDER_LOCAL	0x0200u	/* block-local sort of the lookup keys */
#define EYTZGPU_REORDER_GLOBAL	0x0300u	/* device-wide radix sort of the lookup keys */
#define EYTZGPU_REORDER_MASK	0x0300u
#define EYTZGPU_PIN_AUTO		0x0000u
#define EYTZGPU_PIN_OFF			0x0400u	/* no shared-memory pinning of top levels */
#define EYTZGPU_PIN_ON			0x0800u
#define EYTZGPU_PIN_MASK		0x0C00u
#define EYTZGPU_POISON			0x1000u	/* testing: fill device outputs with 0xFF first */
#define EYTZGPU_UNIQUE			0x2000u	/* the caller knows the keys are unique: one match per point at most */

/*
 * Result of one lookup batch: CSR over the nq queries.  The matches of query
 * i are payloads[offsets[i] .. offsets[i+1]), in no particular order (they come
 * grouped by tree level).  offsets has nq+1 entries, offsets[nq] == total.
 * Both arrays live in pinned host memory owned by the handle and stay valid
 * until the next lookup on that handle or its free.
 */
typedef struct EytzGpuResult
{
	const uint64_t *offsets;
	const uint64_t *payloads;
	uint64_t	total;
	uint32_t	strategy;		/* EYTZGPU_STRAT_* | EYTZGPU_REORDER_* | EYTZGPU_PIN_* used */
	float		kernel_ms;		/* device time of sort/count/scan/fill or the one pass (CUDA events) */
	float		total_ms;		/* wall time of the call, transfers included */
} EytzGpuResult;

/*
 * Look up nq queries: range [lo[i], hi[i]] (inclusive; empty if hi < lo) of
 * the index's key width.  hi == NULL means point lookups (hi = lo).  Every
 * match is returned (count pass, exclusive scan, fill: nothing is truncated).
 * flags: EYTZGPU_STRAT_*, EYTZGPU_REORDER_*, EYTZGPU_PIN_*, 0 = automatic.
 * nq must be below 2^31; nq = 0 is fine.
 */
extern int	eytzgpu_lookup(EytzGpuIndex *idx, const void *lo, const void *hi,
						   uint64_t nq, uint32_t flags, EytzGpuResult *res,
						   char *errbuf, size_t errlen);

/*
 * eytzgpu_lookup_join_submit (see there), then eytzgpu_lookup_join_wait
 */
extern int	eytzgpu_lookup_join(EytzGpuIndex *idx, const uint64_t *lo, const uint64_t *hi,
								const uint32_t *rows, uint64_t nq, uint64_t max_matches,
								uint32_t flags, EytzGpuJoinResult *res,
								char *errbuf, size_t errlen);

/*
 * Pinned input arrays for the next submitted batch of up to nq queries
 * (*hi only when hi is not NULL): a caller that fills them and passes them
 * to eytzgpu_lookup_join(_submit) saves the copy into pinned memory.  Valid
 * until that submit; not while another batch's inputs are still wanted.
 */
extern int	eytzgpu_lookup_join_inputs(EytzGpuIndex *idx, uint64_t nq, uint64_t **lo,
									   uint64_t **hi, uint32_t **rows,
									   char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif							/* EYTZGPU_CUDA_TEST_H */
