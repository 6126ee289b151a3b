/*
 * eytz_join.cuh
 *		Join-shaped results: the matches of a batch as (payload, row) pairs
 *		sorted by payload then row, tombstones dropped, for the longest prefix
 *		of the queries whose matches fit a bound (eytzgpu_lookup_join).
 *
 * Each match becomes one 64-bit sort key, its payload compacted (block part
 * less the index's smallest, then the offset part in as many bits as the
 * index's largest offset needs) above its 32-bit row, so that one CUB radix
 * sort over just the bits in use orders the pairs; where the compacted
 * payload needs more than 31 bits, two stable sorts (by row, then by
 * payload) do it.  Misses, tombstones and queries past the prefix get a
 * marker that sorts last; the split writes the first nmatch pairs apart.
 *
 * Rows ascending in query order (EYTZGPU_ROWS_ASCENDING): items come in
 * query order (or key order after a stable sort of the queries), so a stable
 * sort by payload alone gives (payload, row): 32-bit keys of pbits + 1 bits,
 * the row (or slot << 32 | row) as the value; k_rows_check verifies the
 * promise (the batch fails otherwise).
 *
 * Included columns: the lookups then run on a slot view of the index (a
 * match's "payload" is its slot, Idx.slots), the item kernels read the real
 * payload at the slot (JoinSlots) and every item carries its slot through
 * the sort; after it, k_join_gather reads the columns' values and NULL bits
 * at the sorted slots, so the columns come in match order.
 */
#ifndef EYTZ_JOIN_CUH
#define EYTZ_JOIN_CUH

#include "eytz_sorted.cuh"

namespace eytzk
{

/* a payload whose block part (payload >> 16) is this is a tombstone */
static constexpr uint64_t TOMBSTONE_BLOCK = 0xFFFFFFFFull;
static constexpr uint64_t JOIN_MARK = ~0ull;
#define EYTZ_JOIN_MAX_COLUMNS 16	/* = EYTZGPU_MAX_COLUMNS of the API */

/* How live payloads are compacted (computed once per index) */
struct JoinCode
{
	uint64_t	minblk;			/* smallest block part of a live payload */
	uint32_t	obits;			/* bits of the offset part (payload & 0xFFFF) */
	uint32_t	pbits;			/* bits of a compacted payload (64: not compacted) */
	bool		one_key;		/* pbits <= 31: payload and row in one sort key */
	bool		full;			/* a live payload compacts to all pbits ones: the marker needs a bit more */
};

/* Counts of a batch, written by the kernels */
struct JoinStat
{
	uint64_t	nq_done;		/* queries answered (a prefix) */
	uint64_t	total;			/* their matches, tombstones included */
	unsigned long long nmatch;	/* their live matches: the pairs returned */
	unsigned	rows_unordered;	/* EYTZGPU_ROWS_ASCENDING broken */
	unsigned	small_over;		/* k_join_small: its prefix held more matches than it sorts (nothing answered) */
};

/* Sort buffers of a batch (items each) */
struct JoinBufs
{
	uint64_t   *key_a,
			   *key_b;
	uint32_t   *row_a,			/* two-key mode; the rows returned in both modes */
			   *row_b;
	uint32_t   *slot_a,			/* with columns: the slots, one-key mode (NULL: none) */
			   *slot_b;
	uint64_t   *rs_a,			/* with columns, two-key or ascending mode: slot << 32 | row (NULL: none) */
			   *rs_b;
	bool		asc;			/* rows ascending: 32-bit payload keys (in key_a/key_b) */
};

/*
 * With columns, what the lookups return is a slot (of the binary copy when
 * map is set: map gives the index's slot); the item kernels read the payload
 * there.  on = false: the lookups returned payloads.
 */
struct JoinSlots
{
	bool		on;
	const uint32_t *map;		/* binary copy's slot -> the index's slot, or NULL */
	const uint64_t *pays;		/* SoA payloads, or NULL for AoS */
	const unsigned char *aos;
	uint32_t	tp;
	uint32_t	tile_bytes;
	uint32_t	key_bytes;
};

/* A found result r: with columns its slot becomes *slot and r its payload */
__device__ __forceinline__ uint64_t
join_resolve(const JoinSlots &js, uint64_t r, uint32_t *slot)
{
	uint64_t	t;

	if (!js.on)
		return r;
	t = js.map ? js.map[r] : r;
	*slot = (uint32_t) t;
	if (js.aos)
	{
		const unsigned char *b = js.aos + (t >> js.tp) * js.tile_bytes + ((uint64_t) js.key_bytes << js.tp);

		return __ldg((const uint64_t *) b + (t & ((1u << js.tp) - 1)));
	}
	return __ldg(js.pays + t);
}

/* Included columns to gather (the mask's, in column order) */
struct JoinGather
{
	int			ncols;
	int			width[EYTZ_JOIN_MAX_COLUMNS];
	const void *values[EYTZ_JOIN_MAX_COLUMNS];	/* slot order */
	const uint8_t *nulls[EYTZ_JOIN_MAX_COLUMNS];	/* bit slot % 8 of byte slot / 8, or NULL */
	void	   *out[EYTZ_JOIN_MAX_COLUMNS];	/* match order */
	uint8_t    *out_nulls[EYTZ_JOIN_MAX_COLUMNS];	/* one byte per match */
};

/* Keys narrowed to the index's width on the GPU (the low bytes) */
template <class KT>
__global__ void
k_narrow(const uint64_t *in, KT *out, uint64_t n)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		out[i] = (KT) in[i];
}

