/*
 * eytzlookup.c
 *		The lookup seam of the batched join (interface: eytzlookup.h): a view
 *		of one generation of an index, and batches looked up in it, their
 *		matches returned sorted by (TID, row) in chunks of bounded size.
 *
 * A view is the index pages, the CPU image, the layout's pages pinned in
 * shared buffers or the GPU copy (the backend's own or the eytzgpu
 * service's), chosen by cost and pinned for one generation with its pending
 * list: eytzlookupview.c.
 *
 * A batch is answered in two phases, each resumable at any match so that a
 * chunk never exceeds what the caller asks for: first the layout (whole
 * queries while their matches fit; a query with more matches than a chunk
 * holds, and every query of the pages view, is walked alone through the
 * pages with the index scan's range cursor), then the
 * pending list (per query a run of the key-sorted entries).  A layout match
 * whose TID is also a pending entry's is dropped: a cached copy taken
 * before VACUUM tombstoned an entry still holds the old key of a TID that
 * an insert has reused since, and that TID is answered by its pending entry.
 *
 * Memory of a view: the pending list; of a batch: O(nq) for the query order
 * and O(max) for the chunk and its sort scratch, whatever the duplicates.
 *
 * Index-only joins (eytz_lookup_want_columns) also get each match's key and
 * included values: the image's search and the page walk read them at the
 * entry's slot, the GPU gathers them (the keys ride as one more attached
 * column), each into a stage at the match's position as collected, which
 * the match carries in its "unused" field.  Such chunks are not sorted: the
 * executor takes the matches the index answers in any order and sorts only
 * those it must fetch from the heap (a sort by TID and a gather of the
 * values into the sorted order measured a third of the index-only join's
 * lookup).  Pending entries give none (the
 * executor reads the heap for them: a VACUUM that removes a pending entry
 * leaves no trace a reader could check).  A removed entry must never stand
 * for a live tuple: VACUUM tombstones an entry (meta.ndead grows within a
 * generation) before the heap slot is freed and the page set all-visible,
 * so a chunk's values are good while the metapage still shows the
 * generation and tombstone count of the least current copy that gave them
 * (eytz_lookup_chunk_current, asked after the executor's visibility map
 * checks), and views for index-only joins take copies with every tombstone
 * the metapage counts (eytz_image_acquire_current, a new upload).  Where
 * the caller has seen the whole heap all-visible, the image's matches need
 * no TID (eytz_lookup_heap_all_visible): they stay layout slots, unless the
 * chunk turns out not current, and the TID array is not read.
 */
#include "postgres.h"

#include "portability/instr_time.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzdevice.h"
#include "eytzimage.h"
#include "eytzlookup.h"
#include "eytzlookupstate.h"
#include "eytzservice.h"

/*
 * The values of the layout entry whose slot the stage's keys hold at pos,
 * read through the walk's region reader (the index pages)
 */
static void
stage_region_slot(EytzLookup *lk, uint32 pos)
{
	EytzRegionReader *r = &lk->walk.cursor.region;
	EytzStage  *st = &lk->stage;
	uint64		slot = st->keys[pos];
	Datum		values[EYTZ_MAX_INCLUDE];
	bool		isnull[EYTZ_MAX_INCLUDE];
	int			j;

	st->keys[pos] = eytz_region_key(r, slot);
	st->have[pos] = true;
	if (st->ncols == 0)
		return;
	eytz_region_include(r, slot, values, isnull);
	for (j = 0; j < st->ncols; j++)
	{
		st->values[j][pos] = values[st->cols[j]];
		st->isnull[j][pos] = isnull[st->cols[j]];
	}
}

/*
 * Walk the current walk's query on from its cursor, appending live matches
 * to out[*n..max).  true when the query is done, false when out is full.
 * Also under an image or GPU view: their generation's pages stay readable.
 */
static bool
walk_query(EytzLookup *lk, EytzMatch *out, uint32 *n, uint32 max)
{
	/* the chunk's sort scratch holds the TIDs until they are tagged */
	ItemPointerData *tids = (ItemPointerData *) lk->tmp;
	uint32		row = lk->walk.row;
	int			want = max - *n;
	int			got;
	int			i;

	if (!lk->want)
		got = eytz_cursor_next(&lk->walk.cursor, tids, want);
	else
	{
		/* the stage's keys hold the slots until their values replace them */
		got = eytz_cursor_next_slots(&lk->walk.cursor, tids, lk->stage.keys + *n, want);
		for (i = 0; i < got; i++)
			stage_region_slot(lk, *n + i);
	}
	for (i = 0; i < got; i++)
	{
		out[*n].tid = eytz_tid_pack(&tids[i]);
		out[*n].row = row;
		out[*n].unused = *n;
		(*n)++;
	}
	return got < want;
}

