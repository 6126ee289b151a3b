/*
 * eytzjoinexec.c
 *		Executor of the batched index-nested-loop join ("EytzGPU Join").
 *
 * Each batch: read up to the batch size of outer rows (pass-by-reference
 * values copied into the batch's memory), evaluate their key expressions
 * into key ranges (a NULL or empty range never matches) and submit the
 * ranges to the lookup seam (eytzlookup.h), which answers them on the GPU or
 * the CPU.  The matches come back as (TID, batch row) in chunks sorted by
 * TID whose size follows work_mem, so a batch's matches never sit in memory
 * whole and a LIMIT stops the work early.  The inner tuples of each heap
 * block of a chunk are fetched together (eytzheap.c), the key is rechecked
 * on each tuple (the TIDs come from an unpinned copy and may have been
 * vacuumed and reused), then the inner quals, join quals and other quals
 * are applied as a nested loop would.  An index-only plan (the index holds
 * every inner column the join reads) takes a match's values from the index
 * instead when the visibility map says its heap page is all-visible, as an
 * Index Only Scan does, and reads only the other pages: its chunks come
 * unsorted, the matches the index answers are returned in the order they
 * come, and the others are sorted by TID and fetched from the heap after
 * them (the chunk's second pass).  LEFT and ANTI emit the unmatched rows
 * of a batch after its last chunk; SEMI and ANTI (and unique inner sides)
 * skip a row's further matches.
 *
 * The first batch is small and batches grow geometrically to the batch
 * size, as do the chunks to their work_mem share: a CustomScan
 * never learns a LIMIT above it.  The batch arrays are taken once, for
 * the largest batch work_mem allows, from memory the backend reuses.
 *
 * A partitioned inner table is searched leaf by leaf: each batch's queries
 * go to the leaves that can hold them (eytzjoinleaves.c), and each leaf
 * with queries is submitted to its own lookup and its matches fetched from
 * its own heap in turn (eytz_join_next_leaf); the rows' matched flags span the
 * leaves, so LEFT, SEMI and ANTI see all of a row's matches.
 *
 * Under Gather (the parallel join) each process runs this executor on its
 * share of the outer rows; the node's shared memory tells the workers where
 * the leader's cached image is (or carries a copy of it) and carries their
 * counters back to the leader.
 *
 * Under EXPLAIN ANALYZE the node's time is split into stages by one clock
 * that moves from stage to stage (outer scan and batch fill, lookup, heap
 * fetch, qual and projection, the node's own control flow), so the stages
 * add up to the node's time.  With TIMING OFF only the outer scan and
 * batch fill and the lookup are timed, once per batch and per chunk: no
 * clock is read per row, here or in the outer plan (whose own
 * instrumentation reads two per row with TIMING ON), so these two stages
 * show what they cost without EXPLAIN.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "executor/executor.h"
#include "executor/nodeHash.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "optimizer/optimizer.h"
#include "port/pg_bitutils.h"
#include "storage/predicate.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzcompat.h"
#include "eytzjoinexec.h"

/* the executor's own setting (registered by eytz_join_init) */
int			eytz_lookup_overlap = EYTZ_OVERLAP_ON;

static void eytz_join_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *eytz_join_exec(CustomScanState *node);
static void eytz_join_end(CustomScanState *node);
static void eytz_join_rescan(CustomScanState *node);

static const CustomExecMethods eytz_exec_methods = {
	.CustomName = "EytzGPU Join",
	.BeginCustomScan = eytz_join_begin,
	.ExecCustomScan = eytz_join_exec,
	.EndCustomScan = eytz_join_end,
	.ReScanCustomScan = eytz_join_rescan,
	.EstimateDSMCustomScan = eytz_join_estimate_dsm,
	.InitializeDSMCustomScan = eytz_join_init_dsm,
	.ReInitializeDSMCustomScan = eytz_join_reinit_dsm,
	.InitializeWorkerCustomScan = eytz_join_init_worker,
	.ShutdownCustomScan = eytz_join_shutdown,
	.ExplainCustomScan = eytz_join_explain,
};

Node *
eytz_join_create_scan_state(CustomScan *cscan)
{
	EytzJoinState *st = (EytzJoinState *) newNode(sizeof(EytzJoinState),
												  T_CustomScanState);

	st->css.methods = &eytz_exec_methods;
	return (Node *) st;
}



