/*
 * eytzimage.c
 *		The CPU side of the lookup seam: an in-memory image of an index's
 *		layout (loaded through the page layer under the generation protocol
 *		and cached per backend), its sharing with a parallel join's workers
 *		(kept in shared memory across queries, or copied for one), and the
 *		pinned view of its pages.  The batched search over an image is
 *		eytzimagesearch.c.
 *
 * The image holds no buffer pin, so a TID it returns may have been vacuumed
 * since; the executor rechecks the key on the fetched heap tuple.  An index
 * with INCLUDE columns has them loaded beside the keys and TIDs (counted in
 * the cache's memory), so that an index-only join reads a match's values
 * from the same slot.
 */
#include "postgres.h"

#include <sys/mman.h>
#ifdef __linux__
#include <sys/statvfs.h>
#endif

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

int			eytz_image_cache_limit_mb = 1024;
int			eytz_parallel_image = EYTZ_PARALLEL_IMAGE_AUTO;
int			eytz_cpu_view = EYTZ_CPU_VIEW_AUTO;

static const struct config_enum_entry cpu_view_options[] = {
	{"auto", EYTZ_CPU_VIEW_AUTO, false},
	{"image", EYTZ_CPU_VIEW_IMAGE, false},
	{"pinned", EYTZ_CPU_VIEW_PINNED, false},
	{NULL, 0, false}
};

