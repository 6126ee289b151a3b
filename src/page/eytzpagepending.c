/*
 * eytzpagepending.c
 *		The checked readers of the pending list (eytzam.h): the unsorted
 *		(key, TID) entries inserted since the last build or merge
 *		(eytzinsert.c writes them), read under the generation protocol of
 *		eytzpage.c.
 *
 * Every page must be a pending page, every TID one a heap page can hold,
 * and a walk of the list is bounded by the number of blocks in the file, so
 * that a cycle is reported (ERRCODE_INDEX_CORRUPTED) rather than followed
 * forever.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "eytzinclude.h"

void
eytz_pending_begin(EytzPendingReader *pr, Relation index,
				   const EytzMetaPageData *meta)
{
	pr->index = index;
	pr->meta = *meta;
	pr->next = meta->pending_head;
	pr->nblocks = RelationGetNumberOfBlocks(index);
	pr->steps = 0;
	pr->ncols = eytz_include_count(index);
}

/*
 * Copy the entries of the next page of the list into entries (room for
 * EYTZ_PENDING_PER_PAGE) and, if values is not NULL, their included values
 * into values and isnull ([i * ncols + c]); set *blkno; -1 at the end of the
 * list.  Inserts may append meanwhile: the walk sees their entries or not.
 */
int
eytz_pending_next_include(EytzPendingReader *pr, EytzPendingEntry *entries,
						  Datum *values, bool *isnull, BlockNumber *blkno)
{
	BlockNumber b = pr->next;
	Buffer		buf;
	Page		page;
	EytzPageOpaque opaque;
	Size		size = eytz_pending_entry_size(pr->ncols);
	const char *src;
	int			count,
				i,
				c;
	EytzInclude inc;

	if (b == InvalidBlockNumber)
		return -1;
	/* the list may have grown since: recount before calling it a cycle */
	if (++pr->steps > pr->nblocks || b >= pr->nblocks)
		pr->nblocks = RelationGetNumberOfBlocks(pr->index);
	if (pr->steps > pr->nblocks)
		EYTZ_CORRUPT(pr->index, b, "The pending list is longer than the file: it has a cycle.");
	eytz_include_get(pr->index, &inc);
	if (b == EYTZ_METAPAGE_BLKNO || b >= pr->nblocks ||
		eytz_block_in_region(&pr->meta, &inc, b))
		EYTZ_CORRUPT(pr->index, b, "The pending list reaches block %u, which cannot be a pending page.", b);

	buf = ReadBuffer(pr->index, b);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	eytz_check_page(pr->index, &pr->meta, page, b, EYTZ_PAGE_PENDING, 0);
	opaque = EytzPageGetOpaque(page);
	count = opaque->count;
	src = PageGetContents(page);
	for (i = 0; i < count; i++, src += size)
	{
		memcpy(&entries[i], src, sizeof(EytzPendingEntry));
		if (values != NULL)
		{
			uint32		mask;

			memcpy(&values[i * pr->ncols], src + sizeof(EytzPendingEntry),
				   pr->ncols * sizeof(Datum));
			memcpy(&mask, src + sizeof(EytzPendingEntry) + pr->ncols * sizeof(Datum),
				   sizeof(uint32));
			for (c = 0; c < pr->ncols; c++)
				isnull[i * pr->ncols + c] = (mask >> c) & 1;
		}
	}
	pr->next = opaque->next;
	UnlockReleaseBuffer(buf);
	for (i = 0; i < count; i++)
		if (!eytz_tid_ok(&entries[i].tid, false))
			eytz_page_bad_tid(pr->index, &pr->meta, b, &entries[i].tid);
	*blkno = b;
	return count;
}

/* eytz_pending_next_include() without the values */
int
eytz_pending_next(EytzPendingReader *pr, EytzPendingEntry *entries,
				  BlockNumber *blkno)
{
	return eytz_pending_next_include(pr, entries, NULL, NULL, blkno);
}

/*
 * All entries of the pending list meta names, palloc'd, with their included
 * values if values is not NULL (NULL outputs without INCLUDE), and (if
 * blocks is not NULL) the list's blocks.  Raises an error on a damaged list.
 */
void
eytz_read_pending_all(Relation index, const EytzMetaPageData *meta,
					  EytzPendingEntry **entries, Datum **values, bool **isnull,
					  uint64 *n, BlockNumber **blocks, int *nblocks)
{
	EytzPendingReader pr;
	uint64		cap = Max(meta->npending, 16) + EYTZ_PENDING_PER_PAGE;
	uint64		cnt = 0;
	int			bcap = 16;
	int			got;
	int			m;
	BlockNumber blkno;
	EytzPendingEntry *res = MemoryContextAllocHuge(CurrentMemoryContext,
												   cap * sizeof(EytzPendingEntry));
	Datum	   *vals = NULL;
	bool	   *nulls = NULL;

	if (blocks)
	{
		*blocks = palloc(sizeof(BlockNumber) * bcap);
		*nblocks = 0;
	}
	eytz_pending_begin(&pr, index, meta);
	m = pr.ncols;
	if (values && m > 0)
	{
		vals = MemoryContextAllocHuge(CurrentMemoryContext, cap * m * sizeof(Datum));
		nulls = MemoryContextAllocHuge(CurrentMemoryContext, cap * m * sizeof(bool));
	}
	for (;;)
	{
		if (cap - cnt < EYTZ_PENDING_PER_PAGE)
		{
			cap *= 2;
			res = repalloc_huge(res, cap * sizeof(EytzPendingEntry));
			if (vals)
			{
				vals = repalloc_huge(vals, cap * m * sizeof(Datum));
				nulls = repalloc_huge(nulls, cap * m * sizeof(bool));
			}
		}
		got = eytz_pending_next_include(&pr, res + cnt,
										vals ? vals + cnt * m : NULL,
										nulls ? nulls + cnt * m : NULL, &blkno);
		if (got < 0)
			break;
		cnt += got;
		if (blocks)
		{
			if (*nblocks == bcap)
			{
				bcap *= 2;
				*blocks = repalloc(*blocks, sizeof(BlockNumber) * bcap);
			}
			(*blocks)[(*nblocks)++] = blkno;
		}
		CHECK_FOR_INTERRUPTS();
	}
	*entries = res;
	*n = cnt;
	if (values)
	{
		*values = vals;
		*isnull = nulls;
	}
}

void
eytz_read_pending(Relation index, const EytzMetaPageData *meta,
				  EytzPendingEntry **entries, uint64 *n,
				  BlockNumber **blocks, int *nblocks)
{
	eytz_read_pending_all(index, meta, entries, NULL, NULL, n, blocks, nblocks);
}

void
eytz_read_pending_include(Relation index, const EytzMetaPageData *meta,
						  EytzPendingEntry **entries, Datum **values,
						  bool **isnull, uint64 *n)
{
	eytz_read_pending_all(index, meta, entries, values, isnull, n, NULL, NULL);
}
