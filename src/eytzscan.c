/*
 * eytzscan.c
 *		Index scans (amgettuple, amgetbitmap) of eytzgpu.
 *
 * The scan keys become disjoint key ranges (eytzkeys.c), and a search
 * cursor (eytzsearch.c) hands out their TIDs a chunk at a time.  amgettuple
 * sorts each chunk into heap order and returns it TID by TID; chunks start
 * small, so that LIMIT 1 reads a few pages, and double up to work_mem.
 * Recheck is set: the TIDs come from pages no pin protects once read, so
 * the executor re-evaluates the quals on each heap tuple.
 */
#include "postgres.h"

#include "access/relscan.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzgpu.h"

/* the first chunk: one pending page's worth, rounded up */
#define EYTZ_FIRST_CHUNK	1024

typedef struct EytzScanOpaqueData
{
	EytzSearch *search;			/* NULL before the first call */
	bool		done;
	ItemPointerData *tids;		/* the current chunk */
	int			cap;
	int			ntids;
	int			next;
} EytzScanOpaqueData;

typedef EytzScanOpaqueData *EytzScanOpaque;

IndexScanDesc
eytz_beginscan(Relation r, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(r, nkeys, norderbys);
	EytzScanOpaque so = palloc0(sizeof(EytzScanOpaqueData));

	StaticAssertStmt(EYTZ_FIRST_CHUNK >= EYTZ_PENDING_PER_PAGE,
					 "a chunk must hold a pending page");
	scan->opaque = so;
	return scan;
}

/* Forget the scan's search and its TIDs (rescan, end) */
static void
reset_scan(EytzScanOpaque so)
{
	if (so->search)
		eytz_search_end(so->search);
	if (so->tids)
		pfree(so->tids);
	memset(so, 0, sizeof(EytzScanOpaqueData));
}

void
eytz_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
			ScanKey orderbys, int norderbys)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;

	reset_scan(so);
	if (scankey && scan->numberOfKeys > 0)
		memmove(scan->keyData, scankey, scan->numberOfKeys * sizeof(ScanKeyData));
}

/* Begin the search of the scan keys' ranges, with room for cap TIDs a call */
static void
start_search(IndexScanDesc scan, int cap)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	EytzRange  *ranges;
	int			nranges;

	nranges = eytz_build_ranges(scan->indexRelation, scan->keyData,
								scan->numberOfKeys, &ranges);
	so->search = eytz_search_begin(scan->indexRelation, ranges, nranges);
	pfree(ranges);
	so->cap = cap;
	so->tids = palloc(sizeof(ItemPointerData) * cap);
	pgstat_count_index_scan(scan->indexRelation);
}

/* The largest chunk: work_mem's worth of TIDs */
static int
max_chunk(void)
{
	Size		n = (Size) work_mem * 1024 / sizeof(ItemPointerData);

	return (int) Min(Max(n, EYTZ_FIRST_CHUNK), MaxAllocSize / sizeof(ItemPointerData));
}

/* qsort order of ItemPointerData */
static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

bool
eytz_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;

	if (so->search == NULL)
		start_search(scan, EYTZ_FIRST_CHUNK);
	while (so->next >= so->ntids)
	{
		if (so->done)
			return false;
		/* grow the chunk for scans that keep asking */
		if (so->ntids == so->cap && so->cap < max_chunk())
		{
			so->cap = Min(so->cap * 2, max_chunk());
			so->tids = repalloc(so->tids, sizeof(ItemPointerData) * so->cap);
		}
		so->ntids = eytz_search_next(so->search, so->tids, so->cap);
		so->next = 0;
		so->done = so->ntids == 0;
		if (so->ntids > 1)
			qsort(so->tids, so->ntids, sizeof(ItemPointerData), tid_cmp);
	}
	scan->xs_heaptid = so->tids[so->next++];
	scan->xs_recheck = true;
	return true;
}

int64
eytz_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	int64		n = 0;
	int			got;

	if (so->search == NULL)
		start_search(scan, max_chunk());
	while ((got = eytz_search_next(so->search, so->tids, so->cap)) > 0)
	{
		tbm_add_tuples(tbm, so->tids, got, true);
		n += got;
		CHECK_FOR_INTERRUPTS();
	}
	reset_scan(so);
	return n;
}

void
eytz_endscan(IndexScanDesc scan)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;

	reset_scan(so);
	pfree(so);
}
