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
 * Included columns (INCLUDE) are arrays of the region like the TIDs: the
 * in-memory sort carries each pair's row number, the spilled sort the
 * values themselves, and the GPU build's slots find their rows by TID.
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

#include "eytzcompat.h"
#include "eytzinclude.h"
#include "eytzdevice.h"

typedef struct EytzBuildState
{
	const EytzKeyType *kt;
	EytzInclude inc;
	EytzPairs	pairs;			/* while they fit in maintenance_work_mem */
	EytzRowValues rows;			/* the included values of the pairs' rows */
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

/* One array of a layout (keys, TIDs, an included column) written by levels */
typedef struct EytzArrayWriter
{
	EytzRegionArray arr;
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
	EytzMetaPageData meta;		/* the layout fields */
	int			narrays;
	EytzArrayWriter arrays[2 + 2 * EYTZ_MAX_INCLUDE];
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

/* The layout fields of *meta for n entries of a region from start */
void
eytz_set_layout_meta(EytzMetaPageData *meta, uint64 n, int key_width, int fanout,
				BlockNumber start)
{
	meta->key_width = key_width;
	meta->fanout = fanout;
	meta->nentries = n;
	meta->ndead = 0;
	meta->levels = eytz_shape(n, fanout).levels;
	meta->keys_per_page = eytz_keys_per_page(key_width, fanout);
	meta->keys_start = n > 0 ? start : InvalidBlockNumber;
	meta->nkeypages = (n + meta->keys_per_page - 1) / meta->keys_per_page;
	meta->tids_start = n > 0 ? start + meta->nkeypages : InvalidBlockNumber;
	meta->ntidpages = (n + EYTZ_TIDS_PER_PAGE - 1) / EYTZ_TIDS_PER_PAGE;
}

/*
 * Slot off of a page's contents gets a key, a packed TID, an included value
 * (a Datum) or a NULL bit, by the array's type
 */
static inline void
store_slot(char *dst, const EytzRegionArray *arr, uint32 off, uint64 value)
{
	switch (arr->flags)
	{
		case EYTZ_PAGE_TIDS:
			eytz_tid_unpack(value, &((ItemPointerData *) dst)[off]);
			break;
		case EYTZ_PAGE_NULLS:
			if (value)
				dst[off / 8] |= 1 << (off % 8);
			break;
		case EYTZ_PAGE_KEYS:
			if (arr->width == 4)
				((uint32 *) dst)[off] = (uint32) value;
			else
				((uint64 *) dst)[off] = value;
			break;
		default:
			eytz_include_store(dst + (Size) off * arr->width, arr->width,
							   (Datum) value);
	}
}

/* A fresh data page of an array, its entries counted in pd_lower */
static void
init_array_page(Page page, const EytzRegionArray *arr, uint64 n, uint32 p)
{
	eytz_init_page(page, arr->flags);
	((PageHeader) page)->pd_lower += eytz_region_array_bytes(arr, n, p);
}

/* What array a holds for the pair of rank i of sorted (or permuted) pairs */
static inline uint64
pair_value(const EytzPairs *pairs, const EytzRowValues *rv, int a, uint64 i)
{
	uint64		row;
	int			c;

	if (a == EYTZ_ARRAY_KEYS)
		return pairs->keys[i];
	if (a == EYTZ_ARRAY_TIDS)
		return pairs->tids[i];
	row = pairs->rows[i];
	c = (a - 2) / 2;
	if (a == EYTZ_ARRAY_NULLS(c))
		return (rv->nulls[c][row / 8] >> (row % 8)) & 1;
	return eytz_include_fetch(rv->values[c] + row * rv->inc.width[c],
							  rv->inc.width[c]);
}

/*
 * Write the layout of n sorted pairs (or of pairs already in Eytzinger order,
 * if permuted: the GPU build, whose rows are then slot by slot too) as the
 * arrays of a region from block start: keys, TIDs, then the included values
 * of rv (NULL without INCLUDE); fill the layout fields of *meta.  Returns
 * the block after the region.  Pages are dirtied in shared buffers; when
 * use_wal, they are WAL-logged before returning.
 */
BlockNumber
eytz_write_layout(Relation index, EytzPairs *pairs, const EytzRowValues *rv,
				  bool permuted, int key_width, int fanout, BlockNumber start,
				  bool use_wal, EytzMetaPageData *meta)
{
	uint64		n = pairs->n;
	EytzInclude inc;
	BlockNumber end;
	int			a;

	eytz_include_get(index, &inc);
	eytz_set_layout_meta(meta, n, key_width, fanout, start);
	end = start + eytz_region_npages(meta, &inc);
	for (a = 0; a < eytz_region_narrays(&inc); a++)
	{
		EytzRegionArray arr;
		EytzRankIter it;
		uint64		t = 0;
		uint32		p;

		eytz_region_array(meta, &inc, a, &arr);
		rank_iter_init(&it, n, fanout);
		for (p = 0; p < arr.npages; p++)
		{
			Buffer		buf = layout_buffer(index, arr.start + p);
			Page		page = BufferGetPage(buf);
			char	   *dst = PageGetContents(page);
			uint64		first = t;
			uint64		last = Min(n, t + arr.per_page);

			init_array_page(page, &arr, n, p);
			for (; t < last; t++)
				store_slot(dst, &arr, t - first,
						   pair_value(pairs, rv, a, permuted ? t : rank_iter_rank(&it, t)));
			MarkBufferDirty(buf);
			UnlockReleaseBuffer(buf);
			if (a == EYTZ_ARRAY_TIDS && p % 64 == 0)
				pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, t);
			CHECK_FOR_INTERRUPTS();
		}
	}

	if (use_wal && end > start)
		log_newpage_range(index, MAIN_FORKNUM, start, end, true);
	return end;
}

static void
array_writer_init(EytzArrayWriter *aw, const EytzRegionArray *arr, uint32 levels)
{
	int			i;

	aw->arr = *arr;
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
	uint32		p = t / aw->arr.per_page;
	BlockNumber blkno = aw->arr.start + p;
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
	first_slot = (uint64) p * aw->arr.per_page;
	op->unfilled = Min(aw->arr.per_page, n - first_slot);
	init_array_page(op->page.data, &aw->arr, n, p);
	return op;
}

/* Slot t of the array, on level l, gets its value (see store_slot()) */
static void
array_writer_put(EytzLayoutWriter *w, EytzArrayWriter *aw, uint32 l,
				 uint64 t, uint64 value)
{
	EytzOpenPage *op = aw->cur[l];

	if (op == NULL || op->blkno != aw->arr.start + t / aw->arr.per_page)
		op = aw->cur[l] = array_writer_page(aw, w->walk.shape.n, t);
	store_slot(PageGetContents(op->page.data), &aw->arr, t % aw->arr.per_page,
			   value);

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
 * Start writing the layout of n pairs, which will arrive in (key, TID) order
 * with their included values, as the arrays of a region from block start.
 */
EytzLayoutWriter *
eytz_layout_writer_begin(Relation index, uint64 n, int key_width, int fanout,
						 BlockNumber start)
{
	EytzLayoutWriter *w = palloc0(sizeof(EytzLayoutWriter));
	EytzInclude inc;
	int			a;

	eytz_include_get(index, &inc);
	w->index = index;
	eytz_rank_walk_init(&w->walk, n, fanout);
	w->start = start;
	eytz_set_layout_meta(&w->meta, n, key_width, fanout, start);
	w->end = start + eytz_region_npages(&w->meta, &inc);
	w->narrays = eytz_region_narrays(&inc);
	for (a = 0; a < w->narrays; a++)
	{
		EytzRegionArray arr;

		eytz_region_array(&w->meta, &inc, a, &arr);
		array_writer_init(&w->arrays[a], &arr, w->walk.shape.levels);
	}
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

/*
 * The pair of the next rank, with its included values (unused without
 * INCLUDE), goes to the next slot of its level
 */
void
eytz_layout_writer_put(EytzLayoutWriter *w, uint64 key, uint64 packed_tid,
					   const Datum *values, const bool *isnull)
{
	uint32		l;
	uint64		t = eytz_rank_walk_next(&w->walk, &l);
	int			c;

	array_writer_put(w, &w->arrays[EYTZ_ARRAY_KEYS], l, t, key);
	array_writer_put(w, &w->arrays[EYTZ_ARRAY_TIDS], l, t, packed_tid);
	for (c = 0; 2 + 2 * c < w->narrays; c++)
	{
		array_writer_put(w, &w->arrays[EYTZ_ARRAY_VALUES(c)], l, t,
						 isnull[c] ? (Datum) 0 : values[c]);
		array_writer_put(w, &w->arrays[EYTZ_ARRAY_NULLS(c)], l, t, isnull[c]);
	}
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
	if (w->walk.rank != w->walk.shape.n)
		elog(ERROR, "eytzgpu layout writer got " UINT64_FORMAT " of " UINT64_FORMAT " entries",
			 w->walk.rank, w->walk.shape.n);
#ifdef USE_ASSERT_CHECKING
	for (int a = 0; a < w->narrays; a++)
		for (int i = 0; i < w->arrays[a].nopen; i++)
			Assert(w->arrays[a].open[i].blkno == InvalidBlockNumber);
#endif
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, w->walk.rank);

	if (use_wal && w->end > w->start)
		log_newpage_range(w->index, MAIN_FORKNUM, w->start, w->end, true);
	eytz_set_layout_meta(meta, w->walk.shape.n, w->meta.key_width, w->walk.shape.k,
					w->start);
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

		bs->spill = eytz_spill_begin(maintenance_work_mem, &bs->inc);
		eytz_spill_take(bs->spill, &bs->pairs, &bs->rows);
		if (bs->inc.ncols > 0)
			eytz_rows_free(&bs->rows);
		MemoryContextSwitchTo(old);
	}
	if (bs->spill)
		eytz_spill_add(bs->spill, key, tid, values + 1, isnull + 1);
	else
	{
		eytz_pairs_add(&bs->pairs, key, tid);
		if (bs->inc.ncols > 0)
			eytz_rows_add(&bs->rows, values + 1, isnull + 1);
	}
}

/*
 * After the GPU build, the rows of the pairs in slot order: each slot's TID
 * is looked up in the TIDs as they were before the build (ascending: the
 * GPU build takes only those, and a build indexes a TID once).
 */
static void
rows_by_tid(EytzPairs *pairs, const uint64 *input_tids)
{
	uint64		i;

	for (i = 0; i < pairs->n; i++)
	{
		uint64		lo = 0,
					hi = pairs->n;

		while (lo < hi)
		{
			uint64		mid = lo + (hi - lo) / 2;

			if (input_tids[mid] < pairs->tids[i])
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == pairs->n || input_tids[lo] != pairs->tids[i])
			elog(ERROR, "GPU build of an eytzgpu index returned a TID it was not given");
		pairs->rows[i] = lo;
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
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
	eytz_include_get(index, &bs.inc);
	bs.spill = NULL;
	bs.cxt = CurrentMemoryContext;
	eytz_pairs_init(&bs.pairs, (Size) maintenance_work_mem * 1024);
	if (bs.inc.ncols > 0)
	{
		eytz_pairs_with_rows(&bs.pairs, eytz_include_row_bytes(&bs.inc));
		eytz_rows_init(&bs.rows, &bs.inc);
	}
	/* a table known to be too big for the in-memory sort spills at once */
	if (heap->rd_rel->reltuples > 0 &&
		!eytz_pairs_would_fit(&bs.pairs, heap->rd_rel->reltuples))
	{
		bs.spill = eytz_spill_begin(maintenance_work_mem, &bs.inc);
		if (bs.inc.ncols > 0)
			eytz_rows_free(&bs.rows);
	}

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
		uint64	   *input_tids = NULL;

		/* sort and permute on the GPU when there is one (same bytes, stays resident) */
		if (bs.inc.ncols > 0 && eytz_device_available(NULL))
		{
			input_tids = MemoryContextAllocHuge(CurrentMemoryContext,
												sizeof(uint64) * n);
			memcpy(input_tids, bs.pairs.tids, sizeof(uint64) * n);
		}
		gpu_built = eytz_device_build(&bs.pairs, bs.kt->width, fanout, index, 1);
		if (gpu_built && bs.inc.ncols > 0)
			rows_by_tid(&bs.pairs, input_tids);
		if (input_tids)
			pfree(input_tids);
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
		Datum		values[EYTZ_MAX_INCLUDE];
		bool		isnull[EYTZ_MAX_INCLUDE];

		writer = eytz_layout_writer_begin(index, n, bs.kt->width, fanout,
										  EYTZ_METAPAGE_BLKNO + 1);
		while (eytz_spill_next(bs.spill, &key, &tid, values, isnull))
			eytz_layout_writer_put(writer, key, tid, values, isnull);
		end = eytz_layout_writer_finish(writer, false, &meta);
		eytz_spill_end(bs.spill);
	}
	else
		end = eytz_write_layout(index, &bs.pairs, &bs.rows, gpu_built,
								bs.kt->width, fanout, EYTZ_METAPAGE_BLKNO + 1,
								false, &meta);
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
	if (bs.inc.ncols > 0 && bs.spill == NULL)
		eytz_rows_free(&bs.rows);
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
	EytzInclude inc;

	/* an unsupported INCLUDE column is refused here too */
	eytz_include_get(index, &inc);
	eytz_choose_layout(index, 0, kt->width, &fanout, &pending_limit);
	metapage = (Page) palloc(BLCKSZ);
	eytz_init_metapage(metapage, kt->width, fanout, pending_limit);
	EytzPageGetMeta(metapage)->generation = 1;
	PageSetChecksumInplace(metapage, EYTZ_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, EYTZ_METAPAGE_BLKNO,
			  (char *) metapage, true);
	log_newpage(&EytzRelationFile(index), INIT_FORKNUM,
				EYTZ_METAPAGE_BLKNO, metapage, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(metapage);
}
