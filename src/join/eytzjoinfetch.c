/*
 * eytzjoinfetch.c
 *		The batched join's matches and their inner tuples: the chunks of a
 *		batch's matches from the lookup seam, an index-only chunk's
 *		classification by the visibility map (which matches the index
 *		answers), and the fetch of the inner tuples a heap block at a time
 *		(eytzheap.c) into the inner part of the scan slot, with the inner
 *		table's quals, and the joined rows they make (the recheck, the join
 *		and pushed-down quals, the projection), which the state machine
 *		(eytzjoinexec.c) takes one by one.  The per-match steps stay in this
 *		one file so that the compiler inlines them into the loop over a
 *		chunk (no call between files per match, as before the executor's
 *		split; bench/join_results.md run 23).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/visibilitymap.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/predicate.h"
#include "utils/rel.h"

#include "eytzjoinexec.h"


/* Is heap block blk all-visible?  (the map page's buffer stays pinned) */
static inline bool
block_all_visible(EytzJoinState *st, BlockNumber blk)
{
	Buffer	   *vmbuf = &st->vmbufs[(blk / EYTZ_VM_HEAPBLOCKS_PER_PAGE) % EYTZ_VM_BUFS];

	return VM_ALL_VISIBLE(st->heap, blk, vmbuf);
}

/*
 * Is every page of the heap all-visible now?  Then a match the index
 * answers needs no look at the map, nor its TID (eytz_lookup_heap_all_visible):
 * a fully vacuumed table's index-only join reads no TID.  Two reads of
 * the map per thousands of heap pages, before each chunk.
 */
static bool
heap_all_visible(EytzJoinState *st)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(st->heap);
	BlockNumber all_visible;
	BlockNumber all_frozen;

	visibilitymap_count(st->heap, &all_visible, &all_frozen);
	return all_visible >= nblocks;
}

/* vm_seen: not looked up yet in this chunk, not all-visible, all-visible */
#define VM_UNSEEN 0
#define VM_NOT_ALL_VISIBLE 1
#define VM_ALL_VISIBLE_SEEN 2

/*
 * Index-only: which matches of the new (unsorted) chunk take their values
 * from the index: those the lookup returned values for, on heap pages the
 * visibility map shows all-visible (every tuple there is visible to every
 * snapshot), as long as no VACUUM has removed an entry of the chunk's view
 * since it was read (asked after the map, see eytz_lookup_chunk_current).
 * A chunk with at least a quarter as many matches as the table has blocks
 * looks each block up once (vm_seen); smaller ones ask the map each time
 * the block changes.  Where the whole heap was all-visible before the
 * chunk was read (heap_all_visible), the image's matches came as slots
 * without their TIDs and need no look at all.
 */
static void
classify_chunk(EytzJoinState *st)
{
	BlockNumber blk = InvalidBlockNumber;
	BlockNumber seen_blocks = 0;
	bool		all_visible = false;
	bool		any = false;
	uint32		i;

	st->cols = eytz_lookup_columns(st->lookup);
	if ((uint64) st->nchunk * 4 >= st->vm_seen_blocks)
	{
		seen_blocks = st->vm_seen_blocks;
		memset(st->vm_seen, VM_UNSEEN, seen_blocks);
	}
	for (i = 0; i < st->nchunk; i++)
	{
		if (!st->cols->have[st->chunk[i].unused])
		{
			st->from_index[i] = false;
			continue;
		}
		/* left a slot: its page, as every page, was all-visible */
		if (st->chunk[i].tid & EYTZ_MATCH_SLOT)
		{
			st->from_index[i] = true;
			any = true;
			continue;
		}
		if (eytz_tid_block(st->chunk[i].tid) != blk)
		{
			blk = eytz_tid_block(st->chunk[i].tid);
			if (blk >= seen_blocks)
				all_visible = block_all_visible(st, blk);
			else
			{
				if (st->vm_seen[blk] == VM_UNSEEN)
					st->vm_seen[blk] = block_all_visible(st, blk) ?
						VM_ALL_VISIBLE_SEEN : VM_NOT_ALL_VISIBLE;
				all_visible = st->vm_seen[blk] == VM_ALL_VISIBLE_SEEN;
			}
		}
		st->from_index[i] = all_visible;
		any |= all_visible;
	}
	if (any && !eytz_lookup_chunk_current(st->lookup))
	{
		/* the heap answers for every match, by TID */
		eytz_lookup_resolve_chunk(st->lookup);
		memset(st->from_index, 0, sizeof(bool) * st->nchunk);
	}
}

