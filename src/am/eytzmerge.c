/*
 * eytzmerge.c
 *		Merging the pending list (and dropping tombstones) into a new layout,
 *		and recycling the pages of retired generations.
 *
 * A merge is one linear pass: the live entries of the layout, streamed in
 * (key, TID) order through the page layer (which checks them: a damaged
 * index is refused, never laundered into a valid-looking one), are merged
 * with the sorted pending list and dealt straight to a layout writer, which
 * writes the new layout (the pages a REINDEX writes) into the first run of
 * blocks that is long enough among those no live or retired generation uses
 * (possibly extending the file), WAL-logged.  Memory: the pending list and
 * a few pages per level, never the whole index.  Only
 * then does one GenericXLog record switch the metapage to the new region,
 * empty the pending list, bump the generation and retire the old region and
 * pending list with the merge's XID as their stamp: a crash before it
 * leaves the old index intact, and scans that read the old metapage finish
 * on the old pages, which nothing overwrites until
 * GlobalVisCheckRemovableFullXid() says no transaction that could have read
 * that metapage is left (as nbtree recycles deleted pages).  Retired pages
 * past that horizon become free: pending pages are marked free, all free
 * blocks go to the free space map, and a free tail of the file is truncated
 * (under a conditional AccessExclusiveLock, as VACUUM truncates a heap).
 *
 * When that lock can be had at once and this backend has no scan open on
 * the index, no one can read any retired generation (every reader keeps a
 * lock on the index until its transaction ends): eytzgpu_merge() and VACUUM
 * then recycle them all at once, and a layout that had to go past the end
 * of the file moves to block 1, so that the file shrinks to one layout.
 * Otherwise a layout that extends the file starts far enough out for the
 * next, slightly larger one to fit in front of it, and regions alternate
 * between the front and the back of the file.
 *
 * Merges run under the metapage's heavyweight page lock in exclusive mode,
 * which keeps inserts and VACUUM out.  Automatic merges (eytzinsert.c) run
 * at most once per transaction and index.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "catalog/storage.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "eytzcompat.h"
#include "eytzinclude.h"

PG_FUNCTION_INFO_V1(eytzgpu_merge);

/* A set of blocks as sorted, disjoint extents */
typedef struct BlockExtent
{
	BlockNumber start;
	BlockNumber len;
} BlockExtent;

typedef struct BlockSet
{
	BlockExtent *ext;
	int			n;
	int			cap;
} BlockSet;

static void
set_add(BlockSet *s, BlockNumber start, BlockNumber len)
{
	if (len == 0)
		return;
	if (s->n == s->cap)
	{
		s->cap = Max(s->cap * 2, 16);
		s->ext = s->ext ? repalloc(s->ext, sizeof(BlockExtent) * s->cap)
			: palloc(sizeof(BlockExtent) * s->cap);
	}
	s->ext[s->n].start = start;
	s->ext[s->n++].len = len;
}

