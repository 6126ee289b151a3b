/*
 * eytzbuild.c
 *		CREATE INDEX for eytzgpu: collect, sort, lay out in Eytzinger order.
 *
 * The heap is scanned with table_index_build_scan().  While the (key, TID)
 * pairs fit in maintenance_work_mem they are radix-sorted in memory (or on
 * the GPU) and the pages are written with the one-read-one-write inverse
 * permutation of cuda/eytz_layout.h: every slot of the layout is loaded from
 * its rank in the sorted arrays, page by page.
 *
 * Beyond maintenance_work_mem the pairs go to tuplesort (eytzsort.c), which
 * spills to disk, and the sorted stream is dealt out in one pass by an
 * EytzLayoutWriter: each level of an Eytzinger layout holds increasing keys
 * from left to right, so every level is filled sequentially by its own
 * cursor while the stream goes by, and a page is written once, as soon as
 * all its slots are filled.  Both ways give the same bytes.
 *
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
	EytzPairs	pairs;			/* while they fit in maintenance_work_mem */
	EytzSpill  *spill;			/* after that, all pairs are here */
	MemoryContext cxt;			/* the build's memory context */
} EytzBuildState;

/* A layout page being filled in local memory until all its slots are */
typedef struct EytzOpenPage
{
	BlockNumber blkno;			/* InvalidBlockNumber: this entry is free */
	uint32		unfilled;		/* slots of the page still to be written */
	PGAlignedBlock page;
} EytzOpenPage;

/* The key array or the TID array of a layout being written by levels */
typedef struct EytzArrayWriter
{
	BlockNumber first;			/* the array's first block */
	uint32		per_page;		/* slots per page */
	int			width;			/* bytes per slot */
	uint16		flags;			/* EYTZ_PAGE_KEYS or EYTZ_PAGE_TIDS */
	EytzOpenPage **cur;			/* per level: the page last written */

	/*
	 * Open pages: at most two per level, the one its cursor is on and its
	 * last page, which it shares with the next level's first.
	 */
	EytzOpenPage *open;
	int			nopen;
} EytzArrayWriter;

struct EytzLayoutWriter
{
	Relation	index;
	EytzRankWalk walk;			/* the slot of each rank; walk.rank: pairs put */
	BlockNumber start;
	BlockNumber end;			/* one past the region's last block */
	EytzArrayWriter keys;
	EytzArrayWriter tids;
};

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

/*
 * A zeroed, exclusively locked page at blkno, extending the index if needed
 * (through zero pages, for the blocks an EytzLayoutWriter writes later)
 */
static Buffer
layout_buffer(Relation index, BlockNumber blkno)
{
	Buffer		buf;

	if (blkno < RelationGetNumberOfBlocks(index))
		return ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_ZERO_AND_LOCK,
								  NULL);
	for (;;)
	{
		buf = ReadBuffer(index, P_NEW);
		if (BufferGetBlockNumber(buf) >= blkno)
			break;
		ReleaseBuffer(buf);
	}
	if (BufferGetBlockNumber(buf) != blkno)
		elog(ERROR, "unexpected block %u while extending eytzgpu index \"%s\" to %u",
			 BufferGetBlockNumber(buf), RelationGetRelationName(index), blkno);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	return buf;
}

/* The layout fields of *meta for n entries in nkeypages + ntidpages from start */
static void
set_layout_meta(EytzMetaPageData *meta, uint64 n, int key_width, int fanout,
				BlockNumber start, uint32 nkeypages, uint32 ntidpages)
{
	meta->key_width = key_width;
	meta->fanout = fanout;
	meta->nentries = n;
	meta->ndead = 0;
	meta->levels = eytz_shape(n, fanout).levels;
	meta->keys_per_page = eytz_keys_per_page(key_width, fanout);
	meta->keys_start = n > 0 ? start : InvalidBlockNumber;
	meta->nkeypages = nkeypages;
	meta->tids_start = n > 0 ? start + nkeypages : InvalidBlockNumber;
	meta->ntidpages = ntidpages;
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

	set_layout_meta(meta, n, key_width, fanout, start, nkeypages, ntidpages);
	return blkno;
}

