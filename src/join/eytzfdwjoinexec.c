/*
 * eytzfdwjoinexec.c
 *		The executor of the batched join over a foreign inner side
 *		("EytzGPU Foreign Join", planned by eytzfdwjoin.c): reads the outer
 *		side in batches, groups each batch's rows by distinct key (a hash), sets
 *		each leaf's array parameter so that its ForeignScan sends one remote
 *		query per batch, matches the rows that come back with the batch
 *		through a hash of its keys, and tells EXPLAIN ANALYZE what each
 *		leaf (shard) did.
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "commands/explain.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/sortsupport.h"
#include "utils/typcache.h"

#include "eytzcompat.h"
#include "eytzfdwjoin.h"
#include "eytzpartroute.h"

/* A leaf of the inner side and what it did (EXPLAIN ANALYZE) */
typedef struct FdwLeafState
{
	int			paramid;
	PlanState  *ps;				/* its ForeignScan */
	char	   *name;			/* "server.table" */
	uint64		queries;
	uint64		keys_sent;
	uint64		rows;
	/* this batch's keys */
	Datum	   *keys;
	int			nkeys;
} FdwLeafState;

/*
 * A distinct key of the batch, in an open-addressing table: the key inline,
 * so that a returned row's probe costs one cache miss
 */
typedef struct FdwKeySlot
{
	Datum		key;
	int			first;			/* its first batch row; -1: an empty slot */
	int			last;			/* its last batch row */
} FdwKeySlot;

/*
 * A batch row, all that a match reads of it in one place (one cache miss):
 * its chain and flag, then its nouter isnull flags, and at values_off its
 * nouter outer column values (by-reference ones copied)
 */
typedef struct FdwBatchRow
{
	int			next_same;		/* the next row of its key, or -1 */
	bool		matched;
} FdwBatchRow;

typedef enum FdwJoinPhase
{
	FJ_FILL,					/* read the next batch */
	FJ_PROBE,					/* match the inner rows with the batch */
	FJ_UNMATCHED,				/* LEFT, ANTI: the batch's unmatched rows */
	FJ_DONE
} FdwJoinPhase;

