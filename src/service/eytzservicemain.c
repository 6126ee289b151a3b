/*
 * eytzservicemain.c
 *		The eytzgpu service worker (eytzservice.h): one process that holds
 *		the devices and the resident copies, and answers the backends'
 *		requests in rounds, oldest first: on the GPU the lookups of
 *		different copies of a round run at once.
 *
 * Its devices are chosen at start from eytzgpu.service_device: every GPU
 * CUDA shows it, a context each (the only CUDA contexts of the server,
 * held through eytzgpucopy.h as the backends' own copies are), or CPU images of each index searched with the seam's own batched
 * search (eytzimage.c) on eytzgpu.service_cpu_devices pseudo-devices, or
 * none: without a GPU at 'auto' it sleeps and backends answer themselves.
 * Each device's copies are bounded by eytzgpu.gpu_memory_limit as this
 * process reads it (postgresql.conf, reloaded on SIGHUP); a copy goes to
 * the device with the most room, and unpinned copies are evicted least
 * recently used first.  A request that raises an error (a damaged node in
 * a CPU image) is answered with its message; a GPU failure other than
 * memory drops that GPU (its copies' requests fail, their joins continue
 * on the CPU), and with no GPU left ends the process after the round's
 * answers: the postmaster starts a fresh one (and CUDA contexts) a second
 * later.  Shutdown or a restart makes every waiting backend continue on
 * its CPU path.  The progress mark (eytzservice.h) moves at every turn of
 * the main loop and with every round taken and answered.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procsignal.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "eytzdevice.h"
#include "eytzgpucopy.h"
#include "eytzimage.h"
#include "eytzservice.h"

/* The worker's side of resident copy i */
typedef struct SvcCopy
{
	EytzImage	image;			/* CPU: the layout and included columns */
	EytzGpuCopy gpu;			/* GPU: the copy on its device */
	bool		in_flight;		/* GPU: a batch submitted, not waited for */
} SvcCopy;

/* A layout being streamed in through slot i */
typedef struct SvcLoad
{
	bool		active;
	uint64		serial;			/* of the slot's claim */
	EytzSvcKey	key;
	EytzMetaPageData meta;
	int			device;			/* where it goes */
	uint64		reserved;		/* bytes counted against the device's limit */
	MemoryContext cxt;			/* holds the arrays */
	EytzInclude inc;
	char	   *keys;
	uint64	   *tids;
	char	   *values[EYTZ_MAX_INCLUDE];
	uint8	   *nulls[EYTZ_MAX_INCLUDE];
} SvcLoad;

static SvcCopy copies[EYTZ_SVC_MAX_RESIDENT];

/* requests taken in one round at most */
#define EYTZ_SVC_ROUND 32
static SvcLoad *loads;
static MemoryContext svc_cxt;
/* devices that failed other than for want of memory, this round */
static bool device_broken[EYTZ_SVC_MAX_DEVICES];
static char last_gpu_error[256];

/*
 * CPU answers: the queries in batch order, the matches' sort scratch, and
 * the "have" flags of a stage (every match of an image has its values)
 */
static EytzMatch *cpu_order;
static uint32 cpu_order_cap;
static EytzMatch *cpu_scratch;
static bool *cpu_have;
static uint32 cpu_scratch_cap;

/*
 * A GPU failure on device as s->why-sized why (naming the GPU when there
 * are several); a failure other than memory marks the device broken
 */
static bool
gpu_failed(char *why, int device, const EytzGpuFailure *failure)
{
	eytz_gpu_failure_text(why, sizeof(((EytzSvcSlot *) NULL)->why), failure,
						  eytz_svc->ndevices > 1 ? device : -1);
	/* memory runs out and comes back; anything else wants a fresh context */
	if (!failure->out_of_memory)
	{
		device_broken[device] = true;
		strlcpy(last_gpu_error, why, sizeof(last_gpu_error));
	}
	return false;
}

/* The GPUs CUDA shows this process (CUDA_VISIBLE_DEVICES), their names */
static int
gpu_devices(EytzSvcDevice *devices, int max)
{
	int			n = Min(eytz_gpu_device_count(), max);
	int			d;

	for (d = 0; d < n; d++)
	{
		memset(&devices[d], 0, sizeof(EytzSvcDevice));
		eytz_gpu_device_name(d, devices[d].name, sizeof(devices[d].name));
	}
	return n;
}

/* Upload the streamed layout, with its included columns and the keys */
static bool
gpu_upload(SvcLoad *ld, int device, SvcCopy *copy, uint64 *bytes, char *why)
{
	EytzGpuFailure failure;

	if (!eytz_gpu_copy_upload(&copy->gpu, device, &ld->meta, ld->keys, ld->tids,
							  &ld->inc, ld->values, ld->nulls, bytes, &failure))
		return gpu_failed(why, device, &failure);
	return true;
}

/*
 * Submit slot s's lookup to copy's GPU and return while it works (one
 * batch in flight per copy).  hi is NULL for points (no count pass on a
 * unique index); ascending rows take the cheaper sort.
 */
