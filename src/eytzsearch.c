/*
 * eytzsearch.c
 *		CPU search of an eytzgpu index through the buffer manager.
 *
 * A key range [lo, hi] is answered with the per-level range scan of the
 * paper's section 5: follow the lower-bound search path of lo from the root;
 * on every level, the matching entries are the run that starts at the first
 * key >= lo of the node on the path and ends before the first key > hi.
 * The pending list is scanned entry by entry.
 *
 * Scans take no heavyweight lock.  A merge never overwrites the region or
 * pending pages the metapage currently names; it writes elsewhere and then
 * bumps the generation.  So a collection that sees the same generation before
 * and after reading is consistent, and one that does not is redone.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "eytzgpu.h"

/* One pinned, share-locked page at a time */
typedef struct PageReader
{
	Relation	index;
	Buffer		buf;
	BlockNumber blkno;
	char	   *contents;
} PageReader;

static void
reader_init(PageReader *r, Relation index)
{
	r->index = index;
	r->buf = InvalidBuffer;
	r->blkno = InvalidBlockNumber;
	r->contents = NULL;
}

static void
reader_release(PageReader *r)
{
	if (BufferIsValid(r->buf))
		UnlockReleaseBuffer(r->buf);
	r->buf = InvalidBuffer;
	r->blkno = InvalidBlockNumber;
}

static inline char *
reader_page(PageReader *r, BlockNumber blkno, uint16 expect)
{
	if (blkno != r->blkno)
	{
		Page		page;

		reader_release(r);
		r->buf = ReadBuffer(r->index, blkno);
		LockBuffer(r->buf, BUFFER_LOCK_SHARE);
		r->blkno = blkno;
		page = BufferGetPage(r->buf);
		if (PageIsNew(page) || EytzPageGetOpaque(page)->flags != expect)
			return NULL;
		r->contents = PageGetContents(page);
	}
	return r->contents;
}

typedef struct TidSink
{
	ItemPointerData **tids;
	int64	   *ntids;
	int64	   *ncap;
} TidSink;

static inline void
sink_add(TidSink *s, const ItemPointerData *tid)
{
	if (*s->ntids == *s->ncap)
	{
		*s->ncap *= 2;
		*s->tids = repalloc_huge(*s->tids, sizeof(ItemPointerData) * *s->ncap);
	}
	(*s->tids)[(*s->ntids)++] = *tid;
}

typedef struct LayoutReader
{
	const EytzMetaPageData *meta;
	PageReader	keys;
	PageReader	tids;
	bool		stale;			/* saw a page that is not what the meta says */
} LayoutReader;

static inline uint64
layout_key(LayoutReader *lr, uint64 pos)
{
	const EytzMetaPageData *m = lr->meta;
	char	   *c = reader_page(&lr->keys, m->keys_start + pos / m->keys_per_page,
								EYTZ_PAGE_KEYS);

	if (c == NULL)
	{
		lr->stale = true;
		return 0;
	}
	return eytz_key_at(c, m->key_width, pos % m->keys_per_page);
}

static inline void
layout_emit(LayoutReader *lr, uint64 pos, TidSink *sink)
{
	const EytzMetaPageData *m = lr->meta;
	char	   *c = reader_page(&lr->tids, m->tids_start + pos / EYTZ_TIDS_PER_PAGE,
								EYTZ_PAGE_TIDS);
	ItemPointerData *tid;

	if (c == NULL)
	{
		lr->stale = true;
		return;
	}
	tid = &((ItemPointerData *) c)[pos % EYTZ_TIDS_PER_PAGE];
	if (ItemPointerGetBlockNumberNoCheck(tid) != InvalidBlockNumber)
		sink_add(sink, tid);
}

/* Per-level range scan of [lo, hi]; false if the pages were not as expected */
static bool
search_range(LayoutReader *lr, uint64 lo, uint64 hi, TidSink *sink)
{
	const EytzMetaPageData *m = lr->meta;
	uint32		k = m->fanout;
	uint64		n = m->nentries;
	uint64		node = 0;
	uint32		level;

	for (level = 0; level < m->levels; level++)
	{
		uint64		level_end = eytz_level_end(level, k, n);
		uint32		j = 0;
		uint64		pos;

		if (node >= level_end)
			break;
		while (j < k - 1 && node + j < level_end && layout_key(lr, node + j) < lo &&
			   !lr->stale)
			j++;
		for (pos = node + j;
			 pos < level_end && layout_key(lr, pos) <= hi && !lr->stale; pos++)
			layout_emit(lr, pos, sink);
		if (lr->stale)
			return false;
		node = eytz_child(node, j, k);
	}
	return true;
}