typedef struct FdwJoinState
{
	CustomScanState css;
	PlanState  *outer_ps;
	PlanState  *inner_ps;
	JoinType	jointype;
	int			nouter;
	int			ninner;
	int			key_col;
	int			batch_size;
	ExprState  *outer_key;
	ExprState  *joinqual;
	ExprState  *otherqual;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Oid			keytype;
	SortSupportData sortsup;	/* the key type's default order */
	FmgrInfo	hash_finfo;
	bool		image_equal;	/* by value, equal keys are equal Datums */
	int			nleaves;
	FdwLeafState *leaves;
	EytzPartRoute *route;
	int16	   *outer_len;		/* the outer columns' types */
	bool	   *outer_byval;
	MemoryContext batch_cxt;

	/*
	 * the batch: row r at rows + r * row_width, its outer columns deformed
	 * once rather than at each match; its key in keys[r]
	 */
	int			nrows;
	int			maxrows;
	char	   *rows;
	Size		row_width;
	Size		values_off;
	Datum	   *keys;
	bool	   *keynull;
	int			ndistinct;
	Datum	   *dkeys;			/* in order of first appearance */
	FdwKeySlot *table;
	uint32		mask;
	bool		outer_done;

	/* where the output is */
	FdwJoinPhase phase;
	TupleTableSlot *inner_slot;
	int			cur_row;
	int			last_leaf;

	/* EXPLAIN ANALYZE */
	uint64		batches;
	uint64		outer_rows;
	uint64		distinct_keys;
	double		wait_ms;
} FdwJoinState;

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

	st->values_off = MAXALIGN(sizeof(FdwBatchRow) + st->nouter);
	st->row_width = st->values_off + sizeof(Datum) * st->nouter;
	st->outer_len = palloc(sizeof(int16) * Max(st->nouter, 1));
	st->outer_byval = palloc(sizeof(bool) * Max(st->nouter, 1));
	for (i = 0; i < st->nouter; i++)
	{
		Form_pg_attribute att = TupleDescAttr(ExecGetResultType(st->outer_ps), i);

		st->outer_len[i] = att->attlen;
		st->outer_byval[i] = att->attbyval;
	}
	st->batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "EytzGPU Foreign Join batch",
										  ALLOCSET_DEFAULT_SIZES);

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
		ForeignTable *ft = GetForeignTable(relid);

		st->leaves[i].paramid = list_nth_int(paramids, i);
		st->leaves[i].ps = leaf_ps[i];
		st->leaves[i].name = psprintf("%s.%s", GetForeignServer(ft->serverid)->servername,
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

/*
 * The key's hash: a by-value key whose equal values are equal Datums
 * (image_equal) is hashed as its Datum, without a call through fmgr (the
 * batch is hashed here only: any hash that equal keys share will do)
 */
static inline uint32
key_hash(FdwJoinState *st, Datum key)
{
	if (st->image_equal)
	{
		uint64		d = (uint64) key;

		return murmurhash32((uint32) (d ^ (d >> 32)));
	}
	return DatumGetUInt32(FunctionCall1Coll(&st->hash_finfo, st->collation, key));
}

/* Whether the keys' equality is that of their Datums */
static inline bool
key_equal(FdwJoinState *st, Datum a, Datum b)
{
	if (st->image_equal)
		return a == b;
	return ApplySortComparator(a, false, b, false, &st->sortsup) == 0;
}

/* The scan tuple of outer values and an inner tuple (or none) */
static TupleTableSlot *
form_scan_tuple(FdwJoinState *st, const Datum *values, const bool *isnull,
				TupleTableSlot *inner)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	int			i;

	ExecClearTuple(scan);
	memcpy(scan->tts_values, values, sizeof(Datum) * st->nouter);
	memcpy(scan->tts_isnull, isnull, sizeof(bool) * st->nouter);
	if (inner != NULL)
	{
		slot_getallattrs(inner);
		memcpy(scan->tts_values + st->nouter, inner->tts_values, sizeof(Datum) * st->ninner);
		memcpy(scan->tts_isnull + st->nouter, inner->tts_isnull, sizeof(bool) * st->ninner);
	}
	else
		for (i = 0; i < st->ninner; i++)
			scan->tts_isnull[st->nouter + i] = true;
	return ExecStoreVirtualTuple(scan);
}

static inline FdwBatchRow *
batch_row(FdwJoinState *st, int r)
{
	return (FdwBatchRow *) (st->rows + (Size) r * st->row_width);
}

static inline Datum *
row_values(FdwJoinState *st, FdwBatchRow *row)
{
	return (Datum *) ((char *) row + st->values_off);
}

static inline bool *
row_isnull(FdwBatchRow *row)
{
	return (bool *) (row + 1);
}

/* The scan tuple of batch row r and an inner tuple (or none) */
static TupleTableSlot *
form_batch_scan_tuple(FdwJoinState *st, int r, TupleTableSlot *inner)
{
	FdwBatchRow *row = batch_row(st, r);

	return form_scan_tuple(st, row_values(st, row), row_isnull(row), inner);
}

/* The table slot that holds key, or the empty one where it would go */
static inline FdwKeySlot *
key_slot(FdwJoinState *st, Datum key)
{
	uint32		i = key_hash(st, key) & st->mask;

	for (;; i = (i + 1) & st->mask)
	{
		FdwKeySlot *slot = &st->table[i];

		if (slot->first < 0 || key_equal(st, slot->key, key))
			return slot;
	}
}

