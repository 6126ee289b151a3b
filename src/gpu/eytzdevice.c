/*
 * eytzdevice.c
 *		GPU residency of eytzgpu indexes in a backend and its GPU lookups
 *		(interface: eytzdevice.h), on copies held through eytzgpucopy.h.
 *
 * A backend keeps at most eytzgpu.gpu_memory_limit of index copies on the
 * GPU, keyed by (index, relfilenode, generation): a merge bumps the
 * generation, REINDEX/TRUNCATE change the relfilenode, so a stale copy is
 * never used.  Relcache invalidations free copies early; copies a CREATE
 * INDEX/REINDEX left resident survive the invalidations of their own
 * transaction and die with it if it aborts.  Entries are pinned while a scan
 * uses them.  The GPU is probed lazily in a backend, never in the
 * postmaster (CUDA state does not survive fork()).
 *
 * The interface is "make generation G resident from these arrays" and "look
 * up this batch", so it can later move into a background worker serving all
 * backends.  Without CUDA at build time every call reports "no GPU".
 */
#include "postgres.h"

#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzcache.h"
#include "eytzdevice.h"
#include "eytzgpucopy.h"

int			eytz_device_mode = EYTZ_DEVICE_AUTO;
int			eytz_gpu_memory_limit_mb = 4096;

static bool unavailable_warned = false;

static const struct config_enum_entry device_options[] = {
	{"auto", EYTZ_DEVICE_AUTO, false},
	{"gpu", EYTZ_DEVICE_GPU, false},
	{"cpu", EYTZ_DEVICE_CPU, false},
	{NULL, 0, false}
};

