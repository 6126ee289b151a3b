/*
 * eytzimagesearch.c
 *		The batched search over a CPU image of an index (eytzimage.h:
 *		eytz_image_search), also over the pinned view of its pages.
 *
 * The batched search answers many key ranges at once at memory speed: the
 * queries come sorted by their low key, so neighbouring searches share
 * their upper path and each level is read from left to right.  A query
 * starts where its path leaves the previous query's (the levels above are
 * not searched again, only their first candidate compared), and the slots
 * right of each new node are prefetched for the queries that follow.  Each
 * level is the per-level range scan of the paper (as in eytzcursor.c) on
 * flat arrays.  Matches are first recorded as layout positions and resolved
 * to TIDs in a second pass that prefetches ahead, so the TID array's misses
 * overlap too (resolving them in the walk was slower:
 * bench/join_results.md, "Design measurements").
 *
 * Why not independent searches interleaved level by level (group
 * prefetching)?  Neighbours in a sorted batch of 262k queries into 4M keys
 * share all but about 5 levels of an EBS layout's 22 (2 of an EKS 9 one's
 * 7), so the shared walk compares a fifth of the nodes; groups of 32
 * branch-free descents were slower a key than the shared walk, and two
 * walks over the halves of a batch interleaved gained nothing (the walk is
 * bound by its work, not by the latency of its chain of loads;
 * bench/join_results.md, "Design measurements").  What the walk avoids
 * instead is branches on the way a search goes, a coin toss at every
 * level.  Where a batch is sparse and the keys overflow the cache, the
 * misses dominate instead: such a batch is searched by groups, level by
 * level (EYTZ_GROUP below).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "utils/rel.h"

#include "eytzimage.h"

/* levels a layout may have (a fan-out of 2 and 2^64 entries) */
#define EYTZ_MAX_LEVELS 64
/*
 * How far right of a new node the search prefetches, in slots: the next
 * queries of a sorted batch reach nodes a few cache lines to the right.
 */
#define EYTZ_STREAM_AHEAD 64
/* how far ahead the TID resolution prefetches */
#define EYTZ_RESOLVE_AHEAD 64
/*
 * A sparse batch (fewer queries than one in EYTZ_GROUP_SPARSE entries) shares
 * only the top of its neighbours' paths, and where the keys are too large
 * for the cache (twice the last-level cache) a walk query by query waits at
 * each new node below for a miss it could not see coming.  Such a batch is
 * searched a group of EYTZ_GROUP queries at a time, level by level: a
 * level's pass over the group prefetches the node of the query
 * EYTZ_GROUP_AHEAD places on, so the level's misses overlap (prefetching
 * each child as it is found, or further ahead, filled the miss buffers and
 * stalled: bench/am_results.md), and the matches are then taken query by
 * query from the nodes the pass left in the cache.  Where the keys
 * fit in the cache the shared walk compares fewer nodes (bench/am_results.md,
 * "warm-ahead", "group search").  group_first holds a group's first
 * candidates, level by level below the levels the whole group shares.
 */
#define EYTZ_GROUP 128
/* how many queries ahead a level's pass prefetches their nodes */
#define EYTZ_GROUP_AHEAD 32
#define EYTZ_GROUP_SPARSE 32
static uint64 group_first[EYTZ_MAX_LEVELS * EYTZ_GROUP];

int			eytz_search_prefetch = EYTZ_SEARCH_PREFETCH_AUTO;

/* The largest CPU cache as Linux lists it (32 MB where it cannot be read) */
static uint64
last_level_cache_bytes(void)
{
	static uint64 bytes = 0;
	int			i;

	if (bytes > 0)
		return bytes;
	for (i = 0; i < 8; i++)
	{
		char		path[MAXPGPATH];
		char		size[32];
		FILE	   *f;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = AllocateFile(path, "r");
		if (f == NULL)
			break;
		if (fgets(size, sizeof(size), f) != NULL)
		{
			char	   *end;
			uint64		v = strtoull(size, &end, 10);

			v <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
			bytes = Max(bytes, v);
		}
		FreeFile(f);
	}
	if (bytes == 0)
		bytes = UINT64CONST(32) << 20;
	return bytes;
}

