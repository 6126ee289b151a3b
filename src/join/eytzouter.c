/*
 * eytzouter.c
 *		The batched join's outer rows read straight from the heap pages of a
 *		plain Seq Scan.
 *
 * Where the join's outer plan is a Seq Scan of a heap table that does not
 * filter and whose output columns are table columns as they are, the join
 * reads the table itself, a page at a time, as PG-Strom's joins take
 * over their outer scan: heapgetpage() lists the tuples of a page that the
 * snapshot sees (its visibility and serializable conflict checks, the
 * scan's relation predicate lock and buffer access strategy are heapam's,
 * as for the Seq Scan), and each tuple is put in a slot that points at the
 * pinned page without touching the buffer's pin count.  That replaces a
 * trip per row through ExecProcNode, ExecScan, table_scan_getnextslot and
 * a buffer slot, and the Seq Scan's projection (about half of the join's
 * outer time).  A key that is an output column is read from the tuple where
 * it lies (eytz_outer_next_tuple); where the join wants a row, the tuple's
 * columns are put in a slot of the Seq Scan's output type.
 *
 * The Seq Scan node stays in the plan and is never run; its
 * instrumentation counts the rows read on its behalf and the time of the
 * batch reads that read them (EXPLAIN ANALYZE shows them there).  The scan
 * does not join a synchronized scan: it starts at the table's first page.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "utils/rel.h"

#include "eytzcompat.h"
#include "eytzouter.h"

bool		eytz_direct_outer = true;

struct EytzOuterScan
{
	PlanState  *child;			/* the Seq Scan read on its behalf */
	Relation	rel;
	TableScanDesc scan;
	TupleTableSlot *slot;		/* a heap tuple slot: no pin per row */
	HeapTupleData tuple;		/* the tuple the slot points at */
	AttrNumber *attmap;			/* per output column, its table column */
	int			nout;
	AttrNumber	max_attno;		/* the last table column read */
	TupleTableSlot *out;		/* the output row, or NULL where it is the
								 * tuple as it is */
	BlockNumber next_block;
	int			next_tuple;		/* of the current page's visible tuples */
	int			ntuples;		/* them (0: no page read) */
	uint64		rows;			/* read since the child's clock started */
	uint64		pages;
	bool		running;		/* the child's clock */
};

/*
 * The direct reader of outer plan "outer", or NULL where it is not a Seq
 * Scan of a heap table without a filter whose output columns are table
 * columns, read with an MVCC snapshot
 */
EytzOuterScan *
eytz_outer_begin(PlanState *outer, EState *estate)
{
	EytzOuterScan *os;
	Relation	rel;
	TableScanDesc scan;
	Index		scanrelid;
	AttrNumber *attmap;
	int			nout;
	AttrNumber	max_attno = 0;
	bool		as_is;
	ListCell   *lc;
	MemoryContext old;

	/* a recheck (EvalPlanQual) reads the row it locked: the Seq Scan knows it */
	if (!eytz_direct_outer || estate->es_epq_active != NULL || !IsA(outer, SeqScanState) ||
		outer->plan->parallel_aware || outer->qual != NULL)
		return NULL;
	rel = ((ScanState *) outer)->ss_currentRelation;
	if (rel->rd_tableam != GetHeapamTableAmRoutine())
		return NULL;
	scanrelid = ((Scan *) outer->plan)->scanrelid;
	nout = list_length(outer->plan->targetlist);
	/* for the query, whatever context the first batch is read in */
	old = MemoryContextSwitchTo(estate->es_query_cxt);
	attmap = palloc(sizeof(AttrNumber) * Max(nout, 1));
	as_is = outer->ps_ProjInfo == NULL;
	foreach(lc, outer->plan->targetlist)
	{
		Var		   *var = (Var *) ((TargetEntry *) lfirst(lc))->expr;

		if (!IsA(var, Var) || var->varno != scanrelid || var->varattno <= 0 ||
			var->varlevelsup != 0)
		{
			pfree(attmap);
			MemoryContextSwitchTo(old);
			return NULL;
		}
		attmap[foreach_current_index(lc)] = var->varattno;
		max_attno = Max(max_attno, var->varattno);
	}
	/* a synchronized scan would start anywhere: start at page 0 */
	scan = table_beginscan_strat(rel, estate->es_snapshot, 0, NULL, true, false);
	/* page at a time needs an MVCC snapshot (heapam turns it off otherwise) */
	if (!(scan->rs_flags & SO_ALLOW_PAGEMODE))
	{
		table_endscan(scan);
		pfree(attmap);
		MemoryContextSwitchTo(old);
		return NULL;
	}
	os = palloc0(sizeof(EytzOuterScan));
	os->child = outer;
	os->rel = rel;
	os->scan = scan;
	os->slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	os->tuple.t_tableOid = RelationGetRelid(rel);
	os->attmap = attmap;
	os->nout = nout;
	os->max_attno = max_attno;
	if (!as_is)
		os->out = MakeSingleTupleTableSlot(outer->ps_ResultTupleDesc, &TTSOpsVirtual);
	MemoryContextSwitchTo(old);
	return os;
}

