/*
 * eytzjoinexec.c
 *		Executor of the batched index-nested-loop join ("EytzGPU Join").
 *
 * Each batch: read up to the batch size of outer rows (values copied into
 * the batch's memory), evaluate their key expressions into key ranges (a
 * NULL or empty range never matches), look the whole batch up at once in
 * the index's GPU copy or CPU image plus the pending list read at the start
 * of the scan, sort the (TID, outer row) matches by TID and fetch each inner
 * tuple once, in block order, with table_index_fetch_tuple() under the
 * query's snapshot.  The key is rechecked on the fetched tuple (the TIDs come
 * from an unpinned copy and may have been vacuumed and reused), then the
 * inner quals, join quals and other quals are applied as a nested loop
 * would; LEFT and ANTI emit the unmatched rows of a batch after its
 * matches, SEMI and ANTI (and unique inner sides) stop at the first match.
 *
 * The first batch is small and batches grow geometrically to the batch
 * size: a CustomScan never learns a LIMIT above it.
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeHash.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/predicate.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzjoin.h"

#define EYTZ_FIRST_BATCH 1024

typedef enum JoinPhase
{
	PHASE_FILL,
	PHASE_MATCHES,
	PHASE_UNMATCHED,
	PHASE_DONE
} JoinPhase;

typedef struct EytzJoinState
{
	CustomScanState css;

	/* from the plan */
	Oid			indexoid;
	Oid			heapoid;
	JoinType	jointype;
	bool		single_match;
	AttrNumber	keyattno;
	int			nouter;
	int			ninner;
	int			nclauses;
	StrategyNumber *strategies;
	Oid		   *argtypes;
	AttrNumber *inner_attnos;
	ExprState **keyexprs;
	ExprState  *joinqual;
	ExprState  *otherqual;
	ExprState  *innerqual;
	bool	   *outer_byval;
	int16	   *outer_len;

	/* opened at the first batch */
	Relation	index;
	Relation	heap;
	const EytzKeyType *kt;
	EytzMetaPageData meta;
	bool		started;
	bool		use_gpu;
	bool		gpu_failed;
	EytzImage  *image;
	EytzGpuEntry *gpu;
	EytzPendingEntry *pending;
	uint64		npending;
	IndexFetchTableData *fetch;
	TupleTableSlot *heapslot;

	/* the current batch */
	MemoryContext batchcxt;
	JoinPhase	phase;
	bool		outer_done;
	uint32		next_batch;
	uint32		nrows;
	Datum	   *ovalues;
	bool	   *onulls;
	uint64	   *rlo;			/* per row key range; rlo > rhi: no query */
	uint64	   *rhi;
	uint64	   *qlo;
	uint64	   *qhi;
	uint32	   *qrow;
	uint32		nq;
	bool	   *matched;
	EytzMatchBuf matches;
	uint64		cur;
	uint64		cur_tid;
	bool		cur_found;
	uint64		cur_key;
	uint32		unmatched_pos;

	/* EXPLAIN ANALYZE */
	uint64		nbatches;
	uint64		nlookups;
	uint64		nmatches;
	uint64		nfetches;
	uint64		gpu_batches;
	double		lookup_ms;
	double		kernel_ms;
	double		fetch_ms;
	char	   *fallback_why;
	MemoryContextCallback unpin_cb;
} EytzJoinState;

static bool absent_noticed = false;

static void eytz_join_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *eytz_join_exec(CustomScanState *node);
static void eytz_join_end(CustomScanState *node);
static void eytz_join_rescan(CustomScanState *node);
static void eytz_join_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods eytz_exec_methods = {
	.CustomName = "EytzGPU Join",
	.BeginCustomScan = eytz_join_begin,
	.ExecCustomScan = eytz_join_exec,
	.EndCustomScan = eytz_join_end,
	.ReScanCustomScan = eytz_join_rescan,
	.ExplainCustomScan = eytz_join_explain,
};

void
eytz_join_register_exec(void)
{
	/* nothing to register: exec methods are reached through the plan */
}

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