static int
extent_cmp(const void *a, const void *b)
{
	BlockNumber x = ((const BlockExtent *) a)->start;
	BlockNumber y = ((const BlockExtent *) b)->start;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* Sort and coalesce, so that lookups can bisect */
static void
set_normalize(BlockSet *s)
{
	int			i,
				out = 0;

	if (s->n == 0)
		return;
	qsort(s->ext, s->n, sizeof(BlockExtent), extent_cmp);
	for (i = 1; i < s->n; i++)
	{
		BlockExtent *last = &s->ext[out];

		if (s->ext[i].start <= last->start + last->len)
			last->len = Max(last->len, s->ext[i].start + s->ext[i].len - last->start);
		else
			s->ext[++out] = s->ext[i];
	}
	s->n = out + 1;
}

static bool
set_has(const BlockSet *s, BlockNumber b)
{
	int			lo = 0,
				hi = s->n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (b < s->ext[mid].start)
			hi = mid - 1;
		else if (b >= s->ext[mid].start + s->ext[mid].len)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* One past the last block of a normalized set */
static BlockNumber
set_end(const BlockSet *s)
{
	return s->n > 0 ? s->ext[s->n - 1].start + s->ext[s->n - 1].len : 0;
}

/* First block of the lowest run of need blocks outside a normalized set */
static BlockNumber
set_first_fit(const BlockSet *s, BlockNumber need)
{
	BlockNumber cursor = 0;
	int			i;

	for (i = 0; i < s->n; i++)
	{
		if (s->ext[i].start >= cursor && s->ext[i].start - cursor >= need)
			break;
		cursor = Max(cursor, s->ext[i].start + s->ext[i].len);
	}
	return cursor;
}

/* What a merge or VACUUM may reuse, and what it must keep */
typedef struct Recycling
{
	EytzRetired keep[EYTZ_MAX_RETIRED]; /* retired, still readable */
	int			nkeep;
	int			nrecycled;		/* retired generations past the horizon */
	BlockSet	live;			/* metapage, current and kept generations */
	BlockNumber *tofree;		/* pending pages of the recycled generations */
	int			ntofree;
} Recycling;

/*
 * Add the pages of a retired pending list to *out.  The walk stops at a page
 * that is no longer a pending page of that list: a merge that crashed before
 * its switch may have written its new region over part of a list it was
 * recycling.  Pages of the current generation (cur) end it too.
 */
static void
retired_chain(Relation index, BlockNumber head, BlockNumber nblocks,
			  const BlockSet *cur, BlockNumber **out, int *nout)
{
	BlockNumber b = head;
	BlockNumber steps = 0;
	int			cap = *nout + 16;

	*out = *out ? repalloc(*out, sizeof(BlockNumber) * cap)
		: palloc(sizeof(BlockNumber) * cap);
	while (b != InvalidBlockNumber && b != EYTZ_METAPAGE_BLKNO && b < nblocks &&
		   steps++ < nblocks && !set_has(cur, b))
	{
		Buffer		buf = ReadBuffer(index, b);
		Page		page;
		BlockNumber next;
		bool		ok;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		ok = !PageIsNew(page) &&
			((PageHeader) page)->pd_special == BLCKSZ - MAXALIGN(sizeof(EytzPageOpaqueData)) &&
			EytzPageGetOpaque(page)->flags == EYTZ_PAGE_PENDING;
		next = ok ? EytzPageGetOpaque(page)->next : InvalidBlockNumber;
		UnlockReleaseBuffer(buf);
		if (!ok)
			break;
		if (*nout == cap)
		{
			cap *= 2;
			*out = repalloc(*out, sizeof(BlockNumber) * cap);
		}
		(*out)[(*nout)++] = b;
		b = next;
	}
}

/*
 * How many retired generations a running transaction may still read, and
 * whether this transaction retired one of them.
 */
static int
readable_generations(Relation index, const EytzMetaPageData *meta, bool *ours)
{
	Buffer		metabuf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
	FullTransactionId me = GetTopFullTransactionIdIfAny();
	const EytzRetired *ret;
	int			n = 0;
	uint32		i;

	*ours = false;
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	ret = EytzPageGetRetired(BufferGetPage(metabuf));
	for (i = 0; i < meta->nretired; i++)
		if (!GlobalVisCheckRemovableFullXid(NULL, ret[i].stamp))
		{
			n++;
			if (FullTransactionIdIsValid(me) &&
				FullTransactionIdEquals(ret[i].stamp, me))
				*ours = true;
		}
	UnlockReleaseBuffer(metabuf);
	return n;
}

/*
 * Sort the retired generations the metapage lists into those still readable
 * (kept, and their pages live) and those past the horizon, or all if
 * everything (their pending pages to be freed); pblocks are the current
 * pending list's pages.
 */
static void
plan_recycling(Relation index, const EytzMetaPageData *meta,
			   const BlockNumber *pblocks, int npblocks, BlockNumber nblocks,
			   bool everything, Recycling *rc)
{
	EytzRetired ret[EYTZ_MAX_RETIRED];
	Buffer		metabuf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
	BlockSet	cur = {NULL, 0, 0};
	BlockNumber *kept = NULL;
	int			nkept = 0;
	int			i;
	EytzInclude inc;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	memcpy(ret, EytzPageGetRetired(BufferGetPage(metabuf)),
		   sizeof(EytzRetired) * meta->nretired);
	UnlockReleaseBuffer(metabuf);

	set_add(&cur, EYTZ_METAPAGE_BLKNO, 1);
	eytz_include_get(index, &inc);
	if (meta->nentries > 0)
		set_add(&cur, meta->keys_start, eytz_region_npages(meta, &inc));
	for (i = 0; i < npblocks; i++)
		set_add(&cur, pblocks[i], 1);
	set_normalize(&cur);

	memset(rc, 0, offsetof(Recycling, live));
	memset(&rc->live, 0, sizeof(BlockSet));
	rc->tofree = NULL;
	rc->ntofree = 0;
	for (i = 0; i < (int) meta->nretired; i++)
	{
		EytzRetired *r = &ret[i];

		if (r->region_start != InvalidBlockNumber &&
			(r->region_start == EYTZ_METAPAGE_BLKNO ||
			 (uint64) r->region_start + r->region_len > nblocks))
			EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
						 "Retired region at block %u (%u blocks) is outside the %u blocks of the file.",
						 r->region_start, r->region_len, nblocks);
		if (everything || GlobalVisCheckRemovableFullXid(NULL, r->stamp))
		{
			rc->nrecycled++;
			retired_chain(index, r->pending_head, nblocks, &cur, &rc->tofree,
						  &rc->ntofree);
		}
		else
		{
			rc->keep[rc->nkeep++] = *r;
			if (r->region_start != InvalidBlockNumber)
				set_add(&rc->live, r->region_start, r->region_len);
			retired_chain(index, r->pending_head, nblocks, &cur, &kept, &nkept);
		}
	}
	for (i = 0; i < cur.n; i++)
		set_add(&rc->live, cur.ext[i].start, cur.ext[i].len);
	for (i = 0; i < nkept; i++)
		set_add(&rc->live, kept[i], 1);
	set_normalize(&rc->live);
	if (kept)
		pfree(kept);
	if (cur.ext)
		pfree(cur.ext);
}

/*
 * Write the metapage: newmeta's fields, the kept retired generations and,
 * if add is not NULL, one more retired now.  Its stamp is the merging
 * transaction's own XID, assigned before the switch: every transaction that
 * read the old metapage took its snapshot while that XID was running or
 * before it was assigned, so its xmin is at most the stamp, and the stamp
 * is past the horizon only once all of them (and the merge) have ended.
 * Snapshots ignore a lazy VACUUM's XID, so VACUUM stamps with the next XID,
 * read under the metapage's lock as nbtree does (that one needs an XID
 * consumed after the switch to pass the horizon).  Returns the record's LSN.
 */
static XLogRecPtr
write_metapage(Relation index, EytzMetaPageData *newmeta, Recycling *rc,
			   EytzRetired *add)
{
	Buffer		metabuf;
	GenericXLogState *state;
	Page		page;
	EytzRetired *ret;
	XLogRecPtr	lsn;

	if (add && !(MyProc->statusFlags & PROC_IN_VACUUM))
		add->stamp = GetTopFullTransactionId();
	metabuf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	if (add && (MyProc->statusFlags & PROC_IN_VACUUM))
		add->stamp = ReadNextFullTransactionId();
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, metabuf, 0);
	ret = EytzPageGetRetired(page);
	memcpy(ret, rc->keep, sizeof(EytzRetired) * rc->nkeep);
	newmeta->nretired = rc->nkeep;
	if (add)
		ret[newmeta->nretired++] = *add;
	memcpy(EytzPageGetMeta(page), newmeta, sizeof(EytzMetaPageData));
	((PageHeader) page)->pd_lower = (char *) &ret[newmeta->nretired] - (char *) page;
	lsn = GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
	return lsn;
}

