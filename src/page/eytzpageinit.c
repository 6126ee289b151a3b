/*
 * eytzpageinit.c
 *		Page and layout helpers of the eytzgpu access method.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/reloptions.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "eytzam.h"

/*
 * Fan-out (2: EBS) and pending limit of an index about to hold n entries:
 * 'auto' takes EBS while keys and TIDs fit in EYTZ_AUTO_EBS_MAX_BYTES (eytzam.h).
 *
 * A merge rewrites the whole layout, so with a fixed pending limit its cost
 * per insert grows with the index.  Unless set, the limit grows with it
 * instead (a merge per n / 8 inserts: about 8 entries rewritten per insert),
 * up to a cap that keeps the pending list, which every scan reads through,
 * to 512 pages.  A limit set with WITH / ALTER INDEX is kept as it is, even
 * when it equals the automatic floor.
 */
void
eytz_choose_layout(Relation index, uint64 n, int key_width,
				   int *fanout, int *pending_limit)
{
	EytzOptions *opts = (EytzOptions *) index->rd_options;
	int			lay = opts ? opts->layout : EYTZ_LAYOUT_AUTO;

	if (lay == EYTZ_LAYOUT_AUTO)
		lay = (n * (key_width + sizeof(ItemPointerData)) <= EYTZ_AUTO_EBS_MAX_BYTES)
			? EYTZ_LAYOUT_EBS : EYTZ_LAYOUT_EKS;
	*fanout = lay == EYTZ_LAYOUT_EBS ? 2 : (opts ? opts->fanout : EYTZ_DEFAULT_FANOUT);
	*pending_limit = opts ? opts->pending_limit : EYTZ_PENDING_LIMIT_AUTO;
	if (*pending_limit == EYTZ_PENDING_LIMIT_AUTO)
		*pending_limit = (int) Min(Max(n / 8, (uint64) EYTZ_DEFAULT_PENDING_LIMIT),
								   (uint64) EYTZ_PENDING_LIMIT_CAP);
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
eytz_init_metapage(Page page, int key_width, int fanout, int pending_limit)
{
	EytzMetaPage meta;

	eytz_init_page(page, EYTZ_PAGE_META);
	meta = EytzPageGetMeta(page);
	memset(meta, 0, sizeof(EytzMetaPageData));
	meta->magic = EYTZ_MAGIC;
	meta->version = EYTZ_VERSION;
	meta->key_width = key_width;
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
