/*
 * eytzgpucopy.h
 *		A copy of an index on a GPU (eytzgpucopy.c): the only C file that
 *		calls the GPU library of cuda/eytzgpu_cuda.h.
 *
 * Two callers hold copies: a backend's resident cache (eytzdevice.c) and
 * the service worker (eytzservicecopies.c).  Both upload a layout with its
 * included columns, choose the columns join batches return, submit a batch
 * and wait for its matches, and turn the library's failures into
 * sentences, through these functions.  Nothing here allocates or raises:
 * failures come back as an EytzGpuFailure for the caller to word and act on.
 */
#ifndef EYTZGPUCOPY_H
#define EYTZGPUCOPY_H

#include "eytzam.h"
#include "eytzmatchsort.h"

/* What a GPU call that failed was doing and what the library said */
typedef struct EytzGpuFailure
{
	const char *what;			/* "GPU upload", "GPU lookup", ... */
	bool		out_of_memory;	/* comes back; anything else wants a fresh
								 * context */
	char		detail[256];	/* the code's text[: the library's message] */
} EytzGpuFailure;

/*
 * The failure as one sentence into buf: "WHAT failed: DETAIL", or with
 * device >= 0 "WHAT on GPU DEVICE failed: DETAIL"
 */
extern void eytz_gpu_failure_text(char *buf, size_t len,
								  const EytzGpuFailure *failure, int device);

/*
 * An index's layout on one GPU, with its included columns and (when it has
 * some, and there is room for one more column) the keys again as a column,
 * so that join batches can return a match's values
 */
typedef struct EytzGpuCopy
{
	void	   *handle;			/* the library's EytzGpuIndex; NULL: none */
	int			key_width;
	int			ninclude;		/* included columns attached */
	int			key_column;		/* the keys' column, -1: none attached */
	int			widths[EYTZ_MAX_INCLUDE];
	uint32		mask;			/* the columns join batches return now */
} EytzGpuCopy;

/*
 * Can the default GPU be used?  false with why (len bytes) saying why not,
 * e.g. "no NVIDIA driver is loaded" or "eytzgpu was built without CUDA"
 */
extern bool eytz_gpu_probe(char *why, size_t len);

/* The GPUs CUDA shows this process (at least one after a probe answered; 0 without CUDA) */
extern int	eytz_gpu_device_count(void);

/* GPU device's name ("GPU N" when the library cannot tell) */
extern void eytz_gpu_device_name(int device, char *name, size_t len);

/* Device memory an upload of the layout meta describes takes, about */
extern uint64 eytz_gpu_copy_estimate(const EytzMetaPageData *meta,
									 const EytzInclude *inc);
/* The same for a CREATE INDEX left resident: keys and payloads only */
extern uint64 eytz_gpu_build_estimate(uint64 n, int key_width);

/*
 * Upload the layout meta describes (nentries keys of key_width bytes and
 * packed TIDs, in Eytzinger order) to device (-1: the default one) into
 * copy, with the included columns (inc->ncols arrays of values in slot
 * order and NULL bitmaps) and the keys as a column.  *bytes: the device
 * memory the copy holds.  false with *failure (nothing held) when it fails.
 */
extern bool eytz_gpu_copy_upload(EytzGpuCopy *copy, int device,
								 const EytzMetaPageData *meta,
								 const void *keys, const uint64 *tids,
								 const EytzInclude *inc, char *const *values,
								 uint8 *const *nulls, uint64 *bytes,
								 EytzGpuFailure *failure);

/*
 * Which columns the next join batches return: the keys and included
 * columns cols[0..ncols) when want (and the copy has the keys attached),
 * else none
 */
extern bool eytz_gpu_copy_select(EytzGpuCopy *copy, bool want, int ncols,
								 const int *cols, EytzGpuFailure *failure);

/*
 * The shape of a batch of n queries, worked out once by the caller that
 * submits it: *points when every lo[i] == hi[i] or hi is NULL (submit hi =
 * NULL then: no count pass on a unique index), *ascending when rows[i] <
 * rows[i + 1] throughout (a cheaper sort of the matches)
 */
