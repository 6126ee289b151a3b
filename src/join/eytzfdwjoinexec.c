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
 *		rather than one miss after another (as the batch's own keys are when
 *		the table is built).
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
	/* this batch's keys (routed: its own array, kept across batches) */
	Datum	   *keys;
	int			nkeys;
	int			maxkeys;
} FdwLeafState;

/*
 * A distinct key of the batch, in an open-addressing table: its newest batch
 * row, whose record holds the key, and the key's hash, which spares most
 * probes of other keys a look at their rows
 */
typedef struct FdwKeySlot
{
	int32		first;			/* -1: an empty slot */
	uint32		hash;
} FdwKeySlot;

/*
 * A batch row, all that a match reads of it in one place (one cache miss):
 * its key, chain and flags, its nouter isnull flags, and at values_off its
 * nouter outer column values (by-reference ones copied)
 */
typedef struct FdwBatchRow
{
	Datum		key;
	int32		next_same;		/* the next (older) row of its key, or -1 */
	bool		matched;
	bool		keynull;
	bool		isnull[FLEXIBLE_ARRAY_MEMBER];
} FdwBatchRow;

/* returned rows read ahead of their match, and how far ahead the build looks */
#define FDW_RING 16

/* A returned row read ahead: its copy, and where its key's slot is */
typedef struct FdwRingRow
{
	TupleTableSlot *slot;
	uint32		hash;
	int32		pos;			/* its table slot's first candidate; -1: none */
} FdwRingRow;

/*
 * What a batch row costs beyond its record: its hash, its share of the
 * table (at most 4/3 slots of every row, rounded up to a power of two),
 * its key in the leaves' arrays and in the array parameter
 */
#define FDW_ROW_EXTRA(keylen) \
	(sizeof(uint32) + 8 * sizeof(FdwKeySlot) / 3 + sizeof(Datum) + (keylen))

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
	MemoryContext arrays_cxt;	/* the batch's arrays, kept from batch to batch */
	MemoryContext batch_cxt;	/* what one batch copies and sends */
	Size		row_bytes;		/* a batch row's record and its arrays' share */

	/*
	 * the batch: row r at rows + r * row_width, its outer columns deformed
	 * once rather than at each match
	 */
	int			nrows;
	int			maxrows;
	char	   *rows;
	Size		row_width;
	Size		values_off;
	uint32	   *hashes;			/* the rows' keys' hashes */
	int			maxhashes;
	int			ndistinct;
	Datum	   *dkeys;			/* in order of first appearance */
	FdwKeySlot *table;
	uint32		mask;
	uint32		maxslots;
	bool		outer_done;

	/* the returned rows read ahead */
	FdwRingRow	ring[FDW_RING];
	int			ring_len;
	int			ring_pos;

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

	/* a few columns each: loops, not four calls of memcpy a match */
	ExecClearTuple(scan);
	for (i = 0; i < st->nouter; i++)
	{
		scan->tts_values[i] = values[i];
		scan->tts_isnull[i] = isnull[i];
	}
	if (inner != NULL)
	{
		slot_getallattrs(inner);
		for (i = 0; i < st->ninner; i++)
		{
			scan->tts_values[st->nouter + i] = inner->tts_values[i];
			scan->tts_isnull[st->nouter + i] = inner->tts_isnull[i];
		}
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

	return form_scan_tuple(st, row_values(st, row), row->isnull, inner);
}

/*
 * The table slot that holds key (of hash h), or the empty one where it would
 * go, looking from slot i on
 */
static inline FdwKeySlot *
key_slot_from(FdwJoinState *st, uint32 i, Datum key, uint32 h)
{
	for (;; i = (i + 1) & st->mask)
	{
		FdwKeySlot *slot = &st->table[i];

		if (slot->first < 0 ||
			(slot->hash == h && key_equal(st, batch_row(st, slot->first)->key, key)))
			return slot;
	}
}

/* Grow a kept array of *n elements of size elem to hold at least want */
static void *
grow_array(FdwJoinState *st, void *arr, int *n, int want, Size elem)
{
	int			to = Max(1024, *n);

	if (want <= *n)
		return arr;
	while (to < want)
		to *= 2;
	*n = to;
	if (arr != NULL)
		return repalloc_huge(arr, elem * to);
	return MemoryContextAllocExtended(st->arrays_cxt, elem * to, MCXT_ALLOC_HUGE);
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

		st->rows = st->maxrows == 0 ?
			MemoryContextAllocExtended(st->arrays_cxt, st->row_width * n, MCXT_ALLOC_HUGE) :
			repalloc_huge(st->rows, st->row_width * n);
		st->maxrows = n;
	}
	slot_getallattrs(outer);
	scan = form_scan_tuple(st, outer->tts_values, outer->tts_isnull, NULL);
	row = batch_row(st, r);
	row->next_same = -1;
	row->matched = false;
	for (c = 0; c < st->nouter; c++)
	{
		row->isnull[c] = scan->tts_isnull[c];
		row_values(st, row)[c] = scan->tts_isnull[c] || st->outer_byval[c] ? scan->tts_values[c] :
			datumCopy(scan->tts_values[c], false, st->outer_len[c]);
	}
	econtext->ecxt_scantuple = scan;
	key = ExecEvalExprSwitchContext(st->outer_key, econtext, &isnull);
	row->keynull = isnull;
	row->key = isnull ? (Datum) 0 : datumCopy(key, st->typbyval, st->typlen);
	ResetExprContext(econtext);
	st->nrows++;
}

