/*
 * eytzsort.c
 *		Collecting and sorting (key, TID) pairs for builds and merges.
 *
 * Keys are order-preserving unsigned integers, so an LSD radix sort (8-bit
 * digits, passes whose digit is the same for every key skipped) sorts them
 * in linear time.  The sort is stable; runs of equal keys are then put in
 * TID order, so the layout depends only on the set of (key, TID) pairs, not
 * on the order the heap scan produced them in.
 *
 * A build whose pairs do not fit in maintenance_work_mem moves them to an
 * EytzSpill instead: PostgreSQL's tuplesort, which sorts in bounded memory
 * and spills runs to disk.  A pair is sorted as one 16-byte uuid datum, the
 * key then the packed TID, both big-endian: uuid order (memcmp) is then the
 * (key, TID) order of the radix sort, unsigned keys included, and uuid's
 * abbreviated keys (its first 8 bytes: the key) make the comparisons cheap.
 *
 * The pairs of an index with INCLUDE columns carry their row numbers (the
 * order they were added in, an index into the build's EytzRowValues), which
 * the sort moves with them; spilled, they are sorted as heap tuples of the
 * pair's uuid and the included values.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"
#include "utils/uuid.h"

#include "eytzcompat.h"
#include "eytzinclude.h"

/* bytes per pair while sorting: keys and TIDs, twice (radix ping-pong) */
#define EYTZ_SORT_BYTES_PER_PAIR (4 * sizeof(uint64))

struct EytzSpill
{
	Tuplesortstate *sort;
	uint64		n;
	int			ncols;			/* included columns: a heap tuplesort */
	TupleTableSlot *in;			/* (pair, values...) put */
	TupleTableSlot *out;		/* and read back */
};

void
eytz_pairs_init(EytzPairs *pairs, Size mem_limit)
{
	pairs->n = 0;
	pairs->cap = 1024;
	pairs->mem_limit = mem_limit;
	pairs->keys = palloc(sizeof(uint64) * pairs->cap);
	pairs->tids = palloc(sizeof(uint64) * pairs->cap);
	pairs->rows = NULL;
	pairs->extra_bytes = 0;
}

/*
 * Make the pairs carry their row numbers, each row taking row_bytes more
 * (its included values) besides the row number's two copies.
 */
void
eytz_pairs_with_rows(EytzPairs *pairs, Size row_bytes)
{
	Assert(pairs->n == 0);
	pairs->rows = palloc(sizeof(uint64) * pairs->cap);
	pairs->extra_bytes = 2 * sizeof(uint64) + row_bytes;
}

/*
 * Would one more pair take the pairs (with the radix sort's second copy) over
 * their memory limit?
 */
bool
eytz_pairs_full(const EytzPairs *pairs)
{
	return pairs->mem_limit > 0 &&
		(pairs->n + 1) * (EYTZ_SORT_BYTES_PER_PAIR + pairs->extra_bytes) >
		pairs->mem_limit;
}

/*
 * Would ntuples pairs (an estimate, e.g. the table's reltuples) fit in the
 * pairs' memory limit?
 */
bool
eytz_pairs_would_fit(const EytzPairs *pairs, double ntuples)
{
	return pairs->mem_limit == 0 ||
		ntuples * (EYTZ_SORT_BYTES_PER_PAIR + pairs->extra_bytes) <=
		(double) pairs->mem_limit;
}

/* Append a pair; callers with a mem_limit check eytz_pairs_full() first */
void
eytz_pairs_add(EytzPairs *pairs, uint64 key, ItemPointer tid)
{
	Assert(!eytz_pairs_full(pairs));
	if (pairs->n == pairs->cap)
	{
		uint64		newcap = pairs->cap * 2;

		/* the last doubling stops at the limit */
		if (pairs->mem_limit > 0)
			newcap = Max(pairs->n + 1,
						 Min(newcap, pairs->mem_limit /
							 (EYTZ_SORT_BYTES_PER_PAIR + pairs->extra_bytes)));
		pairs->keys = repalloc_huge(pairs->keys, sizeof(uint64) * newcap);
		pairs->tids = repalloc_huge(pairs->tids, sizeof(uint64) * newcap);
		if (pairs->rows)
			pairs->rows = repalloc_huge(pairs->rows, sizeof(uint64) * newcap);
		pairs->cap = newcap;
	}
	pairs->keys[pairs->n] = key;
	pairs->tids[pairs->n] = eytz_tid_pack(tid);
	if (pairs->rows)
		pairs->rows[pairs->n] = pairs->n;
	pairs->n++;
}