/* The code of an index's payloads (host; pays: n of them, any order) */
static inline JoinCode
join_code_of(const uint64_t *pays, uint64_t n)
{
	JoinCode	c = {0, 0, 0, true, true};
	uint64_t	mn = ~0ull,
				mx = 0,
				maxoff = 0,
				off_at_mx = 0;		/* largest offset in the largest block */

	for (uint64_t i = 0; i < n; i++)
	{
		uint64_t	b = pays[i] >> 16,
					o = pays[i] & 0xFFFF;

		if (b == TOMBSTONE_BLOCK)
			continue;
		mn = b < mn ? b : mn;
		if (b > mx)
		{
			mx = b;
			off_at_mx = 0;
		}
		if (b == mx && o > off_at_mx)
			off_at_mx = o;
		maxoff |= o;
	}
	if (mn > mx)
		return c;				/* no live payload */
	c.minblk = mn;
	c.obits = bits_of(maxoff);
	c.pbits = bits_of(mx - mn) + c.obits;
	/* all ones: the largest block part is all ones above the smallest, with an all-ones offset */
	c.full = mx - mn == (1ull << bits_of(mx - mn)) - 1 && off_at_mx == (1ull << c.obits) - 1;
	if (c.pbits > 63)
	{
		c.minblk = 0;
		c.obits = 16;
		c.pbits = 64;
		c.full = true;
	}
	c.one_key = c.pbits <= 31;
	return c;
}

__device__ __forceinline__ uint64_t
join_compact(const JoinCode &c, uint64_t p)
{
	if (c.pbits == 64)
		return p;
	return (((p >> 16) - c.minblk) << c.obits) | (p & 0xFFFF);
}

__device__ __forceinline__ uint64_t
join_expand(const JoinCode &c, uint64_t r)
{
	if (c.pbits == 64)
		return r;
	return (((r >> c.obits) + c.minblk) << 16) | (r & ((1ull << c.obits) - 1));
}

/*
 * Item j of the sort: the pair (p, row) if live, else the marker.  r: the
 * lookup's result (a payload, or with columns a slot), found or not.
 * Returns live.
 */
