/*
 * eytzgpu_cuda.h
 *		C API of the GPU side of eytzgpu (implemented in cuda/eytzgpu_*.cu).
 *
 * Plain C99, no CUDA types: the extension includes it from C.  Every function
 * returns an EYTZGPU_* code (0 = ok) and, on failure, writes a message into the
 * caller's errbuf (errlen bytes, always NUL-terminated when errlen > 0).
 * Nothing here aborts, exits or prints.  No CUDA call happens before the first
 * call of a function below (no static constructors), and a machine without a
 * driver gets EYTZGPU_ENODEV, so the caller can fall back to the CPU.
 *
 * The layout is the one of eytz_layout.h: slot t of an index of n entries and
 * fan-out k holds keys[t] / payloads[t] exactly as the index pages store them.
 * Keys are order-preserving unsigned integers of 4 or 8 bytes; payloads are
 * opaque 64-bit values (the extension packs TIDs with eytz_pack_tid).
 *
 * Threading: a handle must be used by one thread at a time; different handles
 * may be used from different threads.  All calls use the current CUDA device
 * of the handle (the device given at creation).
 */
#ifndef EYTZGPU_CUDA_H
#define EYTZGPU_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Return codes */
#define EYTZGPU_OK			0
#define EYTZGPU_ENODEV		1	/* no usable GPU or driver: fall back to the CPU */
#define EYTZGPU_ENOMEM		2	/* device (or pinned host) memory exhausted */
#define EYTZGPU_EINVAL		3	/* bad argument (width, fan-out, NULL, size) */
#define EYTZGPU_EFAIL		4	/* any other CUDA failure (launch, copy, ...) */

/* Payload written for a miss by point-mode helpers (never part of CSR output) */
#define EYTZGPU_NO_MATCH	UINT64_MAX

/* Included columns a resident index can carry (eytzgpu_attach_columns) */
#define EYTZGPU_MAX_COLUMNS	16

/*
 * Flags of eytzgpu_lookup_join_submit; 0 lets the library choose everything
 * (upload and build take 0).  The flags that force a layout or a search
 * strategy, for the kernels' tests and benchmarks, are eytzgpu_cuda_test.h's.
 */
#define EYTZGPU_ROWS_ASCENDING	0x4000u	/* join: rows[i] < rows[i + 1] (cheaper sort; verified) */

/* What probe reports */
typedef struct EytzGpuInfo
{
	char		name[256];
	int			device;
	int			sm_count;
	int			cc_major;
	int			cc_minor;
	uint64_t	l2_bytes;
	uint64_t	total_mem;
	uint64_t	free_mem;
} EytzGpuInfo;

/* Opaque resident index */
typedef struct EytzGpuIndex EytzGpuIndex;

/*
 * Is a usable GPU present?  device < 0 means device 0.  Fills *info (may be
 * NULL).  EYTZGPU_ENODEV when there is no driver or no device.
 */
extern int	eytzgpu_probe(int device, EytzGpuInfo *info, char *errbuf, size_t errlen);

/*
 * How many GPUs this process sees (CUDA_VISIBLE_DEVICES respected): the
 * devices 0 .. *count - 1 that every device argument below names.
 * EYTZGPU_ENODEV (and *count 0) when there is no driver or no device.
 */
extern int	eytzgpu_device_count(int *count, char *errbuf, size_t errlen);

/*
 * Upload an index already in Eytzinger order (fan-out k, n entries; keys of
 * key_width 4 or 8 bytes, host arrays of n each).  flags: 0 (the layout
 * flags are eytzgpu_cuda_test.h's).
 * *out receives the handle; *device_bytes (may be NULL) the device memory it
 * holds.  n may be 0 (every lookup then returns no match).
 */
extern int	eytzgpu_upload(int device, const void *keys, const uint64_t *payloads,
						   uint64_t n, int key_width, uint32_t k, uint32_t flags,
						   EytzGpuIndex **out, uint64_t *device_bytes,
						   char *errbuf, size_t errlen);

/*
 * Build on the GPU from n unsorted (key, payload) pairs given in ascending
 * payload order (a heap scan's TID order): stable radix sort by key (so equal
 * keys stay in payload order), then the one-read-one-write permutation into
 * Eytzinger order for fan-out k.  The result is copied into out_keys (n *
 * key_width bytes) and out_payloads (n entries), byte-identical to a CPU build
 * that sorts by (key, payload) and applies eytz_sorted_rank.  If out is not
 * NULL the index also stays resident and *out receives its handle.  Either
 * out_keys/out_payloads may be NULL when only the handle is wanted.
 * n must be below 2^31.
 */
extern int	eytzgpu_build(int device, const void *keys, const uint64_t *payloads,
						  uint64_t n, int key_width, uint32_t k, uint32_t flags,
						  void *out_keys, uint64_t *out_payloads,
						  EytzGpuIndex **out, uint64_t *device_bytes,
						  char *errbuf, size_t errlen);