void
eytz_device_init(void)
{
	DefineCustomEnumVariable("eytzgpu.device",
							 "Where eytzgpu looks up join batches and builds indexes: auto, gpu or cpu.",
							 "auto uses the GPU where there is one; gpu also falls back to the CPU, with a WARNING once per session.",
							 &eytz_device_mode, EYTZ_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("eytzgpu.gpu_memory_limit",
							"GPU memory a backend may use for resident eytzgpu indexes.",
							NULL, &eytz_gpu_memory_limit_mb, 4096, 0, INT_MAX / 2,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
}

/*
 * Said once per backend: a WARNING when eytzgpu.device = 'gpu' asked for
 * the GPU, DEBUG1 at 'auto' (a machine without a GPU is a normal one).
 */
void
eytz_device_report_unavailable(const char *why)
{
	if (eytz_device_mode == EYTZ_DEVICE_GPU && !unavailable_warned)
	{
		unavailable_warned = true;
		ereport(WARNING,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("eytzgpu.device is \"gpu\" but no GPU can be used, index builds and joins run on the CPU"),
				 errdetail("The GPU cannot be used: %s.", why),
				 errhint("Set eytzgpu.device to \"auto\" to use the GPU only where there is one.")));
	}
	else
		ereport(DEBUG1,
				(errmsg_internal("eytzgpu runs on the CPU: %s", why)));
}

#ifdef EYTZ_HAVE_CUDA

struct EytzGpuEntry
{
	EytzCacheEntry ce;			/* first: the cache links entries by it */
	EytzGpuCopy copy;
	bool		own_xact;		/* built by the current transaction */
	uint64		ndead;			/* tombstones of the layout uploaded */
	EytzGpuJob *inflight;		/* the job whose batch the copy runs */
};

static int	gpu_state = -1;		/* -1 not probed, 0 absent, 1 present */
static char gpu_why[256];
static bool xact_cb_registered = false;

/* The cache's destructor: free the GPU copy, then the entry */
static void
entry_free(EytzCacheEntry *ce)
{
	EytzGpuEntry *e = (EytzGpuEntry *) ce;

	/* a job's scan keeps its copy pinned until it has finished or cancelled */
	Assert(e->inflight == NULL);
	eytz_gpu_copy_free(&e->copy);
	pfree(e);
}

static EytzCache gpu_cache = {NULL, 0, 0, entry_free};

bool
eytz_device_available(char **why)
{
	if (gpu_state < 0)
		gpu_state = eytz_gpu_probe(gpu_why, sizeof(gpu_why)) ? 1 : 0;
	if (gpu_state == 0 && why)
		*why = gpu_why;
	return gpu_state == 1;
}

/* eytzgpu.gpu_memory_limit in bytes */
static uint64
gpu_limit(void)
{
	return (uint64) eytz_gpu_memory_limit_mb * 1024 * 1024;
}

/*
 * At transaction end, a copy built by CREATE INDEX/REINDEX in it is dropped
 * on abort and kept as an ordinary cached copy on commit.
 */
static void
device_xact_cb(XactEvent event, void *arg)
{
	EytzCacheEntry *ce = gpu_cache.head;

	while (ce)
	{
		EytzCacheEntry *next = ce->next;
		EytzGpuEntry *e = (EytzGpuEntry *) ce;

		if (e->own_xact)
		{
			if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
				eytz_cache_unlink(&gpu_cache, ce);
			else if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
				e->own_xact = false;
		}
		ce = next;
	}
}

/* the copy a CREATE INDEX/REINDEX left survives its own transaction's invalidations */
static bool
built_by_this_xact(EytzCacheEntry *ce)
{
	return ((EytzGpuEntry *) ce)->own_xact;
}

void
eytz_device_invalidate(Oid indexoid)
{
	eytz_cache_drop(&gpu_cache, indexoid, built_by_this_xact);
}

/*
 * A new entry for copy (bytes of GPU memory), linked into the cache with
 * refcount pins if it fits the limit; else NULL and the copy is freed.
 */
static EytzGpuEntry *
entry_add(Relation index, uint64 generation, const EytzGpuCopy *copy,
		  uint64 bytes, int refcount, bool own_xact)
{
	EytzGpuEntry *e = MemoryContextAllocZero(TopMemoryContext, sizeof(EytzGpuEntry));

	if (!xact_cb_registered)
	{
		RegisterXactCallback(device_xact_cb, NULL);
		xact_cb_registered = true;
	}
	e->copy = *copy;
	e->own_xact = own_xact;
	if (!eytz_cache_add(&gpu_cache, &e->ce, index, generation, bytes, refcount, gpu_limit()))
	{
		entry_free(&e->ce);
		return NULL;
	}
	return e;
}

/* A GPU failure as one sentence, palloc'd */
static char *
gpu_error(const EytzGpuFailure *failure)
{
	char		buf[512];

	eytz_gpu_failure_text(buf, sizeof(buf), failure, -1);
	return pstrdup(buf);
}

bool
eytz_device_resident(Relation index, uint64 generation)
{
	return eytz_cache_find(&gpu_cache, index, generation);
}

EytzGpuEntry *
eytz_device_pin(Relation index, uint64 generation)
{
	return (EytzGpuEntry *) eytz_cache_pin(&gpu_cache, index, generation);
}

bool
eytz_device_room(Relation index, const EytzMetaPageData *meta,
				 const EytzInclude *inc, char **why)
{
	uint64		estimate = eytz_gpu_copy_estimate(meta, inc);

	if (estimate > gpu_limit() || !eytz_cache_make_room(&gpu_cache, estimate, gpu_limit()))
	{
		*why = psprintf("index \"%s\" needs about " UINT64_FORMAT " MB of GPU memory, more than eytzgpu.gpu_memory_limit leaves",
						RelationGetRelationName(index), estimate / (1024 * 1024) + 1);
		return false;
	}
	return true;
}

EytzGpuEntry *
eytz_device_upload(Relation index, const EytzMetaPageData *meta,
				   const void *keys, const uint64 *tids, const EytzInclude *inc,
				   char *const *values, uint8 *const *nulls, char **why)
{
	EytzGpuEntry *e;
	EytzGpuCopy copy;
	EytzGpuFailure failure;
	uint64		bytes = 0;

	if (!eytz_device_room(index, meta, inc, why))
		return NULL;
	if (!eytz_gpu_copy_upload(&copy, -1, meta, keys, tids, inc, values, nulls,
							  &bytes, &failure))
	{
		*why = gpu_error(&failure);
		return NULL;
	}
	e = entry_add(index, meta->generation, &copy, bytes, 1, false);
	if (e == NULL)
	{
		*why = psprintf("index \"%s\" takes " UINT64_FORMAT " MB of GPU memory, more than eytzgpu.gpu_memory_limit leaves",
						RelationGetRelationName(index), bytes / (1024 * 1024) + 1);
		return NULL;
	}
	e->ndead = meta->ndead;
	return e;
}

uint64
eytz_device_ndead(const EytzGpuEntry *e)
{
	return e->ndead;
}

void
eytz_device_release(EytzGpuEntry *e)
{
	eytz_cache_release(&gpu_cache, &e->ce);
}

/*
 * Wait for the batch in flight on e, if any, and put its answer into its
 * job: the matches (and values) into the job's out (and stage) unless it
 * was cancelled (out NULL), the rest into its fields.  Neither allocates
 * nor raises: eytz_device_lookup_cancel runs on the error path too.
 */
static void
collect(EytzGpuEntry *e)
{
	EytzGpuJob *job = e->inflight;
	EytzGpuFailure failure;

	if (job == NULL)
		return;
	e->inflight = NULL;
	job->collected = true;
	job->ok = eytz_gpu_copy_wait(&e->copy, job->out, job->stage,
								 job->stage_from, &job->answer, &failure);
	if (!job->ok)
		eytz_gpu_failure_text(job->why, sizeof(job->why), &failure, -1);
}

/*
 * Start looking up queries first..nq-1 of a batch on the GPU with the
 * library's join-shaped call: it narrows the keys, drops tombstones and
 * answers the longest prefix of the queries whose matches fit in max,
 * sorted by (tid, row), so that the matches are copied out as they come
 * (eytz_device_lookup_finish).  Points go as points (no count pass on a
 * unique index), and rows that ascend (an outer batch's always do) are said
 * to (a cheaper sort).
 */
bool
eytz_device_lookup_start(EytzGpuEntry *e, EytzGpuJob *job, const uint64 *lo,
						 const uint64 *hi, const uint32 *rows, uint32 nq,
						 uint32 first, uint32 max, EytzMatch *out,
						 EytzStage *stage, uint32 stage_from, char **why)
{
	EytzGpuFailure failure;
	bool		point;
	bool		ascending;

	memset(job, 0, sizeof(EytzGpuJob));
	job->out = out;
	job->stage = stage;
	job->stage_from = stage_from;
	/* another scan's batch on this copy: its answer goes to its job */
	collect(e);
	if (first >= nq)
	{
		job->entry = e;
		job->collected = true;
		job->ok = true;
		return true;
	}
	if (!eytz_gpu_copy_select(&e->copy, stage != NULL,
							  stage ? stage->ncols : 0,
							  stage ? stage->cols : NULL, &failure))
	{
		*why = gpu_error(&failure);
		return false;
	}
	eytz_gpu_batch_shape(lo + first, hi ? hi + first : NULL, rows + first,
						 nq - first, &point, &ascending);
	if (!eytz_gpu_copy_submit(&e->copy, lo + first, point ? NULL : hi + first,
							  rows + first, nq - first, max, ascending,
							  &failure))
	{
		*why = gpu_error(&failure);
		return false;
	}
	job->entry = e;
	e->inflight = job;
	return true;
}

bool
eytz_device_lookup_finish(EytzGpuJob *job, EytzGpuAnswer *answer, char **why)
{
	Assert(job->entry != NULL);
	if (!job->collected)
		collect(job->entry);
	job->entry = NULL;
	if (!job->ok)
	{
		memset(answer, 0, sizeof(EytzGpuAnswer));
		*why = pstrdup(job->why);
		return false;
	}
	*answer = job->answer;
	return true;
}

void
eytz_device_lookup_cancel(EytzGpuJob *job)
{
	if (job->entry == NULL)
		return;
	if (!job->collected)
	{
		job->out = NULL;
		collect(job->entry);
	}
	job->entry = NULL;
}

/*
 * CREATE INDEX on the GPU: sort the (key, TID) pairs and permute them into
 * Eytzinger order there.  pairs holds keys and TIDs in heap-scan order;
 * returns false (and the caller builds on the CPU) when there is no GPU,
 * the scan was not in TID order, or anything fails.  On success the pairs
 * hold the layout slot by slot (Eytzinger order) and the index stays resident
 * as generation "generation".
 */
bool
eytz_device_build(EytzPairs *pairs, int key_width, int fanout,
				  Relation index, uint64 generation)
{
	uint64		n = pairs->n;
	uint64		i;
	void	   *keys;
	void	   *okeys;
	uint64	   *otids;
	EytzGpuCopy copy;
	bool		keep;
	EytzGpuFailure failure;
	uint64		bytes = 0;
	char	   *why = NULL;
	bool		ok;

	if (eytz_device_mode == EYTZ_DEVICE_CPU || n == 0 || n >= ((uint64) 1 << 31))
		return false;
	if (!eytz_device_available(&why))
	{
		eytz_device_report_unavailable(why);
		return false;
	}
	/* the GPU's stable sort keeps equal keys in input order: must be TID order */
	for (i = 1; i < n; i++)
		if (pairs->tids[i] < pairs->tids[i - 1])
			return false;

	if (key_width == 4)
	{
		uint32	   *k4 = MemoryContextAllocHuge(CurrentMemoryContext, n * 4);

		for (i = 0; i < n; i++)
			k4[i] = (uint32) pairs->keys[i];
		keys = k4;
	}
	else
		keys = pairs->keys;
	okeys = MemoryContextAllocHuge(CurrentMemoryContext, n * key_width);
	otids = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(uint64));

	/* stay resident only if it fits the limit */
	keep = eytz_gpu_build_estimate(n, key_width) <= gpu_limit() &&
		eytz_cache_make_room(&gpu_cache, eytz_gpu_build_estimate(n, key_width), gpu_limit());
	ok = eytz_gpu_build(keys, pairs->tids, n, key_width, fanout, okeys, otids,
						keep ? &copy : NULL, &bytes, &failure);
	if (keys != pairs->keys)
		pfree(keys);
	if (!ok)
	{
		ereport(NOTICE,
				(errmsg("building eytzgpu index \"%s\" on the CPU: %s",
						RelationGetRelationName(index), gpu_error(&failure))));
		pfree(okeys);
		pfree(otids);
		return false;
	}
	if (keep)
		(void) entry_add(index, generation, &copy, bytes, 0, true);
	/* the pairs now hold the layout, slot by slot */
	for (i = 0; i < n; i++)
		pairs->keys[i] = eytz_key_at(okeys, key_width, i);
	pfree(okeys);
	pfree(pairs->tids);
	pairs->tids = otids;
	return true;
}

