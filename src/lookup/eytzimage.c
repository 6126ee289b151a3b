/*
 * eytzimage.c
 *		The CPU side of the lookup seam: an in-memory image of an index's
 *		layout (loaded through the page layer under the generation protocol
 *		and cached per backend), its sharing with a parallel join's workers
 *		(kept in shared memory across queries, or copied for one), and the
 *		batched search over it.
 *
 * The batched search answers many key ranges at once at memory speed: the
 * queries come sorted by their low key, so neighbouring searches share
 * their upper path and each level is read from left to right.  A query
 * starts where its path leaves the previous query's (the levels above are
 * not searched again, only their first candidate compared), and the slots
 * right of each new node are prefetched for the queries that follow.  Each
 * level is the per-level range scan of the paper (as in eytzcursor.c) on
 * flat arrays.  Matches are first recorded as layout positions and resolved
 * to TIDs in a second pass that prefetches ahead, so the TID array's misses
 * overlap too (resolving them in the walk measured 20-40% slower).
 *
 * Why not independent searches interleaved level by level (group
 * prefetching)?  Neighbours in a sorted batch of 262k queries into 4M keys
 * share all but about 5 levels of an EBS layout's 22 (2 of an EKS 9 one's
 * 7), so the shared walk compares a fifth of the nodes; groups of 32
 * branch-free descents measured 88 against 52 ns a key, and two walks over
 * the halves of a batch interleaved gained nothing (the walk is bound by
 * its work, not by the latency of its chain of loads).  What the walk
 * avoids instead is branches on the way a search goes, a coin toss at
 * every level.
 *
 * The image holds no buffer pin, so a TID it returns may have been vacuumed
 * since; the executor rechecks the key on the fetched heap tuple.  An index
 * with INCLUDE columns has them loaded beside the keys and TIDs (counted in
 * the cache's memory), so that an index-only join reads a match's values
 * from the same slot.
 */
#include "postgres.h"

#include "access/relation.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/dsm_impl.h"
#include "storage/pg_shmem.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzcompat.h"
#include "eytzimage.h"

/* levels a layout may have (a fan-out of 2 and 2^64 entries) */
#define EYTZ_MAX_LEVELS 64
/*
 * How far right of a new node the search prefetches, in slots: the next
 * queries of a sorted batch reach nodes a few cache lines to the right.
 */
#define EYTZ_STREAM_AHEAD 64
/* how far ahead the TID resolution prefetches */
#define EYTZ_RESOLVE_AHEAD 16

int			eytz_image_cache_limit_mb = 1024;
int			eytz_parallel_image = EYTZ_PARALLEL_IMAGE_AUTO;
int			eytz_cpu_view = EYTZ_CPU_VIEW_AUTO;

static const struct config_enum_entry cpu_view_options[] = {
	{"auto", EYTZ_CPU_VIEW_AUTO, false},
	{"image", EYTZ_CPU_VIEW_IMAGE, false},
	{"pinned", EYTZ_CPU_VIEW_PINNED, false},
	{NULL, 0, false}
};

/*
 * A pinned view holds at most this share of shared_buffers: the rest stays
 * for the heap and for other scans (pins of one index's pages by several
 * scans share the buffers)
 */
#define PINNED_SHARE_DIVISOR 3