/*
 * Resolve the TIDs of the block of chunk[pos] (its matches are adjacent) in
 * one visit of the page; rows already satisfied need no tuple.
 */
static void
resolve_block(EytzJoinState *st)
{
	BlockNumber blk = eytz_tid_block(st->chunk[st->pos].tid);
	bool		page_read = false;
	uint32		i;

	stage_enter(st, STAGE_FETCH);
	/*
	 * the tuple in the scan slot (its values may point into the last
	 * block's page, which the next block's pin lets go) is fetched again
	 */
	st->cur_tid = PG_UINT64_MAX;
	for (i = st->pos; i < st->nchunk && eytz_tid_block(st->chunk[i].tid) == blk; i++)
	{
		uint32		row = st->chunk[i].row;

		if (st->single_match && row_matched(st, row, batch_row(st, row)))
			continue;
		if (!page_read)
			eytz_heap_block_begin(st->hf, blk);
		page_read = true;
		eytz_heap_resolve(st->hf, eytz_tid_offset(st->chunk[i].tid));
	}
	if (page_read)
		eytz_heap_block_end(st->hf);
	st->block_end = i;
}

/*
 * The inner columns of match m from the values the lookup returned (at
 * m->unused); its page is predicate-locked as an Index Only Scan does
 */
static inline void
inner_from_index(EytzJoinState *st, const EytzMatch *m)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	uint32		pos = m->unused;
	int			no = st->nouter;
	int			i;

	if (st->serializable)
		PredicateLockPage(st->heap, eytz_tid_block(m->tid),
						  st->css.ss.ps.state->es_snapshot);
	st->cur_key = st->cols->keys[pos];
	for (i = 0; i < st->ninner; i++)
	{
		int			j = st->index_cols[i];

		if (j == 0)
		{
			scan->tts_values[no + i] = st->kt->decode(st->cur_key);
			scan->tts_isnull[no + i] = false;
		}
		else
		{
			scan->tts_values[no + i] = st->cols->values[j - 1][pos];
			scan->tts_isnull[no + i] = st->cols->isnull[j - 1][pos];
		}
	}
}

/*
 * The inner columns of the heap tuple at TID t (its block resolved) read
 * where they lie in the page (table columns only: inner_direct); false if
 * it is not visible or its key is NULL.  Values passed by reference point
 * into the page, pinned until the next block begins.
 */
static bool
inner_from_page(EytzJoinState *st, ItemPointer tid)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	TupleDesc	desc = RelationGetDescr(st->heap);
	HeapTuple	tuple = eytz_heap_tuple(st->hf, tid);
	bool		isnull;
	Datum		key;
	int			no = st->nouter;
	int			i;

	if (tuple == NULL)
		return false;
	key = heap_getattr(tuple, st->keyattno, desc, &isnull);
	if (isnull)
		return false;
	st->cur_key = st->kt->encode(key);
	for (i = 0; i < st->ninner; i++)
		scan->tts_values[no + i] = heap_getattr(tuple, st->inner_attnos[i], desc,
												&scan->tts_isnull[no + i]);
	return true;
}

/*
 * The inner columns of the heap tuple at TID t (its block resolved); false
 * if it is not visible or its key is NULL
 */
static bool
inner_from_heap(EytzJoinState *st, uint64 t)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	TupleTableSlot *heapslot = eytz_heap_slot(st->hf);
	ItemPointerData tid;
	bool		isnull;
	Datum		key;
	int			no = st->nouter;
	int			i;

	eytz_tid_unpack(t, &tid);
	st->nfetches++;
	if (st->inner_direct)
		return inner_from_page(st, &tid);
	if (!eytz_heap_fetch(st->hf, &tid))
		return false;
	key = slot_getattr(heapslot, st->keyattno, &isnull);
	if (isnull)
		return false;
	st->cur_key = st->kt->encode(key);
	slot_getsomeattrs(heapslot, st->inner_natts);
	for (i = 0; i < st->ninner; i++)
	{
		AttrNumber	a = st->inner_attnos[i];

		if (a > 0)
		{
			scan->tts_values[no + i] = heapslot->tts_values[a - 1];
			scan->tts_isnull[no + i] = heapslot->tts_isnull[a - 1];
		}
		else if (a == 0)
		{
			/* the whole row, kept for the tuple's matches */
			MemoryContext old;

			MemoryContextReset(st->innercxt);
			old = MemoryContextSwitchTo(st->innercxt);
			scan->tts_values[no + i] = ExecFetchSlotHeapTupleDatum(heapslot);
			scan->tts_isnull[no + i] = false;
			MemoryContextSwitchTo(old);
		}
		else
			scan->tts_values[no + i] = slot_getsysattr(heapslot, a,
													   &scan->tts_isnull[no + i]);
	}
	return true;
}