__device__ __forceinline__ uint32_t
join_put(const JoinCode &c, const JoinBufs &b, const JoinSlots &js, uint64_t j, bool found, uint64_t r,
		 uint32_t row)
{
	uint32_t	slot = 0;
	uint64_t	p = found ? join_resolve(js, r, &slot) : 0;
	bool		live = found && (p >> 16) != TOMBSTONE_BLOCK;

	if (b.asc)
	{
		/* the marker: bit pbits set */
		((uint32_t *) b.key_a)[j] = live ? (uint32_t) join_compact(c, p) : ~0u;
		if (b.rs_a)
			b.rs_a[j] = ((uint64_t) slot << 32) | row;
		else
			b.row_a[j] = row;
	}
	else if (c.one_key)
	{
		b.key_a[j] = live ? (join_compact(c, p) << 32) | row : JOIN_MARK;
		if (b.slot_a)
			b.slot_a[j] = slot;
	}
	else
	{
		b.key_a[j] = live ? join_compact(c, p) : JOIN_MARK;
		if (b.rs_a)
			b.rs_a[j] = ((uint64_t) slot << 32) | row;
		else
			b.row_a[j] = row;
	}
	return live;
}

/* Add a warp's live count to the batch's (one atomic per warp) */
__device__ __forceinline__ void
join_count(JoinStat *stat, uint32_t live)
{
	for (int o = 16; o > 0; o >>= 1)
		live += __shfl_down_sync(FULL, live, o);
	if ((threadIdx.x & 31) == 0 && live)
		atomicAdd(&stat->nmatch, (unsigned long long) live);
}

/*
 * The prefix of the queries whose matches fit max_matches: off is the
 * exclusive scan of the counts (off[nq] = all), or NULL when every query is
 * answered (nq of them).  One thread.  Also resets the live count.
 */
static __global__ void
k_join_prefix(const uint64_t *off, uint64_t nq, uint64_t max_matches, JoinStat *stat)
{
	uint64_t	a = 0,
				b = nq;

	if (off)
	{
		/* largest d with off[d] <= max_matches (off is non-decreasing, off[0] = 0) */
		while (a < b)
		{
			uint64_t	m = b - (b - a) / 2;

			if (off[m] <= max_matches)
				a = m;
			else
				b = m - 1;
		}
	}
	else
		a = nq;
	stat->nq_done = a;
	stat->total = off ? off[a] : nq;
	stat->nmatch = 0;
	stat->rows_unordered = 0;
	stat->small_over = 0;
}

/* EYTZGPU_ROWS_ASCENDING: flag rows[i] >= rows[i + 1] */
static __global__ void
k_rows_check(const uint32_t *rows, uint64_t nq, JoinStat *stat)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i + 1 < nq; i += stride)
		if (rows[i] >= rows[i + 1])
			stat->rows_unordered = 1;
}

/*
 * k_point_smem's sink for joins: each result made into its sort item at
 * once (the shared-memory path fused with the narrowing, the items and the
 * rows check); the live count is summed over the block.
 */
struct JoinSink
{
	static constexpr bool TILED = false;
	static constexpr int TILE_THREADS = 0;	/* the block's */
	const uint32_t *rows;
	uint64_t	nq;
	JoinCode	c;
	JoinBufs	b;
	JoinSlots	js;
	JoinStat   *stat;
	bool		check_rows;		/* EYTZGPU_ROWS_ASCENDING: flag rows[j] >= rows[j + 1] */
	uint32_t	live;

	__device__ __forceinline__ void put(uint64_t j, uint64_t r)
	{
		uint32_t	row = rows[j];

		live += join_put(c, b, js, j, r != NO_MATCH, r, row);
		if (check_rows && j + 1 < nq && row >= rows[j + 1])
			stat->rows_unordered = 1;
	}
	template <int BLOCK>
	__device__ __forceinline__ void finish()
	{
		__shared__ typename cub::BlockReduce<uint32_t, BLOCK>::TempStorage tmp;
		uint32_t	sum = cub::BlockReduce<uint32_t, BLOCK>(tmp).Sum(live);

		if (threadIdx.x == 0 && sum)
			atomicAdd(&stat->nmatch, (unsigned long long) sum);
	}
};

