/*
 * eytzimage.c
 *		The CPU side of the lookup seam: an in-memory image of an index's
 *		layout (loaded through the page layer under the generation protocol
 *		and cached per backend) and the batched search over it.
 *
 * The batched search answers many key ranges at once at memory speed: the
 * queries come sorted by their low key (neighbouring searches share their
 * upper path) and are walked EYTZ_GROUP at a time, one level at a time for
 * every member of the group, each member's next node prefetched while the
 * others are searched (group prefetching): the cache misses of a group
 * overlap instead of forming one chain per key.  Each level is the per-level
 * range scan of the paper (as in eytzsearch.c) on flat arrays.  Matches are
 * first recorded as layout positions and resolved to TIDs in a second pass
 * that prefetches ahead, so the TID array's misses overlap too.
 *
 * The image holds no buffer pin, so a TID it returns may have been vacuumed
 * since; the executor rechecks the key on the fetched heap tuple.  An index
 * with INCLUDE columns has them loaded beside the keys and TIDs (counted in
 * the cache's memory), so that an index-only join reads a match's values
 * from the same slot.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzimage.h"

/*
 * Searches in flight together: enough independent misses to cover DRAM
 * latency (about 100 ns against a few ns of work per node), few enough that
 * a group's nodes stay in L1.  At 20M keys on the 2-core development VM,
 * 16, 32 and 64 measured alike (within its noise); 32 leaves headroom for
 * the longer memory latencies of larger machines.
 */
#define EYTZ_GROUP 32
/* how far ahead the TID resolution prefetches */
#define EYTZ_RESOLVE_AHEAD 16

int			eytz_image_cache_limit_mb = 1024;

