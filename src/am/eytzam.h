/*
 * eytzam.h
 *		Declarations shared by the eytzgpu index access method's C files.
 *
 * The on-disk format is in eytzpage.h.
 */
#ifndef EYTZAM_H
#define EYTZAM_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/htup_details.h"
#include "access/itup.h"
#include "access/reloptions.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "storage/bufmgr.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include "eytz_layout.h"

#include "eytzpage.h"

/*
 * 'auto' picks EBS while keys and TIDs fit in this much (a CPU core's L2,
 * where both layouts stay cached and search alike), EKS above: the k-ary
 * layout's fewer levels searched faster on the H100 from 2^18 keys and on
 * the CPU (cuda/README.md, bench/partition_results.md), although the paper
 * keeps EBS up to the GPU's L2
 */
#define EYTZ_AUTO_EBS_MAX_BYTES (1024 * 1024)

/* the pending_limit reloption's default: the limit follows the index's size */
#define EYTZ_PENDING_LIMIT_AUTO		(-1)
/* the automatic limit: 1/8 of the entries, between these two */
#define EYTZ_DEFAULT_PENDING_LIMIT	16384
#define EYTZ_PENDING_LIMIT_CAP		(512 * EYTZ_PENDING_FILL)

/* progress sub-phases of CREATE INDEX */
#define EYTZ_PHASE_LOAD		2
#define EYTZ_PHASE_SORT		3
#define EYTZ_PHASE_WRITE	4

/* The INCLUDE columns of an index, from its tuple descriptor */
typedef struct EytzInclude
{
	int			ncols;			/* m, 0 when the index has no INCLUDE */
	int16		width[EYTZ_MAX_INCLUDE];	/* 1, 2, 4 or 8 */
	Oid			typid[EYTZ_MAX_INCLUDE];
} EytzInclude;

/* reloptions */
typedef struct EytzOptions
{
	int32		vl_len_;
	int			layout;
	int			fanout;
	int			pending_limit;
} EytzOptions;

/* An order-preserving key type: how a column's values become unsigned keys */
typedef struct EytzKeyType
{
	Oid			typid;
	int			width;			/* 4 or 8 */
	bool		is_integer;		/* int2/int4/int8: cross-type via int64 */
	int64		int_min;		/* value range, for is_integer */
	int64		int_max;
	uint64		dom_min;		/* encoded keys that decode to ordered values */
	uint64		dom_max;
	uint64		(*encode) (Datum value);
	Datum		(*decode) (uint64 key);
	bool		exact;			/* decode(encode(v)) is v (floats: not -0) */
} EytzKeyType;

/* A closed interval of encoded keys */
typedef struct EytzRange
{
	uint64		lo;
	uint64		hi;
} EytzRange;

/*
 * Sortable (key, TID) pairs: the TID packed with eytz_pack_tid(); with rows,
 * each pair's row number (the order pairs were added in) moves with it
 */
typedef struct EytzPairs
{
	uint64	   *keys;
	uint64	   *tids;
	uint64	   *rows;			/* NULL unless eytz_pairs_with_rows() */
	uint64		n;
	uint64		cap;
	Size		mem_limit;		/* bytes, 0 for none */
	Size		extra_bytes;	/* per pair, for rows and their values */
} EytzPairs;

/* Included values by row number (eytzinclude.h) */
typedef struct EytzRowValues EytzRowValues;

/* (key, TID) pairs sorted by tuplesort, for builds beyond maintenance_work_mem */
typedef struct EytzSpill EytzSpill;

/* Writes a layout from pairs arriving in (key, TID) order, in one pass */
typedef struct EytzLayoutWriter EytzLayoutWriter;

/* The slots of a layout in rank (sorted) order: one cursor per level */
typedef struct EytzRankWalk
{
	EytzShape	shape;
	uint64		rank;			/* slots visited so far */
	uint64		upper;			/* of which on the full levels */
	uint64		bottom;			/* of which on the partial bottom level */
	uint64	   *next_slot;		/* per level: the slot of its next rank */
} EytzRankWalk;

/* In-memory copy of an index's layout, e.g. for the batched join */
typedef struct EytzLayoutImage
{
	EytzMetaPageData meta;
	void	   *keys;			/* nentries keys of meta.key_width bytes */
	uint64	   *tids;			/* packed TIDs; tombstones have an invalid block */
} EytzLayoutImage;

/* eytzgpu.c: the entry file (_PG_init, the handler, reloptions) */
extern void _PG_init(void);
extern bytea *eytz_options(Datum reloptions, bool validate);