/* Start walking the query [lo, hi] of batch row "row" alone, from the root */
static void
walk_start(EytzLookup *lk, uint64 lo, uint64 hi, uint32 row)
{
	lk->walk.active = true;
	lk->walk.row = row;
	eytz_cursor_start(&lk->walk.cursor, lo, hi);
}

EytzLookup *
eytz_lookup_begin(Relation index, double expected_keys, double other_pages,
				  MemoryContext cxt)
{
	EytzLookup *lk = MemoryContextAllocZero(cxt, sizeof(EytzLookup));

	lk->index = index;
	lk->cxt = cxt;
	lk->expected_keys = expected_keys;
	lk->other_pages = other_pages;
	lk->phase = PHASE_DONE;
	/* unpin also when the query fails */
	lk->unpin_cb.func = eytz_lookup_unpin_view_cb;
	lk->unpin_cb.arg = lk;
	MemoryContextRegisterResetCallback(cxt, &lk->unpin_cb);
	eytz_lookup_pin_view(lk, eytz_lookup_choose_view(lk, expected_keys));
	return lk;
}

/*
 * The queries from "from" on, sorted by low key into lk->order (CPU views:
 * neighbouring searches share their upper path).  Points whose keys lie
 * within 2^32 of the least (int4 keys always, int8 keys mostly) are sorted
 * as 8-byte records (key - lo_min << 32 | row) into lk->packed instead:
 * half the bytes of order's through each radix pass (the query sort
 * measured a tenth of an index-only join); the search needs no query index
 * for points.  The buffer only grows: fresh memory for every batch costs
 * page faults.
 */
static void
sort_queries(EytzLookup *lk, uint32 from)
{
	uint32		n = lk->nq - from;
	uint32		i;
	bool		sorted = true;

	/* callers with sorted keys (an array scan's ranges) need no sort */
	for (i = from + 1; i < lk->nq && sorted; i++)
		sorted = lk->lo[i] >= lk->lo[i - 1];

	if (lk->order_cap < n)
	{
		if (lk->order)
			eytz_scratch_free(lk->order);
		lk->order = eytz_scratch_alloc(lk->cxt, sizeof(EytzMatch) * (Size) n * 2);
		lk->order_cap = n;
	}
	lk->packed = NULL;
	if (lk->points && lk->lo_max - lk->lo_min <= PG_UINT32_MAX)
	{
		lk->packed = (uint64 *) lk->order;
		for (i = 0; i < n; i++)
			lk->packed[i] = (lk->lo[from + i] - lk->lo_min) << 32 | lk->rows[from + i];
		if (!sorted)
			eytz_sort_u64(lk->packed, n, lk->packed + n, ~(uint64) PG_UINT32_MAX);
		lk->norder = n;
		return;
	}
	/* the row rides along: the search then reads no query array at random */
	for (i = 0; i < n; i++)
	{
		lk->order[i].tid = lk->lo[from + i];
		lk->order[i].row = from + i;
		lk->order[i].unused = lk->rows[from + i];
	}
	if (!sorted)
		eytz_match_sort_keys(lk->order, n, lk->order + n);
	lk->norder = n;
}

/* Forget the answer of a first chunk started ahead and not taken */
static void
drop_ahead(EytzLookup *lk)
{
	if (lk->ahead == AHEAD_GPU && lk->svc)
		eytz_service_lookup_cancel(lk->svc);
	else if (lk->ahead == AHEAD_GPU)
		eytz_device_lookup_cancel(&lk->job);
	lk->ahead = AHEAD_NONE;
}

