/*
 * eytzlookupview.c
 *		The lookup seam's views (eytzlookup.c answers the batches): which
 *		device answers an index's lookups, and one generation of the index
 *		pinned for them with its pending list.
 *
 * A view is one of
 *	- the index pages through the buffer manager (EYTZ_VIEW_PAGES): nothing is
 *	  loaded, each key costs a few buffer accesses per level, as an index
 *	  scan does (the same reader: EytzRangeCursor of eytzcursor.c, over the
 *	  page layer's checked EytzRegionReader): right for the few keys of a
 *	  cold start;
 *	- the CPU image of the layout (EYTZ_VIEW_IMAGE, eytzimage.c): loaded once per
 *	  generation and cached per backend, searched at memory speed;
 *	- the layout's own pages pinned in shared buffers for the scan
 *	  (EYTZ_VIEW_PINNED, eytzimage.c), searched as the image is through
 *	  per-page pointers: no load, so a fresh backend or a parallel worker
 *	  starts at once; within a third of shared_buffers, and not for
 *	  index-only joins (their included values come from the image);
 *	- the GPU copy (EYTZ_VIEW_GPU, eytzdevice.c), uploaded from the image,
 *	  or with shared_preload_libraries the eytzgpu service's one copy for
 *	  all backends (eytzservice.c), answering through shared memory;
 * plus the pending list read under the same generation.  The metapage is
 * read once per view: the page layer keeps that generation's region and
 * pending list intact until the transaction ends (eytzpage.c), so a view
 * needs no retry, and a damaged page raises XX002 naming the index.  The
 * view is
 * chosen by cost (eytz_view_cost): a load is paid for only when the keys the
 * planner expects, or the keys seen so far, make it cheaper than searching
 * the pages; the planner asks the same question (eytz_lookup_plan_cost).
 * The costs are in eytzlookupcost.c.
 *
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzdevice.h"
#include "eytzimage.h"
#include "eytzlookup.h"
#include "eytzlookupstate.h"
#include "eytzservice.h"

/* The pending list's TIDs, sorted, and a filter of their hashes */
static inline uint32
pending_hash(uint64 tid)
{
	return (uint32) ((tid * UINT64CONST(0x9E3779B97F4A7C15)) >> 48);
}

/* Fill pending_tids (sorted) and pending_filter from the pending list */
static void
index_pending_tids(EytzLookup *lk)
{
	uint64		i;

	lk->pending_tids = MemoryContextAllocHuge(lk->cxt, sizeof(uint64) * lk->npending);
	lk->pending_filter = MemoryContextAllocZero(lk->cxt, PENDING_FILTER_BITS / 8);
	for (i = 0; i < lk->npending; i++)
	{
		uint64		t = eytz_tid_pack(&lk->pending[i].tid);

		lk->pending_tids[i] = t;
		lk->pending_filter[pending_hash(t) / 64] |= UINT64CONST(1) << (pending_hash(t) % 64);
	}
	/* a TID's packed form orders as the TID does */
	if (lk->npending > 1)
	{
		EytzMatch  *m = MemoryContextAllocHuge(lk->cxt, sizeof(EytzMatch) * lk->npending * 2);

		for (i = 0; i < lk->npending; i++)
		{
			m[i].tid = lk->pending_tids[i];
			m[i].row = (uint32) i;
		}
		eytz_match_sort_keys(m, (uint32) lk->npending, m + lk->npending);
		for (i = 0; i < lk->npending; i++)
			lk->pending_tids[i] = m[i].tid;
		pfree(m);
	}
}

/* Is packed TID t also a pending entry's?  (the filter answers most) */
static bool
tid_is_pending(EytzLookup *lk, uint64 t)
{
	uint32		h = pending_hash(t);
	uint64		a = 0,
				b = lk->npending;

	if (!(lk->pending_filter[h / 64] & (UINT64CONST(1) << (h % 64))))
		return false;
	while (a < b)
	{
		uint64		mid = a + (b - a) / 2;

		if (lk->pending_tids[mid] < t)
			a = mid + 1;
		else
			b = mid;
	}
	return a < lk->npending && lk->pending_tids[a] == t;
}

/* Drop the layout matches m[from..n) whose TID a pending entry answers */
uint32
eytz_lookup_drop_pending_twins(EytzLookup *lk, EytzMatch *m, uint32 from, uint32 n)
{
	uint32		i,
				out = from;

	if (lk->npending == 0)
		return n;
	for (i = from; i < n; i++)
		if (!tid_is_pending(lk, m[i].tid))
			m[out++] = m[i];
	return out;
}