extern void eytz_gpu_batch_shape(const uint64 *lo, const uint64 *hi,
								 const uint32 *rows, uint32 n,
								 bool *points, bool *ascending);

/*
 * Send a batch of nq queries (closed ranges [lo[i], hi[i]] of encoded keys,
 * hi NULL for points, asked by rows[i]) and return while the GPU works.
 * The GPU answers the longest prefix of the queries whose matches fit in
 * max, sorted by (tid, row), tombstones dropped.  The inputs are copied:
 * the caller's arrays may change at once.  One batch at a time per copy.
 */
extern bool eytz_gpu_copy_submit(EytzGpuCopy *copy, const uint64 *lo,
								 const uint64 *hi, const uint32 *rows,
								 uint32 nq, uint32 max, bool ascending,
								 EytzGpuFailure *failure);

/*
 * Has the batch submitted finished, so that eytz_gpu_copy_wait will not
 * block?  (Also true when it failed: the wait says how.)
 */
extern bool eytz_gpu_copy_ready(EytzGpuCopy *copy);

/*
 * Wait for the batch submitted and fill *answer; unless out is NULL (the
 * answer is not wanted), the matches go to out[0..nout) with match j's
 * unused = from + j, and when columns were selected their keys and values
 * to stage positions from + j (stage->have, if not NULL, set) and
 * answer->staged says so.
 */
extern bool eytz_gpu_copy_wait(EytzGpuCopy *copy, EytzMatch *out,
							   EytzStage *stage, uint32 from,
							   EytzGpuAnswer *answer, EytzGpuFailure *failure);

/*
 * A batch's answer as the GPU returned it, for a caller that passes it on
 * (the service, into a backend's window): n matches' packed TIDs and rows
 * and, when columns were selected, the keys (key_width bytes each) and per
 * copy column c its values (widths[c] bytes each) and NULL flags (a byte
 * each, nonzero for NULL).  From the GPU valid until the copy's next wait;
 * a backend builds one over its window to convert the service's answer.
 */
typedef struct EytzGpuRawAnswer
{
	uint64		n;
	const uint64 *tids;
	const uint32 *rows;
	const char *keys;			/* NULL: no columns selected */
	int			key_width;
	const char *values[EYTZ_MAX_INCLUDE];
	const uint8 *nulls[EYTZ_MAX_INCLUDE];
	int			widths[EYTZ_MAX_INCLUDE];
} EytzGpuRawAnswer;

/* eytz_gpu_copy_wait, the answer left as the GPU returned it */
extern bool eytz_gpu_copy_wait_raw(EytzGpuCopy *copy, EytzGpuRawAnswer *raw,
								   EytzGpuAnswer *answer,
								   EytzGpuFailure *failure);

/*
 * A raw answer's matches into out[0..n) (match j's unused = from + j) and,
 * with keys and a stage, their keys and the stage's columns (stage->cols[j]
 * names the raw answer's column) to stage positions from + j (stage->have,
 * if not NULL, set).  Plain C: also without CUDA.
 */
extern void eytz_gpu_raw_to_matches(const EytzGpuRawAnswer *raw, EytzMatch *out,
									EytzStage *stage, uint32 from);

/* Free the copy's GPU memory (none held: nothing to do) */
extern void eytz_gpu_copy_free(EytzGpuCopy *copy);

/*
 * CREATE INDEX on the default GPU: sort n (key, TID) pairs (keys of
 * key_width bytes, TIDs ascending) and permute them into Eytzinger order,
 * into out_keys and out_tids.  With keep (else NULL) the layout stays
 * resident as that copy and *bytes says its device memory.
 */
extern bool eytz_gpu_build(const void *keys, const uint64 *tids, uint64 n,
						   int key_width, int fanout, void *out_keys,
						   uint64 *out_tids, EytzGpuCopy *keep, uint64 *bytes,
						   EytzGpuFailure *failure);

#endif							/* EYTZGPUCOPY_H */
