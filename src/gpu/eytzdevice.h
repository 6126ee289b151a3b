/*
 * eytzdevice.h
 *		A backend's resident GPU copies of eytzgpu indexes and its GPU
 *		lookups (eytzdevice.c), on copies held through eytzgpucopy.h.
 *
 * Two kinds of callers: CREATE INDEX (eytz_device_build) and the lookup
 * seam (eytzlookup.c), which makes a generation of an index resident from
 * the layout arrays it passes (eytz_device_upload) and looks batches up in
 * it (eytz_device_lookup).  This file calls neither of them back: it knows
 * no image, no pending list and no executor.
 */
#ifndef EYTZDEVICE_H
#define EYTZDEVICE_H

#include "eytzam.h"
#include "eytzmatchsort.h"

/* eytzgpu.device */
#define EYTZ_DEVICE_AUTO	0
#define EYTZ_DEVICE_GPU		1
#define EYTZ_DEVICE_CPU		2

/* GUCs: eytzgpu.device, eytzgpu.gpu_memory_limit (MB) */
extern int	eytz_device_mode;
extern int	eytz_gpu_memory_limit_mb;

typedef struct EytzGpuEntry EytzGpuEntry;

/* Defines the GUCs above */
extern void eytz_device_init(void);

/*
 * Can the GPU be used?  false with *why (if why is not NULL) saying why not,
 * e.g. "no NVIDIA driver is loaded".  The GPU is probed once per backend.
 */
extern bool eytz_device_available(char **why);

/*
 * Say once per backend that eytzgpu.device = 'gpu' cannot be honoured (a
 * WARNING); at 'auto' nothing above DEBUG1 is said.
 */
extern void eytz_device_report_unavailable(const char *why);

/* Is this generation of index resident (no pin taken)? */
extern bool eytz_device_resident(Relation index, uint64 generation);

/* The resident copy of this generation of index, pinned; NULL if none */
extern EytzGpuEntry *eytz_device_pin(Relation index, uint64 generation);

/*
 * GPU memory an upload of the layout meta describes would take, and
 * whether the cache can make room for it under eytzgpu.gpu_memory_limit
 * (false with *why).
 */
extern bool eytz_device_room(Relation index, const EytzMetaPageData *meta,
							 const EytzInclude *inc, char **why);

/*
 * Upload the layout meta describes (keys of meta->key_width bytes and packed
 * TIDs, nentries each, in Eytzinger order) as that generation of index and
 * pin it, with its included columns (inc->ncols arrays of values in slot
 * order and NULL bitmaps, as the CPU image holds them) and the keys again
 * as a column, so that join batches can return a match's values.  NULL with
 * *why when it fails or does not fit.
 */
extern EytzGpuEntry *eytz_device_upload(Relation index,
										const EytzMetaPageData *meta,
										const void *keys, const uint64 *tids,
										const EytzInclude *inc,
										char *const *values,
										uint8 *const *nulls, char **why);

/*
 * The tombstones the layout a copy came from counted (meta.ndead): the copy
 * lacks those VACUUM made since
 */
extern uint64 eytz_device_ndead(const EytzGpuEntry *entry);

extern void eytz_device_release(EytzGpuEntry *entry);

/*
 * Look up queries first..nq-1 of a batch (closed ranges [lo[i], hi[i]] of
 * encoded keys, asked by rows[i]) on the GPU, in two calls so that the GPU
 * works while the caller does something else (the executor reads its next
 * batch of outer rows).  eytz_device_lookup_start sends the queries (copied
 * into the library's pinned inputs: the caller's arrays may change at once)
 * and returns; false with *why when the GPU refused them.
 * eytz_device_lookup_finish waits and returns the matches of the longest
 * prefix of the queries that fits in max: out[0..nout) sorted by (tid,
 * row), tombstones dropped, and nq_done the queries answered (0 when the
 * first one alone has more than max matches: the caller walks it
 * elsewhere).  The GPU sorts, narrows and drops tombstones
 * (eytzgpu_lookup_join); false with *why on failure (nothing returned).
 * With a stage (else NULL), the matches' values, gathered on the GPU, go to
 * stage positions stage_from + j and staged says so (false: the copy has no
 * values to give).
 *
 * One batch at a time can be in flight on a copy, and scans of one backend
 * share copies: another scan's call on the same copy first collects the
 * answer in flight into its job (its out and stage, which must stay valid
 * until finish or cancel).  A job's memory must outlive it:
 * eytz_device_lookup_cancel (no allocation, no ereport: also for the error
 * path) waits for its batch and forgets the answer.
 */
typedef struct EytzGpuJob
{
	EytzGpuEntry *entry;		/* the copy its batch runs on, NULL when no
								 * batch is in flight or waiting to be taken */
	bool		collected;		/* answered: the result is below */
	EytzMatch  *out;
	EytzStage  *stage;
	uint32		stage_from;
	bool		ok;
	EytzGpuAnswer answer;
	char		why[256];
} EytzGpuJob;

extern bool eytz_device_lookup_start(EytzGpuEntry *entry, EytzGpuJob *job,
									 const uint64 *lo, const uint64 *hi,
									 const uint32 *rows, uint32 nq,
									 uint32 first, uint32 max, EytzMatch *out,
									 EytzStage *stage, uint32 stage_from,
									 char **why);
extern bool eytz_device_lookup_finish(EytzGpuJob *job, EytzGpuAnswer *answer,
									  char **why);
extern void eytz_device_lookup_cancel(EytzGpuJob *job);

/* Drop the resident copies of an index (InvalidOid: of every index) */
extern void eytz_device_invalidate(Oid indexoid);

/* CREATE INDEX on the GPU (see eytzdevice.c) */
extern bool eytz_device_build(EytzPairs *pairs, int key_width, int fanout,
							  Relation index, uint64 generation);

#endif							/* EYTZDEVICE_H */
