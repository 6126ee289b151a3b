/*
 * eytzbuild.c
 *		CREATE INDEX for eytzgpu: collect, sort, lay out in Eytzinger order.
 *
 * The heap is scanned with table_index_build_scan(), the (key, TID) pairs are
 * radix-sorted in memory (bounded by maintenance_work_mem; the build errors
 * out with a hint rather than spilling), and the pages are written with the
 * one-read-one-write inverse permutation of cuda/eytz_layout.h: every slot
 * of the layout is loaded from its rank in the sorted arrays, page by page.
 * The whole index is WAL-logged once at the end with log_newpage_range().
 */
#include "postgres.h"

#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/rel.h"

#include "eytzgpu.h"
#include "eytzdevice.h"

typedef struct EytzBuildState
{
	const EytzKeyType *kt;
	EytzPairs	pairs;
} EytzBuildState;

/* Walks the slots of a layout in order, yielding each slot's sorted rank */
typedef struct EytzRankIter
{
	EytzShape	shape;
	uint32		level;
	uint64		level_start;
	uint64		level_end;
	uint64		stride;
} EytzRankIter;

static void
rank_iter_init(EytzRankIter *it, uint64 n, uint32 k)
{
	it->shape = eytz_shape(n, k);
	it->level = 0;
	it->level_start = 0;
	it->level_end = eytz_level_end(0, k, n);
	it->stride = eytz_level_stride(&it->shape, 0);
}

static inline uint64
rank_iter_rank(EytzRankIter *it, uint64 t)
{
	while (t >= it->level_end)
	{
		it->level++;
		it->level_start = eytz_level_start(it->level, it->shape.k);
		it->level_end = eytz_level_end(it->level, it->shape.k, it->shape.n);
		it->stride = eytz_level_stride(&it->shape, it->level);
	}
	return eytz_rank_in_level(&it->shape, it->level, t - it->level_start,
							  it->stride);
}

/* A zeroed, exclusively locked page at blkno (extending by one if needed) */
static Buffer
layout_buffer(Relation index, BlockNumber blkno)
{
	Buffer		buf;

	if (blkno >= RelationGetNumberOfBlocks(index))
	{
		buf = ReadBuffer(index, P_NEW);
		if (BufferGetBlockNumber(buf) != blkno)
			elog(ERROR, "unexpected block %u while extending eytzgpu index \"%s\" to %u",
				 BufferGetBlockNumber(buf), RelationGetRelationName(index), blkno);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	}
	else
		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_ZERO_AND_LOCK, NULL);
	return buf;
}

/*
 * Write the layout of n sorted pairs (or of pairs already in Eytzinger order,
 * if permuted: the GPU build) as key pages then TID pages from block start;
 * fill the layout fields of *meta.  Returns the block after the region.
 * Pages are dirtied in shared buffers; when use_wal, they are WAL-logged
 * before returning.
 */
BlockNumber
eytz_write_layout(Relation index, EytzPairs *pairs, bool permuted,
				  int key_width, int fanout, BlockNumber start, bool use_wal,
				  EytzMetaPageData *meta)
{
	uint64		n = pairs->n;
	int			kpp = eytz_keys_per_page(key_width, fanout);
	uint32		nkeypages = (n + kpp - 1) / kpp;
	uint32		ntidpages = (n + EYTZ_TIDS_PER_PAGE - 1) / EYTZ_TIDS_PER_PAGE;
	BlockNumber blkno = start;
	EytzRankIter it;
	uint64		t = 0;
	uint32		p;

	rank_iter_init(&it, n, fanout);
	for (p = 0; p < nkeypages; p++)
	{
		Buffer		buf = layout_buffer(index, blkno++);
		Page		page = BufferGetPage(buf);
		char	   *dst = PageGetContents(page);
		uint64		end = Min(n, t + kpp);
		uint64		first = t;

		eytz_init_page(page, EYTZ_PAGE_KEYS);
		for (; t < end; t++)
		{
			uint64		key = pairs->keys[permuted ? t : rank_iter_rank(&it, t)];

			if (key_width == 4)
				((uint32 *) dst)[t - first] = (uint32) key;
			else
				((uint64 *) dst)[t - first] = key;
		}
		((PageHeader) page)->pd_lower += (end - first) * key_width;
		MarkBufferDirty(buf);
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}

	t = 0;
	rank_iter_init(&it, n, fanout);
	for (p = 0; p < ntidpages; p++)
	{
		Buffer		buf = layout_buffer(index, blkno++);
		Page		page = BufferGetPage(buf);
		ItemPointerData *dst = (ItemPointerData *) PageGetContents(page);
		uint64		end = Min(n, t + EYTZ_TIDS_PER_PAGE);
		uint64		first = t;

		eytz_init_page(page, EYTZ_PAGE_TIDS);
		for (; t < end; t++)
			eytz_tid_unpack(pairs->tids[permuted ? t : rank_iter_rank(&it, t)],
							&dst[t - first]);
		((PageHeader) page)->pd_lower += (end - first) * sizeof(ItemPointerData);
		MarkBufferDirty(buf);
		UnlockReleaseBuffer(buf);
		if (p % 64 == 0)
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, t);
		CHECK_FOR_INTERRUPTS();
	}

	if (use_wal && blkno > start)
		log_newpage_range(index, MAIN_FORKNUM, start, blkno, true);

	meta->key_width = key_width;
	meta->fanout = fanout;
	meta->nentries = n;
	meta->ndead = 0;
	meta->levels = eytz_shape(n, fanout).levels;
	meta->keys_per_page = kpp;
	meta->keys_start = n > 0 ? start : InvalidBlockNumber;
	meta->nkeypages = nkeypages;
	meta->tids_start = n > 0 ? start + nkeypages : InvalidBlockNumber;
	meta->ntidpages = ntidpages;
	return blkno;
}