static bool
gpu_lookup_start(SvcCopy *copy, int device, EytzSvcSlot *s, const uint64 *lo,
				 const uint64 *hi, const uint32 *rows, bool ascending)
{
	EytzGpuFailure failure;

	if (!eytz_gpu_copy_select(&copy->gpu, s->want, s->ncols, s->cols, &failure) ||
		!eytz_gpu_copy_submit(&copy->gpu, lo, hi, rows, s->nq, s->max, ascending,
							  &failure))
		return gpu_failed(s->why, device, &failure);
	copy->in_flight = true;
	return true;
}

/*
 * Wait for the lookup gpu_lookup_start submitted: the matches (sorted by
 * the GPU), and with s->want the keys and values the GPU gathered for
 * them, in match order, into out
 */
static bool
gpu_lookup_finish(SvcCopy *copy, int device, EytzSvcSlot *s, EytzMatch *out)
{
	EytzGpuFailure failure;
	EytzGpuAnswer answer;
	EytzStage	stage;
	int			c;

	copy->in_flight = false;
	/* the slot's window lays the keys and values out after the matches */
	memset(&stage, 0, sizeof(stage));
	stage.ncols = s->ncols;
	stage.keys = eytz_svc_keys((char *) out, s->max);
	for (c = 0; c < s->ncols; c++)
	{
		stage.cols[c] = s->cols[c];
		stage.values[c] = eytz_svc_values((char *) out, s->max, c);
		stage.isnull[c] = eytz_svc_isnull((char *) out, s->max, s->ncols, c);
	}
	if (!eytz_gpu_copy_wait(&copy->gpu, out, &stage, 0, &answer, &failure))
		return gpu_failed(s->why, device, &failure);
	if (answer.staged)
		s->staged = true;
	s->nout = answer.nout;
	s->nq_done = answer.nq_done;
	s->kernel_ms = answer.kernel_ms;
	s->transfer_ms = answer.transfer_ms;
	return true;
}

/* Is copy r pinned by a live slot?  (lock held) */
static bool
pinned(int r)
{
	int			i;

	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		if (s->state != SLOT_FREE && s->resident == r &&
			s->incarnation == eytz_svc->incarnation)
			return true;
	}
	return false;
}

/* Drop copy r */
static void
drop_copy(int r)
{
	EytzSvcDevice *dev;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	dev = &eytz_svc->devices[eytz_svc->resident[r].device];
	eytz_svc->bytes -= eytz_svc->resident[r].bytes;
	dev->bytes -= eytz_svc->resident[r].bytes;
	dev->copies--;
	eytz_svc->resident[r].used = false;
	LWLockRelease(eytz_svc->lock);
	if (copies[r].gpu.handle)
		eytz_gpu_copy_free(&copies[r].gpu);
	if (copies[r].image.cxt)
		MemoryContextDelete(copies[r].image.cxt);
	memset(&copies[r], 0, sizeof(SvcCopy));
}

/* The least recently used unpinned copy on device d (any: -1), or -1 */
static int
lru_victim(int d)
{
	int			r,
				best = -1;

	LWLockAcquire(eytz_svc->lock, LW_SHARED);
	for (r = 0; r < EYTZ_SVC_MAX_RESIDENT; r++)
		if (eytz_svc->resident[r].used && !pinned(r) &&
			(d < 0 || eytz_svc->resident[r].device == d) &&
			(best < 0 || eytz_svc->resident[r].last_used < eytz_svc->resident[best].last_used))
			best = r;
	LWLockRelease(eytz_svc->lock);
	return best;
}

/*
 * Evict from device d until need more bytes fit its eytzgpu.gpu_memory_limit;
 * false if they cannot
 */
static bool
make_room(int d, uint64 need)
{
	uint64		limit = (uint64) eytz_gpu_memory_limit_mb * 1024 * 1024;
	EytzSvcDevice *dev = &eytz_svc->devices[d];

	while (dev->bytes + dev->loading + need > limit)
	{
		int			r = lru_victim(d);

		if (r < 0)
			return false;
		drop_copy(r);
		LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
		eytz_svc->evictions++;
		LWLockRelease(eytz_svc->lock);
	}
	return true;
}

static void
drop_load(int i)
{
	SvcLoad    *ld = &loads[i];

	if (!ld->active)
		return;
	if (ld->cxt)
		MemoryContextDelete(ld->cxt);
	eytz_svc->devices[ld->device].loading -= ld->reserved;
	memset(ld, 0, sizeof(SvcLoad));
}

/*
 * What a copy of meta's layout takes: keys and TIDs (twice on the GPU),
 * included values and NULL bits (on the GPU the keys again as a column)
 */
static uint64
copy_estimate(const EytzMetaPageData *meta, const EytzInclude *inc)
{
	uint64		bytes = meta->nentries * (meta->key_width + sizeof(uint64));
	int			c;

	if (eytz_svc->state == SVC_GPU)
		bytes = bytes * 2 + (inc->ncols > 0 ? meta->nentries * meta->key_width : 0);
	for (c = 0; c < inc->ncols; c++)
		bytes += meta->nentries * inc->width[c] + (meta->nentries + 7) / 8;
	return bytes;
}

/* A copy's array, on huge pages where the kernel has them (searched at random) */
static void *
alloc_or_null(MemoryContext cxt, uint64 bytes)
{
	void	   *p = MemoryContextAllocExtended(cxt, Max(bytes, 1),
											   MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);

	eytz_advise_huge(p, bytes);
	return p;
}

