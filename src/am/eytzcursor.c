/*
 * eytzcursor.c
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
 *
 * For index-only scans the search also gives each match's key and included
 * values: a layout match's from its slot, a pending entry's from the page.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "eytzinclude.h"

struct EytzSearch
{
	Relation	index;
	EytzMetaPageData meta;
	EytzRange  *ranges;
	int			nranges;
	int			range;			/* current range; nranges when done */
	EytzRangeCursor cursor;		/* over the current range */

	/* pending list cursor: whole pages, so a page is never half emitted */
	EytzPendingReader pending;
	bool		pending_done;
	EytzPendingEntry *page;		/* the page read but not yet emitted */
	Datum	   *page_values;	/* its entries' included values */
	bool	   *page_nulls;
	int			page_count;		/* -1: none */
	int			ncols;			/* included columns */
};

/* Set up c to read the layout of the generation meta describes */
void
eytz_cursor_begin(EytzRangeCursor *c, Relation index,
				  const EytzMetaPageData *meta)
{
	uint32		l;

	eytz_region_begin(&c->region, index, meta, NULL);
	/* at most 64 levels: a level holds at least twice the entries above */
	for (l = 0; l < meta->levels; l++)
		c->level_end[l] = eytz_level_end(l, meta->fanout, meta->nentries);
	eytz_cursor_start(c, 1, 0);
	c->level = meta->levels;	/* no range yet */
}

/* Start the range [lo, hi] at the root */
void
eytz_cursor_start(EytzRangeCursor *c, uint64 lo, uint64 hi)
{
	c->lo = lo;
	c->hi = hi;
	c->level = 0;
	c->node = 0;
	c->in_run = false;
	c->lb = 0;
	c->ub = PG_UINT64_MAX;
}

static void
out_of_order(EytzRangeCursor *c, uint64 slot)
{
	EYTZ_CORRUPT(c->region.index,
				 c->region.meta.keys_start + slot / c->region.meta.keys_per_page,
				 "Key at slot " UINT64_FORMAT " is out of order with the keys on its search path.",
				 slot);
}

/*
 * Up to max more TIDs of live entries of the range, and their slots (if
 * slots is not NULL: for eytz_region_key() and eytz_region_include());
 * fewer than max when the range is done.  The caller releases the region's
 * buffers (eytz_region_release) before it returns to the executor.
 */
int
eytz_cursor_next_slots(EytzRangeCursor *c, ItemPointerData *tids, uint64 *slots,
					   int max)
{
	const EytzMetaPageData *m = &c->region.meta;
	uint32		k = m->fanout;
	int			got = 0;

	while (got < max)
	{
		uint64		level_end;

		if (!c->in_run && (c->level >= m->levels ||
						   c->node >= c->level_end[c->level]))
			break;				/* the range is done */
		level_end = c->level_end[c->level];
		if (!c->in_run)
		{
			uint64		keys[EYTZ_MAX_FANOUT];
			uint32		nkeys = Min(k - 1, level_end - c->node);
			uint32		i,
						j = nkeys;

			/*
			 * The node's keys must ascend within the bounds of the path: a
			 * damaged key would send the search into the wrong subtree.
			 */
			for (i = 0; i < nkeys; i++)
			{
				keys[i] = eytz_region_key(&c->region, c->node + i);
				if (keys[i] < (i > 0 ? keys[i - 1] : c->lb) || keys[i] > c->ub)
					out_of_order(c, c->node + i);
				if (j == nkeys && keys[i] >= c->lo)
					j = i;
			}
			if (j > 0)
				c->lb = keys[j - 1];
			if (j < nkeys)
				c->ub = keys[j];
			c->pos = c->node + j;
			c->run_prev = c->lo;
			c->in_run = true;
			/* the child to descend to once this level's run is emitted */
			c->node = eytz_child(c->node, j, k);
		}
		while (got < max && c->pos < level_end)
		{
			uint64		key = eytz_region_key(&c->region, c->pos);

			if (key > c->hi)
				break;
			if (key < c->run_prev)
				out_of_order(c, c->pos);
			c->run_prev = key;
			if (eytz_region_tid(&c->region, c->pos, &tids[got]))
			{
				if (slots)
					slots[got] = c->pos;
				got++;
			}
			c->pos++;
		}
		if (got < max)
		{
			/* the run ended: next level */
			c->level++;
			c->in_run = false;
		}
	}
	return got;
}

/* Up to max more TIDs of live entries of the range (eytz_cursor_next_slots()) */
int
eytz_cursor_next(EytzRangeCursor *c, ItemPointerData *tids, int max)
{
	return eytz_cursor_next_slots(c, tids, NULL, max);
}

