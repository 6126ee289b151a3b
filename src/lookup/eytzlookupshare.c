/*
 * eytzlookupshare.c
 *		The lookup seam's part in parallel joins: the workers take up the
 *		leader's cached image of an index instead of each loading its own.
 *
 * Where a worker can search it in place (eytz_image_in_place) the leader
 * passes the handle of its kept image (eytz_image_pin_kept), pinned until
 * the query ends: no copy per query.  Else (no room for it in the main
 * shared memory, small pages) the leader copies its image into the query's
 * shared memory and each worker copies it into its own.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "eytzimage.h"
#include "eytzlookup.h"

struct EytzLookupShare
{
	EytzMetaPageData meta;		/* the generation it shares */
	EytzImage  *kept;			/* its kept image, pinned for the query */
	MemoryContextCallback kept_cb;	/* which unpins it */
	Size		copy_bytes;		/* or the bytes of the copy, or 0 */
	uint64		kept_queries;	/* the queries the kept image served */
	bool		copied;			/* it copied its image instead */
};

/* The end of the query (or its error) unpins the kept image */
static void
kept_unpin(void *arg)
{
	EytzLookupShare *share = (EytzLookupShare *) arg;

	if (share->kept)
		eytz_image_release(share->kept);
	share->kept = NULL;
}

Size
eytz_lookup_share_estimate(EytzLookupShare **sharep, Relation index,
						   double other_pages, MemoryContext query_cxt)
{
	EytzLookupShare *share = *sharep;

	if (share == NULL)
		share = *sharep = MemoryContextAllocZero(query_cxt, sizeof(EytzLookupShare));
	eytz_read_meta(index, &share->meta);
	share->copy_bytes = 0;
	/* a Gather run again after its shutdown sets up its shared memory anew */
	kept_unpin(share);
	/* workers that the service answers need no image */
	if (eytz_lookup_service_answers() ||
		!eytz_image_resident(index, share->meta.generation))
		return 0;
	/* pinned until the query ends: the workers attach it after this */
	share->kept = eytz_image_pin_kept(index, &share->meta);
	if (share->kept && share->kept_cb.func == NULL)
	{
		share->kept_cb.func = kept_unpin;
		share->kept_cb.arg = share;
		MemoryContextRegisterResetCallback(query_cxt, &share->kept_cb);
	}
	if (share->kept == NULL)
		share->copy_bytes = eytz_image_shared_size(index, &share->meta, other_pages);
	return share->copy_bytes;
}

void
eytz_lookup_share_init(EytzLookupShare *share, Relation index,
					   EytzLookupShared *shared, void *copy)
{
	memset(shared, 0, sizeof(EytzLookupShared));
	if (share == NULL)
		return;
	if (share->kept)
	{
		shared->has_image = true;
		shared->image_kept = true;
		shared->image_handle = dsm_segment_handle(share->kept->seg);
		shared->image_meta = share->kept->img.meta;
		share->kept_queries = ++share->kept->kept_queries;
	}
	else if (share->copy_bytes > 0)
	{
		shared->has_image = eytz_image_export(index, &share->meta, copy,
											  &shared->image_meta);
		share->copied = shared->has_image;
	}
}

void
eytz_lookup_share_report(const EytzLookupShare *share, uint64 *kept_queries,
						 bool *copied)
{
	*kept_queries = share ? share->kept_queries : 0;
	*copied = share ? share->copied : false;
}

/*
 * A worker that cannot attach the leader's kept image (gone: not while the
 * leader's query pins it) loads its own, as without a shared image
 */
EytzShareKind
eytz_lookup_attach(Relation index, const EytzLookupShared *shared, void *copy)
{
	if (!shared->has_image)
		return EYTZ_SHARE_NONE;
	if (shared->image_kept)
		return eytz_image_attach_kept(index, &shared->image_meta,
									  shared->image_handle) ?
			EYTZ_SHARE_IN_PLACE : EYTZ_SHARE_NONE;
	eytz_image_import(index, &shared->image_meta, copy);
	return EYTZ_SHARE_COPIED;
}