/*
 * eytzgpu.search_prefetch: whether a search of nq queries goes by groups; the
 * keys compete for the cache with what the scan reads between searches of
 * this layout (nearby_bytes: a partitioned join's other leaves)
 */
static bool
search_by_group(const EytzLayoutImage *img, uint32 nq, Size key_width, uint64 nearby_bytes)
{
	if (eytz_search_prefetch != EYTZ_SEARCH_PREFETCH_AUTO)
		return eytz_search_prefetch == EYTZ_SEARCH_PREFETCH_ON;
	return (uint64) nq * EYTZ_GROUP_SPARSE < img->meta.nentries &&
		img->meta.nentries * key_width + nearby_bytes > 2 * last_level_cache_bytes();
}

/*
 * The asked-for included values of slot into stage position pos, with the
 * entry's key (the search read it: no second read of the keys at random)
 */
static void
stage_slot(const EytzImage *image, uint64 slot, uint64 key, EytzStage *stage,
		   uint32 pos)
{
	int			j;

	stage->have[pos] = true;
	stage->keys[pos] = key;
	for (j = 0; j < stage->ncols; j++)
	{
		int			c = stage->cols[j];
		int			width = image->inc.width[c];
		bool		isnull = (image->nulls[c][slot / 8] >> (slot % 8)) & 1;

		stage->isnull[j][pos] = isnull;
		stage->values[j][pos] = isnull ? (Datum) 0 :
			eytz_include_fetch(image->values[c] + slot * width, width);
	}
}

/*
 * Replace the layout positions in m[from..n) by their TIDs, dropping
 * tombstones; returns the new n.  With a stage (whose keys hold each
 * match's key at its position so far), each match's values go there at its
 * new position, which "unused" keeps.  With slots (an image without
 * tombstones), the positions stay, tagged EYTZ_MATCH_SLOT, and only the
 * values are staged: the TID array is not read.
 */
static uint32
resolve_tids(const EytzImage *image, EytzMatch *m, uint32 from, uint32 n,
			 EytzStage *stage, bool slots)
{
	const uint64 *tids = image->img.tids;
	uint32		i,
				out = from;

	if (slots)
	{
		Assert(stage && image->img.meta.ndead == 0);
		for (i = from; i < n; i++)
		{
			if (i + EYTZ_RESOLVE_AHEAD < n && stage->ncols > 0)
				__builtin_prefetch(image->values[stage->cols[0]] +
								   m[i + EYTZ_RESOLVE_AHEAD].tid *
								   image->inc.width[stage->cols[0]]);
			stage_slot(image, m[i].tid, stage->keys[i], stage, i);
			m[i].tid |= EYTZ_MATCH_SLOT;
			m[i].unused = i;
		}
		return n;
	}
	for (i = from; i < n; i++)
	{
		uint64		t;

		if (i + EYTZ_RESOLVE_AHEAD < n)
		{
			__builtin_prefetch(&tids[m[i + EYTZ_RESOLVE_AHEAD].tid]);
			if (stage && stage->ncols > 0)
				__builtin_prefetch(image->values[stage->cols[0]] +
								   m[i + EYTZ_RESOLVE_AHEAD].tid *
								   image->inc.width[stage->cols[0]]);
		}
		t = tids[m[i].tid];
		if (eytz_tid_block(t) != InvalidBlockNumber)
		{
			if (stage)
				stage_slot(image, m[i].tid, stage->keys[i], stage, out);
			m[out].tid = t;
			m[out].row = m[i].row;
			m[out].unused = out;
			out++;
		}
	}
	return out;
}

/*
 * Where the search of the previous query went at one level.  The next
 * query (its low key is not smaller) takes the same way down to the deepest
 * level whose ub it does not pass: its count of node keys below its low key
 * is the same there, so is its first candidate.
 */