/*
 * Release what the view pins (also on error: the context's reset callback).
 * A batch in flight on the backend's GPU copy is waited for first (another
 * scan may take the copy, and the answer is collected into this scan's
 * memory); the service's slot is simply released (the service drops an
 * abandoned answer).
 */
void
eytz_lookup_unpin_view(EytzLookup *lk)
{
	if (lk->ahead == AHEAD_GPU && lk->gpu)
		eytz_device_lookup_cancel(&lk->job);
	lk->ahead = AHEAD_NONE;
	eytz_region_release(&lk->walk.cursor.region);
	if (lk->gpu)
		eytz_device_release(lk->gpu);
	if (lk->svc)
		eytz_service_release(lk->svc);
	if (lk->image)
		eytz_image_release(lk->image);
	lk->gpu = NULL;
	lk->svc = NULL;
	lk->image = NULL;
	if (lk->pending)
		pfree(lk->pending);
	if (lk->pending_tids)
		pfree(lk->pending_tids);
	if (lk->pending_filter)
		pfree(lk->pending_filter);
	lk->pending = NULL;
	lk->pending_tids = NULL;
	lk->pending_filter = NULL;
	lk->npending = 0;
	lk->pinned = false;
}

/*
 * On error the resource owner has already released the buffers (and
 * LWLocks) the readers held: forget them, then unpin the rest.
 */
void
eytz_lookup_unpin_view_cb(void *arg)
{
	EytzLookup *lk = (EytzLookup *) arg;
	EytzRegionReader *r = &lk->walk.cursor.region;
	int			c;

	r->keybuf = InvalidBuffer;
	r->tidbuf = InvalidBuffer;
	for (c = 0; c < r->inc.ncols; c++)
		r->valbuf[c] = r->nullbuf[c] = InvalidBuffer;
	if (lk->image)
		eytz_image_forget_pins(lk->image);
	eytz_lookup_unpin_view(lk);
}

/*
 * The GPU copy of the generation meta names, resident or uploaded now from
 * the image, with its included columns; current: one that misses tombstones
 * meta counts is uploaded again.  NULL with *why when the GPU cannot take
 * it.
 */
static EytzGpuEntry *
gpu_pin_or_upload(Relation index, const EytzMetaPageData *meta, bool current,
				  char **why)
{
	EytzGpuEntry *e = eytz_device_pin(index, meta->generation);
	EytzImage  *image;
	EytzInclude inc;

	*why = NULL;
	if (e && current && eytz_device_ndead(e) < meta->ndead)
	{
		eytz_device_release(e);
		eytz_device_invalidate(RelationGetRelid(index));
		e = NULL;
	}
	if (e)
		return e;
	eytz_include_get(index, &inc);
	if (!eytz_device_room(index, meta, &inc, why))
		return NULL;
	image = current ? eytz_image_acquire_current(index, meta) :
		eytz_image_acquire(index, meta);
	e = eytz_device_upload(index, meta, image->img.keys, image->img.tids,
						   &image->inc, image->values, image->nulls, why);
	eytz_image_release(image);
	return e;
}

/*
 * Pin a view of kind "want" (or the CPU image when the GPU cannot take the
 * index: lk->stats.cpu_reason says why) and the pending list, under the
 * generation the metapage names now.
 */