static PlanState *
outer_ps(EytzJoinState *st)
{
	return (PlanState *) linitial(st->css.custom_ps);
}

/*
 * An index-only plan: where each inner column comes from in the index, and
 * which included columns the lookup must return with the matches
 */
static void
init_index_only(EytzJoinState *st, List *index_cols)
{
	ListCell   *lc;
	int			i = 0;

	st->index_only = index_cols != NIL;
	if (!st->index_only)
		return;
	st->index_cols = palloc0(sizeof(int) * Max(st->ninner, 1));
	foreach(lc, index_cols)
	{
		int			col = lfirst_int(lc);

		if (col > 0)
			st->include_mask |= 1U << (col - 1);
	}
	foreach(lc, index_cols)
	{
		int			col = lfirst_int(lc);

		if (i < st->ninner)
			st->index_cols[i++] = col <= 0 ? 0 :
				1 + pg_popcount32(st->include_mask & ((1U << (col - 1)) - 1));
	}
}

/*
 * Does the projection or a join or other qual read an outer column (or the
 * whole scan tuple)?  The outer columns lead the scan tuple.
 */
static bool
reads_outer_columns(EytzJoinState *st, CustomScan *cscan)
{
	Bitmapset  *attnos = NULL;
	int			x = -1;

	pull_varattnos((Node *) cscan->scan.plan.targetlist, INDEX_VAR, &attnos);
	pull_varattnos(list_nth(cscan->custom_exprs, EYTZ_EXPR_JOINQUAL), INDEX_VAR, &attnos);
	pull_varattnos(list_nth(cscan->custom_exprs, EYTZ_EXPR_OTHERQUAL), INDEX_VAR, &attnos);
	while ((x = bms_next_member(attnos, x)) >= 0)
		if (x + FirstLowInvalidHeapAttributeNumber <= st->nouter)
			return true;
	return false;
}

