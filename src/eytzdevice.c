/*
 * eytzdevice.c
 *		GPU residency of eytzgpu indexes: the only C file that calls the GPU
 *		API of cuda/eytzgpu_cuda.h.
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
 * The interface is two calls, "make generation G resident" and "look up this
 * batch", so it can later move into a background worker serving all
 * backends.  Without CUDA at build time every call reports "no GPU".
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzjoin.h"

#ifdef EYTZ_HAVE_CUDA

#include "eytzgpu_cuda.h"

struct EytzGpuEntry
{
	EytzCacheEntry ce;			/* first: the cache links entries by it */
	int			key_width;
	EytzGpuIndex *handle;
	bool		own_xact;		/* built by the current transaction */
};

static int	gpu_state = -1;		/* -1 not probed, 0 absent, 1 present */
static char gpu_why[256];
static char gpu_name[256];
static bool xact_cb_registered = false;

static void
entry_free(EytzCacheEntry *ce)
{
	EytzGpuEntry *e = (EytzGpuEntry *) ce;

	eytzgpu_free(e->handle);
	pfree(e);
}

static EytzCache gpu_cache = {NULL, 0, 0, entry_free};

bool
eytz_device_available(char **why)
{
	if (gpu_state < 0)
	{
		EytzGpuInfo info;
		int			rc = eytzgpu_probe(-1, &info, gpu_why, sizeof(gpu_why));

		gpu_state = rc == EYTZGPU_OK ? 1 : 0;
		if (rc == EYTZGPU_OK)
			strlcpy(gpu_name, info.name, sizeof(gpu_name));
		else if (gpu_why[0] == '\0')
			strlcpy(gpu_why, eytzgpu_strerror(rc), sizeof(gpu_why));
	}
	if (gpu_state == 0 && why)
		*why = gpu_why;
	return gpu_state == 1;
}

const char *
eytz_device_name(void)
{
	return gpu_state == 1 ? gpu_name : "none";
}

static uint64
gpu_limit(void)
{
	return (uint64) eytz_gpu_memory_limit_mb * 1024 * 1024;
}

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
	if (!eytz_cache_add(&gpu_cache, &e->ce, index, generation, bytes, refcount, gpu_limit()))
	{
		entry_free(&e->ce);
		return NULL;
	}
	return e;
}

static char *
gpu_error(const char *what, int rc, const char *errbuf)
{
	return psprintf("%s failed: %s%s%s", what, eytzgpu_strerror(rc),
					errbuf[0] ? ": " : "", errbuf);
}

/*
 * A pinned GPU copy of the layout generation meta describes.  NULL with
 * *why set: no GPU, no room or a GPU failure (the caller uses the CPU);
 * NULL with *why NULL: the index changed under the upload (retry).
 */
EytzGpuEntry *
eytz_device_acquire(Relation index, const EytzMetaPageData *meta, char **why)
{
	EytzGpuEntry *e;
	EytzImage  *image;
	EytzGpuIndex *h = NULL;
	uint64		bytes = 0;
	uint64		estimate;
	char		errbuf[256];
	int			rc;

	*why = NULL;
	if (!eytz_device_available(why))
		return NULL;
	e = (EytzGpuEntry *) eytz_cache_pin(&gpu_cache, index, meta->generation);
	if (e)
		return e;

	/* keys, payloads and the library's extra copies: about twice the data */
	estimate = meta->nentries * (meta->key_width + sizeof(uint64)) * 2;
	if (estimate > gpu_limit() || !eytz_cache_make_room(&gpu_cache, estimate, gpu_limit()))
	{
		*why = psprintf("index \"%s\" needs about " UINT64_FORMAT " MB of GPU memory, more than eytzgpu.gpu_memory_limit leaves",
						RelationGetRelationName(index), estimate / (1024 * 1024) + 1);
		return NULL;
	}

	image = eytz_image_acquire(index, meta);
	if (image == NULL)
		return NULL;
	errbuf[0] = '\0';
	rc = eytzgpu_upload(-1, image->img.keys, image->img.tids, meta->nentries,
						meta->key_width, meta->fanout, 0, &h, &bytes,
						errbuf, sizeof(errbuf));
	eytz_image_release(image);
	if (rc != EYTZGPU_OK)
	{
		*why = gpu_error("GPU upload", rc, errbuf);
		return NULL;
	}
	e = entry_add(index, meta->generation, meta->key_width, h, bytes, 1, false);
	if (e == NULL)
		*why = psprintf("index \"%s\" takes " UINT64_FORMAT " MB of GPU memory, more than eytzgpu.gpu_memory_limit leaves",
						RelationGetRelationName(index), bytes / (1024 * 1024) + 1);
	return e;
}

