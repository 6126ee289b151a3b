/*
 * eytzservicecopies.c
 *		The service worker's resident copies (interface:
 *		eytzservicecopies.h): layouts streamed in by backends, placed on a
 *		device or cut into slices over several, and evicted (the lookups
 *		on them: eytzservicelookup.c).
 *
 * A copy is a GPU copy of the layout and its included columns, held through
 * eytzgpucopy.h as the backends' own copies are, or on CPU pseudo-devices a
 * CPU image of the index searched with the seam's own batched search
 * (eytzimage.c).  Each device's copies are bounded by
 * eytzgpu.gpu_memory_limit as this process reads it (postgresql.conf,
 * reloaded on SIGHUP); a copy goes to the device with the most room, and
 * unpinned copies are evicted least recently used first.  A copy no device
 * can hold whole is cut by key range into slices, one per device, each
 * sized to its device's room and laid out as a layout of its own (the rank
 * walks of eytzbuild.c give each entry's slot in the whole and in its
 * slice); it is placed, counted and evicted as one copy.  A GPU failure
 * other than memory marks that GPU broken for the main loop, which stops
 * using it (eytz_svc_device_failed): its copies are dropped, their
 * requests fail and their joins continue on the CPU; with no GPU left the
 * process ends once none of its lookups is in flight.
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

/* A layout being streamed in through slot i */
typedef struct SvcLoad
{
	bool		active;
	uint64		serial;			/* of the slot's claim */
	EytzSvcKey	key;
	EytzMetaPageData meta;
	int			device;			/* where it goes (-1: in slices) */
	uint64		reserved;		/* bytes counted against the device's limit */
	/* too large for any one device: key-range slices, in key order */
	int			nslices;
	int			slice_device[EYTZ_SVC_MAX_DEVICES];
	uint64		slice_entries[EYTZ_SVC_MAX_DEVICES];
	uint64		slice_reserved[EYTZ_SVC_MAX_DEVICES];
	MemoryContext cxt;			/* holds the arrays */
	EytzInclude inc;
	char	   *keys;
	uint64	   *tids;
	char	   *values[EYTZ_MAX_INCLUDE];
	uint8	   *nulls[EYTZ_MAX_INCLUDE];
} SvcLoad;

SvcCopy		eytz_svc_copies[EYTZ_SVC_MAX_RESIDENT];
MemoryContext eytz_svc_copies_cxt;

static SvcLoad *loads;
/* devices that failed other than for want of memory, not yet dropped */
static bool device_broken[EYTZ_SVC_MAX_DEVICES];
static char last_gpu_error[256];

static void free_slices(SvcCopy *copy, int n);

/*
 * A GPU failure on device as s->why-sized why (naming the GPU when there
 * are several); a failure other than memory marks the device broken
 */
bool
eytz_svc_gpu_failed(char *why, int device, const EytzGpuFailure *failure)
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
		return eytz_svc_gpu_failed(why, device, &failure);
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
	return eytz_svc_copies[r].in_flight;
}

