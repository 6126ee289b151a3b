/*
 * eytzfdwjoinbatch.c
 *		A batch of the EytzGPU Foreign Join (eytzfdwjoinexec.h): its outer rows
 *		read and deformed once into records, grouped by key in an
 *		open-addressing table built a few rows ahead of its misses, and each
 *		leaf's array of the distinct keys it can hold made its parameter.
 */
#include "postgres.h"

#include "executor/executor.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "eytzfdwjoinexec.h"

/* The scan tuple of outer values and an inner tuple (or none) */
TupleTableSlot *
eytz_fdwjoin_form_scan_tuple(FdwJoinState *st, const Datum *values, const bool *isnull,
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
	scan = eytz_fdwjoin_form_scan_tuple(st, outer->tts_values, outer->tts_isnull, NULL);
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
bool
eytz_fdwjoin_fill_batch(FdwJoinState *st)
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