void
eytz_lookup_submit(EytzLookup *lk, const uint64 *lo, const uint64 *hi,
				   const uint32 *rows, uint32 nq)
{
	uint32		i;
	instr_time	t0,
				t1;

	drop_ahead(lk);
	lk->keys_seen += nq;
	eytz_lookup_review_view(lk);
	lk->lo = lo;
	lk->hi = hi;
	lk->rows = rows;
	lk->nq = nq;
	lk->next = 0;
	lk->pq = 0;
	lk->ppos = PG_UINT64_MAX;
	lk->walk.active = false;
	lk->phase = PHASE_LAYOUT;
	lk->stats.batches++;
	lk->stats.lookups += nq;
	lk->points = true;
	lk->rows_in_order = true;
	lk->lo_min = PG_UINT64_MAX;
	lk->lo_max = 0;
	for (i = 0; i < nq && lk->points; i++)
	{
		lk->points = lo[i] == hi[i];
		lk->rows_in_order &= i == 0 || rows[i] > rows[i - 1];
		lk->lo_min = Min(lk->lo_min, lo[i]);
		lk->lo_max = Max(lk->lo_max, lo[i]);
	}
	lk->rows_in_order &= lk->points;
	lk->norder = 0;
	lk->packed = NULL;
	if (lk->kind == EYTZ_VIEW_GPU || nq == 0)
		return;
	INSTR_TIME_SET_CURRENT(t0);
	sort_queries(lk, 0);
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	lk->stats.search_ms += INSTR_TIME_GET_MILLISEC(t1);
}

/* The GPU failed: the rest of the scan runs on the image of the same generation */
static void
gpu_fallback(EytzLookup *lk, const char *why)
{
	MemoryContext old = MemoryContextSwitchTo(lk->cxt);

	ereport(WARNING,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("eytzgpu join on index \"%s\" continues on the CPU: %s",
					RelationGetRelationName(lk->index), why)));
	lk->stats.cpu_reason = pstrdup(why);
	/* the pending list was read under this generation: the image must be too */
	lk->image = lk->want ? eytz_image_acquire_current(lk->index, &lk->meta) :
		eytz_image_acquire(lk->index, &lk->meta);
	if (lk->gpu)
		eytz_device_release(lk->gpu);
	if (lk->svc)
		eytz_service_release(lk->svc);
	lk->gpu = NULL;
	lk->svc = NULL;
	lk->kind = EYTZ_VIEW_IMAGE;
	lk->stats.device = "cpu";
	/* the queries not answered yet, by low key */
	sort_queries(lk, lk->next);
	lk->next = 0;
	MemoryContextSwitchTo(old);
}

/*
 * Matches out[from..to) carry no values (pending entries, the GPU copy, the
 * index pages): the caller reads the heap for them
 */
static void
stage_none(EytzLookup *lk, uint32 from, uint32 to)
{
	uint32		i;

	if (!lk->want)
		return;
	for (i = from; i < to; i++)
	{
		lk->out[i].unused = i;
		lk->stage.have[i] = false;
	}
}

static void
stage_free(EytzStage *st)
{
	if (st->keys == NULL)
		return;
	eytz_scratch_free(st->keys);
	st->keys = NULL;
}

/*
 * Arrays of a stage for max matches, in one scratch array: the keys and
 * values (8 bytes each), then the flags
 */
static void
stage_alloc(EytzLookup *lk, EytzStage *st, uint32 max)
{
	char	   *p;
	int			j;

	stage_free(st);
	p = eytz_scratch_alloc(lk->cxt, (sizeof(uint64) + sizeof(bool)) * (Size) max *
						   (1 + st->ncols));
	st->keys = (uint64 *) p;
	p += sizeof(uint64) * (Size) max;
	for (j = 0; j < st->ncols; j++, p += sizeof(Datum) * (Size) max)
		st->values[j] = (Datum *) p;
	st->have = (bool *) p;
	p += max;
	for (j = 0; j < st->ncols; j++, p += max)
		st->isnull[j] = (bool *) p;
}

/*
 * Start the GPU (or the service) on queries first.. of the batch, their
 * matches (at most max) to go to out[at..) and stage positions at..; false
 * with *why when the GPU refused them
 */
static bool
gpu_start(EytzLookup *lk, uint32 first, uint32 max, uint32 at, char **why)
{
	EytzStage  *stage = lk->want ? &lk->stage : NULL;

	if (lk->svc)
	{
		eytz_service_lookup_start(lk->svc, lk->lo, lk->hi, lk->rows, lk->nq,
								  first, max, stage);
		return true;
	}
	return eytz_device_lookup_start(lk->gpu, &lk->job, lk->lo, lk->hi,
									lk->rows, lk->nq, first, max,
									lk->out + at, stage, at, why);
}

