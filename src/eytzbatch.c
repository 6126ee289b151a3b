/*
 * eytzbatch.c
 *		The CPU side of the batched join: an in-memory image of an index's
 *		layout (loaded from the pages under the generation protocol and cached
 *		per backend), the pending list, and the batched search itself.
 *
 * The batched search answers a whole batch of key ranges at once: the
 * queries are radix-sorted by their low key, so consecutive searches share
 * their path through the upper levels, and are then walked in groups of
 * EYTZ_GROUP, one level at a time for every member of the group, with the
 * next level's node prefetched while the others are searched (group
 * prefetching).  Each level is a per-level range scan as in eytzsearch.c,
 * but on flat arrays: no buffer manager, no locks, no per-row descent.
 *
 * The image holds no buffer pin, so a TID it returns may have been vacuumed
 * since; the executor rechecks the key on the fetched heap tuple.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzjoin.h"

/* searches advanced together, level by level */
#define EYTZ_GROUP 16

static MemoryContext image_cxt = NULL;

static void
image_free(EytzCacheEntry *entry)
{
	EytzImage  *image = (EytzImage *) entry;

	if (image->img.keys)
		pfree(image->img.keys);
	if (image->img.tids)
		pfree(image->img.tids);
	pfree(image);
}

static EytzCache image_cache = {NULL, 0, 0, image_free};

/* Drop the cached images of an index (InvalidOid: of every index) */
void
eytz_image_invalidate(Oid indexoid)
{
	eytz_cache_drop(&image_cache, indexoid, NULL);
}

/*
 * Load the layout that meta describes; NULL if a page is not what the meta
 * says (a merge switched the region meanwhile: the caller retries).
 */
static EytzImage *
image_load(Relation index, const EytzMetaPageData *meta)
{
	uint64		n = meta->nentries;
	int			kw = meta->key_width;
	EytzImage  *image;
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	uint64		pos = 0;
	uint32		p;
	bool		ok = true;

	if (image_cxt == NULL)
		image_cxt = AllocSetContextCreate(TopMemoryContext,
										  "eytzgpu layout images",
										  ALLOCSET_DEFAULT_SIZES);
	image = MemoryContextAllocZero(image_cxt, sizeof(EytzImage));
	image->img.meta = *meta;
	if (n > 0)
	{
		image->img.keys = MemoryContextAllocHuge(image_cxt, n * kw);
		image->img.tids = MemoryContextAllocHuge(image_cxt, n * sizeof(uint64));
	}

	for (p = 0; p < meta->nkeypages && ok; p++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, meta->keys_start + p,
											 RBM_NORMAL, strategy);
		Page		page;
		uint64		cnt = Min((uint64) meta->keys_per_page, n - pos);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || EytzPageGetOpaque(page)->flags != EYTZ_PAGE_KEYS)
			ok = false;
		else
			memcpy((char *) image->img.keys + pos * kw, PageGetContents(page), cnt * kw);
		UnlockReleaseBuffer(buf);
		pos += cnt;
		CHECK_FOR_INTERRUPTS();
	}
	pos = 0;
	for (p = 0; p < meta->ntidpages && ok; p++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, meta->tids_start + p,
											 RBM_NORMAL, strategy);
		Page		page;
		uint64		cnt = Min((uint64) EYTZ_TIDS_PER_PAGE, n - pos);
		uint64		i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || EytzPageGetOpaque(page)->flags != EYTZ_PAGE_TIDS)
			ok = false;
		else
		{
			ItemPointerData *src = (ItemPointerData *) PageGetContents(page);

			for (i = 0; i < cnt; i++)
				image->img.tids[pos + i] = eytz_tid_pack(&src[i]);
		}
		UnlockReleaseBuffer(buf);
		pos += cnt;
		CHECK_FOR_INTERRUPTS();
	}
	FreeAccessStrategy(strategy);
	if (!ok)
	{
		image_free(&image->ce);
		return NULL;
	}
	return image;
}

/*
 * A pinned image of the layout generation meta describes, from the cache or
 * loaded now; NULL if the index changed under the load (retry with a fresh
 * metapage).  Release with eytz_image_release().
 */