static void
eytz_join_begin(CustomScanState *node, EState *estate, int eflags)
{
	EytzJoinState *st = (EytzJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *oids = linitial(cscan->custom_private);
	List	   *ints = lsecond(cscan->custom_private);
	List	   *ops = lthird(cscan->custom_private);
	List	   *inner_attnos = lfourth(cscan->custom_private);
	List	   *keyexprs = linitial(cscan->custom_exprs);
	PlanState  *ps = &node->ss.ps;
	TupleDesc	scandesc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	ListCell   *lc;
	int			i;

	st->indexoid = linitial_oid(oids);
	st->heapoid = lsecond_oid(oids);
	st->jointype = (JoinType) linitial_int(ints);
	st->single_match = lsecond_int(ints) != 0;
	st->keyattno = (AttrNumber) lthird_int(ints);
	st->nouter = lfourth_int(ints);
	st->nclauses = list_length(keyexprs);
	st->strategies = palloc(sizeof(StrategyNumber) * st->nclauses);
	st->argtypes = palloc(sizeof(Oid) * st->nclauses);
	st->keyexprs = palloc(sizeof(ExprState *) * st->nclauses);
	i = 0;
	foreach(lc, keyexprs)
	{
		st->strategies[i] = list_nth_int(linitial(ops), i);
		st->argtypes[i] = list_nth_oid(lsecond(ops), i);
		st->keyexprs[i] = ExecInitExpr(lfirst(lc), ps);
		i++;
	}
	st->ninner = list_length(inner_attnos);
	st->inner_attnos = palloc(sizeof(AttrNumber) * Max(st->ninner, 1));
	i = 0;
	foreach(lc, inner_attnos)
		st->inner_attnos[i++] = lfirst_int(lc);
	st->joinqual = ExecInitQual(lsecond(cscan->custom_exprs), ps);
	st->otherqual = ExecInitQual(lthird(cscan->custom_exprs), ps);
	st->innerqual = ExecInitQual(lfourth(cscan->custom_exprs), ps);

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

	/* the relations are locked by the range table; the index like an index scan */
	st->heap = table_open(st->heapoid, AccessShareLock);
	st->index = index_open(st->indexoid, AccessShareLock);
	st->kt = eytz_index_key_type(st->index);
	st->batchcxt = AllocSetContextCreate(estate->es_query_cxt,
										 "eytzgpu join batch",
										 ALLOCSET_DEFAULT_SIZES);
	st->phase = PHASE_FILL;
	st->next_batch = Min(EYTZ_FIRST_BATCH, eytz_batch_size);
	st->use_gpu = eytz_device_mode != EYTZ_DEVICE_CPU;
}

static void
eytz_unpin(EytzJoinState *st)
{
	if (st->gpu)
		eytz_device_release(st->gpu);
	if (st->image)
		eytz_image_release(st->image);
	st->gpu = NULL;
	st->image = NULL;
}

static void
eytz_unpin_cb(void *arg)
{
	eytz_unpin((EytzJoinState *) arg);
}

/* Pins (image or GPU copy, pending list) under one generation of the index */
static void
eytz_join_start(EytzJoinState *st)
{
	MemoryContext old = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);
	int			attempt;

	for (attempt = 0;; attempt++)
	{
		EytzMetaPageData after;
		bool		ok = true;

		eytz_read_meta(st->index, &st->meta);
		if (st->use_gpu && !st->gpu_failed)
		{
			char	   *why = NULL;

			st->gpu = eytz_device_acquire(st->index, &st->meta, &why);
			if (st->gpu == NULL && why != NULL)
			{
				bool		present = eytz_device_available(NULL);

				st->gpu_failed = true;
				st->fallback_why = why;
				/* a missing GPU under 'auto' is said once per backend */
				ereport(eytz_device_mode == EYTZ_DEVICE_GPU || present ||
						!absent_noticed ? NOTICE : DEBUG1,
						(errmsg("eytzgpu join on index \"%s\" runs on the CPU: %s",
								RelationGetRelationName(st->index), why)));
				if (!present)
					absent_noticed = true;
			}
			ok = st->gpu != NULL;
		}
		if (!st->use_gpu || st->gpu_failed)
		{
			st->image = eytz_image_acquire(st->index, &st->meta);
			ok = st->image != NULL;
		}
		if (ok)
			ok = eytz_read_pending(st->index, &st->meta, &st->pending, &st->npending,
								   NULL, NULL);
		eytz_read_meta(st->index, &after);
		if (ok && after.generation == st->meta.generation)
			break;
		eytz_unpin(st);
		if (attempt > 1000)
			elog(ERROR, "eytzgpu index \"%s\" keeps changing under the join",
				 RelationGetRelationName(st->index));
		CHECK_FOR_INTERRUPTS();
	}
	if (!st->use_gpu)
		ereport(DEBUG1,
				(errmsg("eytzgpu join on index \"%s\" runs on the CPU (eytzgpu.device = cpu)",
						RelationGetRelationName(st->index))));
	eytz_sort_pending(st->pending, st->npending);
	/* unpin also when the query fails */
	st->unpin_cb.func = eytz_unpin_cb;
	st->unpin_cb.arg = st;
	MemoryContextRegisterResetCallback(st->css.ss.ps.state->es_query_cxt, &st->unpin_cb);

	st->fetch = table_index_fetch_begin(st->heap);
	st->heapslot = table_slot_create(st->heap, NULL);
	/* a relation-level predicate lock: the scan reads through no index pages */
	PredicateLockRelation(st->heap, st->css.ss.ps.state->es_snapshot);
	st->started = true;
	MemoryContextSwitchTo(old);
}


