/*
 * eytzutils.c
 *		Page and layout helpers of the eytzgpu access method.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/reloptions.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "eytzgpu.h"

/*
 * Layout, fan-out and pending limit of an index about to hold n entries:
 * 'auto' takes EBS while keys and TIDs fit in a GPU's L2 (the paper's rule).
 */
void
eytz_choose_layout(Relation index, uint64 n, int key_width,
				   int *layout, int *fanout, int *pending_limit)
{
	EytzOptions *opts = (EytzOptions *) index->rd_options;
	int			lay = opts ? opts->layout : EYTZ_LAYOUT_AUTO;

	if (lay == EYTZ_LAYOUT_AUTO)
		lay = (n * (key_width + sizeof(ItemPointerData)) <= EYTZ_AUTO_EBS_MAX_BYTES)
			? EYTZ_LAYOUT_EBS : EYTZ_LAYOUT_EKS;
	*layout = lay;
	*fanout = lay == EYTZ_LAYOUT_EBS ? 2 : (opts ? opts->fanout : EYTZ_DEFAULT_FANOUT);
	*pending_limit = opts ? opts->pending_limit : EYTZ_DEFAULT_PENDING_LIMIT;
}

const char *
eytz_layout_name(int layout)
{
	return layout == EYTZ_LAYOUT_EBS ? "ebs" : "eks";
}

/* keys per page: as many as fit, rounded down to whole nodes */
int
eytz_keys_per_page(int key_width, int fanout)
{
	int			fit = EYTZ_PAGE_CAPACITY / key_width;

	return fit - fit % (fanout - 1);
}

void
eytz_init_page(Page page, uint16 flags)
{
	EytzPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(EytzPageOpaqueData));
	opaque = EytzPageGetOpaque(page);
	opaque->next = InvalidBlockNumber;
	opaque->count = 0;
	opaque->flags = flags;
	opaque->page_id = EYTZ_PAGE_ID;
}

void
eytz_init_metapage(Page page, int key_width, int layout, int fanout,
				   int pending_limit)
{
	EytzMetaPage meta;

	eytz_init_page(page, EYTZ_PAGE_META);
	meta = EytzPageGetMeta(page);
	memset(meta, 0, sizeof(EytzMetaPageData));
	meta->magic = EYTZ_MAGIC;
	meta->version = EYTZ_VERSION;
	meta->key_width = key_width;
	meta->layout = layout;
	meta->fanout = fanout;
	meta->keys_per_page = eytz_keys_per_page(key_width, fanout);
	meta->keys_start = InvalidBlockNumber;
	meta->tids_start = InvalidBlockNumber;
	meta->pending_head = InvalidBlockNumber;
	meta->pending_tail = InvalidBlockNumber;
	meta->pending_limit = pending_limit;
	/* let full-page images skip the unused part of the page */
	((PageHeader) page)->pd_lower = (char *) meta + sizeof(EytzMetaPageData) - (char *) page;
}

/* Copy of the metapage contents, checked */
void
eytz_read_meta(Relation index, EytzMetaPageData *meta)
{
	Buffer		buf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
	Page		page;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	memcpy(meta, EytzPageGetMeta(page), sizeof(EytzMetaPageData));
	UnlockReleaseBuffer(buf);
	if (meta->magic != EYTZ_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not an eytzgpu index",
						RelationGetRelationName(index))));
	if (meta->version != EYTZ_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has eytzgpu format version %u, expected %u",
						RelationGetRelationName(index), meta->version, EYTZ_VERSION),
				 errhint("REINDEX the index.")));
}

/* Is blkno one of the current layout region's pages? */
bool
eytz_block_in_region(const EytzMetaPageData *meta, BlockNumber blkno)
{
	return meta->keys_start != InvalidBlockNumber &&
		blkno >= meta->keys_start &&
		blkno < meta->tids_start + meta->ntidpages;
}

/*
 * A new page for the pending list, returned exclusively locked: a free page
 * from the free space map, or a new block.  The map is only a hint (it is
 * not WAL-logged), so a page it offers is taken only if it is outside the
 * current layout region and not a live metapage or pending page.
 */
Buffer
eytz_new_buffer(Relation index, const EytzMetaPageData *meta)
{
	Buffer		buf;
	bool		needLock;

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		if (blkno == EYTZ_METAPAGE_BLKNO || eytz_block_in_region(meta, blkno))
			continue;
		buf = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buf))
		{
			Page		page = BufferGetPage(buf);

			if (PageIsNew(page) ||
				(EytzPageGetOpaque(page)->flags != EYTZ_PAGE_META &&
				 EytzPageGetOpaque(page)->flags != EYTZ_PAGE_PENDING))
				return buf;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}

	needLock = !RELATION_IS_LOCAL(index);
	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

char *
eytz_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case EYTZ_PHASE_LOAD:
			return "loading tuples";
		case EYTZ_PHASE_SORT:
			return "sorting keys";
		case EYTZ_PHASE_WRITE:
			return "writing Eytzinger layout";
		default:
			return NULL;
	}
}
