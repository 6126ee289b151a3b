/*
 * eytzheap.c
 *		Heap fetch of the batched join, like a bitmap heap scan.
 *
 * The join's matches come sorted by TID, so those of one heap block are
 * adjacent.  Each block is read, pinned and share-locked once; under that
 * lock every TID of the block is resolved with heap_hot_search_buffer(),
 * which follows the HOT chain from the TID the index holds to the member the
 * snapshot sees and does what heapam does for serializable transactions
 * (conflict-out checks, tuple predicate locks).  On a page marked
 * all-visible, every tuple on it is visible to every MVCC snapshot, so
 * there the chain's first tuple is the one the snapshot sees and no tuple
 * header is tested, as heapgetpage() does for a sequential scan (not for a
 * snapshot taken during recovery, nor in a serializable transaction, whose
 * reads heap_hot_search_buffer() must record).  The lock is then released
 * and the visible tuples are read from the still pinned page, as
 * heapam_scan_bitmap_next_block/next_tuple do.  Tables of other access
 * methods are read one TID at a time through table_index_fetch_tuple().
 *
 * The blocks of a chunk are visited in order and each one's misses are
 * taken ahead of time, without pins: for each of the EYTZ_HEAP_AHEAD blocks
 * past the current one the buffer that holds it is found (the buffer
 * mapping lookup, PrefetchBuffer, which also starts the read of a block
 * not in shared buffers), its descriptor, page header and the line
 * pointers of its matches prefetched and, half way, the tuple headers
 * those line pointers name.  Reading an unpinned page is only a guess at
 * where its tuples are: the buffer may be given to another page meanwhile,
 * and a stale or torn value costs a useless prefetch within shared
 * buffers, nothing else.  The current block alone is pinned (through the
 * buffer found ahead: ReadRecentBuffer rechecks it), so that the backend's
 * pins stay within its private refcount array; more than eight spill into
 * a hash table that every pin and unpin then searches.  The visibility
 * checks run under the content lock.
 *
 * Batches and chunks visit the same blocks again: a block found before in
 * the scan is looked for in the same buffer first, without the buffer
 * mapping lookup.
 *
 * The TIDs come from an unpinned copy of the index, so a block may lie past
 * the table's end (VACUUM truncated it) and an offset past the page's line
 * pointers: neither is visible.  The caller rechecks the key.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "pgstat.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "eytzcompat.h"
#include "eytzam.h"
#include "eytzheap.h"

/*
 * Blocks prefetched ahead of the current one, and the distance at which
 * their tuple headers are.  A random block costs a chain of three or four
 * misses (mapping table, buffer descriptor, line pointer, tuple).
 */
#define EYTZ_HEAP_AHEAD 16
#define EYTZ_HEAP_HEADERS_AT (EYTZ_HEAP_AHEAD / 2)
/* line pointers prefetched per block ahead: a block's first matches */
#define EYTZ_HEAP_PREFETCH_TIDS 16
/* blocks whose last buffer is remembered (4 bytes each: 16 MB at most) */
#define EYTZ_HEAP_RECENT_MAX (4 * 1024 * 1024)

