/*
 * eytzcache.h
 *		Per-backend caches of pinned index copies (eytzcache.c): the CPU
 *		layout images (eytzimage.c) and the GPU copies (eytzdevice.c).
 */
#ifndef EYTZCACHE_H
#define EYTZCACHE_H

#include "postgres.h"

#include "utils/relcache.h"

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
extern bool eytz_cache_find(EytzCache *cache, Relation index, uint64 generation);
extern bool eytz_cache_add(EytzCache *cache, EytzCacheEntry *entry, Relation index, uint64 generation,
						   Size bytes, int refcount, Size limit);
extern void eytz_cache_release(EytzCache *cache, EytzCacheEntry *entry);

#endif							/* EYTZCACHE_H */