static void
eytz_join_begin(CustomScanState *node, EState *estate, int eflags)
{
	EytzJoinState *st = (EytzJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *strategies = list_nth(priv, EYTZ_PRIV_STRATEGIES);
	List	   *argtypes = list_nth(priv, EYTZ_PRIV_ARGTYPES);
	List	   *indexoids = list_nth(priv, EYTZ_PRIV_INDEXOIDS);
	List	   *leaf_attnos = list_nth(priv, EYTZ_PRIV_INNER_ATTNOS);
	List	   *keyexprs = list_nth(cscan->custom_exprs, EYTZ_EXPR_KEYS);
	PlanState  *ps = &node->ss.ps;
	TupleDesc	scandesc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	ListCell   *lc;
	int			i;

	st->jointype = (JoinType) intVal(list_nth(priv, EYTZ_PRIV_JOINTYPE));
	st->single_match = intVal(list_nth(priv, EYTZ_PRIV_SINGLE_MATCH)) != 0;
	st->parentoid = (Oid) intVal(list_nth(priv, EYTZ_PRIV_PARENT));
	st->route_opno = (Oid) intVal(list_nth(priv, EYTZ_PRIV_ROUTE_OPNO));
	st->npruned = intVal(list_nth(priv, EYTZ_PRIV_PRUNED));
	st->nouter = intVal(list_nth(priv, EYTZ_PRIV_NOUTER));
	st->expected_keys = floatVal(list_nth(priv, EYTZ_PRIV_EXPECTED_KEYS));
	st->nclauses = list_length(keyexprs);
	st->strategies = palloc(sizeof(StrategyNumber) * st->nclauses);
	st->argtypes = palloc(sizeof(Oid) * st->nclauses);
	st->keyexprs = palloc(sizeof(ExprState *) * st->nclauses);
	st->key_attnos = palloc0(sizeof(AttrNumber) * st->nclauses);
	for (i = 0; i < st->nclauses; i++)
	{
		Expr	   *expr = list_nth(keyexprs, i);

		st->strategies[i] = list_nth_int(strategies, i);
		st->argtypes[i] = list_nth_oid(argtypes, i);
		st->keyexprs[i] = ExecInitExpr(expr, ps);
		/* the outer columns lead the scan tuple: INDEX_VAR attno = outer attno */
		if (IsA(expr, Var) && ((Var *) expr)->varno == INDEX_VAR)
			st->key_attnos[i] = ((Var *) expr)->varattno;
	}
	st->ninner = list_length(linitial(leaf_attnos));
	st->nleaves = list_length(indexoids);
	st->leaves = palloc0(sizeof(EytzJoinLeaf) * st->nleaves);
	st->cur_leaf = -1;
	for (i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];
		int			j = 0;

		leaf->indexoid = list_nth_oid(indexoids, i);
		leaf->heapoid = list_nth_oid(list_nth(priv, EYTZ_PRIV_HEAPOIDS), i);
		leaf->keyattno = (AttrNumber) list_nth_int(list_nth(priv, EYTZ_PRIV_KEYATTNOS), i);
		leaf->inner_attnos = palloc(sizeof(AttrNumber) * Max(st->ninner, 1));
		leaf->inner_natts = leaf->keyattno;
		foreach(lc, (List *) list_nth(leaf_attnos, i))
		{
			leaf->inner_attnos[j] = lfirst_int(lc);
			leaf->inner_natts = Max(leaf->inner_natts, leaf->inner_attnos[j]);
			j++;
		}
	}
	eytz_join_prune_at_start(st, list_nth(priv, EYTZ_PRIV_START_PRUNE));
	init_index_only(st, list_nth(priv, EYTZ_PRIV_INDEX_COLUMNS));
	st->joinqual = ExecInitQual(list_nth(cscan->custom_exprs, EYTZ_EXPR_JOINQUAL), ps);
	st->otherqual = ExecInitQual(list_nth(cscan->custom_exprs, EYTZ_EXPR_OTHERQUAL), ps);
	st->innerqual = ExecInitQual(list_nth(cscan->custom_exprs, EYTZ_EXPR_INNERQUAL), ps);
	st->outer_per_match = reads_outer_columns(st, cscan);
	st->flags_per_match = st->jointype != JOIN_INNER || st->single_match;
	st->keep_rows = st->outer_per_match || st->flags_per_match;
	st->point_keys = true;
	for (i = 0; i < st->nclauses; i++)
	{
		st->point_keys &= st->strategies[i] == BTEqualStrategyNumber;
		st->key_exprs |= st->key_attnos[i] == 0;
		st->key_natts = Max(st->key_natts, st->key_attnos[i]);
	}

	st->outer_byval = palloc(sizeof(bool) * Max(st->nouter, 1));
	st->outer_len = palloc(sizeof(int16) * Max(st->nouter, 1));
	for (i = 0; i < st->nouter; i++)
	{
		Form_pg_attribute att = TupleDescAttr(scandesc, i);

		st->outer_byval[i] = att->attbyval;
		st->outer_len[i] = att->attlen;
	}

	node->custom_ps = list_make1(ExecInitNode(linitial(cscan->custom_plans),
											  estate, eflags));

	/* the relations are locked by the range table; the indexes like an index scan */
	for (i = 0; i < st->nleaves; i++)
	{
		st->leaves[i].heap = table_open(st->leaves[i].heapoid, AccessShareLock);
		st->leaves[i].index = index_open(st->leaves[i].indexoid, AccessShareLock);
	}
	eytz_join_leaf_footprints(st);
	/* the leaves' indexes have one key type (the planner checked) */
	st->kt = eytz_index_key_type(st->leaves[0].index);
	eytz_join_use_leaf(st, 0);
	st->plain_key = st->nclauses == 1 && st->point_keys && st->key_attnos[0] > 0 &&
		(st->argtypes[0] == InvalidOid || st->argtypes[0] == st->kt->typid);
	st->batchcxt = AllocSetContextCreate(estate->es_query_cxt,
										 "eytzgpu join batch",
										 ALLOCSET_DEFAULT_SIZES);
	st->innercxt = AllocSetContextCreate(estate->es_query_cxt,
										 "eytzgpu join inner tuple",
										 ALLOCSET_SMALL_SIZES);
	st->phase = PHASE_FILL;
	st->next_batch = Min(EYTZ_FIRST_BATCH, eytz_batch_size);
	st->slot_row = NO_ROW;
}

/*
 * A chunk's bytes per match: the match and its sort scratch, and for an
 * index-only plan its values as the lookup collects them (key, flag, the
 * included columns asked for), whether the index answers it, for the
 * heap a copy and its sort scratch, and the room of four heap blocks in
 * the visibility memo (vm_seen)
 */