/* Wait for what gpu_start started (with the same at) */
static bool
gpu_finish(EytzLookup *lk, uint32 at, EytzGpuAnswer *answer, char **why)
{
	if (lk->svc)
		return eytz_service_lookup_finish(lk->svc, lk->out + at,
										  lk->want ? &lk->stage : NULL, at,
										  answer, why);
	return eytz_device_lookup_finish(&lk->job, answer, why);
}

/*
 * The answer of the first chunk started ahead on the GPU or the service
 * (the layout's first call of the batch): waited for now, the wait timed
 */
static bool
finish_ahead(EytzLookup *lk, EytzGpuAnswer *answer, char **why)
{
	instr_time	t0,
				t1;
	bool		ok;

	Assert(lk->next == 0);
	lk->ahead = AHEAD_NONE;
	INSTR_TIME_SET_CURRENT(t0);
	ok = gpu_finish(lk, 0, answer, why);
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	lk->stats.wait_ms += INSTR_TIME_GET_MILLISEC(t1);
	return ok;
}

/*
 * Layout matches of the next queries into out[*n..max); false when nothing
 * more fits (or the layout phase is over).
 */
static bool
layout_step(EytzLookup *lk, uint32 *n, uint32 max)
{
	uint32		before = *n;
	uint32		total = lk->kind == EYTZ_VIEW_GPU ? lk->nq : lk->norder;

	if (lk->walk.active)
	{
		bool		done = walk_query(lk, lk->out, n, max);

		*n = eytz_lookup_drop_pending_twins(lk, lk->out, before, *n);
		if (!done)
			return false;
		lk->walk.active = false;
		lk->next++;
		return true;
	}
	if (lk->next >= total)
	{
		lk->phase = PHASE_PENDING;
		return true;
	}
	if (lk->kind == EYTZ_VIEW_GPU)
	{
		EytzGpuAnswer answer;
		char	   *why = NULL;
		bool		ok;

		if (lk->ahead == AHEAD_GPU)
			ok = finish_ahead(lk, &answer, &why);
		else
			ok = gpu_start(lk, lk->next, max - *n, *n, &why) &&
				gpu_finish(lk, *n, &answer, &why);
		if (!ok)
		{
			gpu_fallback(lk, why);
			return true;
		}
		lk->stats.kernel_ms += answer.kernel_ms;
		lk->stats.transfer_ms += answer.transfer_ms;
		if (answer.kernel_ms > 0 || answer.transfer_ms > 0)
			lk->stats.gpu_batches++;
		*n += answer.nout;
		lk->next += answer.nq_done;
		if (!answer.staged)
			stage_none(lk, before, *n);
		*n = eytz_lookup_drop_pending_twins(lk, lk->out, before, *n);
		/* one GPU answer alone in the chunk needs no sort */
		if (before == 0)
			lk->sorted_prefix = *n;
		if (answer.nq_done > 0)
			return true;
		if (before > 0)
			return false;
		/* alone more than a chunk */
		walk_start(lk, lk->lo[lk->next], lk->hi[lk->next], lk->rows[lk->next]);
		return true;
	}
	if (lk->kind == EYTZ_VIEW_IMAGE || lk->kind == EYTZ_VIEW_PINNED)
	{
		uint32		done = eytz_image_search(lk->image, lk->order,
											 lk->packed, lk->lo_min, lk->next,
											 lk->norder, lk->points ? NULL : lk->hi,
											 max, lk->out, n,
											 lk->want ? &lk->stage : NULL,
											 lk->heap_all_visible && lk->npending == 0,
											 (uint64) Max(lk->other_pages, 0) * BLCKSZ);

		lk->next += done;
		*n = eytz_lookup_drop_pending_twins(lk, lk->out, before, *n);
		if (done > 0)
			return true;
		if (before > 0)
			return false;
	}
	/* the pages view walks every query; the others those that fit no chunk */
	if (lk->packed)
	{
		uint64		key = lk->lo_min + (lk->packed[lk->next] >> 32);

		walk_start(lk, key, key, (uint32) lk->packed[lk->next]);
	}
	else
	{
		uint32		q = lk->order[lk->next].row;

		walk_start(lk, lk->lo[q], lk->hi[q], lk->rows[q]);
	}
	return true;
}

/*
 * Pending matches of the next queries into out[*n..max); false when
 * nothing more fits (or the batch is done).
 */
