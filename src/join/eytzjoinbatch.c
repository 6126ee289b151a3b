/*
 * eytzjoinbatch.c
 *		The batched join's outer side: the batch arrays (taken once per
 *		scan from memory the backend keeps), reading outer rows into a batch
 *		(their values, flags and key ranges; straight from the outer
 *		table's pages where eytzouter.c can) and the pipeline's second set
 *		of arrays, read while the lookup answers the current batch.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "executor/executor.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "eytzcompat.h"
#include "eytzjoinexec.h"

/* eytzgpu.batch_size (registered by eytz_join_init) */
int			eytz_batch_size = 1048576;

/* Bytes of one set of batch arrays: the rows, then the queries */
static inline Size
batch_rows_bytes(EytzJoinState *st)
{
	return MAXALIGN(st->row_stride * st->cap);
}

static inline Size
batch_bytes(EytzJoinState *st)
{
	return batch_rows_bytes(st) +
		MAXALIGN((2 * sizeof(uint64) + sizeof(uint32)) * (Size) st->cap);
}

/* Carve a set of batch arrays out of p (batch_bytes long) into b */
static void
carve_batch(EytzJoinState *st, char *p, JoinBatch *b)
{
	b->rowmem = p;
	b->qlo = (uint64 *) (p + batch_rows_bytes(st));
	b->qhi = b->qlo + st->cap;
	b->qrow = (uint32 *) (b->qhi + st->cap);
}

/*
 * The batch arrays for the largest batch (and the index-only plan's flags
 * and heap matches for the largest chunk), in one scratch array that the backend keeps from
 * scan to scan: fresh memory costs a page fault per page touched (so does
 * growing the arrays with the batches), and a short scan touches only the
 * pages of its small first batches.
 */
void
eytz_join_alloc_batch_arrays(EytzJoinState *st)
{
	Size		deferred = st->index_only ? 2 * sizeof(EytzMatch) * (Size) st->chunk_cap : 0;
	Size		flags = st->index_only ? sizeof(bool) * (Size) st->chunk_cap : 0;
	char	   *p = eytz_scratch_alloc(st->css.ss.ps.state->es_query_cxt,
									   EYTZ_ROW_ALIGN + batch_bytes(st) + deferred + flags);
	JoinBatch	b;

	p = (char *) TYPEALIGN(EYTZ_ROW_ALIGN, p);
	carve_batch(st, p, &b);
	st->rowmem = b.rowmem;
	st->qlo = b.qlo;
	st->qhi = b.qhi;
	st->qrow = b.qrow;
	p += batch_bytes(st);
	st->deferred = st->index_only ? (EytzMatch *) p : NULL;
	st->from_index = st->index_only ? (bool *) (p + deferred) : NULL;
}