static Size
chunk_match_bytes(EytzJoinState *st)
{
	Size		bytes = 2 * sizeof(EytzMatch);

	if (st->index_only)
		bytes += sizeof(uint64) + sizeof(bool) +
			pg_popcount32(st->include_mask) * (sizeof(Datum) + sizeof(bool)) +
			sizeof(bool) + 2 * sizeof(EytzMatch) + 4;
	return bytes;
}

/*
 * Pin the index's view, open the heap fetch and size batches and chunks,
 * once per scan: a quarter of work_mem for a chunk of matches, the rest for
 * the largest batch of outer rows.
 */
static void
eytz_join_start(EytzJoinState *st)
{
	EState	   *estate = st->css.ss.ps.state;
	Size		mem_limit = get_hash_memory_limit();
	Size		chunk_mem = mem_limit / EYTZ_CHUNK_SHARE;
	int			no = Max(st->nouter, 1);
	Size		row_stride = MAXALIGN(offsetof(BatchRow, values) + sizeof(Datum) * no +
									  FLAG_NULLS + sizeof(bool) * no);
	Size		per_row = row_stride + 2 * sizeof(uint64) + sizeof(uint32);
	MemoryContext cxt = estate->es_query_cxt;

	st->timing = st->css.ss.ps.instrument != NULL;
	st->fine_timing = st->timing && st->css.ss.ps.instrument->need_timer;
	if (st->fine_timing)
	{
		st->clock_read_ns = eytz_join_clock_read_cost();
		st->stage_start = st->css.ss.ps.instrument->starttime;
	}
	else if (st->timing)
		INSTR_TIME_SET_CURRENT(st->stage_start);
	st->stage = STAGE_LOOKUP;
	for (int l = 0; l < st->nleaves; l++)
	{
		EytzJoinLeaf *leaf = &st->leaves[l];

		/* a routed key goes to one leaf: each expects its share of them */
		leaf->lookup = eytz_lookup_begin(leaf->index,
										 OidIsValid(st->route_opno) ?
										 Max(st->expected_keys / st->nleaves, 1.0) :
										 st->expected_keys, leaf->other_pages, cxt);
		leaf->hf = eytz_heap_begin(leaf->heap, estate->es_snapshot, cxt);
		/*
		 * a whole row or a system column: through the heap slot; so are
		 * many columns, which one deform of the slot reads in one pass where
		 * a heap_getattr() each would walk the tuple from its start for
		 * every column past a NULL or a variable-width one
		 */
		leaf->inner_direct = eytz_heap_by_page(leaf->hf) &&
			st->ninner <= EYTZ_INNER_DIRECT_COLS;
		for (int i = 0; i < st->ninner; i++)
			leaf->inner_direct &= leaf->inner_attnos[i] > 0;
		/* the visibility map is the heap access method's */
		if (leaf->heap->rd_tableam != GetHeapamTableAmRoutine())
			st->index_only = false;
	}
	st->outer_scan = eytz_outer_begin(outer_ps(st), estate);
	st->serializable = IsolationIsSerializable();
	for (int l = 0; l < st->nleaves; l++)
	{
		if (st->index_only)
			eytz_lookup_want_columns(st->leaves[l].lookup, st->include_mask, true);
		/* a relation-level predicate lock: the scan reads through no index pages */
		PredicateLockRelation(st->leaves[l].heap, estate->es_snapshot);
	}

	st->row_bytes = per_row;
	st->row_stride = row_stride;
	st->rows_mem = mem_limit - chunk_mem;
	st->chunk_cap = (uint32) Min(Max(chunk_mem / chunk_match_bytes(st), EYTZ_MIN_CHUNK),
								 (Size) PG_INT32_MAX);
	/* the classification's memo: at most four bytes a match (chunk_match_bytes) */
	if (st->index_only)
	{
		BlockNumber most = 0;

		for (int l = 0; l < st->nleaves; l++)
		{
			EytzJoinLeaf *leaf = &st->leaves[l];

			leaf->vm_seen_blocks = (BlockNumber) Min((uint64) RelationGetNumberOfBlocks(leaf->heap),
													 (uint64) st->chunk_cap * 4);
			most = Max(most, leaf->vm_seen_blocks);
		}
		st->vm_seen = MemoryContextAllocHuge(cxt, Max(most, 1));
	}
	eytz_join_use_leaf(st, 0);
	/* routed keys are copied (eytz_join_route_batch): their bytes count too */
	if (OidIsValid(st->route_opno) && st->nleaves > 1)
		per_row += sizeof(uint64) + sizeof(uint32);
	st->cap = (uint32) Max(1, Min((Size) eytz_batch_size, st->rows_mem / per_row));
	st->next_chunk = Min(EYTZ_FIRST_CHUNK, st->chunk_cap);
	/*
	 * The pipeline takes a second set of batch arrays; never smaller
	 * batches for it: a batch's fewer matches would visit more heap blocks
	 * than the overlap saves
	 */
	st->overlap = eytz_lookup_overlap != EYTZ_OVERLAP_OFF &&
		(Size) st->cap * per_row * 2 <= st->rows_mem;
	eytz_join_alloc_batch_arrays(st);
	st->started = true;
}

