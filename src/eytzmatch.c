/*
 * eytzmatch.c
 *		Sorting the batched join's matches by (heap TID, batch row).
 *
 * An LSD radix sort with 16-bit digits that skips the digits every element
 * shares (a batch's TIDs share their high block bits, its rows their high
 * row bits): all digit histograms are counted in one read of the array, then
 * each remaining digit is one scatter into the other buffer.  Small arrays
 * take qsort, for which a 64k-bucket histogram does not pay.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "eytzmatch.h"

#define RADIX_BITS	16
#define RADIX_SIZE	(1 << RADIX_BITS)
/* digits: 0-1 the row (low first), 2-5 the tid */
#define NDIGITS		6
#define QSORT_BELOW 2048

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

/* qsort is not stable: break ties on tid by position (kept in "unused") */
static int
cmp_tid_pos(const void *x, const void *y)
{
	const EytzMatch *a = x;
	const EytzMatch *b = y;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return a->unused < b->unused ? -1 : a->unused > b->unused;
}

static inline uint32
digit(const EytzMatch *e, int d)
{
	if (d < 2)
		return (e->row >> (d * RADIX_BITS)) & (RADIX_SIZE - 1);
	return (uint32) (e->tid >> ((d - 2) * RADIX_BITS)) & (RADIX_SIZE - 1);
}

/* LSD radix sort over digits [first, NDIGITS) */
static void
radix_sort(EytzMatch *m, uint32 n, EytzMatch *tmp, int first)
{
	static uint32 hist[NDIGITS][RADIX_SIZE];
	EytzMatch  *src = m;
	EytzMatch  *dst = tmp;
	uint32		i;
	int			d;

	for (d = first; d < NDIGITS; d++)
		memset(hist[d], 0, sizeof(hist[d]));
	for (i = 0; i < n; i++)
		for (d = first; d < NDIGITS; d++)
			hist[d][digit(&m[i], d)]++;
	for (d = first; d < NDIGITS; d++)
	{
		uint32		sum = 0;
		uint32		b;
		EytzMatch  *swap;

		if (hist[d][digit(&m[0], d)] == n)
			continue;			/* every element has this digit */
		for (b = 0; b < RADIX_SIZE; b++)
		{
			uint32		c = hist[d][b];

			hist[d][b] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			dst[hist[d][digit(&src[i], d)]++] = src[i];
		swap = src;
		src = dst;
		dst = swap;
		CHECK_FOR_INTERRUPTS();
	}
	if (src != m)
		memcpy(m, src, sizeof(EytzMatch) * n);
}

uint32
eytz_match_sort(EytzMatch *m, uint32 n, EytzMatch *tmp)
{
	uint32		i,
				out;

	if (n < 2)
		return n;
	if (n < QSORT_BELOW)
		qsort(m, n, sizeof(EytzMatch), cmp_tid_row);
	else
		radix_sort(m, n, tmp, 0);
	/* the same entry seen twice (a stale copy and the pending list) */
	out = 1;
	for (i = 1; i < n; i++)
		if (m[i].tid != m[out - 1].tid || m[i].row != m[out - 1].row)
			m[out++] = m[i];
	return out;
}

void
eytz_match_sort_keys(EytzMatch *m, uint32 n, EytzMatch *tmp)
{
	uint32		i;

	if (n < 2)
		return;
	if (n < QSORT_BELOW)
	{
		for (i = 0; i < n; i++)
			m[i].unused = i;
		qsort(m, n, sizeof(EytzMatch), cmp_tid_pos);
	}
	else
		radix_sort(m, n, tmp, 2);
}