void
eytz_device_release(EytzGpuEntry *e)
{
	eytz_cache_release(&gpu_cache, &e->ce);
}

/*
 * Look up a batch on the GPU and append (TID, rows[i]) for every live match
 * of query i.  false with *why on failure (nothing appended).
 */
bool
eytz_device_lookup(EytzGpuEntry *e, const uint64 *lo, const uint64 *hi,
				   const uint32 *rows, uint32 nq, EytzMatchBuf *out,
				   double *kernel_ms, char **why)
{
	EytzGpuResult res;
	char		errbuf[256];
	const void *klo = lo;
	const void *khi = hi;
	uint32	   *lo4 = NULL,
			   *hi4 = NULL;
	bool		point = true;
	uint32		i;
	int			rc;

	for (i = 0; i < nq && point; i++)
		point = lo[i] == hi[i];
	if (e->key_width == 4)
	{
		lo4 = palloc(sizeof(uint32) * Max(nq, 1));
		for (i = 0; i < nq; i++)
			lo4[i] = (uint32) lo[i];
		klo = lo4;
		if (!point)
		{
			hi4 = palloc(sizeof(uint32) * Max(nq, 1));
			for (i = 0; i < nq; i++)
				hi4[i] = (uint32) hi[i];
			khi = hi4;
		}
	}
	if (point)
		khi = NULL;

	errbuf[0] = '\0';
	rc = eytzgpu_lookup(e->handle, klo, khi, nq, 0, &res, errbuf, sizeof(errbuf));
	if (lo4)
		pfree(lo4);
	if (hi4)
		pfree(hi4);
	if (rc != EYTZGPU_OK)
	{
		*why = gpu_error("GPU lookup", rc, errbuf);
		return false;
	}
	*kernel_ms = res.kernel_ms;
	for (i = 0; i < nq; i++)
	{
		uint64		j;

		for (j = res.offsets[i]; j < res.offsets[i + 1]; j++)
		{
			uint64		t = res.payloads[j];

			/* tombstones keep their key and carry an invalid TID */
			if (eytz_tid_block(t) != InvalidBlockNumber)
				eytz_match_add(out, t, rows[i]);
		}
	}
	return true;
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
		if (eytz_device_mode == EYTZ_DEVICE_GPU)
			ereport(NOTICE,
					(errmsg("eytzgpu: building index \"%s\" on the CPU: %s",
							RelationGetRelationName(index), why)));
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
	hp = (n * (key_width + sizeof(uint64)) * 2 <= gpu_limit() &&
		  eytz_cache_make_room(&gpu_cache, n * (key_width + sizeof(uint64)) * 2, gpu_limit())) ? &h : NULL;
	errbuf[0] = '\0';
	rc = eytzgpu_build(-1, keys, pairs->tids, n, key_width, fanout, 0,
					   okeys, otids, hp, &bytes, errbuf, sizeof(errbuf));
	if (keys != pairs->keys)
		pfree(keys);
	if (rc != EYTZGPU_OK)
	{
		ereport(NOTICE,
				(errmsg("eytzgpu: building index \"%s\" on the CPU: %s",
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

const char *
eytz_device_name(void)
{
	return "none";
}

EytzGpuEntry *
eytz_device_acquire(Relation index, const EytzMetaPageData *meta, char **why)
{
	*why = "eytzgpu was built without CUDA";
	return NULL;
}

void
eytz_device_release(EytzGpuEntry *entry)
{
}

bool
eytz_device_lookup(EytzGpuEntry *entry, const uint64 *lo, const uint64 *hi,
				   const uint32 *rows, uint32 nq, EytzMatchBuf *out,
				   double *kernel_ms, char **why)
{
	*why = "eytzgpu was built without CUDA";
	return false;
}

void
eytz_device_invalidate(Oid indexoid)
{
}

bool
eytz_device_build(EytzPairs *pairs, int key_width, int fanout,
				  Relation index, uint64 generation)
{
	return false;
}

#endif							/* EYTZ_HAVE_CUDA */
