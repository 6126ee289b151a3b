/*
 * eytzscan.c
 *		Index scans (amgettuple, amgetbitmap) of eytzgpu.
 *
 * The scan keys become disjoint key ranges (eytzkeys.c), and a search
 * cursor (eytzcursor.c) hands out their TIDs a chunk at a time.  amgettuple
 * sorts each chunk into heap order and returns it TID by TID; chunks start
 * small, so that LIMIT 1 reads a few pages, and double up to work_mem.
 * Recheck is set: the TIDs come from pages no pin protects once read, so
 * the executor re-evaluates the quals on each heap tuple.
 *
 * Scan keys with an array ("k = ANY(array)", "k IN (...)") that make more
 * than one range are answered by batched lookups instead
 * (eytzarrayscan.c), whose TIDs need no recheck under an MVCC snapshot: the
 * executor's recheck of "k = ANY(array)" compares each row with every
 * element of an array it cannot hash (a parameter), which made a scan of
 * n keys cost n times its rows.
 *
 * Index-only scans get each entry as an index tuple: the key decoded (for
 * the key types that decode exactly) and the included values, in the order
 * the search found them (as btree, which returns them in key order).  The executor
 * trusts the visibility map for a TID between amgettuple returning it and
 * the next call, so VACUUM must not remove that TID's heap tuple meanwhile
 * (nbtree holds a pin on the leaf page for that): an index-only scan holds
 * the EYTZ_IOS_LOCK_BLKNO page lock in share mode, which ambulkdelete takes
 * exclusively, from reading a chunk until the executor asks past its end.
 * A TID VACUUM has tombstoned before is not in the chunk; one it has not yet
 * cannot leave the heap before the executor is done with it.  Merges do not
 * take that lock: they remove nothing from the heap.
 */
#include "postgres.h"

#include "access/itup.h"
#include "access/relscan.h"
#include "access/tupmacs.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "eytzinclude.h"
#include "eytzmatchsort.h"

/* the first chunk: one pending page's worth, rounded up */
#define EYTZ_FIRST_CHUNK	1024

typedef struct EytzScanOpaqueData
{
	MemoryContext cxt;			/* the scan's (beginscan's) context */
	bool		started;		/* false before the first call */
	EytzSearch *search;			/* the ranges' search, or */
	EytzArrayScan *array;		/* their batched lookups */
	bool		recheck;		/* tell the executor to recheck the quals */
	bool		done;
	ItemPointerData *tids;		/* the current chunk */
	int			cap;
	int			ntids;
	int			next;

	/*
	 * index-only scans: the chunk's keys and values, returned in the order
	 * the search found them (as btree's in key order: sorting them by TID
	 * would make each access to these arrays a cache miss)
	 */
	bool		locked;			/* holding EYTZ_IOS_LOCK_BLKNO (see above) */
	int			ncols;
	uint64	   *keys;
	Datum	   *values;			/* [i * ncols + c] */
	bool	   *isnull;
	MemoryContext itup_cxt;		/* the index tuple returned last */

	/*
	 * Every column is fixed-width and passed by value, so an entry without
	 * NULLs always makes the same shape of index tuple: itup_buf holds it,
	 * and each entry only writes its values at itup_off (0 bytes: the
	 * columns do not allow it)
	 */
	Size		itup_bytes;
	uint16		itup_off[1 + EYTZ_MAX_INCLUDE];
	IndexTuple	itup_buf;
	const EytzKeyType *kt;		/* the key's type, looked up at the first tuple */
} EytzScanOpaqueData;

typedef EytzScanOpaqueData *EytzScanOpaque;

IndexScanDesc
eytz_beginscan(Relation r, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(r, nkeys, norderbys);
	EytzScanOpaque so = palloc0(sizeof(EytzScanOpaqueData));

	so->cxt = CurrentMemoryContext;
	StaticAssertStmt(EYTZ_FIRST_CHUNK >= EYTZ_PENDING_PER_PAGE,
					 "a chunk must hold a pending page");
	scan->opaque = so;
	return scan;
}

/*
 * The arrays of a chunk of cap TIDs (and their keys and values), in the
 * scan's context: scratch arrays, so that a large chunk's pages are not
 * mapped afresh by every scan
 */
static void
alloc_chunk_arrays(EytzScanOpaque so, int cap, bool want_values)
{
	Size		m = Max(so->ncols, 1);

	so->cap = cap;
	so->tids = eytz_scratch_alloc(so->cxt, sizeof(ItemPointerData) * cap);
	if (want_values)
	{
		so->keys = eytz_scratch_alloc(so->cxt, sizeof(uint64) * cap);
		so->values = eytz_scratch_alloc(so->cxt, sizeof(Datum) * cap * m);
		so->isnull = eytz_scratch_alloc(so->cxt, sizeof(bool) * cap * m);
	}
}