/*
 * After the metapage no longer lists the recycled generations: mark their
 * pending pages free, give the free space map every block outside live, and
 * truncate a free tail of the file if no other backend has the index open.
 */
static void
finish_recycling(Relation index, Recycling *rc)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber end = Max(set_end(&rc->live), EYTZ_METAPAGE_BLKNO + 1);
	BlockNumber blkno;
	int			i;

	for (i = 0; i < rc->ntofree; i++)
	{
		Buffer		buf;
		GenericXLogState *state;

		/* pages past the end are truncated below; a new region may be here */
		if (rc->tofree[i] >= end || set_has(&rc->live, rc->tofree[i]))
			continue;
		buf = ReadBuffer(index, rc->tofree[i]);
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		if (!PageIsNew(BufferGetPage(buf)) &&
			EytzPageGetOpaque(BufferGetPage(buf))->flags == EYTZ_PAGE_PENDING)
		{
			state = GenericXLogStart(index);
			eytz_init_page(GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE),
						   EYTZ_PAGE_FREE);
			GenericXLogFinish(state);
		}
		UnlockReleaseBuffer(buf);
	}

	if (end < nblocks && ConditionalLockRelation(index, AccessExclusiveLock))
	{
		/* as lazy_truncate_heap: others see the new size at their next lock */
		RelationTruncate(index, end);
		UnlockRelation(index, AccessExclusiveLock);
		nblocks = end;
	}
	for (blkno = EYTZ_METAPAGE_BLKNO + 1; blkno < nblocks; blkno++)
	{
		if (set_has(&rc->live, blkno))
			RecordUsedIndexPage(index, blkno);
		else
			RecordFreeIndexPage(index, blkno);
	}
	IndexFreeSpaceMapVacuum(index);
	if (rc->tofree)
		pfree(rc->tofree);
	if (rc->live.ext)
		pfree(rc->live.ext);
}