/* Append the TIDs of layout entries within the ranges */
static void
eytz_search_layout(Relation index, const EytzMetaPageData *meta,
				   const EytzRange *ranges, int nranges,
				   ItemPointerData **tids, int64 *ntids, int64 *ncap)
{
	LayoutReader lr;
	TidSink		sink = {tids, ntids, ncap};
	int			i;
	bool		ok = true;

	if (meta->nentries == 0)
		return;
	lr.meta = meta;
	lr.stale = false;
	reader_init(&lr.keys, index);
	reader_init(&lr.tids, index);
	for (i = 0; i < nranges && ok; i++)
	{
		ok = search_range(&lr, ranges[i].lo, ranges[i].hi, &sink);
		CHECK_FOR_INTERRUPTS();
	}
	reader_release(&lr.keys);
	reader_release(&lr.tids);
	if (!ok)
		*ntids = -1;			/* caller rereads the metapage */
}

static inline bool
key_in_ranges(uint64 key, const EytzRange *ranges, int nranges)
{
	int			lo = 0,
				hi = nranges - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (key < ranges[mid].lo)
			hi = mid - 1;
		else if (key > ranges[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/*
 * All live pending entries of the list meta names, palloc'd, and (if blocks
 * is not NULL) the list's blocks; false if a page is not a pending page (the
 * list was merged away meanwhile: the caller rereads the metapage).
 */
bool
eytz_read_pending(Relation index, const EytzMetaPageData *meta,
				  EytzPendingEntry **entries, uint64 *n,
				  BlockNumber **blocks, int *nblocks)
{
	BlockNumber blkno = meta->pending_head;
	uint64		cap = Max(meta->npending, 16);
	uint64		cnt = 0;
	int			bcap = 16;
	EytzPendingEntry *res = MemoryContextAllocHuge(CurrentMemoryContext,
												   cap * sizeof(EytzPendingEntry));

	if (blocks)
	{
		*blocks = palloc(sizeof(BlockNumber) * bcap);
		*nblocks = 0;
	}
	while (blkno != InvalidBlockNumber)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		EytzPageOpaque opaque;
		EytzPendingEntry *src;
		int			i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = EytzPageGetOpaque(page);
		if (PageIsNew(page) || opaque->flags != EYTZ_PAGE_PENDING ||
			opaque->count > EYTZ_PENDING_PER_PAGE)
		{
			UnlockReleaseBuffer(buf);
			pfree(res);
			return false;
		}
		src = (EytzPendingEntry *) PageGetContents(page);
		for (i = 0; i < opaque->count; i++)
		{
			if (ItemPointerGetBlockNumberNoCheck(&src[i].tid) == InvalidBlockNumber)
				continue;
			if (cnt == cap)
			{
				cap *= 2;
				res = repalloc_huge(res, cap * sizeof(EytzPendingEntry));
			}
			res[cnt++] = src[i];
		}
		if (blocks)
		{
			if (*nblocks == bcap)
			{
				bcap *= 2;
				*blocks = repalloc(*blocks, sizeof(BlockNumber) * bcap);
			}
			(*blocks)[(*nblocks)++] = blkno;
		}
		blkno = opaque->next;
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}
	*entries = res;
	*n = cnt;
	return true;
}

/* Append the TIDs of pending entries within the ranges */
static void
eytz_search_pending(Relation index, const EytzMetaPageData *meta,
					const EytzRange *ranges, int nranges,
					ItemPointerData **tids, int64 *ntids, int64 *ncap)
{
	TidSink		sink = {tids, ntids, ncap};
	EytzPendingEntry *entries;
	uint64		n,
				i;

	if (!eytz_read_pending(index, meta, &entries, &n, NULL, NULL))
	{
		*ntids = -1;
		return;
	}
	for (i = 0; i < n; i++)
		if (key_in_ranges(entries[i].key, ranges, nranges))
			sink_add(&sink, &entries[i].tid);
	pfree(entries);
}

/*
 * All TIDs of the index within the ranges: layout and pending list, read
 * under one generation (see the file header).
 */
void
eytz_collect_tids(Relation index, const EytzRange *ranges, int nranges,
				  ItemPointerData **tids, int64 *ntids)
{
	int64		cap = 64;
	int			attempt;

	*tids = palloc(sizeof(ItemPointerData) * cap);
	for (attempt = 0;; attempt++)
	{
		EytzMetaPageData meta;
		EytzMetaPageData after;

		*ntids = 0;
		eytz_read_meta(index, &meta);
		if (nranges > 0)
			eytz_search_layout(index, &meta, ranges, nranges, tids, ntids, &cap);
		if (nranges > 0 && *ntids >= 0)
			eytz_search_pending(index, &meta, ranges, nranges, tids, ntids, &cap);
		eytz_read_meta(index, &after);
		if (after.generation == meta.generation)
		{
			if (*ntids < 0)
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("eytzgpu index \"%s\" has a page that does not match its metapage",
								RelationGetRelationName(index)),
						 errhint("Run eytzgpu_verify() on it, and REINDEX it.")));
			return;
		}
		if (attempt > 1000)
			elog(ERROR, "eytzgpu index \"%s\" keeps changing under the scan",
				 RelationGetRelationName(index));
	}
}