/*
 * The devices that take copies, the one with the most room under its
 * limit first (ties: the lower number); returns how many
 */
static int
devices_by_room(int *order)
{
	uint64		limit = (uint64) eytz_gpu_memory_limit_mb * 1024 * 1024;
	int			n = 0;
	int			d,
				j;

	for (d = 0; d < eytz_svc->ndevices; d++)
	{
		EytzSvcDevice *dev = &eytz_svc->devices[d];
		uint64		used = dev->bytes + dev->loading;
		uint64		room = used < limit ? limit - used : 0;

		if (dev->failed)
			continue;
		for (j = n; j > 0; j--)
		{
			EytzSvcDevice *o = &eytz_svc->devices[order[j - 1]];
			uint64		oused = o->bytes + o->loading;
			uint64		oroom = oused < limit ? limit - oused : 0;

			if (oroom >= room)
				break;
			order[j] = order[j - 1];
		}
		order[j] = d;
		n++;
	}
	return n;
}

/*
 * A device for a copy of need bytes: the one with the most room, after
 * evicting there what must go; -1 if none can hold it.  tried: a bit per
 * device tried already (not to try again).
 */
static int
place_copy(uint64 need, uint32 tried)
{
	int			order[EYTZ_SVC_MAX_DEVICES];
	int			n = devices_by_room(order);
	int			j;

	for (j = 0; j < n; j++)
		if ((tried & (1U << order[j])) == 0 && make_room(order[j], need))
			return order[j];
	return -1;
}

static EytzSvcStatus
load_begin(int i, EytzSvcSlot *s)
{
	SvcLoad    *ld = &loads[i];
	uint64		need = copy_estimate(&s->meta, &s->inc);
	bool		ok;
	int			r,
				j,
				d;

	drop_load(i);
	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	for (r = 0; r < EYTZ_SVC_MAX_RESIDENT; r++)
		if (eytz_svc->resident[r].used &&
			memcmp(&eytz_svc->resident[r].key, &s->key, sizeof(EytzSvcKey)) == 0)
		{
			s->resident = r;
			LWLockRelease(eytz_svc->lock);
			return ST_RESIDENT;
		}
	LWLockRelease(eytz_svc->lock);
	for (j = 0; j < eytz_svc->nslots; j++)
		if (loads[j].active && memcmp(&loads[j].key, &s->key, sizeof(EytzSvcKey)) == 0)
			return ST_BUSY;

	if ((d = place_copy(need, 0)) < 0)
	{
		if (eytz_svc->ndevices > 1)
			snprintf(s->why, sizeof(s->why),
					 "index \"%s\" needs about " UINT64_FORMAT " MB of %s memory, more than eytzgpu.gpu_memory_limit leaves on any device of the service",
					 NameStr(s->name), need / (1024 * 1024) + 1,
					 eytz_svc->state == SVC_GPU ? "GPU" : "service");
		else
			snprintf(s->why, sizeof(s->why),
					 "index \"%s\" needs about " UINT64_FORMAT " MB of %s memory, more than eytzgpu.gpu_memory_limit of the eytzgpu service leaves",
					 NameStr(s->name), need / (1024 * 1024) + 1,
					 eytz_svc->state == SVC_GPU ? "GPU" : "service");
		return ST_FAILED;
	}
	ld->cxt = AllocSetContextCreate(svc_cxt, "eytzgpu service copy", ALLOCSET_SMALL_SIZES);
	ld->keys = alloc_or_null(ld->cxt, s->meta.nentries * s->meta.key_width);
	ld->tids = alloc_or_null(ld->cxt, s->meta.nentries * sizeof(uint64));
	ok = ld->keys != NULL && ld->tids != NULL;
	for (j = 0; j < s->inc.ncols && ok; j++)
	{
		ld->values[j] = alloc_or_null(ld->cxt, s->meta.nentries * s->inc.width[j]);
		ld->nulls[j] = alloc_or_null(ld->cxt, (s->meta.nentries + 7) / 8);
		ok = ld->values[j] != NULL && ld->nulls[j] != NULL;
	}
	ld->active = true;
	ld->serial = s->serial;
	ld->key = s->key;
	ld->meta = s->meta;
	ld->inc = s->inc;
	ld->device = d;
	ld->reserved = need;
	eytz_svc->devices[d].loading += need;
	if (!ok)
	{
		drop_load(i);
		snprintf(s->why, sizeof(s->why), "the eytzgpu service is out of memory");
		return ST_FAILED;
	}
	return ST_OK;
}

static EytzSvcStatus
load_data(int i, EytzSvcSlot *s, const char *window)
{
	SvcLoad    *ld = &loads[i];
	int			kw = ld->meta.key_width;

	if (!ld->active || ld->serial != s->serial || s->offset + s->count > ld->meta.nentries)
	{
		snprintf(s->why, sizeof(s->why), "the eytzgpu service lost an upload");
		return ST_FAILED;
	}
	memcpy(ld->keys + s->offset * kw, window, s->count * kw);
	memcpy(ld->tids + s->offset, window + s->count * kw, s->count * sizeof(uint64));
	return ST_OK;
}

