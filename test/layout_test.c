/*
 * layout_test.c
 *		CPU check of the shared Eytzinger layout math (cuda/eytz_layout.h).
 *
 * For every supported fan-out and n from 0 to a few thousand (plus sizes
 * around k^m), the closed-form inverse permutation eytz_sorted_rank() must
 * equal a plain recursive in-order construction of the same complete tree,
 * and the navigation helpers must agree with it.  Prints one
 * "N passed, N failed" line; exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "eytz_layout.h"

static uint64_t next_rank;

/* In-order walk of the implicit tree: slot s + j holds the next rank */
static void
fill_inorder(uint64_t s, uint32_t k, uint64_t n, uint64_t *rank_of_slot)
{
	uint32_t	j;

	if (s >= n)
		return;
	for (j = 0; j < k - 1; j++)
	{
		fill_inorder(eytz_child(s, j, k), k, n, rank_of_slot);
		if (s + j < n)
			rank_of_slot[s + j] = next_rank++;
	}
	fill_inorder(eytz_child(s, k - 1, k), k, n, rank_of_slot);
}

static int
check_size(uint64_t n, uint32_t k, uint64_t *ref, char *seen)
{
	EytzShape	shape = eytz_shape(n, k);
	uint64_t	t;
	uint32_t	l;

	next_rank = 0;
	fill_inorder(0, k, n, ref);
	if (next_rank != n)
	{
		printf("n=%llu k=%u: recursive construction placed %llu entries\n",
			   (unsigned long long) n, k, (unsigned long long) next_rank);
		return 0;
	}
	for (t = 0; t < n; t++)
		seen[t] = 0;
	for (t = 0; t < n; t++)
	{
		uint64_t	r = eytz_sorted_rank(&shape, t);

		if (r != ref[t] || r >= n || seen[r])
		{
			printf("n=%llu k=%u slot %llu: rank %llu, expected %llu\n",
				   (unsigned long long) n, k, (unsigned long long) t,
				   (unsigned long long) r, (unsigned long long) ref[t]);
			return 0;
		}
		seen[r] = 1;
		if (eytz_level_start(eytz_level_of(t, k), k) > t ||
			eytz_level_start(eytz_level_of(t, k) + 1, k) <= t)
		{
			printf("n=%llu k=%u slot %llu: bad level\n",
				   (unsigned long long) n, k, (unsigned long long) t);
			return 0;
		}
	}
	/* every level is sorted and levels partition [0, n) */
	t = 0;
	for (l = 0; l < shape.levels; l++)
	{
		uint64_t	s = eytz_level_start(l, k);
		uint64_t	e = eytz_level_end(l, k, n);

		if (s != t)
		{
			printf("n=%llu k=%u level %u starts at %llu\n",
				   (unsigned long long) n, k, l, (unsigned long long) s);
			return 0;
		}
		for (t = s + 1; t < e; t++)
			if (ref[t] <= ref[t - 1])
			{
				printf("n=%llu k=%u level %u not sorted\n",
					   (unsigned long long) n, k, l);
				return 0;
			}
		t = e;
	}
	if (t != n || (n > 0 && shape.levels != eytz_level_of(n - 1, k) + 1))
	{
		printf("n=%llu k=%u: levels do not cover the array\n",
			   (unsigned long long) n, k);
		return 0;
	}
	return 1;
}

int
main(void)
{
	const uint32_t fanouts[] = {2, 3, 5, 9, 17, 33};
	uint64_t	maxn = 70000;
	uint64_t   *ref = malloc(sizeof(uint64_t) * maxn);
	char	   *seen = malloc(maxn);
	int			passed = 0,
				failed = 0;
	size_t		f;

	for (f = 0; f < sizeof(fanouts) / sizeof(fanouts[0]); f++)
	{
		uint32_t	k = fanouts[f];
		uint64_t	n,
					pw;

		if (!eytz_fanout_valid(k))
		{
			printf("fan-out %u rejected\n", k);
			failed++;
			continue;
		}
		for (n = 0; n <= 3000; n++)
			check_size(n, k, ref, seen) ? passed++ : failed++;
		/* edges around k^m - 1, where levels fill up */
		for (pw = k; pw - 1 + 2 < maxn; pw *= k)
			for (n = pw - 3; n <= pw + 1; n++)
				if (n > 3000)
					check_size(n, k, ref, seen) ? passed++ : failed++;
	}
	if (eytz_fanout_valid(4) || eytz_fanout_valid(1) || eytz_fanout_valid(65))
	{
		printf("invalid fan-out accepted\n");
		failed++;
	}
	printf("layout: %d passed, %d failed\n", passed, failed);
	free(ref);
	free(seen);
	return failed ? 1 : 0;
}