static bool
pending_step(EytzLookup *lk, uint32 *n, uint32 max)
{
	while (lk->pq < lk->nq)
	{
		uint32		q = lk->pq;
		uint64		hi = lk->hi[q];

		if (lk->ppos == PG_UINT64_MAX)
		{
			uint64		a = 0,
						b = lk->npending;

			while (a < b)
			{
				uint64		mid = a + (b - a) / 2;

				if (lk->pending[mid].key < lk->lo[q])
					a = mid + 1;
				else
					b = mid;
			}
			lk->ppos = a;
		}
		for (; lk->ppos < lk->npending && lk->pending[lk->ppos].key <= hi; lk->ppos++)
		{
			if (*n == max)
				return false;
			lk->out[*n].tid = eytz_tid_pack(&lk->pending[lk->ppos].tid);
			lk->out[*n].row = lk->rows[q];
			stage_none(lk, *n, *n + 1);
			(*n)++;
		}
		lk->pq++;
		lk->ppos = PG_UINT64_MAX;
	}
	lk->phase = PHASE_DONE;
	return false;
}

/* The chunk's arrays (and stage) for max matches */
static void
chunk_alloc(EytzLookup *lk, uint32 max)
{
	if (lk->cap >= max)
		return;
	/* one scratch array for both: fewer for the backend to keep */
	if (lk->out)
		eytz_scratch_free(lk->out);
	lk->out = eytz_scratch_alloc(lk->cxt, sizeof(EytzMatch) * (Size) max * 2);
	lk->tmp = lk->out + max;
	lk->cap = max;
	if (lk->want)
		stage_alloc(lk, &lk->stage, max);
}

