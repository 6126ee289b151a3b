/*
 * eytzlookup.h
 *		The lookup seam of the batched join: the executor's only way to an
 *		eytzgpu index's entries (implemented in eytzlookup.c).
 *
 * A scan pins one generation-consistent view of the index (the GPU copy, the
 * CPU layout image, the layout's pages pinned in shared buffers or the
 * index pages through the buffer manager, plus the pending list), submits batches of key ranges and reads back each batch's
 * matches as (heap TID, batch row) pairs sorted by TID, tombstones dropped,
 * in chunks of at most the size the caller asks for, so that memory stays
 * bounded whatever the duplicates.  Which device answers, the fallback from
 * the GPU to the CPU and its message, and the cost of a cold start live
 * here; the executor knows none of them.
 *
 * Implementation notes (eytzlookup.c):
 *	- the view is chosen by cost: the pages when the expected keys (and,
 *	  from batch to batch, the keys seen so far) do not pay for loading the
 *	  image or uploading to the GPU; the planner gets the same costs from
 *	  eytz_lookup_plan_cost.  A pages view may become an image/GPU view, or
 *	  move to a newer generation, between batches (never within one).
 *	- a batch's memory is 32 bytes per query (the query order and its sort
 *	  scratch) plus 32 bytes per match of max (the chunk and its sort
 *	  scratch), whatever the duplicates: a query with more matches than max
 *	  is walked level by level with a cursor over several chunks.  A view
 *	  holds the pending list (and pins the cached image or GPU copy).
 *	- each chunk is sorted by (tid, row) on its own, except an index-only
 *	  join's (below); chunks of one batch are not ordered with respect to
 *	  each other.
 *	- rows[] should be distinct (one query per batch row): "each (tid, row)
 *	  at most once" is then guaranteed across chunks too.
 */
#ifndef EYTZLOOKUP_H
#define EYTZLOOKUP_H

#include "eytzam.h"
#include "eytzinclude.h"		/* EYTZ_MAX_INCLUDE */
#include "eytzmatchsort.h"			/* EytzMatch */
#include "storage/dsm.h"

/* What a view did so far (EXPLAIN ANALYZE) */
typedef struct EytzLookupStats
{
	const char *device;			/* what answered: "gpu", "cpu", "cpu (pinned
								 * pages)", "cpu (index pages)" */
	const char *cpu_reason;		/* why the CPU answered although a GPU was
								 * allowed, or NULL */
	uint64		batches;
	uint64		lookups;		/* key ranges submitted */
	uint64		matches;		/* matches returned */
	uint64		gpu_batches;
	uint64		overlap_batches;	/* first chunks started ahead */
	double		acquire_ms;		/* pinning the view: image load, upload, pending list */
	double		search_ms;		/* CPU search (image or pages) */
	double		transfer_ms;	/* GPU copies in and out */
	double		kernel_ms;		/* GPU kernels */
	double		sort_ms;		/* host-side sorting of matches by TID */
	double		wait_ms;		/* waiting for first chunks started ahead */
} EytzLookupStats;

typedef struct EytzLookup EytzLookup;

/*
 * Pin a view of index for one scan (until eytz_lookup_end or the end of the
 * transaction, whichever comes first).  expected_keys is the planner's
 * estimate of the keys the scan will submit, used to choose between the
 * index pages, the CPU image and the GPU; other_pages the pages the same
 * scan reads beside index and its heap (a partitioned join's other leaves,
 * their heaps and indexes; 0 for one table), which decide whether the
 * index's pages may stay pinned in shared buffers.  Memory comes from cxt.
 */
extern EytzLookup *eytz_lookup_begin(Relation index, double expected_keys,
									 double other_pages, MemoryContext cxt);

/*
 * Start a batch: nq closed key ranges [lo[i], hi[i]] (encoded keys), asked
 * for by batch rows rows[i].  The arrays must stay valid until the batch's
 * matches have all been read.  Any matches of the previous batch not read
 * yet are dropped.
 */
extern void eytz_lookup_submit(EytzLookup *lk, const uint64 *lo,
							   const uint64 *hi, const uint32 *rows,
							   uint32 nq);