void
eytz_image_init(void)
{
	DefineCustomIntVariable("eytzgpu.image_cache_limit",
							"Memory a backend may keep for in-memory copies of eytzgpu index layouts.",
							"0 keeps none: each join that needs an image loads its own.",
							&eytz_image_cache_limit_mb, 1024, 0, INT_MAX / 2,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
	DefineCustomEnumVariable("eytzgpu.cpu_view",
							 "Which CPU view of an eytzgpu index a join searches.",
							 "auto: the index pages pinned in shared buffers where they fit a third "
							 "of shared_buffers and no image is cached, else the backend's image; "
							 "image: always the image; pinned: the pinned pages wherever they fit.",
							 &eytz_cpu_view, EYTZ_CPU_VIEW_AUTO, cpu_view_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

static MemoryContext image_cxt = NULL;

/* The long-lived context of the cached images */
static MemoryContext
images_context(void)
{
	if (image_cxt == NULL)
		image_cxt = AllocSetContextCreate(TopMemoryContext,
										  "eytzgpu layout images",
										  ALLOCSET_SMALL_SIZES);
	return image_cxt;
}

/*
 * The cache's destructor: an image and its arrays live in one context, or
 * its arrays in its kept segment (whose memory goes when the last process
 * attached to it detaches: workers still searching it keep it)
 */
/*
 * The pages this backend's pinned views hold: one budget for all of them
 * (pages_fit), so that a join over many leaves' indexes does not pin more
 * of shared_buffers than one index may
 */
static uint64 pinned_pages_held = 0;

static void
image_free(EytzCacheEntry *entry)
{
	EytzImage  *image = (EytzImage *) entry;
	uint32		i;

	pinned_pages_held -= Min(pinned_pages_held, image->nbufs);
	for (i = 0; i < image->nbufs; i++)
		ReleaseBuffer(image->bufs[i]);
	image->nbufs = 0;
	if (image->seg)
		dsm_detach(image->seg);
	MemoryContextDelete(image->cxt);
}

static EytzCache image_cache = {NULL, 0, 0, image_free};

/* Drop the cached images of an index (InvalidOid: of every index) */
void
eytz_image_invalidate(Oid indexoid)
{
	eytz_cache_drop(&image_cache, indexoid, NULL);
}

bool
eytz_image_resident(Relation index, uint64 generation)
{
	return eytz_cache_find(&image_cache, index, generation);
}

/*
 * Load the layout that meta describes, through the page layer's checked
 * reader (a damaged page raises XX002 naming the index and block).
 *
 * The image is read into a context of its own under the caller's, so that
 * an error or a cancel during the load frees it with the query; only a
 * complete image moves under the long-lived image context.
 */
static EytzImage *
image_alloc(const EytzMetaPageData *meta)
{
	MemoryContext cxt;
	EytzImage  *image;

	cxt = AllocSetContextCreate(CurrentMemoryContext,
								"eytzgpu layout image",
								ALLOCSET_SMALL_SIZES);
	image = MemoryContextAllocZero(cxt, sizeof(EytzImage));
	image->cxt = cxt;
	image->img.meta = *meta;
	if (meta->nentries > 0)
	{
		image->img.keys = eytz_alloc_large(cxt, meta->nentries * meta->key_width);
		image->img.tids = eytz_alloc_large(cxt, meta->nentries * sizeof(uint64));
	}
	return image;
}

static EytzImage *
image_load(Relation index, const EytzMetaPageData *meta)
{
	EytzImage  *image = image_alloc(meta);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	int			c;

	eytz_region_load(index, meta, strategy, image->img.keys, image->img.tids);
	eytz_include_get(index, &image->inc);
	for (c = 0; c < image->inc.ncols && meta->nentries > 0; c++)
	{
		image->values[c] = eytz_alloc_large(image->cxt, meta->nentries * image->inc.width[c]);
		image->nulls[c] = eytz_alloc_large(image->cxt, (meta->nentries + 7) / 8);
		eytz_region_load_include(index, meta, &image->inc, strategy, c,
								 image->values[c], image->nulls[c]);
	}
	FreeAccessStrategy(strategy);
	MemoryContextSetParent(image->cxt, images_context());
	return image;
}

/* Memory of an image: keys, TIDs, included values and NULL bitmaps */
static Size
image_bytes(const EytzImage *image)
{
	uint64		n = image->img.meta.nentries;
	Size		bytes = n * (image->img.meta.key_width + sizeof(uint64));
	int			c;

	for (c = 0; c < image->inc.ncols; c++)
		bytes += n * image->inc.width[c] + (n + 7) / 8;
	return bytes;
}

/* Cache a complete image with refcount pins; false: it does not fit */
static bool
image_cache_add(Relation index, EytzImage *image, int refcount)
{
	return eytz_cache_add(&image_cache, &image->ce, index, image->img.meta.generation,
						  image_bytes(image), refcount,
						  (Size) eytz_image_cache_limit_mb * 1024 * 1024);
}

EytzImage *
eytz_image_acquire(Relation index, const EytzMetaPageData *meta)
{
	EytzImage  *image;

	image = (EytzImage *) eytz_cache_pin(&image_cache, index, meta->generation);
	if (image)
		return image;
	image = image_load(index, meta);
	/* uncached when it does not fit: freed at its release */
	(void) image_cache_add(index, image, 1);
	return image;
}

EytzImage *
eytz_image_acquire_current(Relation index, const EytzMetaPageData *meta)
{
	EytzImage  *image = eytz_image_acquire(index, meta);

	if (image->img.meta.ndead >= meta->ndead)
		return image;
	/* other scans pinning the stale copy keep it until they release it */
	if (image->ce.cached)
		eytz_cache_unlink(&image_cache, &image->ce);
	eytz_image_release(image);
	return eytz_image_acquire(index, meta);
}

void
eytz_image_release(EytzImage *image)
{
	eytz_cache_release(&image_cache, &image->ce);
}

/*
 * The shared copy of an image: keys, TIDs, then per included column its
 * values and NULL bitmap, each array at a MAXALIGN'ed offset.  Fills
 * off[0] (TIDs), off[1 + 2c] and off[2 + 2c] (column c's values and
 * NULLs) and returns the total size.
 */
static Size
shared_layout(const EytzMetaPageData *meta, const EytzInclude *inc,
			  Size off[1 + 2 * EYTZ_MAX_INCLUDE])
{
	uint64		n = meta->nentries;
	Size		size = MAXALIGN(mul_size(n, meta->key_width));
	int			c;

	off[0] = size;
	size = add_size(size, MAXALIGN(mul_size(n, sizeof(uint64))));
	for (c = 0; c < inc->ncols; c++)
	{
		off[1 + 2 * c] = size;
		size = add_size(size, MAXALIGN(mul_size(n, inc->width[c])));
		off[2 + 2 * c] = size;
		size = add_size(size, MAXALIGN((n + 7) / 8));
	}
	return size;
}

Size
eytz_image_shared_size(Relation index, const EytzMetaPageData *meta)
{
	EytzInclude inc;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];

	if (eytz_image_pages_ok(index, meta))
		return 0;
	eytz_include_get(index, &inc);
	return shared_layout(meta, &inc, off);
}

bool
eytz_image_export(Relation index, const EytzMetaPageData *meta, void *dst,
				  EytzMetaPageData *image_meta)
{
	EytzImage  *image;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];
	uint64		n = meta->nentries;
	int			c;

	image = (EytzImage *) eytz_cache_pin(&image_cache, index, meta->generation);
	if (image == NULL)
		return false;
	(void) shared_layout(meta, &image->inc, off);
	if (n > 0)
	{
		memcpy(dst, image->img.keys, n * meta->key_width);
		memcpy((char *) dst + off[0], image->img.tids, n * sizeof(uint64));
		for (c = 0; c < image->inc.ncols; c++)
		{
			memcpy((char *) dst + off[1 + 2 * c], image->values[c], n * image->inc.width[c]);
			memcpy((char *) dst + off[2 + 2 * c], image->nulls[c], (n + 7) / 8);
		}
	}
	/* the image's own metapage: tombstones counted since its load are not in it */
	*image_meta = image->img.meta;
	/*
	 * A copy found room in the main shared memory (where the kept segment
	 * found none before: other queries' memory was there): the next
	 * parallel query tries again to keep the image
	 */
	if (eytz_image_in_place(dst, 0))
		image->no_kept = false;
	eytz_image_release(image);
	return true;
}

/*
 * A segment of dynamic shared memory is one of its own (4 kB pages: the
 * search's random reads would miss the TLB at every level, and a fresh
 * process's first touch of each page faults) unless dsm.c carved it from
 * the main shared memory (min_dynamic_shared_memory, when it has room),
 * which huge_pages = on backs with huge pages.  With huge_pages = try
 * PostgreSQL 15 does not say whether it got them: parallel_image =
 * in_place says so.
 */
bool
eytz_image_in_place(const void *src, Size bytes)
{
	if (eytz_parallel_image == EYTZ_PARALLEL_IMAGE_COPY)
		return false;
	if (src ? !ShmemAddrIsValid(src) :
		(Size) min_dynamic_shared_memory * 1024 * 1024 < bytes)
		return false;
	return eytz_parallel_image == EYTZ_PARALLEL_IMAGE_IN_PLACE ||
		huge_pages == HUGE_PAGES_ON;
}

/*
 * An image whose arrays are the shared memory at src (laid out as
 * shared_layout says: a kept segment's), in the long-lived image context
 */
static EytzImage *
image_in_place(Relation index, const EytzMetaPageData *meta, char *src)
{
	MemoryContext cxt = AllocSetContextCreate(images_context(),
											  "eytzgpu shared layout image",
											  ALLOCSET_SMALL_SIZES);
	EytzImage  *image;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];
	int			c;

	image = MemoryContextAllocZero(cxt, sizeof(EytzImage));
	image->cxt = cxt;
	image->img.meta = *meta;
	eytz_include_get(index, &image->inc);
	(void) shared_layout(meta, &image->inc, off);
	image->img.keys = src;
	image->img.tids = (uint64 *) (src + off[0]);
	for (c = 0; c < image->inc.ncols; c++)
	{
		image->values[c] = src + off[1 + 2 * c];
		image->nulls[c] = (uint8 *) (src + off[2 + 2 * c]);
	}
	return image;
}