void
eytz_pairs_free(EytzPairs *pairs)
{
	if (pairs->keys)
		pfree(pairs->keys);
	if (pairs->tids)
		pfree(pairs->tids);
	if (pairs->rows)
		pfree(pairs->rows);
	pairs->keys = pairs->tids = pairs->rows = NULL;
	pairs->n = pairs->cap = 0;
}

static int
tid_cmp(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* (TID, row) of a run of equal keys, sorted by TID */
typedef struct TidRow
{
	uint64		tid;
	uint64		row;
} TidRow;

/* A run of equal keys in TID order, the rows moving with their TIDs */
static void
sort_run_with_rows(uint64 *ts, uint64 *rs, uint64 n)
{
	TidRow	   *tr = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(TidRow) * n);
	uint64		i;

	for (i = 0; i < n; i++)
	{
		tr[i].tid = ts[i];
		tr[i].row = rs[i];
	}
	qsort(tr, n, sizeof(TidRow), tid_cmp);
	for (i = 0; i < n; i++)
	{
		ts[i] = tr[i].tid;
		rs[i] = tr[i].row;
	}
	pfree(tr);
}

void
eytz_pairs_sort(EytzPairs *pairs)
{
	uint64		n = pairs->n;
	uint64	   *hist;
	uint64	   *k2,
			   *t2,
			   *r2 = NULL;
	uint64	   *ks = pairs->keys,
			   *ts = pairs->tids,
			   *rs = pairs->rows;
	uint64		i;
	int			d;

	if (n < 2)
		return;

	/* one pass for all eight digit histograms */
	hist = palloc0(sizeof(uint64) * 8 * 256);
	for (i = 0; i < n; i++)
	{
		uint64		k = ks[i];

		for (d = 0; d < 8; d++)
			hist[d * 256 + ((k >> (d * 8)) & 0xFF)]++;
		if ((i & 0xFFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}

	k2 = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * n);
	t2 = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * n);
	if (rs)
		r2 = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * n);
	for (d = 0; d < 8; d++)
	{
		uint64	   *h = &hist[d * 256];
		uint64		sum = 0;
		int			b;
		uint64	   *tmp;

		/* all keys share this digit: the pass would not move anything */
		if (h[(ks[0] >> (d * 8)) & 0xFF] == n)
			continue;
		for (b = 0; b < 256; b++)
		{
			uint64		c = h[b];

			h[b] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
		{
			uint64		pos = h[(ks[i] >> (d * 8)) & 0xFF]++;

			k2[pos] = ks[i];
			t2[pos] = ts[i];
			if (rs)
				r2[pos] = rs[i];
		}
		tmp = ks;
		ks = k2;
		k2 = tmp;
		tmp = ts;
		ts = t2;
		t2 = tmp;
		tmp = rs;
		rs = r2;
		r2 = tmp;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(k2);
	pfree(t2);
	if (r2)
		pfree(r2);
	pfree(hist);
	pairs->keys = ks;
	pairs->tids = ts;
	pairs->rows = rs;

	/* equal keys in TID order; the heap scan mostly delivered them so */
	for (i = 0; i < n;)
	{
		uint64		j = i + 1;
		bool		sorted = true;

		while (j < n && ks[j] == ks[i])
		{
			if (ts[j] < ts[j - 1])
				sorted = false;
			j++;
		}
		if (!sorted && rs)
			sort_run_with_rows(&ts[i], &rs[i], j - i);
		else if (!sorted)
			qsort(&ts[i], j - i, sizeof(uint64), tid_cmp);
		i = j;
	}
}

/*
 * Start a spilled sort of (key, TID) pairs, with the included values of inc
 * (NULL for none), using at most work_mem kilobytes of memory (more runs go
 * to temporary files).
 */
EytzSpill *
eytz_spill_begin(int work_mem, const EytzInclude *inc)
{
	EytzSpill  *spill = palloc0(sizeof(EytzSpill));
	TypeCacheEntry *uuid = lookup_type_cache(UUIDOID, TYPECACHE_LT_OPR);

	spill->ncols = inc ? inc->ncols : 0;
	if (spill->ncols == 0)
		spill->sort = tuplesort_begin_datum(UUIDOID, uuid->lt_opr, InvalidOid,
											false, work_mem, NULL, TUPLESORT_NONE);
	else
	{
		TupleDesc	desc = CreateTemplateTupleDesc(1 + spill->ncols);
		AttrNumber	attno = 1;
		Oid			collation = InvalidOid;
		bool		nulls_first = false;
		int			c;

		TupleDescInitEntry(desc, 1, "pair", UUIDOID, -1, 0);
		for (c = 0; c < spill->ncols; c++)
			TupleDescInitEntry(desc, 2 + c, NULL, inc->typid[c], -1, 0);
		spill->sort = tuplesort_begin_heap(desc, 1, &attno, &uuid->lt_opr,
										   &collation, &nulls_first, work_mem,
										   NULL, TUPLESORT_NONE);
		spill->in = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
		spill->out = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	}
	return spill;
}

static void
spill_put(EytzSpill *spill, uint64 key, uint64 packed_tid, const Datum *values,
		  const bool *isnull)
{
	pg_uuid_t	pair;
	int			i;

	for (i = 0; i < 8; i++)
	{
		pair.data[i] = (unsigned char) (key >> (56 - 8 * i));
		pair.data[8 + i] = (unsigned char) (packed_tid >> (56 - 8 * i));
	}
	/* tuplesort copies the datum or the tuple */
	if (spill->ncols == 0)
		tuplesort_putdatum(spill->sort, UUIDPGetDatum(&pair), false);
	else
	{
		TupleTableSlot *slot = spill->in;

		ExecClearTuple(slot);
		slot->tts_values[0] = UUIDPGetDatum(&pair);
		slot->tts_isnull[0] = false;
		memcpy(&slot->tts_values[1], values, sizeof(Datum) * spill->ncols);
		memcpy(&slot->tts_isnull[1], isnull, sizeof(bool) * spill->ncols);
		ExecStoreVirtualTuple(slot);
		tuplesort_puttupleslot(spill->sort, slot);
	}
	spill->n++;
}

void
eytz_spill_add(EytzSpill *spill, uint64 key, ItemPointer tid,
			   const Datum *values, const bool *isnull)
{
	spill_put(spill, key, eytz_tid_pack(tid), values, isnull);
}

/*
 * Move all of pairs (with their rows' included values in rv, NULL without)
 * into the spilled sort, from the end, giving their memory back as they go
 * so the sort can take it; pairs is left empty.
 */
void
eytz_spill_take(EytzSpill *spill, EytzPairs *pairs, const EytzRowValues *rv)
{
	uint64		step = Max(pairs->n / 8, 1024);
	Datum		values[EYTZ_MAX_INCLUDE];
	bool		isnull[EYTZ_MAX_INCLUDE];

	while (pairs->n > 0)
	{
		uint64		from = pairs->n > step ? pairs->n - step : 0;
		uint64		i;

		for (i = from; i < pairs->n; i++)
		{
			if (spill->ncols > 0)
				eytz_rows_get(rv, pairs->rows[i], values, isnull);
			spill_put(spill, pairs->keys[i], pairs->tids[i], values, isnull);
		}
		pairs->n = from;
		if (from > 0)
		{
			pairs->keys = repalloc_huge(pairs->keys, sizeof(uint64) * from);
			pairs->tids = repalloc_huge(pairs->tids, sizeof(uint64) * from);
			if (pairs->rows)
				pairs->rows = repalloc_huge(pairs->rows, sizeof(uint64) * from);
			pairs->cap = from;
		}
		CHECK_FOR_INTERRUPTS();
	}
	eytz_pairs_free(pairs);
}

uint64
eytz_spill_count(const EytzSpill *spill)
{
	return spill->n;
}

void
eytz_spill_sort(EytzSpill *spill)
{
	tuplesort_performsort(spill->sort);
}

/*
 * The next pair in (key, TID) order, with its included values (if the sort
 * has any); false at the end
 */
bool
eytz_spill_next(EytzSpill *spill, uint64 *key, uint64 *packed_tid,
				Datum *values, bool *isnull)
{
	Datum		datum;
	bool		null;
	pg_uuid_t  *pair;
	uint64		k = 0,
				t = 0;
	int			i;

	if (spill->ncols == 0)
	{
		if (!eytz_tuplesort_getdatum(spill->sort, true, &datum, &null))
			return false;
	}
	else
	{
		if (!tuplesort_gettupleslot(spill->sort, true, false, spill->out, NULL))
			return false;
		slot_getallattrs(spill->out);
		datum = spill->out->tts_values[0];
		memcpy(values, &spill->out->tts_values[1], sizeof(Datum) * spill->ncols);
		memcpy(isnull, &spill->out->tts_isnull[1], sizeof(bool) * spill->ncols);
	}
	pair = DatumGetUUIDP(datum);
	for (i = 0; i < 8; i++)
	{
		k = (k << 8) | pair->data[i];
		t = (t << 8) | pair->data[8 + i];
	}
	/* a pass-by-reference datum comes back as a copy of our own */
	if (spill->ncols == 0)
		pfree(pair);
	*key = k;
	*packed_tid = t;
	return true;
}

void
eytz_spill_end(EytzSpill *spill)
{
	tuplesort_end(spill->sort);
	if (spill->in)
	{
		ExecDropSingleTupleTableSlot(spill->in);
		ExecDropSingleTupleTableSlot(spill->out);
	}
	pfree(spill);
}
