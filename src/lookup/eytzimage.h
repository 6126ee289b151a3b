/*
 * eytzimage.h
 *		The CPU side of the lookup seam (eytzimage.c): per-backend cached
 *		in-memory images of an index's layout and the batched search over
 *		them.
 */
#ifndef EYTZIMAGE_H
#define EYTZIMAGE_H

#include "storage/dsm.h"

#include "eytzam.h"
#include "eytzcache.h"
#include "eytzinclude.h"
#include "eytzmatchsort.h"

/* GUC: eytzgpu.image_cache_limit (MB) */
extern int	eytz_image_cache_limit_mb;

/*
 * GUC eytzgpu.search_prefetch: whether the batched CPU search goes by
 * groups of queries, level by level (eytzimagesearch.c): auto where the
 * batch is sparse and the keys overflow the cache, on / off always
 */
typedef enum EytzSearchPrefetch
{
	EYTZ_SEARCH_PREFETCH_AUTO,
	EYTZ_SEARCH_PREFETCH_ON,
	EYTZ_SEARCH_PREFETCH_OFF
} EytzSearchPrefetch;
extern int	eytz_search_prefetch;

/* Defines the GUC above */
extern void eytz_image_init(void);

/*
 * A cached, read-only copy of one generation of an index's layout, with
 * its included columns (eytzinclude.h): per column the values in slot
 * order (inc.width[c] bytes each) and the NULL bitmap.  img.meta is the
 * metapage as read before the load: a later VACUUM may have tombstoned
 * entries since (meta.ndead tells).
 */
typedef struct EytzImage
{
	EytzCacheEntry ce;			/* first: the cache links images by it */
	MemoryContext cxt;			/* holds the arrays (and this struct) */
	EytzLayoutImage img;
	EytzInclude inc;
	char	   *values[EYTZ_MAX_INCLUDE];
	uint8	   *nulls[EYTZ_MAX_INCLUDE];
	dsm_segment *seg;			/* a kept shared image: the segment holding
								 * the arrays (else NULL) */
	bool		no_kept;		/* a private image that found no room in the
								 * main shared memory */
	uint64		kept_queries;	/* kept: parallel queries it served */
	bool		shared;			/* its segment is in the shared image
								 * registry (eytzimageshared.c) */
	/* a pinned view (eytz_image_pin_pages): the index's own pages */
	Relation	index;			/* whose metapage the TID reads recheck */
	Buffer	   *bufs;			/* the key pages, then the TID pages */
	uint32		nbufs;			/* pinned now (0: none, or forgotten) */
	const char **keypages;		/* per key page: its keys */
	const ItemPointerData **tidpages;	/* per TID page: its TIDs */
	struct EytzPinnedUse *use;	/* the backend's record of the generation */
} EytzImage;

/*
 * The shared image registry (eytzimageshared.c): with shared_preload_libraries,
 * kept segments pinned for every backend, one per index generation, within
 * eytzgpu.shared_image_limit.  eytz_image_acquire looks there first
 * (eytz_shared_image_attach: the caller checks the segment's header) and
 * registers the image it loads (eytz_shared_image_register: false leaves it
 * the caller's own); eytz_shared_image_registered: whether a cached image's
 * segment is still there (else the backend drops it);
 * eytz_shared_images_trim: evict down to a lowered limit.
 */
extern int	eytz_shared_image_limit_mb;
extern void eytz_shared_images_init(void);
extern bool eytz_shared_images_on(void);
extern void eytz_shared_images_trim(void);
extern bool eytz_shared_image_has(Relation index, uint64 generation);
extern dsm_segment *eytz_shared_image_attach(Relation index, const EytzMetaPageData *meta,
											 uint64 min_ndead);
extern bool eytz_shared_image_registered(dsm_segment *seg);
extern bool eytz_shared_image_register(Relation index, const EytzMetaPageData *meta,
									   dsm_segment *seg, Size bytes);