/* Drop copy r */
static void
drop_copy(int r)
{
	EytzSvcResident *res = &eytz_svc->resident[r];
	SvcCopy    *copy = &eytz_svc_copies[r];
	int			k;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->bytes -= res->bytes;
	if (res->nslices == 0)
	{
		eytz_svc->devices[res->device].bytes -= res->bytes;
		eytz_svc->devices[res->device].copies--;
	}
	for (k = 0; k < res->nslices; k++)
	{
		eytz_svc->devices[res->slice_device[k]].bytes -= res->slice_bytes[k];
		eytz_svc->devices[res->slice_device[k]].copies--;
	}
	res->used = false;
	res->nslices = 0;
	LWLockRelease(eytz_svc->lock);
	if (copy->slices)
		free_slices(copy, copy->nslices);
	if (copy->gpu.handle)
		eytz_gpu_copy_free(&copy->gpu);
	if (copy->image.cxt)
		MemoryContextDelete(copy->image.cxt);
	memset(copy, 0, sizeof(SvcCopy));
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
			(d < 0 || eytz_svc_resident_on(&eytz_svc->resident[r], d)) &&
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

/* What load ld counts against its devices' limits, no longer */
static void
unreserve(SvcLoad *ld)
{
	int			k;

	if (ld->nslices == 0)
		eytz_svc->devices[ld->device].loading -= ld->reserved;
	for (k = 0; k < ld->nslices; k++)
		eytz_svc->devices[ld->slice_device[k]].loading -= ld->slice_reserved[k];
	ld->reserved = 0;
	ld->nslices = 0;
}

static void
drop_load(int i)
{
	SvcLoad    *ld = &loads[i];

	if (!ld->active)
		return;
	if (ld->cxt)
		MemoryContextDelete(ld->cxt);
	unreserve(ld);
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

/* Room under device d's limit now */
static uint64
room_on(int d)
{
	uint64		limit = (uint64) eytz_gpu_memory_limit_mb * 1024 * 1024;
	EytzSvcDevice *dev = &eytz_svc->devices[d];
	uint64		used = dev->bytes + dev->loading;

	return used < limit ? limit - used : 0;
}

/*
 * A copy of meta's layout that no device holds whole (with what is not
 * pinned evicted): key-range slices, one per device, each sized to the room
 * its device has, the roomiest device's first, each slice its own layout
 * (built at the load's end).  Reserves their room in ld; false if the
 * devices together cannot hold it.
 */
static bool
plan_slices(SvcLoad *ld, const EytzMetaPageData *meta, const EytzInclude *inc)
{
	uint64		n = meta->nentries;
	uint64		need = copy_estimate(meta, inc);
	uint64		per_entry;
	uint64		left = n;
	int			order[EYTZ_SVC_MAX_DEVICES];
	int			nd,
				j;

	if (eytz_svc->ndevices < 2 || n < 64 || n > PG_UINT32_MAX)
		return false;
	per_entry = need / n + 1;
	/* evict what is not pinned until the devices' rooms add up */
	for (;;)
	{
		uint64		total = 0;
		int			r;

		nd = devices_by_room(order);
		for (j = 0; j < nd; j++)
			total += room_on(order[j]);
		if (nd >= 2 && total >= need + need / 16)
			break;
		if ((r = lru_victim(-1)) < 0)
			return false;
		drop_copy(r);
		LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
		eytz_svc->evictions++;
		LWLockRelease(eytz_svc->lock);
	}
	ld->nslices = 0;
	ld->reserved = 0;
	for (j = 0; j < nd && left > 0; j++)
	{
		uint64		room = room_on(order[j]);
		uint64		count = Min(left, room / per_entry);
		uint64		bytes = 0;
		EytzMetaPageData part = *meta;

		/* the estimate is not quite linear: a little less until it fits */
		while (count > 0)
		{
			eytz_set_layout_meta(&part, count, meta->key_width, meta->fanout,
								 meta->keys_start);
			if ((bytes = copy_estimate(&part, inc)) <= room)
				break;
			count -= count / 64 + 1;
		}
		if (count == 0)
			continue;
		ld->slice_device[ld->nslices] = order[j];
		ld->slice_entries[ld->nslices] = count;
		ld->slice_reserved[ld->nslices] = bytes;
		ld->reserved += bytes;
		eytz_svc->devices[order[j]].loading += bytes;
		ld->nslices++;
		left -= count;
	}
	if (left > 0 || ld->nslices < 2)
	{
		unreserve(ld);
		return false;
	}
	ld->device = -1;
	return true;
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

	if ((d = place_copy(need, 0)) < 0 && plan_slices(ld, &s->meta, &s->inc))
		need = ld->reserved;
	else if (d < 0)
	{
		if (eytz_svc->ndevices > 1)
			snprintf(s->why, sizeof(s->why),
					 "index \"%s\" needs about " UINT64_FORMAT " MB of %s memory, more than eytzgpu.gpu_memory_limit leaves on all its devices",
					 NameStr(s->name), need / (1024 * 1024) + 1,
					 eytz_svc->state == SVC_GPU ? "GPU" : "service");
		else
			snprintf(s->why, sizeof(s->why),
					 "index \"%s\" needs about " UINT64_FORMAT " MB of %s memory, more than eytzgpu.gpu_memory_limit of the eytzgpu service leaves",
					 NameStr(s->name), need / (1024 * 1024) + 1,
					 eytz_svc->state == SVC_GPU ? "GPU" : "service");
		return ST_FAILED;
	}
	ld->cxt = AllocSetContextCreate(eytz_svc_copies_cxt, "eytzgpu service copy", ALLOCSET_SMALL_SIZES);
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
	if (ld->nslices == 0)
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

/* Free what slices copy->slices[0..n) hold */
static void
free_slices(SvcCopy *copy, int n)
{
	int			k;

	for (k = 0; k < n; k++)
	{
		if (copy->slices[k].gpu.handle)
			eytz_gpu_copy_free(&copy->slices[k].gpu);
		if (copy->slices[k].image.cxt)
			MemoryContextDelete(copy->slices[k].image.cxt);
	}
	pfree(copy->slices);
	copy->slices = NULL;
	copy->nslices = 0;
}

/*
 * The entries of ld's layout in key order, cut into ld's slices: each
 * slice its own layout (walking the ranks of the whole layout and of the
 * slice's gives each entry's slot in both), uploaded to its GPU or kept as
 * its CPU image.  bytes[k]: what slice k holds.  false with why (nothing
 * held) when a slice cannot be made.
 */
static bool
build_slices(SvcLoad *ld, SvcCopy *copy, uint64 *bytes, char *why)
{
	int			kw = ld->meta.key_width;
	EytzRankWalk whole;
	bool		ok = true;
	int			k,
				c;

	copy->slices = MemoryContextAllocZero(eytz_svc_copies_cxt, sizeof(SvcSlice) * ld->nslices);
	eytz_rank_walk_init(&whole, ld->meta.nentries, ld->meta.fanout);
	for (k = 0; k < ld->nslices && ok; k++)
	{
		SvcSlice   *slice = &copy->slices[k];
		EytzImage  *img = &slice->image;
		uint64		n = ld->slice_entries[k];
		MemoryContext cxt = AllocSetContextCreate(eytz_svc_copies_cxt, "eytzgpu service slice",
												  ALLOCSET_SMALL_SIZES);
		EytzRankWalk part;
		uint64		i;
		uint32		level;

		copy->nslices = k + 1;
		slice->device = ld->slice_device[k];
		img->img.meta = ld->meta;
		eytz_set_layout_meta(&img->img.meta, n, kw, ld->meta.fanout, ld->meta.keys_start);
		img->inc = ld->inc;
		img->img.keys = alloc_or_null(cxt, n * kw);
		img->img.tids = alloc_or_null(cxt, n * sizeof(uint64));
		ok = img->img.keys != NULL && img->img.tids != NULL;
		for (c = 0; c < ld->inc.ncols && ok; c++)
		{
			img->values[c] = alloc_or_null(cxt, n * ld->inc.width[c]);
			img->nulls[c] = alloc_or_null(cxt, (n + 7) / 8);
			ok = img->values[c] != NULL && img->nulls[c] != NULL;
			if (ok)
				memset(img->nulls[c], 0, (n + 7) / 8);
		}
		if (!ok)
		{
			MemoryContextDelete(cxt);
			snprintf(why, sizeof(((EytzSvcSlot *) NULL)->why), "the eytzgpu service is out of memory");
			break;
		}
		eytz_rank_walk_init(&part, n, ld->meta.fanout);
		for (i = 0; i < n; i++)
		{
			uint64		from = eytz_rank_walk_next(&whole, &level);
			uint64		to = eytz_rank_walk_next(&part, &level);
			uint64		key = kw == 4 ? ((uint32 *) ld->keys)[from] : ((uint64 *) ld->keys)[from];

			memcpy((char *) img->img.keys + to * kw, ld->keys + from * kw, kw);
			img->img.tids[to] = ld->tids[from];
			if (eytz_tid_block(ld->tids[from]) == InvalidBlockNumber)
				img->img.meta.ndead++;
			for (c = 0; c < ld->inc.ncols; c++)
			{
				int			w = ld->inc.width[c];

				memcpy(img->values[c] + to * w, ld->values[c] + from * w, w);
				if ((ld->nulls[c][from / 8] >> (from % 8)) & 1)
					img->nulls[c][to / 8] |= 1 << (to % 8);
			}
			if (i == 0)
				slice->minkey = key;
			slice->maxkey = key;
		}
		pfree(part.next_slot);
		if (eytz_svc->state == SVC_GPU)
		{
			EytzGpuFailure failure;

			ok = eytz_gpu_copy_upload(&slice->gpu, slice->device, &img->img.meta,
									  img->img.keys, img->img.tids, &img->inc,
									  img->values, img->nulls, &bytes[k], &failure);
			if (!ok)
				eytz_svc_gpu_failed(why, slice->device, &failure);
			/* the GPU holds it: only the description stays */
			MemoryContextDelete(cxt);
			img->img.keys = NULL;
			img->img.tids = NULL;
			memset(img->values, 0, sizeof(img->values));
			memset(img->nulls, 0, sizeof(img->nulls));
		}
		else
		{
			img->cxt = cxt;
			bytes[k] = ld->slice_reserved[k];
		}
	}
	pfree(whole.next_slot);
	if (!ok)
		free_slices(copy, copy->nslices);
	return ok;
}

/* Make slot i's streamed layout resident, pinned by the slot */
EytzSvcStatus
eytz_svc_load_end(int i, EytzSvcSlot *s)
{
	SvcLoad    *ld = &loads[i];
	SvcCopy		copy;
	uint64		bytes = 0;
	uint64		slice_bytes[EYTZ_SVC_MAX_DEVICES];
	uint64		slice_entries[EYTZ_SVC_MAX_DEVICES];
	int			slice_device[EYTZ_SVC_MAX_DEVICES];
	int			nslices = ld->nslices;
	int			device;
	int			r = -1;
	int			old;
	int			k;

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
	if (nslices > 0)
	{
		/* too large for any one device: a slice on each of several */
		if (!build_slices(ld, &copy, slice_bytes, s->why))
		{
			drop_load(i);
			return ST_FAILED;
		}
		for (k = 0; k < nslices; k++)
		{
			slice_device[k] = ld->slice_device[k];
			slice_entries[k] = ld->slice_entries[k];
			bytes += slice_bytes[k];
		}
		device = slice_device[0];
		drop_load(i);
		ereport(LOG,
				(errmsg("eytzgpu service: index \"%s\" lies in %d key-range slices, no one device having room for it under eytzgpu.gpu_memory_limit",
						NameStr(s->name), nslices)));
	}
	else if (eytz_svc->state == SVC_GPU)
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
	eytz_svc_copies[r] = copy;
	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->resident[r].used = true;
	eytz_svc->resident[r].device = device;
	eytz_svc->resident[r].nslices = nslices;
	if (nslices == 0)
	{
		eytz_svc->devices[device].bytes += bytes;
		eytz_svc->devices[device].copies++;
		eytz_svc->devices[device].loads++;
	}
	for (k = 0; k < nslices; k++)
	{
		eytz_svc->resident[r].slice_device[k] = slice_device[k];
		eytz_svc->resident[r].slice_bytes[k] = slice_bytes[k];
		eytz_svc->resident[r].slice_entries[k] = slice_entries[k];
		eytz_svc->devices[slice_device[k]].bytes += slice_bytes[k];
		eytz_svc->devices[slice_device[k]].copies++;
		eytz_svc->devices[slice_device[k]].loads++;
	}
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
	eytz_svc_copies_cxt = cxt;
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
		if (eytz_svc->resident[r].used &&
			eytz_svc_resident_on(&eytz_svc->resident[r], d))
			drop_copy(r);
}
