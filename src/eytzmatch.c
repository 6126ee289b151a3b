/*
 * eytzmatch.c
 *		Sorting the batched join's matches by (heap TID, batch row), and the
 *		allocation of the seam's large arrays.
 *
 * An LSD radix sort over only the bits in which the elements differ (a
 * batch's TIDs share their high block bits and their high offset bits, its
 * rows their high bits): all digit histograms are counted in one read of the
 * array, then each digit is one scatter into the other buffer.  When the
 * caller's matches already come in row order among equal TIDs, the row
 * digits are skipped (the sort is stable).  Small arrays take qsort.
 */
#include "postgres.h"

#include <sys/mman.h>

#include "miscadmin.h"

#include "eytzmatch.h"

/*
 * 11-bit digits: 2048 buckets of scatter targets stay within the L1/L2 and
 * TLB reach of a core, which 16-bit digits (65536 targets) do not: measured
 * at 300k matches, 16-bit digits took twice as long despite fewer passes.
 */
#define RADIX_BITS	11
#define RADIX_SIZE	(1 << RADIX_BITS)
/* row: 3 digits, tid: 6 */
#define MAX_PASSES	9
#define QSORT_BELOW 1024

typedef struct RadixPass
{
	bool		on_row;
	int			shift;
} RadixPass;

/*
 * qsort order of matches: TID, then row (qsort is not stable: for
 * eytz_match_sort_keys, ties on tid keep the callers' numbering in "row")
 */
static int
cmp_tid_row(const void *x, const void *y)
{
	const EytzMatch *a = x;
	const EytzMatch *b = y;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	return 0;
}

/* The radix digit of e that pass p sorts on */
static inline uint32
digit(const EytzMatch *e, const RadixPass *p)
{
	return (uint32) ((p->on_row ? (uint64) e->row : e->tid) >> p->shift) & (RADIX_SIZE - 1);
}

/* Passes over the bits in which the elements differ, lowest first */
static int
add_passes(RadixPass *passes, int np, uint64 vary, bool on_row)
{
	int			lo,
				hi;

	if (vary == 0)
		return np;
	lo = __builtin_ctzll(vary);
	hi = 64 - __builtin_clzll(vary);
	for (; lo < hi; lo += RADIX_BITS)
	{
		passes[np].on_row = on_row;
		passes[np].shift = lo;
		np++;
	}
	return np;
}

/* Stable LSD radix sort by tid, and first by row when by_row */
static void
radix_sort(EytzMatch *m, uint32 n, EytzMatch *tmp, bool by_row)
{
	static uint32 hist[MAX_PASSES][RADIX_SIZE];
	RadixPass	passes[MAX_PASSES];
	EytzMatch  *src = m;
	EytzMatch  *dst = tmp;
	uint64		tid_vary = 0;
	uint32		row_vary = 0;
	uint32		i;
	int			np = 0,
				p;

	for (i = 1; i < n; i++)
	{
		tid_vary |= m[i].tid ^ m[0].tid;
		row_vary |= m[i].row ^ m[0].row;
	}
	if (by_row)
		np = add_passes(passes, np, row_vary, true);
	np = add_passes(passes, np, tid_vary, false);
	memset(hist, 0, sizeof(uint32) * RADIX_SIZE * np);
	for (i = 0; i < n; i++)
		for (p = 0; p < np; p++)
			hist[p][digit(&m[i], &passes[p])]++;
	for (p = 0; p < np; p++)
	{
		uint32		sum = 0;
		uint32		b;
		EytzMatch  *swap;

		for (b = 0; b < RADIX_SIZE; b++)
		{
			uint32		c = hist[p][b];

			hist[p][b] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[hist[p][digit(&src[i], &passes[p])]++] = src[i];
		swap = src;
		src = dst;
		dst = swap;
		CHECK_FOR_INTERRUPTS();
	}
	if (src != m)
		memcpy(m, src, sizeof(EytzMatch) * n);
}

uint32
eytz_match_sort(EytzMatch *m, uint32 n, EytzMatch *tmp, bool rows_in_order)
{
	uint32		i,
				out;

	if (n < 2)
		return n;
	if (n < QSORT_BELOW)
		qsort(m, n, sizeof(EytzMatch), cmp_tid_row);
	else
		radix_sort(m, n, tmp, !rows_in_order);
	/* the same entry seen twice */
	out = 1;
	for (i = 1; i < n; i++)
		if (m[i].tid != m[out - 1].tid || m[i].row != m[out - 1].row)
			m[out++] = m[i];
	return out;
}

void
eytz_match_sort_keys(EytzMatch *m, uint32 n, EytzMatch *tmp)
{
	if (n < 2)
		return;
	if (n < QSORT_BELOW)
		qsort(m, n, sizeof(EytzMatch), cmp_tid_row);
	else
		radix_sort(m, n, tmp, false);
}

/*
 * A large array (an image, a batch's query order, a chunk), backed by huge
 * pages where the kernel gives them on request: random probes into
 * hundreds of MB otherwise miss the TLB at nearly every level, and the
 * first touch of fresh memory costs one page fault per 4 kB (measured: a
 * fifth of a 2M-key join's time went to faults).
 */
void *
eytz_alloc_large(MemoryContext cxt, Size size)
{
	char	   *p = MemoryContextAllocHuge(cxt, size);
#ifdef MADV_HUGEPAGE
	uintptr_t	start = TYPEALIGN(4096, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN_DOWN(4096, (uintptr_t) p + size);

	if (size >= 2 * 1024 * 1024 && end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
	return p;
}
