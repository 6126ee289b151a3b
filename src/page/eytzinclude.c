/*
 * eytzinclude.c
 *		INCLUDE columns of eytzgpu indexes: which types, where their pages lie
 *		in a layout region, the size of pending entries, and the row values
 *		of builds and merges (the format is described in eytzinclude.h).
 *
 * Included columns are fixed-width by-value types, stored as their by-value
 * bytes: an index-only scan or the batched join reads them back as Datums
 * without a type lookup, and the GPU copy holds them as plain arrays.
 */
#include "postgres.h"

#include "access/tupmacs.h"
#include "catalog/pg_type_d.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzinclude.h"

static bool
include_type_ok(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case OIDOID:
		case BOOLOID:
			return true;
		default:
			return false;
	}
}

/* The number of INCLUDE columns of an index */
int
eytz_include_count(Relation index)
{
	return RelationGetDescr(index)->natts -
		IndexRelationGetNumberOfKeyAttributes(index);
}

/*
 * The INCLUDE columns of an index (attributes 2..m+1), checked: a type that
 * is not stored (or too many columns) is an ERROR naming the column.
 */
void
eytz_include_get(Relation index, EytzInclude *inc)
{
	TupleDesc	desc = RelationGetDescr(index);
	int			nkey = IndexRelationGetNumberOfKeyAttributes(index);
	int			c;

	inc->ncols = desc->natts - nkey;
	if (inc->ncols > EYTZ_MAX_INCLUDE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("eytzgpu index \"%s\" has %d INCLUDE columns, at most %d are supported",
						RelationGetRelationName(index), inc->ncols, EYTZ_MAX_INCLUDE)));
	for (c = 0; c < inc->ncols; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, nkey + c);
		Oid			basetype = getBaseType(att->atttypid);	/* a domain is its base type */

		if (!include_type_ok(basetype) || !att->attbyval ||
			(att->attlen != 1 && att->attlen != 2 && att->attlen != 4 &&
			 att->attlen != 8))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("eytzgpu cannot include column \"%s\" of type %s",
							NameStr(att->attname), format_type_be(att->atttypid)),
					 errhint("INCLUDE columns of eytzgpu indexes may be int2, int4, int8, float4, float8, date, timestamp, timestamptz, oid or bool.")));
		inc->width[c] = att->attlen;
		inc->typid[c] = basetype;
	}
}

/* values of a column of width bytes per value page */
uint32
eytz_include_per_page(int width)
{
	return EYTZ_PAGE_CAPACITY / width;
}

/* pages of the value and NULL runs of column c for n entries */
static uint32
values_npages(uint64 n, const EytzInclude *inc, int c)
{
	uint32		per = eytz_include_per_page(inc->width[c]);

	return (n + per - 1) / per;
}

static uint32
nulls_npages(uint64 n)
{
	return (n + EYTZ_NULLS_PER_PAGE - 1) / EYTZ_NULLS_PER_PAGE;
}

/* First value page of column col; InvalidBlockNumber for an empty layout */
BlockNumber
eytz_include_values_start(const EytzMetaPageData *meta, const EytzInclude *inc,
						  int col)
{
	BlockNumber b;
	int			c;

	if (meta->nentries == 0)
		return InvalidBlockNumber;
	b = meta->tids_start + meta->ntidpages;
	for (c = 0; c < col; c++)
		b += values_npages(meta->nentries, inc, c) + nulls_npages(meta->nentries);
	return b;
}

/* First NULL page of column col; InvalidBlockNumber for an empty layout */
BlockNumber
eytz_include_nulls_start(const EytzMetaPageData *meta, const EytzInclude *inc,
						 int col)
{
	if (meta->nentries == 0)
		return InvalidBlockNumber;
	return eytz_include_values_start(meta, inc, col) +
		values_npages(meta->nentries, inc, col);
}

/* All pages of the layout region: keys, TIDs and the included columns */
uint32
eytz_region_npages(const EytzMetaPageData *meta, const EytzInclude *inc)
{
	if (meta->nentries == 0)
		return 0;
	return eytz_include_values_start(meta, inc, inc->ncols) - meta->keys_start;
}