static EytzSvcStatus
load_column(int i, EytzSvcSlot *s, const char *window)
{
	SvcLoad    *ld = &loads[i];
	int			c = s->column;
	int			width;

	if (!ld->active || ld->serial != s->serial || c < 0 || c >= ld->inc.ncols ||
		s->offset % 8 != 0 || s->offset + s->count > ld->meta.nentries)
	{
		snprintf(s->why, sizeof(s->why), "the eytzgpu service lost an upload");
		return ST_FAILED;
	}
	width = ld->inc.width[c];
	memcpy(ld->values[c] + s->offset * width, window, s->count * width);
	memcpy(ld->nulls[c] + s->offset / 8, window + s->count * width, (s->count + 7) / 8);
	return ST_OK;
}

/* Make slot i's streamed layout resident, pinned by the slot */
static EytzSvcStatus
load_end(int i, EytzSvcSlot *s)
{
	SvcLoad    *ld = &loads[i];
	SvcCopy		copy;
	uint64		bytes;
	int			device;
	int			r = -1;
	int			old;

	if (!ld->active || ld->serial != s->serial)
	{
		snprintf(s->why, sizeof(s->why), "the eytzgpu service lost an upload");
		return ST_FAILED;
	}
	/* a free entry, or the least recently used unpinned one */
	for (old = 0; old < EYTZ_SVC_MAX_RESIDENT && r < 0; old++)
		if (!eytz_svc->resident[old].used)
			r = old;
	if (r < 0 && (r = lru_victim(-1)) >= 0)
	{
		drop_copy(r);
		LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
		eytz_svc->evictions++;
		LWLockRelease(eytz_svc->lock);
	}
	if (r < 0)
	{
		drop_load(i);
		snprintf(s->why, sizeof(s->why), "the eytzgpu service holds %d pinned indexes already",
				 EYTZ_SVC_MAX_RESIDENT);
		return ST_FAILED;
	}
	memset(&copy, 0, sizeof(copy));
	copy.image.img.meta = ld->meta;
	copy.image.inc = ld->inc;
	if (eytz_svc->state == SVC_GPU)
	{
		uint32		tried = 0;

		/* a GPU that is full or fails hands the copy to the next one */
		while (!gpu_upload(ld, ld->device, &copy, &bytes, s->why))
		{
			int			d;

			tried |= 1U << ld->device;
			eytz_svc->devices[ld->device].loading -= ld->reserved;
			eytz_svc->devices[ld->device].failures++;
			if ((d = place_copy(ld->reserved, tried)) < 0)
			{
				eytz_svc->devices[ld->device].loading += ld->reserved;
				drop_load(i);
				return ST_FAILED;
			}
			ereport(LOG,
					(errmsg("eytzgpu service: index \"%s\" goes to GPU %d: %s",
							NameStr(s->name), d, s->why)));
			s->why[0] = '\0';
			ld->device = d;
			eytz_svc->devices[d].loading += ld->reserved;
		}
		device = ld->device;
		drop_load(i);
	}
	else
	{
		/* the streamed arrays are the image */
		copy.image.cxt = ld->cxt;
		copy.image.img.keys = ld->keys;
		copy.image.img.tids = ld->tids;
		memcpy(copy.image.values, ld->values, sizeof(ld->values));
		memcpy(copy.image.nulls, ld->nulls, sizeof(ld->nulls));
		bytes = ld->reserved;
		ld->cxt = NULL;
		device = ld->device;
		drop_load(i);
	}
	copies[r] = copy;
	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->resident[r].used = true;
	eytz_svc->resident[r].device = device;
	eytz_svc->devices[device].bytes += bytes;
	eytz_svc->devices[device].copies++;
	eytz_svc->devices[device].loads++;
	eytz_svc->resident[r].key = s->key;
	eytz_svc->resident[r].name = s->name;
	eytz_svc->resident[r].ndead = copy.image.img.meta.ndead;
	eytz_svc->resident[r].bytes = bytes;
	eytz_svc->resident[r].hits = 0;
	eytz_svc->resident[r].last_used = ++eytz_svc->clock;
	eytz_svc->resident[r].last_used_at = GetCurrentTimestamp();
	eytz_svc->bytes += bytes;
	eytz_svc->loads++;
	s->resident = r;
	LWLockRelease(eytz_svc->lock);

	/* older generations of the index: no new scan asks for them */
	for (old = 0; old < EYTZ_SVC_MAX_RESIDENT; old++)
	{
		EytzSvcKey *k = &eytz_svc->resident[old].key;
		bool		stale;

		LWLockAcquire(eytz_svc->lock, LW_SHARED);
		stale = old != r && eytz_svc->resident[old].used &&
			k->dboid == s->key.dboid && k->indexoid == s->key.indexoid &&
			k->generation < s->key.generation && !pinned(old);
		LWLockRelease(eytz_svc->lock);
		if (stale)
			drop_copy(old);
	}
	return ST_OK;
}

/*
 * The CPU answer: the seam's batched search over the image, then the sort.
 * The queries are searched sorted by low key, as the seam's own image view
 * does (neighbouring searches share their upper path): points within 2^32
 * of the least key as packed 8-byte records, others as an order.  The
 * answer must be a prefix of the batch: when the matches of the whole
 * batch do not fit in max, a shorter prefix is searched.  With rows_in_order
 * (points, rows ascending) the matches of one TID come in row order either
 * way (the sort by key is stable).
 */
