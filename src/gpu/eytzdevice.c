/*
 * eytzdevice.c
 *		GPU residency of eytzgpu indexes and GPU lookups: the only C file that
 *		calls the GPU API of cuda/eytzgpu_cuda.h (interface: eytzdevice.h).
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
#include "eytzinclude.h"

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

void
eytz_device_batch_shape(const uint64 *lo, const uint64 *hi, const uint32 *rows,
						uint32 n, bool *points, bool *ascending)
{
	bool		pt = true;
	bool		asc = true;
	uint32		i;

	/* one pass, no early exit: branch-free, the arrays are read once */
	for (i = 0; i < n; i++)
	{
		pt &= hi == NULL || lo[i] == hi[i];
		asc &= i == 0 || rows[i] > rows[i - 1];
	}
	*points = pt;
	*ascending = asc;
}

#ifdef EYTZ_HAVE_CUDA

#include "eytzgpu_cuda.h"

struct EytzGpuEntry
{
	EytzCacheEntry ce;			/* first: the cache links entries by it */
	int			key_width;
	EytzGpuIndex *handle;
	bool		own_xact;		/* built by the current transaction */
	uint64		ndead;			/* tombstones of the layout uploaded */
	/* attached columns: the included ones, 0..ninclude-1, then the keys */
	int			ninclude;
	int			key_column;		/* -1: nothing attached */
	int			widths[EYTZGPU_MAX_COLUMNS];
	uint32		mask;			/* the columns join batches return now */
	EytzGpuJob *inflight;		/* the job whose batch the handle runs */
};

static int	gpu_state = -1;		/* -1 not probed, 0 absent, 1 present */
static char gpu_why[256];
static bool xact_cb_registered = false;

/* The library's message without its own "eytzgpu: " (ours say it already) */
static const char *
library_message(const char *errbuf)
{
	return strncmp(errbuf, "eytzgpu: ", 9) == 0 ? errbuf + 9 : errbuf;
}

/* The cache's destructor: free the GPU copy, then the entry */
static void
entry_free(EytzCacheEntry *ce)
{
	EytzGpuEntry *e = (EytzGpuEntry *) ce;

	/* a job's scan keeps its copy pinned until it has finished or cancelled */
	Assert(e->inflight == NULL);
	eytzgpu_free(e->handle);
	pfree(e);
}

static EytzCache gpu_cache = {NULL, 0, 0, entry_free};

/* The driver's absence said plainly (the runtime calls it an old driver) */
static bool
driver_loaded(void)
{
	return access("/proc/driver/nvidia/version", F_OK) == 0;
}