/* Keys a backend's pinned views of one index generation searched */
typedef struct EytzPinnedUse
{
	Oid			indexoid;
	Oid			relfilenode;
	uint64		generation;
	double		keys;
	double		rent_keys;		/* keys after which the image pays (0: unset) */
} EytzPinnedUse;


/*
 * Is this generation of index's image cached, by this backend or in the
 * shared registry (no pin taken)?
 */
extern bool eytz_image_resident(Relation index, uint64 generation);

/*
 * A pinned image of the layout generation meta describes (meta read by
 * eytz_read_meta() in this transaction, with the index open: its pages stay
 * intact until the transaction ends), from the cache or loaded now.  A load
 * cancelled by an error frees what it had read.
 */
extern EytzImage *eytz_image_acquire(Relation index, const EytzMetaPageData *meta);
/*
 * The same, counting every tombstone meta counts: a cached image that a
 * VACUUM tombstoned entries of since its load is replaced by a new load
 * (for index-only joins, which must not take a removed entry for a live one)
 */
extern EytzImage *eytz_image_acquire_current(Relation index,
											 const EytzMetaPageData *meta);
extern void eytz_image_release(EytzImage *image);
extern void eytz_image_invalidate(Oid indexoid);

/*
 * Parallel join: the workers take up the leader's cached image (keys, TIDs
 * and included columns) instead of each loading its own (reading and
 * checking every page).
 *
 * Where a worker can search it in place (eytz_image_in_place), the leader
 * keeps its image in a segment of dynamic shared memory carved from the
 * main shared memory, pinned for the backend's life and freed with the
 * cached image (cache eviction, invalidation, a new generation):
 * eytz_image_pin_kept returns this generation's image pinned, moved into
 * such a segment (one copy, at the first parallel query that shares it) if
 * it was private, or NULL (none cached, or no room: the per-query copy
 * below).  A worker attaches the segment (eytz_image_attach_kept, handle
 * and the image's metapage as the leader passed them), checks that it
 * still holds that image and searches it in place; false: it is gone.
 *
 * Else the leader copies its cached image into the query's shared memory
 * and each worker copies it into its own: eytz_image_shared_size: the
 * bytes of the shared copy, 0 when the workers rather pin the index's
 * pages (eytz_image_pages_ok: no copy at all); eytz_image_export: copy this generation's
 * cached image to dst and its own metapage (as read at its load) to
 * *image_meta, false when none is cached; eytz_image_import (in a worker,
 * image_meta the exported one): cache a copy of the shared one at src.
 */
extern EytzImage *eytz_image_pin_kept(Relation index, const EytzMetaPageData *meta);
extern bool eytz_image_attach_kept(Relation index, const EytzMetaPageData *image_meta,
								   dsm_handle handle);
extern Size eytz_image_shared_size(Relation index, const EytzMetaPageData *meta,
								   double other_pages);
extern bool eytz_image_export(Relation index, const EytzMetaPageData *meta, void *dst,
							  EytzMetaPageData *image_meta);
extern void eytz_image_import(Relation index, const EytzMetaPageData *image_meta,
							  void *src);

/*
 * GUC eytzgpu.parallel_image (defined with the join's GUCs): whether the
 * leader keeps its image in the main shared memory for the workers to
 * search in place: where that has huge pages (huge_pages = on; auto), in
 * any case (in_place: huge_pages = try that got them), or never (copy: the
 * workers copy it).  eytz_image_in_place: whether shared memory at src is
 * searched in place; with src NULL, whether a segment of bytes could be
 * (the planner's question, and the leader's before it makes one).
 */
typedef enum EytzParallelImage
{
	EYTZ_PARALLEL_IMAGE_AUTO,
	EYTZ_PARALLEL_IMAGE_IN_PLACE,
	EYTZ_PARALLEL_IMAGE_COPY
} EytzParallelImage;
extern int	eytz_parallel_image;
extern bool eytz_image_in_place(const void *src, Size bytes);