/* eytzpageinit.c */
extern void eytz_init_page(Page page, uint16 flags);
extern void eytz_init_metapage(Page page, int key_width, int fanout,
							   int pending_limit);
extern int	eytz_keys_per_page(int key_width, int fanout);
extern void eytz_choose_layout(Relation index, uint64 n, int key_width,
							   int *fanout, int *pending_limit);
extern const char *eytz_layout_name(int layout);
extern char *eytz_buildphasename(int64 phasenum);

/* eytzpage.c, eytzpagepending.c: every read of the index's pages, checked (see eytzpage.c) */
#define EYTZ_CORRUPT(index, blkno, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_INDEX_CORRUPTED), \
			 errmsg("eytzgpu index \"%s\" is corrupted at block %u", \
					RelationGetRelationName(index), (unsigned) (blkno)), \
			 errdetail(__VA_ARGS__), \
			 errhint("Check it with eytzgpu_verify() and REINDEX it.")))

extern void eytz_read_meta(Relation index, EytzMetaPageData *meta);
/* A TID a heap page can hold, or a tombstone (invalid block) */
static inline bool
eytz_tid_ok(const ItemPointerData *tid, bool tombstone_ok)
{
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (ItemPointerGetBlockNumberNoCheck(tid) == InvalidBlockNumber)
		return tombstone_ok;
	return off >= FirstOffsetNumber && off <= MaxHeapTuplesPerPage;
}

/* Raise ERRCODE_INDEX_CORRUPTED for a TID eytz_tid_ok refused on block blkno */
extern void eytz_page_bad_tid(Relation index, const EytzMetaPageData *meta,
							  BlockNumber blkno, const ItemPointerData *tid);
extern void eytz_check_page(Relation index, const EytzMetaPageData *meta,
							Page page, BlockNumber blkno, uint16 flags,
							Size bytes);
extern bool eytz_block_in_region(const EytzMetaPageData *meta,
								 const EytzInclude *inc, BlockNumber blkno);
extern bool eytz_block_retired_region(Page metapage, BlockNumber blkno);
extern Buffer eytz_new_buffer(Relation index, Page metapage);

/* Random access to the slots of one generation's layout region */
typedef struct EytzRegionReader
{
	Relation	index;
	EytzMetaPageData meta;
	BufferAccessStrategy strategy;
	Buffer		keybuf;			/* pinned and share-locked, or invalid */
	uint32		keypage;
	const char *keys;
	Buffer		tidbuf;
	uint32		tidpage;
	const ItemPointerData *tids;
	EytzInclude inc;
	/* per included column: its value page and NULL page, as keybuf */
	Buffer		valbuf[EYTZ_MAX_INCLUDE];
	uint32		valpage[EYTZ_MAX_INCLUDE];
	const char *vals[EYTZ_MAX_INCLUDE];
	Buffer		nullbuf[EYTZ_MAX_INCLUDE];
	uint32		nullpage[EYTZ_MAX_INCLUDE];
	const uint8 *nulls[EYTZ_MAX_INCLUDE];
} EytzRegionReader;

extern void eytz_region_begin(EytzRegionReader *r, Relation index,
							  const EytzMetaPageData *meta,
							  BufferAccessStrategy strategy);
extern uint64 eytz_region_key(EytzRegionReader *r, uint64 slot);
extern bool eytz_region_tid(EytzRegionReader *r, uint64 slot, ItemPointer tid);
extern void eytz_region_release(EytzRegionReader *r);
extern void eytz_region_load(Relation index, const EytzMetaPageData *meta,
							 BufferAccessStrategy strategy, void *keys,
							 uint64 *tids);
extern void eytz_region_load_sorted(Relation index, const EytzMetaPageData *meta,
									EytzPairs *pairs, EytzRowValues *rv);

/*
 * A generation's live entries in (key, TID) order, streamed: per level a
 * copy of the key page and the TID page its cursor is on, so memory is
 * O(levels x page) and every page is read once.
 */
typedef struct EytzSortedReader
{
	Relation	index;
	EytzMetaPageData meta;
	EytzRankWalk walk;
	EytzInclude inc;
	int			narrays;		/* of the region: keys, TIDs, 2 per column */
	int			nlevels;
	/* [array * nlevels + level]: the page copied, or UINT32_MAX */
	uint32	   *held;
	/* [array * nlevels + level]: EYTZ_PAGE_CAPACITY bytes each */
	char	   *copies;
	uint64		slot;			/* of the entry last returned */
	uint32		level;
	uint64		dead;			/* tombstones passed */
	uint64		last_key;
	uint64		last_live;		/* TID of the last live entry of last_key */
	bool		have_live;
} EytzSortedReader;

