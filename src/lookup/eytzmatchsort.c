/*
 * eytzmatchsort.c
 *		Sorting the batched join's matches by (heap TID, batch row), and the
 *		allocation of the seam's large arrays.
 *
 * A radix sort over only the bits in which the elements differ (a batch's
 * TIDs share their high block bits and their high offset bits, its rows
 * their high bits): one scatter on the highest of those bits into buckets
 * small enough for the cache, then an LSD radix sort of each bucket on the
 * lower bits there, so the array goes through memory once rather than once
 * a digit.  When the caller's matches already come in row order among equal
 * TIDs, the row digits are skipped (the sort is stable).  Small arrays take
 * qsort.
 *
 * The seam's large arrays (a batch's query order, a chunk and its sort
 * scratch, the staged values) are reused from scan to scan: fresh memory
 * costs the kernel a page fault and the zeroing of every page at its first
 * touch, a large share of a lookup's time (bench/join_results.md, "Design
 * measurements").
 */
#include "postgres.h"

#include <sys/mman.h>

#include "miscadmin.h"
#include "utils/memutils.h"

#include "eytzmatchsort.h"

/*
 * The first digit has at most 11 bits: 2048 buckets of scatter targets stay
 * within the L1/L2 and TLB reach of a core, which 16-bit digits (65536
 * targets) do not (slower despite fewer passes).  It has as many bits as
 * make buckets of about BUCKET_TARGET elements (64 kB), which the digits
 * below sort in the L2 cache, 12 bits at a time: faster than 11-bit LSD
 * passes over the whole array, and than buckets of 256 or 1024 elements
 * (bench/join_results.md, "Design measurements").
 */
#define TOP_BITS_MAX 11
#define BUCKET_TARGET 4096
#define LOCAL_BITS	12
/* row: 3 digits, tid: 6 */
#define MAX_LOCAL_PASSES 9
#define QSORT_BELOW 1024

typedef struct RadixPass
{
	bool		on_row;
	int			shift;
	int			bits;
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
	return (uint32) (((p->on_row ? (uint64) e->row : e->tid) >> p->shift) &
					 ((UINT64CONST(1) << p->bits) - 1));
}

/*
 * Passes of digits of at most bits bits over the bits set in vary, lowest
 * first.  Each digit starts at a bit that varies, so a run of bits that no
 * element sets costs no pass: a packed TID's high offset bits (offsets stay
 * below 256 on most pages) would otherwise add a pass to a sort by TID.
 */
static int
add_passes(RadixPass *passes, int np, uint64 vary, bool on_row, int bits)
{
	while (vary != 0)
	{
		int			lo = __builtin_ctzll(vary);

		passes[np].on_row = on_row;
		passes[np].shift = lo;
		passes[np].bits = bits;
		np++;
		vary = lo + bits >= 64 ? 0 : vary & ~((UINT64CONST(1) << (lo + bits)) - 1);
	}
	return np;
}

/* The radix digit of a bare 8-byte element that pass p sorts on */
static inline uint32
digit_u64(const uint64 *e, const RadixPass *p)
{
	return (uint32) ((*e >> p->shift) & ((UINT64CONST(1) << p->bits) - 1));
}

/* The digit of the highest bits of vary, at most bits of them */
static void
top_digit(RadixPass *top, uint64 vary, int bits, bool on_row)
{
	int			hi = 64 - __builtin_clzll(vary);

	top->on_row = on_row;
	top->shift = Max(hi - bits, __builtin_ctzll(vary));
	top->bits = hi - top->shift;
}

/*
 * The top digit for n elements whose varying bits are vary: as many of the
 * highest varying bits as make buckets of about BUCKET_TARGET elements
 */
static void
plan_top(RadixPass *top, uint64 vary, uint32 n, bool on_row)
{
	int			bits;

	for (bits = 1; bits < TOP_BITS_MAX && (n >> bits) > BUCKET_TARGET;)
		bits++;
	top_digit(top, vary, bits, on_row);
}

/*
 * For element type T and its digit function DIGIT: NAME_pass, one stable
 * counting pass of src[0..n) into dst on the digit of p, and NAME_buckets,
 * the scatter of m[0..n) on the top digit into buckets in tmp and the sort
 * of each bucket back into m by the local passes in cache.
 */
