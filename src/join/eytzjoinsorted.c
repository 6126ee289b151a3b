/*
 * eytzjoinsorted.c
 *		The batched join's heap-order mode: every batch's heap matches
 *		sorted by (leaf, TID) within work_mem (spilling past it to temporary
 *		files), then fetched in one pass over the inner heap, so that each
 *		heap block is visited once for the whole outer side instead of once
 *		per batch.
 *
 * Batches are read and looked up as in the pipelined mode (eytzjoinexec.c),
 * and the matches the index answers (index-only, all-visible pages) are
 * emitted as they come; each heap match goes to the sort instead of being
 * fetched, as one record: (leaf and TID, the outer row's serial, its key
 * range, the outer values the join reads): where every value is by value,
 * a fixed-width record that eytzrecsort.c sorts by radix and merges, else a
 * tuple through PostgreSQL's tuplesort.  Once the outer side is read,
 * the sorted records are read back in windows that take the place of
 * batches: each window row is one record, the window's matches are its
 * rows in TID order, and the state machine fetches, rechecks, qualifies
 * and projects them as it does a batch's.
 *
 * A row's matches are spread over the sorted stream, so what LEFT, SEMI and
 * ANTI need to know of a row (has anything matched it yet) is kept per
 * serial in a bitmap (one bit per outer row of the sorted batches).  Rows
 * some of whose matches went to the sort and that were not matched by the
 * end of their batch are put aside in a tuplestore; after the sorted
 * matches, those the bitmap still shows unmatched are null-extended (LEFT)
 * or emitted (ANTI).  Rows without any heap match are settled at the end of
 * their batch, as in the pipelined mode.
 *
 * No row comes out before the outer side is read (except the index's
 * answers), so the mode is chosen where the batches would visit the heap
 * many times over (eytz_heap_order_decide): with eytzgpu.join_heap_order =
 * auto, after the scan's first (small) batch, from the matches per outer
 * row seen, the outer rows the planner expects and the heap's size against
 * shared_buffers; the first batch runs pipelined, so a LIMIT that stops
 * early never sorts.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "executor/nodeHash.h"
#include "optimizer/cost.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"

#include "eytzcompat.h"
#include "eytzjoinexec.h"
#include "eytzrecsort.h"

int			eytz_join_heap_order = EYTZ_HEAP_ORDER_AUTO;

static const struct config_enum_entry heap_order_options[] = {
	{"off", EYTZ_HEAP_ORDER_OFF, false},
	{"auto", EYTZ_HEAP_ORDER_AUTO, false},
	{"on", EYTZ_HEAP_ORDER_ON, false},
	{NULL, 0, false}
};

/*
 * The record's columns: the sort key (leaf << LEAF_SHIFT | packed TID),
 * the serial, the key range, then the outer values
 */
#define REC_KEY 0
#define REC_SERIAL 1
#define REC_LO 2
#define REC_HI 3
#define REC_OUTER 4
#define LEAF_SHIFT 48
#define MAX_LEAVES (1 << 14)

/*
 * auto: a heap page visit that the sort saves, in matches sorted: a page
 * outside shared_buffers costs a read from the kernel (a copy of 8 kB, a
 * buffer evicted), a match a trip through the sort (bench/join_results.md,
 * run 19)
 */
#define MATCHES_PER_PAGE_VISIT 8.0

/* matches ahead whose rows a spill prefetches (each match's put is long) */
#define SPILL_AHEAD 32