/*
 * Recycle the retired generations no transaction can read any more (all of
 * them if everything), and truncate a free tail.  The caller holds the
 * merge lock.
 */
static void
recycle(Relation index, bool everything)
{
	EytzMetaPageData meta;
	EytzPendingEntry *pending;
	uint64		npending;
	BlockNumber *pblocks;
	int			npblocks;
	Recycling  *rc = palloc(sizeof(Recycling));

	eytz_read_meta(index, &meta);
	eytz_read_pending(index, &meta, &pending, &npending, &pblocks, &npblocks);
	plan_recycling(index, &meta, pblocks, npblocks,
				   RelationGetNumberOfBlocks(index), everything, rc);
	if (rc->nrecycled > 0)
		write_metapage(index, &meta, rc, NULL);
	finish_recycling(index, rc);
	pfree(pending);
	pfree(pblocks);
	pfree(rc);
}

/*
 * Can no one read a retired generation?  True when no other transaction
 * has the index open (every reader of its pages keeps a lock on it until it
 * ends), which an AccessExclusiveLock had at once shows, and this backend
 * holds no more references to it than own_opens (no scan of its own is
 * open).  Then the caller holds the lock, to release after recycling; the
 * lock is WAL-logged, so hot standby queries on the index give way first,
 * as for a truncation.
 */
static bool
no_readers(Relation index, int own_opens)
{
	return own_opens > 0 && index->rd_refcnt <= own_opens &&
		ConditionalLockRelation(index, AccessExclusiveLock);
}

/*
 * The layout that starts after a hole that can hold it moves to block 1: a
 * copy, WAL-logged, then a switch that retires the old place.  Only with no
 * readers (nothing else is retired then), so that the copy is recycled, and
 * the file truncated, at once.
 */