static void
eytz_build_callback(Relation index, ItemPointer tid, Datum *values,
					bool *isnull, bool tupleIsAlive, void *state)
{
	EytzBuildState *bs = (EytzBuildState *) state;

	/* NULLs are not indexed: no operator of the opclasses matches them */
	if (isnull[0])
		return;
	eytz_pairs_add(&bs->pairs, bs->kt->encode(values[0]), tid);
}

IndexBuildResult *
eytz_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	EytzBuildState bs;
	EytzMetaPageData meta;
	double		reltuples;
	int			layout,
				fanout,
				pending_limit;
	Buffer		metabuf;
	Page		metapage;
	BlockNumber end;
	bool		gpu_built;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	bs.kt = eytz_index_key_type(index);
	eytz_pairs_init(&bs.pairs, (Size) maintenance_work_mem * 1024);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, EYTZ_PHASE_LOAD);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   eytz_build_callback, &bs, NULL);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, EYTZ_PHASE_SORT);
	eytz_choose_layout(index, bs.pairs.n, bs.kt->width, &layout, &fanout,
					   &pending_limit);
	/* sort and permute on the GPU when there is one (same bytes, stays resident) */
	gpu_built = eytz_device_build(&bs.pairs, bs.kt->width, fanout, index, 1);
	if (!gpu_built)
		eytz_pairs_sort(&bs.pairs);

	{
		const int	cols[] = {PROGRESS_CREATEIDX_SUBPHASE,
			PROGRESS_CREATEIDX_TUPLES_TOTAL,
		PROGRESS_CREATEIDX_TUPLES_DONE};
		const int64 vals[] = {EYTZ_PHASE_WRITE, bs.pairs.n, 0};

		pgstat_progress_update_multi_param(3, cols, vals);
	}

	/* metapage first, so the layout starts at block 1 */
	metabuf = ReadBuffer(index, P_NEW);
	Assert(BufferGetBlockNumber(metabuf) == EYTZ_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	eytz_init_metapage(metapage, bs.kt->width, layout, fanout, pending_limit);
	MarkBufferDirty(metabuf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	memcpy(&meta, EytzPageGetMeta(metapage), sizeof(meta));
	end = eytz_write_layout(index, &bs.pairs, gpu_built, bs.kt->width, fanout,
							EYTZ_METAPAGE_BLKNO + 1, false, &meta);
	meta.generation = 1;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	memcpy(EytzPageGetMeta(metapage), &meta, sizeof(meta));
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, end, true);

	result = (IndexBuildResult *) palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.pairs.n;
	eytz_pairs_free(&bs.pairs);
	return result;
}

/* The init fork of an unlogged index: an empty metapage, WAL-logged */
void
eytz_buildempty(Relation index)
{
	const EytzKeyType *kt = eytz_index_key_type(index);
	Page		metapage;
	int			layout,
				fanout,
				pending_limit;

	eytz_choose_layout(index, 0, kt->width, &layout, &fanout, &pending_limit);
	metapage = (Page) palloc(BLCKSZ);
	eytz_init_metapage(metapage, kt->width, layout, fanout, pending_limit);
	EytzPageGetMeta(metapage)->generation = 1;
	PageSetChecksumInplace(metapage, EYTZ_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, EYTZ_METAPAGE_BLKNO,
			  (char *) metapage, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				EYTZ_METAPAGE_BLKNO, metapage, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(metapage);
}