/* The next chunk of at most max matches into out (eytz_lookup_next) */
static uint32
next_chunk(EytzLookup *lk, uint32 max)
{
	uint32		n = 0;
	instr_time	t0,
				t1,
				t2;

	if (lk->phase == PHASE_DONE)
		return 0;
	chunk_alloc(lk, max);
	INSTR_TIME_SET_CURRENT(t0);
	lk->sorted_prefix = 0;
	while (n < max && lk->phase != PHASE_DONE)
	{
		bool		more;

		if (lk->phase == PHASE_LAYOUT)
			more = layout_step(lk, &n, max);
		else
			more = lk->npending > 0 ? pending_step(lk, &n, max) :
				(lk->phase = PHASE_DONE, false);
		if (!more && lk->phase != PHASE_DONE)
			break;
	}
	/* no buffer stays pinned while the executor has the matches */
	eytz_region_release(&lk->walk.cursor.region);
	INSTR_TIME_SET_CURRENT(t1);
	/* an index-only join's chunk stays as collected (see the file header) */
	if (lk->sorted_prefix != n && !lk->want)
		n = eytz_match_sort(lk->out, n, lk->tmp, lk->rows_in_order);
	if (lk->want)
	{
		/*
		 * The values are as current as the least current copy that gave
		 * some (a GPU view may have fallen back to the image); the pages
		 * were read after the metapage
		 */
		lk->chunk_generation = lk->meta.generation;
		lk->chunk_ndead = lk->meta.ndead;
		if (lk->image)
			lk->chunk_ndead = Min(lk->chunk_ndead, lk->image->img.meta.ndead);
		if (lk->gpu)
			lk->chunk_ndead = Min(lk->chunk_ndead, eytz_device_ndead(lk->gpu));
		if (lk->svc)
			lk->chunk_ndead = Min(lk->chunk_ndead, eytz_service_ndead(lk->svc));
	}
	INSTR_TIME_SET_CURRENT(t2);
	INSTR_TIME_SUBTRACT(t2, t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	lk->stats.sort_ms += INSTR_TIME_GET_MILLISEC(t2);
	if (lk->kind != EYTZ_VIEW_GPU)
		lk->stats.search_ms += INSTR_TIME_GET_MILLISEC(t1);
	lk->stats.matches += n;
	return n;
}

bool
eytz_lookup_start(EytzLookup *lk, uint32 max, bool cpu_too)
{
	char	   *why = NULL;

	Assert(max >= 1 && lk->ahead == AHEAD_NONE);
	if (lk->phase != PHASE_LAYOUT || lk->nq == 0)
		return false;
	if (lk->kind == EYTZ_VIEW_GPU)
	{
		chunk_alloc(lk, max);
		if (!gpu_start(lk, 0, max, 0, &why))
		{
			gpu_fallback(lk, why);
			return false;
		}
		lk->ahead = AHEAD_GPU;
	}
	else if (cpu_too)
	{
		lk->ahead_n = next_chunk(lk, max);
		lk->ahead = AHEAD_CHUNK;
	}
	else
		return false;
	lk->ahead_max = max;
	lk->stats.overlap_batches++;
	return true;
}

uint32
eytz_lookup_next(EytzLookup *lk, uint32 max, const EytzMatch **matches)
{
	uint32		n;

	Assert(max >= 1);
	Assert(lk->ahead == AHEAD_NONE || max == lk->ahead_max);
	if (lk->ahead == AHEAD_CHUNK)
	{
		lk->ahead = AHEAD_NONE;
		n = lk->ahead_n;
	}
	else
		n = next_chunk(lk, max);
	lk->nout = n;
	*matches = n > 0 ? lk->out : NULL;
	return n;
}

const EytzLookupStats *
eytz_lookup_stats(const EytzLookup *lk)
{
	return &lk->stats;
}

/*
 * Ask for the values of the included columns of mask with each match.  An
 * image pinned already that misses tombstones of its generation is
 * replaced by a current one (pin_view takes current images from now on).
 */
void
eytz_lookup_want_columns(EytzLookup *lk, uint32 mask, bool keys)
{
	int			c,
				j = 0;

	Assert(!lk->want && lk->cap == 0);
	Assert(keys || mask == 0);
	lk->want = true;
	lk->want_keys = keys;
	for (c = 0; c < EYTZ_MAX_INCLUDE; c++)
		if (mask & (1U << c))
			lk->stage.cols[j++] = c;
	lk->stage.ncols = j;
	/* the pinned view answers only scans that need no values */
	if (lk->kind == EYTZ_VIEW_PINNED && !EYTZ_LOOKUP_PAGES_ANSWER(lk))
		eytz_lookup_pin_view(lk, eytz_lookup_choose_view(lk, lk->expected_keys));
	else if ((lk->image && lk->image->img.meta.ndead < lk->meta.ndead) ||
			 (lk->gpu && eytz_device_ndead(lk->gpu) < lk->meta.ndead))
		eytz_lookup_pin_view(lk, lk->kind);
}

const EytzChunkColumns *
eytz_lookup_columns(const EytzLookup *lk)
{
	EytzChunkColumns *cols = (EytzChunkColumns *) &lk->cols;
	int			j;

	Assert(lk->want);
	cols->have = lk->stage.have;
	cols->keys = lk->stage.keys;
	for (j = 0; j < lk->stage.ncols; j++)
	{
		cols->values[j] = lk->stage.values[j];
		cols->isnull[j] = lk->stage.isnull[j];
	}
	return cols;
}

void
eytz_lookup_heap_all_visible(EytzLookup *lk, bool all_visible)
{
	Assert(lk->want);
	lk->heap_all_visible = all_visible;
}

void
eytz_lookup_resolve_chunk(EytzLookup *lk)
{
	uint32		i;

	for (i = 0; i < lk->nout; i++)
		if (lk->out[i].tid & EYTZ_MATCH_SLOT)
			lk->out[i].tid = eytz_image_slot_tid(lk->image, lk->out[i].tid);
}

bool
eytz_lookup_chunk_current(EytzLookup *lk)
{
	EytzMetaPageData now;

	/* the metapage's buffer lock orders this read after the caller's */
	eytz_read_meta(lk->index, &now);
	return now.generation == lk->chunk_generation && now.ndead == lk->chunk_ndead;
}

void
eytz_lookup_end(EytzLookup *lk)
{
	eytz_lookup_unpin_view(lk);
	/* a scan ended and begun again per rescan must not pile these up */
	if (lk->order)
		eytz_scratch_free(lk->order);
	if (lk->out)
		eytz_scratch_free(lk->out);
	lk->order = lk->out = lk->tmp = NULL;
	lk->order_cap = lk->cap = 0;
	stage_free(&lk->stage);
	lk->phase = PHASE_DONE;
	/* lk stays: the context's reset callback still points at it (a no-op now) */
}

/* Any relcache change of an index drops its image and GPU copy */
static void
lookup_relcache_callback(Datum arg, Oid relid)
{
	eytz_image_invalidate(relid);
	eytz_device_invalidate(relid);
}

void
eytz_lookup_init(void)
{
	eytz_device_init();
	eytz_image_init();
	CacheRegisterRelcacheCallback(lookup_relcache_callback, (Datum) 0);
}