#define DEFINE_RADIX(NAME, T, DIGIT) \
static void \
NAME##_pass(const T *src, T *dst, uint32 n, const RadixPass *pass) \
{ \
	RadixPass	copy = *pass;	/* (as top_copy below) */ \
	const RadixPass *p = &copy; \
	uint32		hist[1 << LOCAL_BITS]; \
	uint32		nb = 1U << p->bits; \
	uint32		sum = 0; \
	uint32		b, \
				i; \
\
	memset(hist, 0, sizeof(uint32) * nb); \
	for (i = 0; i < n; i++) \
		hist[DIGIT(&src[i], p)]++; \
	for (b = 0; b < nb; b++) \
	{ \
		uint32		c = hist[b]; \
\
		hist[b] = sum; \
		sum += c; \
	} \
	for (i = 0; i < n; i++) \
		dst[hist[DIGIT(&src[i], p)]++] = src[i]; \
} \
\
static void \
NAME##_buckets(T *m, uint32 n, T *tmp, const RadixPass *top_digit, \
			   const RadixPass *local, int nlocal) \
{ \
	/* \
	 * a copy in registers: stores through m and tmp may alias the \
	 * caller's (PostgreSQL builds without strict aliasing) \
	 */ \
	RadixPass	top_copy = *top_digit; \
	const RadixPass *top = &top_copy; \
	uint32		start[(1 << TOP_BITS_MAX) + 1]; \
	uint32		next[1 << TOP_BITS_MAX]; \
	/* bounded for the compiler, which cannot see that bits is */ \
	uint32		nb = 1U << Min(top->bits, TOP_BITS_MAX); \
	uint32		i, \
				sum = 0; \
	int			b; \
\
	memset(start, 0, sizeof(uint32) * (nb + 1)); \
	for (i = 0; i < n; i++) \
		start[DIGIT(&m[i], top)]++; \
	for (b = 0; b <= (int) nb; b++) \
	{ \
		uint32		c = start[b]; \
\
		start[b] = sum; \
		sum += c; \
	} \
	memcpy(next, start, sizeof(uint32) * nb); \
	for (i = 0; i < n; i++) \
		tmp[next[DIGIT(&m[i], top)]++] = m[i]; \
\
	for (b = 0; b < (int) nb; b++) \
	{ \
		uint32		c = start[b + 1] - start[b]; \
		T		   *src = tmp + start[b]; \
		T		   *dst = m + start[b]; \
		int			p; \
\
		for (p = 0; p < nlocal && c > 1; p++) \
		{ \
			T		   *swap = src; \
\
			NAME##_pass(src, dst, c, &local[p]); \
			src = dst; \
			dst = swap; \
		} \
		if (src != m + start[b]) \
			memcpy(m + start[b], src, sizeof(T) * c); \
		if ((b & 255) == 255) \
			CHECK_FOR_INTERRUPTS(); \
	} \
}

DEFINE_RADIX(match, EytzMatch, digit)
DEFINE_RADIX(u64, uint64, digit_u64)

/*
 * Stable radix sort by tid, and first by row when by_row: one pass on the
 * highest varying bits scatters the array into buckets (the only pass over
 * all of it in memory), then each bucket is sorted on the lower varying
 * bits by LSD passes in cache.
 */
