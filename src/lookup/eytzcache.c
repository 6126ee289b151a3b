/*
 * eytzcache.c
 *		The per-backend caches of index copies that batched joins pin: the CPU
 *		layout images (eytzimage.c) and the GPU copies (eytzdevice.c).
 *
 * An entry is one generation of one index (index, relfilenode, generation:
 * a merge bumps the generation, REINDEX/TRUNCATE change the relfilenode, so
 * a stale copy is never found).  Running scans pin entries; the cache keeps
 * at most a byte limit of them and evicts unpinned ones, least recently used
 * first.  An entry unlinked while pinned (invalidation, eviction of an older
 * generation) lives on until its last unpin, which frees it.
 */
#include "postgres.h"

#include "utils/rel.h"

#include "eytzcache.h"
#include "eytzcompat.h"

/* Take an entry out of the cache; free it now unless a scan still pins it */
void
eytz_cache_unlink(EytzCache *cache, EytzCacheEntry *entry)
{
	EytzCacheEntry **p;

	for (p = &cache->head; *p; p = &(*p)->next)
	{
		if (*p == entry)
		{
			*p = entry->next;
			entry->next = NULL;
			entry->cached = false;
			cache->bytes -= entry->bytes;
			if (entry->refcount == 0)
				cache->free_entry(entry);
			return;
		}
	}
}

/* Unlink the entries of an index (InvalidOid: of every index) that keep() does not keep */
void
eytz_cache_drop(EytzCache *cache, Oid indexoid, bool (*keep) (EytzCacheEntry *entry))
{
	EytzCacheEntry *entry = cache->head;

	while (entry)
	{
		EytzCacheEntry *next = entry->next;

		if ((!OidIsValid(indexoid) || entry->indexoid == indexoid) && !(keep && keep(entry)))
			eytz_cache_unlink(cache, entry);
		entry = next;
	}
}

/* Evict unpinned entries, least recently used first, until need more bytes fit limit */
bool
eytz_cache_make_room(EytzCache *cache, Size need, Size limit)
{
	while (cache->bytes + need > limit)
	{
		EytzCacheEntry *victim = NULL;
		EytzCacheEntry *entry;

		for (entry = cache->head; entry; entry = entry->next)
			if (entry->refcount == 0 && (victim == NULL || entry->last_used < victim->last_used))
				victim = entry;
		if (victim == NULL)
			return false;
		eytz_cache_unlink(cache, victim);
	}
	return true;
}

/* The entry of this generation of index, or NULL (no pin taken) */
static EytzCacheEntry *
cache_lookup(EytzCache *cache, Relation index, uint64 generation)
{
	EytzCacheEntry *entry;

	for (entry = cache->head; entry; entry = entry->next)
		if (entry->indexoid == RelationGetRelid(index) &&
			entry->relfilenode == EytzRelFileNumber(EytzRelationFile(index)) &&
			entry->generation == generation)
			return entry;
	return NULL;
}

/* Is this generation of index cached?  (the planner's question: no pin) */
bool
eytz_cache_find(EytzCache *cache, Relation index, uint64 generation)
{
	return cache_lookup(cache, index, generation) != NULL;
}

/*
 * The cached entry of this generation of index, pinned; NULL if there is
 * none, after unlinking the index's other generations (of no further use).
 */
EytzCacheEntry *
eytz_cache_pin(EytzCache *cache, Relation index, uint64 generation)
{
	EytzCacheEntry *entry = cache_lookup(cache, index, generation);

	if (entry)
	{
		entry->refcount++;
		entry->last_used = ++cache->clock;
		return entry;
	}
	eytz_cache_drop(cache, RelationGetRelid(index), NULL);
	return NULL;
}

/*
 * Set up a new entry for generation of index (bytes big, refcount pins) and
 * link it into the cache if room for it can be made under limit.  false: not
 * cached (the caller frees it, or its last unpin does).
 */
bool
eytz_cache_add(EytzCache *cache, EytzCacheEntry *entry, Relation index, uint64 generation,
			   Size bytes, int refcount, Size limit)
{
	entry->indexoid = RelationGetRelid(index);
	entry->relfilenode = EytzRelFileNumber(EytzRelationFile(index));
	entry->generation = generation;
	entry->bytes = bytes;
	entry->refcount = refcount;
	entry->last_used = ++cache->clock;
	entry->cached = false;
	entry->next = NULL;
	if (bytes > limit || !eytz_cache_make_room(cache, bytes, limit))
		return false;
	entry->cached = true;
	entry->next = cache->head;
	cache->head = entry;
	cache->bytes += bytes;
	return true;
}

/* Unpin; an entry no longer in the cache is freed by its last unpin */
void
eytz_cache_release(EytzCache *cache, EytzCacheEntry *entry)
{
	Assert(entry->refcount > 0);
	if (--entry->refcount == 0 && !entry->cached)
		cache->free_entry(entry);
}
