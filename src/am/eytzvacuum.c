/*
 * eytzvacuum.c
 *		VACUUM support for eytzgpu.
 *
 * ambulkdelete turns dead layout entries into tombstones (the key stays, so
 * the search structure is intact; the TID becomes invalid and scans skip it)
 * and removes dead pending entries.  Each page's change and the metapage's
 * counts go into one GenericXLog record, so that a crash leaves them
 * consistent.
 *
 * amvacuumcleanup merges when there are pending entries or when more than
 * EYTZ_VACUUM_MERGE_DEAD_PCT percent of the layout's entries are tombstones:
 * a few tombstones cost scans little, while a merge writes a whole layout.
 * Otherwise it only recycles retired generations (eytzmerge.c).
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "eytzcompat.h"
#include "eytzinclude.h"

#define EYTZ_VACUUM_MERGE_DEAD_PCT	20

/*
 * Start a record changing buf (locked exclusively) and the metapage; returns
 * the metapage contents to update.  Inserts lock the metapage before their
 * pages, but they wait for the merge lock that VACUUM holds exclusively.
 */
static EytzMetaPage
start_change(Relation index, GenericXLogState **state, Buffer buf, Page *page,
			 Buffer metabuf)
{
	*state = GenericXLogStart(index);
	*page = GenericXLogRegisterBuffer(*state, buf, 0);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	return EytzPageGetMeta(GenericXLogRegisterBuffer(*state, metabuf, 0));
}

static void
finish_change(GenericXLogState *state, Buffer metabuf)
{
	GenericXLogFinish(state);
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
}

IndexBulkDeleteResult *
eytz_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	EytzMetaPageData meta;
	EytzPendingEntry *unused;
	uint64		nunused;
	BlockNumber *pblocks;
	int			npblocks;
	uint64		removed = 0;
	uint64		live = 0;
	Buffer		metabuf;
	uint32		p;
	int			b;
	Size		size = eytz_pending_entry_size(eytz_include_count(index));

	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	/*
	 * Wait for index-only scans to be done with the TIDs they returned
	 * (eytzscan.c), then keep merges and inserts out while the pages change
	 */
	LockPage(index, EYTZ_IOS_LOCK_BLKNO, ExclusiveLock);
	LockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	eytz_read_meta(index, &meta);
	metabuf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);

	for (p = 0; p < meta.ntidpages; p++)
	{
		BlockNumber blkno = meta.tids_start + p;
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno,
											 RBM_NORMAL, info->strategy);
		uint64		cnt = Min(EYTZ_TIDS_PER_PAGE,
							  meta.nentries - (uint64) p * EYTZ_TIDS_PER_PAGE);
		GenericXLogState *state = NULL;
		EytzMetaPage m = NULL;
		Page		page;
		ItemPointerData *tids;
		uint64		i,
					n = 0;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		eytz_check_page(index, &meta, page, blkno, EYTZ_PAGE_TIDS,
						cnt * sizeof(ItemPointerData));
		tids = (ItemPointerData *) PageGetContents(page);
		for (i = 0; i < cnt; i++)
		{
			if (ItemPointerGetBlockNumberNoCheck(&tids[i]) == InvalidBlockNumber)
				continue;
			if (!callback(&tids[i], callback_state))
			{
				live++;
				continue;
			}
			if (state == NULL)
			{
				m = start_change(index, &state, buf, &page, metabuf);
				tids = (ItemPointerData *) PageGetContents(page);
			}
			ItemPointerSetInvalid(&tids[i]);
			n++;
		}
		if (state)
		{
			m->ndead += n;
			finish_change(state, metabuf);
		}
		UnlockReleaseBuffer(buf);
		removed += n;
		eytz_vacuum_delay_point();
	}

	/* the list cannot change under the merge lock: its pages, checked */
	eytz_read_pending(index, &meta, &unused, &nunused, &pblocks, &npblocks);
	pfree(unused);
	for (b = 0; b < npblocks; b++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, pblocks[b],
											 RBM_NORMAL, info->strategy);
		Page		page;
		char	   *entries;
		bool		keep[EYTZ_PENDING_PER_PAGE];
		int			count,
					i,
					out = 0;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		page = BufferGetPage(buf);
		entries = PageGetContents(page);
		count = EytzPageGetOpaque(page)->count;
		for (i = 0; i < count; i++)
			if ((keep[i] = !callback(&((EytzPendingEntry *) (entries + i * size))->tid,
									 callback_state)))
				out++;
		if (out < count)
		{
			GenericXLogState *state;
			EytzMetaPage m = start_change(index, &state, buf, &page, metabuf);

			/* entries move with their included values */
			entries = PageGetContents(page);
			for (i = 0, out = 0; i < count; i++)
				if (keep[i])
					memmove(entries + size * out++, entries + size * i, size);
			EytzPageGetOpaque(page)->count = out;
			((PageHeader) page)->pd_lower = entries + size * out - (char *) page;
			m->npending -= count - out;
			finish_change(state, metabuf);
		}
		UnlockReleaseBuffer(buf);
		removed += count - out;
		live += out;
		eytz_vacuum_delay_point();
	}
	ReleaseBuffer(metabuf);
	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	UnlockPage(index, EYTZ_IOS_LOCK_BLKNO, ExclusiveLock);
	pfree(pblocks);

	stats->tuples_removed += removed;
	stats->num_index_tuples = live;
	stats->num_pages = RelationGetNumberOfBlocks(index);
	return stats;
}

IndexBulkDeleteResult *
eytz_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	Relation	index = info->index;
	EytzMetaPageData meta;

	if (info->analyze_only)
		return stats;

	eytz_read_meta(index, &meta);
	if (meta.npending > 0 ||
		meta.ndead * 100 > meta.nentries * EYTZ_VACUUM_MERGE_DEAD_PCT)
		eytz_merge(index, true, 1, NULL);
	else if (meta.nretired > 0)
		eytz_recycle(index, 1);
	eytz_read_meta(index, &meta);
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_pages = RelationGetNumberOfBlocks(index);
	stats->num_index_tuples = meta.nentries - meta.ndead + meta.npending;
	stats->estimated_count = false;
	return stats;
}
