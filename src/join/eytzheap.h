/*
 * eytzheap.h
 *		Heap fetch of the batched join (eytzheap.c): the inner tuples of a
 *		chunk of matches sorted by TID, a heap block at a time.
 */
#ifndef EYTZHEAP_H
#define EYTZHEAP_H

#include "access/tableam.h"
#include "executor/tuptable.h"
#include "storage/itemptr.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "eytzmatchsort.h"

typedef struct EytzHeapFetch EytzHeapFetch;

extern EytzHeapFetch *eytz_heap_begin(Relation rel, Snapshot snapshot,
									  MemoryContext cxt);

/*
 * The chunk of matches (sorted by TID) whose blocks come next: their blocks
 * are prefetched (not pinned) ahead of eytz_heap_block_begin().  The chunk
 * must stay until the next call or eytz_heap_reset().
 */
extern void eytz_heap_set_chunk(EytzHeapFetch *hf, const EytzMatch *chunk,
								uint32 n);

/*
 * Resolving a block: eytz_heap_block_begin(blk), eytz_heap_resolve() for
 * each of the block's TIDs, eytz_heap_block_end(); then eytz_heap_fetch()
 * stores the visible tuple of any of those TIDs in the slot (or
 * eytz_heap_tuple() returns it as it lies in the page), until the next block
 * begins.
 */
extern void eytz_heap_block_begin(EytzHeapFetch *hf, BlockNumber blk);
extern void eytz_heap_resolve(EytzHeapFetch *hf, OffsetNumber off);
extern void eytz_heap_block_end(EytzHeapFetch *hf);
extern bool eytz_heap_fetch(EytzHeapFetch *hf, ItemPointer tid);
extern HeapTuple eytz_heap_tuple(EytzHeapFetch *hf, ItemPointer tid);
extern bool eytz_heap_by_page(const EytzHeapFetch *hf);

extern TupleTableSlot *eytz_heap_slot(EytzHeapFetch *hf);
extern uint64 eytz_heap_pages(const EytzHeapFetch *hf);
extern void eytz_heap_bulk_read(EytzHeapFetch *hf);
extern void eytz_heap_reset(EytzHeapFetch *hf);
extern void eytz_heap_end(EytzHeapFetch *hf);

#endif							/* EYTZHEAP_H */