/*
 * A private copy: shared memory in small pages (tmpfs) makes the search's
 * random reads miss the TLB at every level (4.5-5.2 us a key against 1.1
 * at 5M keys), and a process's first touch of each of them is a page fault.
 */
void
eytz_image_import(Relation index, const EytzMetaPageData *meta, void *src)
{
	EytzImage  *image;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];
	uint64		n = meta->nentries;
	int			c;

	if (eytz_image_resident(index, meta->generation))
		return;
	image = image_alloc(meta);
	eytz_include_get(index, &image->inc);
	(void) shared_layout(meta, &image->inc, off);
	if (n > 0)
	{
		memcpy(image->img.keys, src, n * meta->key_width);
		memcpy(image->img.tids, (char *) src + off[0], n * sizeof(uint64));
		for (c = 0; c < image->inc.ncols; c++)
		{
			image->values[c] = eytz_alloc_large(image->cxt, n * image->inc.width[c]);
			image->nulls[c] = eytz_alloc_large(image->cxt, (n + 7) / 8);
			memcpy(image->values[c], (char *) src + off[1 + 2 * c], n * image->inc.width[c]);
			memcpy(image->nulls[c], (char *) src + off[2 + 2 * c], (n + 7) / 8);
		}
	}
	MemoryContextSetParent(image->cxt, images_context());
	if (!image_cache_add(index, image, 0))
		MemoryContextDelete(image->cxt);
}

/*
 * A kept segment starts with whose image it holds: a worker checks it
 * after attaching the handle it was given (a handle outlives its segment)
 */
typedef struct KeptHeader
{
	Oid			indexoid;
	Oid			relfilenode;
	uint64		generation;
	uint64		ndead;
	uint64		nentries;
} KeptHeader;

/* the arrays start on a cache line of their own */
#define KEPT_HEADER_SIZE CACHELINEALIGN(sizeof(KeptHeader))

/*
 * Moving a private image into a kept segment copies it once (the per-query
 * copy it replaces cost the same at every parallel query).  The segment is
 * created under the current resource owner (an error before it is complete
 * detaches it) and pinned for the backend's life once it is.  The private
 * copy is unlinked and freed by its last unpin, the kept one cached in its
 * place (the same bytes count against eytzgpu.image_cache_limit).  With no
 * room in the main shared memory dsm.c makes a segment of its own, in
 * small pages, which would make every search miss the TLB: it is dropped,
 * and the private image remembers not to try again until a per-query copy
 * finds room there (eytz_image_export).
 */
