/*
 * eytzarrayscan.c
 *		Index scans of many key ranges ("k = ANY(array)", "k IN (...)") as
 *		batched lookups through the lookup seam (eytzlookup.h).
 *
 * The scan keys have already become sorted, disjoint key ranges
 * (eytzkeys.c: the array's keys sorted and deduplicated once).  Instead of
 * one descent from the root per range, as eytzcursor.c's cursor does, the
 * ranges go to the lookup seam in slices of at most a work_mem's worth, and
 * each slice is answered by one batched walk of the view the seam chooses
 * for that many keys: the index pages for a few, the CPU image or the GPU
 * (or the eytzgpu service) for many, as the batched join does.  Matches come
 * back a chunk at a time, so memory stays bounded whatever the duplicates,
 * and each chunk is sorted by TID (radix sort) before it is returned: the
 * heap, and for an index-only scan the visibility map, are then read in
 * physical order (in key order every match would look up another map page
 * in the buffer mapping).
 *
 * The seam's views may be copies taken before this scan's snapshot (a cached
 * image, a GPU copy, the service's copy), so the scan asks for the matches'
 * keys (eytz_lookup_want_columns), which makes the seam take copies that
 * hold every tombstone the metapage counts, and asks after each chunk
 * whether a VACUUM has tombstoned anything since (eytz_lookup_chunk_current).
 * A chunk that is current holds only entries that were live after the
 * snapshot was taken: a TID whose heap slot VACUUM frees later can only be
 * reused by a tuple this snapshot does not see, so the executor needs no
 * recheck (as for btree, which drops its page pins under MVCC snapshots).  A
 * chunk that is not current is resolved against the index as it is now:
 * the chunk's queries are searched again through the pages (eytzcursor.c),
 * and a match whose TID is no longer among their entries is dropped.
 *
 * Index-only scans also need each match's key and included values (the key
 * of a match of a point query is the query's; a GPU copy stages no keys),
 * and the guarantee (held by the caller's EYTZ_IOS_LOCK_BLKNO lock: eytzscan.c)
 * that VACUUM removes none of the chunk's entries until the executor is done
 * with them.  Matches the seam gives no values for (pending entries, which
 * it read when the view was pinned, and a GPU copy that does not stage
 * them) are resolved through the pages in the same way, under that lock.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzinclude.h"
#include "eytzlookup.h"

/* matches read back from the pages per call while resolving a chunk */
#define RESOLVE_PIECE	4096

struct EytzArrayScan
{
	Relation	index;
	MemoryContext cxt;
	EytzRange  *ranges;
	int			nranges;
	int			next_range;		/* first range of the next slice */
	bool		want_values;	/* index-only: keys and included values */
	int			ncols;
	EytzLookup *lk;

	/* the slice in the seam: its queries, rows 0..slice_n-1 */
	uint32		slice_cap;
	uint32		slice_n;		/* 0: none submitted */
	uint64	   *lo;
	uint64	   *hi;
	uint32	   *rows;

	/* per chunk: each match's batch row, and whether it must be resolved */
	int			chunk_cap;
	uint32	   *match_rows;
	bool	   *need;
	bool	   *found;
	EytzMatch  *order;			/* the matches to resolve or sort, by TID (and scratch) */
	uint64	   *sort_keys;		/* index-only: the keys and values in TID order */
	Datum	   *sort_values;
	bool	   *sort_isnull;
};

/* Queries a slice holds: what work_mem allows the seam's query order */
static uint32
slice_size(int nranges)
{
	/* lo, hi, row here, and the seam's query order and its sort scratch */
	Size		per_query = 2 * sizeof(uint64) + sizeof(uint32) + 2 * sizeof(EytzMatch);
	Size		n = (Size) work_mem * 1024 / per_query;

	return (uint32) Min((Size) nranges, Max(n, 1024));
}

/*
 * Begin a scan of the sorted, disjoint ranges[0..nranges) (copied); with
 * want_values, each match's key and included values are returned too.
 * Memory comes from a child of the current context.
 */