/*
 * Group the batch's rows by key in the table, the keys' slots fetched
 * FDW_RING rows ahead; dkeys gets the distinct keys in order of first
 * appearance
 */
static void
build_key_table(FdwJoinState *st)
{
	int			nkeyed = 0;
	uint32		nslots = 1;
	int			i;

	st->hashes = grow_array(st, st->hashes, &st->maxhashes, st->nrows, sizeof(uint32));
	for (i = 0; i < st->nrows; i++)
	{
		FdwBatchRow *row = batch_row(st, i);

		if (row->keynull)
			continue;
		st->hashes[i] = key_hash(st, row->key);
		nkeyed++;
	}
	/* at most 3/4 full */
	while (nslots < (uint32) nkeyed + (uint32) nkeyed / 3 + 1)
		nslots <<= 1;
	if (nslots > st->maxslots)
	{
		if (st->table != NULL)
			pfree(st->table);
		st->table = MemoryContextAllocExtended(st->arrays_cxt, sizeof(FdwKeySlot) * nslots,
											   MCXT_ALLOC_HUGE);
		st->maxslots = nslots;
	}
	for (i = 0; i < (int) nslots; i++)
		st->table[i].first = -1;
	st->mask = nslots - 1;
	st->dkeys = MemoryContextAllocExtended(st->batch_cxt, sizeof(Datum) * Max(nkeyed, 1),
										   MCXT_ALLOC_HUGE);
	st->ndistinct = 0;
	for (i = 0; i < st->nrows; i++)
	{
		FdwBatchRow *row = batch_row(st, i);
		FdwKeySlot *slot;
		uint32		h;

		if (i + FDW_RING < st->nrows && !batch_row(st, i + FDW_RING)->keynull)
			__builtin_prefetch(&st->table[st->hashes[i + FDW_RING] & st->mask]);
		if (row->keynull)
			continue;
		h = st->hashes[i];
		slot = key_slot_from(st, h & st->mask, row->key, h);
		/* the rows of a key chained newest first */
		if (slot->first < 0)
		{
			slot->hash = h;
			st->dkeys[st->ndistinct++] = row->key;
		}
		else
			row->next_same = slot->first;
		slot->first = i;
	}
}

/*
 * Read the next batch of outer rows, group their keys and send them to the
 * leaves: false when the outer side has no more rows.  A batch takes at most
 * work_mem * hash_mem_multiplier, its rows and all the arrays their keys
 * need counted.
 */
static bool
fill_batch(FdwJoinState *st)
{
	Size		mem_limit = get_hash_memory_limit();
	MemoryContext old;
	int			i,
				d;
	Bitmapset  *changed = NULL;

	if (st->outer_done)
		return false;
	MemoryContextReset(st->batch_cxt);
	st->nrows = 0;
	st->ring_len = st->ring_pos = 0;
	while (st->nrows < st->batch_size &&
		   (st->nrows == 0 ||
			st->nrows * st->row_bytes +
			MemoryContextMemAllocated(st->batch_cxt, true) < mem_limit))
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
	st->batches++;
	st->outer_rows += st->nrows;

	/*
	 * the distinct keys, each with its rows, in a hash table of the keys
	 * (no sort: the leaves' index scans order their arrays themselves)
	 */
	build_key_table(st);
	st->distinct_keys += st->ndistinct;
	if (st->ndistinct == 0)
		return true;

	/* the keys of each leaf */
	if (st->route != NULL)
	{
		for (i = 0; i < st->nleaves; i++)
			st->leaves[i].nkeys = 0;
		for (d = 0; d < st->ndistinct; d++)
		{
			const int  *targets;
			int			n = eytz_partroute_find(st->route, st->dkeys[d], &targets);

			for (i = 0; i < n; i++)
			{
				FdwLeafState *leaf = &st->leaves[targets[i]];

				if (leaf->nkeys == leaf->maxkeys)
					leaf->keys = grow_array(st, leaf->keys, &leaf->maxkeys, leaf->nkeys + 1,
											sizeof(Datum));
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
	old = MemoryContextSwitchTo(st->batch_cxt);
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

/*
 * Read the next returned rows into the ring (false when the batch has no
 * more), each copied out of its ForeignScan, and fetch their keys' table
 * slots and the batch rows those hold from memory together
 */
static bool
fill_ring(FdwJoinState *st)
{
	int			n = 0;
	int			j;

	while (n < FDW_RING)
	{
		instr_time	t0,
					t1;
		TupleTableSlot *inner;
		FdwRingRow *e = &st->ring[n];
		Datum		key;
		bool		isnull;
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
			break;
		l = leaf_of_slot(st, inner);
		if (l >= 0)
			st->leaves[l].rows++;
		ExecCopySlot(e->slot, inner);
		key = slot_getattr(e->slot, st->key_col, &isnull);
		e->pos = -1;
		if (!isnull)
		{
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
		bool		isnull;

		if (st->ring_pos == st->ring_len && !fill_ring(st))
			return false;
		e = &st->ring[st->ring_pos++];
		if (e->pos < 0)
			continue;
		slot = key_slot_from(st, e->pos, slot_getattr(e->slot, st->key_col, &isnull), e->hash);
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