static void
free_chunk_arrays(EytzScanOpaque so)
{
	eytz_scratch_free(so->tids);
	so->tids = NULL;
	if (so->keys)
	{
		eytz_scratch_free(so->keys);
		eytz_scratch_free(so->values);
		eytz_scratch_free(so->isnull);
		so->keys = NULL;
	}
}

/* Forget the scan's search and its TIDs (rescan, end) */
static void
reset_scan(IndexScanDesc scan)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	MemoryContext itup_cxt = so->itup_cxt;
	MemoryContext cxt = so->cxt;

	if (so->search)
		eytz_search_end(so->search);
	if (so->array)
		eytz_array_scan_end(so->array);
	if (so->tids)
		free_chunk_arrays(so);
	if (so->itup_buf)
		pfree(so->itup_buf);
	if (so->locked)
		UnlockPage(scan->indexRelation, EYTZ_IOS_LOCK_BLKNO, ShareLock);
	memset(so, 0, sizeof(EytzScanOpaqueData));
	so->itup_cxt = itup_cxt;
	so->cxt = cxt;
}

/*
 * The fixed shape of the index tuples without NULLs, laid out as
 * index_form_tuple lays them out: the data after the MAXALIGNed header,
 * each column at its alignment
 */
static void
plan_itup(EytzScanOpaque so, TupleDesc desc)
{
	Size		off = IndexInfoFindDataOffset(0);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attbyval || att->attlen <= 0)
			return;
		off = att_align_nominal(off, att->attalign);
		so->itup_off[i] = (uint16) off;
		off += att->attlen;
	}
	so->itup_bytes = MAXALIGN(off);
	so->itup_buf = palloc0(so->itup_bytes);
	so->itup_buf->t_info = (unsigned short) so->itup_bytes;
}

/*
 * Can an index-only scan return attribute attno?  The key if it decodes to
 * the value it came from, and every included column.
 */
bool
eytz_canreturn(Relation index, int attno)
{
	if (attno == 1)
		return eytz_index_key_type(index)->exact;
	return true;
}

void
eytz_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
			ScanKey orderbys, int norderbys)
{
	reset_scan(scan);
	if (scankey && scan->numberOfKeys > 0)
		memmove(scan->keyData, scankey, scan->numberOfKeys * sizeof(ScanKeyData));
}

/*
 * Begin the search of the scan keys' ranges, with room for cap TIDs a call:
 * batched lookups for the many ranges of an array key, else the cursor
 */
static void
start_search(IndexScanDesc scan, int cap)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	MemoryContext old = MemoryContextSwitchTo(so->cxt);
	EytzRange  *ranges;
	int			nranges;
	bool		array = false;
	int			i;

	nranges = eytz_build_ranges(scan->indexRelation, scan->keyData,
								scan->numberOfKeys, &ranges);
	for (i = 0; i < scan->numberOfKeys; i++)
		array |= (scan->keyData[i].sk_flags & SK_SEARCHARRAY) != 0;
	so->started = true;
	if (array && nranges > 1)
	{
		so->array = eytz_array_scan_begin(scan->indexRelation, ranges, nranges,
										  scan->xs_want_itup);
		so->recheck = !IsMVCCSnapshot(scan->xs_snapshot);
	}
	else
	{
		so->search = eytz_search_begin(scan->indexRelation, ranges, nranges);
		so->recheck = true;
	}
	eytz_scratch_free(ranges);
	if (scan->xs_want_itup)
		so->ncols = eytz_include_count(scan->indexRelation);
	alloc_chunk_arrays(so, cap, scan->xs_want_itup);
	if (scan->xs_want_itup)
	{
		scan->xs_itupdesc = RelationGetDescr(scan->indexRelation);
		plan_itup(so, scan->xs_itupdesc);
		if (so->itup_cxt == NULL)
			so->itup_cxt = AllocSetContextCreate(CurrentMemoryContext,
												 "eytzgpu index-only scan",
												 ALLOCSET_SMALL_SIZES);
	}
	pgstat_count_index_scan(scan->indexRelation);
	MemoryContextSwitchTo(old);
}

/* The next chunk's TIDs (with keys and values: eytz_search_next_values) */
static int
next_chunk(EytzScanOpaque so, ItemPointerData *tids, uint64 *keys,
		   Datum *values, bool *isnull, int max)
{
	if (so->array)
		return eytz_array_scan_next(so->array, tids, keys, values, isnull, max);
	return eytz_search_next_values(so->search, tids, keys, values, isnull, max);
}