static bool
cpu_lookup(int r, EytzSvcSlot *s, const uint64 *lo, const uint64 *hi,
		   const uint32 *rows, bool points, bool rows_in_order, EytzMatch *out)
{
	EytzStage	stage;
	EytzStage  *st = NULL;
	uint64		base = PG_UINT64_MAX,
				top = 0;
	uint64	   *packed = NULL;
	uint32		n = 0;
	uint32		p;
	uint32		i;
	int			j;

	if (cpu_order_cap < s->nq)
	{
		if (cpu_order)
			pfree(cpu_order);
		/* twice: the sort's scratch */
		cpu_order = eytz_alloc_large(svc_cxt, sizeof(EytzMatch) * (Size) s->nq * 2);
		cpu_order_cap = s->nq;
	}
	if (cpu_scratch_cap < s->max)
	{
		if (cpu_scratch)
		{
			pfree(cpu_scratch);
			pfree(cpu_have);
		}
		cpu_scratch = eytz_alloc_large(svc_cxt, sizeof(EytzMatch) * (Size) s->max);
		cpu_have = MemoryContextAllocHuge(svc_cxt, sizeof(bool) * (Size) s->max);
		cpu_scratch_cap = s->max;
	}
	/* the values go to the window at the matches' positions as found */
	if (s->want)
	{
		memset(&stage, 0, sizeof(stage));
		stage.ncols = s->ncols;
		stage.have = cpu_have;
		stage.keys = eytz_svc_keys((char *) out, s->max);
		for (j = 0; j < s->ncols; j++)
		{
			stage.cols[j] = s->cols[j];
			stage.values[j] = eytz_svc_values((char *) out, s->max, j);
			stage.isnull[j] = eytz_svc_isnull((char *) out, s->max, s->ncols, j);
		}
		st = &stage;
	}
	for (i = 0; i < s->nq; i++)
	{
		base = Min(base, lo[i]);
		top = Max(top, lo[i]);
	}
	/*
	 * The first p queries sorted and searched; while their matches do not
	 * all fit, p becomes a little less than the number of those searched
	 * that did (a prefix of that size fits most likely), down to the
	 * first query alone.  A batch of more queries than matches fit starts
	 * from twice as many queries as fit (with misses, more queries fit
	 * than matches): the seam asks for what is left of its chunk, often a
	 * few matches, and sorting the whole window's queries for those costs
	 * more than the search.
	 */
	p = s->nq <= s->max ? s->nq : Min(s->nq, 2 * s->max + 16);
	for (;;)
	{
		uint32		done;

		packed = NULL;
		if (points && p > 0 && top - base <= PG_UINT32_MAX)
		{
			packed = (uint64 *) cpu_order;
			for (i = 0; i < p; i++)
				packed[i] = (lo[i] - base) << 32 | rows[i];
			eytz_sort_u64(packed, p, packed + p, ~(uint64) PG_UINT32_MAX);
		}
		else
		{
			for (i = 0; i < p; i++)
			{
				cpu_order[i].tid = lo[i];
				cpu_order[i].row = i;
				cpu_order[i].unused = rows[i];
			}
			eytz_match_sort_keys(cpu_order, p, cpu_order + p);
		}
		n = 0;
		done = eytz_image_search(&copies[r].image, cpu_order, packed, base,
								 0, p, hi, s->max, out, &n, st, false);
		if (done == p)
			break;
		/* a little fewer than the sorted pass took: a prefix that fits */
		p = done - done / 8;
	}
	s->nq_done = p;
	s->staged = s->want;
	s->nout = eytz_match_sort(out, n, cpu_scratch, rows_in_order);
	s->kernel_ms = 0;
	s->transfer_ms = 0;
	return true;
}

/*
 * Answer slot s's lookup; on the GPU only submit it (*pending: then
 * lookup_finish waits for it)
 */
static EytzSvcStatus
lookup(EytzSvcSlot *s, char *window, bool *pending)
{
	int			r = s->resident;
	const uint64 *lo = (const uint64 *) window;
	const uint64 *hi = s->points ? NULL : lo + s->nq;
	const uint32 *rows = (const uint32 *) (lo + 2 * (Size) s->nq);
	EytzMatch  *out = (EytzMatch *) (window + eytz_svc_out_offset(s->nq));
	bool		points,
				ascending,
				ok;
	int			j;

	if (r < 0 || !eytz_svc->resident[r].used ||
		memcmp(&eytz_svc->resident[r].key, &s->key, sizeof(EytzSvcKey)) != 0)
	{
		snprintf(s->why, sizeof(s->why), "the eytzgpu service does not hold this generation");
		return ST_FAILED;
	}
	for (j = 0; j < s->ncols; j++)
		if (s->cols[j] < 0 || s->cols[j] >= copies[r].image.inc.ncols)
		{
			snprintf(s->why, sizeof(s->why), "the eytzgpu service's copy has no included column %d", s->cols[j] + 1);
			return ST_FAILED;
		}
	/* the batch's shape, once: hi is NULL for points, it reads lo and rows then */
	eytz_gpu_batch_shape(lo, hi, rows, s->nq, &points, &ascending);
	if (eytz_svc->state == SVC_GPU)
		ok = *pending = gpu_lookup_start(&copies[r], eytz_svc->resident[r].device,
										 s, lo, points ? NULL : hi, rows, ascending);
	else
		ok = cpu_lookup(r, s, lo, hi, rows, points, points && ascending, out);
	/* finish counts the hit, under the lock it hands the answer over with */
	return ok ? ST_OK : ST_FAILED;
}