static void
array_writer_init(EytzArrayWriter *aw, BlockNumber first, uint32 per_page,
				  int width, uint16 flags, uint32 levels)
{
	int			i;

	aw->first = first;
	aw->per_page = per_page;
	aw->width = width;
	aw->flags = flags;
	aw->cur = palloc0(sizeof(EytzOpenPage *) * Max(levels, 1));
	aw->nopen = 2 * levels;
	aw->open = palloc(sizeof(EytzOpenPage) * Max(aw->nopen, 1));
	for (i = 0; i < aw->nopen; i++)
		aw->open[i].blkno = InvalidBlockNumber;
}

/* The open page of the array that holds slot t, opened if needed */
static EytzOpenPage *
array_writer_page(EytzArrayWriter *aw, uint64 n, uint64 t)
{
	BlockNumber blkno = aw->first + t / aw->per_page;
	EytzOpenPage *free_page = NULL;
	EytzOpenPage *op;
	uint64		first_slot;
	int			i;

	for (i = 0; i < aw->nopen; i++)
	{
		if (aw->open[i].blkno == blkno)
			return &aw->open[i];
		if (aw->open[i].blkno == InvalidBlockNumber && free_page == NULL)
			free_page = &aw->open[i];
	}
	if (free_page == NULL)
		elog(ERROR, "too many open pages while writing an eytzgpu layout");
	op = free_page;
	op->blkno = blkno;
	first_slot = t - t % aw->per_page;
	op->unfilled = Min((uint64) aw->per_page, n - first_slot);
	eytz_init_page(op->page.data, aw->flags);
	((PageHeader) op->page.data)->pd_lower += op->unfilled * aw->width;
	return op;
}

/* Slot t of the array, on level l, gets a key or a packed TID */
static void
array_writer_put(EytzLayoutWriter *w, EytzArrayWriter *aw, uint32 l,
				 uint64 t, uint64 value)
{
	EytzOpenPage *op = aw->cur[l];
	char	   *dst;
	uint32		off = t % aw->per_page;

	if (op == NULL || op->blkno != aw->first + t / aw->per_page)
		op = aw->cur[l] = array_writer_page(aw, w->walk.shape.n, t);
	dst = PageGetContents(op->page.data);
	if (aw->flags == EYTZ_PAGE_TIDS)
		eytz_tid_unpack(value, &((ItemPointerData *) dst)[off]);
	else if (aw->width == 4)
		((uint32 *) dst)[off] = (uint32) value;
	else
		((uint64 *) dst)[off] = value;

	/* the last slot filled: write the page, once */
	if (--op->unfilled == 0)
	{
		Buffer		buf = layout_buffer(w->index, op->blkno);

		memcpy(BufferGetPage(buf), op->page.data, BLCKSZ);
		MarkBufferDirty(buf);
		UnlockReleaseBuffer(buf);
		op->blkno = InvalidBlockNumber;
	}
}

/*
 * Start writing the layout of n pairs, which will arrive in (key, TID) order,
 * as key pages then TID pages from block start.
 */
EytzLayoutWriter *
eytz_layout_writer_begin(Relation index, uint64 n, int key_width, int fanout,
						 BlockNumber start)
{
	EytzLayoutWriter *w = palloc0(sizeof(EytzLayoutWriter));
	int			kpp = eytz_keys_per_page(key_width, fanout);
	uint32		nkeypages = (n + kpp - 1) / kpp;
	uint32		ntidpages = (n + EYTZ_TIDS_PER_PAGE - 1) / EYTZ_TIDS_PER_PAGE;

	w->index = index;
	eytz_rank_walk_init(&w->walk, n, fanout);
	w->start = start;
	w->end = start + nkeypages + ntidpages;
	array_writer_init(&w->keys, start, kpp, key_width, EYTZ_PAGE_KEYS,
					  w->walk.shape.levels);
	array_writer_init(&w->tids, start + nkeypages, EYTZ_TIDS_PER_PAGE,
					  sizeof(ItemPointerData), EYTZ_PAGE_TIDS, w->walk.shape.levels);
	return w;
}

/*
 * Visit the slots of a layout of n entries with fan-out k in rank (sorted)
 * order: each level holds increasing ranks from left to right, so a cursor
 * per level is enough.
 */