/* Key range of one outer row from its key expressions; false: no match */
static bool
row_range(EytzJoinState *st, ExprContext *econtext, uint64 *lo, uint64 *hi)
{
	int			i;

	*lo = st->kt->dom_min;
	*hi = st->kt->dom_max;
	for (i = 0; i < st->nclauses; i++)
	{
		bool		isnull;
		Datum		v = ExecEvalExprSwitchContext(st->keyexprs[i], econtext, &isnull);
		EytzRange	r;

		/* btree operators are strict: NULL never matches */
		if (isnull)
			return false;
		if (!scalar_range(st->index, st->kt, st->strategies[i], st->argtypes[i], v, &r))
			return false;
		*lo = Max(*lo, r.lo);
		*hi = Min(*hi, r.hi);
		if (*lo > *hi)
			return false;
	}
	return true;
}

/* Read the next batch of outer rows and look them up */
static void
fill_batch(EytzJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	PlanState  *outer = outer_ps(st);
	MemoryContext old;
	int			no = st->nouter;
	Size		mem_limit = get_hash_memory_limit();
	Size		per_row = (sizeof(Datum) + sizeof(bool)) * Max(no, 1) + 45;
	uint32		cap = (uint32) Max(1, Min((Size) st->next_batch, mem_limit / per_row));
	Size		used = per_row * cap;
	instr_time	t0,
				t1;

	MemoryContextReset(st->batchcxt);
	old = MemoryContextSwitchTo(st->batchcxt);
	st->ovalues = MemoryContextAllocHuge(st->batchcxt, sizeof(Datum) * Max(no, 1) * cap);
	st->onulls = MemoryContextAllocHuge(st->batchcxt, sizeof(bool) * Max(no, 1) * cap);
	st->rlo = MemoryContextAllocHuge(st->batchcxt, sizeof(uint64) * cap);
	st->rhi = MemoryContextAllocHuge(st->batchcxt, sizeof(uint64) * cap);
	st->qlo = MemoryContextAllocHuge(st->batchcxt, sizeof(uint64) * cap);
	st->qhi = MemoryContextAllocHuge(st->batchcxt, sizeof(uint64) * cap);
	st->qrow = MemoryContextAllocHuge(st->batchcxt, sizeof(uint32) * cap);
	st->matched = MemoryContextAllocHuge(st->batchcxt, sizeof(bool) * cap);
	st->nrows = 0;
	st->nq = 0;
	memset(&st->matches, 0, sizeof(st->matches));

	while (st->nrows < cap && (st->nrows == 0 || used < mem_limit))
	{
		TupleTableSlot *slot;
		uint32		row = st->nrows;
		Datum	   *vals;
		bool	   *nulls;
		int			i;

		/* the outer plan allocates its own state: not in the batch context */
		MemoryContextSwitchTo(old);
		slot = ExecProcNode(outer);
		MemoryContextSwitchTo(st->batchcxt);

		if (TupIsNull(slot))
		{
			st->outer_done = true;
			break;
		}
		slot_getallattrs(slot);
		vals = &st->ovalues[(Size) row * no];
		nulls = &st->onulls[(Size) row * no];
		for (i = 0; i < no; i++)
		{
			nulls[i] = slot->tts_isnull[i];
			if (nulls[i] || st->outer_byval[i])
				vals[i] = slot->tts_values[i];
			else
			{
				vals[i] = datumCopy(slot->tts_values[i], false, st->outer_len[i]);
				used += datumGetSize(vals[i], false, st->outer_len[i]) + 16;
			}
		}
		econtext->ecxt_scantuple = slot;
		if (row_range(st, econtext, &st->rlo[row], &st->rhi[row]))
		{
			st->qlo[st->nq] = st->rlo[row];
			st->qhi[st->nq] = st->rhi[row];
			st->qrow[st->nq] = row;
			st->nq++;
		}
		else
		{
			st->rlo[row] = 1;
			st->rhi[row] = 0;
		}
		ResetExprContext(econtext);
		st->matched[row] = false;
		st->nrows++;
	}
	/* grow geometrically up to the batch size */
	st->next_batch = (uint32) Min((uint64) cap * 4, (uint64) eytz_batch_size);

	if (st->nrows > 0)
		st->nbatches++;
	if (st->nq > 0)
	{
		bool		done = false;

		INSTR_TIME_SET_CURRENT(t0);
		if (st->gpu != NULL)
		{
			double		kms = 0;
			char	   *why = NULL;

			if (eytz_device_lookup(st->gpu, st->qlo, st->qhi, st->qrow, st->nq,
								   &st->matches, &kms, &why))
			{
				done = true;
				st->gpu_batches++;
				st->kernel_ms += kms;
			}
			else
			{
				/* fall back for the rest of the scan, on the same generation */
				MemoryContext qc = MemoryContextSwitchTo(st->css.ss.ps.state->es_query_cxt);

				ereport(NOTICE,
						(errmsg("eytzgpu join on index \"%s\" continues on the CPU: %s",
								RelationGetRelationName(st->index), why)));
				st->fallback_why = pstrdup(why);
				st->gpu_failed = true;
				while (st->image == NULL)
				{
					EytzMetaPageData meta = st->meta;

					/* the same generation as the pending list, or an error */
					st->image = eytz_image_acquire(st->index, &meta);
					if (st->image == NULL)
						ereport(ERROR,
								(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
								 errmsg("eytzgpu index \"%s\" changed while its GPU copy failed",
										RelationGetRelationName(st->index))));
				}
				MemoryContextSwitchTo(qc);
				st->matches.n = 0;
			}
		}
		if (!done)
			eytz_batch_search(&st->image->img, st->qlo, st->qhi, st->qrow, st->nq,
							  &st->matches);
		eytz_batch_search_pending(st->pending, st->npending, st->qlo, st->qhi,
								  st->qrow, st->nq, &st->matches);
		/* a stale image can repeat a pending entry's TID: make twins adjacent */
		eytz_sort_matches(&st->matches, st->npending > 0);
		INSTR_TIME_SET_CURRENT(t1);
		INSTR_TIME_SUBTRACT(t1, t0);
		st->lookup_ms += INSTR_TIME_GET_MILLISEC(t1);
		st->nlookups += st->nq;
		st->nmatches += st->matches.n;
		pgstat_count_index_scan(st->index);
	}
	MemoryContextSwitchTo(old);

	st->cur = 0;
	st->cur_tid = PG_UINT64_MAX;
	st->cur_found = false;
	st->unmatched_pos = 0;
}