/* Point results in query order (first[i]: payload or NO_MATCH), rows[i] beside */
static __global__ void
k_join_from_first(const uint64_t *first, const uint32_t *rows, uint64_t nq, JoinCode c, JoinBufs b, JoinSlots js,
				  JoinStat *stat)
{
	uint64_t	nq_done = stat->nq_done;
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t base = (uint64_t) blockIdx.x * blockDim.x; base < nq; base += stride)
	{
		uint64_t	i = base + threadIdx.x;
		uint32_t	live = 0;

		if (i < nq)
			live = join_put(c, b, js, i, i < nq_done && first[i] != NO_MATCH, first[i], rows[i]);
		join_count(stat, live);
	}
}

/*
 * CSR matches (out[off[i] .. off[i+1]) of query i < nq_done), rows[i]
 * beside each.  A lane writes its query's matches; queries of more than 32
 * matches are written by the whole warp, one after the other.
 */
static __global__ void
k_join_from_csr(const uint64_t *out, const uint64_t *off, const uint32_t *rows, uint64_t nq_done, JoinCode c,
				JoinBufs b, JoinSlots js, JoinStat *stat)
{
	const int	lane = threadIdx.x & 31;
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t base = (uint64_t) blockIdx.x * blockDim.x; base < nq_done; base += stride)
	{
		uint64_t	i = base + threadIdx.x;
		uint64_t	s = 0,
					e = 0;
		uint32_t	row = 0,
					live = 0;
		unsigned	m;

		if (i < nq_done)
		{
			s = off[i];
			e = off[i + 1];
			row = rows[i];
		}
		if (e - s <= 32)
			for (uint64_t j = s; j < e; j++)
				live += join_put(c, b, js, j, true, out[j], row);
		m = __ballot_sync(FULL, e - s > 32);
		while (m)
		{
			int			src = __ffs(m) - 1;
			uint64_t	ws = __shfl_sync(FULL, s, src),
						we = __shfl_sync(FULL, e, src);
			uint32_t	wr = __shfl_sync(FULL, row, src);

			for (uint64_t j = ws + lane; j < we; j += 32)
				live += join_put(c, b, js, j, true, out[j], wr);
			m &= m - 1;
		}
		join_count(stat, live);
	}
}

/*
 * Point lookups of sorted keys (skeys[j], asked by row srows[j]) straight
 * into sort items: no write-back to query order, since the results are
 * ordered by payload next anyway.
 */
template <class KT, int NK, bool AOS, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
k_point_join(Idx<KT> ix, const KT *skeys, const uint32_t *srows, uint64_t nq, uint32_t full_levels, JoinCode c,
			 JoinBufs b, JoinSlots js, JoinStat *stat)
{
	uint64_t	stride = (uint64_t) gridDim.x * BLOCK;

	for (uint64_t base = (uint64_t) blockIdx.x * BLOCK; base < nq; base += stride)
	{
		uint64_t	j = base + threadIdx.x;
		uint32_t	live = 0;

		if (j < nq)
		{
			uint64_t	p = point_one<KT, NK, AOS, false>(ix, NULL, 0, full_levels, skeys[j]);

			live = join_put(c, b, js, j, p != NO_MATCH, p, srows[j]);
		}
		join_count(stat, live);
	}
}

/*
 * The first nmatch sorted items as payloads (pay) and rows (row: already in
 * place in two-key and ascending modes without columns); rs: with columns in
 * those modes, the sorted (slot, row) pairs, split into row and slot.
 * keys32: ascending mode's 32-bit keys (else keys).
 */
static __global__ void
k_join_split(const uint64_t *keys, const uint32_t *keys32, const uint64_t *rs, uint64_t n, JoinCode c,
			 const JoinStat *stat, uint64_t *pay, uint32_t *row, uint32_t *slot)
{
	uint64_t	m = stat->nmatch < n ? stat->nmatch : n;
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; j < m; j += stride)
	{
		uint64_t	k = keys32 ? keys32[j] : keys[j];

		if (c.one_key && !keys32)
		{
			pay[j] = join_expand(c, k >> 32);
			row[j] = (uint32_t) k;
		}
		else
		{
			pay[j] = join_expand(c, k);
			if (rs)
			{
				row[j] = (uint32_t) rs[j];
				slot[j] = (uint32_t) (rs[j] >> 32);
			}
		}
	}
}

