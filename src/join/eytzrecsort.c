/*
 * eytzrecsort.c
 *		Fixed-width records sorted by their first 8 bytes, an unsigned key,
 *		within a memory budget.
 *
 * The heap-order join (eytzjoinsorted.c) sorts a record per heap match: its
 * (leaf, TID) key, three 8-byte fields and the outer row's values.  Where
 * every value is by value the records have one width, and sorting them
 * needs neither tuples nor a comparator: the records gathered in memory are
 * ordered by a radix sort of (key, position) pairs (eytz_match_sort_keys),
 * and past the budget each such run is written out in key order to a
 * logical tape set, the temporary files tuplesort spills to; at the end the
 * runs are merged through a binary heap of their next keys, each run read
 * back in pieces of an equal share of the budget.
 */
#include "postgres.h"

#include "utils/logtape.h"
#include "utils/memutils.h"

#include "eytzmatchsort.h"
#include "eytzrecsort.h"

/* bytes a run is written out in (records gathered in key order) */
#define WRITE_PIECE		(64 * 1024)

typedef struct RunReader
{
	LogicalTape *tape;
	char	   *buf;			/* records read back, buf[pos..len) */
	Size		pos;
	Size		len;
} RunReader;

struct EytzRecSort
{
	MemoryContext cxt;
	Size		rec_size;
	Size		mem_bytes;
	uint32		cap;			/* records a run holds in memory */
	uint32		n;				/* records in memory */
	char	   *recs;
	EytzMatch  *order;			/* (key, position) of each, and the sort's scratch */
	char	   *piece;			/* a run's records on their way out */

	LogicalTapeSet *tapes;		/* NULL until a run is written */
	RunReader  *runs;
	int			nruns;
	int			runs_cap;

	bool		finished;
	uint32		next_pos;		/* in memory: the next of order */
	int		   *heap;			/* merge: runs by their next record's key */
	int			nheap;
	int			advance;		/* the run whose record was returned last, or -1 */
	Size		read_size;		/* a run's piece read back */
	uint64		in_memory_bytes;
};

static inline uint64
rec_key(const char *rec)
{
	uint64		key;

	memcpy(&key, rec, sizeof(key));
	return key;
}

EytzRecSort *
eytz_recsort_begin(Size rec_size, int mem_kb)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "eytzgpu record sort",
											  ALLOCSET_DEFAULT_SIZES);
	EytzRecSort *rs = MemoryContextAllocZero(cxt, sizeof(EytzRecSort));
	Size		per_rec = rec_size + 2 * sizeof(EytzMatch);

	Assert(rec_size >= sizeof(uint64) && rec_size % sizeof(uint64) == 0);
	rs->cxt = cxt;
	rs->rec_size = rec_size;
	rs->mem_bytes = (Size) mem_kb * 1024;
	rs->cap = (uint32) Min((Size) PG_INT32_MAX / 2, Max(rs->mem_bytes / per_rec, 1024));
	rs->recs = MemoryContextAllocHuge(cxt, rec_size * rs->cap);
	rs->order = MemoryContextAllocHuge(cxt, sizeof(EytzMatch) * 2 * (Size) rs->cap);
	rs->advance = -1;
	return rs;
}

/* Order the records in memory: order[0..n) by key, ties in arrival order */
static void
sort_memory(EytzRecSort *rs)
{
	for (uint32 i = 0; i < rs->n; i++)
	{
		rs->order[i].tid = rec_key(rs->recs + (Size) i * rs->rec_size);
		rs->order[i].row = i;
		rs->order[i].unused = 0;
	}
	eytz_match_sort_keys(rs->order, rs->n, rs->order + rs->cap);
}

/* Write the records in memory out as one sorted run */
static void
write_run(EytzRecSort *rs)
{
	MemoryContext old = MemoryContextSwitchTo(rs->cxt);
	LogicalTape *tape;
	Size		used = 0;
	Size		piece_size = Max(WRITE_PIECE / rs->rec_size, 1) * rs->rec_size;

	if (rs->tapes == NULL)
	{
		rs->tapes = LogicalTapeSetCreate(false, NULL, -1);
		rs->piece = palloc(piece_size);
	}
	if (rs->nruns == rs->runs_cap)
	{
		rs->runs_cap = Max(8, rs->runs_cap * 2);
		rs->runs = rs->runs ? repalloc(rs->runs, sizeof(RunReader) * rs->runs_cap) :
			palloc(sizeof(RunReader) * rs->runs_cap);
	}
	tape = LogicalTapeCreate(rs->tapes);
	sort_memory(rs);
	for (uint32 i = 0; i < rs->n; i++)
	{
		memcpy(rs->piece + used, rs->recs + (Size) rs->order[i].row * rs->rec_size, rs->rec_size);
		used += rs->rec_size;
		if (used == piece_size || i + 1 == rs->n)
		{
			LogicalTapeWrite(tape, rs->piece, used);
			used = 0;
		}
	}
	memset(&rs->runs[rs->nruns], 0, sizeof(RunReader));
	rs->runs[rs->nruns++].tape = tape;
	rs->n = 0;
	MemoryContextSwitchTo(old);
}

