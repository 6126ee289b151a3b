/*
 * eytzsearch.c
 *		CPU search of an eytzgpu index through the buffer manager, a chunk of
 *		TIDs at a time.
 *
 * A key range [lo, hi] is answered with the per-level range scan of the
 * paper's section 5: follow the lower-bound search path of lo from the root;
 * on every level, the matching entries are the run that starts at the first
 * key >= lo of the node on the path and ends before the first key > hi.
 * The search is a cursor over (range, level, position in the level's run),
 * then over the pending list page by page, so a caller takes as many TIDs
 * as it wants (LIMIT stops early) and memory stays bounded whatever the
 * number of matches.
 *
 * The metapage is read once, at the start: the region and pending list of
 * that generation stay readable until the search's transaction ends, since
 * merges only recycle pages no running transaction may read (eytzpage.c).
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "eytzgpu.h"

struct EytzSearch
{
	Relation	index;
	EytzMetaPageData meta;
	EytzRange  *ranges;
	int			nranges;
	EytzRegionReader region;
	uint64		level_end[64];	/* one past each level's last slot */

	/* layout cursor */
	int			range;			/* current range; nranges when done */
	uint32		level;			/* current level of the range's descent */
	uint64		node;			/* first slot of the path's node on level */
	uint64		pos;			/* next slot of the level's run to emit */
	bool		in_run;			/* pos is valid (the level's run has started) */
	uint64		lb;				/* the path's bounds on the node's keys */
	uint64		ub;
	uint64		run_prev;		/* last key of the run emitted so far */

	/* pending list cursor: whole pages, so a page is never half emitted */
	EytzPendingReader pending;
	bool		pending_done;
	EytzPendingEntry *page;		/* the page read but not yet emitted */
	int			page_count;		/* -1: none */
};

static void
start_range(EytzSearch *s)
{
	s->level = 0;
	s->node = 0;
	s->in_run = false;
	s->lb = 0;
	s->ub = PG_UINT64_MAX;
}

static void
out_of_order(EytzSearch *s, uint64 slot)
{
	EYTZ_CORRUPT(s->index, s->meta.keys_start + slot / s->meta.keys_per_page,
				 "Key at slot " UINT64_FORMAT " is out of order with the keys on its search path.",
				 slot);
}

EytzSearch *
eytz_search_begin(Relation index, const EytzRange *ranges, int nranges)
{
	EytzSearch *s = palloc0(sizeof(EytzSearch));
	uint32		l;

	s->index = index;
	eytz_read_meta(index, &s->meta);
	s->ranges = palloc(sizeof(EytzRange) * Max(nranges, 1));
	memcpy(s->ranges, ranges, sizeof(EytzRange) * nranges);
	s->nranges = nranges;
	eytz_region_begin(&s->region, index, &s->meta, NULL);
	/* at most 64 levels: a level holds at least twice the entries above */
	for (l = 0; l < s->meta.levels; l++)
		s->level_end[l] = eytz_level_end(l, s->meta.fanout, s->meta.nentries);
	s->range = s->meta.nentries > 0 ? 0 : nranges;
	start_range(s);
	eytz_pending_begin(&s->pending, index, &s->meta);
	s->pending_done = nranges == 0;
	s->page = palloc(sizeof(EytzPendingEntry) * EYTZ_PENDING_PER_PAGE);
	s->page_count = -1;
	return s;
}

static inline bool
key_in_ranges(uint64 key, const EytzRange *ranges, int nranges)
{
	int			lo = 0,
				hi = nranges - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (key < ranges[mid].lo)
			hi = mid - 1;
		else if (key > ranges[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* Emit up to max TIDs of layout entries; returns how many */
static int
search_layout(EytzSearch *s, ItemPointerData *tids, int max)
{
	const EytzMetaPageData *m = &s->meta;
	uint32		k = m->fanout;
	int			got = 0;

	while (s->range < s->nranges && got < max)
	{
		uint64		lo = s->ranges[s->range].lo;
		uint64		hi = s->ranges[s->range].hi;
		uint64		level_end;

		if (!s->in_run && (s->level >= m->levels ||
						   s->node >= s->level_end[s->level]))
		{
			/* this range is done: the next one starts at the root */
			s->range++;
			start_range(s);
			CHECK_FOR_INTERRUPTS();
			continue;
		}
		level_end = s->level_end[s->level];
		if (!s->in_run)
		{
			uint64		keys[EYTZ_MAX_FANOUT];
			uint32		nkeys = Min(k - 1, level_end - s->node);
			uint32		i,
						j = nkeys;

			/*
			 * The node's keys must ascend within the bounds of the path: a
			 * damaged key would send the search into the wrong subtree.
			 */
			for (i = 0; i < nkeys; i++)
			{
				keys[i] = eytz_region_key(&s->region, s->node + i);
				if (keys[i] < (i > 0 ? keys[i - 1] : s->lb) || keys[i] > s->ub)
					out_of_order(s, s->node + i);
				if (j == nkeys && keys[i] >= lo)
					j = i;
			}
			if (j > 0)
				s->lb = keys[j - 1];
			if (j < nkeys)
				s->ub = keys[j];
			s->pos = s->node + j;
			s->run_prev = lo;
			s->in_run = true;
			/* the child to descend to once this level's run is emitted */
			s->node = eytz_child(s->node, j, k);
		}
		while (got < max && s->pos < level_end)
		{
			uint64		key = eytz_region_key(&s->region, s->pos);

			if (key > hi)
				break;
			if (key < s->run_prev)
				out_of_order(s, s->pos);
			s->run_prev = key;
			if (eytz_region_tid(&s->region, s->pos, &tids[got]))
				got++;
			s->pos++;
		}
		if (got < max)
		{
			/* the run ended: next level */
			s->level++;
			s->in_run = false;
		}
	}
	eytz_region_release(&s->region);
	return got;
}

/* Emit whole pending pages' matches while they fit in max */
static int
search_pending(EytzSearch *s, ItemPointerData *tids, int max)
{
	int			got = 0;

	while (!s->pending_done)
	{
		int			i,
					nmatch = 0;

		if (s->page_count < 0)
		{
			BlockNumber blkno;

			s->page_count = eytz_pending_next(&s->pending, s->page, &blkno);
			if (s->page_count < 0)
			{
				s->pending_done = true;
				break;
			}
			/* keep only the matches, so a page needs room for those only */
			for (i = 0; i < s->page_count; i++)
				if (key_in_ranges(s->page[i].key, s->ranges, s->nranges))
					s->page[nmatch++] = s->page[i];
			s->page_count = nmatch;
		}
		if (s->page_count > max - got)
			break;
		for (i = 0; i < s->page_count; i++)
			tids[got++] = s->page[i].tid;
		s->page_count = -1;
		CHECK_FOR_INTERRUPTS();
	}
	return got;
}

/*
 * Up to max (>= EYTZ_PENDING_PER_PAGE) more TIDs of the index within the
 * ranges, in no particular order; 0 when there are no more.
 */
int
eytz_search_next(EytzSearch *s, ItemPointerData *tids, int max)
{
	int			got;

	Assert(max >= (int) EYTZ_PENDING_PER_PAGE);
	got = search_layout(s, tids, max);
	if (got < max)
		got += search_pending(s, tids + got, max - got);
	return got;
}

void
eytz_search_end(EytzSearch *s)
{
	eytz_region_release(&s->region);
	pfree(s->ranges);
	pfree(s->page);
	pfree(s);
}