EytzImage *
eytz_image_pin_kept(Relation index, const EytzMetaPageData *meta)
{
	EytzImage  *image;
	EytzImage  *kept;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];
	Size		size;
	uint64		n;
	dsm_segment *seg;
	char	   *base;
	KeptHeader *hdr;
	int			c;

	image = (EytzImage *) eytz_cache_pin(&image_cache, index, meta->generation);
	if (image == NULL || image->seg)
		return image;
	n = image->img.meta.nentries;
	size = add_size(KEPT_HEADER_SIZE, shared_layout(&image->img.meta, &image->inc, off));
	if (image->no_kept || n == 0 || !eytz_image_in_place(NULL, size))
	{
		eytz_image_release(image);
		return NULL;
	}
	seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL || !eytz_image_in_place(dsm_segment_address(seg), size))
	{
		if (seg)
			dsm_detach(seg);
		image->no_kept = true;
		eytz_image_release(image);
		return NULL;
	}
	base = dsm_segment_address(seg);
	hdr = (KeptHeader *) base;
	hdr->indexoid = RelationGetRelid(index);
	hdr->relfilenode = EytzRelFileNumber(EytzRelationFile(index));
	hdr->generation = image->img.meta.generation;
	hdr->ndead = image->img.meta.ndead;
	hdr->nentries = n;
	kept = image_in_place(index, &image->img.meta, base + KEPT_HEADER_SIZE);
	memcpy(kept->img.keys, image->img.keys, n * image->img.meta.key_width);
	memcpy(kept->img.tids, image->img.tids, n * sizeof(uint64));
	for (c = 0; c < image->inc.ncols; c++)
	{
		memcpy(kept->values[c], image->values[c], n * image->inc.width[c]);
		memcpy(kept->nulls[c], image->nulls[c], (n + 7) / 8);
	}
	dsm_pin_mapping(seg);
	kept->seg = seg;
	if (image->ce.cached)
		eytz_cache_unlink(&image_cache, &image->ce);
	eytz_image_release(image);
	/* uncached when it does not fit: freed at its release */
	(void) image_cache_add(index, kept, 1);
	return kept;
}

bool
eytz_image_attach_kept(Relation index, const EytzMetaPageData *image_meta,
					   dsm_handle handle)
{
	dsm_segment *seg;
	const KeptHeader *hdr;
	EytzImage  *image;

	if (eytz_image_resident(index, image_meta->generation))
		return true;
	seg = dsm_attach(handle);
	if (seg == NULL)
		return false;
	hdr = dsm_segment_address(seg);
	if (hdr->indexoid != RelationGetRelid(index) ||
		hdr->relfilenode != EytzRelFileNumber(EytzRelationFile(index)) ||
		hdr->generation != image_meta->generation ||
		hdr->ndead != image_meta->ndead ||
		hdr->nentries != image_meta->nentries)
	{
		dsm_detach(seg);
		return false;
	}
	/* mapped until the worker exits or its cache drops the image */
	dsm_pin_mapping(seg);
	image = image_in_place(index, image_meta, (char *) hdr + KEPT_HEADER_SIZE);
	image->seg = seg;
	if (!eytz_cache_add(&image_cache, &image->ce, index, image_meta->generation, 0, 0,
						(Size) eytz_image_cache_limit_mb * 1024 * 1024))
		image_free(&image->ce);
	return true;
}

/* Within the pin budget: a third of shared_buffers, less what this backend's other pinned views hold */
static bool
pages_fit(const EytzMetaPageData *meta)
{
	uint64		pages = (uint64) meta->nkeypages + meta->ntidpages;

	return meta->nentries > 0 && meta->nentries < PG_UINT32_MAX &&
		pages + pinned_pages_held <= (uint64) NBuffers / PINNED_SHARE_DIVISOR;
}

/*
 * With eytzgpu.cpu_view = auto, also only while the layout and the heap fit
 * shared_buffers together (pinned pages that push the heap's out cost more
 * heap reads than the image's load), and until this backend's pinned scans
 * of the generation have searched the keys whose extra cost would have
 * paid for the image's load (EytzPinnedUse.rent_keys, which the lookup seam
 * sets from its costs): from then on the image is loaded once and cached
 * (a rent-or-buy choice, at most twice the cost of knowing the future).
 */
bool
eytz_image_pages_ok(Relation index, const EytzMetaPageData *meta)
{
	EytzPinnedUse *use;
	Relation	heap;
	double		heap_pages;

	if (eytz_cpu_view == EYTZ_CPU_VIEW_IMAGE || !pages_fit(meta))
		return false;
	if (eytz_cpu_view == EYTZ_CPU_VIEW_PINNED)
		return true;
	use = eytz_image_pinned_use(index, meta, false);
	if (use && use->rent_keys > 0 && use->keys >= use->rent_keys)
		return false;
	heap = relation_open(index->rd_index->indrelid, AccessShareLock);
	heap_pages = Max(RelationGetForm(heap)->relpages, 0);
	relation_close(heap, NoLock);
	return heap_pages + meta->nkeypages + meta->ntidpages <= NBuffers;
}

/*
 * What this backend's pinned views searched, per index generation: the
 * keys, which decide when the image pays for its load (eytz_image_pages_ok)
 */
#define PINNED_USES 16
static EytzPinnedUse pinned_uses[PINNED_USES];
static int	pinned_use_next = 0;

EytzPinnedUse *
eytz_image_pinned_use(Relation index, const EytzMetaPageData *meta, bool create)
{
	Oid			relid = RelationGetRelid(index);
	Oid			file = EytzRelFileNumber(EytzRelationFile(index));
	EytzPinnedUse *u;
	int			i;

	for (i = 0; i < PINNED_USES; i++)
	{
		u = &pinned_uses[i];
		if (u->indexoid == relid && u->relfilenode == file &&
			u->generation == meta->generation)
			return u;
	}
	if (!create)
		return NULL;
	u = &pinned_uses[pinned_use_next];
	pinned_use_next = (pinned_use_next + 1) % PINNED_USES;
	u->indexoid = relid;
	u->relfilenode = file;
	u->generation = meta->generation;
	u->keys = 0;
	u->rent_keys = 0;
	return u;
}

