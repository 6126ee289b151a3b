/*
 * eytzjoin.h
 *		Private declarations of the batched index-nested-loop join of eytzgpu:
 *		the planner/executor (eytzjoin.c, eytzjoinexec.c), the CPU batched
 *		search and layout image cache (eytzbatch.c), the GPU residency glue
 *		(eytzdevice.c) and the cache mechanism both use (eytzcache.c).
 *
 * The GPU boundary is deliberately narrow: "make generation G of this index
 * resident" (eytz_device_acquire) and "look up this batch"
 * (eytz_device_lookup), so that it can later move into one background
 * worker that serves every backend.
 */
#ifndef EYTZJOIN_H
#define EYTZJOIN_H

#include "eytzgpu.h"

/* eytzgpu.device */
#define EYTZ_DEVICE_AUTO	0
#define EYTZ_DEVICE_GPU		1
#define EYTZ_DEVICE_CPU		2

/* GUCs (eytzjoin.c) */
extern bool eytz_enable_join;
extern int	eytz_device_mode;
extern int	eytz_batch_size;
extern int	eytz_gpu_memory_limit_mb;
extern int	eytz_image_cache_limit_mb;

/* One match of a batch: a packed TID and the batch row that asked for it */
typedef struct EytzMatch
{
	uint64		tid;
	uint32		row;
	uint32		unused;
} EytzMatch;

typedef struct EytzMatchBuf
{
	EytzMatch  *m;
	uint64		n;
	uint64		cap;
} EytzMatchBuf;

/* eytzcache.c: per-backend caches of pinned index copies (CPU images, GPU copies) */
typedef struct EytzCacheEntry
{
	Oid			indexoid;
	Oid			relfilenode;
	uint64		generation;
	Size		bytes;
	int			refcount;		/* scans pinning it */
	bool		cached;			/* still linked into the cache */
	uint64		last_used;
	struct EytzCacheEntry *next;
} EytzCacheEntry;

typedef struct EytzCache
{
	EytzCacheEntry *head;
	Size		bytes;			/* of the linked entries */
	uint64		clock;			/* for last_used */
	void		(*free_entry) (EytzCacheEntry *entry);
} EytzCache;

extern void eytz_cache_unlink(EytzCache *cache, EytzCacheEntry *entry);
extern void eytz_cache_drop(EytzCache *cache, Oid indexoid, bool (*keep) (EytzCacheEntry *entry));
extern bool eytz_cache_make_room(EytzCache *cache, Size need, Size limit);
extern EytzCacheEntry *eytz_cache_pin(EytzCache *cache, Relation index, uint64 generation);
extern bool eytz_cache_add(EytzCache *cache, EytzCacheEntry *entry, Relation index, uint64 generation,
						   Size bytes, int refcount, Size limit);
extern void eytz_cache_release(EytzCache *cache, EytzCacheEntry *entry);

/* A cached, read-only copy of one generation of an index's layout */
typedef struct EytzImage
{
	EytzCacheEntry ce;			/* first: the cache links images by it */
	EytzLayoutImage img;
} EytzImage;

/* eytzbatch.c */
extern EytzImage *eytz_image_acquire(Relation index, const EytzMetaPageData *meta);
extern void eytz_image_release(EytzImage *image);
extern void eytz_image_invalidate(Oid indexoid);
extern void eytz_sort_pending(EytzPendingEntry *entries, uint64 n);
extern void eytz_match_add(EytzMatchBuf *buf, uint64 tid, uint32 row);
extern void eytz_batch_search(const EytzLayoutImage *img, const uint64 *lo,
							  const uint64 *hi, const uint32 *rows, uint32 nq,
							  EytzMatchBuf *out);
extern void eytz_batch_search_pending(const EytzPendingEntry *pending, uint64 np,
									  const uint64 *lo, const uint64 *hi,
									  const uint32 *rows, uint32 nq,
									  EytzMatchBuf *out);
extern void eytz_sort_matches(EytzMatchBuf *buf, bool by_row_too);

/* eytzdevice.c */
typedef struct EytzGpuEntry EytzGpuEntry;

extern bool eytz_device_available(char **why);
extern const char *eytz_device_name(void);
extern EytzGpuEntry *eytz_device_acquire(Relation index,
										 const EytzMetaPageData *meta,
										 char **why);
extern void eytz_device_release(EytzGpuEntry *entry);
extern bool eytz_device_lookup(EytzGpuEntry *entry, const uint64 *lo,
							   const uint64 *hi, const uint32 *rows, uint32 nq,
							   EytzMatchBuf *out, double *kernel_ms, char **why);
extern void eytz_device_invalidate(Oid indexoid);
extern bool eytz_device_build(EytzPairs *pairs, int key_width, int fanout,
							  Relation index, uint64 generation);

/* eytzjoin.c / eytzjoinexec.c */
extern void eytz_join_init(void);
extern void eytz_join_register_exec(void);
extern Node *eytz_join_create_scan_state(CustomScan *cscan);

#endif							/* EYTZJOIN_H */