/* A block ahead: the buffer that held it, and its matches in the chunk */
typedef struct AheadBlock
{
	BlockNumber blk;
	Buffer		buf;			/* not pinned; InvalidBuffer: not known */
	uint32		first;			/* its matches: chunk[first..end) */
	uint32		end;
	bool		headers;		/* tuple headers prefetched */
} AheadBlock;

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
	bool		blk_all_visible;	/* the page's PD_ALL_VISIBLE, where trusted */
	bool		trust_all_visible;	/* see the file header */
	BlockNumber nblocks;		/* the table's size when last looked at */
	uint32		block_no;		/* blocks begun: tags vis[] entries */
	uint64		pages;			/* blocks read */
	HeapTupleData tuple;		/* the header the slot points at */

	/* the chunk of matches whose blocks are visited, and the blocks ahead */
	const EytzMatch *chunk;
	uint32		nchunk;
	uint32		scan;			/* chunk[scan..) not pinned ahead yet */
	AheadBlock	ahead[EYTZ_HEAP_AHEAD];
	uint32		ahead_head;		/* ring of nahead entries */
	uint32		nahead;

	/* per block below nrecent: the buffer it was last found in, or 0 */
	Buffer	   *recent;
	BlockNumber nrecent;

	BufferAccessStrategy strategy;	/* a ring for one pass, or NULL */

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
	hf->trust_all_visible = snapshot->snapshot_type == SNAPSHOT_MVCC &&
		!snapshot->takenDuringRecovery && !IsolationIsSerializable();
	hf->slot = table_slot_create(rel, NULL);
	if (!hf->page_mode)
		hf->ifetch = table_index_fetch_begin(rel);
	hf->buf = InvalidBuffer;
	hf->blk = InvalidBlockNumber;
	hf->nblocks = RelationGetNumberOfBlocks(rel);
	/* shared buffers only: before 15.3 ReadRecentBuffer mishandled local ones */
	if (hf->page_mode && !RelationUsesLocalBuffers(rel))
	{
		hf->nrecent = Min(hf->nblocks, EYTZ_HEAP_RECENT_MAX);
		hf->recent = MemoryContextAllocHuge(cxt, sizeof(Buffer) * Max(hf->nrecent, 1));
		memset(hf->recent, 0, sizeof(Buffer) * hf->nrecent);
	}
	MemoryContextSwitchTo(old);
	return hf;
}

/* Does block blk exist?  (the table may have shrunk, or grown by this transaction's inserts) */
static bool
block_exists(EytzHeapFetch *hf, BlockNumber blk)
{
	if (blk >= hf->nblocks)
		hf->nblocks = RelationGetNumberOfBlocks(hf->rel);
	return blk < hf->nblocks;
}

/*
 * Pin block blk, through the buffer it was last found in when that still
 * holds it (ReadRecentBuffer: no buffer mapping lookup).
 */
static Buffer
read_block(EytzHeapFetch *hf, BlockNumber blk)
{
	Buffer		buf;

	if (blk < hf->nrecent && hf->recent[blk] != InvalidBuffer &&
		ReadRecentBuffer(EytzRelationFile(hf->rel), MAIN_FORKNUM, blk, hf->recent[blk]))
	{
		/* counted as ReadBuffer counts a hit */
		pgstat_count_buffer_read(hf->rel);
		pgstat_count_buffer_hit(hf->rel);
		return hf->recent[blk];
	}
	buf = ReadBufferExtended(hf->rel, MAIN_FORKNUM, blk, RBM_NORMAL, hf->strategy);
	if (blk < hf->nrecent)
		hf->recent[blk] = buf;
	return buf;
}

/*
 * The buffer that holds block blk, unpinned (a guess), or InvalidBuffer:
 * the one it was found in before, or the buffer mapping's answer
 * (PrefetchBuffer starts reading a block that no buffer holds)
 */
static Buffer
find_block(EytzHeapFetch *hf, BlockNumber blk)
{
	PrefetchBufferResult r;

	/* local buffers: ReadRecentBuffer mishandled them before 15.3 */
	if (hf->recent == NULL)
		return InvalidBuffer;
	if (blk < hf->nrecent && hf->recent[blk] != InvalidBuffer)
		return hf->recent[blk];
	if (!block_exists(hf, blk))
		return InvalidBuffer;
	r = PrefetchBuffer(hf->rel, MAIN_FORKNUM, blk);
	if (blk < hf->nrecent)
		hf->recent[blk] = r.recent_buffer;
	return r.recent_buffer;
}

/* Prefetch the tuple headers of block a's matches through their line pointers */
static void
prefetch_headers(EytzHeapFetch *hf, AheadBlock *a)
{
	Page		page;
	OffsetNumber maxoff;
	uint32		i;

	a->headers = true;
	if (!BufferIsValid(a->buf))
		return;
	page = BufferGetPage(a->buf);
	/* unlocked reads: a guess, bounded to the page (see the file header) */
	maxoff = PageGetMaxOffsetNumber(page);
	for (i = a->first; i < a->end && i < a->first + EYTZ_HEAP_PREFETCH_TIDS; i++)
	{
		OffsetNumber off = eytz_tid_offset(hf->chunk[i].tid);
		ItemId		lp;

		if (off < FirstOffsetNumber || off > maxoff || off > MaxOffsetNumber)
			continue;
		lp = PageGetItemId(page, off);
		if (ItemIdIsNormal(lp) && ItemIdGetOffset(lp) < BLCKSZ)
			__builtin_prefetch((char *) page + ItemIdGetOffset(lp));
	}
}