/*
 * Fetch the inner tuple of match m into the inner part of the scan slot
 * (from the index in an index-only chunk's first pass, else from the heap);
 * false if it is not visible or fails the inner table's quals.
 */
static pg_attribute_always_inline bool
fetch_inner(EytzJoinState *st, const EytzMatch *m)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	if (st->index_pass)
		inner_from_index(st, m);
	else if (!inner_from_heap(st, m->tid))
		return false;
	if (TTS_EMPTY(scan))
		ExecStoreVirtualTuple(scan);
	if (st->innerqual)
	{
		bool		pass;

		/* inner quals read only the inner part of the slot */
		stage_enter(st, STAGE_QUAL);
		econtext->ecxt_scantuple = scan;
		pass = ExecQual(st->innerqual, econtext);
		ResetExprContext(econtext);
		if (!pass)
			return false;
	}
	return true;
}


/*
 * What the matches of batch row "row" will read of it.  Always inlined: a
 * call of its own, which has no effect GCC counts, is deleted.
 */
static pg_attribute_always_inline void
prefetch_row(EytzJoinState *st, uint32 row)
{
	BatchRow   *r;

	if (!st->keep_rows)
	{
		/* its query's range */
		__builtin_prefetch(&st->qlo[row]);
		if (!st->point_keys)
			__builtin_prefetch(&st->qhi[row]);
		return;
	}
	r = batch_row(st, row);
	__builtin_prefetch(r);
	/* a row across two cache lines: its flags are in the second */
	__builtin_prefetch(row_flags(st, r));
}


/*
 * Move to the batch's next chunk of matches; false after its last.  An
 * index-only chunk's matches that the index does not answer (classify_chunk)
 * are set aside in its first pass, then sorted by TID and fetched from the
 * heap as a chunk of their own.
 */
static bool
next_chunk(EytzJoinState *st)
{
	uint32		max;

	st->pos = 0;
	st->block_end = 0;
	if (st->index_pass && st->ndeferred > 0 && st->heap_order)
	{
		/* heap order: the heap's matches are sorted with every batch's */
		eytz_heap_order_spill(st, st->deferred, st->ndeferred);
		st->ndeferred = 0;
	}
	else if (st->index_pass && st->ndeferred > 0)
	{
		stage_enter(st, STAGE_LOOKUP);
		st->nchunk = eytz_match_sort(st->deferred, st->ndeferred,
									 st->deferred + st->chunk_cap, false);
		st->chunk = st->deferred;
		st->index_pass = false;
		st->cur_tid = PG_UINT64_MAX;
		eytz_heap_set_chunk(st->hf, st->chunk, st->nchunk);
		return true;
	}
	st->index_pass = false;
	if (st->batch_done)
		return false;
	CHECK_FOR_INTERRUPTS();
	if (st->index_only && !st->serializable)
	{
		stage_enter(st, STAGE_FETCH);
		eytz_lookup_heap_all_visible(st->lookup, heap_all_visible(st));
	}
	stage_enter(st, STAGE_LOOKUP);
	/* a chunk started ahead is taken with the size it was started with */
	max = st->next_chunk;
	if (st->cur_leaf >= 0 && st->cur_leaf < st->nleaves)
	{
		EytzJoinLeaf *leaf = &st->leaves[st->cur_leaf];

		max = leaf->first_max > 0 ? leaf->first_max : eytz_join_chunk_max(st, leaf);
		leaf->first_max = 0;
	}
	st->nchunk = eytz_lookup_next(st->lookup, max, &st->chunk);
	st->next_chunk = (uint32) Min((uint64) st->next_chunk * EYTZ_GROWTH, (uint64) st->chunk_cap);
	if (st->nchunk == 0)
	{
		st->batch_done = true;
		return false;
	}
	st->nchunks++;
	if (st->index_only)
	{
		stage_enter(st, STAGE_FETCH);
		classify_chunk(st);
		st->index_pass = true;
		st->ndeferred = 0;
	}
	else if (st->heap_order)
	{
		/* sorted with every batch's matches: none to fetch now */
		eytz_heap_order_spill(st, st->chunk, st->nchunk);
		st->nchunk = 0;
	}
	else
		eytz_heap_set_chunk(st->hf, st->chunk, st->nchunk);
	return true;
}