/* Value of width W at slot t */
template <int W>
__device__ __forceinline__ void
gather_one(const void *values, void *out, uint64_t t, uint64_t j)
{
	typedef typename std::conditional<W == 1, uint8_t,
			typename std::conditional<W == 2, uint16_t,
			typename std::conditional<W == 4, uint32_t, uint64_t>::type>::type>::type T;

	((T *) out)[j] = __ldg((const T *) values + t);
}

/*
 * The included columns of the first nmatch sorted items: values and NULL
 * flags read at each item's slot, written in match order (coalesced per
 * column).
 */
static __global__ void
k_join_gather(const uint32_t *slots, uint64_t n, const JoinStat *stat, JoinGather g)
{
	uint64_t	m = stat->nmatch < n ? stat->nmatch : n;
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t j = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; j < m; j += stride)
	{
		uint64_t	t = slots[j];

		for (int c = 0; c < g.ncols; c++)
		{
			switch (g.width[c])
			{
				case 1:
					gather_one<1>(g.values[c], g.out[c], t, j);
					break;
				case 2:
					gather_one<2>(g.values[c], g.out[c], t, j);
					break;
				case 4:
					gather_one<4>(g.values[c], g.out[c], t, j);
					break;
				default:
					gather_one<8>(g.values[c], g.out[c], t, j);
					break;
			}
			g.out_nulls[c][j] = g.nulls[c] ? (__ldg(g.nulls[c] + (t >> 3)) >> (t & 7)) & 1 : 0;
		}
	}
}

template <class KT>
static inline cudaError_t
launch_point_join(const Idx<KT> &ix, const KT *skeys, const uint32_t *srows, uint64_t nq, const JoinCode &c,
				  const JoinBufs &b, const JoinSlots &js, JoinStat *stat, cudaStream_t st)
{
	uint32_t	full = eytz_shape(ix.n, ix.k).full_levels;

	return dispatch_nk_aos(ix, [&](auto nk, auto aos) {
		auto		kern = k_point_join<KT, nk.value, aos.value, EYTZ_SINGLE_BLOCK>;

		/* no shared memory: the small blocks, no more of them than there are lookups for */
		return launch_persistent(kern, kern, 0, 0, (nq + EYTZ_SINGLE_BLOCK - 1) / EYTZ_SINGLE_BLOCK, st, ix, skeys,
								 srows, nq, full, c, b, js, stat);
	});
}

/*
 * A small point batch in one block and one launch (no columns, one-key
 * items): the count pass, the prefix that fits max_matches, the fill, the
 * items sorted in shared memory (up to EYTZ_JOIN_SMALL_RANKED of them
 * ranked: each counts the items before it, cheaper than a radix sort's
 * passes over the key bits; more are radix-sorted), the split.  The pipeline above is a chain of launches with a
 * synchronization in the middle, which costs a small batch more than its
 * searches.  A prefix of more than EYTZ_JOIN_SMALL matches sets small_over
 * and answers nothing (the caller then runs the pipeline).  Thread t takes
 * queries t * ITEMS ..; keys narrowed to KT.  pay and row hold
 * EYTZ_JOIN_SMALL pairs.
 */
#define EYTZ_JOIN_SMALL_BLOCK 1024
#define EYTZ_JOIN_SMALL_ITEMS 2
#define EYTZ_JOIN_SMALL (EYTZ_JOIN_SMALL_BLOCK * EYTZ_JOIN_SMALL_ITEMS)
#define EYTZ_JOIN_SMALL_RANKED 128	/* items ranked (a pass over all per item) up to this; radix-sorted above */