void *
eytz_recsort_append(EytzRecSort *rs)
{
	Assert(!rs->finished);
	if (rs->n == rs->cap)
		write_run(rs);
	return rs->recs + (Size) rs->n++ * rs->rec_size;
}

/* Read run r's next piece; false at its end */
static bool
refill(EytzRecSort *rs, RunReader *run)
{
	run->len = LogicalTapeRead(run->tape, run->buf, rs->read_size);
	run->pos = 0;
	if (run->len % rs->rec_size != 0)
		elog(ERROR, "eytzgpu record sort: a run was read back torn");
	return run->len > 0;
}

static inline uint64
head_key(EytzRecSort *rs, int r)
{
	return rec_key(rs->runs[r].buf + rs->runs[r].pos);
}

/* Restore the heap's order from position i down */
static void
sift_down(EytzRecSort *rs, int i)
{
	int			r = rs->heap[i];
	uint64		key = head_key(rs, r);

	for (;;)
	{
		int			c = 2 * i + 1;

		if (c >= rs->nheap)
			break;
		if (c + 1 < rs->nheap && head_key(rs, rs->heap[c + 1]) < head_key(rs, rs->heap[c]))
			c++;
		if (head_key(rs, rs->heap[c]) >= key)
			break;
		rs->heap[i] = rs->heap[c];
		i = c;
	}
	rs->heap[i] = r;
}

void
eytz_recsort_finish(EytzRecSort *rs)
{
	MemoryContext old;

	Assert(!rs->finished);
	rs->finished = true;
	if (rs->tapes == NULL)
	{
		sort_memory(rs);
		rs->in_memory_bytes = (uint64) rs->n * rs->rec_size;
		return;
	}
	if (rs->n > 0)
		write_run(rs);
	/* the gathering arrays go: the runs' pieces share the budget */
	pfree(rs->recs);
	pfree(rs->order);
	rs->recs = NULL;
	rs->order = NULL;
	old = MemoryContextSwitchTo(rs->cxt);
	rs->read_size = Max(rs->mem_bytes / rs->nruns / rs->rec_size, 1) * rs->rec_size;
	rs->read_size = Max(rs->read_size, Max(BLCKSZ / rs->rec_size, 1) * rs->rec_size);
	rs->heap = palloc(sizeof(int) * rs->nruns);
	for (int r = 0; r < rs->nruns; r++)
	{
		RunReader  *run = &rs->runs[r];

		LogicalTapeRewindForRead(run->tape, BLCKSZ);
		run->buf = MemoryContextAllocHuge(rs->cxt, rs->read_size);
		if (refill(rs, run))
			rs->heap[rs->nheap++] = r;
	}
	MemoryContextSwitchTo(old);
	for (int i = rs->nheap / 2 - 1; i >= 0; i--)
		sift_down(rs, i);
	rs->in_memory_bytes = rs->read_size * rs->nruns;
}

const void *
eytz_recsort_next(EytzRecSort *rs)
{
	Assert(rs->finished);
	if (rs->tapes == NULL)
	{
		if (rs->next_pos >= rs->n)
			return NULL;
		return rs->recs + (Size) rs->order[rs->next_pos++].row * rs->rec_size;
	}
	if (rs->advance >= 0)
	{
		RunReader  *run = &rs->runs[rs->advance];

		run->pos += rs->rec_size;
		if (run->pos == run->len && !refill(rs, run))
		{
			/* the run is done: the heap's last run takes its place */
			rs->heap[0] = rs->heap[--rs->nheap];
		}
		if (rs->nheap > 0)
			sift_down(rs, 0);
		rs->advance = -1;
	}
	if (rs->nheap == 0)
		return NULL;
	rs->advance = rs->heap[0];
	return rs->runs[rs->advance].buf + rs->runs[rs->advance].pos;
}

void
eytz_recsort_stats(EytzRecSort *rs, int64 *kb, bool *disk)
{
	*disk = rs->tapes != NULL;
	if (rs->tapes)
		*kb = (int64) LogicalTapeSetBlocks(rs->tapes) * (BLCKSZ / 1024);
	else
		*kb = (int64) ((rs->in_memory_bytes + 1023) / 1024);
}

void
eytz_recsort_end(EytzRecSort *rs)
{
	if (rs->tapes)
		LogicalTapeSetClose(rs->tapes);
	MemoryContextDelete(rs->cxt);
}
