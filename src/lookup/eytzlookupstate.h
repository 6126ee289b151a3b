/*
 * eytzlookupstate.h
 *		The lookup seam's state (EytzLookup, opaque to its callers in
 *		eytzlookup.h), shared by the seam's files: the batches and chunks
 *		(eytzlookup.c) and the views (eytzlookupview.c).
 */
#ifndef EYTZLOOKUPSTATE_H
#define EYTZLOOKUPSTATE_H

#include "postgres.h"

#include "eytzdevice.h"
#include "eytzimage.h"
#include "eytzlookup.h"
#include "eytzservice.h"

typedef enum BatchPhase
{
	PHASE_LAYOUT,
	PHASE_PENDING,
	PHASE_DONE
} BatchPhase;

/* The batch's first chunk, started ahead by eytz_lookup_start */
typedef enum AheadState
{
	AHEAD_NONE,
	AHEAD_GPU,					/* in flight on the GPU or the service */
	AHEAD_CHUNK					/* a CPU view's, in out[0..ahead_n) */
} AheadState;

/* A query walked alone through the pages, over as many chunks as it takes */
typedef struct Walk
{
	bool		active;
	uint32		row;			/* the query's batch row */
	EytzRangeCursor cursor;		/* over the view's generation */
} Walk;

/* bits of the filter that tells most layout TIDs they are not pending */
#define PENDING_FILTER_BITS 65536

struct EytzLookup
{
	Relation	index;
	MemoryContext cxt;
	MemoryContextCallback unpin_cb;
	double		expected_keys;
	double		other_pages;	/* the scan's other relations' pages (eytz_lookup_begin) */
	uint64		keys_seen;

	/* the view */
	EytzViewKind	kind;
	bool		pinned;
	EytzMetaPageData meta;
	EytzImage  *image;
	EytzGpuEntry *gpu;
	EytzServiceView *svc;		/* the GPU view through the service */
	EytzPendingEntry *pending;	/* sorted by key */
	uint64		npending;
	uint64	   *pending_tids;	/* sorted */
	uint64	   *pending_filter; /* PENDING_FILTER_BITS bits of TID hashes */

	/* the batch */
	const uint64 *lo;
	const uint64 *hi;
	const uint32 *rows;
	uint32		nq;
	uint32		sorted_prefix;	/* out[0..this) came sorted from the GPU */
	BatchPhase	phase;
	bool		points;			/* every query is a point: lo == hi */
	bool		rows_in_order;	/* points, rows increasing: see
								 * eytz_match_sort */
	EytzMatch  *order;			/* queries by low key (CPU views) */
	uint64	   *packed;			/* or, points within 2^32 of each other,
								 * (key - lo_min << 32 | row) by key, in
								 * order's memory */
	uint64		lo_min;			/* the least and greatest low key */
	uint64		lo_max;
	uint32		norder;
	uint32		order_cap;		/* order has twice this: its sort scratch */
	uint32		next;			/* next query: in order, or by index (GPU) */
	uint32		pq;				/* pending phase: query */
	uint64		ppos;			/* and its next entry, or PG_UINT64_MAX */
	Walk		walk;

	/* the chunk */
	EytzMatch  *out;
	EytzMatch  *tmp;
	uint32		cap;
	AheadState	ahead;
	uint32		ahead_max;		/* the max it was started with */
	uint32		ahead_n;
	EytzGpuJob	job;			/* AHEAD_GPU on the backend's own GPU copy */

	/* index-only joins: the matches' values (eytz_lookup_want_columns) */
	bool		want;
	bool		want_keys;		/* eytz_lookup_want_columns' keys */
	EytzStage	stage;			/* by position as collected */
	EytzChunkColumns cols;		/* the stage, as the caller reads it */
	uint64		chunk_generation;	/* what the chunk's view had read */
	uint64		chunk_ndead;
	bool		heap_all_visible;	/* eytz_lookup_heap_all_visible */
	uint32		nout;			/* the chunk's matches */

	EytzLookupStats stats;
};

/* eytzlookupview.c */

/*
 * May the pinned pages answer?  Not a scan that returns keys or included
 * values (eytz_lookup_want_columns): the pages give keys, but such a scan
 * is one an image serves at memory speed, and the pinned pages would put
 * off its load (bench/am_results.md, "array scans on the pinned pages")
 */
#define EYTZ_LOOKUP_PAGES_ANSWER(lk) (!(lk)->want || !(lk)->want_keys)

/*
 * Pin a view of kind "want" (or the CPU image when the GPU cannot take the
 * index: lk->stats.cpu_reason says why) and the pending list, under the
 * generation the metapage names now
 */
extern void eytz_lookup_pin_view(EytzLookup *lk, EytzViewKind want);

/* The view that nkeys keys call for, and whether the GPU may be one */
extern EytzViewKind eytz_lookup_choose_view(EytzLookup *lk, double nkeys);

/* Before a batch: a pages view may move to a better view or a newer generation */
extern void eytz_lookup_review_view(EytzLookup *lk);

/* Release what the view pins; the _cb form is the context's reset callback */
extern void eytz_lookup_unpin_view(EytzLookup *lk);
extern void eytz_lookup_unpin_view_cb(void *arg);

/* Drop the layout matches m[from..n) whose TID a pending entry answers */
extern uint32 eytz_lookup_drop_pending_twins(EytzLookup *lk, EytzMatch *m,
											 uint32 from, uint32 n);

#endif							/* EYTZLOOKUPSTATE_H */