void
eytz_rank_walk_init(EytzRankWalk *walk, uint64 n, uint32 k)
{
	uint32		l;

	walk->shape = eytz_shape(n, k);
	walk->rank = 0;
	walk->upper = 0;
	walk->bottom = 0;
	walk->next_slot = palloc(sizeof(uint64) * Max(walk->shape.levels, 1));
	for (l = 0; l < walk->shape.levels; l++)
		walk->next_slot[l] = eytz_level_start(l, k);
}

/*
 * The slot (and its level) of the next rank.  In sorted order the bottom
 * level's entry i has rank i + i / (k - 1) (k - 1 of them, then an upper
 * entry), and the p-th upper entry (0-based, of the perfect tree of the full
 * levels) lies on level full_levels - 1 - v, where k^v is the largest power
 * of k dividing p + 1 (eytz_rank_in_level(), inverted).
 */
uint64
eytz_rank_walk_next(EytzRankWalk *walk, uint32 *level)
{
	const EytzShape *shape = &walk->shape;
	uint32		l;
	uint64		t;

	Assert(walk->rank < shape->n);
	if (walk->bottom < shape->bottom &&
		walk->rank == walk->bottom + walk->bottom / (shape->k - 1))
	{
		l = shape->full_levels;
		walk->bottom++;
	}
	else
	{
		uint64		q = ++walk->upper;

		l = shape->full_levels - 1;
		while (q % shape->k == 0)
		{
			q /= shape->k;
			l--;
		}
	}
	t = walk->next_slot[l]++;
	Assert(eytz_rank_in_level(shape, l, t - eytz_level_start(l, shape->k),
							  eytz_level_stride(shape, l)) == walk->rank);
	walk->rank++;
	*level = l;
	return t;
}

/* The pair of the next rank goes to the next slot of its level */
void
eytz_layout_writer_put(EytzLayoutWriter *w, uint64 key, uint64 packed_tid)
{
	uint32		l;
	uint64		t = eytz_rank_walk_next(&w->walk, &l);

	array_writer_put(w, &w->keys, l, t, key);
	array_writer_put(w, &w->tids, l, t, packed_tid);
	if ((w->walk.rank & 0xFFFF) == 0)
	{
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, w->walk.rank);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * All n pairs were put: fill the layout fields of *meta, WAL-log the region
 * when use_wal, and return the block after the region.
 */
BlockNumber
eytz_layout_writer_finish(EytzLayoutWriter *w, bool use_wal,
						  EytzMetaPageData *meta)
{
	int			i;

	if (w->walk.rank != w->walk.shape.n)
		elog(ERROR, "eytzgpu layout writer got " UINT64_FORMAT " of " UINT64_FORMAT " entries",
			 w->walk.rank, w->walk.shape.n);
	for (i = 0; i < w->keys.nopen; i++)
		Assert(w->keys.open[i].blkno == InvalidBlockNumber &&
			   w->tids.open[i].blkno == InvalidBlockNumber);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, w->walk.rank);

	if (use_wal && w->end > w->start)
		log_newpage_range(w->index, MAIN_FORKNUM, w->start, w->end, true);
	set_layout_meta(meta, w->walk.shape.n, w->keys.width, w->walk.shape.k, w->start,
					w->tids.first - w->start, w->end - w->tids.first);
	return w->end;
}

static void
eytz_build_callback(Relation index, ItemPointer tid, Datum *values,
					bool *isnull, bool tupleIsAlive, void *state)
{
	EytzBuildState *bs = (EytzBuildState *) state;
	uint64		key;

	/* NULLs are not indexed: no operator of the opclasses matches them */
	if (isnull[0])
		return;
	key = bs->kt->encode(values[0]);
	if (bs->spill == NULL && eytz_pairs_full(&bs->pairs))
	{
		/* no more room to sort in memory: from now on, tuplesort sorts */
		MemoryContext old = MemoryContextSwitchTo(bs->cxt);

		bs->spill = eytz_spill_begin(maintenance_work_mem);
		eytz_spill_take(bs->spill, &bs->pairs);
		MemoryContextSwitchTo(old);
	}
	if (bs->spill)
		eytz_spill_add(bs->spill, key, tid);
	else
		eytz_pairs_add(&bs->pairs, key, tid);
}

