/*
 * eytzinsert.c
 *		aminsert for eytzgpu: new entries go to the pending list.
 *
 * The Eytzinger layout is static.  An inserted (key, TID), with its
 * included values if the index has INCLUDE columns, is appended to the
 * pending list (WAL-logged with GenericXLog); scans search the list too.
 * When it reaches the index's pending_limit the inserting backend merges it
 * into a new layout, unless another backend is doing so, or this
 * transaction merged the index already while others may read it (see
 * eytz_merge()).
 *
 * Inserts hold a share lock on the metapage's heavyweight page lock while
 * appending; a merge takes it exclusively, so no entry is appended to a list
 * that is being merged away.
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "eytzinclude.h"

/*
 * Append one entry, with the included values (values and isnull of the
 * index's INCLUDE columns, unused without); the caller holds the metapage
 * page lock in share mode.
 * Returns whether a merge is due: the list has just reached the pending
 * limit, or is past it and has just grown by a page, so that a transaction
 * that cannot merge (eytz_merge() says when) tries again once per page, not
 * at every row.  The metapage and the tail page are WAL-logged as deltas
 * (a new page as a whole): a few dozen bytes per entry.
 */
bool
eytz_pending_append(Relation index, uint64 key, ItemPointer tid,
					const Datum *values, const bool *isnull)
{
	Buffer		metabuf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
	Buffer		tailbuf = InvalidBuffer;
	Buffer		newbuf = InvalidBuffer;
	GenericXLogState *state;
	EytzMetaPage meta;
	Page		page;
	EytzPageOpaque opaque;
	char	   *entry;
	int			ncols = eytz_include_count(index);
	Size		size = eytz_pending_entry_size(ncols);
	bool		due;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = EytzPageGetMeta(BufferGetPage(metabuf));

	if (meta->pending_tail != InvalidBlockNumber)
	{
		Page		tail;

		tailbuf = ReadBuffer(index, meta->pending_tail);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		tail = BufferGetPage(tailbuf);
		/* never append into a page that is not the list's last page */
		eytz_check_page(index, meta, tail, meta->pending_tail, EYTZ_PAGE_PENDING, 0);
		if (EytzPageGetOpaque(tail)->next != InvalidBlockNumber)
			EYTZ_CORRUPT(index, meta->pending_tail,
						 "The pending list's tail links to block %u.",
						 EytzPageGetOpaque(tail)->next);
		if (EytzPageGetOpaque(tail)->count >= eytz_pending_fill(ncols))
			newbuf = eytz_new_buffer(index, BufferGetPage(metabuf));
	}
	else
		newbuf = eytz_new_buffer(index, BufferGetPage(metabuf));

	state = GenericXLogStart(index);
	meta = EytzPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	if (BufferIsValid(newbuf))
	{
		page = GenericXLogRegisterBuffer(state, newbuf, GENERIC_XLOG_FULL_IMAGE);
		eytz_init_page(page, EYTZ_PAGE_PENDING);
		if (BufferIsValid(tailbuf))
		{
			Page		tail = GenericXLogRegisterBuffer(state, tailbuf, 0);

			EytzPageGetOpaque(tail)->next = BufferGetBlockNumber(newbuf);
		}
		else
			meta->pending_head = BufferGetBlockNumber(newbuf);
		meta->pending_tail = BufferGetBlockNumber(newbuf);
	}
	else
		page = GenericXLogRegisterBuffer(state, tailbuf, 0);

	opaque = EytzPageGetOpaque(page);
	entry = PageGetContents(page) + opaque->count * size;
	memset(entry, 0, size);
	((EytzPendingEntry *) entry)->key = key;
	((EytzPendingEntry *) entry)->tid = *tid;
	if (ncols > 0)
	{
		Datum	   *dst = (Datum *) (entry + sizeof(EytzPendingEntry));
		uint32		mask = 0;
		int			c;

		for (c = 0; c < ncols; c++)
		{
			dst[c] = isnull[c] ? (Datum) 0 : values[c];
			if (isnull[c])
				mask |= (uint32) 1 << c;
		}
		memcpy(&dst[ncols], &mask, sizeof(uint32));
	}
	opaque->count++;
	((PageHeader) page)->pd_lower = entry + size - (char *) page;
	meta->npending++;
	due = meta->npending == meta->pending_limit ||
		(meta->npending > meta->pending_limit && BufferIsValid(newbuf));
	GenericXLogFinish(state);

	if (BufferIsValid(newbuf))
		UnlockReleaseBuffer(newbuf);
	if (BufferIsValid(tailbuf))
		UnlockReleaseBuffer(tailbuf);
	UnlockReleaseBuffer(metabuf);
	return due;
}

bool
eytz_insert(Relation index, Datum *values, bool *isnull,
			ItemPointer ht_ctid, Relation heapRel,
			IndexUniqueCheck checkUnique, bool indexUnchanged,
			IndexInfo *indexInfo)
{
	const EytzKeyType *kt;
	bool		due;

	/* NULLs are not indexed: no operator of the opclasses matches them */
	if (isnull[0])
		return false;
	kt = eytz_index_key_type(index);

	LockPage(index, EYTZ_METAPAGE_BLKNO, ShareLock);
	due = eytz_pending_append(index, kt->encode(values[0]), ht_ctid,
							  values + 1, isnull + 1);
	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ShareLock);

	/* the executor holds the index open once (ExecOpenIndices) */
	if (due)
		eytz_merge(index, false, 1, NULL);
	return false;
}