extern void eytz_sorted_begin(EytzSortedReader *r, Relation index,
							  const EytzMetaPageData *meta);
extern bool eytz_sorted_next(EytzSortedReader *r, uint64 *key, uint64 *packed_tid);
extern void eytz_sorted_end(EytzSortedReader *r);

/* One page at a time along one generation's pending list */
typedef struct EytzPendingReader
{
	Relation	index;
	EytzMetaPageData meta;
	BlockNumber next;			/* next page to read, or InvalidBlockNumber */
	BlockNumber nblocks;		/* file size seen, bounds the walk */
	BlockNumber steps;
	int			ncols;			/* included columns: the entries' width */
} EytzPendingReader;

extern void eytz_pending_begin(EytzPendingReader *pr, Relation index,
							   const EytzMetaPageData *meta);
extern int	eytz_pending_next(EytzPendingReader *pr, EytzPendingEntry *entries,
							  BlockNumber *blkno);
extern void eytz_read_pending(Relation index, const EytzMetaPageData *meta,
							  EytzPendingEntry **entries, uint64 *n,
							  BlockNumber **blocks, int *nblocks);

/* eytzkeys.c */
extern const EytzKeyType *eytz_key_type(Oid typid);
extern const EytzKeyType *eytz_index_key_type(Relation index);
/* *ranges is a scratch array: give it back with eytz_scratch_free */
extern int	eytz_build_ranges(Relation index, ScanKey keys, int nkeys,
							  EytzRange **ranges);
extern bool scalar_range(Relation index, const EytzKeyType *kt,
						 StrategyNumber strategy, Oid argtype, Datum arg,
						 EytzRange *r);

/* eytzsort.c */
extern void eytz_pairs_init(EytzPairs *pairs, Size mem_limit);
extern void eytz_pairs_with_rows(EytzPairs *pairs, Size row_bytes);
extern bool eytz_pairs_full(const EytzPairs *pairs);
extern bool eytz_pairs_would_fit(const EytzPairs *pairs, double ntuples);
extern void eytz_pairs_add(EytzPairs *pairs, uint64 key, ItemPointer tid);
extern void eytz_pairs_sort(EytzPairs *pairs);
extern void eytz_pairs_free(EytzPairs *pairs);
extern EytzSpill *eytz_spill_begin(int work_mem, const EytzInclude *inc);
extern void eytz_spill_add(EytzSpill *spill, uint64 key, ItemPointer tid,
						   const Datum *values, const bool *isnull);
extern void eytz_spill_take(EytzSpill *spill, EytzPairs *pairs,
							const EytzRowValues *rv);
extern uint64 eytz_spill_count(const EytzSpill *spill);
extern void eytz_spill_sort(EytzSpill *spill);
extern bool eytz_spill_next(EytzSpill *spill, uint64 *key, uint64 *packed_tid,
							Datum *values, bool *isnull);
extern void eytz_spill_end(EytzSpill *spill);

/* eytzbuild.c */
extern IndexBuildResult *eytz_build(Relation heap, Relation index,
									IndexInfo *indexInfo);
extern void eytz_buildempty(Relation index);
extern BlockNumber eytz_write_layout(Relation index, EytzPairs *pairs,
									 const EytzRowValues *rv, bool permuted,
									 int key_width, int fanout,
									 BlockNumber start, bool use_wal,
									 EytzMetaPageData *meta);
extern void eytz_set_layout_meta(EytzMetaPageData *meta, uint64 n, int key_width,
								 int fanout, BlockNumber start);
extern EytzLayoutWriter *eytz_layout_writer_begin(Relation index, uint64 n,
												  int key_width, int fanout,
												  BlockNumber start);
extern void eytz_layout_writer_put(EytzLayoutWriter *w, uint64 key,
								   uint64 packed_tid, const Datum *values,
								   const bool *isnull);
extern BlockNumber eytz_layout_writer_finish(EytzLayoutWriter *w, bool use_wal,
											 EytzMetaPageData *meta);
extern void eytz_rank_walk_init(EytzRankWalk *walk, uint64 n, uint32 k);
extern uint64 eytz_rank_walk_next(EytzRankWalk *walk, uint32 *level);

/* eytzinspect.c */
extern Relation eytz_open_index(Oid indexoid, LOCKMODE lockmode,
								const char *fname);

/* eytzcursor.c */

/*
 * The per-level range scan of one key range over one generation's layout,
 * as a cursor: the index scan and the join's pages view both read the
 * layout through it, as many TIDs at a time as they want.
 */