static void
radix_sort(EytzMatch *m, uint32 n, EytzMatch *tmp, bool by_row)
{
	RadixPass	top;
	RadixPass	local[MAX_LOCAL_PASSES];
	uint64		tid_vary = 0;
	uint32		row_vary = 0;
	uint64		top_vary;
	uint32		i;
	int			nlocal = 0;

	for (i = 1; i < n; i++)
	{
		tid_vary |= m[i].tid ^ m[0].tid;
		row_vary |= m[i].row ^ m[0].row;
	}
	if (!by_row)
		row_vary = 0;
	top_vary = tid_vary == 0 ? row_vary : tid_vary;
	if (top_vary == 0)
		return;					/* all equal */
	plan_top(&top, top_vary, n, tid_vary == 0);
	/* the bits below the top digit: the row's first (the lower half of the key) */
	if (by_row && !top.on_row)
		nlocal = add_passes(local, nlocal, row_vary, true, LOCAL_BITS);
	nlocal = add_passes(local, nlocal, top_vary & ((UINT64CONST(1) << top.shift) - 1),
						top.on_row, LOCAL_BITS);
	match_buckets(m, n, tmp, &top, local, nlocal);
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
 * Group m[0..n) by the highest TOP_BITS_MAX bits in which the TIDs differ:
 * radix_sort's scatter alone, one pass through memory
 */
void
eytz_match_group_blocks(EytzMatch *m, uint32 n, EytzMatch *tmp)
{
	RadixPass	top;
	uint64		vary = 0;
	uint32		i;

	if (n < QSORT_BELOW)
	{
		eytz_match_sort_keys(m, n, tmp);
		return;
	}
	for (i = 1; i < n; i++)
		vary |= m[i].tid ^ m[0].tid;
	if (vary == 0)
		return;
	top_digit(&top, vary, TOP_BITS_MAX, false);
	match_buckets(m, n, tmp, &top, NULL, 0);
}

/*
 * radix_sort's scheme over 8-byte elements, on the bits of "bits" only:
 * half the bytes of an EytzMatch through memory at each pass.
 */
void
eytz_sort_u64(uint64 *a, uint32 n, uint64 *tmp, uint64 bits)
{
	RadixPass	top;
	RadixPass	local[MAX_LOCAL_PASSES];
	uint64		vary = 0;
	uint32		i;
	int			nlocal;

	for (i = 1; i < n; i++)
		vary |= a[i] ^ a[0];
	vary &= bits;
	if (vary == 0)
		return;
	plan_top(&top, vary, n, false);
	nlocal = add_passes(local, 0, vary & ((UINT64CONST(1) << top.shift) - 1),
						false, LOCAL_BITS);
	u64_buckets(a, n, tmp, &top, local, nlocal);
}

/*
 * A large array (an image, a batch's query order, a chunk), backed by huge
 * pages where the kernel gives them on request: random probes into
 * hundreds of MB otherwise miss the TLB at nearly every level, and the
 * first touch of fresh memory costs one page fault per 4 kB (a large share
 * of a join's time: bench/join_results.md, "Design measurements").
 */
/* Arrays from this size on are advised onto huge pages */
#define HUGE_MIN ((Size) 2 * 1024 * 1024)

/* The block eytz_alloc_init frees: a few MB */
#define ALLOC_WARM_BLOCK ((Size) 4 * 1024 * 1024)

/*
 * From HUGE_MIN on, an array starts on a 2 MB boundary and its huge pages
 * run to the next one past its end: the kernel backs only the whole 2 MB
 * pages of an advised range with huge pages, and a range at malloc's
 * alignment would leave up to two of them at each end in 4 kB pages (the
 * page faults of a batch's arrays in a backend's first join).  The chunk
 * it came from is kept before it, for eytz_free_large.
 */
void *
eytz_alloc_large(MemoryContext cxt, Size size)
{
	Size		span = size >= HUGE_MIN ? TYPEALIGN(HUGE_MIN, size) : size;
	Size		pad = size >= HUGE_MIN ? HUGE_MIN : MAXIMUM_ALIGNOF;
	char	   *raw = MemoryContextAllocHuge(cxt, span + pad + sizeof(void *));
	char	   *p = (char *) TYPEALIGN(pad, raw + sizeof(void *));

	((void **) p)[-1] = raw;
	eytz_advise_huge(p, span);
	return p;
}

/* Free an array of eytz_alloc_large */
void
eytz_free_large(void *p)
{
	pfree(((void **) p)[-1]);
}

void
eytz_advise_huge(void *p, Size size)
{
#ifdef MADV_HUGEPAGE
	uintptr_t	start = TYPEALIGN(4096, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN_DOWN(4096, (uintptr_t) p + size);

	if (p != NULL && size >= HUGE_MIN && end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#endif
}

/*
 * Map all pages of a new scratch array below HUGE_MIN now, in one call: a
 * kept array may serve a larger request than the one it came for, whose
 * first touches of its further pages would each take a fault.  Larger
 * arrays are on huge pages, a fault each 2 MB.
 */
static void
populate_pages(void *p, Size size)
{
#ifdef MADV_POPULATE_WRITE
	uintptr_t	start = TYPEALIGN(4096, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN_DOWN(4096, (uintptr_t) p + size);

	if (end > start)
		(void) madvise((void *) start, end - start, MADV_POPULATE_WRITE);
#endif
}

/*
 * Set malloc up as a backend's first large free would.  glibc maps each
 * block above its threshold (128 kB at first) afresh and gives it back on
 * free, and returns its heap's free top above twice that, until the first
 * free of a mapped block raises both to the block's size.  Until then every
 * scan's arrays of a few hundred kB, ours and PostgreSQL's (an array's
 * elements, a bitmap's pages, the planner's), take a page fault for each of
 * their pages (each a few us; 14 us on a paravirtualized guest), scan after
 * scan in a backend that frees no larger block, as a shard's backend
 * answering batches of keys does.  A threshold set with mallopt or
 * MALLOC_MMAP_THRESHOLD_ is left as set (glibc ignores the raise then).
 */
void
eytz_alloc_init(void)
{
	void	   *volatile block = malloc(ALLOC_WARM_BLOCK);

	free(block);
}

/*
 * The scratch arrays a backend keeps: at most SCRATCH_KEEP of them (a
 * partitioned join's leaves take a few each) and SCRATCH_KEEP_BYTES of
 * address space in all, the smallest dropped first
 * (only the pages a scan touched take memory: a chunk array sized for
 * work_mem holds the matches of the largest chunk).  Arrays below
 * SCRATCH_MIN are freed.  Larger ones are kept rather than left to malloc:
 * freed, they come back at other places of its heap as the scans around
 * them allocate differently (a backend's second `= ANY` of 100k keys took a
 * page fault for each page of its arrays after the first had loaded the
 * image).
 */
#define SCRATCH_KEEP 128
#define SCRATCH_KEEP_BYTES ((Size) 1024 * 1024 * 1024)
#define SCRATCH_MIN ((Size) 64 * 1024)

/* The header before a scratch array */
typedef struct ScratchBlock
{
	Size		size;			/* usable bytes after the header */
	struct ScratchLease *lease; /* while taken; NULL: a plain chunk of cxt */
	const char *site;			/* the call site that took it last */
} ScratchBlock;

/* A taken array's tie to the context it was taken for */
typedef struct ScratchLease
{
	MemoryContextCallback cb;
	ScratchBlock *block;		/* NULL once given back */
} ScratchLease;

static MemoryContext scratch_cxt = NULL;
static ScratchBlock *scratch_kept[SCRATCH_KEEP];
static int	scratch_nkept = 0;

/* Keep a given-back array for the next taker, or free it */
static void
scratch_keep(ScratchBlock *b)
{
	Size		total = b->size;
	int			i;

	b->lease = NULL;
	/* make room: drop the smallest kept arrays while over the bounds */
	for (i = 0; i < scratch_nkept; i++)
		total += scratch_kept[i]->size;
	while (scratch_nkept > 0 &&
		   (scratch_nkept == SCRATCH_KEEP || total > SCRATCH_KEEP_BYTES))
	{
		int			smallest = 0;

		for (i = 1; i < scratch_nkept; i++)
			if (scratch_kept[i]->size < scratch_kept[smallest]->size)
				smallest = i;
		if (scratch_kept[smallest]->size > b->size)
			break;
		total -= scratch_kept[smallest]->size;
		eytz_free_large(scratch_kept[smallest]);
		scratch_kept[smallest] = scratch_kept[--scratch_nkept];
	}
	if (scratch_nkept < SCRATCH_KEEP && total <= SCRATCH_KEEP_BYTES)
		scratch_kept[scratch_nkept++] = b;
	else
		eytz_free_large(b);
}

/* The context the array was taken for is reset: the array comes back */
static void
scratch_lease_end(void *arg)
{
	ScratchLease *lease = (ScratchLease *) arg;

	if (lease->block)
		scratch_keep(lease->block);
}

void *
eytz_scratch_alloc_at(MemoryContext cxt, Size size, const char *site)
{
	ScratchBlock *b = NULL;
	ScratchLease *lease;
	int			best = -1;
	int			i;

	/*
	 * a small array is a plain chunk of cxt, without a lease (a lease stays
	 * in cxt until its reset: scans rescanned many times would pile them up)
	 */
	if (size < SCRATCH_MIN)
	{
		b = MemoryContextAlloc(cxt, sizeof(ScratchBlock) + size);
		b->size = size;
		b->lease = NULL;
		return b + 1;
	}
	/*
	 * the smallest kept array that fits, unless it is far too large, the
	 * site's own first: a scan's second run then takes each array where its
	 * first run did (by size alone, an array taken for another role would
	 * send a later one to fresh pages, each first touch a page fault)
	 */
	for (i = 0; i < scratch_nkept; i++)
	{
		ScratchBlock *k = scratch_kept[i];

		if (k->size < size || k->size / 4 > size)
			continue;
		if (best < 0 ||
			(k->site == site) > (scratch_kept[best]->site == site) ||
			((k->site == site) == (scratch_kept[best]->site == site) &&
			 k->size < scratch_kept[best]->size))
			best = i;
	}
	lease = MemoryContextAlloc(cxt, sizeof(ScratchLease));
	if (best >= 0)
	{
		b = scratch_kept[best];
		scratch_kept[best] = scratch_kept[--scratch_nkept];
	}
	else
	{
		if (scratch_cxt == NULL)
			scratch_cxt = AllocSetContextCreate(TopMemoryContext,
												"eytzgpu scratch arrays",
												ALLOCSET_SMALL_SIZES);
		b = eytz_alloc_large(scratch_cxt, sizeof(ScratchBlock) + size);
		b->size = size;
		if (size < HUGE_MIN)
			populate_pages(b, sizeof(ScratchBlock) + size);
	}
	b->lease = lease;
	b->site = site;
	lease->block = b;
	lease->cb = (MemoryContextCallback) {scratch_lease_end, lease, NULL};
	MemoryContextRegisterResetCallback(cxt, &lease->cb);
	return b + 1;
}

void
eytz_scratch_free(void *p)
{
	ScratchBlock *b = (ScratchBlock *) p - 1;

	if (b->lease == NULL)
	{
		pfree(b);
		return;
	}
	b->lease->block = NULL;
	scratch_keep(b);
}