/*
 * The next match of an index-only chunk's first pass that the index
 * answers, its inner columns in the scan slot, or NULL at the end of the
 * pass; the others are set aside for the heap.  The index's entry is in
 * the row's key range (no recheck): without kept rows nothing of the row
 * is read.
 */
static inline const EytzMatch *
next_index_match(EytzJoinState *st, BatchRow **r)
{
	while (st->pos < st->nchunk)
	{
		const EytzMatch *m = &st->chunk[st->pos];
		uint32		ahead = st->pos + EYTZ_ROW_AHEAD;

		if (!st->from_index[st->pos++])
		{
			st->deferred[st->ndeferred++] = *m;
			continue;
		}
		*r = NULL;
		if (st->keep_rows)
		{
			/* the rows of the matches ahead, at random in the batch: their misses overlap */
			if (ahead < st->nchunk && st->from_index[ahead])
				prefetch_row(st, st->chunk[ahead].row);
			*r = batch_row(st, m->row);
			if (st->single_match && row_matched(st, m->row, *r))
				continue;
		}
		stage_enter(st, STAGE_FETCH);
		if (fetch_inner(st, m))
			return m;
	}
	return NULL;
}

/*
 * The next match of a chunk sorted by TID whose inner tuple is visible (in
 * the scan slot), or NULL at the end of the chunk
 */
static inline const EytzMatch *
next_heap_match(EytzJoinState *st, BatchRow **r)
{
	while (st->pos < st->nchunk)
	{
		const EytzMatch *m;

		if (st->pos == st->block_end)
			resolve_block(st);
		if (st->pos + EYTZ_ROW_AHEAD < st->nchunk)
			prefetch_row(st, st->chunk[st->pos + EYTZ_ROW_AHEAD].row);
		m = &st->chunk[st->pos++];
		*r = st->keep_rows ? batch_row(st, m->row) : NULL;
		if (st->single_match && row_matched(st, m->row, *r))
			continue;
		if (m->tid != st->cur_tid)
		{
			stage_enter(st, STAGE_FETCH);
			st->cur_tid = m->tid;
			st->cur_found = fetch_inner(st, m);
		}
		if (st->cur_found)
			return m;
	}
	return NULL;
}

/*
 * Is key in the range of batch row "row" (r, or without kept rows its
 * query's)?
 */
static inline bool
in_row_range(EytzJoinState *st, uint32 row, const BatchRow *r, uint64 key)
{
	if (r == NULL)
		return st->point_keys ? key == st->qlo[row] :
			key >= st->qlo[row] && key <= st->qhi[row];
	return key >= r->lo && key <= r->hi;
}

/* The next joined row of the batch's matches, or NULL after its last chunk */
TupleTableSlot *
eytz_join_next_match(EytzJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	for (;;)
	{
		const EytzMatch *m;
		BatchRow   *r;

		m = st->index_pass ? next_index_match(st, &r) : next_heap_match(st, &r);
		if (m == NULL)
		{
			if (!next_chunk(st) && !eytz_join_next_leaf(st))
				return NULL;
			continue;
		}
		/*
		 * recheck: the heap tuple's key must be in the row's range (an
		 * index entry's is: the lookup returned it for that range)
		 */
		if (!st->index_pass && !in_row_range(st, m->row, r, st->cur_key))
			continue;
		stage_enter(st, STAGE_QUAL);
		if (st->outer_per_match)
			store_outer(st, m->row);
		else
			econtext->ecxt_scantuple = st->css.ss.ss_ScanTupleSlot;
		if (st->joinqual && !ExecQual(st->joinqual, econtext))
		{
			InstrCountFiltered1(&st->css, 1);
			ResetExprContext(econtext);
			continue;
		}
		/* (no write to a row that nothing reads back) */
		if (st->flags_per_match)
			set_row_matched(st, m->row, r);
		if (st->jointype == JOIN_ANTI)
			continue;
		if (!other_quals_pass(st))
			continue;
		return project(st);
	}
}