/*
 * Pin the key and TID pages of the generation meta describes (read in this
 * transaction with the index open: the pages stay that generation's until
 * it ends), each checked as the image's load checks it.  Built in a
 * context under the caller's until complete, so that an error frees it
 * (and the resource owner drops the pins taken so far).
 */
EytzImage *
eytz_image_pin_pages(Relation index, const EytzMetaPageData *meta)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "eytzgpu pinned layout view",
											  ALLOCSET_SMALL_SIZES);
	uint32		nbufs = meta->nkeypages + meta->ntidpages;
	uint64		n = meta->nentries;
	EytzImage  *image;
	uint32		p;

	Assert(pages_fit(meta));
	image = MemoryContextAllocZero(cxt, sizeof(EytzImage));
	image->cxt = cxt;
	image->img.meta = *meta;
	image->index = index;
	image->bufs = MemoryContextAlloc(cxt, sizeof(Buffer) * nbufs);
	image->keypages = MemoryContextAlloc(cxt, sizeof(char *) * meta->nkeypages);
	image->tidpages = MemoryContextAlloc(cxt, sizeof(ItemPointerData *) * meta->ntidpages);
	for (p = 0; p < nbufs; p++)
	{
		bool		is_key = p < meta->nkeypages;
		uint32		q = is_key ? p : p - meta->nkeypages;
		BlockNumber blkno = is_key ? meta->keys_start + q : meta->tids_start + q;
		uint64		first = (uint64) q * (is_key ? meta->keys_per_page : EYTZ_TIDS_PER_PAGE);
		uint64		cnt = Min(is_key ? meta->keys_per_page : EYTZ_TIDS_PER_PAGE, n - first);
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		Page		page;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		/* a bad page is reported with this one's pin held: the owner drops them all */
		image->bufs[p] = buf;
		image->nbufs = p + 1;
		eytz_check_page(index, meta, page, blkno,
						is_key ? EYTZ_PAGE_KEYS : EYTZ_PAGE_TIDS,
						cnt * (is_key ? meta->key_width : sizeof(ItemPointerData)));
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		if (is_key)
			image->keypages[q] = PageGetContents(page);
		else
			image->tidpages[q] = (const ItemPointerData *) PageGetContents(page);
		if ((p & 255) == 255)
			CHECK_FOR_INTERRUPTS();
	}
	image->use = eytz_image_pinned_use(index, meta, true);
	pinned_pages_held += image->nbufs;
	image->ce.refcount = 1;
	image->ce.cached = false;
	MemoryContextSetParent(cxt, images_context());
	return image;
}

void
eytz_image_forget_pins(EytzImage *image)
{
	pinned_pages_held -= Min(pinned_pages_held, image->nbufs);
	image->nbufs = 0;
}

/* qsort order of pending entries: key, then TID */
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

/*
 * The asked-for included values of slot into stage position pos, with the
 * entry's key (the search read it: no second read of the keys at random)
 */
static void
stage_slot(const EytzImage *image, uint64 slot, uint64 key, EytzStage *stage,
		   uint32 pos)
{
	int			j;

	stage->have[pos] = true;
	stage->keys[pos] = key;
	for (j = 0; j < stage->ncols; j++)
	{
		int			c = stage->cols[j];
		int			width = image->inc.width[c];
		bool		isnull = (image->nulls[c][slot / 8] >> (slot % 8)) & 1;

		stage->isnull[j][pos] = isnull;
		stage->values[j][pos] = isnull ? (Datum) 0 :
			eytz_include_fetch(image->values[c] + slot * width, width);
	}
}

/*
 * Replace the layout positions in m[from..n) by their TIDs, dropping
 * tombstones; returns the new n.  With a stage (whose keys hold each
 * match's key at its position so far), each match's values go there at its
 * new position, which "unused" keeps.  With slots (an image without
 * tombstones), the positions stay, tagged EYTZ_MATCH_SLOT, and only the
 * values are staged: the TID array is not read.
 */
static uint32
resolve_tids(const EytzImage *image, EytzMatch *m, uint32 from, uint32 n,
			 EytzStage *stage, bool slots)
{
	const uint64 *tids = image->img.tids;
	uint32		i,
				out = from;

	if (slots)
	{
		Assert(stage && image->img.meta.ndead == 0);
		for (i = from; i < n; i++)
		{
			if (i + EYTZ_RESOLVE_AHEAD < n && stage->ncols > 0)
				__builtin_prefetch(image->values[stage->cols[0]] +
								   m[i + EYTZ_RESOLVE_AHEAD].tid *
								   image->inc.width[stage->cols[0]]);
			stage_slot(image, m[i].tid, stage->keys[i], stage, i);
			m[i].tid |= EYTZ_MATCH_SLOT;
			m[i].unused = i;
		}
		return n;
	}
	for (i = from; i < n; i++)
	{
		uint64		t;

		if (i + EYTZ_RESOLVE_AHEAD < n)
		{
			__builtin_prefetch(&tids[m[i + EYTZ_RESOLVE_AHEAD].tid]);
			if (stage && stage->ncols > 0)
				__builtin_prefetch(image->values[stage->cols[0]] +
								   m[i + EYTZ_RESOLVE_AHEAD].tid *
								   image->inc.width[stage->cols[0]]);
		}
		t = tids[m[i].tid];
		if (eytz_tid_block(t) != InvalidBlockNumber)
		{
			if (stage)
				stage_slot(image, m[i].tid, stage->keys[i], stage, out);
			m[out].tid = t;
			m[out].row = m[i].row;
			m[out].unused = out;
			out++;
		}
	}
	return out;
}

/*
 * Where the search of the previous query went at one level.  The next
 * query (its low key is not smaller) takes the same way down to the deepest
 * level whose ub it does not pass: its count of node keys below its low key
 * is the same there, so is its first candidate.
 */
