/*
 * eytzmerge.c
 *		Merging the pending list (and dropping tombstones) into a new layout.
 *
 * A merge reads every live entry of the layout and the pending list, sorts
 * them, and writes a new layout into blocks that neither the current region
 * nor the pending list use (the first run of free blocks that is long enough,
 * possibly extending the file), WAL-logged page by page.  Only then does one GenericXLog record switch
 * the metapage to the new region, empty the pending list and bump the
 * generation: a crash before it leaves the old index intact, and scans that
 * started before it finish on the old pages (see eytzsearch.c).  The old
 * pages are then handed to the free space map.
 *
 * Merges run under the metapage's heavyweight page lock in exclusive mode,
 * which keeps inserts and VACUUM out.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/xlog.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "access/relation.h"
#include "utils/acl.h"

#include "eytzgpu.h"

PG_FUNCTION_INFO_V1(eytzgpu_merge);

/* Add the live layout entries to pairs */
static void
read_layout(Relation index, const EytzMetaPageData *meta, EytzPairs *pairs)
{
	uint64		n = meta->nentries;
	uint64		keypos = 0;
	uint32		p;
	uint64	   *keys;

	if (n == 0)
		return;
	/* keys first (slot order), then TIDs page by page */
	keys = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * n);
	for (p = 0; p < meta->nkeypages; p++)
	{
		Buffer		buf = ReadBuffer(index, meta->keys_start + p);
		char	   *c;
		uint64		cnt = Min(meta->keys_per_page, n - keypos);
		uint64		i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		c = PageGetContents(BufferGetPage(buf));
		for (i = 0; i < cnt; i++)
			keys[keypos++] = eytz_key_at(c, meta->key_width, i);
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}
	keypos = 0;
	for (p = 0; p < meta->ntidpages; p++)
	{
		Buffer		buf = ReadBuffer(index, meta->tids_start + p);
		ItemPointerData *tids;
		uint64		cnt = Min(EYTZ_TIDS_PER_PAGE, n - keypos);
		uint64		i;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		tids = (ItemPointerData *) PageGetContents(BufferGetPage(buf));
		for (i = 0; i < cnt; i++, keypos++)
			if (ItemPointerGetBlockNumberNoCheck(&tids[i]) != InvalidBlockNumber)
				eytz_pairs_add(pairs, keys[keypos], &tids[i]);
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(keys);
}

/* Add the pending entries to pairs; returns their blocks */
static BlockNumber *
read_pending(Relation index, const EytzMetaPageData *meta, EytzPairs *pairs,
			 int *nblocks)
{
	EytzPendingEntry *entries;
	BlockNumber *blocks;
	uint64		n,
				i;

	/* merges hold the merge lock: the list cannot change under us */
	if (!eytz_read_pending(index, meta, &entries, &n, &blocks, nblocks))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("eytzgpu index \"%s\": the pending list reaches a page that is not a pending page",
						RelationGetRelationName(index))));
	for (i = 0; i < n; i++)
		eytz_pairs_add(pairs, entries[i].key, &entries[i].tid);
	pfree(entries);
	return blocks;
}

typedef struct BlockExtent
{
	BlockNumber start;
	BlockNumber len;
} BlockExtent;