/*
 * Start the current batch's first chunk of at most max matches now, so
 * that it is looked up while the caller does other work (reads its next
 * batch: the batch's arrays must then stay valid, as always until its
 * matches are read).  On a GPU view (the backend's copy or the service)
 * the device works on it meanwhile; with cpu_too a CPU view answers it at
 * once (no overlap: a developer's way to test the caller's pipeline
 * without a GPU).  true when started: the next eytz_lookup_next, with the
 * same max, returns it (waiting for it); false and nothing started on a
 * CPU view otherwise, or when the GPU refused the batch (the scan goes on
 * on the CPU).  The next submit or the end of the scan drops an answer not
 * taken.
 */
extern bool eytz_lookup_start(EytzLookup *lk, uint32 max, bool cpu_too);

/*
 * The next at most max (>= 1) matches of the current batch, sorted by (tid,
 * row) (an index-only join's in no order); each (tid, row) is returned at
 * most once per batch.  *matches stays valid until the next call on lk.
 * Returns 0 when the batch is exhausted.
 */
extern uint32 eytz_lookup_next(EytzLookup *lk, uint32 max,
							   const EytzMatch **matches);

extern const EytzLookupStats *eytz_lookup_stats(const EytzLookup *lk);

/*
 * Index-only joins.  After eytz_lookup_want_columns(lk, mask) (before the
 * first submit; bit c: included column c), each chunk eytz_lookup_next
 * returns comes unsorted, with its matches' values: those of match i at
 * position p = matches[i].unused of the arrays.  have[p] says whether match
 * i has them (layout entries read from the CPU image or the index pages do;
 * pending entries and, unless it staged them, the GPU copy's matches do
 * not: the heap answers for those), keys[p] is its entry's encoded key and
 * values[j][p] / isnull[j][p] the asked-for columns in increasing column
 * order (Datums of the columns' types).  Valid until the next call on lk.
 * The caller sorts the matches it fetches from the heap (eytz_match_sort).
 * keys false (and mask 0): the caller needs no values, only the currency
 * of the chunks (eytz_lookup_chunk_current).
 */
typedef struct EytzChunkColumns
{
	const bool *have;
	const uint64 *keys;
	const Datum *values[EYTZ_MAX_INCLUDE];
	const bool *isnull[EYTZ_MAX_INCLUDE];
} EytzChunkColumns;

extern void eytz_lookup_want_columns(EytzLookup *lk, uint32 mask, bool keys);
extern const EytzChunkColumns *eytz_lookup_columns(const EytzLookup *lk);

/*
 * May the current chunk's values stand for heap tuples on pages the caller
 * has seen all-visible (call it after those visibility map checks)?  True
 * while no VACUUM has removed an entry of the chunk's view since the view
 * read it: VACUUM removes a dead tuple's entry (tombstone, counted in the
 * metapage) before it makes the heap slot reusable and sets the page
 * all-visible, and the view holds no pin that would hold VACUUM back.
 */
extern bool eytz_lookup_chunk_current(EytzLookup *lk);

/*
 * The caller saw every page of the heap all-visible in the visibility map
 * (after its snapshot was taken): the chunks eytz_lookup_next returns from
 * now on (until the lookup pins another view: eytz_lookup_submit may) may
 * leave the matches with values unresolved, their tid the layout
 * slot tagged EYTZ_MATCH_SLOT (the CPU image without tombstones and no
 * pending entries: no TID is needed to drop a removed entry or a pending
 * twin), which saves a read of the TID array per match.  Valid only with
 * eytz_lookup_chunk_current(): a chunk that is not current must be
 * resolved (eytz_lookup_resolve_chunk) and read from the heap.  false
 * takes it back.
 */
extern void eytz_lookup_heap_all_visible(EytzLookup *lk, bool all_visible);

/* Put the TIDs of the current chunk's unresolved matches in place of their slots */
extern void eytz_lookup_resolve_chunk(EytzLookup *lk);

/*
 * Unpin the view and free the batch buffers; lk is not used afterwards.  A
 * query that fails unpins through cxt's reset callback instead.
 */
extern void eytz_lookup_end(EytzLookup *lk);

/*
 * Does the GPU service answer this backend's (and its parallel workers')
 * lookups now?  Then a parallel join's workers need no image of their own.
 */
extern bool eytz_lookup_service_answers(void);

