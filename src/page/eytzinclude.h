/*
 * eytzinclude.h
 *		INCLUDE columns of eytzgpu indexes: their place in the layout region
 *		and in pending entries, and the readers of their values.
 *
 * An index built with INCLUDE (c1, ..., cm) of fixed-width by-value types
 * stores, after the TID pages of its layout region, for each included column
 * c a run of value pages (EYTZ_PAGE_INCLUDE: the values' by-value bytes as
 * store_att_byval writes them, in slot order, 0 for a NULL) and a run of NULL
 * pages (EYTZ_PAGE_NULLS: bit slot % 8 of byte slot / 8, 1 = NULL).  Nothing
 * of this is in the metapage: the columns come from the tuple descriptor.
 * Pending entries carry m Datums and a NULL mask after (key, TID).
 */
#ifndef EYTZINCLUDE_H
#define EYTZINCLUDE_H

#include "access/tupmacs.h"

#include "eytzam.h"

/* bits of a NULL page */
#define EYTZ_NULLS_PER_PAGE ((uint64) EYTZ_PAGE_CAPACITY * 8)

extern void eytz_include_get(Relation index, EytzInclude *inc);
extern int	eytz_include_count(Relation index);
extern uint32 eytz_include_per_page(int width);
extern BlockNumber eytz_include_values_start(const EytzMetaPageData *meta,
											 const EytzInclude *inc, int col);
extern BlockNumber eytz_include_nulls_start(const EytzMetaPageData *meta,
											const EytzInclude *inc, int col);
extern uint32 eytz_region_npages(const EytzMetaPageData *meta,
								 const EytzInclude *inc);
extern Size eytz_pending_entry_size(int ncols);
extern int	eytz_pending_per_page(int ncols);
extern int	eytz_pending_fill(int ncols);

/*
 * One array of a layout region: 0 the keys, 1 the TIDs, 2 + 2c the values
 * of included column c, 3 + 2c its NULL bitmap.
 */
typedef struct EytzRegionArray
{
	BlockNumber start;			/* first block */
	uint32		npages;
	uint64		per_page;		/* slots per page */
	int			width;			/* bytes per slot; 0: one bit per slot */
	uint16		flags;			/* EYTZ_PAGE_* */
} EytzRegionArray;

#define EYTZ_ARRAY_KEYS		0
#define EYTZ_ARRAY_TIDS		1
#define EYTZ_ARRAY_VALUES(c)	(2 + 2 * (c))
#define EYTZ_ARRAY_NULLS(c)		(3 + 2 * (c))

static inline int
eytz_region_narrays(const EytzInclude *inc)
{
	return 2 + 2 * inc->ncols;
}

extern void eytz_region_array(const EytzMetaPageData *meta, const EytzInclude *inc,
							  int a, EytzRegionArray *arr);
extern Size eytz_region_array_bytes(const EytzRegionArray *arr, uint64 n, uint32 p);

/*
 * A value's bytes in a value page, and back (inline: an index-only join
 * reads one per match)
 */
static inline void
eytz_include_store(char *dst, int width, Datum value)
{
	store_att_byval(dst, value, width);
}

static inline Datum
eytz_include_fetch(const char *src, int width)
{
	return fetch_att(src, true, width);
}

/* Whole column c of a generation: values (nentries * width bytes), nulls ((nentries + 7) / 8 bytes) */
extern void eytz_region_load_include(Relation index, const EytzMetaPageData *meta,
									 const EytzInclude *inc,
									 BufferAccessStrategy strategy, int col,
									 void *values, uint8 *nulls);
/* One slot's included values, random access (one value and NULL page pinned per column) */
extern void eytz_region_include(EytzRegionReader *r, uint64 slot, Datum *values,
								bool *isnull);

/*
 * A generation's pending entries with their included values: values[i * m + c],
 * isnull likewise, in the same order as the entries eytz_read_pending
 * returns (NULL outputs when m = 0)
 */
extern void eytz_read_pending_include(Relation index, const EytzMetaPageData *meta,
									  EytzPendingEntry **entries, Datum **values,
									  bool **isnull, uint64 *n);
/* eytz_read_pending() and eytz_read_pending_include() in one */
extern void eytz_read_pending_all(Relation index, const EytzMetaPageData *meta,
								  EytzPendingEntry **entries, Datum **values,
								  bool **isnull, uint64 *n, BlockNumber **blocks,
								  int *nblocks);
/* eytz_pending_next() with the included values (room for a page's worth) */
extern int	eytz_pending_next_include(EytzPendingReader *pr, EytzPendingEntry *entries,
									  Datum *values, bool *isnull,
									  BlockNumber *blkno);
/* The included values of the entry eytz_sorted_next() returned last */
extern void eytz_sorted_include(EytzSortedReader *r, Datum *values, bool *isnull);

/*
 * Included values of the rows of a build or a merge, by row number (the
 * order they were added in): per column the value bytes and a NULL bitmap.
 */
struct EytzRowValues
{
	EytzInclude inc;
	uint64		n;
	uint64		cap;
	char	   *values[EYTZ_MAX_INCLUDE];
	uint8	   *nulls[EYTZ_MAX_INCLUDE];
};

extern Size eytz_include_row_bytes(const EytzInclude *inc);
extern void eytz_rows_init(EytzRowValues *rv, const EytzInclude *inc);
extern void eytz_rows_add(EytzRowValues *rv, const Datum *values, const bool *isnull);
extern void eytz_rows_get(const EytzRowValues *rv, uint64 row, Datum *values,
						  bool *isnull);
extern void eytz_rows_free(EytzRowValues *rv);

#endif							/* EYTZINCLUDE_H */