/* The answer of slot i's lookup submitted to the GPU */
static EytzSvcStatus
lookup_finish(int i)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	int			r = s->resident;
	EytzMatch  *out = (EytzMatch *) (eytz_svc_window(i) + eytz_svc_out_offset(s->nq));

	return gpu_lookup_finish(&copies[r], eytz_svc->resident[r].device, s, out) ?
		ST_OK : ST_FAILED;
}

/*
 * Answer slot i's request; an error becomes a failed answer.  *pending: a
 * lookup submitted to the GPU, answered by lookup_finish.
 */
static EytzSvcStatus
answer(int i, bool *pending)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	char	   *window = eytz_svc_window(i);
	volatile EytzSvcStatus status = ST_FAILED;

	s->why[0] = '\0';
	s->nout = 0;
	s->nq_done = 0;
	s->staged = false;
	*pending = false;
	PG_TRY();
	{
		switch (s->op)
		{
			case OP_LOAD_BEGIN:
				status = load_begin(i, s);
				break;
			case OP_LOAD_DATA:
				status = load_data(i, s, window);
				break;
			case OP_LOAD_COLUMN:
				status = load_column(i, s, window);
				break;
			case OP_LOAD_END:
				status = load_end(i, s);
				break;
			case OP_LOOKUP:
				status = lookup(s, window, pending);
				break;
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		LWLockReleaseAll();
		MemoryContextSwitchTo(svc_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		strlcpy(s->why, edata->message, sizeof(s->why));
		FreeErrorData(edata);
		s->nout = 0;
		s->nq_done = 0;
		s->staged = false;
		status = ST_FAILED;
	}
	PG_END_TRY();
	return status;
}

/*
 * Move the progress mark to now plus what the request taken now may take
 * (allow_us); backends wait eytzgpu.service_timeout beyond it
 */
static void
progress(int64 allow_us)
{
	pg_atomic_write_u64(&eytz_svc->progress_at, (uint64) (GetCurrentTimestamp() + allow_us));
}

/*
 * What slot i's request may take: a microsecond per 8 bytes it reads or
 * writes (slower than any device), the whole window for a lookup or a piece
 * of an upload, the whole copy for the upload's end (copied to the GPU)
 */
static int64
request_allowance(int i)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	uint64		bytes = eytz_svc->slot_bytes;

	if (s->op == OP_LOAD_END && loads[i].active)
		bytes += loads[i].reserved;
	return (int64) (bytes / 8);
}

/* Has the owner given slot s up without the lock? */
static bool
forsaken(EytzSvcSlot *s)
{
	return pg_atomic_read_u32(&s->forsaken) != 0;
}

/* Free slot s (lock held) */
static void
free_slot(EytzSvcSlot *s)
{
	s->state = SLOT_FREE;
	s->resident = -1;
	pg_atomic_write_u32(&s->forsaken, 0);
}

/* Hand slot i's answer to its owner, or free the slot if the owner left */
static void
finish(int i, EytzSvcStatus status)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	int			owner = -1;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	s->status = status;
	if (status == ST_FAILED)
	{
		eytz_svc->failures++;
		if (s->op == OP_LOOKUP && s->resident >= 0 && eytz_svc->resident[s->resident].used)
			eytz_svc->devices[eytz_svc->resident[s->resident].device].failures++;
	}
	else if (s->op == OP_LOOKUP && s->resident >= 0 &&
			 eytz_svc->resident[s->resident].used)
	{
		EytzSvcResident *res = &eytz_svc->resident[s->resident];

		res->hits++;
		res->last_used = ++eytz_svc->clock;
		res->last_used_at = GetCurrentTimestamp();
		eytz_svc->devices[res->device].hits++;
		eytz_svc->hits++;
	}
	if (s->state == SLOT_ABANDONED || forsaken(s))
		free_slot(s);
	else
	{
		s->state = SLOT_DONE;
		owner = s->owner_procno;
	}
	LWLockRelease(eytz_svc->lock);
	if (owner >= 0)
		SetLatch(&GetPGProcByNumber(owner)->procLatch);
}

/* Drop the uploads of slots that were freed (or claimed again) */
static void
drop_orphan_loads(void)
{
	int			i;

	for (i = 0; i < eytz_svc->nslots; i++)
		if (loads[i].active &&
			(eytz_svc->slots[i].state == SLOT_FREE ||
			 eytz_svc->slots[i].serial != loads[i].serial))
			drop_load(i);
}

/*
 * The requests of a round, oldest first, now marked as being answered
 * (into taken, at most max; returns how many): at most one lookup per
 * copy, as a copy answers one batch at a time, so that lookups of
 * different copies (on one GPU, or on several) run at once.  The same pass
 * frees the slots of owners that left while the worker answered them, or
 * that are gone (reclaim), and *loads_to_drop says whether a freed slot
 * may have left an upload behind.
 */