IndexBuildResult *
eytz_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	EytzBuildState bs;
	EytzMetaPageData meta;
	double		reltuples;
	int			fanout,
				pending_limit;
	Buffer		metabuf;
	Page		metapage;
	BlockNumber end;
	bool		gpu_built;
	uint64		n;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	bs.kt = eytz_index_key_type(index);
	bs.spill = NULL;
	bs.cxt = CurrentMemoryContext;
	eytz_pairs_init(&bs.pairs, (Size) maintenance_work_mem * 1024);
	/* a table known to be too big for the in-memory sort spills at once */
	if (heap->rd_rel->reltuples > 0 &&
		!eytz_pairs_would_fit(&bs.pairs, heap->rd_rel->reltuples))
		bs.spill = eytz_spill_begin(maintenance_work_mem);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, EYTZ_PHASE_LOAD);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   eytz_build_callback, &bs, NULL);

	n = bs.spill ? eytz_spill_count(bs.spill) : bs.pairs.n;
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, EYTZ_PHASE_SORT);
	eytz_choose_layout(index, n, bs.kt->width, &fanout,
					   &pending_limit);
	if (bs.spill)
	{
		eytz_spill_sort(bs.spill);
		gpu_built = false;
	}
	else
	{
		/* sort and permute on the GPU when there is one (same bytes, stays resident) */
		gpu_built = eytz_device_build(&bs.pairs, bs.kt->width, fanout, index, 1);
		if (!gpu_built)
			eytz_pairs_sort(&bs.pairs);
	}

	{
		const int	cols[] = {PROGRESS_CREATEIDX_SUBPHASE,
			PROGRESS_CREATEIDX_TUPLES_TOTAL,
		PROGRESS_CREATEIDX_TUPLES_DONE};
		const int64 vals[] = {EYTZ_PHASE_WRITE, n, 0};

		pgstat_progress_update_multi_param(3, cols, vals);
	}

	/* metapage first, so the layout starts at block 1 */
	metabuf = ReadBuffer(index, P_NEW);
	Assert(BufferGetBlockNumber(metabuf) == EYTZ_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	eytz_init_metapage(metapage, bs.kt->width, fanout, pending_limit);
	MarkBufferDirty(metabuf);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);

	memcpy(&meta, EytzPageGetMeta(metapage), sizeof(meta));
	if (bs.spill)
	{
		EytzLayoutWriter *writer;
		uint64		key,
					tid;

		writer = eytz_layout_writer_begin(index, n, bs.kt->width, fanout,
										  EYTZ_METAPAGE_BLKNO + 1);
		while (eytz_spill_next(bs.spill, &key, &tid))
			eytz_layout_writer_put(writer, key, tid);
		end = eytz_layout_writer_finish(writer, false, &meta);
		eytz_spill_end(bs.spill);
	}
	else
		end = eytz_write_layout(index, &bs.pairs, gpu_built, bs.kt->width,
								fanout, EYTZ_METAPAGE_BLKNO + 1, false, &meta);
	meta.generation = 1;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	memcpy(EytzPageGetMeta(metapage), &meta, sizeof(meta));
	MarkBufferDirty(metabuf);
	UnlockReleaseBuffer(metabuf);

	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, 0, end, true);

	result = (IndexBuildResult *) palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = n;
	eytz_pairs_free(&bs.pairs);
	return result;
}

/* The init fork of an unlogged index: an empty metapage, WAL-logged */
void
eytz_buildempty(Relation index)
{
	const EytzKeyType *kt = eytz_index_key_type(index);
	Page		metapage;
	int			fanout,
				pending_limit;

	eytz_choose_layout(index, 0, kt->width, &fanout, &pending_limit);
	metapage = (Page) palloc(BLCKSZ);
	eytz_init_metapage(metapage, kt->width, fanout, pending_limit);
	EytzPageGetMeta(metapage)->generation = 1;
	PageSetChecksumInplace(metapage, EYTZ_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, EYTZ_METAPAGE_BLKNO,
			  (char *) metapage, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				EYTZ_METAPAGE_BLKNO, metapage, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(metapage);
}