typedef struct LevelStep
{
	uint64		first;			/* first candidate slot, or NO_SLOT */
	uint64		first_key;		/* its key */
	uint64		min_first_key;	/* the least first_key of this level and above */
	uint64		child;			/* the node below */
	uint64		lb;				/* bounds of the keys below this level */
	uint64		ub;				/* (never rises from a level to the next) */
} LevelStep;

#define NO_SLOT PG_UINT64_MAX

/*
 * The per-level range scan of queries qlo/qhi/qrow[0..nq) (ascending low
 * keys) for one key width: appends (layout position, row) to out[*n..limit)
 * for whole queries, and returns how many queries were answered (their
 * matches fit); with mkeys (else NULL), each match's key at its position,
 * read here rather than again at random after the search.  A query starts below the levels it shares with the one
 * before (see LevelStep): with sorted batches most queries compare keys at
 * the last few levels only, and each level is read from left to
 * right, so the slots ahead of a new node are prefetched for the next
 * queries.  No node is checked here: every node of the image ascended
 * within the bounds its path sets when the image was loaded
 * (eytz_region_load; a worker's image is its leader's).
 */
/*
 * The keys from slot pos on: in the image's flat array, or on the pinned
 * view's key page (a page holds whole nodes: a node's keys are on one page).
 * Uses the search's locals keys, kp (the pages) and kpp (keys per page).
 */
#define SLOT_KEYS(KT, PAGED, pos) \
	((PAGED) ? (const KT *) kp[(pos) / kpp] + (pos) % kpp : keys + (pos))

/* eytz_keys_per_page() as a constant, for the layouts a search is fixed for */
#define KEYS_PER_PAGE(width, k) \
	((uint64) (EYTZ_PAGE_CAPACITY / (width) - (EYTZ_PAGE_CAPACITY / (width)) % ((k) - 1)))