EytzImage *
eytz_image_acquire(Relation index, const EytzMetaPageData *meta)
{
	EytzImage  *image;
	EytzMetaPageData after;

	image = (EytzImage *) eytz_cache_pin(&image_cache, index, meta->generation);
	if (image)
		return image;
	image = image_load(index, meta);
	if (image == NULL)
		return NULL;
	eytz_read_meta(index, &after);
	if (after.generation != meta->generation)
	{
		image_free(&image->ce);
		return NULL;
	}
	/* uncached when it does not fit: freed at its release */
	(void) eytz_cache_add(&image_cache, &image->ce, index, meta->generation,
						  meta->nentries * (meta->key_width + sizeof(uint64)), 1,
						  (Size) eytz_image_cache_limit_mb * 1024 * 1024);
	return image;
}

void
eytz_image_release(EytzImage *image)
{
	eytz_cache_release(&image_cache, &image->ce);
}

static int
pending_cmp(const void *a, const void *b)
{
	const EytzPendingEntry *x = a;
	const EytzPendingEntry *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return ItemPointerCompare((ItemPointer) &x->tid, (ItemPointer) &y->tid);
}

void
eytz_sort_pending(EytzPendingEntry *entries, uint64 n)
{
	if (n > 1)
		qsort(entries, n, sizeof(EytzPendingEntry), pending_cmp);
}

void
eytz_match_add(EytzMatchBuf *buf, uint64 tid, uint32 row)
{
	if (buf->n == buf->cap)
	{
		buf->cap = Max(buf->cap * 2, 1024);
		if (buf->m)
			buf->m = repalloc_huge(buf->m, buf->cap * sizeof(EytzMatch));
		else
			buf->m = MemoryContextAllocHuge(CurrentMemoryContext,
											buf->cap * sizeof(EytzMatch));
	}
	buf->m[buf->n].tid = tid;
	buf->m[buf->n].row = row;
	buf->n++;
}

/*
 * Stable LSD radix sort of EytzMatch by tid (and, first, by row when
 * by_row_too), 16-bit digits, skipping digits that every element shares.
 * The "tid" field doubles as the sort key of query lists.
 */
static void
radix_matches(EytzMatch *a, uint64 n, bool by_row_too, bool by_tid)
{
	EytzMatch  *tmp;
	uint64	   *hist;
	int			pass;

	if (n < 2)
		return;
	tmp = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(EytzMatch));
	hist = palloc(sizeof(uint64) * 65536);
	/* passes 0-1: row digits; passes 2-5: tid digits */
	for (pass = by_row_too ? 0 : 2; pass < (by_tid ? 6 : 2); pass++)
	{
		int			shift = pass < 2 ? pass * 16 : (pass - 2) * 16;
		bool		on_row = pass < 2;
		uint64		i,
					sum = 0;
		int			b;

#define DIGIT(e) ((on_row ? ((uint64) (e).row >> shift) : ((e).tid >> shift)) & 0xFFFF)
		memset(hist, 0, sizeof(uint64) * 65536);
		for (i = 0; i < n; i++)
			hist[DIGIT(a[i])]++;
		if (hist[DIGIT(a[0])] == n)
			continue;
		for (b = 0; b < 65536; b++)
		{
			uint64		c = hist[b];

			hist[b] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			tmp[hist[DIGIT(a[i])]++] = a[i];
#undef DIGIT
		/* back into the caller's array (simpler than ping-pong ownership) */
		memcpy(a, tmp, n * sizeof(EytzMatch));
		CHECK_FOR_INTERRUPTS();
	}
	pfree(hist);
	pfree(tmp);
}

static int
match_cmp_tid_row(const void *x, const void *y)
{
	const EytzMatch *a = x;
	const EytzMatch *b = y;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	return 0;
}

static int
match_cmp_tid(const void *x, const void *y)
{
	const EytzMatch *a = x;
	const EytzMatch *b = y;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return 0;
}

/*
 * Matches in heap (TID) order, so the heap is fetched block by block; with
 * by_row_too, equal TIDs are also in row order so duplicates are adjacent.
 */
void
eytz_sort_matches(EytzMatchBuf *buf, bool by_row_too)
{
	if (buf->n < 2)
		return;
	/* a 64k-entry histogram per pass does not pay for small batches */
	if (buf->n < 4096)
		qsort(buf->m, buf->n, sizeof(EytzMatch),
			  by_row_too ? match_cmp_tid_row : match_cmp_tid);
	else
		radix_matches(buf->m, buf->n, by_row_too, true);
}