/* Append a row to the batch, growing its arrays */
static void
batch_add_row(FdwJoinState *st, TupleTableSlot *outer)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int			r = st->nrows;
	TupleTableSlot *scan;
	FdwBatchRow *row;
	Datum		key;
	bool		isnull;
	int			c;

	if (r == st->maxrows)
	{
		int			n = Max(1024, st->maxrows * 2);

		if (st->maxrows == 0)
		{
			st->rows = palloc_extended(st->row_width * n, MCXT_ALLOC_HUGE);
			st->keys = palloc_extended(sizeof(Datum) * n, MCXT_ALLOC_HUGE);
			st->keynull = palloc_extended(sizeof(bool) * n, MCXT_ALLOC_HUGE);
		}
		else
		{
			st->rows = repalloc_huge(st->rows, st->row_width * n);
			st->keys = repalloc_huge(st->keys, sizeof(Datum) * n);
			st->keynull = repalloc_huge(st->keynull, sizeof(bool) * n);
		}
		st->maxrows = n;
	}
	slot_getallattrs(outer);
	scan = form_scan_tuple(st, outer->tts_values, outer->tts_isnull, NULL);
	row = batch_row(st, r);
	row->next_same = -1;
	row->matched = false;
	for (c = 0; c < st->nouter; c++)
	{
		row_isnull(row)[c] = scan->tts_isnull[c];
		row_values(st, row)[c] = scan->tts_isnull[c] || st->outer_byval[c] ? scan->tts_values[c] :
			datumCopy(scan->tts_values[c], false, st->outer_len[c]);
	}
	econtext->ecxt_scantuple = scan;
	key = ExecEvalExprSwitchContext(st->outer_key, econtext, &isnull);
	st->keynull[r] = isnull;
	st->keys[r] = isnull ? (Datum) 0 : datumCopy(key, st->typbyval, st->typlen);
	ResetExprContext(econtext);
	st->nrows++;
}

/*
 * Read the next batch of outer rows, group their keys and send them to the
 * leaves: false when the outer side has no more rows
 */