/* Key range of one outer row from its key expressions; false: no match */
static bool
row_range(EytzJoinState *st, ExprContext *econtext, uint64 *lo, uint64 *hi)
{
	int			i;

	if (st->plain_key)
	{
		/* the key itself, as scalar_range makes it */
		AttrNumber	a = st->key_attnos[0];

		if (econtext->ecxt_scantuple->tts_isnull[a - 1])
			return false;
		*lo = *hi = st->kt->encode(econtext->ecxt_scantuple->tts_values[a - 1]);
		return true;
	}
	*lo = st->kt->dom_min;
	*hi = st->kt->dom_max;
	for (i = 0; i < st->nclauses; i++)
	{
		AttrNumber	a = st->key_attnos[i];
		bool		isnull;
		Datum		v;
		EytzRange	r;

		if (a > 0)
		{
			/* the outer tuple is deformed: no expression to run */
			v = econtext->ecxt_scantuple->tts_values[a - 1];
			isnull = econtext->ecxt_scantuple->tts_isnull[a - 1];
		}
		else
			v = ExecEvalExprSwitchContext(st->keyexprs[i], econtext, &isnull);

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

/*
 * The batches of a parallel join's process after its first: an even share
 * of the outer rows the planner expects in all processes, at most the batch
 * size and at least a 16th of it (an underestimate).  Its share is small,
 * and the fewer of its matches a batch holds, the more heap blocks its
 * fetches visit (each block once per batch), so it takes it in one batch;
 * but not more: the leader starts tens of milliseconds before the workers
 * (their start, JIT), and with full batches it took a full one while they
 * started and then finished last (random 20M x 2M, 2 workers on 2 cores:
 * 1.05M outer rows against 0.47M for each worker).
 */
static uint32
parallel_batch(EytzJoinState *st)
{
	int			workers = st->shared->nworkers;
	int			procs = workers + (parallel_leader_participation ? 1 : 0);
	double		share = st->expected_keys * eytz_parallel_divisor(workers) / Max(procs, 1);

	return (uint32) Max(Min(share, (double) eytz_batch_size),
						(double) (eytz_batch_size / EYTZ_GROWTH));
}

/* The next outer row: read from its pages directly where that is possible */
static pg_attribute_always_inline TupleTableSlot *
next_outer(EytzJoinState *st, PlanState *outer)
{
	return st->outer_scan ? eytz_outer_next(st->outer_scan) : ExecProcNode(outer);
}

/*
 * The queries of up to "want" outer rows whose key is a column of their
 * own (plain_key), read from the outer table's tuples as they lie in its
 * pages: neither a slot nor a deformed row per tuple
 */
static void
read_keys_direct(EytzJoinState *st, uint32 want)
{
	TupleDesc	desc = eytz_outer_desc(st->outer_scan);
	AttrNumber	a = eytz_outer_attno(st->outer_scan, st->key_attnos[0]);
	uint64		(*encode) (Datum value) = st->kt->encode;

	while (st->nrows < want)
	{
		HeapTuple	tuple = eytz_outer_next_tuple(st->outer_scan);
		bool		isnull;
		Datum		key;

		if (tuple == NULL)
		{
			st->outer_done = true;
			break;
		}
		key = heap_getattr(tuple, a, desc, &isnull);
		if (!isnull)
		{
			st->qlo[st->nq] = st->qhi[st->nq] = encode(key);
			st->qrow[st->nq] = st->nq;
			st->nq++;
		}
		st->nrows++;
	}
}

/*
 * Read the next batch of outer rows into the current batch arrays, the
 * rows and their copied values within limit bytes (the outer rows' share
 * of work_mem, less what a batch read before holds).  Where no match reads
 * anything of its row but the key range (an inner join whose projection
 * and quals read no outer column), the batch keeps only the queries, and a
 * match's "row" is its query.
 */
void
eytz_join_read_batch(EytzJoinState *st, Size limit)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	PlanState  *outer = (PlanState *) linitial(st->css.custom_ps);
	int			no = st->nouter;
	uint32		want = Min(st->next_batch, st->cap);
	Size		used = 0;

	MemoryContextReset(st->batchcxt);
	st->nrows = 0;
	st->nq = 0;
	if (st->outer_scan)
		eytz_outer_resume(st->outer_scan);
	if (st->outer_scan && !st->keep_rows && st->plain_key)
		read_keys_direct(st, want);

	while (!st->keep_rows && st->nrows < want && !st->outer_done)
	{
		TupleTableSlot *slot = next_outer(st, outer);

		if (TupIsNull(slot))
		{
			st->outer_done = true;
			break;
		}
		/*
		 * nothing of the row is kept: its query stands for it, and only the
		 * key columns are deformed (expressions deform what they read)
		 */
		if (st->key_natts > 0)
			slot_getsomeattrs(slot, st->key_natts);
		econtext->ecxt_scantuple = slot;
		if (row_range(st, econtext, &st->qlo[st->nq], &st->qhi[st->nq]))
		{
			st->qrow[st->nq] = st->nq;
			st->nq++;
		}
		/* only an expression leaves anything in the per-tuple memory */
		if (st->key_exprs)
			ResetExprContext(econtext);
		st->nrows++;
	}
	while (st->keep_rows && st->nrows < want && (st->nrows == 0 || used < limit))
	{
		TupleTableSlot *slot = next_outer(st, outer);
		uint32		row = st->nrows;
		BatchRow   *r = batch_row(st, row);
		Datum	   *vals = r->values;
		bool	   *flags = row_flags(st, r);
		bool	   *nulls = flags + FLAG_NULLS;
		bool		has_nulls = false;
		int			i;

		if (TupIsNull(slot))
		{
			st->outer_done = true;
			break;
		}
		slot_getallattrs(slot);
		/* a loop: a few columns, not worth a library call each */
		for (i = 0; i < no; i++)
		{
			MemoryContext old;

			vals[i] = slot->tts_values[i];
			nulls[i] = slot->tts_isnull[i];
			has_nulls |= nulls[i];
			if (nulls[i] || st->outer_byval[i])
				continue;
			old = MemoryContextSwitchTo(st->batchcxt);
			vals[i] = datumCopy(vals[i], false, st->outer_len[i]);
			MemoryContextSwitchTo(old);
			used += MAXALIGN(datumGetSize(vals[i], false, st->outer_len[i])) + 16;
		}
		used += st->row_bytes;
		econtext->ecxt_scantuple = slot;
		if (row_range(st, econtext, &r->lo, &r->hi))
		{
			st->qlo[st->nq] = r->lo;
			st->qhi[st->nq] = r->hi;
			st->qrow[st->nq] = row;
			st->nq++;
		}
		else
		{
			r->lo = 1;
			r->hi = 0;
		}
		ResetExprContext(econtext);
		flags[FLAG_MATCHED] = false;
		flags[FLAG_HAS_NULLS] = has_nulls;
		flags[FLAG_PENDING] = false;
		st->nrows++;
	}
	if (st->outer_scan)
		eytz_outer_pause(st->outer_scan);
	/*
	 * Grow geometrically up to the batch size; a parallel join's process
	 * takes its share after its first batch (parallel_batch)
	 */
	st->next_batch = st->shared ? parallel_batch(st) :
		(uint32) Min((uint64) want * EYTZ_GROWTH, (uint64) eytz_batch_size);
	if (st->nrows > 0)
		st->nbatches++;
	st->outer_rows += st->nrows;
	st->used = used;
	st->scan_reads++;
}

/* Exchange the current batch's arrays with the other buffer's */
void
eytz_join_swap_batches(EytzJoinState *st)
{
	JoinBatch	cur = {st->rowmem, st->qlo, st->qhi, st->qrow, st->batchcxt,
	st->nrows, st->nq, st->used};

	st->rowmem = st->other.rowmem;
	st->qlo = st->other.qlo;
	st->qhi = st->other.qhi;
	st->qrow = st->other.qrow;
	st->batchcxt = st->other.cxt;
	st->nrows = st->other.nrows;
	st->nq = st->other.nq;
	st->used = st->other.used;
	st->other = cur;
}

/*
 * While the lookup answers the current batch, read the next one into the
 * other buffer, within what the current one leaves of work_mem.  A batch
 * that this cuts short turns the pipeline off for the rest of the scan
 * (its batches must not be smaller than without it).
 */
void
eytz_join_read_ahead(EytzJoinState *st)
{
	Size		held = st->used;
	uint32		want = Min(st->next_batch, st->cap);

	/* the second set of arrays at the first read ahead (a CPU view takes none) */
	if (st->other.rowmem == NULL)
	{
		MemoryContext cxt = st->css.ss.ps.state->es_query_cxt;

		carve_batch(st, (char *) TYPEALIGN(EYTZ_ROW_ALIGN,
										   eytz_scratch_alloc(cxt, EYTZ_ROW_ALIGN + batch_bytes(st))),
					&st->other);
		st->other.cxt = AllocSetContextCreate(cxt, "eytzgpu join batch ahead",
											  ALLOCSET_DEFAULT_SIZES);
	}
	eytz_join_swap_batches(st);
	stage_enter(st, STAGE_FILL);
	eytz_join_read_batch(st, held < st->rows_mem ? st->rows_mem - held : 0);
	if (!st->outer_done && st->nrows < want)
		st->overlap = false;
	st->ahead_ready = st->nrows > 0;
	eytz_join_swap_batches(st);
}