#define DEFINE_SORTED_SEARCH(NAME, KT, FANOUT, PAGED, KPP) \
/* The matches of row at one level from slot pos on; false when out is full */ \
static inline bool \
NAME##_level(const KT *keys, const char *const *kp, uint64 kpp, uint64 pos, \
			 uint64 end, uint64 hi, uint32 row, \
			 uint32 limit, EytzMatch *out, uint64 *mkeys, uint32 *cnt) \
{ \
	for (; pos < end && *SLOT_KEYS(KT, PAGED, pos) <= hi; pos++) \
	{ \
		if (*cnt == limit) \
			return false; \
		out[*cnt].tid = pos; \
		out[*cnt].row = row; \
		if (mkeys) \
			mkeys[*cnt] = *SLOT_KEYS(KT, PAGED, pos); \
		(*cnt)++; \
	} \
	return true; \
} \
\
static uint32 \
NAME(const EytzLayoutImage *img, const char *const *kp, const uint64 *level_end, \
	 const EytzMatch *order, const uint64 *packed, uint64 base, \
	 const uint64 *qhi, uint32 nq, uint32 limit, EytzMatch *out, uint64 *mkeys, uint32 *n, \
	 uint64 *bad_slot) \
{ \
	const KT   *keys = (const KT *) img->keys; \
	const uint32 k = FANOUT ? FANOUT : img->meta.fanout; \
	const uint64 kpp = KPP ? KPP : img->meta.keys_per_page; \
	uint32		levels = img->meta.levels; \
	LevelStep	step[EYTZ_MAX_LEVELS]; \
	uint32		depth = 0; \
	uint32		cnt = *n; \
	uint32		q; \
	uint64		prev_lo = 0; \
	bool		bad = false; \
\
	for (q = 0; q < nq; q++) \
	{ \
		uint64		lo = packed ? base + (packed[q] >> 32) : order[q].tid; \
		uint64		hi = qhi ? qhi[order[q].row] : lo; \
		uint32		row = packed ? (uint32) packed[q] : order[q].unused; \
		uint32		before = cnt; \
		uint32		l = 0; \
		uint32		m; \
		uint64		s, \
					lb, \
					ub, \
					min_first_key, \
					pos; \
\
		if ((q & 0x3FFF) == 0x3FFF) \
			CHECK_FOR_INTERRUPTS(); \
		/* a path is shared only in key order: out of order, from the root */ \
		if (lo < prev_lo) \
			depth = 0; \
		prev_lo = lo; \
		/* ub falls level by level: the shared levels are the top ones whose ub lo does not pass */ \
		l = depth; \
		while (l > 0 && lo > step[l - 1].ub) \
			l--; \
		/* the shared levels: matches where the previous query's were */ \
		for (m = 0; l > 0 && step[l - 1].min_first_key <= hi && m < l; m++) \
		{ \
			if (step[m].first == NO_SLOT || step[m].first_key > hi) \
				continue; \
			if (!NAME##_level(keys, kp, kpp, step[m].first, level_end[m], hi, row, limit, out, mkeys, &cnt)) \
				goto full; \
		} \
		s = l == 0 ? 0 : step[l - 1].child; \
		lb = l == 0 ? 0 : step[l - 1].lb; \
		ub = l == 0 ? PG_UINT64_MAX : step[l - 1].ub; \
		min_first_key = l == 0 ? PG_UINT64_MAX : step[l - 1].min_first_key; \
		for (; l < levels; l++) \
		{ \
			uint64		end = level_end[l]; \
			uint64		first_key; \
			uint32		j = 0; \
\
			if (s >= end) \
			{ \
				/* no node here, nor below */ \
				step[l].first = NO_SLOT; \
				step[l].min_first_key = min_first_key; \
				step[l].child = s; \
				step[l].lb = lb; \
				step[l].ub = ub; \
				continue; \
			} \
			if (likely(s + k - 1 <= end)) \
			{ \
				/* \
				 * A whole node: count its keys below lo and take lo's \
				 * neighbours without branches (which way a search goes is \
				 * a coin toss: a branch on it mispredicts every other level) \
				 */ \
				const KT   *nk = SLOT_KEYS(KT, PAGED, s); \
				uint32		c; \
				uint64		below, \
							above, \
							mask; \
\
				/* without a branch, unrolled where k is fixed */ \
				_Pragma("GCC unroll 16") \
				for (c = 0; c < k - 1; c++) \
					j += nk[c] < lo; \
				/* pages are not checked ahead: each node on the way, here */ \
				if (PAGED) \
				{ \
					bool		b = nk[0] < lb || nk[k - 2] > ub; \
\
					for (c = 1; c < k - 1; c++) \
						b |= nk[c] < nk[c - 1]; \
					if (unlikely(b) && !bad) \
					{ \
						bad = true; \
						*bad_slot = s; \
					} \
				} \
				below = nk[j - (j > 0)]; \
				above = nk[j - (j == k - 1)]; \
				/* selects by masks: a compiler turns "j > 0 ? x : y" into a branch */ \
				mask = -(uint64) (j > 0); \
				lb = (below & mask) | (lb & ~mask); \
				mask = -(uint64) (j < k - 1); \
				ub = (above & mask) | (ub & ~mask); \
				pos = s + j; \
				/* past the node's keys the level goes on in the next node */ \
				first_key = *SLOT_KEYS(KT, PAGED, Min(pos, end - 1)); \
			} \
			else \
			{ \
				/* the partial node at the end of the bottom level */ \
				if (PAGED) \
				{ \
					uint64		t; \
\
					for (t = s; t < end; t++) \
						if (unlikely((*SLOT_KEYS(KT, PAGED, t) < lb || \
									  *SLOT_KEYS(KT, PAGED, t) > ub || \
									  (t > s && *SLOT_KEYS(KT, PAGED, t) < \
									   *SLOT_KEYS(KT, PAGED, t - 1))) && !bad)) \
						{ \
							bad = true; \
							*bad_slot = s; \
						} \
				} \
				while (s + j < end && *SLOT_KEYS(KT, PAGED, s + j) < lo) \
					j++; \
				if (j > 0) \
					lb = *SLOT_KEYS(KT, PAGED, s + j - 1); \
				pos = s + j; \
				first_key = pos < end ? *SLOT_KEYS(KT, PAGED, pos) : 0; \
				if (pos < end) \
					ub = Min(ub, first_key); \
			} \
			step[l].first = pos < end ? pos : NO_SLOT; \
			step[l].first_key = first_key; \
			min_first_key = pos < end ? Min(min_first_key, first_key) : min_first_key; \
			step[l].min_first_key = min_first_key; \
			step[l].lb = lb; \
			step[l].ub = ub; \
			if (unlikely(pos < end && first_key <= hi) && \
				!NAME##_level(keys, kp, kpp, pos, end, hi, row, limit, out, mkeys, &cnt)) \
				goto full; \
			/* the next queries come to the slots right of this node */ \
			if (s + EYTZ_STREAM_AHEAD < end) \
				__builtin_prefetch(SLOT_KEYS(KT, PAGED, s + EYTZ_STREAM_AHEAD)); \
			s = eytz_child(s, j, k); \
			step[l].child = s; \
		} \
		depth = levels; \
		continue; \
full: \
		cnt = before; \
		break; \
	} \
	*n = cnt; \
	if (PAGED && bad) \
		return 0; \
	return q; \
}

typedef uint32 (*SortedSearch) (const EytzLayoutImage *img,
								const char *const *kp, const uint64 *level_end, const EytzMatch *order,
								const uint64 *packed, uint64 base,
								const uint64 *qhi,
								uint32 nq, uint32 limit,
								EytzMatch *out, uint64 *mkeys, uint32 *n,
								uint64 *bad_slot);

DEFINE_SORTED_SEARCH(sorted_search_4, uint32, 0, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_8, uint64, 0, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_4_ebs, uint32, 2, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_8_ebs, uint64, 2, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_4_eks9, uint32, EYTZ_DEFAULT_FANOUT, false, 0)
DEFINE_SORTED_SEARCH(sorted_search_8_eks9, uint64, EYTZ_DEFAULT_FANOUT, false, 0)
/* the pinned view's: the default fan-outs with their keys per page fixed */
DEFINE_SORTED_SEARCH(paged_search_4, uint32, 0, true, 0)
DEFINE_SORTED_SEARCH(paged_search_8, uint64, 0, true, 0)
DEFINE_SORTED_SEARCH(paged_search_4_ebs, uint32, 2, true, KEYS_PER_PAGE(4, 2))
DEFINE_SORTED_SEARCH(paged_search_8_ebs, uint64, 2, true, KEYS_PER_PAGE(8, 2))
DEFINE_SORTED_SEARCH(paged_search_4_eks9, uint32, EYTZ_DEFAULT_FANOUT, true,
					 KEYS_PER_PAGE(4, EYTZ_DEFAULT_FANOUT))
DEFINE_SORTED_SEARCH(paged_search_8_eks9, uint64, EYTZ_DEFAULT_FANOUT, true,
					 KEYS_PER_PAGE(8, EYTZ_DEFAULT_FANOUT))

/*
 * The pinned view's resolve_tids: the TID pages are pinned, not locked.
 * VACUUM tombstones entries of a TID page in place, but only while it holds
 * the metapage exclusively and counts them there (eytzvacuum.c): so when
 * the metapage shows the same generation and tombstone count before and
 * after the reads, no write overlapped them and each TID read is whole.
 * Otherwise they are read again, each under its page's share lock.  The
 * slots wait in "unused" meanwhile (a pinned view has fewer than 2^32).
 */
static uint32
resolve_page_tids(const EytzImage *image, EytzMatch *m, uint32 from, uint32 n)
{
	const ItemPointerData *const *tp = image->tidpages;
	EytzMetaPageData before,
				after;
	uint32		i,
				out = from;

	eytz_read_meta(image->index, &before);
	for (i = from; i < n; i++)
	{
		uint64		slot = m[i].tid;
		ItemPointerData t;

		if (i + EYTZ_RESOLVE_AHEAD < n)
		{
			uint64		ahead = m[i + EYTZ_RESOLVE_AHEAD].tid;

			__builtin_prefetch(&tp[ahead / EYTZ_TIDS_PER_PAGE][ahead % EYTZ_TIDS_PER_PAGE]);
		}
		t = tp[slot / EYTZ_TIDS_PER_PAGE][slot % EYTZ_TIDS_PER_PAGE];
		m[i].unused = (uint32) slot;
		m[i].tid = eytz_tid_pack(&t);
	}
	eytz_read_meta(image->index, &after);
	if (after.generation != before.generation || after.ndead != before.ndead)
	{
		for (i = from; i < n; i++)
		{
			uint64		slot = m[i].unused;
			Buffer		buf = image->bufs[image->img.meta.nkeypages + slot / EYTZ_TIDS_PER_PAGE];
			ItemPointerData t;

			LockBuffer(buf, BUFFER_LOCK_SHARE);
			t = tp[slot / EYTZ_TIDS_PER_PAGE][slot % EYTZ_TIDS_PER_PAGE];
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
			m[i].tid = eytz_tid_pack(&t);
		}
	}
	for (i = from; i < n; i++)
	{
		uint64		t = m[i].tid;
		OffsetNumber off = eytz_tid_offset(t);

		if (eytz_tid_block(t) == InvalidBlockNumber)
			continue;
		if (off < FirstOffsetNumber || off > MaxHeapTuplesPerPage)
			EYTZ_CORRUPT(image->index,
						 image->img.meta.tids_start + m[i].unused / EYTZ_TIDS_PER_PAGE,
						 "TID (%u,%u) has an offset outside 1..%d.",
						 eytz_tid_block(t), (unsigned) off, (int) MaxHeapTuplesPerPage);
		m[out].tid = t;
		m[out].row = m[i].row;
		m[out].unused = out;
		out++;
	}
	return out;
}

uint32
eytz_image_search(const EytzImage *image,
				  const EytzMatch *order, const uint64 *packed,
				  uint64 base, uint32 start, uint32 nq, const uint64 *hi, uint32 max,
				  EytzMatch *out, uint32 *nout, EytzStage *stage, bool slots)
{
	const EytzLayoutImage *img = &image->img;
	uint64		level_end[EYTZ_MAX_LEVELS];
	uint64	   *mkeys;
	uint64		bad_slot = NO_SLOT;
	SortedSearch search;
	uint32		first = *nout;
	uint32		done;
	uint32		l;

	if (img->meta.levels > EYTZ_MAX_LEVELS)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("eytzgpu layout has %u levels", img->meta.levels)));
	if (img->meta.nentries == 0)
		return nq - start;
	for (l = 0; l < img->meta.levels; l++)
		level_end[l] = eytz_level_end(l, img->meta.fanout, img->meta.nentries);
	mkeys = stage ? stage->keys : NULL;
	/* the fan-outs a layout gets by default have a search of their own */
	if (image->keypages)
	{
		bool		fixed = img->meta.keys_per_page ==
			eytz_keys_per_page(img->meta.key_width, img->meta.fanout);

		Assert(stage == NULL);
		if (img->meta.key_width == 4)
			search = fixed && img->meta.fanout == 2 ? paged_search_4_ebs :
				fixed && img->meta.fanout == EYTZ_DEFAULT_FANOUT ? paged_search_4_eks9 :
				paged_search_4;
		else
			search = fixed && img->meta.fanout == 2 ? paged_search_8_ebs :
				fixed && img->meta.fanout == EYTZ_DEFAULT_FANOUT ? paged_search_8_eks9 :
				paged_search_8;
	}
	else if (img->meta.key_width == 4)
		search = img->meta.fanout == 2 ? sorted_search_4_ebs :
			img->meta.fanout == EYTZ_DEFAULT_FANOUT ? sorted_search_4_eks9 :
			sorted_search_4;
	else
		search = img->meta.fanout == 2 ? sorted_search_8_ebs :
			img->meta.fanout == EYTZ_DEFAULT_FANOUT ? sorted_search_8_eks9 :
			sorted_search_8;
	done = search(img, image->keypages, level_end, packed ? NULL : order + start,
				  packed ? packed + start : NULL, base, hi, nq - start, max,
				  out, mkeys, nout, &bad_slot);
	if (bad_slot != NO_SLOT)
		EYTZ_CORRUPT(image->index, img->meta.keys_start + bad_slot / img->meta.keys_per_page,
					 "Node at slot " UINT64_FORMAT " is out of order with the keys on its search path.",
					 bad_slot);
	if (image->keypages)
	{
		*nout = resolve_page_tids(image, out, first, *nout);
		image->use->keys += done;
	}
	else
		*nout = resolve_tids(image, out, first, *nout, stage,
							 slots && img->meta.ndead == 0);
	return done;
}
