/*
 * eytzimageshared.c
 *		The shared image registry: with shared_preload_libraries = 'eytzgpu',
 *		one CPU image per index generation for every backend of the server.
 *
 * A backend that loads an image (eytzimage.c) loads it into a segment of
 * dynamic shared memory laid out as a parallel join's kept image is, pins
 * the segment (dsm_pin_segment: it outlives the backend) and registers its
 * handle here under the key (database, index, relfilenode, generation).  A
 * fresh backend's first join looks here before loading: it attaches the
 * segment and searches it in place, so that no backend but the first pays
 * the load.  The registry holds at most eytzgpu.shared_image_limit bytes:
 * the least recently used images make room, a newer generation or another
 * relfilenode of an index (a merge, REINDEX, TRUNCATE) replaces the older
 * ones, and so does a registration or a listing for indexes of the current
 * database that were dropped.  An image leaves the registry by unpinning
 * its segment; backends still attached keep it until they detach, so that
 * a running scan is never cut short, and a backend that finds its cached
 * image no longer registered drops it at its next join.
 *
 * Without the preload, or with the limit 0, nothing is registered and every
 * backend loads its own image, as before.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "eytzcompat.h"
#include "eytzimage.h"

PG_FUNCTION_INFO_V1(eytzgpu_shared_images);

/* GUC eytzgpu.shared_image_limit (MB): 0 registers nothing */
int			eytz_shared_image_limit_mb = 1024;

/* Images the registry holds at most, whatever their size */
#define SHARED_IMAGES_MAX 128

typedef struct SharedImageEntry
{
	bool		used;
	Oid			dboid;
	Oid			indexoid;
	Oid			relfilenode;
	uint64		generation;
	uint64		ndead;			/* tombstones counted when it was loaded */
	uint64		nentries;
	Size		bytes;
	dsm_handle	handle;
	pg_atomic_uint64 last_used; /* the registry's clock at its last use */
	pg_atomic_uint64 hits;		/* attaches by backends that did not load it */
} SharedImageEntry;

typedef struct SharedImageRegistry
{
	LWLock	   *lock;
	Size		bytes;			/* of the registered images */
	pg_atomic_uint64 clock;
	SharedImageEntry entries[SHARED_IMAGES_MAX];
} SharedImageRegistry;

static SharedImageRegistry *registry = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
shared_images_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(sizeof(SharedImageRegistry));
	RequestNamedLWLockTranche("eytzgpu shared images", 1);
}

