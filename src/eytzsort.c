/*
 * eytzsort.c
 *		Collecting and sorting (key, TID) pairs for builds and merges.
 *
 * Keys are order-preserving unsigned integers, so an LSD radix sort (8-bit
 * digits, passes whose digit is the same for every key skipped) sorts them
 * in linear time.  The sort is stable; runs of equal keys are then put in
 * TID order, so the layout depends only on the set of (key, TID) pairs, not
 * on the order the heap scan produced them in.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "eytzgpu.h"

/* bytes per pair while sorting: keys and TIDs, twice (radix ping-pong) */
#define EYTZ_SORT_BYTES_PER_PAIR (4 * sizeof(uint64))

void
eytz_pairs_init(EytzPairs *pairs, Size mem_limit)
{
	pairs->n = 0;
	pairs->cap = 1024;
	pairs->mem_limit = mem_limit;
	pairs->keys = palloc(sizeof(uint64) * pairs->cap);
	pairs->tids = palloc(sizeof(uint64) * pairs->cap);
}

void
eytz_pairs_add(EytzPairs *pairs, uint64 key, ItemPointer tid)
{
	if (pairs->n == pairs->cap)
	{
		uint64		newcap = pairs->cap * 2;

		if (pairs->mem_limit > 0 &&
			newcap * EYTZ_SORT_BYTES_PER_PAIR > pairs->mem_limit &&
			(pairs->n + 1) * EYTZ_SORT_BYTES_PER_PAIR <= pairs->mem_limit)
			newcap = pairs->mem_limit / EYTZ_SORT_BYTES_PER_PAIR;
		if (pairs->mem_limit > 0 &&
			newcap * EYTZ_SORT_BYTES_PER_PAIR > pairs->mem_limit)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("eytzgpu index build needs more than maintenance_work_mem (%zu kB) for more than " UINT64_FORMAT " entries",
							pairs->mem_limit / 1024, pairs->n),
					 errdetail("An eytzgpu build sorts all (key, TID) pairs in memory, %d bytes per entry, and does not spill to disk.",
							   (int) EYTZ_SORT_BYTES_PER_PAIR),
					 errhint("Increase maintenance_work_mem to about %zu MB.",
							 (Size) (pairs->n * 2 * EYTZ_SORT_BYTES_PER_PAIR / (1024 * 1024) + 1))));
		pairs->keys = repalloc_huge(pairs->keys, sizeof(uint64) * newcap);
		pairs->tids = repalloc_huge(pairs->tids, sizeof(uint64) * newcap);
		pairs->cap = newcap;
	}
	pairs->keys[pairs->n] = key;
	pairs->tids[pairs->n] = eytz_tid_pack(tid);
	pairs->n++;
}

void
eytz_pairs_free(EytzPairs *pairs)
{
	if (pairs->keys)
		pfree(pairs->keys);
	if (pairs->tids)
		pfree(pairs->tids);
	pairs->keys = pairs->tids = NULL;
	pairs->n = pairs->cap = 0;
}

static int
tid_cmp(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

void
eytz_pairs_sort(EytzPairs *pairs)
{
	uint64		n = pairs->n;
	uint64	   *hist;
	uint64	   *k2,
			   *t2;
	uint64	   *ks = pairs->keys,
			   *ts = pairs->tids;
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
		}
		tmp = ks;
		ks = k2;
		k2 = tmp;
		tmp = ts;
		ts = t2;
		t2 = tmp;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(k2);
	pfree(t2);
	pfree(hist);
	pairs->keys = ks;
	pairs->tids = ts;

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
		if (!sorted)
			qsort(&ts[i], j - i, sizeof(uint64), tid_cmp);
		i = j;
	}
}