typedef struct LevelStep
{
	uint64		first;			/* first candidate slot, or NO_SLOT */
	uint64		first_key;		/* its key */
	uint64		min_first_key;	/* the least first_key of this level and above */
	uint64		child;			/* the node below */
	uint64		lb;				/* bounds of the keys below this level */
	uint64		ub;				/* (never rises from a level to the next) */
} LevelStep;

#define NO_SLOT PG_UINT64_MAX

/*
 * The keys from slot pos on: in the image's flat array, or on the pinned
 * view's key page (a page holds whole nodes: a node's keys are on one page).
 * Uses the search's locals keys, kp (the pages) and kpp (keys per page).
 */
#define SLOT_KEYS(KT, PAGED, pos) \
	((PAGED) ? (const KT *) kp[(pos) / kpp] + (pos) % kpp : keys + (pos))

/* The low key of query q: the search's locals packed, base and order */
#define GROUP_LO(q) (packed ? base + (packed[q] >> 32) : order[q].tid)

/* eytz_keys_per_page() as a constant, for the layouts a search is fixed for */
#define KEYS_PER_PAGE(width, k) \
	((uint64) (EYTZ_PAGE_CAPACITY / (width) - (EYTZ_PAGE_CAPACITY / (width)) % ((k) - 1)))

/*
 * The per-level range scan of queries qlo/qhi/qrow[0..nq) (ascending low
 * keys) for one key width: appends (layout position, row) to out[*n..limit)
 * for whole queries, and returns how many queries were answered (their
 * matches fit); with mkeys (else NULL), each match's key at its position,
 * read here rather than again at random after the search.  A query starts
 * below the levels it shares with the one before (see LevelStep): with
 * sorted batches most queries compare keys at the last few levels only, and
 * each level is read from left to right, so the slots ahead of a new node
 * are prefetched for the next queries.  No node is checked here: every node
 * of the image ascended within the bounds its path sets when the image was
 * loaded (eytz_region_load; a worker's image is its leader's).
 */
#define DEFINE_SORTED_SEARCH(NAME, KT, FANOUT, PAGED, KPP) \
/* The matches of row at one level from slot pos on; false when out is full */ \
static inline bool \
NAME##_level(const KT *keys, const char *const *kp, uint64 kpp, uint64 pos, \
			 uint64 end, uint64 hi, uint32 row, \
			 uint32 limit, EytzMatch *out, uint64 *mkeys, uint32 *cnt) \
{ \
	for (; pos < end && *SLOT_KEYS(KT, PAGED, pos) <= hi; pos++) \
	{ \
		if (*cnt == limit) \
			return false; \
		out[*cnt].tid = pos; \
		out[*cnt].row = row; \
		if (mkeys) \
			mkeys[*cnt] = *SLOT_KEYS(KT, PAGED, pos); \
		(*cnt)++; \
	} \
	return true; \
} \
\
/* Flags node s (nk) whose keys leave lb..ub or are out of order (pages only) */ \
static inline void \
NAME##_check(const KT *nk, uint32 k, uint64 s, uint64 lb, uint64 ub, bool *bad, \
			 uint64 *bad_slot) \
{ \
	bool		b = nk[0] < lb || nk[k - 2] > ub; \
	uint32		c; \
\
	for (c = 1; c < k - 1; c++) \
		b |= nk[c] < nk[c - 1]; \
	if (unlikely(b) && !*bad) \
	{ \
		*bad = true; \
		*bad_slot = s; \
	} \
} \
\
/* The same for the partial node s..end at the end of the bottom level */ \
static inline void \
NAME##_check_partial(const KT *keys, const char *const *kp, uint64 kpp, uint64 s, \
					 uint64 end, uint64 lb, uint64 ub, bool *bad, uint64 *bad_slot) \
{ \
	uint64		t; \
\
	for (t = s; t < end; t++) \
		if (unlikely((*SLOT_KEYS(KT, PAGED, t) < lb || \
					  *SLOT_KEYS(KT, PAGED, t) > ub || \
					  (t > s && *SLOT_KEYS(KT, PAGED, t) < \
					   *SLOT_KEYS(KT, PAGED, t - 1))) && !*bad)) \
		{ \
			*bad = true; \
			*bad_slot = s; \
		} \
} \
\
/* \
 * The whole queries of the group q0..q0+ng (see EYTZ_GROUP), a level at a \
 * time: first every query's first candidate at each level (a level's pass \
 * prefetching the nodes of the queries ahead), then each query's matches in \
 * query order, from candidates whose nodes the first pass left in the \
 * cache.  Levels whose node and way down the group's least and greatest low \
 * keys share are searched once.  Returns the queries answered (fewer than \
 * ng when out is full). \
 */ \