typedef struct EytzRangeCursor
{
	EytzRegionReader region;
	uint64		level_end[64];	/* one past each level's last slot */
	uint64		lo;				/* the range */
	uint64		hi;
	uint32		level;			/* current level of the descent */
	uint64		node;			/* first slot of the path's node on level */
	uint64		pos;			/* next slot of the level's run to emit */
	bool		in_run;			/* pos is valid (the level's run has started) */
	uint64		lb;				/* the path's bounds on the node's keys */
	uint64		ub;
	uint64		run_prev;		/* last key of the run emitted so far */
} EytzRangeCursor;

extern void eytz_cursor_begin(EytzRangeCursor *c, Relation index,
							  const EytzMetaPageData *meta);
extern void eytz_cursor_start(EytzRangeCursor *c, uint64 lo, uint64 hi);
extern int	eytz_cursor_next(EytzRangeCursor *c, ItemPointerData *tids, int max);
extern int	eytz_cursor_next_slots(EytzRangeCursor *c, ItemPointerData *tids,
								   uint64 *slots, int max);

typedef struct EytzSearch EytzSearch;
extern EytzSearch *eytz_search_begin(Relation index, const EytzRange *ranges,
									 int nranges);
extern int	eytz_search_next(EytzSearch *s, ItemPointerData *tids, int max);
extern int	eytz_search_next_values(EytzSearch *s, ItemPointerData *tids,
									uint64 *keys, Datum *values, bool *isnull,
									int max);
extern void eytz_search_end(EytzSearch *s);

/* eytzarrayscan.c: many ranges as batched lookups (for eytzscan.c) */
typedef struct EytzArrayScan EytzArrayScan;
extern EytzArrayScan *eytz_array_scan_begin(Relation index,
											const EytzRange *ranges,
											int nranges, bool want_values);
extern int	eytz_array_scan_next(EytzArrayScan *a, ItemPointerData *tids,
								 uint64 *keys, Datum *values, bool *isnull,
								 int max);
extern void eytz_array_scan_end(EytzArrayScan *a);

/* eytzscan.c */
extern IndexScanDesc eytz_beginscan(Relation r, int nkeys, int norderbys);
extern void eytz_rescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
						ScanKey orderbys, int norderbys);
extern bool eytz_gettuple(IndexScanDesc scan, ScanDirection dir);
extern bool eytz_canreturn(Relation index, int attno);
extern int64 eytz_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void eytz_endscan(IndexScanDesc scan);

/* eytzinsert.c */
extern bool eytz_insert(Relation index, Datum *values, bool *isnull,
						ItemPointer ht_ctid, Relation heapRel,
						IndexUniqueCheck checkUnique, bool indexUnchanged,
						IndexInfo *indexInfo);
extern bool eytz_pending_append(Relation index, uint64 key, ItemPointer tid,
								const Datum *values, const bool *isnull);

/* eytzmerge.c */
extern bool eytz_merge(Relation index, bool wait, int own_opens,
					   XLogRecPtr *switch_lsn);
extern void eytz_recycle(Relation index, int own_opens);

/* eytzvacuum.c */
extern IndexBulkDeleteResult *eytz_bulkdelete(IndexVacuumInfo *info,
											  IndexBulkDeleteResult *stats,
											  IndexBulkDeleteCallback callback,
											  void *callback_state);
extern IndexBulkDeleteResult *eytz_vacuumcleanup(IndexVacuumInfo *info,
												 IndexBulkDeleteResult *stats);

/* eytzcost.c */
extern void eytz_costestimate(PlannerInfo *root, IndexPath *path,
							  double loop_count, Cost *indexStartupCost,
							  Cost *indexTotalCost,
							  Selectivity *indexSelectivity,
							  double *indexCorrelation, double *indexPages);

/* eytzvalidate.c */
extern bool eytz_validate(Oid opclassoid);

/* key access helpers for a raw key array of width 4 or 8 */
static inline uint64
eytz_key_at(const void *keys, int width, uint64 i)
{
	return width == 4 ? ((const uint32 *) keys)[i] : ((const uint64 *) keys)[i];
}

static inline uint64
eytz_tid_pack(ItemPointer tid)
{
	return eytz_pack_tid(ItemPointerGetBlockNumberNoCheck(tid),
						 ItemPointerGetOffsetNumberNoCheck(tid));
}

static inline void
eytz_tid_unpack(uint64 packed, ItemPointer tid)
{
	ItemPointerSet(tid, eytz_tid_block(packed), eytz_tid_offset(packed));
}

#endif							/* EYTZAM_H */