template <class KT, int NKC>
__global__ void __launch_bounds__(EYTZ_JOIN_SMALL_BLOCK)
k_join_small(Idx<KT> ix, const uint64_t *keys, const uint32_t *rows, uint64_t nq, uint64_t max_matches, JoinCode c,
			 int sort_bits, bool check_rows, CsrBufs b, uint64_t *pay, uint32_t *row, JoinStat *stat)
{
	const int	ITEMS = EYTZ_JOIN_SMALL_ITEMS;
	typedef cub::BlockScan<uint32_t, EYTZ_JOIN_SMALL_BLOCK> Scan;
	typedef cub::BlockRadixSort<uint64_t, EYTZ_JOIN_SMALL_BLOCK, EYTZ_JOIN_SMALL_ITEMS> Sort;
	__shared__ union
	{
		typename Scan::TempStorage scan;
		typename Sort::TempStorage sort;
		uint64_t	items[EYTZ_JOIN_SMALL];
	}			sh;
	uint64_t   *items = sh.items;
	__shared__ uint32_t s_live;
	const uint64_t j0 = (uint64_t) threadIdx.x * ITEMS;
	const Outs	oc = {NULL, b.cnt, b.first};
	const Outs	of = {b.out, b.off, b.first};
	uint32_t	cc[ITEMS],
				sum = 0,
				excl,
				live = 0;
	uint64_t	nq_done = 0,
				total;
	int			unordered = 0;

	if (threadIdx.x == 0)
		s_live = 0;
	/* counts (every lane calls: a warp finishes the long runs together) */
	for (int it = 0; it < ITEMS; it++)
	{
		bool		active = j0 + it < nq;
		KT			k = active ? (KT) keys[j0 + it] : 0;

		single_process<KT, MODE_COUNT, NKC>(ix, NULL, 0, oc, active, j0 + it, k, k);
	}
	/* offsets of counts clamped above the capacity: exact on any prefix that fits it */
	for (int it = 0; it < ITEMS; it++)
	{
		uint64_t	j = j0 + it,
					n = j < nq ? b.cnt[j] : 0;

		cc[it] = (uint32_t) (n > EYTZ_JOIN_SMALL ? EYTZ_JOIN_SMALL + 1 : n);
		sum += cc[it];
		if (check_rows && j + 1 < nq && rows[j] >= rows[j + 1])
			unordered = 1;
	}
	Scan(sh.scan).ExclusiveSum(sum, excl);
	for (int it = 0; it < ITEMS; it++)
	{
		uint64_t	j = j0 + it;

		if (j < nq)
		{
			b.off[j] = excl;
			excl += cc[it];
			if (j + 1 == nq)
				b.off[nq] = excl;
		}
		/* the prefix: the queries whose matches end within max_matches */
		nq_done += __syncthreads_count(j < nq && excl <= max_matches);
	}
	unordered = __syncthreads_or(unordered);
	total = b.off[nq_done];
	if (total > EYTZ_JOIN_SMALL)
	{
		if (threadIdx.x == 0)
		{
			stat->small_over = 1;
			stat->nq_done = 0;
			stat->total = 0;
			stat->nmatch = 0;
			stat->rows_unordered = unordered;
		}
		return;
	}
	for (int it = 0; it < ITEMS; it++)
	{
		bool		active = j0 + it < nq_done;
		KT			k = active ? (KT) keys[j0 + it] : 0;

		single_process<KT, MODE_FILL, NKC>(ix, NULL, 0, of, active, j0 + it, k, k);
	}
	__syncthreads();			/* (the scan's storage is free again) */
	for (int it = 0; it < ITEMS; it++)
	{
		uint64_t	j = j0 + it;

		if (j < nq_done)
			for (uint64_t m = b.off[j]; m < b.off[j + 1]; m++)
			{
				uint64_t	p = b.out[m];
				bool		l = (p >> 16) != TOMBSTONE_BLOCK;

				items[m] = l ? (join_compact(c, p) << 32) | rows[j] : JOIN_MARK;
				live += l;
			}
	}
	if (live)
		atomicAdd(&s_live, live);
	__syncthreads();
	live = s_live;
	if (total > EYTZ_JOIN_SMALL_RANKED)
	{
		/*
		 * Radix sort: rows that ascend in query order (checked) are in
		 * order already, so a stable sort of the payload bits does
		 */
		uint64_t	key[ITEMS];

		for (int it = 0; it < ITEMS; it++)
			key[it] = j0 + it < total ? items[j0 + it] : JOIN_MARK;
		__syncthreads();		/* the sort reuses the items' memory */
		Sort(sh.sort).Sort(key, check_rows ? 32 : 0, sort_bits);
		for (int it = 0; it < ITEMS; it++)
			if (j0 + it < live)
			{
				pay[j0 + it] = join_expand(c, key[it] >> 32);
				row[j0 + it] = (uint32_t) key[it];
			}
	}
	else if (threadIdx.x < total)
	{
		/* item t's place: the items below it, and the equal ones before it (tombstones last) */
		uint64_t	mine = items[threadIdx.x];
		uint32_t	rank = 0;

		for (uint32_t i = 0; i < total; i++)
		{
			uint64_t	o = items[i];

			rank += o < mine || (o == mine && i < threadIdx.x);
		}
		if (rank < live)
		{
			pay[rank] = join_expand(c, mine >> 32);
			row[rank] = (uint32_t) mine;
		}
	}
	if (threadIdx.x == 0)
	{
		stat->small_over = 0;
		stat->nq_done = nq_done;
		stat->total = total;
		stat->nmatch = live;
		stat->rows_unordered = unordered;
	}
}