typedef struct EytzHeapOrder
{
	TupleDesc	desc;
	TupleTableSlot *put;		/* a record made (virtual) */
	TupleTableSlot *slot;		/* a record read back (minimal tuple) */
	Tuplesortstate *sort;		/* records as tuples, or */
	EytzRecSort *rs;			/* fixed-width records (by-value fields only) */
	int			rec_nouter;		/* the outer values a record carries */
	const char *carry_rec;		/* rs: the record last read */
	Tuplestorestate *unmatched; /* rows left for the end (LEFT, ANTI) */
	bool		sorted;			/* the sort was performed */
	bool		carry;			/* the last record read starts the next window */
	bool		sort_done;
	uint64		serial_base;	/* the current batch's first row's serial */
	Size		nbitwords;		/* matched_bits' words */
	EytzMatch  *window;			/* the window's matches */
	uint64	   *serials;		/* its rows' serials */
	/* EXPLAIN ANALYZE */
	uint64		batches;
	uint64		matches;
	int64		sort_kb;
	bool		sort_disk;
} EytzHeapOrder;

void
eytz_heap_order_init(void)
{
	DefineCustomEnumVariable("eytzgpu.join_heap_order",
							 "Lets the eytzgpu join sort all its batches' heap matches by TID and fetch them in one pass over the inner heap.",
							 "auto: where the batches would read a heap that does not fit shared_buffers beside its index many times over; on: always (tests); off: never (each batch fetches its own matches).",
							 &eytz_join_heap_order, EYTZ_HEAP_ORDER_AUTO, heap_order_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * Does shared_buffers keep a heap of heap_pages pages from one batch to the
 * next?  Where the heap and the index's pages (a batch reads both) fit it
 * together, a batch's visits of pages an earlier batch read are buffer
 * hits; where they do not, each batch's pass in block order pushes out what
 * the next one needs (the buffer pool's clock sweep keeps nothing of a
 * cyclic scan larger than itself): every visit is a read.
 */
static bool
heap_stays_buffered(double heap_pages, double index_pages)
{
	return heap_pages + index_pages <= NBuffers;
}

/*
 * Would "batches" batches over a heap of "pages" pages (beside an index of
 * index_pages), "matches" matches in all, visit its pages so often that
 * sorting the matches costs less?  Each batch visits about
 * pages * (1 - exp(-batch matches / pages)) of them.
 */
static bool
sorting_pays(double batches, double pages, double index_pages, double matches)
{
	double		per_batch;

	if (heap_stays_buffered(pages, index_pages) || batches < 2)
		return false;
	per_batch = pages * (1.0 - exp(-matches / batches / pages));
	return (batches - 1) * per_batch * MATCHES_PER_PAGE_VISIT > matches;
}

/*
 * The planner's cost of the join's heap visits: where the executor would
 * sort the matches (auto: sorting_pays; on), a per-match cost of the sort
 * like the fetch's own and one pass over the pages the matches touch
 * (one_pass: per process, for each process of a parallel join sorts and
 * passes over its own matches); else the visits of the batches' pages
 * (batch_visits) and, over a heap that shared buffers do not keep (of
 * heap_pages pages, cost_per_page each), each batch after the first
 * visiting its pages again.  Batches are bounded by work_mem *
 * hash_mem_multiplier as the executor bounds them (about 64 bytes an outer
 * row).
 */
Cost
eytz_heap_order_cost(double outer_rows, double matches, double heap_pages,
					 double index_pages, Cost batch_visits, Cost one_pass,
					 Cost cost_per_page)
{
	double		rows_mem = get_hash_memory_limit() * (1.0 - 1.0 / EYTZ_CHUNK_SHARE);
	double		cap = Max(1.0, Min((double) eytz_batch_size, rows_mem / 64.0));
	double		batches = ceil(outer_rows / cap);
	double		per_batch = heap_pages * (1.0 - exp(-matches / Max(batches, 1.0) / heap_pages));
	Cost		sort = matches * (cpu_tuple_cost + 3.0 * cpu_operator_cost);
	Cost		revisits = heap_stays_buffered(heap_pages, index_pages) ? 0 :
		(batches - 1) * per_batch * cost_per_page;

	if (batches < 2 || eytz_join_heap_order == EYTZ_HEAP_ORDER_OFF)
		return batch_visits + revisits;
	if (eytz_join_heap_order == EYTZ_HEAP_ORDER_ON ||
		sorting_pays(batches, heap_pages, index_pages, matches))
		return sort + one_pass;
	return batch_visits + revisits;
}

/* The pages of the scan's heaps and of their indexes */
static void
scan_pages(EytzJoinState *st, double *heap_pages, double *index_pages)
{
	*heap_pages = *index_pages = 0;
	for (int l = 0; l < st->nleaves; l++)
	{
		*heap_pages += RelationGetNumberOfBlocks(st->leaves[l].heap);
		*index_pages += RelationGetNumberOfBlocks(st->leaves[l].index);
	}
}

/*
 * auto: would the outer rows still to come, in full batches, visit the
 * heap pages so often that sorting their matches costs less?
 */
static bool
heap_order_pays(EytzJoinState *st)
{
	double		pages = 0;
	double		index_pages = 0;
	double		matches = 0;
	double		rows_left,
				cap;

	scan_pages(st, &pages, &index_pages);
	for (int l = 0; l < st->nleaves; l++)
		matches += eytz_lookup_stats(st->leaves[l].lookup)->matches;
	if (st->outer_rows == 0)
		return false;
	/*
	 * the scan as the planner saw it (eytz_heap_order_cost): its batches
	 * as work_mem bounds them too, the first one's included
	 */
	rows_left = Max(st->expected_keys - st->outer_rows, 0);
	cap = Max(1.0, Min((double) st->cap, (double) st->rows_mem / Max(st->row_bytes, 1)));
	return sorting_pays(1 + ceil(rows_left / cap), pages, index_pages,
						matches * (st->outer_rows + rows_left) / st->outer_rows);
}

/*
 * Choose the mode for the scan's batches from here on: at its start when
 * forced, else once its first batch was read (auto); once chosen, the
 * rest of the scan is sorted.  Not for more leaves than the sort key holds.
 */
void
eytz_heap_order_decide(EytzJoinState *st)
{
	MemoryContext cxt = st->css.ss.ps.state->es_query_cxt;
	MemoryContext old;
	EytzHeapOrder *ho;
	AttrNumber	key = REC_KEY + 1;
	Oid			op = Int8LessOperator;
	Oid			coll = InvalidOid;
	bool		nulls_first = false;
	TupleDesc	scandesc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	double		heap_pages,
				index_pages;
	bool		byval = true;

	if (eytz_join_heap_order == EYTZ_HEAP_ORDER_OFF || st->nleaves > MAX_LEAVES)
		st->heap_order_decided = true;
	else if (eytz_join_heap_order == EYTZ_HEAP_ORDER_ON)
		st->heap_order_decided = st->heap_order = true;
	else if (st->scan_reads > 0)
	{
		st->heap_order = heap_order_pays(st);
		st->heap_order_decided = true;
	}
	if (!st->heap_order)
		return;
	/* the one pass over a heap that shared buffers do not keep: through a ring */
	scan_pages(st, &heap_pages, &index_pages);
	if (!heap_stays_buffered(heap_pages, index_pages))
		for (int l = 0; l < st->nleaves; l++)
			eytz_heap_bulk_read(st->leaves[l].hf);

	old = MemoryContextSwitchTo(cxt);
	ho = st->ho ? st->ho : palloc0(sizeof(EytzHeapOrder));
	st->ho = ho;
	if (ho->desc == NULL)
	{
		ho->desc = CreateTemplateTupleDesc(REC_OUTER + st->nouter);
		for (int i = 0; i < REC_OUTER; i++)
			TupleDescInitEntry(ho->desc, i + 1, NULL, INT8OID, -1, 0);
		for (int i = 0; i < st->nouter; i++)
			TupleDescCopyEntry(ho->desc, REC_OUTER + i + 1, scandesc, i + 1);
		ho->slot = MakeSingleTupleTableSlot(ho->desc, &TTSOpsMinimalTuple);
		ho->put = MakeSingleTupleTableSlot(ho->desc, &TTSOpsVirtual);
	}
	/* a record of by-value fields: a key, three more, the outer values it carries */
	ho->rec_nouter = st->keep_rows ? st->nouter : 0;
	for (int c = 0; c < ho->rec_nouter && byval; c++)
		byval = st->outer_byval[c];
	if (byval)
		ho->rs = eytz_recsort_begin(REC_OUTER * sizeof(uint64) +
									ho->rec_nouter * sizeof(Datum) +
									MAXALIGN(ho->rec_nouter * sizeof(bool)), work_mem);
	else
		ho->sort = tuplesort_begin_heap(ho->desc, 1, &key, &op, &coll, &nulls_first,
										work_mem, NULL, TUPLESORT_NONE);
	if (st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI)
		ho->unmatched = tuplestore_begin_heap(false, false, work_mem);
	MemoryContextSwitchTo(old);
	ho->sorted = ho->carry = ho->sort_done = false;
	ho->serial_base = 0;
}

/* A record of the values v / isnull (REC_*) to the fixed-width sort */
static void
put_record(EytzHeapOrder *ho, const Datum *v, const bool *isnull)
{
	uint64	   *f = eytz_recsort_append(ho->rs);
	Datum	   *values = (Datum *) (f + REC_OUTER);
	bool	   *nulls = (bool *) (values + ho->rec_nouter);

	for (int i = 0; i < REC_OUTER; i++)
		f[i] = isnull[i] ? 0 : (uint64) DatumGetInt64(v[i]);
	for (int c = 0; c < ho->rec_nouter; c++)
	{
		nulls[c] = isnull[REC_OUTER + c];
		values[c] = nulls[c] ? (Datum) 0 : v[REC_OUTER + c];
	}
}

/* A record read back: its fields, its outer values where it carries them */
typedef struct SortedRecord
{
	uint64		key;
	uint64		serial;
	uint64		lo;
	uint64		hi;
	const Datum *values;
	const bool *isnull;
} SortedRecord;

/*
 * The next record in (leaf, TID) order, the one carried over from the last
 * window first; false after the last
 */
static bool
next_record(EytzJoinState *st, EytzHeapOrder *ho, SortedRecord *rec)
{
	if (ho->rs)
	{
		const uint64 *f;

		if (!ho->carry)
			ho->carry_rec = eytz_recsort_next(ho->rs);
		if (ho->carry_rec == NULL)
			return false;
		f = (const uint64 *) ho->carry_rec;
		rec->key = f[REC_KEY];
		rec->serial = f[REC_SERIAL];
		rec->lo = f[REC_LO];
		rec->hi = st->point_keys ? f[REC_LO] : f[REC_HI];
		rec->values = (const Datum *) (f + REC_OUTER);
		rec->isnull = (const bool *) (rec->values + ho->rec_nouter);
	}
	else
	{
		TupleTableSlot *slot = ho->slot;

		if (!ho->carry &&
			!tuplesort_gettupleslot(ho->sort, true, false, slot, NULL))
			return false;
		slot_getallattrs(slot);
		rec->key = (uint64) DatumGetInt64(slot->tts_values[REC_KEY]);
		rec->serial = (uint64) DatumGetInt64(slot->tts_values[REC_SERIAL]);
		rec->lo = (uint64) DatumGetInt64(slot->tts_values[REC_LO]);
		rec->hi = slot->tts_isnull[REC_HI] ? rec->lo :
			(uint64) DatumGetInt64(slot->tts_values[REC_HI]);
		rec->values = slot->tts_values + REC_OUTER;
		rec->isnull = slot->tts_isnull + REC_OUTER;
	}
	ho->carry = false;
	return true;
}

/*
 * The heap matches m[0..n) of the current batch and leaf go to the sort
 * (a SEMI or ANTI row matched already needs no more)
 */
void
eytz_heap_order_spill(EytzJoinState *st, const EytzMatch *m, uint32 n)
{
	EytzHeapOrder *ho = st->ho;
	TupleTableSlot *slot = ho->put;
	uint64		leaf = (uint64) st->cur_leaf << LEAF_SHIFT;

	stage_enter(st, STAGE_FETCH);
	for (uint32 i = 0; i < n; i++)
	{
		uint32		row = m[i].row;
		Datum	   *v = slot->tts_values;
		bool	   *isnull = slot->tts_isnull;

		/* the rows of the matches ahead, at random in the batch: their misses overlap */
		if (i + SPILL_AHEAD < n)
		{
			uint32		ahead = m[i + SPILL_AHEAD].row;

			if (st->keep_rows)
			{
				__builtin_prefetch(batch_row(st, ahead));
				__builtin_prefetch(row_flags(st, batch_row(st, ahead)));
			}
			else
			{
				__builtin_prefetch(&st->qlo[ahead]);
				if (!st->point_keys)
					__builtin_prefetch(&st->qhi[ahead]);
			}
		}
		ExecClearTuple(slot);
		/* what a record needs of its row: no serial, no upper bound of a point */
		memset(isnull, false, REC_OUTER);
		isnull[REC_SERIAL] = !st->flags_per_match;
		isnull[REC_HI] = st->point_keys;
		v[REC_KEY] = Int64GetDatum((int64) (leaf | m[i].tid));
		v[REC_SERIAL] = Int64GetDatum((int64) (ho->serial_base + row));
		if (st->keep_rows)
		{
			BatchRow   *r = batch_row(st, row);
			bool	   *flags = row_flags(st, r);

			if (st->single_match && flags[FLAG_MATCHED])
				continue;
			flags[FLAG_PENDING] = true;
			v[REC_LO] = Int64GetDatum((int64) r->lo);
			v[REC_HI] = Int64GetDatum((int64) r->hi);
			for (int c = 0; c < st->nouter; c++)
			{
				v[REC_OUTER + c] = r->values[c];
				isnull[REC_OUTER + c] = flags[FLAG_HAS_NULLS] && flags[FLAG_NULLS + c];
			}
		}
		else
		{
			v[REC_LO] = Int64GetDatum((int64) st->qlo[row]);
			/* a point's upper bound is its lower one: not read (a miss) */
			v[REC_HI] = st->point_keys ? (Datum) 0 : Int64GetDatum((int64) st->qhi[row]);
			for (int c = 0; c < st->nouter; c++)
			{
				v[REC_OUTER + c] = (Datum) 0;
				isnull[REC_OUTER + c] = true;
			}
		}
		if (ho->rs)
			put_record(ho, v, isnull);
		else
		{
			ExecStoreVirtualTuple(slot);
			tuplesort_puttupleslot(ho->sort, slot);
		}
		ho->matches++;
	}
}

/* Room in matched_bits for serials below n */
static void
bits_reserve(EytzJoinState *st, uint64 n)
{
	EytzHeapOrder *ho = st->ho;
	Size		words = (n + 63) / 64;

	if (words <= ho->nbitwords)
		return;
	words = Max(words, ho->nbitwords * 2);
	if (st->matched_bits == NULL)
		st->matched_bits = MemoryContextAllocHuge(st->css.ss.ps.state->es_query_cxt,
												  words * sizeof(uint64));
	else
		st->matched_bits = repalloc_huge(st->matched_bits, words * sizeof(uint64));
	memset(st->matched_bits + ho->nbitwords, 0, (words - ho->nbitwords) * sizeof(uint64));
	ho->nbitwords = words;
}

/*
 * The end of a sorted batch's matches (the index's answers emitted, the
 * heap's sorted): a row with matches in the sort is settled later, from
 * the bitmap: marked there if matched already, else put aside for the end
 * (LEFT, ANTI); the batch's unmatched phase then skips it.
 */
void
eytz_heap_order_batch_end(EytzJoinState *st)
{
	EytzHeapOrder *ho = st->ho;

	if (st->flags_per_match)
	{
		TupleTableSlot *slot = ho->put;

		bits_reserve(st, ho->serial_base + st->nrows);
		for (uint32 row = 0; row < st->nrows; row++)
		{
			BatchRow   *r = batch_row(st, row);
			bool	   *flags = row_flags(st, r);
			uint64		s = ho->serial_base + row;

			if (!flags[FLAG_PENDING])
				continue;
			if (flags[FLAG_MATCHED])
				st->matched_bits[s / 64] |= UINT64CONST(1) << (s % 64);
			else if (ho->unmatched)
			{
				ExecClearTuple(slot);
				memset(slot->tts_values, 0, sizeof(Datum) * REC_OUTER);
				memset(slot->tts_isnull, false, REC_OUTER);
				slot->tts_values[REC_SERIAL] = Int64GetDatum((int64) s);
				for (int c = 0; c < st->nouter; c++)
				{
					slot->tts_values[REC_OUTER + c] = r->values[c];
					slot->tts_isnull[REC_OUTER + c] = flags[FLAG_HAS_NULLS] &&
						flags[FLAG_NULLS + c];
				}
				ExecStoreVirtualTuple(slot);
				tuplestore_puttupleslot(ho->unmatched, slot);
			}
			flags[FLAG_MATCHED] = true;
		}
	}
	ho->serial_base += st->nrows;
	if (st->nrows > 0)
		ho->batches++;
}

/*
 * Read the next window of sorted matches (of one leaf) into the batch
 * arrays, as the current batch: false after the last.  A window ends
 * where the batch arrays or the outer rows' share of work_mem are full.
 */
bool
eytz_heap_order_next_window(EytzJoinState *st)
{
	EytzHeapOrder *ho = st->ho;
	MemoryContext cxt = st->css.ss.ps.state->es_query_cxt;
	uint32		n = 0;
	int			leaf = -1;
	Size		used = 0;
	MemoryContext old;

	stage_enter(st, STAGE_FETCH);
	if (!ho->sorted)
	{
		if (ho->rs)
		{
			eytz_recsort_finish(ho->rs);
			eytz_recsort_stats(ho->rs, &ho->sort_kb, &ho->sort_disk);
		}
		else
		{
			TuplesortInstrumentation stats;

			tuplesort_performsort(ho->sort);
			tuplesort_get_stats(ho->sort, &stats);
			ho->sort_kb = stats.spaceUsed;
			ho->sort_disk = stats.spaceType == SORT_SPACE_TYPE_DISK;
		}
		ho->sorted = true;
		if (ho->window == NULL)
		{
			ho->window = MemoryContextAllocHuge(cxt, sizeof(EytzMatch) * st->cap);
			ho->serials = MemoryContextAllocHuge(cxt, sizeof(uint64) * st->cap);
		}
	}
	MemoryContextReset(st->batchcxt);
	old = MemoryContextSwitchTo(st->batchcxt);
	while (n < st->cap && used < st->rows_mem && !ho->sort_done)
	{
		SortedRecord rec;

		if (!next_record(st, ho, &rec))
		{
			ho->sort_done = true;
			break;
		}
		if (n > 0 && (int) (rec.key >> LEAF_SHIFT) != leaf)
		{
			ho->carry = true;	/* the next leaf's: the next window's */
			break;
		}
		leaf = (int) (rec.key >> LEAF_SHIFT);
		ho->window[n].tid = rec.key & ((UINT64CONST(1) << LEAF_SHIFT) - 1);
		ho->window[n].row = n;
		ho->window[n].unused = 0;
		ho->serials[n] = rec.serial;
		if (st->keep_rows)
		{
			BatchRow   *r = batch_row(st, n);
			bool	   *flags = row_flags(st, r);
			bool		has_nulls = false;

			r->lo = rec.lo;
			r->hi = rec.hi;
			for (int c = 0; c < st->nouter; c++)
			{
				Datum		v = rec.values[c];
				bool		isnull = rec.isnull[c];

				if (!isnull && !st->outer_byval[c])
				{
					v = datumCopy(v, false, st->outer_len[c]);
					used += MAXALIGN(datumGetSize(v, false, st->outer_len[c])) + 16;
				}
				r->values[c] = v;
				flags[FLAG_NULLS + c] = isnull;
				has_nulls |= isnull;
			}
			flags[FLAG_MATCHED] = false;
			flags[FLAG_HAS_NULLS] = has_nulls;
			flags[FLAG_PENDING] = false;
		}
		else
		{
			st->qlo[n] = rec.lo;
			st->qhi[n] = rec.hi;
		}
		used += st->row_bytes;
		n++;
	}
	MemoryContextSwitchTo(old);
	if (n == 0)
	{
		st->window_serials = NULL;
		return false;
	}
	if (st->hf != st->leaves[leaf].hf)
	{
		eytz_heap_reset(st->hf);
		eytz_join_use_leaf(st, leaf);
	}
	/* no leaf to move on to: the window is the whole "batch" */
	st->cur_leaf = st->nleaves;
	st->window_serials = st->flags_per_match ? ho->serials : NULL;
	st->nrows = n;
	st->chunk = ho->window;
	st->nchunk = n;
	st->pos = 0;
	st->block_end = 0;
	st->index_pass = false;
	st->batch_done = true;
	st->cur_tid = PG_UINT64_MAX;
	st->slot_row = NO_ROW;
	eytz_heap_set_chunk(st->hf, st->chunk, st->nchunk);
	return true;
}

/*
 * The next row put aside whose sorted matches all failed (LEFT: to be
 * null-extended; ANTI: to be emitted), its outer values in the scan slot
 * (whose inner part is NULL); false after the last
 */
bool
eytz_heap_order_next_unmatched(EytzJoinState *st)
{
	EytzHeapOrder *ho = st->ho;
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;

	if (ho == NULL || ho->unmatched == NULL)
		return false;
	while (tuplestore_gettupleslot(ho->unmatched, true, false, ho->slot))
	{
		uint64		s;

		slot_getallattrs(ho->slot);
		s = (uint64) DatumGetInt64(ho->slot->tts_values[REC_SERIAL]);
		if ((st->matched_bits[s / 64] >> (s % 64)) & 1)
			continue;
		for (int c = 0; c < st->nouter; c++)
		{
			scan->tts_values[c] = ho->slot->tts_values[REC_OUTER + c];
			scan->tts_isnull[c] = ho->slot->tts_isnull[REC_OUTER + c];
		}
		st->slot_row = NO_ROW;
		if (TTS_EMPTY(scan))
			ExecStoreVirtualTuple(scan);
		st->css.ss.ps.ps_ExprContext->ecxt_scantuple = scan;
		return true;
	}
	return false;
}

/* EXPLAIN ANALYZE: what the scans' sorts did */
void
eytz_heap_order_report(EytzJoinState *st, EytzJoinReport *r)
{
	if (st->ho == NULL)
		return;
	r->sorted_batches += st->ho->batches;
	r->sorted_matches += st->ho->matches;
	r->sort_kb = Max(r->sort_kb, st->ho->sort_kb);
	r->sort_disk |= st->ho->sort_disk;
}

/*
 * End the scan's sort and rows put aside (rescan, end); the mode is chosen
 * again by the next scan.  The counters stay for EXPLAIN.
 */
void
eytz_heap_order_reset(EytzJoinState *st)
{
	EytzHeapOrder *ho = st->ho;

	st->heap_order = st->heap_order_decided = false;
	st->window_serials = NULL;
	st->outer_rows = 0;
	if (ho == NULL)
		return;
	if (ho->sort)
		tuplesort_end(ho->sort);
	if (ho->rs)
		eytz_recsort_end(ho->rs);
	if (ho->unmatched)
		tuplestore_end(ho->unmatched);
	ho->sort = NULL;
	ho->rs = NULL;
	ho->unmatched = NULL;
	if (ho->nbitwords > 0)
		memset(st->matched_bits, 0, ho->nbitwords * sizeof(uint64));
}