/* Put batch row's outer values (and inner values or NULLs) into the scan slot */
static TupleTableSlot *
store_row(EytzJoinState *st, uint32 row, bool inner_nulls)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	int			no = st->nouter;
	int			i;

	ExecClearTuple(scan);
	memcpy(scan->tts_values, &st->ovalues[(Size) row * no], sizeof(Datum) * no);
	memcpy(scan->tts_isnull, &st->onulls[(Size) row * no], sizeof(bool) * no);
	if (inner_nulls)
		for (i = 0; i < st->ninner; i++)
		{
			scan->tts_values[no + i] = (Datum) 0;
			scan->tts_isnull[no + i] = true;
		}
	return ExecStoreVirtualTuple(scan);
}

/*
 * Fetch the inner tuple at TID t into the inner part of the scan slot;
 * false if it is not visible or fails the inner table's quals.
 */
static bool
fetch_inner(EytzJoinState *st, uint64 t)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	ItemPointerData tid;
	bool		call_again = false;
	bool		all_dead = false;
	bool		found;
	bool		isnull;
	Datum		key;
	int			no = st->nouter;
	int			i;

	eytz_tid_unpack(t, &tid);
	st->nfetches++;
	found = table_index_fetch_tuple(st->fetch, &tid, st->css.ss.ps.state->es_snapshot,
									st->heapslot, &call_again, &all_dead);
	if (!found)
		return false;
	key = slot_getattr(st->heapslot, st->keyattno, &isnull);
	if (isnull)
		return false;
	st->cur_key = st->kt->encode(key);
	ExecClearTuple(scan);
	slot_getallattrs(st->heapslot);
	for (i = 0; i < st->ninner; i++)
	{
		AttrNumber	a = st->inner_attnos[i];

		scan->tts_values[no + i] = st->heapslot->tts_values[a - 1];
		scan->tts_isnull[no + i] = st->heapslot->tts_isnull[a - 1];
	}
	if (st->innerqual)
	{
		for (i = 0; i < no; i++)
			scan->tts_isnull[i] = true;
		ExecStoreVirtualTuple(scan);
		econtext->ecxt_scantuple = scan;
		if (!ExecQual(st->innerqual, econtext))
		{
			ResetExprContext(econtext);
			return false;
		}
		ResetExprContext(econtext);
	}
	return true;
}