/* k_join_small for nq <= EYTZ_JOIN_SMALL queries (one-key items) */
template <class KT>
static inline cudaError_t
launch_join_small(const Idx<KT> &ix, const uint64_t *keys, const uint32_t *rows, uint64_t nq, uint64_t max_matches,
				  const JoinCode &c, bool check_rows, const CsrBufs &b, uint64_t *pay, uint32_t *row,
				  JoinStat *stat, cudaStream_t st)
{
	int			sort_bits = (int) c.pbits + 32 + (c.full ? 1 : 0);	/* the marker's bit where a key can be all ones */

	return dispatch_nk(ix.k, [&](auto nk) {
		k_join_small<KT, nk.value><<<1, EYTZ_JOIN_SMALL_BLOCK, 0, st>>>(ix, keys, rows, nq, max_matches, c,
																	   sort_bits, check_rows, b, pay, row, stat);
		return cudaGetLastError();
	});
}

/* Workspace of join_sort for n items */
static inline cudaError_t
join_sort_temp_bytes(uint64_t n, size_t *bytes)
{
	size_t		a = 0,
				b = 0,
				c = 0,
				d = 0,
				a2 = 0,
				b2 = 0;
	cudaError_t e;

	/* keys only; (row, payload); (payload, row or slot); (payload or slot << 32 | row, the other); ascending */
	if ((e = cub::DeviceRadixSort::SortKeys((void *) NULL, a, (const uint64_t *) NULL, (uint64_t *) NULL, (int) n,
											0, 64)) != cudaSuccess ||
		(e = cub::DeviceRadixSort::SortPairs((void *) NULL, b, (const uint32_t *) NULL, (uint32_t *) NULL,
											 (const uint64_t *) NULL, (uint64_t *) NULL, (int) n, 0, 32)) != cudaSuccess ||
		(e = cub::DeviceRadixSort::SortPairs((void *) NULL, c, (const uint64_t *) NULL, (uint64_t *) NULL,
											 (const uint32_t *) NULL, (uint32_t *) NULL, (int) n, 0, 64)) != cudaSuccess ||
		(e = cub::DeviceRadixSort::SortPairs((void *) NULL, d, (const uint64_t *) NULL, (uint64_t *) NULL,
											 (const uint64_t *) NULL, (uint64_t *) NULL, (int) n, 0, 64)) != cudaSuccess ||
		(e = cub::DeviceRadixSort::SortPairs((void *) NULL, a2, (const uint32_t *) NULL, (uint32_t *) NULL,
											 (const uint64_t *) NULL, (uint64_t *) NULL, (int) n, 0, 32)) != cudaSuccess ||
		(e = cub::DeviceRadixSort::SortPairs((void *) NULL, b2, (const uint32_t *) NULL, (uint32_t *) NULL,
											 (const uint32_t *) NULL, (uint32_t *) NULL, (int) n, 0, 32)) != cudaSuccess)
		return e;
	*bytes = std::max(std::max(std::max(a, b), std::max(c, d)), std::max(a2, b2));
	return cudaSuccess;
}

