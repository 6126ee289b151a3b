/*
 * eytzfdwjoinexec.c
 *		The executor of the batched join over a foreign inner side
 *		("EytzGPU Foreign Join", planned by eytzfdwjoin.c): reads the outer
 *		side in batches, groups each batch's rows by distinct key (a hash), sets
 *		each leaf's array parameter so that its ForeignScan sends one remote
 *		query per batch, matches the rows that come back with the batch
 *		through a hash of its keys, and tells EXPLAIN ANALYZE what each
 *		leaf (shard) did.
 *
 *		The hash's table and the batch's rows are larger than the CPU's
 *		caches: the returned rows are read a few ahead into a ring, so that
 *		their table slots and batch rows are fetched from memory at once
 *		rather than one miss after another.  The batches are
 *		eytzfdwjoinbatch.c's.
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "catalog/pg_class.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"
#include "portability/instr_time.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "eytzcompat.h"
#include "eytzfdwjoin.h"
#include "eytzfdwjoinexec.h"
#include "eytzpartroute.h"

static bool key_image_equal(TypeCacheEntry *tc, Oid collation);
static void fdwjoin_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *fdwjoin_exec(CustomScanState *node);
static void fdwjoin_end(CustomScanState *node);
static void fdwjoin_rescan(CustomScanState *node);
static void fdwjoin_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods fdwjoin_exec_methods = {
	.CustomName = "EytzGPU Foreign Join",
	.BeginCustomScan = fdwjoin_begin,
	.ExecCustomScan = fdwjoin_exec,
	.EndCustomScan = fdwjoin_end,
	.ReScanCustomScan = fdwjoin_rescan,
	.ExplainCustomScan = fdwjoin_explain,
};

/*
 * The memory a batch row takes: its record, and its share of the arrays its
 * key goes through (the planner sizes batches with it too)
 */
Size
eytz_fdwjoin_row_bytes(int nouter, int16 keylen)
{
	return MAXALIGN(offsetof(FdwBatchRow, isnull) + nouter) + sizeof(Datum) * nouter +
		FDW_ROW_EXTRA(keylen > 0 ? keylen : sizeof(Datum));
}

Node *
eytz_fdwjoin_create_scan_state(CustomScan *cscan)
{
	FdwJoinState *st = (FdwJoinState *) newNode(sizeof(FdwJoinState), T_CustomScanState);

	st->css.methods = &fdwjoin_exec_methods;
	return (Node *) st;
}