/*
 * Result of one join-shaped batch (eytzgpu_lookup_join_wait): the matches
 * of the first nq_done queries as pairs (payloads[j], rows[j]), j < nmatch, sorted
 * by payload, then row; tombstones (a payload whose block part, payload >>
 * 16, is 0xFFFFFFFF) are dropped.  For each attached column c in the mask
 * of eytzgpu_join_columns, columns[c] holds the match's value (nmatch values
 * of the column's width, in match order) and column_nulls[c] one byte per
 * match (1 = NULL); both NULL for the other columns.  All arrays live in
 * pinned host memory owned by the handle (one of its two result sets) and
 * stay valid until the wait of the next batch returns (or the handle is
 * freed).
 */
typedef struct EytzGpuJoinResult
{
	const uint64_t *payloads;
	const uint32_t *rows;
	const void *columns[EYTZGPU_MAX_COLUMNS];
	const uint8_t *column_nulls[EYTZGPU_MAX_COLUMNS];
	uint64_t	nmatch;
	uint64_t	nq_done;		/* queries answered: a prefix of the batch */
	uint32_t	strategy;		/* EYTZGPU_STRAT_* | EYTZGPU_REORDER_* | EYTZGPU_PIN_* used */
	int			point_mode;		/* one match per query at most: no count pass ran */
	float		kernel_ms;		/* device time of the kernels (lookups, sort) after the copies in, CUDA
								 * events */
	float		transfer_ms;	/* device time of the copies in and out (with the walks of batches
								 * walked chunk by chunk as they arrive) */
	float		total_ms;		/* wall time from the submit to the end of the wait */
} EytzGpuJoinResult;

/*
 * Look up a batch for a join: query i is the range [lo[i], hi[i]] of 64-bit
 * encoded keys (hi == NULL: points, hi = lo), asked for by the caller's row
 * rows[i].  Keys are narrowed to the index's width on the GPU (the low 4
 * bytes for a 4-byte index).  The answer covers the longest prefix of the
 * queries, in the caller's order, whose matches (tombstones counted) number
 * at most max_matches: the result's nq_done queries, 0 when query 0 alone
 * has more (walk it on the CPU).  Point batches take the point fast paths, with no
 * count pass, when the index's keys are unique (checked at upload/build) or
 * flags has EYTZGPU_UNIQUE (eytzgpu_cuda_test.h).
 * flags: EYTZGPU_ROWS_ASCENDING: the caller's rows ascend strictly in query
 * order, as an outer batch's do, and the matches are then sorted by payload
 * alone, stably, a cheaper sort than by (payload, row); a batch whose rows
 * do not ascend fails with EYTZGPU_EINVAL at its wait.  nq < 2^31;
 * payloads must not equal EYTZGPU_NO_MATCH.
 *
 * The call starts the batch and returns while the GPU works; at most one
 * batch is in flight per handle (eytzgpu_lookup_join_wait collects it).
 * The inputs are copied into the pinned input set of this batch, so the
 * caller may reuse its arrays at once.  The results of the previous batch
 * stay readable until this batch's wait returns.  Ranges (or duplicate
 * keys) need a count pass, after which this call waits for the count before
 * it returns (to size the results).
 */
extern int	eytzgpu_lookup_join_submit(EytzGpuIndex *idx, const uint64_t *lo, const uint64_t *hi,
									   const uint32_t *rows, uint64_t nq, uint64_t max_matches,
									   uint32_t flags, char *errbuf, size_t errlen);

/*
 * Has the batch in flight finished on the GPU, so that its wait returns
 * without blocking (but for a batch whose prefix held more matches than the
 * small path sorts: its wait runs a second pass)?  *ready: 1 yes, 0 not
 * yet.  A failure of the batch is reported by its wait: *ready is 1 then.
 * EYTZGPU_EINVAL with no batch in flight.
 */
extern int	eytzgpu_lookup_join_ready(EytzGpuIndex *idx, int *ready);

/* Wait for the batch in flight and describe its result (EYTZGPU_EINVAL if none) */
extern int	eytzgpu_lookup_join_wait(EytzGpuIndex *idx, EytzGpuJoinResult *res,
									 char *errbuf, size_t errlen);

/*
 * Attach m included columns to a resident index (replacing any attached
 * before; m = 0 detaches them): values[c] holds the index's n values of
 * widths[c] bytes (1, 2, 4 or 8) in slot order, nulls[c] a bitmap (bit
 * slot % 8 of byte slot / 8, 1 = NULL) or NULL when the column has no NULLs.
 * m <= EYTZGPU_MAX_COLUMNS.  *device_bytes (may be NULL) receives the device
 * memory the handle holds now, the columns included.  The mask of the join
 * batches is reset to 0.
 */
extern int	eytzgpu_attach_columns(EytzGpuIndex *idx, int m, const int *widths, const void *const *values,
								   const uint8_t *const *nulls, uint64_t *device_bytes,
								   char *errbuf, size_t errlen);

/*
 * Which attached columns the next join batches return (bit c = column c),
 * 0 = none (payloads and rows only).  EYTZGPU_EINVAL for a bit of a column
 * that is not attached.
 */
extern int	eytzgpu_join_columns(EytzGpuIndex *idx, uint32_t mask, char *errbuf, size_t errlen);

/* Release a handle and all its device and pinned memory.  NULL is a no-op. */
extern void eytzgpu_free(EytzGpuIndex *idx);

/* Text for a return code */
extern const char *eytzgpu_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif							/* EYTZGPU_CUDA_H */