/*
 * The largest chunk: work_mem's worth of TIDs, with their keys and values
 * for an index-only scan
 */
static int
max_chunk(EytzScanOpaque so)
{
	Size		entry = sizeof(ItemPointerData);
	Size		n;

	if (so->keys)
		entry += sizeof(uint64) +
			(sizeof(Datum) + sizeof(bool)) * Max(so->ncols, 1);
	n = (Size) work_mem * 1024 / entry;
	return (int) Min(Max(n, EYTZ_FIRST_CHUNK),
					 MaxAllocSize / (sizeof(Datum) * Max(so->ncols, 1)));
}

/* qsort order of ItemPointerData */
static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}


/*
 * The next chunk of an index-only scan; the lock is let go between chunks,
 * so VACUUM can get in
 */
static int
next_itup_chunk(IndexScanDesc scan)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;

	if (so->locked)
		UnlockPage(scan->indexRelation, EYTZ_IOS_LOCK_BLKNO, ShareLock);
	LockPage(scan->indexRelation, EYTZ_IOS_LOCK_BLKNO, ShareLock);
	so->locked = true;
	return next_chunk(so, so->tids, so->keys, so->values, so->isnull, so->cap);
}

/* Entry i of the chunk as the index tuple of an index-only scan */
static void
form_itup(IndexScanDesc scan, int i)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	Datum		values[1 + EYTZ_MAX_INCLUDE];
	bool		isnull[1 + EYTZ_MAX_INCLUDE];
	MemoryContext old;

	if (so->kt == NULL)
		so->kt = eytz_index_key_type(scan->indexRelation);
	values[0] = so->kt->decode(so->keys[i]);
	isnull[0] = false;
	memcpy(&values[1], &so->values[(Size) i * so->ncols], sizeof(Datum) * so->ncols);
	memcpy(&isnull[1], &so->isnull[(Size) i * so->ncols], sizeof(bool) * so->ncols);
	if (so->itup_bytes > 0)
	{
		TupleDesc	desc = scan->xs_itupdesc;
		char	   *data = (char *) so->itup_buf;
		bool		any_null = false;
		int			c;

		for (c = 1; c <= so->ncols; c++)
			any_null |= isnull[c];
		if (!any_null)
		{
			for (c = 0; c <= so->ncols; c++)
				store_att_byval(data + so->itup_off[c], values[c],
								TupleDescAttr(desc, c)->attlen);
			scan->xs_itup = so->itup_buf;
			return;
		}
	}
	MemoryContextReset(so->itup_cxt);
	old = MemoryContextSwitchTo(so->itup_cxt);
	scan->xs_itup = index_form_tuple(scan->xs_itupdesc, values, isnull);
	MemoryContextSwitchTo(old);
}

bool
eytz_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;

	if (!so->started)
		start_search(scan, EYTZ_FIRST_CHUNK);
	while (so->next >= so->ntids)
	{
		if (so->done)
			return false;
		/*
		 * grow the chunk for scans that keep asking (new arrays: the old
		 * chunk is used up, nothing to copy)
		 */
		if (so->ntids == so->cap && so->cap < max_chunk(so))
		{
			bool		want_values = so->keys != NULL;

			free_chunk_arrays(so);
			alloc_chunk_arrays(so, Min(so->cap * 2, max_chunk(so)), want_values);
		}
		if (so->keys)
			so->ntids = next_itup_chunk(scan);
		else
		{
			so->ntids = next_chunk(so, so->tids, NULL, NULL, NULL, so->cap);
			/* the batched lookups' chunks come sorted */
			if (so->ntids > 1 && so->array == NULL)
				qsort(so->tids, so->ntids, sizeof(ItemPointerData), tid_cmp);
		}
		so->next = 0;
		so->done = so->ntids == 0;
	}
	if (so->keys)
	{
		int			i = so->next++;

		scan->xs_heaptid = so->tids[i];
		form_itup(scan, i);
	}
	else
		scan->xs_heaptid = so->tids[so->next++];
	scan->xs_recheck = so->recheck;
	return true;
}

int64
eytz_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	int64		n = 0;
	int			got;

	if (!so->started)
		start_search(scan, max_chunk(so));
	while ((got = next_chunk(so, so->tids, NULL, NULL, NULL, so->cap)) > 0)
	{
		tbm_add_tuples(tbm, so->tids, got, so->recheck);
		n += got;
		CHECK_FOR_INTERRUPTS();
	}
	reset_scan(scan);
	return n;
}

void
eytz_endscan(IndexScanDesc scan)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;

	reset_scan(scan);
	if (so->itup_cxt)
		MemoryContextDelete(so->itup_cxt);
	pfree(so);
}