/*
 * Submit every leaf's share of the batch (the inner table's whole batch)
 * and start each one's first chunk, so that the GPU (or the GPU service)
 * works on it while the caller reads its next batch, and leaves whose
 * copies lie on different GPUs are looked up at the same time; the caller
 * then works through the leaves in turn.  A leaf whose view answers on the
 * CPU starts nothing: the leaves from it on are submitted in turn, as they
 * are searched.  true when any started.
 */
static bool
start_leaves(EytzJoinState *st, bool cpu_too)
{
	bool		any = false;

	for (int l = 0; l < st->nleaves; l++)
	{
		EytzJoinLeaf *leaf = &st->leaves[l];

		uint32		max;

		if (leaf->nq == 0)
			continue;
		max = eytz_join_chunk_max(st, leaf);
		eytz_join_submit_leaf(leaf);
		if (!eytz_lookup_start(leaf->lookup, max, cpu_too))
			break;
		leaf->first_max = max;
		any = true;
	}
	return any;
}

/*
 * Submit the current batch's key ranges.  true when the lookup works on its
 * first chunk while the caller reads the next batch (the pipeline): not for
 * the scan's first batch, which is small so that a LIMIT above reads few
 * outer rows (reading the next, 16 times larger, batch ahead would undo
 * that; its lookup is too short to hide anything anyway).
 */
static bool
start_batch(EytzJoinState *st)
{
	bool		started = false;

	st->nchunk = 0;
	st->pos = 0;
	st->slot_row = NO_ROW;
	st->unmatched_pos = 0;
	st->cur_leaf = st->nleaves;	/* no leaf to search */
	st->batch_done = true;
	if (st->nq == 0)
		return false;
	st->cur_leaf = -1;
	stage_enter(st, STAGE_LOOKUP);
	eytz_join_update_match_ratio(st);
	eytz_join_route_batch(st);
	for (int l = 0; l < st->nleaves; l++)
	{
		st->leaves[l].submitted = false;
		st->leaves[l].first_max = 0;
	}
	if (st->overlap && st->scan_reads > 1)
		started = start_leaves(st, eytz_lookup_overlap == EYTZ_OVERLAP_ALWAYS);
	if (!eytz_join_next_leaf(st))
		return false;
	return started;
}


/* The inner part of the scan slot: NULLs, for the unmatched rows */
static void
set_inner_nulls(EytzJoinState *st)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	int			i;

	for (i = 0; i < st->ninner; i++)
	{
		scan->tts_values[st->nouter + i] = (Datum) 0;
		scan->tts_isnull[st->nouter + i] = true;
	}
	st->cur_tid = PG_UINT64_MAX;
}

/* The next unmatched row of the batch, null-extended, or NULL */
static TupleTableSlot *
next_unmatched(EytzJoinState *st)
{
	while (st->unmatched_pos < st->nrows)
	{
		uint32		row = st->unmatched_pos++;

		if (row_flags(st, batch_row(st, row))[FLAG_MATCHED])
			continue;
		store_outer(st, row);
		if (!other_quals_pass(st))
			continue;
		return project(st);
	}
	return NULL;
}