/*
 * Find the chunk's next blocks until EYTZ_HEAP_AHEAD are ahead, prefetching
 * their buffer descriptors, page headers and line pointers; prefetch the
 * tuple headers of those half way.
 */
static void
prefetch_ahead(EytzHeapFetch *hf)
{
	uint32		i;

	while (hf->nahead < EYTZ_HEAP_AHEAD && hf->scan < hf->nchunk)
	{
		AheadBlock *a = &hf->ahead[(hf->ahead_head + hf->nahead) % EYTZ_HEAP_AHEAD];
		uint32		end = hf->scan;

		a->blk = eytz_tid_block(hf->chunk[hf->scan].tid);
		while (end < hf->nchunk && eytz_tid_block(hf->chunk[end].tid) == a->blk)
			end++;
		a->first = hf->scan;
		a->end = end;
		a->headers = false;
		hf->scan = end;
		hf->nahead++;
		a->buf = find_block(hf, a->blk);
		if (!BufferIsValid(a->buf))
			continue;
		/*
		 * the descriptor that the pin updates, the page header that
		 * prefetch_headers and the prune check read
		 */
		__builtin_prefetch(GetBufferDescriptor(a->buf - 1));
		__builtin_prefetch(BufferGetPage(a->buf));
		for (i = a->first; i < a->end && i < a->first + EYTZ_HEAP_PREFETCH_TIDS; i++)
			__builtin_prefetch(PageGetItemId(BufferGetPage(a->buf),
											 eytz_tid_offset(hf->chunk[i].tid)));
	}
	for (i = 0; i < Min(hf->nahead, EYTZ_HEAP_HEADERS_AT); i++)
	{
		AheadBlock *a = &hf->ahead[(hf->ahead_head + i) % EYTZ_HEAP_AHEAD];

		if (!a->headers)
			prefetch_headers(hf, a);
	}
}

void
eytz_heap_set_chunk(EytzHeapFetch *hf, const EytzMatch *chunk, uint32 n)
{
	hf->nahead = 0;
	hf->chunk = chunk;
	hf->nchunk = n;
	hf->scan = 0;
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
	/* blocks up to blk were passed by (or are blk) */
	while (hf->nahead > 0 && hf->ahead[hf->ahead_head].blk <= blk)
	{
		hf->ahead_head = (hf->ahead_head + 1) % EYTZ_HEAP_AHEAD;
		hf->nahead--;
	}
	/* not from this chunk's walk: what is ahead starts past blk */
	while (hf->scan < hf->nchunk && eytz_tid_block(hf->chunk[hf->scan].tid) <= blk)
		hf->scan++;
	if (BufferIsValid(hf->buf))
		ReleaseBuffer(hf->buf);
	hf->buf = block_exists(hf, blk) ? read_block(hf, blk) : InvalidBuffer;
	prefetch_ahead(hf);
	hf->blk_exists = BufferIsValid(hf->buf);
	if (!hf->blk_exists)
		return;
	hf->pages++;
	heap_page_prune_opt(hf->rel, hf->buf);
	LockBuffer(hf->buf, BUFFER_LOCK_SHARE);
	hf->blk_all_visible = hf->trust_all_visible &&
		PageIsAllVisible(BufferGetPage(hf->buf));
}

/*
 * The chain member at TID (the current block, off) on an all-visible page:
 * its first tuple (through a redirect), or InvalidOffsetNumber where the
 * TID names no chain's start (what heap_hot_search_buffer() refuses too)
 */
