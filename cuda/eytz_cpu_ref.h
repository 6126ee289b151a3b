/*
 * eytz_cpu_ref.h
 *		CPU reference for the GPU kernels: build into Eytzinger order and the
 *		per-level range scan of section 5, on 64-bit keys (and the tests'
 *		random numbers).
 *
 * Plain C99 (header-only, static functions) so that the CI test (gcc, no
 * CUDA) and the GPU test use the same reference.  It is written for clarity,
 * straight from eytz_layout.h, with no shared code with the kernels.
 */
#ifndef EYTZ_CPU_REF_H
#define EYTZ_CPU_REF_H

#include <stdint.h>
#include <stdlib.h>

#include "eytz_layout.h"

typedef struct EytzRefPair
{
	uint64_t	key;
	uint64_t	pay;
} EytzRefPair;

static inline int
eytzref_cmp_pair(const void *a, const void *b)
{
	const EytzRefPair *x = (const EytzRefPair *) a;
	const EytzRefPair *y = (const EytzRefPair *) b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->pay != y->pay)
		return x->pay < y->pay ? -1 : 1;
	return 0;
}

/*
 * Sort (key, payload) by key then payload, then slot t takes sorted entry
 * eytz_sorted_rank(t).  sorted_keys/sorted_pays (may be NULL) get the sorted
 * arrays.  Returns 0, or -1 when out of memory.
 */
static inline int
eytzref_build(const uint64_t *keys, const uint64_t *pays, uint64_t n, uint32_t k,
			  uint64_t *ekeys, uint64_t *epays, uint64_t *sorted_keys, uint64_t *sorted_pays)
{
	EytzRefPair *v = (EytzRefPair *) malloc((n ? n : 1) * sizeof(EytzRefPair));
	EytzShape	sh = eytz_shape(n, k);
	uint64_t	i;

	if (!v)
		return -1;
	for (i = 0; i < n; i++)
	{
		v[i].key = keys[i];
		v[i].pay = pays[i];
	}
	qsort(v, n, sizeof(EytzRefPair), eytzref_cmp_pair);
	for (i = 0; i < n; i++)
	{
		uint64_t	r = eytz_sorted_rank(&sh, i);

		ekeys[i] = v[r].key;
		epays[i] = v[r].pay;
		if (sorted_keys)
			sorted_keys[i] = v[i].key;
		if (sorted_pays)
			sorted_pays[i] = v[i].pay;
	}
	free(v);
	return 0;
}

/*
 * All payloads with key in [lo, hi] of an Eytzinger array: follow the
 * lower-bound path of lo; on every level scan from the first key >= lo while
 * keys are <= hi (one contiguous run per level).  Writes at most cap payloads
 * to out (may be NULL) and returns the number of matches.
 */
static inline uint64_t
eytzref_range(const uint64_t *ekeys, const uint64_t *epays, uint64_t n, uint32_t k,
			  uint64_t lo, uint64_t hi, uint64_t *out, uint64_t cap)
{
	EytzShape	sh = eytz_shape(n, k);
	uint64_t	s = 0;
	uint64_t	found = 0;
	uint32_t	l;

	for (l = 0; l < sh.levels && s < n; l++)
	{
		uint64_t	le = eytz_level_end(l, k, n);
		uint32_t	c = 0;
		uint64_t	t;

		/* c = keys of this node below lo: the child to descend into */
		while (c < k - 1 && s + c < n && ekeys[s + c] < lo)
			c++;
		for (t = s + c; t < le && ekeys[t] <= hi; t++)
		{
			if (out && found < cap)
				out[found] = epays[t];
			found++;
		}
		s = eytz_child(s, c, k);
	}
	return found;
}

/* Sorted-array answer: payloads of [lower_bound(lo), upper_bound(hi)) */
static inline uint64_t
eytzref_sorted_range(const uint64_t *skeys, uint64_t n, uint64_t lo, uint64_t hi, uint64_t *first)
{
	uint64_t	a = 0,
				b = n,
				lb,
				ub;

	while (a < b)
	{
		uint64_t	m = a + (b - a) / 2;

		if (skeys[m] < lo)
			a = m + 1;
		else
			b = m;
	}
	lb = a;
	a = lb;
	b = n;
	while (a < b)
	{
		uint64_t	m = a + (b - a) / 2;

		if (skeys[m] <= hi)
			a = m + 1;
		else
			b = m;
	}
	ub = a;
	*first = lb;
	return hi < lo || ub < lb ? 0 : ub - lb;
}

static inline int
eytzref_cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* splitmix64: the tests' random numbers (the seed is printed, EYTZ_SEED repeats it) */
static inline uint64_t
eytzref_random(uint64_t *state)
{
	uint64_t	z = (*state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

#endif							/* EYTZ_CPU_REF_H */