static TupleTableSlot *
project(EytzJoinState *st)
{
	ProjectionInfo *proj = st->css.ss.ps.ps_ProjInfo;

	if (proj == NULL)
		return st->css.ss.ss_ScanTupleSlot;
	return ExecProject(proj);
}

/* The pushed-down quals on a joined (or null-extended) row */
static bool
other_quals_pass(EytzJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	if (st->otherqual && !ExecQual(st->otherqual, econtext))
	{
		InstrCountFiltered2(&st->css, 1);
		ResetExprContext(econtext);
		return false;
	}
	return true;
}

static TupleTableSlot *
eytz_join_exec(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	bool		timing = node->ss.ps.instrument && node->ss.ps.instrument->need_timer;

	if (!st->started)
		eytz_join_start(st);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		switch (st->phase)
		{
			case PHASE_FILL:
				if (st->outer_done)
				{
					st->phase = PHASE_DONE;
					break;
				}
				fill_batch(st);
				st->phase = PHASE_MATCHES;
				break;

			case PHASE_MATCHES:
				while (st->cur < st->matches.n)
				{
					EytzMatch  *m = &st->matches.m[st->cur++];
					uint32		row = m->row;

					if (m->tid != st->cur_tid)
					{
						instr_time	t0,
									t1;

						if (timing)
							INSTR_TIME_SET_CURRENT(t0);
						st->cur_tid = m->tid;
						st->cur_found = fetch_inner(st, m->tid);
						if (timing)
						{
							INSTR_TIME_SET_CURRENT(t1);
							INSTR_TIME_SUBTRACT(t1, t0);
							st->fetch_ms += INSTR_TIME_GET_MILLISEC(t1);
						}
					}
					else if (st->cur > 1 && st->matches.m[st->cur - 2].row == row)
						continue;	/* the same entry twice (stale image) */
					if (!st->cur_found)
						continue;
					if (st->single_match && st->matched[row])
						continue;
					/* recheck: the heap tuple's key must be in the row's range */
					if (st->cur_key < st->rlo[row] || st->cur_key > st->rhi[row])
						continue;
					econtext->ecxt_scantuple = store_row(st, row, false);
					if (st->joinqual && !ExecQual(st->joinqual, econtext))
					{
						InstrCountFiltered1(node, 1);
						ResetExprContext(econtext);
						continue;
					}
					st->matched[row] = true;
					if (st->jointype == JOIN_ANTI)
						continue;
					if (!other_quals_pass(st))
						continue;
					return project(st);
				}
				table_index_fetch_reset(st->fetch);
				ExecClearTuple(st->heapslot);
				st->phase = (st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI) ?
					PHASE_UNMATCHED : PHASE_FILL;
				break;

			case PHASE_UNMATCHED:
				while (st->unmatched_pos < st->nrows)
				{
					uint32		row = st->unmatched_pos++;

					if (st->matched[row])
						continue;
					econtext->ecxt_scantuple = store_row(st, row, true);
					if (!other_quals_pass(st))
						continue;
					return project(st);
				}
				st->phase = PHASE_FILL;
				break;

			case PHASE_DONE:
				return ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
		}
	}
}