static int
take_requests(int *taken, int max, bool *loads_to_drop)
{
	int			n = 0;
	int			i;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		if (s->state != SLOT_FREE &&
			(s->state == SLOT_ABANDONED || forsaken(s) ||
			 GetPGProcByNumber(s->owner_procno)->pid != s->owner_pid))
			free_slot(s);
		if (loads[i].active && (s->state == SLOT_FREE || s->serial != loads[i].serial))
			*loads_to_drop = true;
	}
	while (n < max)
	{
		int			best = -1;

		for (i = 0; i < eytz_svc->nslots; i++)
		{
			EytzSvcSlot *s = &eytz_svc->slots[i];
			bool		busy = false;
			int			j;

			if (s->state != SLOT_SUBMITTED || s->incarnation != eytz_svc->incarnation ||
				(best >= 0 && s->seq >= eytz_svc->slots[best].seq))
				continue;
			for (j = 0; j < n && s->op == OP_LOOKUP; j++)
				busy |= eytz_svc->slots[taken[j]].op == OP_LOOKUP &&
					eytz_svc->slots[taken[j]].resident == s->resident;
			if (!busy)
				best = i;
		}
		if (best < 0)
			break;
		eytz_svc->slots[best].state = SLOT_WORKING;
		taken[n++] = best;
	}
	LWLockRelease(eytz_svc->lock);
	return n;
}

/*
 * Is a request submitted?  A look without the lock, while the worker
 * spins for EYTZ_SVC_SPIN_US before it sleeps on its latch.
 */
static bool
request_waiting(void)
{
	int			i;

	for (i = 0; i < eytz_svc->nslots; i++)
		if (((volatile EytzSvcSlot *) &eytz_svc->slots[i])->state == SLOT_SUBMITTED)
			return true;
	return false;
}


/*
 * GPU d failed other than for want of memory: with one GPU, the worker
 * exits and the postmaster starts a fresh one (and context) a second
 * later; with several, d takes no more copies and its copies are dropped
 * (lookups pinning them fail: their joins continue on the CPU with a
 * WARNING, and the next joins load the index on another GPU), until no GPU
 * is left.
 */
static void
device_failed(int d)
{
	int			left = 0;
	int			r;

	device_broken[d] = false;
	if (eytz_svc->ndevices > 1)
		ereport(LOG,
				(errmsg("eytzgpu service stops using GPU %d after a failure: %s",
						d, last_gpu_error)));
	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->devices[d].failed = true;
	for (r = 0; r < eytz_svc->ndevices; r++)
		left += !eytz_svc->devices[r].failed;
	LWLockRelease(eytz_svc->lock);
	if (left == 0)
	{
		ereport(LOG,
				(errmsg("eytzgpu service restarts after a GPU failure: %s",
						last_gpu_error)));
		proc_exit(1);
	}
	for (r = 0; r < EYTZ_SVC_MAX_RESIDENT; r++)
		if (eytz_svc->resident[r].used && eytz_svc->resident[r].device == d)
			drop_copy(r);
}

/* On exit: backends waiting on this incarnation go on without it */
static void
svc_exit(int code, Datum arg)
{
	int			i;

	LWLockReleaseAll();
	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->state = SVC_STOPPED;
	eytz_svc->procno = EYTZ_INVALID_PROCNO;
	eytz_svc->bytes = 0;
	eytz_svc->ndevices = 0;
	memset(eytz_svc->resident, 0, sizeof(eytz_svc->resident));
	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		if (s->state == SLOT_SUBMITTED || s->state == SLOT_WORKING)
			SetLatch(&GetPGProcByNumber(s->owner_procno)->procLatch);
	}
	LWLockRelease(eytz_svc->lock);
}

/*
 * Start as a new incarnation with device state and its ndevices devices:
 * old requests fail
 */
static void
svc_start(EytzSvcState state, const char *detail, const EytzSvcDevice *devices,
		  int ndevices)
{
	int			i;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->incarnation++;
	eytz_svc->pid = MyProcPid;
	eytz_svc->procno = EytzMyProcNumber();
	eytz_svc->state = state;
	progress(0);
	strlcpy(eytz_svc->detail, detail, sizeof(eytz_svc->detail));
	eytz_svc->bytes = 0;
	memset(eytz_svc->resident, 0, sizeof(eytz_svc->resident));
	eytz_svc->ndevices = ndevices;
	memcpy(eytz_svc->devices, devices, sizeof(EytzSvcDevice) * ndevices);
	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		s->resident = -1;
		if (s->state == SLOT_ABANDONED || (s->state != SLOT_FREE && forsaken(s)))
			free_slot(s);
		else if (s->state == SLOT_SUBMITTED || s->state == SLOT_WORKING)
		{
			s->status = ST_FAILED;
			strlcpy(s->why, "the eytzgpu service restarted", sizeof(s->why));
			s->state = SLOT_DONE;
		}
	}
	LWLockRelease(eytz_svc->lock);
	on_shmem_exit(svc_exit, (Datum) 0);
}

