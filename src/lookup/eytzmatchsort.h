/*
 * eytzmatchsort.h
 *		A match of the batched join, (heap TID, batch row), its sort and the
 *		allocation of large arrays: a leaf shared by the lookup seam
 *		(eytzlookup.c), the CPU search (eytzimagesearch.c) and the GPU
 *		copies (eytzgpucopy.c).
 */
#ifndef EYTZMATCHSORT_H
#define EYTZMATCHSORT_H

#include "postgres.h"

#include "eytzam.h"			/* EYTZ_MAX_INCLUDE */

/* One match: a packed TID (eytz_tid_pack) and the batch row that asked */
typedef struct EytzMatch
{
	uint64		tid;
	uint32		row;
	uint32		unused;
} EytzMatch;

/*
 * An index-only match whose heap page the caller knows all-visible may be
 * left unresolved: its tid is then its layout slot with this bit set (a
 * packed TID has 48 bits)
 */
#define EYTZ_MATCH_SLOT (UINT64CONST(1) << 63)

/*
 * Sort m[0..n) by (tid, row) and drop repeated (tid, row) pairs; returns the
 * new count.  tmp is scratch of n entries (the radix sort's other buffer).
 * rows_in_order: matches of equal tid already come in row order (a stable
 * sort by tid then suffices).
 */
extern uint32 eytz_match_sort(EytzMatch *m, uint32 n, EytzMatch *tmp,
							  bool rows_in_order);

/*
 * Sort m[0..n) by tid alone (tmp as above), entries numbered 0..n-1 in
 * "row" by the caller: ties stay in that order.  "unused" travels along
 * (callers may carry a value in it).
 */
extern void eytz_match_sort_keys(EytzMatch *m, uint32 n, EytzMatch *tmp);

/*
 * Order m[0..n) by the high bits of their TIDs only (tmp as above): one
 * pass, which leaves the matches of a range of heap blocks together (the
 * range 1/2048 of the chunk's spread of blocks, or finer), in no order
 * within it.  Enough for an index-only scan, which reads the visibility map
 * page of each block (a map page covers tens of thousands of blocks).
 */
extern void eytz_match_group_blocks(EytzMatch *m, uint32 n, EytzMatch *tmp);

/*
 * Sort a[0..n) stably by the bits set in "bits" alone (tmp: scratch of n):
 * for 8-byte records that carry a key in those bits and a payload in the
 * others.
 */
extern void eytz_sort_u64(uint64 *a, uint32 n, uint64 *tmp, uint64 bits);

/*
 * Where an index-only join's lookup collects the values of its matches (the
 * CPU search, the GPU glue, the page walk): at each match's position in the
 * chunk as collected, which the match's "unused" keeps through the sort:
 * the entry's encoded key and the included columns cols[0..ncols).
 */
typedef struct EytzStage
{
	int			ncols;
	int			cols[EYTZ_MAX_INCLUDE];
	uint64	   *keys;
	bool	   *have;			/* the values are the entry's */
	Datum	   *values[EYTZ_MAX_INCLUDE];
	bool	   *isnull[EYTZ_MAX_INCLUDE];
} EytzStage;

/*
 * What one GPU lookup call (the backend's copy or the service) answered:
 * the matches of the first nq_done queries, nout of them, and whether their
 * values were staged
 */
typedef struct EytzGpuAnswer
{
	uint32		nout;
	uint32		nq_done;
	double		kernel_ms;
	double		transfer_ms;
	bool		staged;
} EytzGpuAnswer;

/* At load: malloc set to keep blocks below a few MB (see the function) */
extern void eytz_alloc_init(void);
/* A large array in cxt, on huge pages where the kernel has them (eytz_free_large frees it) */
extern void *eytz_alloc_large(MemoryContext cxt, Size size);
extern void eytz_free_large(void *p);
/* Ask for huge pages under an array allocated otherwise (p may be NULL) */
extern void eytz_advise_huge(void *p, Size size);

/*
 * A large scratch array (as eytz_alloc_large) that the backend reuses from
 * scan to scan: given back by eytz_scratch_free, or when cxt is reset or
 * deleted (also on error), and kept for the next taker instead of freed.
 * Each call site (site: its file and line) gets back the array it had, so
 * that a scan repeated takes the pages its first run touched.
 */
#define eytz_scratch_alloc(cxt, size) \
	eytz_scratch_alloc_at((cxt), (size), __FILE__ ":" CppAsString2(__LINE__))
extern void *eytz_scratch_alloc_at(MemoryContext cxt, Size size, const char *site);
extern void eytz_scratch_free(void *p);

#endif							/* EYTZMATCHSORT_H */