/*
 * Parallel joins: the workers take up the leader's cached image of the
 * index instead of each loading its own (reading and checking every page),
 * in place where the leader keeps it in shared memory, else copied through
 * the query's shared memory (eytzlookupshare.c).  Workers that the GPU
 * service answers need none.
 */
typedef enum EytzShareKind
{
	EYTZ_SHARE_NONE,			/* none shared (or no longer there): the
								 * worker's lookup pins its own view */
	EYTZ_SHARE_COPIED,			/* copied into the worker's memory */
	EYTZ_SHARE_IN_PLACE			/* searched in the leader's kept image */
} EytzShareKind;

/* In the query's shared memory: where the workers find the leader's image */
typedef struct EytzLookupShared
{
	bool		has_image;
	bool		image_kept;
	dsm_handle	image_handle;
	EytzMetaPageData image_meta;
} EytzLookupShared;

/* The leader's side: the image it shares, pinned until the query ends */
typedef struct EytzLookupShare EytzLookupShare;

/*
 * Leader, before the query's shared memory is sized: the bytes of a copy of
 * the image the caller must leave room for (0: a kept image, or none to
 * share).  *share is made in query_cxt at the first call and reused when a
 * Gather sets up its shared memory again.  other_pages: as eytz_lookup_begin's.
 */
extern Size eytz_lookup_share_estimate(EytzLookupShare **share, Relation index,
									   double other_pages, MemoryContext query_cxt);
/* Leader: fill shared, and copy the image to copy (when the estimate asked for room) */
extern void eytz_lookup_share_init(EytzLookupShare *share, Relation index,
								   EytzLookupShared *shared, void *copy);
/* Leader, for EXPLAIN: the queries its kept image served, or whether it copied it */
extern void eytz_lookup_share_report(const EytzLookupShare *share,
									 uint64 *kept_queries, bool *copied);
/* Worker: take up the leader's image (copy: where share_init put a copy) */
extern EytzShareKind eytz_lookup_attach(Relation index, const EytzLookupShared *shared,
										void *copy);

/*
 * For the planner: the cost of pinning a view of indexoid for a scan that
 * will submit about nkeys keys (0 when what it needs is resident), and the
 * cost of one key's search on the device that would answer.  With
 * fresh_backend (a parallel worker's scan) nothing of this backend's
 * counts but the image it shares with its workers, and the GPU only
 * through the eytzgpu service; *touch_bytes is then the shared memory the
 * worker's view first touches (the shared image, the index pages it loads),
 * else 0.  other_pages: as eytz_lookup_begin's.
 */
extern void eytz_lookup_plan_cost(Oid indexoid, double nkeys, bool fresh_backend,
								  double other_pages, Cost *startup_cost,
								  Cost *per_key_cost, double *touch_bytes);

/*
 * The cost of a process's first touch of a page: of shared memory (read),
 * else of fresh private memory (written); measured once per backend
 */
extern double eytz_page_fault_cost(bool shared);

/*
 * Within the seam (eytzlookupcost.c): the view that nkeys keys call for,
 * given what is resident, with its startup (load) cost and per-key cost.
 */
typedef enum EytzViewKind
{
	EYTZ_VIEW_PAGES,			/* the index pages, through shared buffers */
	EYTZ_VIEW_IMAGE,			/* the CPU image */
	EYTZ_VIEW_PINNED,			/* the layout's pages pinned in shared buffers,
								 * searched as the image is (eytzimage.h) */
	EYTZ_VIEW_GPU				/* the GPU copy */
} EytzViewKind;

/*
 * The keys a backend's pinned views of a generation may search before the
 * image's load pays for itself (eytzimage.h: EytzPinnedUse.rent_keys)
 */
extern double eytz_view_rent_keys(const EytzMetaPageData *meta);

extern EytzViewKind eytz_view_cost(const EytzMetaPageData *meta,
								   bool image_resident, bool pinned_ok,
								   bool gpu_ok,
								   bool gpu_resident, double nkeys,
								   Cost *startup, Cost *per_key);

/*
 * _PG_init's call: defines eytzgpu.device, eytzgpu.gpu_memory_limit and
 * eytzgpu.image_cache_limit, and drops an index's image and GPU copy on
 * its relcache invalidations.
 */
extern void eytz_lookup_init(void);

#endif							/* EYTZLOOKUP_H */