EytzArrayScan *
eytz_array_scan_begin(Relation index, const EytzRange *ranges, int nranges,
					  bool want_values)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "eytzgpu array scan",
											  ALLOCSET_DEFAULT_SIZES);
	EytzArrayScan *a = MemoryContextAllocZero(cxt, sizeof(EytzArrayScan));
	uint32		ncols;

	a->index = index;
	a->cxt = cxt;
	a->ranges = eytz_scratch_alloc(cxt, sizeof(EytzRange) * Max(nranges, 1));
	memcpy(a->ranges, ranges, sizeof(EytzRange) * nranges);
	a->nranges = nranges;
	a->want_values = want_values;
	a->ncols = eytz_include_count(index);
	a->slice_cap = slice_size(nranges);
	a->lo = eytz_scratch_alloc(cxt, sizeof(uint64) * a->slice_cap);
	a->hi = eytz_scratch_alloc(cxt, sizeof(uint64) * a->slice_cap);
	a->rows = eytz_scratch_alloc(cxt, sizeof(uint32) * a->slice_cap);
	/* the view is chosen for every key the scan will look up */
	a->lk = eytz_lookup_begin(index, (double) nranges, 0, cxt);
	ncols = want_values ? (uint32) a->ncols : 0;
	eytz_lookup_want_columns(a->lk, ncols == 0 ? 0 : (1U << ncols) - 1, want_values);
	return a;
}

/* Submit the next slice of ranges to the seam */
static void
submit_slice(EytzArrayScan *a)
{
	uint32		n = (uint32) Min((int64) a->slice_cap,
								 (int64) a->nranges - a->next_range);
	uint32		i;

	for (i = 0; i < n; i++)
	{
		a->lo[i] = a->ranges[a->next_range + i].lo;
		a->hi[i] = a->ranges[a->next_range + i].hi;
		a->rows[i] = i;
	}
	a->next_range += n;
	a->slice_n = n;
	eytz_lookup_submit(a->lk, a->lo, a->hi, a->rows, n);
}

/* The per-chunk arrays for max matches */
static void
chunk_arrays(EytzArrayScan *a, int max)
{
	if (a->chunk_cap >= max)
		return;
	if (a->match_rows)
	{
		eytz_scratch_free(a->match_rows);
		eytz_scratch_free(a->need);
		eytz_scratch_free(a->found);
		eytz_scratch_free(a->order);
		if (a->sort_keys)
		{
			eytz_scratch_free(a->sort_keys);
			eytz_scratch_free(a->sort_values);
			eytz_scratch_free(a->sort_isnull);
		}
	}
	a->match_rows = eytz_scratch_alloc(a->cxt, sizeof(uint32) * max);
	a->need = eytz_scratch_alloc(a->cxt, sizeof(bool) * max);
	a->found = eytz_scratch_alloc(a->cxt, sizeof(bool) * max);
	a->order = eytz_scratch_alloc(a->cxt, sizeof(EytzMatch) * 2 * (Size) max);
	a->sort_keys = NULL;
	if (a->want_values)
	{
		Size		m = Max(a->ncols, 1);

		a->sort_keys = eytz_scratch_alloc(a->cxt, sizeof(uint64) * max);
		a->sort_values = eytz_scratch_alloc(a->cxt, sizeof(Datum) * m * max);
		a->sort_isnull = eytz_scratch_alloc(a->cxt, sizeof(bool) * m * max);
	}
	a->chunk_cap = max;
}