static void
shared_images_shmem_startup(void)
{
	bool		found;
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	registry = ShmemInitStruct("eytzgpu shared images", sizeof(SharedImageRegistry), &found);
	if (!found)
	{
		memset(registry, 0, sizeof(SharedImageRegistry));
		registry->lock = &(GetNamedLWLockTranche("eytzgpu shared images"))->lock;
		pg_atomic_init_u64(&registry->clock, 0);
		for (i = 0; i < SHARED_IMAGES_MAX; i++)
		{
			pg_atomic_init_u64(&registry->entries[i].last_used, 0);
			pg_atomic_init_u64(&registry->entries[i].hits, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

void
eytz_shared_images_init(void)
{
	DefineCustomIntVariable("eytzgpu.shared_image_limit",
							"Shared memory the CPU images that all backends share may take.",
							"Needs shared_preload_libraries = 'eytzgpu'; 0 shares none: each backend "
							"loads its own image.",
							&eytz_shared_image_limit_mb, 1024, 0, INT_MAX / 2,
							PGC_SIGHUP, GUC_UNIT_MB, NULL, NULL, NULL);
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shared_images_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shared_images_shmem_startup;
}

bool
eytz_shared_images_on(void)
{
	return registry != NULL && eytz_shared_image_limit_mb > 0;
}

static Size
limit_bytes(void)
{
	return (Size) eytz_shared_image_limit_mb * 1024 * 1024;
}

static void
touch(SharedImageEntry *e)
{
	pg_atomic_write_u64(&e->last_used, pg_atomic_add_fetch_u64(&registry->clock, 1));
}

/* Unregister e (exclusive lock held): its segment goes with its last detach */
static void
unregister(SharedImageEntry *e)
{
	e->used = false;
	registry->bytes -= Min(registry->bytes, e->bytes);
	dsm_unpin_segment(e->handle);
}

static bool
same_index(const SharedImageEntry *e, Relation index)
{
	return e->used && e->dboid == MyDatabaseId && e->indexoid == RelationGetRelid(index);
}

/* The registered entry of this generation of index with ndead >= min_ndead */
static SharedImageEntry *
find(Relation index, uint64 generation, uint64 min_ndead)
{
	int			i;

	for (i = 0; i < SHARED_IMAGES_MAX; i++)
	{
		SharedImageEntry *e = &registry->entries[i];

		if (same_index(e, index) &&
			e->relfilenode == EytzRelFileNumber(EytzRelationFile(index)) &&
			e->generation == generation && e->ndead >= min_ndead)
			return e;
	}
	return NULL;
}

bool
eytz_shared_image_has(Relation index, uint64 generation)
{
	bool		has;

	if (!eytz_shared_images_on())
		return false;
	LWLockAcquire(registry->lock, LW_SHARED);
	has = find(index, generation, 0) != NULL;
	LWLockRelease(registry->lock);
	return has;
}

/*
 * Attach the registered segment of the generation meta describes, holding
 * at least min_ndead tombstones; NULL if none.  Attached under the lock, so
 * that no eviction can unpin it in between; the caller checks its header.
 */
dsm_segment *
eytz_shared_image_attach(Relation index, const EytzMetaPageData *meta, uint64 min_ndead)
{
	SharedImageEntry *e;
	dsm_segment *seg = NULL;

	if (!eytz_shared_images_on())
		return NULL;
	LWLockAcquire(registry->lock, LW_SHARED);
	e = find(index, meta->generation, min_ndead);
	if (e)
	{
		seg = dsm_attach(e->handle);
		if (seg)
		{
			touch(e);
			pg_atomic_fetch_add_u64(&e->hits, 1);
		}
	}
	LWLockRelease(registry->lock);
	return seg;
}

/* Is the segment still registered?  (counts as a use) */
bool
eytz_shared_image_registered(dsm_segment *seg)
{
	dsm_handle	h = dsm_segment_handle(seg);
	bool		found = false;
	int			i;

	if (registry == NULL)
		return false;
	LWLockAcquire(registry->lock, LW_SHARED);
	for (i = 0; i < SHARED_IMAGES_MAX && !found; i++)
	{
		SharedImageEntry *e = &registry->entries[i];

		if (e->used && e->handle == h)
		{
			touch(e);
			found = true;
		}
	}
	LWLockRelease(registry->lock);
	return found;
}

/*
 * After eytzgpu.shared_image_limit was lowered (to 0: sharing off), the
 * least recently used images leave until the rest fit it.  Read without the
 * lock first: a join's usual answer is that nothing is over.
 */
void
eytz_shared_images_trim(void)
{
	if (registry == NULL || registry->bytes <= limit_bytes())
		return;
	LWLockAcquire(registry->lock, LW_EXCLUSIVE);
	while (registry->bytes > limit_bytes())
	{
		SharedImageEntry *lru = NULL;
		int			i;

		for (i = 0; i < SHARED_IMAGES_MAX; i++)
		{
			SharedImageEntry *e = &registry->entries[i];

			if (e->used && (lru == NULL ||
							pg_atomic_read_u64(&e->last_used) < pg_atomic_read_u64(&lru->last_used)))
				lru = e;
		}
		if (lru == NULL)
			break;
		unregister(lru);
	}
	LWLockRelease(registry->lock);
}

/*
 * Unregister the images of this database's indexes that were dropped or
 * have another relfilenode now (REINDEX, TRUNCATE).  The catalog is read
 * without the registry's lock; an entry changed in between is left alone.
 */
static void
sweep_dropped(void)
{
	SharedImageEntry mine[SHARED_IMAGES_MAX];
	int			nmine = 0;
	int			i,
				j;

	LWLockAcquire(registry->lock, LW_SHARED);
	for (i = 0; i < SHARED_IMAGES_MAX; i++)
		if (registry->entries[i].used && registry->entries[i].dboid == MyDatabaseId)
			memcpy(&mine[nmine++], &registry->entries[i], sizeof(SharedImageEntry));
	LWLockRelease(registry->lock);
	for (i = 0, j = 0; i < nmine; i++)
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(mine[i].indexoid));
		bool		current = false;

		if (HeapTupleIsValid(tup))
		{
			current = ((Form_pg_class) GETSTRUCT(tup))->relfilenode == mine[i].relfilenode;
			ReleaseSysCache(tup);
		}
		if (!current)
			mine[j++] = mine[i];
	}
	if (j == 0)
		return;
	LWLockAcquire(registry->lock, LW_EXCLUSIVE);
	for (i = 0; i < SHARED_IMAGES_MAX; i++)
	{
		SharedImageEntry *e = &registry->entries[i];
		int			k;

		for (k = 0; k < j && e->used; k++)
			if (e->handle == mine[k].handle && e->dboid == mine[k].dboid &&
				e->indexoid == mine[k].indexoid &&
				e->relfilenode == mine[k].relfilenode)
				unregister(e);
	}
	LWLockRelease(registry->lock);
}

/*
 * Register seg (bytes long, complete, its mapping pinned by this backend)
 * as the image of the generation meta describes: pinned until it leaves
 * the registry.  The index's other relfilenodes and older generations leave
 * it, and the least recently used images while the limit needs room.
 * false: not registered (larger than the limit, no free entry, or a newer
 * or equal image is there already); the caller keeps it as its own.
 */
bool
eytz_shared_image_register(Relation index, const EytzMetaPageData *meta,
						   dsm_segment *seg, Size bytes)
{
	Oid			file = EytzRelFileNumber(EytzRelationFile(index));
	SharedImageEntry *slot = NULL;
	int			i;

	if (!eytz_shared_images_on() || bytes > limit_bytes())
		return false;
	sweep_dropped();
	LWLockAcquire(registry->lock, LW_EXCLUSIVE);
	for (i = 0; i < SHARED_IMAGES_MAX; i++)
	{
		SharedImageEntry *e = &registry->entries[i];

		if (!same_index(e, index))
			continue;
		if (e->relfilenode == file &&
			(e->generation > meta->generation ||
			 (e->generation == meta->generation && e->ndead >= meta->ndead)))
		{
			/* another backend's load, or a later generation, came first */
			LWLockRelease(registry->lock);
			return false;
		}
		unregister(e);
	}
	for (;;)
	{
		SharedImageEntry *lru = NULL;

		slot = NULL;
		for (i = 0; i < SHARED_IMAGES_MAX; i++)
		{
			SharedImageEntry *e = &registry->entries[i];

			if (!e->used)
				slot = slot ? slot : e;
			else if (lru == NULL ||
					 pg_atomic_read_u64(&e->last_used) < pg_atomic_read_u64(&lru->last_used))
				lru = e;
		}
		if (slot && registry->bytes + bytes <= limit_bytes())
			break;
		if (lru == NULL)
		{
			LWLockRelease(registry->lock);
			return false;
		}
		unregister(lru);
	}
	dsm_pin_segment(seg);
	slot->used = true;
	slot->dboid = MyDatabaseId;
	slot->indexoid = RelationGetRelid(index);
	slot->relfilenode = file;
	slot->generation = meta->generation;
	slot->ndead = meta->ndead;
	slot->nentries = meta->nentries;
	slot->bytes = bytes;
	slot->handle = dsm_segment_handle(seg);
	pg_atomic_write_u64(&slot->hits, 0);
	touch(slot);
	registry->bytes += bytes;
	LWLockRelease(registry->lock);
	return true;
}

/*
 * eytzgpu_shared_images(): a row per registered image, most recently used
 * first: its database, index (named when in this database), relfilenode,
 * generation, entries, bytes, hits (attaches by backends that did not load
 * it) and whether this backend has it attached.  Dropped indexes of this
 * database leave the registry first.  No rows without the preload.  For
 * superusers and pg_monitor, as the service's functions.
 */
Datum
eytzgpu_shared_images(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SharedImageEntry copy[SHARED_IMAGES_MAX];
	uint64		last_used[SHARED_IMAGES_MAX];
	int			n = 0;
	int			i;

	if (!has_privs_of_role(GetUserId(), ROLE_PG_MONITOR))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", "eytzgpu_shared_images"),
				 errdetail("Only roles with privileges of the \"pg_monitor\" role may see the shared images.")));
	InitMaterializedSRF(fcinfo, 0);
	if (registry == NULL)
		return (Datum) 0;
	sweep_dropped();
	LWLockAcquire(registry->lock, LW_SHARED);
	for (i = 0; i < SHARED_IMAGES_MAX; i++)
		if (registry->entries[i].used)
		{
			memcpy(&copy[n], &registry->entries[i], sizeof(SharedImageEntry));
			last_used[n++] = pg_atomic_read_u64(&registry->entries[i].last_used);
		}
	LWLockRelease(registry->lock);
	while (n > 0)
	{
		Datum		values[9];
		bool		nulls[9] = {false};
		int			best = 0;
		char	   *name = NULL;

		for (i = 1; i < n; i++)
			if (last_used[i] > last_used[best])
				best = i;
		if (copy[best].dboid == MyDatabaseId)
			name = get_rel_name(copy[best].indexoid);
		values[0] = ObjectIdGetDatum(copy[best].dboid);
		values[1] = ObjectIdGetDatum(copy[best].indexoid);
		if (name)
			values[2] = CStringGetTextDatum(name);
		else
			nulls[2] = true;
		values[3] = ObjectIdGetDatum(copy[best].relfilenode);
		values[4] = Int64GetDatum((int64) copy[best].generation);
		values[5] = Int64GetDatum((int64) copy[best].nentries);
		values[6] = Int64GetDatum((int64) copy[best].bytes);
		values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&copy[best].hits));
		values[8] = BoolGetDatum(dsm_find_mapping(copy[best].handle) != NULL);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		copy[best] = copy[--n];
		last_used[best] = last_used[n];
	}
	return (Datum) 0;
}