static const struct config_enum_entry search_prefetch_options[] = {
	{"auto", EYTZ_SEARCH_PREFETCH_AUTO, false},
	{"on", EYTZ_SEARCH_PREFETCH_ON, false},
	{"off", EYTZ_SEARCH_PREFETCH_OFF, false},
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
	DefineCustomEnumVariable("eytzgpu.search_prefetch",
							 "Whether the batched CPU search goes by groups of queries, level by level.",
							 "auto: where a batch has fewer keys than one in 32 entries and the index's "
							 "keys take more than twice the CPU's largest cache; on: always; off: never.",
							 &eytz_search_prefetch, EYTZ_SEARCH_PREFETCH_AUTO, search_prefetch_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	eytz_shared_images_init();
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
	return eytz_cache_find(&image_cache, index, generation) ||
		eytz_shared_image_has(index, generation);
}

static Size shared_layout(const EytzMetaPageData *meta, const EytzInclude *inc,
						  Size off[1 + 2 * EYTZ_MAX_INCLUDE]);
static EytzImage *image_in_place(Relation index, const EytzMetaPageData *meta, char *src);

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

static void
kept_header_fill(KeptHeader *hdr, Relation index, const EytzMetaPageData *meta)
{
	hdr->indexoid = RelationGetRelid(index);
	hdr->relfilenode = EytzRelFileNumber(EytzRelationFile(index));
	hdr->generation = meta->generation;
	hdr->ndead = meta->ndead;
	hdr->nentries = meta->nentries;
}

/* Does the kept segment hold the image of index that image_meta describes? */
static bool
kept_header_matches(dsm_segment *seg, Relation index, const EytzMetaPageData *image_meta)
{
	const KeptHeader *hdr = dsm_segment_address(seg);

	return hdr->indexoid == RelationGetRelid(index) &&
		hdr->relfilenode == EytzRelFileNumber(EytzRelationFile(index)) &&
		hdr->generation == image_meta->generation &&
		hdr->ndead == image_meta->ndead &&
		hdr->nentries == image_meta->nentries;
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

/*
 * Map every page of an attached segment now, in one call, rather than
 * taking a page fault at the search's first touch of each 4 kB page (a
 * fresh backend's first join pays them); where the kernel lacks
 * MADV_POPULATE_READ the faults come as before
 */
static void
prefault_segment(dsm_segment *seg)
{
#ifdef MADV_POPULATE_READ
	uintptr_t	start = TYPEALIGN_DOWN(4096, (uintptr_t) dsm_segment_address(seg));
	uintptr_t	end = (uintptr_t) dsm_segment_address(seg) + dsm_segment_map_length(seg);

	(void) madvise((void *) start, end - start, MADV_POPULATE_READ);
#endif
}

/*
 * With the shared image registry: the registered image of the generation
 * meta describes with at least min_ndead tombstones, attached and cached
 * in this backend (searched in place), or NULL
 */
static EytzImage *
image_attach_shared(Relation index, const EytzMetaPageData *meta, uint64 min_ndead)
{
	dsm_segment *seg = eytz_shared_image_attach(index, meta, min_ndead);
	EytzMetaPageData image_meta = *meta;
	EytzImage  *image;

	if (seg == NULL)
		return NULL;
	image_meta.ndead = ((const KeptHeader *) dsm_segment_address(seg))->ndead;
	if (!kept_header_matches(seg, index, &image_meta))
	{
		dsm_detach(seg);
		return NULL;
	}
	dsm_pin_mapping(seg);
	prefault_segment(seg);
	image = image_in_place(index, &image_meta,
						   (char *) dsm_segment_address(seg) + KEPT_HEADER_SIZE);
	image->seg = seg;
	image->shared = true;
	/* its bytes count against eytzgpu.shared_image_limit */
	(void) eytz_cache_add(&image_cache, &image->ce, index, image_meta.generation, 0, 1,
						  (Size) eytz_image_cache_limit_mb * 1024 * 1024);
	return image;
}

/*
 * Whether /dev/shm, where dsm.c makes a segment that the main shared memory
 * has no room for (dynamic_shared_memory_type = posix on Linux), has room
 * for size bytes: a full one would make the segment's creation an ERROR,
 * where a private image does the job
 */
static bool
shm_has_room(Size size)
{
#ifdef __linux__
	struct statvfs st;

	if (dynamic_shared_memory_type == DSM_IMPL_POSIX &&
		statvfs("/dev/shm", &st) == 0 &&
		(uint64) st.f_bavail * st.f_frsize <= size)
		return false;
#endif
	return true;
}

/*
 * With the shared image registry: load the layout into a new kept segment
 * and register it for every backend (else it stays this backend's own, in
 * its cache as a private image would be).  The segment is created under
 * the current resource owner, so that an error or a cancel during the load
 * destroys it; its mapping is pinned once it is complete.  NULL when no
 * segment can be made: the caller loads a private image.
 */
static EytzImage *
image_load_shared(Relation index, const EytzMetaPageData *meta)
{
	EytzInclude inc;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];
	Size		size;
	dsm_segment *seg;
	char	   *base;
	EytzImage  *image;
	BufferAccessStrategy strategy;
	MemoryContext parent = CurrentMemoryContext;
	int			c;

	if (meta->nentries == 0)
		return NULL;
	eytz_include_get(index, &inc);
	size = add_size(KEPT_HEADER_SIZE, shared_layout(meta, &inc, off));
	if (size > (Size) eytz_shared_image_limit_mb * 1024 * 1024 || !shm_has_room(size))
		return NULL;
	seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (seg == NULL)
		return NULL;
	base = dsm_segment_address(seg);
	kept_header_fill((KeptHeader *) base, index, meta);
	image = image_in_place(index, meta, base + KEPT_HEADER_SIZE);
	/* freed with the query if the load fails */
	MemoryContextSetParent(image->cxt, parent);
	strategy = GetAccessStrategy(BAS_BULKREAD);
	eytz_region_load(index, meta, strategy, image->img.keys, image->img.tids);
	for (c = 0; c < image->inc.ncols; c++)
		eytz_region_load_include(index, meta, &image->inc, strategy, c,
								 image->values[c], image->nulls[c]);
	FreeAccessStrategy(strategy);
	dsm_pin_mapping(seg);
	image->seg = seg;
	MemoryContextSetParent(image->cxt, images_context());
	image->shared = eytz_shared_image_register(index, meta, seg, size);
	/* uncached when it does not fit: freed at its release */
	(void) eytz_cache_add(&image_cache, &image->ce, index, meta->generation,
						  image->shared ? 0 : image_bytes(image), 1,
						  (Size) eytz_image_cache_limit_mb * 1024 * 1024);
	return image;
}

/* eytz_cache_drop's keep(): a cached image, unless it left the shared registry */
static bool
image_still_registered(EytzCacheEntry *entry)
{
	EytzImage  *image = (EytzImage *) entry;

	return !image->shared || eytz_shared_image_registered(image->seg);
}

/*
 * The cached image, or the registered one, or a new load; min_ndead: a
 * cached or registered image must count that many tombstones (an index-only
 * join must not take a removed entry for a live one).  Cached images whose
 * segments left the shared registry (of any index) are dropped first (each
 * after its last release), so that the backend does not keep their memory.
 */
static EytzImage *
image_acquire(Relation index, const EytzMetaPageData *meta, uint64 min_ndead)
{
	EytzImage  *image;

	eytz_shared_images_trim();
	eytz_cache_drop(&image_cache, InvalidOid, image_still_registered);
	image = (EytzImage *) eytz_cache_pin(&image_cache, index, meta->generation);
	if (image && image->img.meta.ndead < min_ndead)
	{
		/* other scans pinning the stale copy keep it until they release it */
		if (image->ce.cached)
			eytz_cache_unlink(&image_cache, &image->ce);
		eytz_image_release(image);
		image = NULL;
	}
	if (image)
		return image;
	if (eytz_shared_images_on())
	{
		image = image_attach_shared(index, meta, min_ndead);
		if (image == NULL)
			image = image_load_shared(index, meta);
		if (image)
			return image;
	}
	image = image_load(index, meta);
	/* uncached when it does not fit: freed at its release */
	(void) image_cache_add(index, image, 1);
	return image;
}

EytzImage *
eytz_image_acquire(Relation index, const EytzMetaPageData *meta)
{
	return image_acquire(index, meta, 0);
}

EytzImage *
eytz_image_acquire_current(Relation index, const EytzMetaPageData *meta)
{
	return image_acquire(index, meta, meta->ndead);
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
eytz_image_shared_size(Relation index, const EytzMetaPageData *meta, double other_pages)
{
	EytzInclude inc;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];

	if (eytz_image_pages_ok(index, meta, other_pages, true))
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
 * random reads miss the TLB at every level (several times slower a key:
 * bench/join_results.md, "Design measurements"), and a process's first touch of each of them is a
 * page fault.
 */
void
eytz_image_import(Relation index, const EytzMetaPageData *meta, void *src)
{
	EytzImage  *image;
	Size		off[1 + 2 * EYTZ_MAX_INCLUDE];
	uint64		n = meta->nentries;
	int			c;

	if (eytz_cache_find(&image_cache, index, meta->generation))
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
	int			c;

	image = (EytzImage *) eytz_cache_pin(&image_cache, index, meta->generation);
	/* a registered image not attached yet: attach it */
	if (image == NULL)
		image = image_attach_shared(index, meta, 0);
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
	kept_header_fill((KeptHeader *) base, index, &image->img.meta);
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
	EytzImage  *image;

	if (eytz_cache_find(&image_cache, index, image_meta->generation))
		return true;
	seg = dsm_attach(handle);
	if (seg == NULL)
		return false;
	if (!kept_header_matches(seg, index, image_meta))
	{
		dsm_detach(seg);
		return false;
	}
	/* mapped until the worker exits or its cache drops the image */
	dsm_pin_mapping(seg);
	image = image_in_place(index, image_meta,
						   (char *) dsm_segment_address(seg) + KEPT_HEADER_SIZE);
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
 * With eytzgpu.cpu_view = auto, also only while the layout, the heap and
 * the scan's other relations (other_pages: a partitioned join's other
 * leaves, whose pages each batch reads too) fit shared_buffers together
 * (pinned pages that push the heap's out cost more heap reads than the
 * image's load; a layout pushed out is read again each batch) or the one
 * heap alone does not fit it, and until this backend's pinned scans
 * of the generation have searched the keys whose extra cost would have
 * paid for the image's load (EytzPinnedUse.rent_keys, which the lookup seam
 * sets from its costs): from then on the image is loaded once and cached
 * (a rent-or-buy choice, at most twice the cost of knowing the future).
 */
bool
eytz_image_pages_ok(Relation index, const EytzMetaPageData *meta, double other_pages,
					bool parallel)
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
	/*
	 * A heap larger than shared_buffers does not stay there from one pass
	 * to the next whatever the layout does: its pinned pages push out
	 * nothing that would have been found again, and save a serial scan's
	 * new backend the image's load
	 */
	if (other_pages <= 0 && heap_pages >= NBuffers && !parallel)
		return true;
	return heap_pages + meta->nkeypages + meta->ntidpages + Max(other_pages, 0) <= NBuffers;
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