/* Array a of the region meta describes (see EytzRegionArray) */
void
eytz_region_array(const EytzMetaPageData *meta, const EytzInclude *inc, int a,
				  EytzRegionArray *arr)
{
	uint64		n = meta->nentries;

	Assert(a >= 0 && a < eytz_region_narrays(inc));
	if (a == EYTZ_ARRAY_KEYS)
	{
		arr->start = meta->keys_start;
		arr->per_page = meta->keys_per_page;
		arr->width = meta->key_width;
		arr->flags = EYTZ_PAGE_KEYS;
	}
	else if (a == EYTZ_ARRAY_TIDS)
	{
		arr->start = meta->tids_start;
		arr->per_page = EYTZ_TIDS_PER_PAGE;
		arr->width = sizeof(ItemPointerData);
		arr->flags = EYTZ_PAGE_TIDS;
	}
	else if (a % 2 == 0)
	{
		int			c = (a - 2) / 2;

		arr->start = eytz_include_values_start(meta, inc, c);
		arr->per_page = eytz_include_per_page(inc->width[c]);
		arr->width = inc->width[c];
		arr->flags = EYTZ_PAGE_INCLUDE;
	}
	else
	{
		arr->start = eytz_include_nulls_start(meta, inc, (a - 3) / 2);
		arr->per_page = EYTZ_NULLS_PER_PAGE;
		arr->width = 0;
		arr->flags = EYTZ_PAGE_NULLS;
	}
	arr->npages = (n + arr->per_page - 1) / arr->per_page;
}

/* Bytes of entries on page p of an array of a region of n entries */
Size
eytz_region_array_bytes(const EytzRegionArray *arr, uint64 n, uint32 p)
{
	uint64		cnt = Min(arr->per_page, n - (uint64) p * arr->per_page);

	return arr->width > 0 ? cnt * arr->width : (cnt + 7) / 8;
}

/*
 * Bytes of a pending entry with ncols included columns: (key, TID), then
 * ncols Datums and a uint32 NULL mask, rounded up to 8; 16 without.
 */
Size
eytz_pending_entry_size(int ncols)
{
	if (ncols == 0)
		return sizeof(EytzPendingEntry);
	return TYPEALIGN(8, sizeof(EytzPendingEntry) + ncols * sizeof(Datum) +
					 sizeof(uint32));
}

int
eytz_pending_per_page(int ncols)
{
	return EYTZ_PAGE_CAPACITY / eytz_pending_entry_size(ncols);
}

/* Entries after which inserts start a new pending page: 2 kB of them */
int
eytz_pending_fill(int ncols)
{
	return Max(1, EYTZ_PENDING_FILL * sizeof(EytzPendingEntry) /
			   eytz_pending_entry_size(ncols));
}

/* bytes per row of EytzRowValues (for memory limits) */
Size
eytz_include_row_bytes(const EytzInclude *inc)
{
	Size		bytes = 0;
	int			c;

	for (c = 0; c < inc->ncols; c++)
		bytes += inc->width[c] + 1;
	return bytes;
}

void
eytz_rows_init(EytzRowValues *rv, const EytzInclude *inc)
{
	int			c;

	rv->inc = *inc;
	rv->n = 0;
	rv->cap = 1024;
	for (c = 0; c < inc->ncols; c++)
	{
		rv->values[c] = MemoryContextAllocHuge(CurrentMemoryContext,
											   rv->cap * inc->width[c]);
		rv->nulls[c] = MemoryContextAllocHuge(CurrentMemoryContext, rv->cap / 8);
	}
}

/* Append a row's included values */
void
eytz_rows_add(EytzRowValues *rv, const Datum *values, const bool *isnull)
{
	int			c;

	if (rv->n == rv->cap)
	{
		rv->cap *= 2;
		for (c = 0; c < rv->inc.ncols; c++)
		{
			rv->values[c] = repalloc_huge(rv->values[c], rv->cap * rv->inc.width[c]);
			rv->nulls[c] = repalloc_huge(rv->nulls[c], rv->cap / 8);
		}
	}
	for (c = 0; c < rv->inc.ncols; c++)
	{
		uint8	   *byte = &rv->nulls[c][rv->n / 8];
		uint8		bit = 1 << (rv->n % 8);

		eytz_include_store(rv->values[c] + rv->n * rv->inc.width[c],
						   rv->inc.width[c], isnull[c] ? (Datum) 0 : values[c]);
		*byte = isnull[c] ? (*byte | bit) : (*byte & ~bit);
	}
	rv->n++;
}

void
eytz_rows_get(const EytzRowValues *rv, uint64 row, Datum *values, bool *isnull)
{
	int			c;

	Assert(row < rv->n);
	for (c = 0; c < rv->inc.ncols; c++)
	{
		isnull[c] = (rv->nulls[c][row / 8] >> (row % 8)) & 1;
		values[c] = isnull[c] ? (Datum) 0 :
			eytz_include_fetch(rv->values[c] + row * rv->inc.width[c],
							   rv->inc.width[c]);
	}
}

void
eytz_rows_free(EytzRowValues *rv)
{
	int			c;

	for (c = 0; c < rv->inc.ncols; c++)
	{
		pfree(rv->values[c]);
		pfree(rv->nulls[c]);
	}
	rv->n = rv->cap = 0;
	rv->inc.ncols = 0;
}