void
eytz_image_init(void)
{
	DefineCustomIntVariable("eytzgpu.image_cache_limit",
							"Memory a backend may keep for in-memory copies of eytzgpu index layouts.",
							"0 keeps none: each join that needs an image loads its own.",
							&eytz_image_cache_limit_mb, 1024, 0, INT_MAX / 2,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
}

static MemoryContext image_cxt = NULL;

/* The cache's destructor: an image and its arrays live in one context */
static void
image_free(EytzCacheEntry *entry)
{
	MemoryContextDelete(((EytzImage *) entry)->cxt);
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
image_load(Relation index, const EytzMetaPageData *meta)
{
	MemoryContext cxt;
	EytzImage  *image;
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	int			c;

	if (image_cxt == NULL)
		image_cxt = AllocSetContextCreate(TopMemoryContext,
										  "eytzgpu layout images",
										  ALLOCSET_SMALL_SIZES);
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
	eytz_region_load(index, meta, strategy, image->img.keys, image->img.tids);
	eytz_include_get(index, &image->inc);
	for (c = 0; c < image->inc.ncols && meta->nentries > 0; c++)
	{
		image->values[c] = eytz_alloc_large(cxt, meta->nentries * image->inc.width[c]);
		image->nulls[c] = eytz_alloc_large(cxt, (meta->nentries + 7) / 8);
		eytz_region_load_include(index, meta, &image->inc, strategy, c,
								 image->values[c], image->nulls[c]);
	}
	FreeAccessStrategy(strategy);
	MemoryContextSetParent(cxt, image_cxt);
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

EytzImage *
eytz_image_acquire(Relation index, const EytzMetaPageData *meta)
{
	EytzImage  *image;

	image = (EytzImage *) eytz_cache_pin(&image_cache, index, meta->generation);
	if (image)
		return image;
	image = image_load(index, meta);
	/* uncached when it does not fit: freed at its release */
	(void) eytz_cache_add(&image_cache, &image->ce, index, meta->generation,
						  image_bytes(image), 1,
						  (Size) eytz_image_cache_limit_mb * 1024 * 1024);
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

/* The key and the asked-for included values of slot into stage position pos */
static void
stage_slot(const EytzImage *image, uint64 slot, EytzStage *stage, uint32 pos)
{
	int			j;

	stage->have[pos] = true;
	stage->keys[pos] = eytz_key_at(image->img.keys, image->img.meta.key_width, slot);
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
 * tombstones; returns the new n.  With a stage, each match's values go
 * there at its new position, which "unused" keeps.
 */
static uint32
resolve_tids(const EytzImage *image, EytzMatch *m, uint32 from, uint32 n,
			 EytzStage *stage)
{
	const uint64 *tids = image->img.tids;
	uint32		i,
				out = from;

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
				stage_slot(image, m[i].tid, stage, out);
			m[out].tid = t;
			m[out].row = m[i].row;
			m[out].unused = out;
			out++;
		}
	}
	return out;
}

/*
 * The group-prefetching per-level range scan of one group of g queries,
 * for one key width: appends (layout position, row) to out[*n..] and
 * returns false, with *n unchanged, if more than room matches came.  A whole
 * node's keys must ascend within the bounds its path sets (as the index
 * scan checks): a damaged key would send the search into the wrong subtree
 * and lose rows, so it raises XX002 instead.
 */
#define DEFINE_GROUP_SEARCH(NAME, KT) \
static bool \
NAME(Relation index, const EytzLayoutImage *img, const uint64 *level_end, \
	 const uint64 *qlo, const uint64 *qhi, const uint32 *qrow, uint32 g, \
	 uint32 room, EytzMatch *out, uint32 *n) \
{ \
	const KT   *keys = (const KT *) img->keys; \
	uint32		k = img->meta.fanout; \
	uint64		nent = img->meta.nentries; \
	uint32		levels = img->meta.levels; \
	uint64		node[EYTZ_GROUP]; \
	uint64		lb[EYTZ_GROUP]; \
	uint64		ub[EYTZ_GROUP]; \
	uint32		cnt = *n; \
	uint32		limit = *n + room; \
	uint32		l, \
				i; \
\
	for (i = 0; i < g; i++) \
	{ \
		node[i] = 0; \
		lb[i] = 0; \
		ub[i] = PG_UINT64_MAX; \
	} \
	for (l = 0; l < levels; l++) \
	{ \
		uint64		end = level_end[l]; \
\
		for (i = 0; i < g; i++) \
		{ \
			uint64		s = node[i]; \
			uint64		lo = qlo[i]; \
			uint64		hi = qhi[i]; \
			uint32		j = 0; \
			uint64		pos; \
\
			if (s >= end) \
				continue; \
			if (s + k - 1 <= end) \
			{ \
				/* a whole node: count its keys below lo, without branches */ \
				const KT   *nk = &keys[s]; \
				bool		bad = nk[0] < lb[i] || nk[k - 2] > ub[i]; \
				uint32		c; \
\
				for (c = 0; c < k - 1; c++) \
				{ \
					j += nk[c] < lo; \
					bad |= c > 0 && nk[c] < nk[c - 1]; \
				} \
				if (unlikely(bad)) \
					EYTZ_CORRUPT(index, img->meta.keys_start + s / img->meta.keys_per_page, \
								 "Node at slot " UINT64_FORMAT " is out of order with the keys on its search path.", s); \
				if (j > 0) \
					lb[i] = nk[j - 1]; \
				if (j < k - 1) \
					ub[i] = nk[j]; \
			} \
			else \
				while (s + j < end && keys[s + j] < lo) \
					j++; \
			for (pos = s + j; pos < end && keys[pos] <= hi; pos++) \
			{ \
				if (cnt == limit) \
					return false; \
				out[cnt].tid = pos; \
				out[cnt].row = qrow[i]; \
				cnt++; \
			} \
			s = eytz_child(s, j, k); \
			node[i] = s; \
			if (s < nent) \
				__builtin_prefetch(&keys[s]); \
		} \
	} \
	*n = cnt; \
	return true; \
}

DEFINE_GROUP_SEARCH(group_search_4, uint32)
DEFINE_GROUP_SEARCH(group_search_8, uint64)

uint32
eytz_image_search(Relation index, const EytzImage *image,
				  const EytzMatch *order,
				  uint32 start, uint32 nq, const uint64 *hi, uint32 max,
				  EytzMatch *out, uint32 *nout, EytzStage *stage)
{
	const EytzLayoutImage *img = &image->img;
	uint64		level_end[64];
	uint32		n = *nout;
	uint32		first = n;
	uint32		pos = start;
	uint32		group = EYTZ_GROUP;
	uint32		l;

	if (img->meta.levels > 64)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("eytzgpu layout has %u levels", img->meta.levels)));
	for (l = 0; l < img->meta.levels; l++)
		level_end[l] = eytz_level_end(l, img->meta.fanout, img->meta.nentries);

	while (pos < nq)
	{
		uint64		qlo[EYTZ_GROUP],
					qhi[EYTZ_GROUP];
		uint32		qrow[EYTZ_GROUP];
		uint32		g = Min(group, nq - pos);
		uint32		i;
		bool		fit = true;

		for (i = 0; i < g; i++)
		{
			const EytzMatch *o = &order[pos + i];

			qlo[i] = o->tid;
			qhi[i] = hi ? hi[o->row] : o->tid;
			qrow[i] = o->unused;
		}
		if (img->meta.nentries > 0)
			fit = img->meta.key_width == 4 ?
				group_search_4(index, img, level_end, qlo, qhi, qrow, g, max - n, out, &n) :
				group_search_8(index, img, level_end, qlo, qhi, qrow, g, max - n, out, &n);
		if (!fit)
		{
			/* a chunk with matches ends here; an empty one goes query by query */
			if (n > first || g == 1)
				break;
			group = 1;
			continue;
		}
		pos += g;
		if ((pos & 0x3FFF) < g)
			CHECK_FOR_INTERRUPTS();
	}
	*nout = resolve_tids(image, out, first, n, stage);
	return pos - start;
}