/*
 * The device eytzgpu.service_device asks for and this machine has, and
 * its devices (*ndevices of them): every GPU CUDA shows, or
 * eytzgpu.service_cpu_devices CPU ones
 */
static EytzSvcState
choose_device(char *detail, size_t len, EytzSvcDevice *devices, int *ndevices)
{
	char	   *why = NULL;
	int			d;

	detail[0] = '\0';
	*ndevices = 0;
	if (eytz_service_device == EYTZ_SERVICE_CPU)
	{
		*ndevices = Min(eytz_service_cpu_devices, EYTZ_SVC_MAX_DEVICES);
		for (d = 0; d < *ndevices; d++)
		{
			memset(&devices[d], 0, sizeof(EytzSvcDevice));
			snprintf(devices[d].name, sizeof(devices[d].name), "cpu %d", d);
		}
		if (*ndevices > 1)
			snprintf(detail, len, "%d CPU devices", *ndevices);
		return SVC_CPU;
	}
	if (eytz_device_available(&why) &&
		(*ndevices = gpu_devices(devices, EYTZ_SVC_MAX_DEVICES)) > 0)
	{
		if (*ndevices == 1)
			strlcpy(detail, devices[0].name, len);
		else
			snprintf(detail, len, "%d GPUs: %s", *ndevices, devices[0].name);
		return SVC_GPU;
	}
	strlcpy(detail, why, len);
	ereport(eytz_service_device == EYTZ_SERVICE_GPU ? WARNING : LOG,
			(errmsg("eytzgpu service found no GPU: backends run their joins on the CPU"),
			 errdetail("The GPU cannot be used: %s.", why)));
	return SVC_SLEEPING;
}

void
eytz_service_main(Datum arg)
{
	char		detail[128];
	EytzSvcState state;
	EytzSvcDevice devices[EYTZ_SVC_MAX_DEVICES];
	int			ndevices;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	if (eytz_svc == NULL)
		proc_exit(0);			/* cannot happen: registered with the memory */
	/* no database, like the logical replication launcher */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	svc_cxt = AllocSetContextCreate(TopMemoryContext, "eytzgpu service",
									ALLOCSET_DEFAULT_SIZES);
	loads = MemoryContextAllocZero(svc_cxt, sizeof(SvcLoad) * eytz_svc->nslots);
	MemoryContextSwitchTo(svc_cxt);
	state = choose_device(detail, sizeof(detail), devices, &ndevices);
	svc_start(state, detail, devices, ndevices);
	ereport(LOG,
			(errmsg("eytzgpu service started: %s%s%s",
					state == SVC_GPU ? "GPU" : state == SVC_CPU ? "CPU images" : "sleeping",
					detail[0] ? ", " : "", detail)));

	for (;;)
	{
		int			taken[EYTZ_SVC_ROUND];
		bool		pending[EYTZ_SVC_ROUND];
		int			n,
					k,
					d;

		ResetLatch(MyLatch);
		progress(0);
		/*
		 * procsignal barriers: DROP DATABASE and ALTER TABLESPACE wait for
		 * every process to absorb theirs (not CHECK_FOR_INTERRUPTS: a
		 * pg_cancel_backend would then end the service with an ERROR)
		 */
		if (ProcSignalBarrierPending)
			ProcessProcSignalBarrier();
		if (ShutdownRequestPending)
			proc_exit(1);		/* restarted unless the server shuts down */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			for (d = 0; state != SVC_SLEEPING && d < eytz_svc->ndevices; d++)
				(void) make_room(d, 0);
		}
		for (;;)
		{
			bool		orphans = false;
			TimestampTz spin_until;
			int			spins;
			int64		allow = 0;

			if (state == SVC_SLEEPING)
				break;
			n = take_requests(taken, EYTZ_SVC_ROUND, &orphans);
			if (orphans)
				drop_orphan_loads();
			if (n == 0)
			{
				/*
				 * Before sleeping, look for a next request for EYTZ_SVC_SPIN_US:
				 * a join's next batch often comes that soon, and a wakeup
				 * through the latch costs more
				 */
				spin_until = GetCurrentTimestamp() + EYTZ_SVC_SPIN_US;
				for (spins = 0; !request_waiting() && GetCurrentTimestamp() < spin_until; spins++)
					eytz_svc_spin_turn(spins);
				if (!request_waiting())
					break;
				continue;
			}
			for (k = 0; k < n; k++)
				allow += request_allowance(taken[k]);
			progress(allow);

			/*
			 * Submit the round's GPU lookups and answer the rest at once;
			 * then wait for the GPU's answers in turn, while the others run
			 */
			for (k = 0; k < n; k++)
			{
				EytzSvcStatus status = answer(taken[k], &pending[k]);

				if (!pending[k])
					finish(taken[k], status);
			}
			for (k = 0; k < n; k++)
				if (pending[k])
					finish(taken[k], lookup_finish(taken[k]));
			progress(0);
			if (ProcSignalBarrierPending)
				ProcessProcSignalBarrier();
			for (d = 0; d < eytz_svc->ndevices; d++)
				if (device_broken[d])
					device_failed(d);
			if (ShutdownRequestPending)
				proc_exit(1);
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, PG_WAIT_EXTENSION);
	}
}