static void
eytz_join_end(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;

	ExecEndNode(outer_ps(st));
	if (st->fetch)
		table_index_fetch_end(st->fetch);
	if (st->heapslot)
		ExecDropSingleTupleTableSlot(st->heapslot);
	/* the image and GPU copy are unpinned when the query's memory goes */
	if (st->index)
		index_close(st->index, AccessShareLock);
	if (st->heap)
		table_close(st->heap, AccessShareLock);
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
	if (st->fetch)
		table_index_fetch_reset(st->fetch);
	if (st->heapslot)
		ExecClearTuple(st->heapslot);
	MemoryContextReset(st->batchcxt);
	memset(&st->matches, 0, sizeof(st->matches));
	st->nrows = 0;
	st->cur = 0;
	st->phase = PHASE_FILL;
	st->outer_done = false;
	st->next_batch = Min(EYTZ_FIRST_BATCH, eytz_batch_size);
}

static const char *
join_type_name(JoinType jt)
{
	switch (jt)
	{
		case JOIN_INNER:
			return "Inner";
		case JOIN_LEFT:
			return "Left";
		case JOIN_SEMI:
			return "Semi";
		case JOIN_ANTI:
			return "Anti";
		default:
			return "?";
	}
}

static void
eytz_join_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	EytzJoinState *st = (EytzJoinState *) node;
	EytzMetaPageData meta;
	char		buf[64];
	const char *device;

	eytz_read_meta(st->index, &meta);
	ExplainPropertyText("Join Type", join_type_name(st->jointype), es);
	ExplainPropertyText("Index", RelationGetRelationName(st->index), es);
	if (st->started)
		device = st->gpu_batches > 0 ? "gpu" : "cpu";
	else
		device = (eytz_device_mode != EYTZ_DEVICE_CPU && eytz_device_available(NULL)) ?
			"gpu" : "cpu";
	ExplainPropertyText("Device", device, es);
	if (meta.layout == EYTZ_LAYOUT_EKS)
		snprintf(buf, sizeof(buf), "eks (fanout %u)", meta.fanout);
	else
		snprintf(buf, sizeof(buf), "ebs");
	ExplainPropertyText("Layout", buf, es);
	if (es->analyze && st->started)
	{
		ExplainPropertyUInteger("Batches", NULL, st->nbatches, es);
		ExplainPropertyUInteger("Lookups", NULL, st->nlookups, es);
		ExplainPropertyUInteger("Matches", NULL, st->nmatches, es);
		ExplainPropertyUInteger("Heap Fetches", NULL, st->nfetches, es);
		if (es->timing)
		{
			ExplainPropertyFloat("Lookup Time", "ms", st->lookup_ms, 3, es);
			if (st->gpu_batches > 0)
				ExplainPropertyFloat("GPU Kernel Time", "ms", st->kernel_ms, 3, es);
			ExplainPropertyFloat("Heap Fetch Time", "ms", st->fetch_ms, 3, es);
		}
		if (st->fallback_why && es->verbose)
			ExplainPropertyText("CPU Fallback", st->fallback_why, es);
	}
}