static int
extent_cmp(const void *a, const void *b)
{
	BlockNumber x = ((const BlockExtent *) a)->start;
	BlockNumber y = ((const BlockExtent *) b)->start;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * First block of the lowest run of need blocks after the metapage that
 * neither the current region nor a pending page uses; the run may extend
 * past the end of the file.  Taking the first fit, rather than the end of
 * the file whenever block 1 does not fit, keeps an index that grows between
 * merges from growing its file by a whole layout at every merge: the regions
 * alternate between the start of the file and the space after the current
 * one.
 */
static BlockNumber
first_fit(BlockNumber need, BlockNumber cur_start, BlockNumber cur_len,
		  const BlockNumber *pblocks, int npblocks)
{
	BlockExtent *live = palloc(sizeof(BlockExtent) * (npblocks + 1));
	int			nlive = 0;
	BlockNumber cursor = EYTZ_METAPAGE_BLKNO + 1;
	int			i;

	if (cur_len > 0)
	{
		live[nlive].start = cur_start;
		live[nlive++].len = cur_len;
	}
	for (i = 0; i < npblocks; i++)
	{
		live[nlive].start = pblocks[i];
		live[nlive++].len = 1;
	}
	qsort(live, nlive, sizeof(BlockExtent), extent_cmp);
	for (i = 0; i < nlive; i++)
	{
		if (live[i].start >= cursor && live[i].start - cursor >= need)
			break;
		cursor = Max(cursor, live[i].start + live[i].len);
	}
	pfree(live);
	return cursor;
}

/*
 * Merge the pending list and drop tombstones.  With wait, block until the
 * merge lock is free; without, give up if another backend holds it or has
 * merged meanwhile.  Returns whether a new layout was written.
 */
bool
eytz_merge(Relation index, bool wait)
{
	EytzMetaPageData meta;
	EytzMetaPageData newmeta;
	EytzPairs	pairs;
	BlockNumber *pblocks;
	int			npblocks;
	int			layout,
				fanout,
				pending_limit;
	int			kpp;
	BlockNumber need,
				start,
				nblocks,
				blkno;
	BlockNumber cur_start,
				cur_len;
	int			i;
	Buffer		metabuf;
	GenericXLogState *state;

	if (wait)
		LockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	else if (!ConditionalLockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock))
		return false;

	eytz_read_meta(index, &meta);
	if (!wait && meta.npending < meta.pending_limit)
	{
		UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
		return false;
	}

	eytz_pairs_init(&pairs, 0);
	read_layout(index, &meta, &pairs);
	pblocks = read_pending(index, &meta, &pairs, &npblocks);
	eytz_pairs_sort(&pairs);

	eytz_choose_layout(index, pairs.n, meta.key_width, &layout, &fanout,
					   &pending_limit);
	kpp = eytz_keys_per_page(meta.key_width, fanout);
	need = (pairs.n + kpp - 1) / kpp +
		(pairs.n + EYTZ_TIDS_PER_PAGE - 1) / EYTZ_TIDS_PER_PAGE;

	/* a run of blocks that no live page uses */
	cur_start = meta.keys_start;
	cur_len = meta.nkeypages + meta.ntidpages;
	start = first_fit(need, cur_start, cur_len, pblocks, npblocks);

	memcpy(&newmeta, &meta, sizeof(meta));
	eytz_write_layout(index, &pairs, false, meta.key_width, fanout, start,
					  RelationNeedsWAL(index), &newmeta);
	newmeta.layout = layout;
	newmeta.pending_limit = pending_limit;
	newmeta.generation = meta.generation + 1;
	newmeta.pending_head = InvalidBlockNumber;
	newmeta.pending_tail = InvalidBlockNumber;
	newmeta.npending = 0;

	/* the switch */
	metabuf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	memcpy(EytzPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0)),
		   &newmeta, sizeof(newmeta));
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);

	/* old pending pages become free pages */
	for (i = 0; i < npblocks; i++)
	{
		Buffer		buf = ReadBuffer(index, pblocks[i]);

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		eytz_init_page(GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE),
					   EYTZ_PAGE_FREE);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
	}

	/* every block outside the new region is free */
	nblocks = RelationGetNumberOfBlocks(index);
	for (blkno = EYTZ_METAPAGE_BLKNO + 1; blkno < nblocks; blkno++)
	{
		if (eytz_block_in_region(&newmeta, blkno))
			RecordUsedIndexPage(index, blkno);
		else
			RecordFreeIndexPage(index, blkno);
	}
	IndexFreeSpaceMapVacuum(index);

	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	eytz_pairs_free(&pairs);
	pfree(pblocks);
	return true;
}

/* SELECT eytzgpu_merge('idx'): merge now; returns the new generation */
Datum
eytzgpu_merge(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	index;
	EytzMetaPageData meta;

	index = eytz_open_index(indexoid, RowExclusiveLock);
	if (!pg_class_ownercheck(indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX,
					   RelationGetRelationName(index));
	eytz_merge(index, true);
	eytz_read_meta(index, &meta);

	/*
	 * A SELECT that only merges has no XID, so its commit would not flush
	 * the WAL: flush it here so that the generation returned survives a
	 * crash.
	 */
	if (RelationNeedsWAL(index))
		XLogFlush(GetXLogInsertRecPtr());
	relation_close(index, RowExclusiveLock);
	PG_RETURN_INT64((int64) meta.generation);
}