static TupleTableSlot *
eytz_join_exec(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	TupleTableSlot *res = NULL;

	/* the node's time starts where its instrumentation started it */
	if (st->fine_timing)
	{
		st->stage_start = node->ss.ps.instrument->starttime;
		st->stage = STAGE_OWN;
	}
	if (!st->started)
		eytz_join_start(st);

	while (res == NULL)
	{
		MemoryContext tuplecxt = node->ss.ps.ps_ExprContext->ecxt_per_tuple_memory;

		/* a call per match: none where the last left nothing to free */
		if (!tuplecxt->isReset || tuplecxt->firstchild != NULL)
			MemoryContextReset(tuplecxt);
		switch (st->phase)
		{
			case PHASE_FILL:
				CHECK_FOR_INTERRUPTS();
				if (!st->heap_order_decided)
					eytz_heap_order_decide(st);
				if (st->ahead_ready)
				{
					/* read while the lookup answered the last batch */
					eytz_join_swap_batches(st);
					st->ahead_ready = false;
				}
				else if (st->outer_done)
				{
					/* heap order: now the sorted matches */
					st->phase = PHASE_DONE;
					if (st->heap_order)
						st->phase = eytz_heap_order_next_window(st) ?
							PHASE_SORTED : PHASE_SORTED_UNMATCHED;
					set_inner_nulls(st);
					break;
				}
				else
				{
					stage_enter(st, STAGE_FILL);
					eytz_join_read_batch(st, st->rows_mem);
				}
				if (start_batch(st) && !st->outer_done)
					eytz_join_read_ahead(st);
				st->phase = PHASE_MATCHES;
				break;

			case PHASE_MATCHES:
				res = eytz_join_next_match(st);
				if (res == NULL)
				{
					stage_enter(st, STAGE_FETCH);
					eytz_heap_reset(st->hf);
					st->phase = PHASE_FILL;
					if (st->heap_order)
						eytz_heap_order_batch_end(st);
					if (st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI)
					{
						set_inner_nulls(st);
						st->phase = PHASE_UNMATCHED;
					}
				}
				break;

			case PHASE_UNMATCHED:
				res = next_unmatched(st);
				if (res == NULL)
					st->phase = PHASE_FILL;
				break;

			case PHASE_SORTED:
				res = eytz_join_next_match(st);
				if (res == NULL && !eytz_heap_order_next_window(st))
				{
					set_inner_nulls(st);
					st->phase = PHASE_SORTED_UNMATCHED;
				}
				break;

			case PHASE_SORTED_UNMATCHED:
				while (res == NULL && eytz_heap_order_next_unmatched(st))
					if (other_quals_pass(st))
						res = project(st);
				if (res == NULL)
					st->phase = PHASE_DONE;
				break;

			case PHASE_DONE:
				res = ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
				break;
		}
	}
	/* the clock stops until the next call */
	if (st->fine_timing)
		stage_charge(st);
	return res;
}

static void
eytz_join_end(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	int			i;

	if (st->outer_scan)
		eytz_outer_end(st->outer_scan);
	eytz_heap_order_reset(st);
	ExecEndNode(outer_ps(st));
	for (i = 0; i < EYTZ_VM_BUFS; i++)
	{
		if (BufferIsValid(st->vmbufs[i]))
			ReleaseBuffer(st->vmbufs[i]);
		st->vmbufs[i] = InvalidBuffer;
	}
	for (i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];

		if (leaf->hf)
			eytz_heap_end(leaf->hf);
		if (leaf->lookup)
			eytz_lookup_end(leaf->lookup);
		if (leaf->index)
			index_close(leaf->index, AccessShareLock);
		if (leaf->heap)
			table_close(leaf->heap, AccessShareLock);
	}
}

static void
eytz_join_rescan(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	PlanState  *outer = outer_ps(st);

	/* custom children do not get the changed parameters from ExecReScan */
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(outer, node->ss.ps.chgParam);
	if (outer->chgParam == NULL)
		ExecReScan(outer);
	if (st->outer_scan)
		eytz_outer_rescan(st->outer_scan);
	if (st->hf)
		eytz_heap_reset(st->hf);
	ExecClearTuple(node->ss.ss_ScanTupleSlot);
	st->slot_row = NO_ROW;
	st->cur_tid = PG_UINT64_MAX;
	/* the next batch's submit drops the unread matches of this one */
	MemoryContextReset(st->batchcxt);
	if (st->ahead_ready)
		MemoryContextReset(st->other.cxt);
	st->ahead_ready = false;
	eytz_heap_order_reset(st);
	st->scan_reads = 0;
	st->nrows = 0;
	st->nchunk = 0;
	st->pos = 0;
	st->index_pass = false;
	st->batch_done = true;
	st->cur_leaf = st->nleaves;
	st->phase = PHASE_FILL;
	st->outer_done = false;
	st->next_batch = Min(EYTZ_FIRST_BATCH, eytz_batch_size);
	st->next_chunk = Min(EYTZ_FIRST_CHUNK, st->chunk_cap);
}