static void
fdwjoin_begin(CustomScanState *node, EState *estate, int eflags)
{
	FdwJoinState *st = (FdwJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *paramids = list_nth(priv, FJ_PRIV_PARAMIDS);
	List	   *leaf_oids = list_nth(priv, FJ_PRIV_LEAF_OIDS);
	Oid			parent_oid = (Oid) intVal(list_nth(priv, FJ_PRIV_PARENT_OID));
	TypeCacheEntry *tc;
	PlanState **leaf_ps;
	int			i;

	st->jointype = (JoinType) intVal(list_nth(priv, FJ_PRIV_JOINTYPE));
	st->nouter = intVal(list_nth(priv, FJ_PRIV_NOUTER));
	st->key_col = intVal(list_nth(priv, FJ_PRIV_KEY_COL));
	st->keytype = (Oid) intVal(list_nth(priv, FJ_PRIV_KEYTYPE));
	st->collation = (Oid) intVal(list_nth(priv, FJ_PRIV_COLLATION));
	st->batch_size = intVal(list_nth(priv, FJ_PRIV_BATCH_SIZE));
	st->outer_ps = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	st->inner_ps = ExecInitNode(lsecond(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make2(st->outer_ps, st->inner_ps);
	st->ninner = list_length(lsecond_node(Plan, cscan->custom_plans)->targetlist);

	st->outer_key = ExecInitExpr(list_nth(cscan->custom_exprs, FJ_EXPR_OUTER_KEY),
								 &node->ss.ps);
	st->joinqual = ExecInitQual(list_nth(cscan->custom_exprs, FJ_EXPR_JOINQUAL),
								&node->ss.ps);
	st->otherqual = ExecInitQual(list_nth(cscan->custom_exprs, FJ_EXPR_OTHERQUAL),
								 &node->ss.ps);

	tc = lookup_type_cache(st->keytype, TYPECACHE_LT_OPR | TYPECACHE_HASH_PROC_FINFO |
						   TYPECACHE_BTREE_OPFAMILY);
	st->sortsup.ssup_cxt = CurrentMemoryContext;
	st->sortsup.ssup_collation = st->collation;
	PrepareSortSupportFromOrderingOp(tc->lt_opr, &st->sortsup);
	fmgr_info_copy(&st->hash_finfo, &tc->hash_proc_finfo, CurrentMemoryContext);
	get_typlenbyvalalign(st->keytype, &st->typlen, &st->typbyval, &st->typalign);
	st->image_equal = st->typbyval && key_image_equal(tc, st->collation);

	st->values_off = MAXALIGN(offsetof(FdwBatchRow, isnull) + st->nouter);
	st->row_width = st->values_off + sizeof(Datum) * st->nouter;
	st->row_bytes = eytz_fdwjoin_row_bytes(st->nouter, st->typlen);
	st->outer_len = palloc(sizeof(int16) * Max(st->nouter, 1));
	st->outer_byval = palloc(sizeof(bool) * Max(st->nouter, 1));
	for (i = 0; i < st->nouter; i++)
	{
		Form_pg_attribute att = TupleDescAttr(ExecGetResultType(st->outer_ps), i);

		st->outer_len[i] = att->attlen;
		st->outer_byval[i] = att->attbyval;
	}
	st->arrays_cxt = AllocSetContextCreate(CurrentMemoryContext, "EytzGPU Foreign Join arrays",
										   ALLOCSET_DEFAULT_SIZES);
	st->batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "EytzGPU Foreign Join batch",
										  ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < FDW_RING; i++)
		st->ring[i].slot = MakeSingleTupleTableSlot(ExecGetResultType(st->inner_ps),
													&TTSOpsVirtual);

	/* the leaves' ForeignScans, in the plan's order (a lone one: no Append) */
	st->nleaves = list_length(paramids);
	st->leaves = palloc0(sizeof(FdwLeafState) * st->nleaves);
	if (IsA(st->inner_ps, AppendState))
	{
		AppendState *as = (AppendState *) st->inner_ps;

		Assert(as->as_nplans == st->nleaves);
		leaf_ps = as->appendplans;
	}
	else
		leaf_ps = &st->inner_ps;
	for (i = 0; i < st->nleaves; i++)
	{
		Oid			relid = list_nth_oid(leaf_oids, i);

		st->leaves[i].paramid = list_nth_int(paramids, i);
		st->leaves[i].ps = leaf_ps[i];
		st->leaves[i].local = get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE;
		if (st->leaves[i].local)
			st->leaves[i].name = get_rel_name(relid);
		else
			st->leaves[i].name = psprintf("%s.%s",
										  GetForeignServer(GetForeignTable(relid)->serverid)->servername,
										  get_rel_name(relid));
	}

	/* keys go to the leaves that can hold them, where the partition key says */
	if (OidIsValid(parent_oid) && st->nleaves > 1)
		st->route = eytz_partroute_for_query(estate, parent_oid, AccessShareLock,
											 (AttrNumber) intVal(list_nth(priv, FJ_PRIV_KEY_ATTNO)),
											 (Oid) intVal(list_nth(priv, FJ_PRIV_EQ_OPNO)),
											 st->keytype, st->collation, leaf_oids);
	st->phase = FJ_FILL;
	st->last_leaf = 0;
}

/*
 * Do equal keys of the type have equal images (its btree operator class's
 * equalimage procedure says so, as for deduplication in btree indexes)?
 */
static bool
key_image_equal(TypeCacheEntry *tc, Oid collation)
{
	Oid			proc;

	if (!OidIsValid(tc->btree_opf))
		return false;
	proc = get_opfamily_proc(tc->btree_opf, tc->btree_opintype, tc->btree_opintype,
							 BTEQUALIMAGE_PROC);
	return OidIsValid(proc) &&
		DatumGetBool(OidFunctionCall1Coll(proc, collation,
										  ObjectIdGetDatum(tc->btree_opintype)));
}

/* Fetch batch row r into the cache: both ends, a row may straddle two lines */
static inline void
prefetch_row(FdwJoinState *st, int r)
{
	char	   *row = (char *) batch_row(st, r);

	__builtin_prefetch(row);
	__builtin_prefetch(row + st->row_width - 1);
}

/* The scan tuple of batch row r and an inner tuple (or none) */
static TupleTableSlot *
form_batch_scan_tuple(FdwJoinState *st, int r, TupleTableSlot *inner)
{
	FdwBatchRow *row = batch_row(st, r);

	return eytz_fdwjoin_form_scan_tuple(st, row_values(st, row), row->isnull, inner);
}

/* The leaf whose ForeignScan returned slot */
static int
leaf_of_slot(FdwJoinState *st, TupleTableSlot *slot)
{
	int			i;

	for (i = 0; i < st->nleaves; i++)
	{
		int			l = (st->last_leaf + i) % st->nleaves;
		PlanState  *ps = st->leaves[l].ps;

		if (slot == ps->ps_ResultTupleSlot || slot == ((ScanState *) ps)->ss_ScanTupleSlot)
		{
			st->last_leaf = l;
			return l;
		}
	}
	return -1;
}

/*
 * Read the next returned rows into the ring (false when the batch has no
 * more), each copied out of its ForeignScan, and fetch their keys' table
 * slots and the batch rows those hold from memory together
 */
static bool
fill_ring(FdwJoinState *st)
{
	/* the clock read only for EXPLAIN ANALYZE's timing: two reads a row */
	bool		timed = st->css.ss.ps.instrument != NULL &&
		st->css.ss.ps.instrument->need_timer;
	int			n = 0;
	int			j;

	while (n < FDW_RING)
	{
		instr_time	t0,
					t1;
		double		wait_ms = 0;
		TupleTableSlot *inner;
		FdwRingRow *e = &st->ring[n];
		Datum		key;
		bool		isnull;
		int			l;

		if (!timed)
			inner = ExecProcNode(st->inner_ps);
		else
		{
			INSTR_TIME_SET_CURRENT(t0);
			inner = ExecProcNode(st->inner_ps);
			INSTR_TIME_SET_CURRENT(t1);
			INSTR_TIME_SUBTRACT(t1, t0);
			wait_ms = INSTR_TIME_GET_MILLISEC(t1);
			st->wait_ms += wait_ms;
		}
		if (TupIsNull(inner))
			break;
		/*
		 * the wait for a row is its leaf's (the shards run at once: the one
		 * that answered is the one waited for)
		 */
		l = leaf_of_slot(st, inner);
		if (l >= 0)
		{
			st->leaves[l].rows++;
			st->leaves[l].wait_ms += wait_ms;
		}
		ExecCopySlot(e->slot, inner);
		key = slot_getattr(e->slot, st->key_col, &isnull);
		e->pos = -1;
		if (!isnull)
		{
			e->key = key;
			e->hash = key_hash(st, key);
			e->pos = e->hash & st->mask;
			__builtin_prefetch(&st->table[e->pos]);
		}
		n++;
	}
	/* the candidate row of each: the first slot of its hash */
	for (j = 0; j < n; j++)
	{
		FdwRingRow *e = &st->ring[j];

		while (e->pos >= 0)
		{
			FdwKeySlot *slot = &st->table[e->pos];

			if (slot->first < 0)
				e->pos = -1;
			else if (slot->hash == e->hash)
			{
				prefetch_row(st, slot->first);
				break;
			}
			else
				e->pos = (e->pos + 1) & st->mask;
		}
	}
	st->ring_len = n;
	st->ring_pos = 0;
	return n > 0;
}

/* The next inner row of the batch that has rows to match: false at the end */
static bool
next_inner_row(FdwJoinState *st)
{
	for (;;)
	{
		FdwRingRow *e;
		FdwKeySlot *slot;

		if (st->ring_pos == st->ring_len && !fill_ring(st))
			return false;
		e = &st->ring[st->ring_pos++];
		if (e->pos < 0)
			continue;
		slot = key_slot_from(st, e->pos, e->key, e->hash);
		if (slot->first < 0)
			continue;
		st->inner_slot = e->slot;
		st->cur_row = slot->first;
		return true;
	}
}

static TupleTableSlot *
project(FdwJoinState *st)
{
	ProjectionInfo *proj = st->css.ss.ps.ps_ProjInfo;

	if (proj == NULL)
		return st->css.ss.ss_ScanTupleSlot;
	return ExecProject(proj);
}

static TupleTableSlot *
fdwjoin_exec(CustomScanState *node)
{
	FdwJoinState *st = (FdwJoinState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		switch (st->phase)
		{
			case FJ_FILL:
				if (!eytz_fdwjoin_fill_batch(st))
				{
					st->phase = FJ_DONE;
					break;
				}
				st->cur_row = -1;
				st->phase = st->ndistinct > 0 ? FJ_PROBE : FJ_UNMATCHED;
				break;

			case FJ_PROBE:
				if (st->cur_row < 0)
				{
					if (!next_inner_row(st))
					{
						st->cur_row = 0;
						st->phase = FJ_UNMATCHED;
						break;
					}
				}
				while (st->cur_row >= 0)
				{
					int			r = st->cur_row;
					FdwBatchRow *row = batch_row(st, r);

					st->cur_row = row->next_same;
					/* the key's next row, fetched while this one is matched */
					if (st->cur_row >= 0)
						prefetch_row(st, st->cur_row);
					if (row->matched &&
						(st->jointype == JOIN_SEMI || st->jointype == JOIN_ANTI))
						continue;
					econtext->ecxt_scantuple = form_batch_scan_tuple(st, r, st->inner_slot);
					if (st->joinqual && !ExecQual(st->joinqual, econtext))
					{
						ResetExprContext(econtext);
						continue;
					}
					row->matched = true;
					if (st->jointype == JOIN_ANTI)
						continue;
					if (st->otherqual && !ExecQual(st->otherqual, econtext))
					{
						ResetExprContext(econtext);
						continue;
					}
					return project(st);
				}
				break;

			case FJ_UNMATCHED:
				if (st->cur_row < 0)
					st->cur_row = 0;
				if (st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI)
				{
					while (st->cur_row < st->nrows)
					{
						int			r = st->cur_row++;

						if (batch_row(st, r)->matched)
							continue;
						econtext->ecxt_scantuple = form_batch_scan_tuple(st, r, NULL);
						if (st->otherqual && !ExecQual(st->otherqual, econtext))
						{
							ResetExprContext(econtext);
							continue;
						}
						return project(st);
					}
				}
				st->phase = FJ_FILL;
				break;

			case FJ_DONE:
				return NULL;
		}
	}
}

static void
fdwjoin_end(CustomScanState *node)
{
	FdwJoinState *st = (FdwJoinState *) node;

	int			i;

	for (i = 0; i < FDW_RING; i++)
		ExecDropSingleTupleTableSlot(st->ring[i].slot);
	ExecEndNode(st->outer_ps);
	ExecEndNode(st->inner_ps);
	MemoryContextDelete(st->batch_cxt);
	MemoryContextDelete(st->arrays_cxt);
}

static void
fdwjoin_rescan(CustomScanState *node)
{
	FdwJoinState *st = (FdwJoinState *) node;

	if (st->outer_ps->chgParam == NULL)
		ExecReScan(st->outer_ps);
	st->outer_done = false;
	st->phase = FJ_FILL;
	st->nrows = 0;
	st->ring_len = st->ring_pos = 0;
	/* the inner side is rescanned by the next batch's params */
}

static void
fdwjoin_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	FdwJoinState *st = (FdwJoinState *) node;
	int			i;

	ExplainPropertyInteger("Batch Size", NULL, st->batch_size, es);
	ExplainPropertyText("Key Routing",
						st->nleaves == 1 ? "one table" :
						st->route != NULL ? "partition key" : "every leaf", es);
	if (!es->analyze)
		return;
	ExplainPropertyUInteger("Batches", NULL, st->batches, es);
	ExplainPropertyUInteger("Outer Rows", NULL, st->outer_rows, es);
	ExplainPropertyUInteger("Distinct Keys", NULL, st->distinct_keys, es);
	if (es->timing)
		ExplainPropertyFloat("Remote Wait", "ms", st->wait_ms, 3, es);
	for (i = 0; i < st->nleaves; i++)
	{
		FdwLeafState *leaf = &st->leaves[i];

		/* a local leaf's "round trips" are its scans (one per batch) */
		const char *kind = leaf->local ? "Local Leaf" : "Shard";

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			char	   *label = psprintf("%s %s", kind, leaf->name);

			char	   *wait = es->timing ? psprintf(" wait=%.3f ms", leaf->wait_ms) : "";

			ExplainPropertyText(label,
								psprintf("%s=" UINT64_FORMAT " keys sent=" UINT64_FORMAT
										 " rows=" UINT64_FORMAT "%s",
										 leaf->local ? "scans" : "round trips",
										 leaf->queries, leaf->keys_sent, leaf->rows, wait), es);
		}
		else
		{
			ExplainOpenGroup(kind, NULL, true, es);
			ExplainPropertyText(kind, leaf->name, es);
			ExplainPropertyUInteger(leaf->local ? "Scans" : "Round Trips", NULL, leaf->queries, es);
			ExplainPropertyUInteger("Keys Sent", NULL, leaf->keys_sent, es);
			ExplainPropertyUInteger("Rows Returned", NULL, leaf->rows, es);
			if (es->timing)
				ExplainPropertyFloat("Wait", "ms", leaf->wait_ms, 3, es);
			ExplainCloseGroup(kind, NULL, true, es);
		}
	}
}