static XLogRecPtr
move_to_front(Relation index)
{
	EytzMetaPageData meta;
	EytzMetaPageData newmeta;
	EytzRetired retire;
	Recycling  *rc = palloc0(sizeof(Recycling));
	BlockNumber len;
	BlockNumber p;
	XLogRecPtr	lsn;
	EytzInclude inc;

	eytz_read_meta(index, &meta);
	eytz_include_get(index, &inc);
	len = eytz_region_npages(&meta, &inc);
	Assert(meta.nretired == 0 && meta.keys_start > EYTZ_METAPAGE_BLKNO + len);
	for (p = 0; p < len; p++)
	{
		Buffer		src = ReadBuffer(index, meta.keys_start + p);
		Buffer		dst = ReadBufferExtended(index, MAIN_FORKNUM,
											 EYTZ_METAPAGE_BLKNO + 1 + p,
											 RBM_ZERO_AND_LOCK, NULL);

		LockBuffer(src, BUFFER_LOCK_SHARE);
		memcpy(BufferGetPage(dst), BufferGetPage(src), BLCKSZ);
		MarkBufferDirty(dst);
		UnlockReleaseBuffer(src);
		UnlockReleaseBuffer(dst);
		CHECK_FOR_INTERRUPTS();
	}
	if (RelationNeedsWAL(index))
		log_newpage_range(index, MAIN_FORKNUM, EYTZ_METAPAGE_BLKNO + 1,
						  EYTZ_METAPAGE_BLKNO + 1 + len, true);

	memcpy(&newmeta, &meta, sizeof(meta));
	newmeta.keys_start = EYTZ_METAPAGE_BLKNO + 1;
	newmeta.tids_start = newmeta.keys_start + meta.nkeypages;
	newmeta.generation = meta.generation + 1;
	memset(&retire, 0, sizeof(retire));
	retire.region_start = meta.keys_start;
	retire.region_len = len;
	retire.pending_head = meta.pending_head;
	lsn = write_metapage(index, &newmeta, rc, &retire);
	pfree(rc);
	return lsn;
}

/*
 * Write the layout of the n entries that the merge keeps, from block start:
 * the live entries of the old layout, streamed in (key, TID) order by the
 * page layer (which checks them: a damaged index is refused, never laundered
 * into a valid-looking one), merged with the sorted pending entries, go
 * straight to a layout writer, which deals them out to one cursor per
 * level.  Included values come along: the old layout's from the stream, the
 * pending entries' from pvalues/pnulls by the row the sort carried.
 * Memory: O(levels x page) besides the pending entries.  The pages are
 * those a REINDEX of the same entries writes.
 */
static void
merge_into_layout(Relation index, const EytzMetaPageData *meta,
				  const EytzPairs *pending, const Datum *pvalues,
				  const bool *pnulls, uint64 n, int fanout,
				  BlockNumber start, EytzMetaPageData *newmeta)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "eytzgpu merge",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	EytzLayoutWriter *writer = eytz_layout_writer_begin(index, n, meta->key_width,
														fanout, start);
	EytzSortedReader old;
	uint64		key = 0,
				tid = 0,
				p = 0,
				put = 0;
	bool		have_old;
	int			m = eytz_include_count(index);
	Datum		values[EYTZ_MAX_INCLUDE];
	bool		isnull[EYTZ_MAX_INCLUDE];

	eytz_sorted_begin(&old, index, meta);
	have_old = eytz_sorted_next(&old, &key, &tid);
	while (have_old || p < pending->n)
	{
		bool		take_old = have_old &&
			(p == pending->n || key < pending->keys[p] ||
			 (key == pending->keys[p] && tid <= pending->tids[p]));

		/*
		 * More live entries than the metapage counts: the reader reports the
		 * wrong tombstone count once it is through; until then, write no
		 * more than the layout holds.
		 */
		if (put++ < n)
		{
			if (take_old)
			{
				eytz_sorted_include(&old, values, isnull);
				eytz_layout_writer_put(writer, key, tid, values, isnull);
			}
			else if (m > 0)
				eytz_layout_writer_put(writer, pending->keys[p], pending->tids[p],
									   pvalues + pending->rows[p] * m,
									   pnulls + pending->rows[p] * m);
			else
				eytz_layout_writer_put(writer, pending->keys[p], pending->tids[p],
									   NULL, NULL);
		}
		if (take_old)
			have_old = eytz_sorted_next(&old, &key, &tid);
		else
			p++;
	}
	eytz_layout_writer_finish(writer, RelationNeedsWAL(index), newmeta);
	MemoryContextSwitchTo(oldcxt);
	/* the reader's and the writer's pages */
	MemoryContextDelete(cxt);
}