static bool
fill_batch(FdwJoinState *st)
{
	Size		mem_limit = get_hash_memory_limit();
	MemoryContext old;
	int			nkeyed = 0;
	int			i,
				d;
	Bitmapset  *changed = NULL;

	if (st->outer_done)
		return false;
	MemoryContextReset(st->batch_cxt);
	st->nrows = st->maxrows = 0;
	while (st->nrows < st->batch_size &&
		   MemoryContextMemAllocated(st->batch_cxt, true) < mem_limit)
	{
		TupleTableSlot *outer = ExecProcNode(st->outer_ps);

		if (TupIsNull(outer))
		{
			st->outer_done = true;
			break;
		}
		old = MemoryContextSwitchTo(st->batch_cxt);
		batch_add_row(st, outer);
		MemoryContextSwitchTo(old);
	}
	if (st->nrows == 0)
		return false;
	old = MemoryContextSwitchTo(st->batch_cxt);
	st->batches++;
	st->outer_rows += st->nrows;

	/*
	 * the distinct keys, each with its rows, in a hash table of the keys
	 * (no sort: the leaves' index scans order their arrays themselves)
	 */
	for (i = 0; i < st->nrows; i++)
		nkeyed += st->keynull[i] ? 0 : 1;
	st->mask = 1;
	while (st->mask < (uint32) nkeyed * 2)
		st->mask <<= 1;
	st->table = palloc_extended(sizeof(FdwKeySlot) * st->mask, MCXT_ALLOC_HUGE);
	for (i = 0; i < (int) st->mask; i++)
		st->table[i].first = -1;
	st->mask--;
	st->dkeys = palloc_extended(sizeof(Datum) * Max(nkeyed, 1), MCXT_ALLOC_HUGE);
	st->ndistinct = 0;
	for (i = 0; i < st->nrows; i++)
	{
		FdwKeySlot *slot;

		if (st->keynull[i])
			continue;
		slot = key_slot(st, st->keys[i]);
		/* rows of one key chained in batch order: added at the last */
		if (slot->first < 0)
		{
			slot->key = st->keys[i];
			slot->first = i;
			st->dkeys[st->ndistinct++] = st->keys[i];
		}
		else
			batch_row(st, slot->last)->next_same = i;
		slot->last = i;
	}
	st->distinct_keys += st->ndistinct;

	if (st->ndistinct == 0)
	{
		MemoryContextSwitchTo(old);
		return true;
	}

	/* the keys of each leaf */
	if (st->route != NULL)
	{
		for (i = 0; i < st->nleaves; i++)
		{
			st->leaves[i].keys = palloc(sizeof(Datum) * st->ndistinct);
			st->leaves[i].nkeys = 0;
		}
		for (d = 0; d < st->ndistinct; d++)
		{
			const int  *targets;
			int			n = eytz_partroute_find(st->route, st->dkeys[d], &targets);

			for (i = 0; i < n; i++)
			{
				FdwLeafState *leaf = &st->leaves[targets[i]];

				leaf->keys[leaf->nkeys++] = st->dkeys[d];
			}
		}
	}
	else
		for (i = 0; i < st->nleaves; i++)
		{
			st->leaves[i].keys = st->dkeys;
			st->leaves[i].nkeys = st->ndistinct;
		}

	/* one array parameter per leaf: each leaf's query is sent once */
	for (i = 0; i < st->nleaves; i++)
	{
		FdwLeafState *leaf = &st->leaves[i];
		ParamExecData *prm = &st->css.ss.ps.state->es_param_exec_vals[leaf->paramid];
		ArrayType  *arr = construct_array(leaf->keys, leaf->nkeys, st->keytype,
										  st->typlen, st->typbyval, st->typalign);

		prm->execPlan = NULL;
		prm->value = PointerGetDatum(arr);
		prm->isnull = false;
		changed = bms_add_member(changed, leaf->paramid);
		leaf->queries++;
		leaf->keys_sent += leaf->nkeys;
	}
	MemoryContextSwitchTo(old);
	st->inner_ps->chgParam = bms_join(st->inner_ps->chgParam, changed);
	return true;
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

/* The next inner row of the batch that has rows to match: false at the end */
static bool
next_inner_row(FdwJoinState *st)
{
	for (;;)
	{
		instr_time	t0,
					t1;
		TupleTableSlot *inner;
		Datum		key;
		bool		isnull;
		FdwKeySlot *slot;
		int			l;

		/* the clock read only for EXPLAIN ANALYZE's timing: two reads a row */
		if (st->css.ss.ps.instrument == NULL || !st->css.ss.ps.instrument->need_timer)
			inner = ExecProcNode(st->inner_ps);
		else
		{
			INSTR_TIME_SET_CURRENT(t0);
			inner = ExecProcNode(st->inner_ps);
			INSTR_TIME_SET_CURRENT(t1);
			INSTR_TIME_SUBTRACT(t1, t0);
			st->wait_ms += INSTR_TIME_GET_MILLISEC(t1);
		}
		if (TupIsNull(inner))
			return false;
		l = leaf_of_slot(st, inner);
		if (l >= 0)
			st->leaves[l].rows++;
		key = slot_getattr(inner, st->key_col, &isnull);
		if (isnull)
			continue;
		slot = key_slot(st, key);
		if (slot->first < 0)
			continue;
		st->inner_slot = inner;
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
				if (!fill_batch(st))
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

	ExecEndNode(st->outer_ps);
	ExecEndNode(st->inner_ps);
	MemoryContextDelete(st->batch_cxt);
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

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			char	   *label = psprintf("Shard %s", leaf->name);

			ExplainPropertyText(label,
								psprintf("round trips=" UINT64_FORMAT " keys sent=" UINT64_FORMAT
										 " rows=" UINT64_FORMAT,
										 leaf->queries, leaf->keys_sent, leaf->rows), es);
		}
		else
		{
			ExplainOpenGroup("Shard", NULL, true, es);
			ExplainPropertyText("Shard", leaf->name, es);
			ExplainPropertyUInteger("Round Trips", NULL, leaf->queries, es);
			ExplainPropertyUInteger("Keys Sent", NULL, leaf->keys_sent, es);
			ExplainPropertyUInteger("Rows Returned", NULL, leaf->rows, es);
			ExplainCloseGroup("Shard", NULL, true, es);
		}
	}
}