/*
 * GUC eytzgpu.cpu_view: which CPU view answers a join that the image
 * would: auto (the cheapest: the index's pages pinned in shared buffers
 * where they fit the pin budget and no image is cached, else the image),
 * image (always the backend's image), pinned (the pinned pages wherever
 * they fit the budget).
 */
typedef enum EytzCpuView
{
	EYTZ_CPU_VIEW_AUTO,
	EYTZ_CPU_VIEW_IMAGE,
	EYTZ_CPU_VIEW_PINNED
} EytzCpuView;
extern int	eytz_cpu_view;

/*
 * The pinned view: the layout's key and TID pages pinned in shared buffers
 * for one scan and searched in place through per-page pointers (no load,
 * no copy; parallel workers pin the same buffers).  An EytzImage whose
 * keypages/tidpages stand for img.keys/img.tids, uncached: its release
 * unpins the pages.  eytz_image_pages_ok: whether a scan of index may pin
 * this generation's pages now: within the budget (a third of
 * shared_buffers) as eytzgpu.cpu_view allows (see eytzimage.c);
 * other_pages: what the same scan reads beside this index and its heap
 * (a partitioned join's other leaves), which competes for the buffers;
 * parallel: the scan's processes share the leader's image where the pages
 * are not kept for a smaller heap's sake (a fresh worker's first touches of
 * pinned pages cost more than its copy of the image).
 * The page headers are checked when pinned, each node on a search's way
 * (its keys ascend within the bounds of its path) and each TID as they are
 * read: a damaged page raises XX002 as an image's load does.
 * eytz_image_pinned_use: the backend's record of what pinned views of
 * index's generation searched (NULL if none and not create).  On error the resource owner has
 * released the pins: eytz_image_forget_pins before the release.
 */
extern bool eytz_image_pages_ok(Relation index, const EytzMetaPageData *meta,
								double other_pages, bool parallel);
extern EytzImage *eytz_image_pin_pages(Relation index, const EytzMetaPageData *meta);
extern void eytz_image_forget_pins(EytzImage *image);
extern EytzPinnedUse *eytz_image_pinned_use(Relation index, const EytzMetaPageData *meta,
											bool create);

/* Pending entries sorted by (key, TID) */
extern void eytz_sort_pending(EytzPendingEntry *entries, uint64 n);

/*
 * Batched search of the image: the queries order[start..nq) are answered
 * in that order (fastest sorted by low key: a query then starts where its
 * path leaves the previous one's), whole queries only, while their matches
 * fit in out[0..max); with a stage (else NULL), each match's values go
 * there.  A query is (tid: its low key, row: its index into hi,
 * unused: the batch row it answers); hi NULL means every query is a point.
 * packed (else NULL) stands for order where every query is a point within
 * 2^32 of base: (key - base << 32 | batch row), ascending.
 * Live matches (packed TID, batch row) are appended to out from *nout on.
 * With slots and a stage, an image without tombstones leaves each match's
 * tid its layout slot tagged EYTZ_MATCH_SLOT (eytz_image_slot_tid() gives
 * the TID): the caller needs no TID for it.
 * nearby_bytes: what the scan reads between searches of this image (a
 * partitioned join's other leaves), which competes for the CPU's cache
 * (eytzgpu.search_prefetch = auto).
 * Returns the number of queries answered (0 when query order[start] alone
 * does not fit).  Not sorted by TID.  (Keys out of order on a search path
 * raised XX002 when the image was loaded.)
 */
extern uint32 eytz_image_search(const EytzImage *image,
								const EytzMatch *order, const uint64 *packed,
								uint64 base, uint32 start, uint32 nq, const uint64 *hi,
								uint32 max, EytzMatch *out, uint32 *nout,
								EytzStage *stage, bool slots, uint64 nearby_bytes);

/* The packed TID of a match eytz_image_search left as a tagged slot */
static inline uint64
eytz_image_slot_tid(const EytzImage *image, uint64 tagged)
{
	return image->img.tids[tagged & ~EYTZ_MATCH_SLOT];
}

#endif							/* EYTZIMAGE_H */