/*
 * Merge the pending list and drop tombstones.  With wait, block until the
 * merge lock is free; without, give up if another backend holds it or has
 * merged meanwhile, if this transaction merged already, or if too many
 * retired generations are still readable.
 * Returns whether a new layout was written, and the LSN of the switch in
 * *switch_lsn (if not NULL).
 */
bool
eytz_merge(Relation index, bool wait, int own_opens, XLogRecPtr *switch_lsn)
{
	EytzMetaPageData meta;
	EytzMetaPageData newmeta;
	EytzMetaPageData shape;		/* the new layout's page counts */
	EytzPairs	sorted_pending;
	EytzPendingEntry *pending;
	Datum	   *pvalues = NULL;
	bool	   *pnulls = NULL;
	EytzInclude inc;
	uint64		npending,
				n,
				i;
	BlockNumber *pblocks;
	int			npblocks;
	int			fanout,
				pending_limit;
	BlockNumber need,
				start;
	Recycling  *rc;
	EytzRetired retire;
	XLogRecPtr	lsn;
	bool		ours;

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
	/*
	 * Room to retire one more generation, before any work.  The generation
	 * a transaction retires stays readable until it ends, so a bulk insert
	 * would leave a whole layout behind at every pending_limit entries:
	 * automatic merges leave the index alone if this transaction retired
	 * one already, unless no one can read it (then it is recycled now).
	 * Their entries wait in the pending list for the next transaction's
	 * merge (or VACUUM's).
	 */
	if (!wait && readable_generations(index, &meta, &ours) < EYTZ_MAX_RETIRED &&
		ours && no_readers(index, own_opens))
	{
		recycle(index, true);
		UnlockRelation(index, AccessExclusiveLock);
		eytz_read_meta(index, &meta);
	}
	if (readable_generations(index, &meta, &ours) >= EYTZ_MAX_RETIRED ||
		(!wait && ours))
	{
		UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
		if (!wait)
			return false;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot merge eytzgpu index \"%s\": %d earlier generations are still readable",
						RelationGetRelationName(index), EYTZ_MAX_RETIRED),
				 errhint("End long-running transactions: until then their snapshots keep the old pages.")));
	}

	/* the pending list, sorted: the only entries held in memory */
	eytz_include_get(index, &inc);
	eytz_read_pending_all(index, &meta, &pending, &pvalues, &pnulls, &npending,
						  &pblocks, &npblocks);
	if (npending != meta.npending)
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Metapage counts " UINT64_FORMAT " pending entries, the list has " UINT64_FORMAT ".",
					 meta.npending, npending);
	eytz_pairs_init(&sorted_pending, 0);
	if (inc.ncols > 0)
		eytz_pairs_with_rows(&sorted_pending, 0);
	for (i = 0; i < npending; i++)
		eytz_pairs_add(&sorted_pending, pending[i].key, &pending[i].tid);
	pfree(pending);
	eytz_pairs_sort(&sorted_pending);

	rc = palloc(sizeof(Recycling));
	plan_recycling(index, &meta, pblocks, npblocks,
				   RelationGetNumberOfBlocks(index), false, rc);
	Assert(rc->nkeep < EYTZ_MAX_RETIRED);

	n = meta.nentries - meta.ndead + npending;
	eytz_choose_layout(index, n, meta.key_width, &fanout,
					   &pending_limit);
	eytz_set_layout_meta(&shape, n, meta.key_width, fanout, EYTZ_METAPAGE_BLKNO + 1);
	need = eytz_region_npages(&shape, &inc);
	start = set_first_fit(&rc->live, need);

	/*
	 * No hole fits: the file grows.  Start far enough from the front that
	 * the space before the new region, free once the current generation is
	 * recycled, holds the next, slightly larger layout: regions then
	 * alternate between the front and the back of the file instead of
	 * stepping ever further out.
	 */
	if (start >= set_end(&rc->live))
	{
		start = Max(start, EYTZ_METAPAGE_BLKNO + 1 + need + need / 8);
		/* the layout is written from start on: the blocks before must exist */
		while (RelationGetNumberOfBlocks(index) < start)
			ReleaseBuffer(ReadBuffer(index, P_NEW));
	}

	memcpy(&newmeta, &meta, sizeof(meta));
	merge_into_layout(index, &meta, &sorted_pending, pvalues, pnulls, n, fanout,
					  start, &newmeta);
	eytz_pairs_free(&sorted_pending);
	if (pvalues)
	{
		pfree(pvalues);
		pfree(pnulls);
	}
	newmeta.pending_limit = pending_limit;
	newmeta.generation = meta.generation + 1;
	newmeta.pending_head = InvalidBlockNumber;
	newmeta.pending_tail = InvalidBlockNumber;
	newmeta.npending = 0;

	/* the switch, retiring the old generation */
	memset(&retire, 0, sizeof(retire));
	retire.region_start = meta.keys_start;
	retire.region_len = eytz_region_npages(&meta, &inc);
	retire.pending_head = meta.pending_head;
	lsn = write_metapage(index, &newmeta, rc,
						 (retire.region_len > 0 || retire.pending_head != InvalidBlockNumber)
						 ? &retire : NULL);

	set_add(&rc->live, start, need);
	set_normalize(&rc->live);
	finish_recycling(index, rc);

	/*
	 * With no readers the old generation is free now.  An explicit merge or
	 * VACUUM moves a layout written past a hole that holds it into the hole,
	 * so the file ends with it; automatic merges (wait = false, inside
	 * inserts) leave it there: the next one fills the hole, and a bulk load
	 * does not copy every layout twice.
	 */
	if (no_readers(index, own_opens))
	{
		recycle(index, true);
		if (wait && start > EYTZ_METAPAGE_BLKNO + need)
		{
			lsn = move_to_front(index);
			recycle(index, true);
		}
		UnlockRelation(index, AccessExclusiveLock);
	}
	if (switch_lsn)
		*switch_lsn = lsn;

	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	pfree(pblocks);
	pfree(rc);
	return true;
}