/* The group-prefetching per-level range scan, for one key width */
#define DEFINE_BATCH_SEARCH(NAME, KT) \
static void \
NAME(const EytzLayoutImage *img, const EytzMatch *order, uint32 nq, \
	 const uint64 *lo, const uint64 *hi, const uint32 *rows, EytzMatchBuf *out) \
{ \
	const KT   *keys = (const KT *) img->keys; \
	const uint64 *tids = img->tids; \
	uint32		k = img->meta.fanout; \
	uint64		n = img->meta.nentries; \
	uint32		levels = img->meta.levels; \
	uint64		level_end[64]; \
	uint32		l; \
	uint32		base; \
\
	for (l = 0; l < levels && l < 64; l++) \
		level_end[l] = eytz_level_end(l, k, n); \
	for (base = 0; base < nq; base += EYTZ_GROUP) \
	{ \
		uint32		cnt = Min(EYTZ_GROUP, nq - base); \
		uint64		node[EYTZ_GROUP]; \
		uint32		live = 0; \
		uint32		g; \
\
		for (g = 0; g < cnt; g++) \
		{ \
			node[g] = 0; \
			live |= 1u << g; \
		} \
		for (l = 0; l < levels && live; l++) \
		{ \
			uint64		end = level_end[l]; \
\
			for (g = 0; g < cnt; g++) \
			{ \
				uint32		q = (uint32) order[base + g].row; \
				uint64		qlo = lo[q]; \
				uint64		qhi = hi[q]; \
				uint64		s = node[g]; \
				uint32		j = 0; \
				uint64		pos; \
\
				if (!(live & (1u << g))) \
					continue; \
				if (s >= end) \
				{ \
					live &= ~(1u << g); \
					continue; \
				} \
				while (j < k - 1 && s + j < end && keys[s + j] < qlo) \
					j++; \
				for (pos = s + j; pos < end && keys[pos] <= qhi; pos++) \
				{ \
					uint64		t = tids[pos]; \
\
					if (eytz_tid_block(t) != InvalidBlockNumber) \
						eytz_match_add(out, t, rows[q]); \
				} \
				node[g] = eytz_child(s, j, k); \
				if (node[g] < n) \
					__builtin_prefetch(&keys[node[g]]); \
			} \
		} \
		if ((base & 0xFFFF) == 0) \
			CHECK_FOR_INTERRUPTS(); \
	} \
}

DEFINE_BATCH_SEARCH(batch_search_4, uint32)
DEFINE_BATCH_SEARCH(batch_search_8, uint64)

/*
 * Append (TID, rows[i]) for every live layout entry whose key lies in
 * [lo[i], hi[i]], for the nq queries of a batch.
 */
void
eytz_batch_search(const EytzLayoutImage *img, const uint64 *lo,
				  const uint64 *hi, const uint32 *rows, uint32 nq,
				  EytzMatchBuf *out)
{
	EytzMatch  *order;
	uint32		i;

	if (nq == 0 || img->meta.nentries == 0)
		return;
	if (img->meta.levels > 64)
		elog(ERROR, "eytzgpu layout has %u levels", img->meta.levels);

	/* sorted by low key: neighbouring searches share their upper path */
	order = MemoryContextAllocHuge(CurrentMemoryContext, nq * sizeof(EytzMatch));
	for (i = 0; i < nq; i++)
	{
		order[i].tid = lo[i];
		order[i].row = i;
	}
	if (nq < 4096)
		qsort(order, nq, sizeof(EytzMatch), match_cmp_tid_row);
	else
		radix_matches(order, nq, false, true);

	if (img->meta.key_width == 4)
		batch_search_4(img, order, nq, lo, hi, rows, out);
	else
		batch_search_8(img, order, nq, lo, hi, rows, out);
	pfree(order);
}

/* The same for the pending entries (sorted by key) */
void
eytz_batch_search_pending(const EytzPendingEntry *pending, uint64 np,
						  const uint64 *lo, const uint64 *hi,
						  const uint32 *rows, uint32 nq, EytzMatchBuf *out)
{
	uint32		i;

	if (np == 0)
		return;
	for (i = 0; i < nq; i++)
	{
		uint64		a = 0,
					b = np;

		while (a < b)
		{
			uint64		mid = a + (b - a) / 2;

			if (pending[mid].key < lo[i])
				a = mid + 1;
			else
				b = mid;
		}
		for (; a < np && pending[a].key <= hi[i]; a++)
			eytz_match_add(out, eytz_tid_pack((ItemPointer) &pending[a].tid), rows[i]);
	}
}