void
eytz_lookup_pin_view(EytzLookup *lk, EytzViewKind want)
{
	MemoryContext old = MemoryContextSwitchTo(lk->cxt);
	instr_time	t0,
				t1;

	INSTR_TIME_SET_CURRENT(t0);
	if (lk->pinned)
		eytz_lookup_unpin_view(lk);
	/* the caller's look at the map came before this view: it must look again */
	lk->heap_all_visible = false;
	eytz_read_meta(lk->index, &lk->meta);
	eytz_cursor_begin(&lk->walk.cursor, lk->index, &lk->meta);
	lk->kind = want;
	if (want == EYTZ_VIEW_GPU)
	{
		char	   *why = NULL;

		if (eytz_service_owns_gpu())
			lk->svc = eytz_service_pin(lk->index, &lk->meta, &why);
		else
			lk->gpu = gpu_pin_or_upload(lk->index, &lk->meta, lk->want, &why);
		if (lk->gpu == NULL && lk->svc == NULL)
		{
			/* no room or a failure: the CPU answers, EXPLAIN says why */
			lk->stats.cpu_reason = pstrdup(why);
			lk->kind = EYTZ_VIEW_IMAGE;
		}
	}
	if (lk->kind == EYTZ_VIEW_PINNED &&
		(!EYTZ_LOOKUP_PAGES_ANSWER(lk) || !eytz_image_pages_ok(lk->index, &lk->meta, lk->other_pages,
										  IsInParallelMode())))
		lk->kind = EYTZ_VIEW_IMAGE;
	if (lk->kind == EYTZ_VIEW_PINNED)
	{
		lk->image = eytz_image_pin_pages(lk->index, &lk->meta);
		lk->image->use->rent_keys = eytz_view_rent_keys(&lk->meta);
	}
	else if (lk->kind == EYTZ_VIEW_IMAGE)
		lk->image = lk->want ? eytz_image_acquire_current(lk->index, &lk->meta) :
			eytz_image_acquire(lk->index, &lk->meta);
	eytz_read_pending(lk->index, &lk->meta, &lk->pending, &lk->npending,
							 NULL, NULL);
	eytz_sort_pending(lk->pending, lk->npending);
	if (lk->npending > 0)
		index_pending_tids(lk);
	lk->pinned = true;
	lk->stats.device = lk->svc ? eytz_service_device_name(lk->svc) :
		lk->kind == EYTZ_VIEW_GPU ? "gpu" :
		lk->kind == EYTZ_VIEW_IMAGE ? (lk->image->shared ? "cpu (shared image)" : "cpu") :
		lk->kind == EYTZ_VIEW_PINNED ? "cpu (pinned pages)" : "cpu (index pages)";
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	lk->stats.acquire_ms += INSTR_TIME_GET_MILLISEC(t1);
	MemoryContextSwitchTo(old);
}

bool
eytz_lookup_service_answers(void)
{
	return eytz_device_mode != EYTZ_DEVICE_CPU && eytz_service_ready(NULL);
}

/* The view that nkeys keys call for, and whether the GPU may be one */
EytzViewKind
eytz_lookup_choose_view(EytzLookup *lk, double nkeys)
{
	EytzMetaPageData meta;
	bool		gpu_ok = false;
	bool		service = eytz_service_owns_gpu();
	Cost		startup,
				per_key;

	eytz_read_meta(lk->index, &meta);
	if (eytz_device_mode != EYTZ_DEVICE_CPU && !service && IsParallelWorker())
	{
		/*
		 * A CUDA context and an upload of its own cost a worker more
		 * than its share of a join gains from the GPU (bench/join_results.md,
		 * the parallel runs): without the service it searches the image the
		 * leader shares (eytz_lookup_plan_cost costs it so)
		 */
		if (lk->stats.cpu_reason == NULL)
			lk->stats.cpu_reason = "a parallel worker uses the GPU only through the eytzgpu service";
	}
	else if (eytz_device_mode != EYTZ_DEVICE_CPU)
	{
		char	   *why = NULL;

		gpu_ok = service ? eytz_service_ready(&why) : eytz_device_available(&why);
		if (!gpu_ok && lk->stats.cpu_reason == NULL)
		{
			eytz_device_report_unavailable(why);
			lk->stats.cpu_reason = why;
		}
	}
	return eytz_view_cost(&meta, eytz_image_resident(lk->index, meta.generation),
						  EYTZ_LOOKUP_PAGES_ANSWER(lk) && eytz_image_pages_ok(lk->index, &meta, lk->other_pages,
														   IsInParallelMode()), gpu_ok,
						  gpu_ok && (service ? eytz_service_resident(lk->index, &meta) :
									 eytz_device_resident(lk->index, meta.generation)),
						  Max(nkeys, 1.0), &startup, &per_key);
}

/*
 * Before a batch: a pages view whose keys so far have paid for a load
 * becomes an image or GPU view; one whose generation a merge replaced
 * moves to the new one (any later generation holds every entry the scan's
 * snapshot can see).
 */
void
eytz_lookup_review_view(EytzLookup *lk)
{
	EytzMetaPageData now;
	EytzViewKind	want;

	if (lk->kind != EYTZ_VIEW_PAGES)
		return;
	want = eytz_lookup_choose_view(lk, Max(lk->expected_keys, (double) lk->keys_seen));
	eytz_read_meta(lk->index, &now);
	if (want != EYTZ_VIEW_PAGES || now.generation != lk->meta.generation)
		eytz_lookup_pin_view(lk, want);
}
