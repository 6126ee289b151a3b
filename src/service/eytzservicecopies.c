/*
 * eytzservicecopies.c
 *		The service worker's resident copies (interface:
 *		eytzservicecopies.h): layouts streamed in by backends, placed on a
 *		device, evicted, and the lookups on them.
 *
 * A copy is a GPU copy of the layout and its included columns, held through
 * eytzgpucopy.h as the backends' own copies are, or on CPU pseudo-devices a
 * CPU image of the index searched with the seam's own batched search
 * (eytzimage.c).  Each device's copies are bounded by
 * eytzgpu.gpu_memory_limit as this process reads it (postgresql.conf,
 * reloaded on SIGHUP); a copy goes to the device with the most room, and
 * unpinned copies are evicted least recently used first.  A GPU failure
 * other than memory marks that GPU broken for the main loop, which stops
 * using it (eytz_svc_device_failed): its copies are dropped, their
 * requests fail and their joins continue on the CPU; with no GPU left the
 * process ends after the round's answers.
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
#include "eytzservicecopies.h"

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

static SvcLoad *loads;
static MemoryContext copies_cxt;
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
int
eytz_svc_gpu_devices(EytzSvcDevice *devices, int max)
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
	/* a batch in flight there, though its backend abandoned the slot */
	return copies[r].in_flight;
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
		return eytz_gpu_copy_estimate(meta, inc);
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

EytzSvcStatus
eytz_svc_load_begin(int i, EytzSvcSlot *s)
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
	ld->cxt = AllocSetContextCreate(copies_cxt, "eytzgpu service copy", ALLOCSET_SMALL_SIZES);
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

EytzSvcStatus
eytz_svc_load_data(int i, EytzSvcSlot *s, const char *window)
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

EytzSvcStatus
eytz_svc_load_column(int i, EytzSvcSlot *s, const char *window)
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
EytzSvcStatus
eytz_svc_load_end(int i, EytzSvcSlot *s)
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
		cpu_order = eytz_alloc_large(copies_cxt, sizeof(EytzMatch) * (Size) s->nq * 2);
		cpu_order_cap = s->nq;
	}
	if (cpu_scratch_cap < s->max)
	{
		if (cpu_scratch)
		{
			pfree(cpu_scratch);
			pfree(cpu_have);
		}
		cpu_scratch = eytz_alloc_large(copies_cxt, sizeof(EytzMatch) * (Size) s->max);
		cpu_have = MemoryContextAllocHuge(copies_cxt, sizeof(bool) * (Size) s->max);
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
 * Answer slot s's lookup; on the GPU only submit it (*in_flight: the copy
 * it went to, then eytz_svc_lookup_finish waits for it; else -1)
 */
EytzSvcStatus
eytz_svc_lookup(EytzSvcSlot *s, char *window, int *in_flight)
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
	{
		ok = gpu_lookup_start(&copies[r], eytz_svc->resident[r].device,
							  s, lo, points ? NULL : hi, rows, ascending);
		*in_flight = ok ? r : -1;
	}
	else
		ok = cpu_lookup(r, s, lo, hi, rows, points, points && ascending, out);
	/* finish counts the hit, under the lock it hands the answer over with */
	return ok ? ST_OK : ST_FAILED;
}

/*
 * The answer of slot i's lookup submitted to copy r of the GPU (not the
 * slot's resident: a backend that abandons its slot clears that)
 */
EytzSvcStatus
eytz_svc_lookup_finish(int i, int r)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	EytzMatch  *out = (EytzMatch *) (eytz_svc_window(i) + eytz_svc_out_offset(s->nq));

	return gpu_lookup_finish(&copies[r], eytz_svc->resident[r].device, s, out) ?
		ST_OK : ST_FAILED;
}

bool
eytz_svc_load_orphaned(int i)
{
	return loads[i].active &&
		(eytz_svc->slots[i].state == SLOT_FREE ||
		 eytz_svc->slots[i].serial != loads[i].serial);
}

uint64
eytz_svc_load_reserved(int i)
{
	return loads[i].active ? loads[i].reserved : 0;
}

void
eytz_svc_evict_to_limit(int d)
{
	(void) make_room(d, 0);
}

bool
eytz_svc_device_broken(int d)
{
	return device_broken[d];
}

void
eytz_svc_copies_init(MemoryContext cxt)
{
	copies_cxt = cxt;
	loads = MemoryContextAllocZero(cxt, sizeof(SvcLoad) * eytz_svc->nslots);
}

/* Drop the uploads of slots that were freed (or claimed again) */
void
eytz_svc_drop_orphan_loads(void)
{
	int			i;

	for (i = 0; i < eytz_svc->nslots; i++)
		if (eytz_svc_load_orphaned(i))
			drop_load(i);
}

/*
 * GPU d failed other than for want of memory: with one GPU, the worker
 * exits and the postmaster starts a fresh one (and context) a second
 * later; with several, d takes no more copies and its copies are dropped
 * (lookups pinning them fail: their joins continue on the CPU with a
 * WARNING, and the next joins load the index on another GPU), until no GPU
 * is left.
 */
void
eytz_svc_device_failed(int d)
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