#else							/* !EYTZ_HAVE_CUDA */

bool
eytz_device_available(char **why)
{
	if (why)
		*why = "eytzgpu was built without CUDA";
	return false;
}

bool
eytz_device_resident(Relation index, uint64 generation)
{
	return false;
}

EytzGpuEntry *
eytz_device_pin(Relation index, uint64 generation)
{
	return NULL;
}

bool
eytz_device_room(Relation index, const EytzMetaPageData *meta,
				 const EytzInclude *inc, char **why)
{
	*why = "eytzgpu was built without CUDA";
	return false;
}

EytzGpuEntry *
eytz_device_upload(Relation index, const EytzMetaPageData *meta,
				   const void *keys, const uint64 *tids, const EytzInclude *inc,
				   char *const *values, uint8 *const *nulls, char **why)
{
	*why = "eytzgpu was built without CUDA";
	return NULL;
}

uint64
eytz_device_ndead(const EytzGpuEntry *entry)
{
	return 0;
}

void
eytz_device_release(EytzGpuEntry *entry)
{
}

bool
eytz_device_lookup_start(EytzGpuEntry *entry, EytzGpuJob *job,
						 const uint64 *lo, const uint64 *hi,
						 const uint32 *rows, uint32 nq, uint32 first,
						 uint32 max, EytzMatch *out, EytzStage *stage,
						 uint32 stage_from, char **why)
{
	*why = "eytzgpu was built without CUDA";
	return false;
}

bool
eytz_device_lookup_finish(EytzGpuJob *job, EytzGpuAnswer *answer, char **why)
{
	*why = "eytzgpu was built without CUDA";
	return false;
}

void
eytz_device_lookup_cancel(EytzGpuJob *job)
{
}

void
eytz_device_invalidate(Oid indexoid)
{
}

bool
eytz_device_build(EytzPairs *pairs, int key_width, int fanout,
				  Relation index, uint64 generation)
{
	if (eytz_device_mode != EYTZ_DEVICE_CPU)
		eytz_device_report_unavailable("eytzgpu was built without CUDA");
	return false;
}

#endif							/* EYTZ_HAVE_CUDA */