EytzSearch *
eytz_search_begin(Relation index, const EytzRange *ranges, int nranges)
{
	EytzSearch *s = palloc0(sizeof(EytzSearch));

	s->index = index;
	eytz_read_meta(index, &s->meta);
	s->ranges = palloc_extended(sizeof(EytzRange) * Max(nranges, 1),
								 MCXT_ALLOC_HUGE);
	memcpy(s->ranges, ranges, sizeof(EytzRange) * nranges);
	s->nranges = nranges;
	eytz_cursor_begin(&s->cursor, index, &s->meta);
	s->range = s->meta.nentries > 0 ? 0 : nranges;
	if (s->range < nranges)
		eytz_cursor_start(&s->cursor, ranges[0].lo, ranges[0].hi);
	eytz_pending_begin(&s->pending, index, &s->meta);
	s->pending_done = nranges == 0;
	s->page = palloc(sizeof(EytzPendingEntry) * EYTZ_PENDING_PER_PAGE);
	s->ncols = eytz_include_count(index);
	s->page_values = palloc(sizeof(Datum) * EYTZ_PENDING_PER_PAGE * Max(s->ncols, 1));
	s->page_nulls = palloc(sizeof(bool) * EYTZ_PENDING_PER_PAGE * Max(s->ncols, 1));
	s->page_count = -1;
	return s;
}

/* Is key in one of the sorted, disjoint ranges?  (binary search) */
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

/*
 * Emit up to max TIDs of layout entries, range after range, with their keys
 * and included values if keys is not NULL; returns how many
 */
static int
search_layout(EytzSearch *s, ItemPointerData *tids, uint64 *keys,
			  Datum *values, bool *isnull, int max)
{
	int			got = 0;

	while (s->range < s->nranges && got < max)
	{
		int			want = max - got;
		int			n = eytz_cursor_next_slots(&s->cursor, tids + got,
											   keys ? keys + got : NULL, want);
		int			i;

		/* keys holds the slots so far: their keys and values replace them */
		for (i = got; keys && i < got + n; i++)
		{
			uint64		slot = keys[i];

			keys[i] = eytz_region_key(&s->cursor.region, slot);
			if (s->ncols > 0)
				eytz_region_include(&s->cursor.region, slot,
									values + (Size) i * s->ncols,
									isnull + (Size) i * s->ncols);
		}
		got += n;
		if (n < want && ++s->range < s->nranges)
		{
			/* this range is done: the next one starts at the root */
			eytz_cursor_start(&s->cursor, s->ranges[s->range].lo,
							  s->ranges[s->range].hi);
			CHECK_FOR_INTERRUPTS();
		}
	}
	eytz_region_release(&s->cursor.region);
	return got;
}

/* Emit whole pending pages' matches while they fit in max (as search_layout()) */
static int
search_pending(EytzSearch *s, ItemPointerData *tids, uint64 *keys,
			   Datum *values, bool *isnull, int max)
{
	int			m = s->ncols;

	int			got = 0;

	while (!s->pending_done)
	{
		int			i,
					nmatch = 0;

		if (s->page_count < 0)
		{
			BlockNumber blkno;

			s->page_count = eytz_pending_next_include(&s->pending, s->page,
													  s->page_values,
													  s->page_nulls, &blkno);
			if (s->page_count < 0)
			{
				s->pending_done = true;
				break;
			}
			/* keep only the matches, so a page needs room for those only */
			for (i = 0; i < s->page_count; i++)
				if (key_in_ranges(s->page[i].key, s->ranges, s->nranges))
				{
					memmove(&s->page_values[nmatch * m], &s->page_values[i * m],
							sizeof(Datum) * m);
					memmove(&s->page_nulls[nmatch * m], &s->page_nulls[i * m],
							sizeof(bool) * m);
					s->page[nmatch++] = s->page[i];
				}
			s->page_count = nmatch;
		}
		if (s->page_count > max - got)
			break;
		if (keys && m > 0)
		{
			memcpy(&values[(Size) got * m], s->page_values,
				   sizeof(Datum) * m * s->page_count);
			memcpy(&isnull[(Size) got * m], s->page_nulls,
				   sizeof(bool) * m * s->page_count);
		}
		for (i = 0; i < s->page_count; i++)
		{
			if (keys)
				keys[got] = s->page[i].key;
			tids[got++] = s->page[i].tid;
		}
		s->page_count = -1;
		CHECK_FOR_INTERRUPTS();
	}
	return got;
}

/*
 * Up to max (>= EYTZ_PENDING_PER_PAGE) more TIDs of the index within the
 * ranges, in no particular order; 0 when there are no more.  If keys is not
 * NULL, also each match's key and included values (values[i * m + c],
 * isnull likewise; room for max * m).
 */
int
eytz_search_next_values(EytzSearch *s, ItemPointerData *tids, uint64 *keys,
						Datum *values, bool *isnull, int max)
{
	int			got;
	Size		m = s->ncols;

	Assert(max >= (int) EYTZ_PENDING_PER_PAGE);
	got = search_layout(s, tids, keys, values, isnull, max);
	if (got < max)
		got += search_pending(s, tids + got, keys ? keys + got : NULL,
							  values ? values + got * m : NULL,
							  isnull ? isnull + got * m : NULL, max - got);
	return got;
}

int
eytz_search_next(EytzSearch *s, ItemPointerData *tids, int max)
{
	return eytz_search_next_values(s, tids, NULL, NULL, NULL, max);
}

void
eytz_search_end(EytzSearch *s)
{
	eytz_region_release(&s->cursor.region);
	pfree(s->ranges);
	pfree(s->page);
	pfree(s->page_values);
	pfree(s->page_nulls);
	pfree(s);
}