/*
 * The next outer tuple the snapshot sees (pointing into its pinned page,
 * valid until the next call), or NULL after the last
 */
HeapTuple
eytz_outer_next_tuple(EytzOuterScan *os)
{
	HeapScanDesc hs = (HeapScanDesc) os->scan;
	OffsetNumber off;
	Page		page;
	ItemId		lp;

	while (os->next_tuple >= os->ntuples)
	{
		if (os->next_block >= hs->rs_nblocks)
			return NULL;
		/* pins the page (dropping the last), lists its visible tuples */
		eytz_heap_read_page(os->scan, os->next_block++);
		os->next_tuple = 0;
		os->ntuples = hs->rs_ntuples;
		os->pages++;
	}
	off = hs->rs_vistuples[os->next_tuple++];
	page = BufferGetPage(hs->rs_cbuf);
	lp = PageGetItemId(page, off);
	os->tuple.t_data = (HeapTupleHeader) PageGetItem(page, lp);
	os->tuple.t_len = ItemIdGetLength(lp);
	ItemPointerSet(&os->tuple.t_self, hs->rs_cblock, off);
	pgstat_count_heap_getnext(os->rel);
	os->rows++;
	return &os->tuple;
}

/* The next outer row, as the Seq Scan would return it, or NULL after the last */
TupleTableSlot *
eytz_outer_next(EytzOuterScan *os)
{
	HeapTuple	tuple = eytz_outer_next_tuple(os);
	int			i;

	if (tuple == NULL)
		return NULL;
	ExecStoreHeapTuple(tuple, os->slot, false);
	if (os->out == NULL)
		return os->slot;
	slot_getsomeattrs(os->slot, os->max_attno);
	ExecClearTuple(os->out);
	for (i = 0; i < os->nout; i++)
	{
		os->out->tts_values[i] = os->slot->tts_values[os->attmap[i] - 1];
		os->out->tts_isnull[i] = os->slot->tts_isnull[os->attmap[i] - 1];
	}
	return ExecStoreVirtualTuple(os->out);
}

/* The outer table's row type */
TupleDesc
eytz_outer_desc(const EytzOuterScan *os)
{
	return RelationGetDescr(os->rel);
}

/* The table column of the Seq Scan's output column "col" (from 1) */
AttrNumber
eytz_outer_attno(const EytzOuterScan *os, AttrNumber col)
{
	Assert(col >= 1 && col <= os->nout);
	return os->attmap[col - 1];
}

/* A batch read starts: the child's clock runs */
void
eytz_outer_resume(EytzOuterScan *os)
{
	if (os->child->instrument && !os->running)
		InstrStartNode(os->child->instrument);
	os->running = true;
	os->rows = 0;
}

/* A batch read ends: the child is charged its rows and time */
void
eytz_outer_pause(EytzOuterScan *os)
{
	if (os->child->instrument && os->running)
		InstrStopNode(os->child->instrument, (double) os->rows);
	os->running = false;
	os->rows = 0;
}

/* The slots point into the current page: empty them before its pin goes */
static void
forget_row(EytzOuterScan *os)
{
	if (os->out)
		ExecClearTuple(os->out);
	ExecClearTuple(os->slot);
}

/* Start over at the table's first page (its size read again) */
void
eytz_outer_rescan(EytzOuterScan *os)
{
	eytz_outer_pause(os);
	forget_row(os);
	table_rescan(os->scan, NULL);
	os->next_block = 0;
	os->next_tuple = 0;
	os->ntuples = 0;
}

uint64
eytz_outer_pages(const EytzOuterScan *os)
{
	return os ? os->pages : 0;
}

void
eytz_outer_end(EytzOuterScan *os)
{
	eytz_outer_pause(os);
	forget_row(os);
	table_endscan(os->scan);
	if (os->out)
		ExecDropSingleTupleTableSlot(os->out);
	ExecDropSingleTupleTableSlot(os->slot);
	pfree(os->attmap);
	pfree(os);
}