static OffsetNumber
chain_start_all_visible(Page page, OffsetNumber off)
{
	ItemId		lp;

	if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
		return InvalidOffsetNumber;
	lp = PageGetItemId(page, off);
	if (ItemIdIsRedirected(lp))
	{
		/* a redirect leads to a heap-only tuple, never to another redirect */
		off = ItemIdGetRedirect(lp);
		if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
			return InvalidOffsetNumber;
		lp = PageGetItemId(page, off);
		return ItemIdIsNormal(lp) ? off : InvalidOffsetNumber;
	}
	if (!ItemIdIsNormal(lp))
		return InvalidOffsetNumber;
	/* a heap-only tuple where a chain should start: the slot was reused */
	if (HeapTupleHeaderIsHeapOnly((HeapTupleHeader) PageGetItem(page, lp)))
		return InvalidOffsetNumber;
	return off;
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
	if (hf->blk_all_visible)
	{
		e->visible = chain_start_all_visible(BufferGetPage(hf->buf), off);
		return;
	}
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
 * The tuple that TID tid (of the current block, resolved) shows the
 * snapshot, pointing into the pinned page (valid until the next block
 * begins), or NULL if it shows none; heap tables only (eytz_heap_by_page)
 */
HeapTuple
eytz_heap_tuple(EytzHeapFetch *hf, ItemPointer tid)
{
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);
	OffsetNumber visible;
	Page		page;
	ItemId		lp;

	Assert(hf->page_mode);
	Assert(ItemPointerGetBlockNumberNoCheck(tid) == hf->blk);
	if (off > MaxOffsetNumber || hf->vis[off].block_no != hf->block_no)
		return NULL;
	visible = hf->vis[off].visible;
	if (visible == InvalidOffsetNumber)
		return NULL;
	/* the pin keeps the tuple where it is without the lock */
	page = BufferGetPage(hf->buf);
	lp = PageGetItemId(page, visible);
	hf->tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
	hf->tuple.t_len = ItemIdGetLength(lp);
	hf->tuple.t_tableOid = RelationGetRelid(hf->rel);
	ItemPointerSet(&hf->tuple.t_self, hf->blk, visible);
	return &hf->tuple;
}

/*
 * Store the tuple that TID tid (of the current block, resolved) shows the
 * snapshot in the slot; false if it shows none.
 */
bool
eytz_heap_fetch(EytzHeapFetch *hf, ItemPointer tid)
{
	HeapTuple	tuple;

	if (!hf->page_mode)
	{
		bool		call_again = false;
		bool		all_dead = false;

		return table_index_fetch_tuple(hf->ifetch, tid, hf->snapshot, hf->slot,
									   &call_again, &all_dead);
	}
	tuple = eytz_heap_tuple(hf, tid);
	if (tuple == NULL)
		return false;
	ExecStoreBufferHeapTuple(tuple, hf->slot, hf->buf);
	return true;
}

/* Is the table read a block at a time (heapam), so eytz_heap_tuple works? */
bool
eytz_heap_by_page(const EytzHeapFetch *hf)
{
	return hf->page_mode;
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

/* Drop the tuple and the pin (between batches, on rescan) */
void
eytz_heap_reset(EytzHeapFetch *hf)
{
	ExecClearTuple(hf->slot);
	eytz_heap_set_chunk(hf, NULL, 0);
	if (BufferIsValid(hf->buf))
		ReleaseBuffer(hf->buf);
	hf->buf = InvalidBuffer;
	hf->blk = InvalidBlockNumber;
	hf->blk_exists = false;
	if (hf->ifetch)
		table_index_fetch_reset(hf->ifetch);
}

/*
 * From here on read the blocks not in shared buffers through a small ring
 * of buffers, as a sequential scan of a large table does: for one pass in
 * block order over a heap that shared buffers do not keep (the join's heap
 * order), so that the pass pushes out neither the index nor the other
 * tables' pages, and a new backend touches a ring of buffers, not the pool
 */
void
eytz_heap_bulk_read(EytzHeapFetch *hf)
{
	if (hf->strategy == NULL && hf->page_mode)
		hf->strategy = GetAccessStrategy(BAS_BULKREAD);
}

void
eytz_heap_end(EytzHeapFetch *hf)
{
	eytz_heap_reset(hf);
	ExecDropSingleTupleTableSlot(hf->slot);
	if (hf->ifetch)
		table_index_fetch_end(hf->ifetch);
	if (hf->strategy)
		FreeAccessStrategy(hf->strategy);
	if (hf->recent)
		pfree(hf->recent);
	pfree(hf);
}
