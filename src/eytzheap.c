/*
 * eytzheap.c
 *		Heap fetch of the batched join, like a bitmap heap scan.
 *
 * The join's matches come sorted by TID, so those of one heap block are
 * adjacent.  Each block is read, pinned and share-locked once; under that
 * lock every TID of the block is resolved with heap_hot_search_buffer(),
 * which follows the HOT chain from the TID the index holds to the member the
 * snapshot sees and does what heapam does for serializable transactions
 * (conflict-out checks, tuple predicate locks).  The lock is then released
 * and the visible tuples are read from the still pinned page, as
 * heapam_scan_bitmap_next_block/next_tuple do.  Tables of other access
 * methods are read one TID at a time through table_index_fetch_tuple().
 *
 * The TIDs come from an unpinned copy of the index, so a block may lie past
 * the table's end (VACUUM truncated it) and an offset past the page's line
 * pointers: neither is visible.  The caller rechecks the key.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzheap.h"

/* What a TID of the current block resolved to */
typedef struct VisEntry
{
	uint32		block_no;		/* hf->block_no when resolved */
	OffsetNumber visible;		/* the visible chain member, or Invalid */
} VisEntry;

struct EytzHeapFetch
{
	Relation	rel;
	Snapshot	snapshot;
	TupleTableSlot *slot;		/* the fetched tuple */
	bool		page_mode;		/* heapam: a block at a time */
	IndexFetchTableData *ifetch;	/* other table AMs: a TID at a time */
	Buffer		buf;
	BlockNumber blk;
	bool		blk_exists;
	BlockNumber nblocks;		/* the table's size when last looked at */
	uint32		block_no;		/* blocks begun: tags vis[] entries */
	uint64		pages;			/* blocks read */
	HeapTupleData tuple;		/* the header the slot points at */
	VisEntry	vis[MaxOffsetNumber + 1];
};

EytzHeapFetch *
eytz_heap_begin(Relation rel, Snapshot snapshot, MemoryContext cxt)
{
	EytzHeapFetch *hf = MemoryContextAllocZero(cxt, sizeof(EytzHeapFetch));
	MemoryContext old = MemoryContextSwitchTo(cxt);

	hf->rel = rel;
	hf->snapshot = snapshot;
	hf->page_mode = rel->rd_tableam == GetHeapamTableAmRoutine();
	hf->slot = table_slot_create(rel, NULL);
	if (!hf->page_mode)
		hf->ifetch = table_index_fetch_begin(rel);
	hf->buf = InvalidBuffer;
	hf->blk = InvalidBlockNumber;
	hf->nblocks = RelationGetNumberOfBlocks(rel);
	MemoryContextSwitchTo(old);
	return hf;
}

void
eytz_heap_block_begin(EytzHeapFetch *hf, BlockNumber blk)
{
	hf->blk = blk;
	/* a new tag for vis[]; after a wrap-around no old entry may carry it */
	if (++hf->block_no == 0)
	{
		memset(hf->vis, 0, sizeof(hf->vis));
		hf->block_no = 1;
	}
	if (!hf->page_mode)
		return;
	/* the table may have shrunk, or grown by this transaction's inserts */
	if (blk >= hf->nblocks)
		hf->nblocks = RelationGetNumberOfBlocks(hf->rel);
	hf->blk_exists = blk < hf->nblocks;
	if (!hf->blk_exists)
		return;
	hf->buf = ReleaseAndReadBuffer(hf->buf, hf->rel, blk);
	hf->pages++;
	heap_page_prune_opt(hf->rel, hf->buf);
	LockBuffer(hf->buf, BUFFER_LOCK_SHARE);
}

/* Resolve the TID (current block, off) under the block's lock */
void
eytz_heap_resolve(EytzHeapFetch *hf, OffsetNumber off)
{
	VisEntry   *e;
	ItemPointerData tid;
	HeapTupleData tuple;

	if (!hf->page_mode || off > MaxOffsetNumber)
		return;
	e = &hf->vis[off];
	if (e->block_no == hf->block_no)
		return;
	e->block_no = hf->block_no;
	e->visible = InvalidOffsetNumber;
	if (!hf->blk_exists)
		return;
	ItemPointerSet(&tid, hf->blk, off);
	if (heap_hot_search_buffer(&tid, hf->rel, hf->buf, hf->snapshot, &tuple,
							   NULL, true))
		e->visible = ItemPointerGetOffsetNumber(&tid);
}

void
eytz_heap_block_end(EytzHeapFetch *hf)
{
	if (hf->page_mode && hf->blk_exists)
		LockBuffer(hf->buf, BUFFER_LOCK_UNLOCK);
}

/*
 * Store the tuple that TID tid (of the current block, resolved) shows the
 * snapshot in the slot; false if it shows none.
 */
bool
eytz_heap_fetch(EytzHeapFetch *hf, ItemPointer tid)
{
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);
	OffsetNumber visible;
	Page		page;
	ItemId		lp;

	if (!hf->page_mode)
	{
		bool		call_again = false;
		bool		all_dead = false;

		return table_index_fetch_tuple(hf->ifetch, tid, hf->snapshot, hf->slot,
									   &call_again, &all_dead);
	}
	Assert(ItemPointerGetBlockNumberNoCheck(tid) == hf->blk);
	if (off > MaxOffsetNumber || hf->vis[off].block_no != hf->block_no)
		return false;
	visible = hf->vis[off].visible;
	if (visible == InvalidOffsetNumber)
		return false;
	/* the pin keeps the tuple where it is without the lock */
	page = BufferGetPage(hf->buf);
	lp = PageGetItemId(page, visible);
	hf->tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
	hf->tuple.t_len = ItemIdGetLength(lp);
	hf->tuple.t_tableOid = RelationGetRelid(hf->rel);
	ItemPointerSet(&hf->tuple.t_self, hf->blk, visible);
	ExecStoreBufferHeapTuple(&hf->tuple, hf->slot, hf->buf);
	return true;
}

TupleTableSlot *
eytz_heap_slot(EytzHeapFetch *hf)
{
	return hf->slot;
}

uint64
eytz_heap_pages(const EytzHeapFetch *hf)
{
	return hf->pages;
}

/* Drop the tuple and the pins (between batches, on rescan) */
void
eytz_heap_reset(EytzHeapFetch *hf)
{
	ExecClearTuple(hf->slot);
	if (BufferIsValid(hf->buf))
		ReleaseBuffer(hf->buf);
	hf->buf = InvalidBuffer;
	hf->blk = InvalidBlockNumber;
	hf->blk_exists = false;
	if (hf->ifetch)
		table_index_fetch_reset(hf->ifetch);
}

void
eytz_heap_end(EytzHeapFetch *hf)
{
	eytz_heap_reset(hf);
	ExecDropSingleTupleTableSlot(hf->slot);
	if (hf->ifetch)
		table_index_fetch_end(hf->ifetch);
	pfree(hf);
}