static uint32 \
NAME##_group(const KT *keys, const char *const *kp, uint64 kpp, const uint64 *level_end, \
			 uint32 levels, uint32 k, const EytzMatch *order, const uint64 *packed, \
			 uint64 base, const uint64 *qhi, uint32 q0, uint32 ng, uint32 limit, \
			 EytzMatch *out, uint64 *mkeys, uint32 *n, bool *bad, uint64 *bad_slot) \
{ \
	uint64		lo[EYTZ_GROUP], \
				s[EYTZ_GROUP], \
				lb[EYTZ_GROUP], \
				ub[EYTZ_GROUP]; \
	uint64		shared_first[EYTZ_MAX_LEVELS]; \
	uint64		min_lo = PG_UINT64_MAX, \
				max_lo = 0, \
				node = 0, \
				node_lb = 0, \
				node_ub = PG_UINT64_MAX; \
	uint32		cnt = *n; \
	uint32		d, \
				g, \
				l; \
\
	for (g = 0; g < ng; g++) \
	{ \
		lo[g] = GROUP_LO(q0 + g); \
		min_lo = Min(min_lo, lo[g]); \
		max_lo = Max(max_lo, lo[g]); \
	} \
	/* the levels every query of the group goes through alike */ \
	for (d = 0; d < levels; d++) \
	{ \
		const KT   *nk; \
		uint64		end = level_end[d], \
					pos; \
		uint32		c, \
					jmin = 0, \
					jmax = 0; \
\
		if (node + k - 1 > end) \
			break; \
		nk = SLOT_KEYS(KT, PAGED, node); \
		_Pragma("GCC unroll 16") \
		for (c = 0; c < k - 1; c++) \
		{ \
			jmin += nk[c] < min_lo; \
			jmax += nk[c] < max_lo; \
		} \
		if (jmin != jmax) \
			break; \
		if (PAGED) \
			NAME##_check(nk, k, node, node_lb, node_ub, bad, bad_slot); \
		if (jmin > 0) \
			node_lb = nk[jmin - 1]; \
		if (jmin < k - 1) \
			node_ub = nk[jmin]; \
		pos = node + jmin; \
		shared_first[d] = pos < end ? pos : NO_SLOT; \
		node = eytz_child(node, jmin, k); \
	} \
	for (g = 0; g < ng; g++) \
	{ \
		s[g] = node; \
		lb[g] = node_lb; \
		ub[g] = node_ub; \
	} \
	/* every query's first candidate at each level below */ \
	for (l = d; l < levels; l++) \
	{ \
		uint64		end = level_end[l]; \
		uint64	   *first = group_first + (Size) (l - d) * EYTZ_GROUP; \
\
		/* the level's first nodes: the pass prefetches only those ahead of it */ \
		for (g = 0; g < Min(ng, EYTZ_GROUP_AHEAD); g++) \
			if (s[g] < end) \
				__builtin_prefetch(SLOT_KEYS(KT, PAGED, s[g])); \
		for (g = 0; g < ng; g++) \
		{ \
			const KT   *nk; \
			uint64		pos; \
			uint32		c, \
						j = 0; \
\
			if (g + EYTZ_GROUP_AHEAD < ng && s[g + EYTZ_GROUP_AHEAD] < end) \
				__builtin_prefetch(SLOT_KEYS(KT, PAGED, s[g + EYTZ_GROUP_AHEAD])); \
			if (s[g] >= end) \
			{ \
				/* no node here (only the bottom level is partial) */ \
				first[g] = NO_SLOT; \
				continue; \
			} \
			nk = SLOT_KEYS(KT, PAGED, s[g]); \
			if (likely(s[g] + k - 1 <= end)) \
			{ \
				_Pragma("GCC unroll 16") \
				for (c = 0; c < k - 1; c++) \
					j += nk[c] < lo[g]; \
				if (PAGED) \
				{ \
					NAME##_check(nk, k, s[g], lb[g], ub[g], bad, bad_slot); \
					if (j > 0) \
						lb[g] = nk[j - 1]; \
					if (j < k - 1) \
						ub[g] = nk[j]; \
				} \
			} \
			else \
			{ \
				/* the partial node at the end of the bottom level */ \
				if (PAGED) \
					NAME##_check_partial(keys, kp, kpp, s[g], end, lb[g], ub[g], \
										 bad, bad_slot); \
				while (s[g] + j < end && *SLOT_KEYS(KT, PAGED, s[g] + j) < lo[g]) \
					j++; \
			} \
			pos = s[g] + j; \
			first[g] = pos < end ? pos : NO_SLOT; \
			s[g] = eytz_child(s[g], j, k); \
		} \
	} \
	/* the matches, query by query, level by level */ \
	for (g = 0; g < ng; g++) \
	{ \
		uint64		hi = qhi ? qhi[order[q0 + g].row] : lo[g]; \
		uint32		row = packed ? (uint32) packed[q0 + g] : order[q0 + g].unused; \
		uint32		before = cnt; \
\
		for (l = 0; l < levels; l++) \
		{ \
			uint64		pos = l < d ? shared_first[l] : \
				group_first[(Size) (l - d) * EYTZ_GROUP + g]; \
\
			if (pos == NO_SLOT || *SLOT_KEYS(KT, PAGED, pos) > hi) \
				continue; \
			if (!NAME##_level(keys, kp, kpp, pos, level_end[l], hi, row, limit, out, mkeys, &cnt)) \
			{ \
				*n = before; \
				return g; \
			} \
		} \
	} \
	*n = cnt; \
	return ng; \
} \
\
static uint32 \
NAME(const EytzLayoutImage *img, const char *const *kp, const uint64 *level_end, \
	 const EytzMatch *order, const uint64 *packed, uint64 base, \
	 const uint64 *qhi, uint32 nq, uint32 limit, EytzMatch *out, uint64 *mkeys, uint32 *n, \
	 uint64 *bad_slot, bool group) \
{ \
	const KT   *keys = (const KT *) img->keys; \
	const uint32 k = FANOUT ? FANOUT : img->meta.fanout; \
	const uint64 kpp = KPP ? KPP : img->meta.keys_per_page; \
	uint32		levels = img->meta.levels; \
	LevelStep	step[EYTZ_MAX_LEVELS]; \
	uint32		depth = 0; \
	uint32		cnt = *n; \
	uint32		q; \
	uint64		prev_lo = 0; \
	bool		bad = false; \
\
	if (group) \
	{ \
		for (q = 0; q < nq;) \
		{ \
			uint32		ng = Min(nq - q, EYTZ_GROUP), \
						done; \
\
			CHECK_FOR_INTERRUPTS(); \
			done = NAME##_group(keys, kp, kpp, level_end, levels, k, order, packed, \
								base, qhi, q, ng, limit, out, mkeys, &cnt, &bad, bad_slot); \
			q += done; \
			if (done < ng) \
				break; \
		} \
		goto end; \
	} \
	for (q = 0; q < nq; q++) \
	{ \
		uint64		lo = GROUP_LO(q); \
		uint64		hi = qhi ? qhi[order[q].row] : lo; \
		uint32		row = packed ? (uint32) packed[q] : order[q].unused; \
		uint32		before = cnt; \
		uint32		l = 0; \
		uint32		m; \
		uint64		s, \
					lb, \
					ub, \
					min_first_key, \
					pos; \
\
		if ((q & 0x3FFF) == 0x3FFF) \
			CHECK_FOR_INTERRUPTS(); \
		/* a path is shared only in key order: out of order, from the root */ \
		if (lo < prev_lo) \
			depth = 0; \
		prev_lo = lo; \
		/* ub falls level by level: the shared levels are the top ones whose ub lo does not pass */ \
		l = depth; \
		while (l > 0 && lo > step[l - 1].ub) \
			l--; \
		/* the shared levels: matches where the previous query's were */ \
		for (m = 0; l > 0 && step[l - 1].min_first_key <= hi && m < l; m++) \
		{ \
			if (step[m].first == NO_SLOT || step[m].first_key > hi) \
				continue; \
			if (!NAME##_level(keys, kp, kpp, step[m].first, level_end[m], hi, row, limit, out, mkeys, &cnt)) \
				goto full; \
		} \
		s = l == 0 ? 0 : step[l - 1].child; \
		lb = l == 0 ? 0 : step[l - 1].lb; \
		ub = l == 0 ? PG_UINT64_MAX : step[l - 1].ub; \
		min_first_key = l == 0 ? PG_UINT64_MAX : step[l - 1].min_first_key; \
		for (; l < levels; l++) \
		{ \
			uint64		end = level_end[l]; \
			uint64		first_key; \
			uint32		j = 0; \
\
			if (s >= end) \
			{ \
				/* no node here, nor below */ \
				step[l].first = NO_SLOT; \
				step[l].min_first_key = min_first_key; \
				step[l].child = s; \
				step[l].lb = lb; \
				step[l].ub = ub; \
				continue; \
			} \
			if (likely(s + k - 1 <= end)) \
			{ \
				/* \
				 * A whole node: count its keys below lo and take lo's \
				 * neighbours without branches (which way a search goes is \
				 * a coin toss: a branch on it mispredicts every other level) \
				 */ \
				const KT   *nk = SLOT_KEYS(KT, PAGED, s); \
				uint32		c; \
				uint64		below, \
							above, \
							mask; \
\
				/* without a branch, unrolled where k is fixed */ \
				_Pragma("GCC unroll 16") \
				for (c = 0; c < k - 1; c++) \
					j += nk[c] < lo; \
				/* pages are not checked ahead: each node on the way, here */ \
				if (PAGED) \
					NAME##_check(nk, k, s, lb, ub, &bad, bad_slot); \
				below = nk[j - (j > 0)]; \
				above = nk[j - (j == k - 1)]; \
				/* selects by masks: a compiler turns "j > 0 ? x : y" into a branch */ \
				mask = -(uint64) (j > 0); \
				lb = (below & mask) | (lb & ~mask); \
				mask = -(uint64) (j < k - 1); \
				ub = (above & mask) | (ub & ~mask); \
				pos = s + j; \
				/* past the node's keys the level goes on in the next node */ \
				first_key = *SLOT_KEYS(KT, PAGED, Min(pos, end - 1)); \
			} \
			else \
			{ \
				/* the partial node at the end of the bottom level */ \
				if (PAGED) \
					NAME##_check_partial(keys, kp, kpp, s, end, lb, ub, &bad, bad_slot); \
				while (s + j < end && *SLOT_KEYS(KT, PAGED, s + j) < lo) \
					j++; \
				if (j > 0) \
					lb = *SLOT_KEYS(KT, PAGED, s + j - 1); \
				pos = s + j; \
				first_key = pos < end ? *SLOT_KEYS(KT, PAGED, pos) : 0; \
				if (pos < end) \
					ub = Min(ub, first_key); \
			} \
			step[l].first = pos < end ? pos : NO_SLOT; \
			step[l].first_key = first_key; \
			min_first_key = pos < end ? Min(min_first_key, first_key) : min_first_key; \
			step[l].min_first_key = min_first_key; \
			step[l].lb = lb; \
			step[l].ub = ub; \
			if (unlikely(pos < end && first_key <= hi) && \
				!NAME##_level(keys, kp, kpp, pos, end, hi, row, limit, out, mkeys, &cnt)) \
				goto full; \
			/* the next queries come to the slots right of this node */ \
			if (s + EYTZ_STREAM_AHEAD < end) \
				__builtin_prefetch(SLOT_KEYS(KT, PAGED, s + EYTZ_STREAM_AHEAD)); \
			s = eytz_child(s, j, k); \
			step[l].child = s; \
		} \
		depth = levels; \
		continue; \
full: \
		cnt = before; \
		break; \
	} \
end: \
	*n = cnt; \
	if (PAGED && bad) \
		return 0; \
	return q; \
}

typedef uint32 (*SortedSearch) (const EytzLayoutImage *img,
								const char *const *kp, const uint64 *level_end, const EytzMatch *order,
								const uint64 *packed, uint64 base,
								const uint64 *qhi,
								uint32 nq, uint32 limit,
								EytzMatch *out, uint64 *mkeys, uint32 *n,
								uint64 *bad_slot, bool group);

DEFINE_SORTED_SEARCH(sorted_search_4, uint32, 0, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_8, uint64, 0, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_4_ebs, uint32, 2, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_8_ebs, uint64, 2, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_4_eks9, uint32, EYTZ_DEFAULT_FANOUT, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_8_eks9, uint64, EYTZ_DEFAULT_FANOUT, false, 0)
/* the pinned view's: the default fan-outs with their keys per page fixed */
DEFINE_SORTED_SEARCH(paged_search_4, uint32, 0, true, 0)
DEFINE_SORTED_SEARCH(paged_search_8, uint64, 0, true, 0)
DEFINE_SORTED_SEARCH(paged_search_4_ebs, uint32, 2, true, KEYS_PER_PAGE(4, 2))
DEFINE_SORTED_SEARCH(paged_search_8_ebs, uint64, 2, true, KEYS_PER_PAGE(8, 2))
DEFINE_SORTED_SEARCH(paged_search_4_eks9, uint32, EYTZ_DEFAULT_FANOUT, true,
					 KEYS_PER_PAGE(4, EYTZ_DEFAULT_FANOUT))
DEFINE_SORTED_SEARCH(paged_search_8_eks9, uint64, EYTZ_DEFAULT_FANOUT, true,
					 KEYS_PER_PAGE(8, EYTZ_DEFAULT_FANOUT))

/*
 * The pinned view's resolve_tids: the TID pages are pinned, not locked.
 * VACUUM tombstones entries of a TID page in place, but only while it holds
 * the metapage exclusively and counts them there (eytzvacuum.c): so when
 * the metapage shows the same generation and tombstone count before and
 * after the reads, no write overlapped them and each TID read is whole.
 * Otherwise they are read again, each under its page's share lock.  The
 * slots wait in "unused" meanwhile (a pinned view has fewer than 2^32).
 * With a stage (keys only), each match's key moves with it, as in
 * resolve_tids.
 */
static uint32
resolve_page_tids(const EytzImage *image, EytzMatch *m, uint32 from, uint32 n,
				  EytzStage *stage)
{
	const ItemPointerData *const *tp = image->tidpages;
	EytzMetaPageData before,
				after;
	uint32		i,
				out = from;

	eytz_read_meta(image->index, &before);
	for (i = from; i < n; i++)
	{
		uint64		slot = m[i].tid;
		ItemPointerData t;

		if (i + EYTZ_RESOLVE_AHEAD < n)
		{
			uint64		ahead = m[i + EYTZ_RESOLVE_AHEAD].tid;

			__builtin_prefetch(&tp[ahead / EYTZ_TIDS_PER_PAGE][ahead % EYTZ_TIDS_PER_PAGE]);
		}
		t = tp[slot / EYTZ_TIDS_PER_PAGE][slot % EYTZ_TIDS_PER_PAGE];
		m[i].unused = (uint32) slot;
		m[i].tid = eytz_tid_pack(&t);
	}
	eytz_read_meta(image->index, &after);
	if (after.generation != before.generation || after.ndead != before.ndead)
	{
		for (i = from; i < n; i++)
		{
			uint64		slot = m[i].unused;
			Buffer		buf = image->bufs[image->img.meta.nkeypages + slot / EYTZ_TIDS_PER_PAGE];
			ItemPointerData t;

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			t = tp[slot / EYTZ_TIDS_PER_PAGE][slot % EYTZ_TIDS_PER_PAGE];
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			m[i].tid = eytz_tid_pack(&t);
		}
	}
	for (i = from; i < n; i++)
	{
		uint64		t = m[i].tid;
		OffsetNumber off = eytz_tid_offset(t);

		if (eytz_tid_block(t) == InvalidBlockNumber)
			continue;
		if (off < FirstOffsetNumber || off > MaxHeapTuplesPerPage)
			EYTZ_CORRUPT(image->index,
						 image->img.meta.tids_start + m[i].unused / EYTZ_TIDS_PER_PAGE,
						 "TID (%u,%u) has an offset outside 1..%d.",
						 eytz_tid_block(t), (unsigned) off, (int) MaxHeapTuplesPerPage);
		m[out].tid = t;
		m[out].row = m[i].row;
		m[out].unused = out;
		if (stage)
		{
			stage->keys[out] = stage->keys[i];
			stage->have[out] = true;
		}
		out++;
	}
	return out;
}

uint32
eytz_image_search(const EytzImage *image,
				  const EytzMatch *order, const uint64 *packed,
				  uint64 base, uint32 start, uint32 nq, const uint64 *hi, uint32 max,
				  EytzMatch *out, uint32 *nout, EytzStage *stage, bool slots,
				  uint64 nearby_bytes)
{
	const EytzLayoutImage *img = &image->img;
	uint64		level_end[EYTZ_MAX_LEVELS];
	uint64	   *mkeys;
	uint64		bad_slot = NO_SLOT;
	SortedSearch search;
	uint32		first = *nout;
	uint32		done;
	uint32		l;

	if (img->meta.levels > EYTZ_MAX_LEVELS)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("eytzgpu layout has %u levels", img->meta.levels)));
	if (img->meta.nentries == 0)
		return nq - start;
	for (l = 0; l < img->meta.levels; l++)
		level_end[l] = eytz_level_end(l, img->meta.fanout, img->meta.nentries);
	mkeys = stage ? stage->keys : NULL;
	/* the fan-outs a layout gets by default have a search of their own */
	if (image->keypages)
	{
		bool		fixed = img->meta.keys_per_page ==
			eytz_keys_per_page(img->meta.key_width, img->meta.fanout);

		/* the pages' entries give keys: no included values */
		Assert(stage == NULL || stage->ncols == 0);
		if (img->meta.key_width == 4)
			search = fixed && img->meta.fanout == 2 ? paged_search_4_ebs :
				fixed && img->meta.fanout == EYTZ_DEFAULT_FANOUT ? paged_search_4_eks9 :
				paged_search_4;
		else
			search = fixed && img->meta.fanout == 2 ? paged_search_8_ebs :
				fixed && img->meta.fanout == EYTZ_DEFAULT_FANOUT ? paged_search_8_eks9 :
				paged_search_8;
	}
	else if (img->meta.key_width == 4)
		search = img->meta.fanout == 2 ? sorted_search_4_ebs :
			img->meta.fanout == EYTZ_DEFAULT_FANOUT ? sorted_search_4_eks9 :
			sorted_search_4;
	else
		search = img->meta.fanout == 2 ? sorted_search_8_ebs :
			img->meta.fanout == EYTZ_DEFAULT_FANOUT ? sorted_search_8_eks9 :
			sorted_search_8;
	done = search(img, image->keypages, level_end, packed ? NULL : order + start,
				  packed ? packed + start : NULL, base, hi, nq - start, max,
				  out, mkeys, nout, &bad_slot,
				  search_by_group(img, nq - start, img->meta.key_width, nearby_bytes));
	if (bad_slot != NO_SLOT)
		EYTZ_CORRUPT(image->index, img->meta.keys_start + bad_slot / img->meta.keys_per_page,
					 "Node at slot " UINT64_FORMAT " is out of order with the keys on its search path.",
					 bad_slot);
	if (image->keypages)
	{
		*nout = resolve_page_tids(image, out, first, *nout, stage);
		image->use->keys += done;
	}
	else
		*nout = resolve_tids(image, out, first, *nout, stage,
							 slots && img->meta.ndead == 0);
	return done;
}