/*
 * Recycle what can be, and truncate a free tail (VACUUM, when it does not
 * merge); own_opens: the references the caller holds to the index.
 */
void
eytz_recycle(Relation index, int own_opens)
{
	LockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	if (no_readers(index, own_opens))
	{
		recycle(index, true);
		UnlockRelation(index, AccessExclusiveLock);
	}
	else
		recycle(index, false);
	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
}

/* SELECT eytzgpu_merge('idx'): merge now; returns the new generation */
Datum
eytzgpu_merge(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	index;
	EytzMetaPageData meta;
	XLogRecPtr	lsn = InvalidXLogRecPtr;

	/* before anything is read or locked */
	PreventCommandDuringRecovery("eytzgpu_merge()");
	if (!eytz_class_ownercheck(indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, get_rel_name(indexoid));

	index = eytz_open_index(indexoid, RowExclusiveLock, "eytzgpu_merge");
	eytz_merge(index, true, 1, &lsn);
	eytz_read_meta(index, &meta);

	/*
	 * Flush the switch's own record (whatever the commit does, e.g. with
	 * synchronous_commit off), so that the generation returned survives a
	 * crash.
	 */
	if (!XLogRecPtrIsInvalid(lsn))
		XLogFlush(lsn);
	relation_close(index, RowExclusiveLock);
	PG_RETURN_INT64((int64) meta.generation);
}