/*
 * Sort the n items of b by (payload, row) and split the first nmatch into
 * *pay and *row, and with columns (b.slot_a or b.rs_a set) their slots into
 * *slot (pointers into b; valid until b is reused).
 */
static inline cudaError_t
join_sort(const JoinBufs &b, uint64_t n, const JoinCode &c, const JoinStat *stat, void *temp, size_t temp_bytes,
		  uint64_t **pay, uint32_t **row, uint32_t **slot, cudaStream_t st)
{
	size_t		tb = temp_bytes;
	const uint64_t *sorted;
	const uint64_t *rs = NULL;
	int			pend = (int) std::min(c.pbits + 1, 64u);
	int			mbit = c.full ? 1 : 0;	/* the marker's bit, where a live key can be all ones */
	cudaError_t e;

	*slot = NULL;
	if (n == 0)
	{
		*pay = b.key_a;
		*row = b.row_a;
		return cudaSuccess;
	}
	if (b.asc)
	{
		/* stable, by payload alone: the items are in row order already */
		uint32_t   *ka = (uint32_t *) b.key_a,
				   *kb = (uint32_t *) b.key_b;

		if (b.rs_a)
			e = cub::DeviceRadixSort::SortPairs(temp, tb, ka, kb, b.rs_a, b.rs_b, (int) n, 0,
												std::max((int) c.pbits + mbit, 1), st);
		else
			e = cub::DeviceRadixSort::SortPairs(temp, tb, ka, kb, b.row_a, b.row_b, (int) n, 0,
												std::max((int) c.pbits + mbit, 1), st);
		if (e != cudaSuccess)
			return e;
		*pay = b.key_a;
		*row = b.rs_a ? b.row_a : b.row_b;
		*slot = b.rs_a ? b.slot_a : NULL;
		k_join_split<<<grid1d(n), 256, 0, st>>>(NULL, kb, b.rs_b, n, c, stat, *pay, *row, *slot);
		return cudaGetLastError();
	}
	if (c.one_key)
	{
		/* payload bits, then the 32 row bits, then the marker's bit; slots ride along */
		if (b.slot_a)
			e = cub::DeviceRadixSort::SortPairs(temp, tb, b.key_a, b.key_b, b.slot_a, b.slot_b, (int) n, 0,
												(int) c.pbits + 32 + mbit, st);
		else
			e = cub::DeviceRadixSort::SortKeys(temp, tb, b.key_a, b.key_b, (int) n, 0, (int) c.pbits + 32 + mbit,
											   st);
		sorted = b.key_b;
		*pay = b.key_a;
		*slot = b.slot_b;
	}
	else if (b.rs_a)
	{
		/* stable: by row (the low half of slot << 32 | row), then by payload */
		e = cub::DeviceRadixSort::SortPairs(temp, tb, b.rs_a, b.rs_b, b.key_a, b.key_b, (int) n, 0, 32, st);
		if (e == cudaSuccess)
			e = cub::DeviceRadixSort::SortPairs(temp, tb, b.key_b, b.key_a, b.rs_b, b.rs_a, (int) n, 0, pend, st);
		sorted = b.key_a;
		rs = b.rs_a;
		*pay = b.key_b;
		*slot = b.slot_a;
	}
	else
	{
		/* stable: by row, then by payload (the marker has bit pbits set) */
		e = cub::DeviceRadixSort::SortPairs(temp, tb, b.row_a, b.row_b, b.key_a, b.key_b, (int) n, 0, 32, st);
		if (e == cudaSuccess)
			e = cub::DeviceRadixSort::SortPairs(temp, tb, b.key_b, b.key_a, b.row_b, b.row_a, (int) n, 0, pend, st);
		sorted = b.key_a;
		*pay = b.key_b;
	}
	*row = b.row_a;
	if (e != cudaSuccess)
		return e;
	k_join_split<<<grid1d(n), 256, 0, st>>>(sorted, NULL, rs, n, c, stat, *pay, *row, *slot);
	return cudaGetLastError();
}

}								/* namespace eytzk */

#endif							/* EYTZ_JOIN_CUH */