/* Position in order[0..n) (sorted by tid) of packed TID t, or -1 */
static int
find_tid(const EytzMatch *order, int n, uint64 t)
{
	int			lo = 0,
				hi = n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (order[mid].tid < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && order[lo].tid == t ? lo : -1;
}

/*
 * Resolve the matches i of tids[0..n) with need[i] against the index as it
 * is now: search their queries' ranges through the pages, keep the matches
 * whose TID is still an entry there (with its key and values, for an
 * index-only scan), drop the others.  Returns the new count.
 */
static int
resolve_chunk(EytzArrayScan *a, ItemPointerData *tids, uint64 *keys,
			  Datum *values, bool *isnull, int n)
{
	int			m = Max(a->ncols, 1);
	bool	   *slice_rows = palloc0(sizeof(bool) * a->slice_n);
	EytzRange  *ranges;
	int			nr = 0,
				nneed = 0,
				out = 0,
				i;
	uint32		r;
	EytzSearch *s;
	ItemPointerData *rt = palloc(sizeof(ItemPointerData) * RESOLVE_PIECE);
	uint64	   *rk = keys ? palloc(sizeof(uint64) * RESOLVE_PIECE) : NULL;
	Datum	   *rv = keys ? palloc(sizeof(Datum) * RESOLVE_PIECE * m) : NULL;
	bool	   *rn = keys ? palloc(sizeof(bool) * RESOLVE_PIECE * m) : NULL;
	int			got;

	for (i = 0; i < n; i++)
	{
		a->found[i] = false;
		if (!a->need[i])
			continue;
		slice_rows[a->match_rows[i]] = true;
		a->order[nneed].tid = eytz_tid_pack(&tids[i]);
		a->order[nneed].row = (uint32) nneed;
		a->order[nneed].unused = (uint32) i;
		nneed++;
	}
	eytz_match_sort_keys(a->order, (uint32) nneed, a->order + a->chunk_cap);

	/* the slice's queries are sorted and disjoint: so are these */
	ranges = MemoryContextAllocHuge(CurrentMemoryContext,
									sizeof(EytzRange) * Max(a->slice_n, 1));
	for (r = 0; r < a->slice_n; r++)
		if (slice_rows[r])
		{
			ranges[nr].lo = a->lo[r];
			ranges[nr].hi = a->hi[r];
			nr++;
		}
	s = eytz_search_begin(a->index, ranges, nr);
	while ((got = eytz_search_next_values(s, rt, rk, rv, rn, RESOLVE_PIECE)) > 0)
	{
		int			j;

		for (j = 0; j < got; j++)
		{
			int			p = find_tid(a->order, nneed, eytz_tid_pack(&rt[j]));

			if (p < 0)
				continue;
			i = (int) a->order[p].unused;
			a->found[i] = true;
			if (keys)
			{
				keys[i] = rk[j];
				memcpy(&values[(Size) i * m], &rv[(Size) j * m], sizeof(Datum) * a->ncols);
				memcpy(&isnull[(Size) i * m], &rn[(Size) j * m], sizeof(bool) * a->ncols);
			}
		}
		CHECK_FOR_INTERRUPTS();
	}
	eytz_search_end(s);

	for (i = 0; i < n; i++)
	{
		if (a->need[i] && !a->found[i])
			continue;
		if (out != i)
		{
			tids[out] = tids[i];
			if (keys)
			{
				keys[out] = keys[i];
				memmove(&values[(Size) out * m], &values[(Size) i * m], sizeof(Datum) * a->ncols);
				memmove(&isnull[(Size) out * m], &isnull[(Size) i * m], sizeof(bool) * a->ncols);
			}
		}
		out++;
	}
	pfree(slice_rows);
	pfree(ranges);
	pfree(rt);
	if (keys)
	{
		pfree(rk);
		pfree(rv);
		pfree(rn);
	}
	return out;
}

/* Sort tids[0..n) (and their keys and values, if any) by TID */
static void
sort_chunk(EytzArrayScan *a, ItemPointerData *tids, uint64 *keys,
		   Datum *values, bool *isnull, int n)
{
	EytzMatch  *order = a->order;
	Size		m = Max(a->ncols, 1);
	int			i;

	for (i = 0; i < n; i++)
	{
		order[i].tid = eytz_tid_pack(&tids[i]);
		order[i].row = (uint32) i;
		order[i].unused = 0;
	}
	eytz_match_sort_keys(order, (uint32) n, order + a->chunk_cap);
	for (i = 0; i < n; i++)
		eytz_tid_unpack(order[i].tid, &tids[i]);
	if (keys == NULL)
		return;
	for (i = 0; i < n; i++)
	{
		Size		from = order[i].row;

		a->sort_keys[i] = keys[from];
		memcpy(&a->sort_values[i * m], &values[from * m], sizeof(Datum) * a->ncols);
		memcpy(&a->sort_isnull[i * m], &isnull[from * m], sizeof(bool) * a->ncols);
	}
	memcpy(keys, a->sort_keys, sizeof(uint64) * n);
	memcpy(values, a->sort_values, sizeof(Datum) * m * n);
	memcpy(isnull, a->sort_isnull, sizeof(bool) * m * n);
}

/*
 * Heap blocks a visibility map page covers, as visibilitymap.c counts them
 * (its HEAPBLOCKS_PER_PAGE is its own): two bits a block in the page's
 * space after the header
 */
#define VM_HEAP_BLOCKS ((BlockNumber) (BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * 4)
/* map pages an index-only chunk may span to be grouped by counting */
#define VM_GROUPS_MAX 64

/*
 * take_plain_chunk for an index-only scan: its visibility map checks read
 * one map page after another if the matches come grouped by the page they
 * look up, which a count per page and one scatter do, straight into tids
 * and keys (a table of up to 64 map pages: 16 GB of heap at 8 kB blocks).
 * false, having changed nothing, when the chunk spans more map pages or a
 * match lacks its key.
 */
static bool
take_by_map_page(EytzArrayScan *a, const EytzMatch *matches, int n,
				 ItemPointerData *tids, uint64 *keys, const EytzChunkColumns *cols)
{
	uint32		start[VM_GROUPS_MAX + 1];
	BlockNumber lo = InvalidBlockNumber,
				hi = 0,
				first;
	uint32		ngroups;
	int			i;

	for (i = 0; i < n; i++)
	{
		uint32		p = matches[i].unused;
		uint32		row = matches[i].row;
		BlockNumber b = eytz_tid_block(matches[i].tid);

		/* a match without its key is known by its point query's */
		if (!cols->have[p] && a->lo[row] != a->hi[row])
			return false;
		lo = Min(lo, b);
		hi = Max(hi, b);
	}
	if (n == 0)
		return true;
	first = lo / VM_HEAP_BLOCKS;
	ngroups = hi / VM_HEAP_BLOCKS - first + 1;
	if (ngroups > VM_GROUPS_MAX)
		return false;
	memset(start, 0, sizeof(uint32) * (ngroups + 1));
	for (i = 0; i < n; i++)
		start[eytz_tid_block(matches[i].tid) / VM_HEAP_BLOCKS - first + 1]++;
	for (i = 1; i <= (int) ngroups; i++)
		start[i] += start[i - 1];
	for (i = 0; i < n; i++)
	{
		uint32		p = matches[i].unused;
		uint32		at = start[eytz_tid_block(matches[i].tid) / VM_HEAP_BLOCKS - first]++;

		eytz_tid_unpack(matches[i].tid, &tids[at]);
		keys[at] = cols->have[p] ? cols->keys[p] : a->lo[matches[i].row];
	}
	return true;
}

/*
 * take_chunk's common case: a current chunk whose matches all have their
 * keys (or need none), without INCLUDE values to return.  The matches are
 * sorted by TID with their place in the chunk and batch row riding along,
 * and the keys are read in TID order: no per-match arrays to fill and
 * permute.
 * Returns false, having changed nothing, when the chunk needs take_chunk.
 */
static bool
take_plain_chunk(EytzArrayScan *a, const EytzMatch *matches, int n,
				 ItemPointerData *tids, uint64 *keys)
{
	const EytzChunkColumns *cols = eytz_lookup_columns(a->lk);
	EytzMatch  *order;
	int			i;

	if ((keys && a->ncols > 0) || !eytz_lookup_chunk_current(a->lk))
		return false;
	if (keys && take_by_map_page(a, matches, n, tids, keys, cols))
		return true;
	chunk_arrays(a, n);
	order = a->order;
	for (i = 0; i < n; i++)
	{
		uint32		p = matches[i].unused;
		uint32		row = matches[i].row;

		/* a match without its key is known by its point query's */
		if (keys && !cols->have[p] && a->lo[row] != a->hi[row])
			return false;
		order[i].tid = matches[i].tid;
		order[i].row = row;
		order[i].unused = p;
	}
	/* an index-only scan needs only the visibility map read in order */
	if (keys)
		eytz_match_group_blocks(order, (uint32) n, order + a->chunk_cap);
	else
		eytz_match_sort_keys(order, (uint32) n, order + a->chunk_cap);
	for (i = 0; i < n; i++)
	{
		eytz_tid_unpack(order[i].tid, &tids[i]);
		if (keys)
			keys[i] = cols->have[order[i].unused] ?
				cols->keys[order[i].unused] : a->lo[order[i].row];
	}
	return true;
}

/*
 * Take the seam's chunk m[0..n) into tids (and, for an index-only scan,
 * keys and values[i * m + c] / isnull, as eytz_search_next_values gives
 * them); returns how many remain after resolving (see the file header)
 */
static int
take_chunk(EytzArrayScan *a, const EytzMatch *matches, int n,
		   ItemPointerData *tids, uint64 *keys, Datum *values, bool *isnull)
{
	const EytzChunkColumns *cols = eytz_lookup_columns(a->lk);
	bool		current = eytz_lookup_chunk_current(a->lk);
	bool		any = false;
	int			m = Max(a->ncols, 1);
	int			i,
				c;

	chunk_arrays(a, n);
	for (i = 0; i < n; i++)
	{
		uint32		p = matches[i].unused;
		uint32		row = matches[i].row;

		/*
		 * A match of a point query [lo, lo] has the key lo: an index-only
		 * scan without INCLUDE columns needs nothing else from a copy that
		 * carries no keys (the GPU's, pending entries)
		 */
		bool		key_known = keys && !cols->have[p] && a->ncols == 0 &&
			a->lo[row] == a->hi[row];

		eytz_tid_unpack(matches[i].tid, &tids[i]);
		a->match_rows[i] = row;
		a->need[i] = !current || (keys && !cols->have[p] && !key_known);
		any |= a->need[i];
		if (key_known)
			keys[i] = a->lo[row];
		else if (keys && cols->have[p])
		{
			keys[i] = cols->keys[p];
			for (c = 0; c < a->ncols; c++)
			{
				values[(Size) i * m + c] = cols->values[c][p];
				isnull[(Size) i * m + c] = cols->isnull[c][p];
			}
		}
	}
	if (any)
		n = resolve_chunk(a, tids, keys, values, isnull, n);
	if (n > 1)
		sort_chunk(a, tids, keys, values, isnull, n);
	return n;
}

/*
 * Up to max more matches, sorted by TID; 0 when there are no more.  keys, values and isnull as eytz_search_next_values (NULL unless
 * the scan wants values).
 */
int
eytz_array_scan_next(EytzArrayScan *a, ItemPointerData *tids, uint64 *keys,
					 Datum *values, bool *isnull, int max)
{
	Assert(keys == NULL || a->want_values);
	for (;;)
	{
		const EytzMatch *matches;
		uint32		n;
		int			got;

		if (a->slice_n == 0)
		{
			if (a->next_range >= a->nranges)
				return 0;
			submit_slice(a);
		}
		n = eytz_lookup_next(a->lk, (uint32) max, &matches);
		if (n == 0)
		{
			a->slice_n = 0;
			continue;
		}
		if (take_plain_chunk(a, matches, (int) n, tids, keys))
			return (int) n;
		got = take_chunk(a, matches, (int) n, tids, keys, values, isnull);
		if (got > 0)
			return got;
		CHECK_FOR_INTERRUPTS();
	}
}

void
eytz_array_scan_end(EytzArrayScan *a)
{
	eytz_lookup_end(a->lk);
	MemoryContextDelete(a->cxt);
}