bool
eytz_device_available(char **why)
{
	if (gpu_state < 0)
	{
		EytzGpuInfo info;
		int			rc;

		gpu_why[0] = '\0';
		rc = eytzgpu_probe(-1, &info, gpu_why, sizeof(gpu_why));
		gpu_state = rc == EYTZGPU_OK ? 1 : 0;
		if (rc != EYTZGPU_OK && rc == EYTZGPU_ENODEV && !driver_loaded())
			strlcpy(gpu_why, "no NVIDIA driver is loaded", sizeof(gpu_why));
		else if (rc != EYTZGPU_OK && gpu_why[0] == '\0')
			strlcpy(gpu_why, eytzgpu_strerror(rc), sizeof(gpu_why));
		else if (rc != EYTZGPU_OK)
			memmove(gpu_why, library_message(gpu_why), strlen(library_message(gpu_why)) + 1);
	}
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
 * A new entry for handle h (bytes of GPU memory), linked into the cache with
 * refcount pins if it fits the limit; else NULL and h is freed.
 */
static EytzGpuEntry *
entry_add(Relation index, uint64 generation, int key_width, EytzGpuIndex *h,
		  uint64 bytes, int refcount, bool own_xact)
{
	EytzGpuEntry *e = MemoryContextAllocZero(TopMemoryContext, sizeof(EytzGpuEntry));

	if (!xact_cb_registered)
	{
		RegisterXactCallback(device_xact_cb, NULL);
		xact_cb_registered = true;
	}
	e->key_width = key_width;
	e->handle = h;
	e->own_xact = own_xact;
	e->key_column = -1;
	if (!eytz_cache_add(&gpu_cache, &e->ce, index, generation, bytes, refcount, gpu_limit()))
	{
		entry_free(&e->ce);
		return NULL;
	}
	return e;
}

/*
 * A GPU library failure as one sentence for a WARNING or CPU Reason, into
 * buf (no allocation: also for a job collected on the error path)
 */
static void
format_gpu_error(char *buf, size_t len, const char *what, int rc,
				 const char *errbuf)
{
	snprintf(buf, len, "%s failed: %s%s%s", what, eytzgpu_strerror(rc),
			 errbuf[0] ? ": " : "", library_message(errbuf));
}

/* The same, palloc'd */
static char *
gpu_error(const char *what, int rc, const char *errbuf)
{
	char		buf[512];

	format_gpu_error(buf, sizeof(buf), what, rc, errbuf);
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

/* keys, payloads and the library's extra copies: about twice the data */
static uint64
upload_estimate(uint64 n, int key_width)
{
	return n * (key_width + sizeof(uint64)) * 2;
}

/* Can the keys ride along as a column after the included ones? */
static bool
key_column_fits(const EytzInclude *inc)
{
	return inc->ncols > 0 && inc->ncols < EYTZGPU_MAX_COLUMNS;
}

/* The attached columns: values, NULL bitmaps and the keys again */
static uint64
columns_estimate(uint64 n, int key_width, const EytzInclude *inc)
{
	uint64		bytes = 0;
	int			c;

	for (c = 0; c < inc->ncols; c++)
		bytes += n * inc->width[c] + (n + 7) / 8;
	if (key_column_fits(inc))
		bytes += n * key_width;
	return bytes;
}

bool
eytz_device_room(Relation index, const EytzMetaPageData *meta,
				 const EytzInclude *inc, char **why)
{
	uint64		estimate = upload_estimate(meta->nentries, meta->key_width) +
		columns_estimate(meta->nentries, meta->key_width, inc);

	if (estimate > gpu_limit() || !eytz_cache_make_room(&gpu_cache, estimate, gpu_limit()))
	{
		*why = psprintf("index \"%s\" needs about " UINT64_FORMAT " MB of GPU memory, more than eytzgpu.gpu_memory_limit leaves",
						RelationGetRelationName(index), estimate / (1024 * 1024) + 1);
		return false;
	}
	return true;
}

/*
 * Attach the included columns and the keys to handle h; false with *why
 * (h freed) on failure.  *bytes becomes the handle's device memory.
 */
static bool
attach_columns(EytzGpuIndex *h, const EytzMetaPageData *meta, const void *keys,
			   const EytzInclude *inc, char *const *values, uint8 *const *nulls,
			   uint64 *bytes, char **why)
{
	const void *cols[EYTZGPU_MAX_COLUMNS];
	const uint8_t *colnulls[EYTZGPU_MAX_COLUMNS];
	int			widths[EYTZGPU_MAX_COLUMNS];
	int			m = 0;
	char		errbuf[256];
	int			rc;

	for (; m < inc->ncols; m++)
	{
		cols[m] = values[m];
		colnulls[m] = nulls[m];
		widths[m] = inc->width[m];
	}
	if (key_column_fits(inc))
	{
		cols[m] = keys;
		colnulls[m] = NULL;
		widths[m] = meta->key_width;
		m++;
	}
	errbuf[0] = '\0';
	rc = eytzgpu_attach_columns(h, m, widths, cols, colnulls, bytes, errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
	{
		*why = gpu_error("GPU upload of the included columns", rc, errbuf);
		eytzgpu_free(h);
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
	EytzGpuIndex *h = NULL;
	uint64		bytes = 0;
	char		errbuf[256];
	int			rc;
	int			c;

	if (!eytz_device_room(index, meta, inc, why))
		return NULL;
	errbuf[0] = '\0';
	rc = eytzgpu_upload(-1, keys, tids, meta->nentries, meta->key_width,
						meta->fanout, 0, &h, &bytes, errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
	{
		*why = gpu_error("GPU upload", rc, errbuf);
		return NULL;
	}
	if (inc->ncols > 0 && meta->nentries > 0 &&
		!attach_columns(h, meta, keys, inc, values, nulls, &bytes, why))
		return NULL;
	e = entry_add(index, meta->generation, meta->key_width, h, bytes, 1, false);
	if (e == NULL)
	{
		*why = psprintf("index \"%s\" takes " UINT64_FORMAT " MB of GPU memory, more than eytzgpu.gpu_memory_limit leaves",
						RelationGetRelationName(index), bytes / (1024 * 1024) + 1);
		return NULL;
	}
	e->ndead = meta->ndead;
	if (inc->ncols > 0 && meta->nentries > 0)
	{
		e->ninclude = inc->ncols;
		e->key_column = key_column_fits(inc) ? inc->ncols : -1;
		for (c = 0; c < inc->ncols; c++)
			e->widths[c] = inc->width[c];
	}
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
 * Ask the handle for the columns a stage wants with the next batches (none
 * without a stage); false when the copy has none of them to give
 */
static bool
set_join_columns(EytzGpuEntry *e, const EytzStage *stage, char **why)
{
	uint32		mask = 0;
	char		errbuf[256];
	int			rc;
	int			j;

	if (stage && e->key_column >= 0)
	{
		mask = 1U << e->key_column;
		for (j = 0; j < stage->ncols; j++)
			mask |= 1U << stage->cols[j];
	}
	if (mask != e->mask)
	{
		errbuf[0] = '\0';
		rc = eytzgpu_join_columns(e->handle, mask, errbuf, sizeof(errbuf));
		if (rc != EYTZGPU_OK)
		{
			*why = gpu_error("GPU column selection", rc, errbuf);
			return false;
		}
		e->mask = mask;
	}
	return true;
}

/* The values of the n matches of res into stage positions from.. */
static void
stage_result(const EytzGpuEntry *e, const EytzGpuJoinResult *res, uint64 n,
			 EytzStage *stage, uint32 from)
{
	const char *keys = res->columns[e->key_column];
	uint64		i;
	int			j;

	for (i = 0; i < n; i++)
	{
		stage->have[from + i] = true;
		stage->keys[from + i] = eytz_key_at(keys, e->key_width, i);
	}
	for (j = 0; j < stage->ncols; j++)
	{
		int			c = stage->cols[j];
		int			width = e->widths[c];
		const char *vals = res->columns[c];
		const uint8_t *nulls = res->column_nulls[c];

		for (i = 0; i < n; i++)
		{
			bool		isnull = nulls[i] != 0;

			stage->isnull[j][from + i] = isnull;
			stage->values[j][from + i] = isnull ? (Datum) 0 :
				eytz_include_fetch(vals + i * width, width);
		}
	}
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
	EytzGpuJoinResult res;
	char		errbuf[256];
	uint64		j;
	int			rc;

	if (job == NULL)
		return;
	e->inflight = NULL;
	errbuf[0] = '\0';
	rc = eytzgpu_lookup_join_wait(e->handle, &res, errbuf, sizeof(errbuf));
	job->collected = true;
	job->ok = rc == EYTZGPU_OK;
	if (!job->ok)
	{
		format_gpu_error(job->why, sizeof(job->why), "GPU lookup", rc, errbuf);
		return;
	}
	job->answer.nout = (uint32) res.nmatch;
	job->answer.nq_done = (uint32) res.nq_done;
	job->answer.kernel_ms = res.kernel_ms;
	job->answer.transfer_ms = res.transfer_ms;
	if (job->out == NULL)
		return;
	for (j = 0; j < res.nmatch; j++)
	{
		job->out[j].tid = res.payloads[j];
		job->out[j].row = res.rows[j];
		job->out[j].unused = job->stage_from + (uint32) j;
	}
	if (e->mask != 0)
	{
		stage_result(e, &res, res.nmatch, job->stage, job->stage_from);
		job->answer.staged = true;
	}
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
	char		errbuf[256];
	bool		point;
	bool		ascending;
	int			rc;

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
	if (!set_join_columns(e, stage, why))
		return false;
	eytz_device_batch_shape(lo + first, hi ? hi + first : NULL, rows + first,
							nq - first, &point, &ascending);
	errbuf[0] = '\0';
	rc = eytzgpu_lookup_join_submit(e->handle, lo + first, point ? NULL : hi + first,
									rows + first, nq - first, max,
									ascending ? EYTZGPU_ROWS_ASCENDING : 0,
									errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
	{
		*why = gpu_error("GPU lookup", rc, errbuf);
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
	EytzGpuIndex *h = NULL;
	EytzGpuIndex **hp;
	uint64		bytes = 0;
	char		errbuf[256];
	char	   *why = NULL;
	int			rc;

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
	hp = (upload_estimate(n, key_width) <= gpu_limit() &&
		  eytz_cache_make_room(&gpu_cache, upload_estimate(n, key_width), gpu_limit())) ? &h : NULL;
	errbuf[0] = '\0';
	rc = eytzgpu_build(-1, keys, pairs->tids, n, key_width, fanout, 0,
					   okeys, otids, hp, &bytes, errbuf, sizeof(errbuf));
	if (keys != pairs->keys)
		pfree(keys);
	if (rc != EYTZGPU_OK)
	{
		ereport(NOTICE,
				(errmsg("building eytzgpu index \"%s\" on the CPU: %s",
						RelationGetRelationName(index),
						gpu_error("GPU build", rc, errbuf))));
		pfree(okeys);
		pfree(otids);
		return false;
	}
	if (h != NULL)
		(void) entry_add(index, generation, key_width, h, bytes, 0, true);
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
