/*
 * eytzvacuum.c
 *		VACUUM support for eytzgpu.
 *
 * ambulkdelete turns dead layout entries into tombstones (the key stays, so
 * the search structure is intact; the TID becomes invalid and scans skip it)
 * and removes dead pending entries.  amvacuumcleanup then merges: the pending
 * list goes into a new layout and the tombstones are dropped.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "eytzgpu.h"

IndexBulkDeleteResult *
eytz_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	EytzMetaPageData meta;
	uint64		removed_layout = 0;
	uint64		removed_pending = 0;
	uint64		live = 0;
	uint64		pos = 0;
	BlockNumber blkno;
	uint32		p;
	Buffer		metabuf;
	GenericXLogState *state;

	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	/* keep merges and inserts out while the pages change */
	LockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	eytz_read_meta(index, &meta);

	for (p = 0; p < meta.ntidpages; p++)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, meta.tids_start + p,
											 RBM_NORMAL, info->strategy);
		ItemPointerData *tids;
		uint64		cnt = Min(EYTZ_TIDS_PER_PAGE, meta.nentries - pos);
		uint64		i;

		state = NULL;
		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		tids = (ItemPointerData *) PageGetContents(BufferGetPage(buf));
		for (i = 0; i < cnt; i++)
		{
			if (ItemPointerGetBlockNumberNoCheck(&tids[i]) == InvalidBlockNumber)
				continue;
			if (callback(&tids[i], callback_state))
			{
				if (state == NULL)
				{
					state = GenericXLogStart(index);
					tids = (ItemPointerData *)
						PageGetContents(GenericXLogRegisterBuffer(state, buf, 0));
				}
				ItemPointerSetInvalid(&tids[i]);
				removed_layout++;
			}
			else
				live++;
		}
		if (state)
			GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
		pos += cnt;
		vacuum_delay_point();
	}

	for (blkno = meta.pending_head; blkno != InvalidBlockNumber;)
	{
		Buffer		buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno,
											 RBM_NORMAL, info->strategy);
		Page		page;
		EytzPendingEntry *entries;
		int			i,
					out = 0;
		int			count;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		page = GenericXLogRegisterBuffer(state, buf, 0);
		entries = (EytzPendingEntry *) PageGetContents(page);
		count = EytzPageGetOpaque(page)->count;
		for (i = 0; i < count; i++)
		{
			if (callback(&entries[i].tid, callback_state))
				removed_pending++;
			else
			{
				entries[out++] = entries[i];
				live++;
			}
		}
		if (out != count)
		{
			EytzPageGetOpaque(page)->count = out;
			((PageHeader) page)->pd_lower = (char *) &entries[out] - (char *) page;
			GenericXLogFinish(state);
		}
		else
			GenericXLogAbort(state);
		blkno = EytzPageGetOpaque(BufferGetPage(buf))->next;
		UnlockReleaseBuffer(buf);
		vacuum_delay_point();
	}

	if (removed_layout + removed_pending > 0)
	{
		EytzMetaPage m;

		metabuf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		m = EytzPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		m->ndead += removed_layout;
		m->npending -= removed_pending;
		GenericXLogFinish(state);
		UnlockReleaseBuffer(metabuf);
	}
	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);

	stats->tuples_removed += removed_layout + removed_pending;
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
	if (meta.npending > 0 || meta.ndead > 0)
	{
		eytz_merge(index, true);
		eytz_read_meta(index, &meta);
	}
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_pages = RelationGetNumberOfBlocks(index);
	stats->num_index_tuples = meta.nentries - meta.ndead + meta.npending;
	stats->estimated_count = false;
	return stats;
}
