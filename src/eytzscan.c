/*
 * eytzscan.c
 *		Index scans (amgettuple, amgetbitmap) of eytzgpu.
 *
 * The scan keys become disjoint key ranges (eytzkeys.c); the first call
 * collects every matching TID at once (eytzsearch.c), sorts them into heap
 * order and drops duplicates.  amgettuple then hands them out with
 * recheck set: the TIDs come from pages no pin protects once collected, so
 * the executor re-evaluates the quals on each heap tuple.
 */
#include "postgres.h"

#include "access/relscan.h"
#include "pgstat.h"
#include "utils/rel.h"

#include "eytzgpu.h"

typedef struct EytzScanOpaqueData
{
	bool		collected;
	ItemPointerData *tids;
	int64		ntids;
	int64		next;
} EytzScanOpaqueData;

typedef EytzScanOpaqueData *EytzScanOpaque;

IndexScanDesc
eytz_beginscan(Relation r, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(r, nkeys, norderbys);
	EytzScanOpaque so = palloc0(sizeof(EytzScanOpaqueData));

	scan->opaque = so;
	return scan;
}

static void
reset_scan(EytzScanOpaque so)
{
	if (so->tids)
		pfree(so->tids);
	so->tids = NULL;
	so->ntids = 0;
	so->next = 0;
	so->collected = false;
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

static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

static void
collect(IndexScanDesc scan)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	EytzRange  *ranges;
	int			nranges;
	int64		i,
				out;

	nranges = eytz_build_ranges(scan->indexRelation, scan->keyData,
								scan->numberOfKeys, &ranges);
	eytz_collect_tids(scan->indexRelation, ranges, nranges, &so->tids, &so->ntids);
	pfree(ranges);

	if (so->ntids > 1)
	{
		qsort(so->tids, so->ntids, sizeof(ItemPointerData), tid_cmp);
		for (i = 1, out = 1; i < so->ntids; i++)
			if (!ItemPointerEquals(&so->tids[i], &so->tids[out - 1]))
				so->tids[out++] = so->tids[i];
		so->ntids = out;
	}
	so->collected = true;
	pgstat_count_index_scan(scan->indexRelation);
}

bool
eytz_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;

	if (!so->collected)
		collect(scan);
	if (so->next >= so->ntids)
		return false;
	scan->xs_heaptid = so->tids[so->next++];
	scan->xs_recheck = true;
	return true;
}

int64
eytz_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	EytzScanOpaque so = (EytzScanOpaque) scan->opaque;
	int64		n;

	if (!so->collected)
		collect(scan);
	tbm_add_tuples(tbm, so->tids, so->ntids, true);
	n = so->ntids;
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
