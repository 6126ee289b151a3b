/*
 * eytzinfo.c
 *		SQL functions eytzgpu_info() and eytzgpu_verify().
 *
 * eytzgpu_verify() is the amcheck of eytzgpu: it re-derives every property
 * the search relies on from the pages and raises ERRCODE_INDEX_CORRUPTED
 * naming the first violation.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "eytzgpu.h"

PG_FUNCTION_INFO_V1(eytzgpu_info);
PG_FUNCTION_INFO_V1(eytzgpu_verify);

/* Open an index and make sure it is an eytzgpu index */
Relation
eytz_open_index(Oid indexoid, LOCKMODE lockmode)
{
	Relation	index = try_relation_open(indexoid, lockmode);

	if (index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", indexoid)));
	if (index->rd_rel->relkind != RELKIND_INDEX ||
		index->rd_rel->relam != get_index_am_oid("eytzgpu", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an eytzgpu index",
						RelationGetRelationName(index))));
	return index;
}

Datum
eytzgpu_info(PG_FUNCTION_ARGS)
{
	Relation	index = eytz_open_index(PG_GETARG_OID(0), AccessShareLock);
	EytzMetaPageData meta;
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {false};
	BlockNumber nblocks;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	eytz_read_meta(index, &meta);
	nblocks = RelationGetNumberOfBlocks(index);
	relation_close(index, AccessShareLock);

	values[0] = CStringGetTextDatum(eytz_layout_name(meta.layout));
	values[1] = Int32GetDatum(meta.fanout);
	values[2] = Int32GetDatum(meta.key_width);
	values[3] = Int64GetDatum((int64) (meta.nentries - meta.ndead));
	values[4] = Int64GetDatum((int64) meta.npending);
	values[5] = Int64GetDatum((int64) meta.ndead);
	values[6] = Int32GetDatum(meta.levels);
	values[7] = Int64GetDatum((int64) nblocks);
	values[8] = Int64GetDatum((int64) nblocks * BLCKSZ);
	values[9] = Int64GetDatum((int64) meta.generation);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

#define CORRUPT(index, ...) \
	ereport(ERROR, \
			(errcode(ERRCODE_INDEX_CORRUPTED), \
			 errmsg("eytzgpu index \"%s\" is corrupted", RelationGetRelationName(index)), \
			 errdetail(__VA_ARGS__)))

/* Copy the contents of a run of data pages of one type into dst */
static void
read_region(Relation index, BlockNumber start, uint32 npages, uint16 flags,
			Size per_page, Size width, uint64 n, char *dst)
{
	uint32		p;
	uint64		done = 0;

	for (p = 0; p < npages; p++)
	{
		Buffer		buf = ReadBuffer(index, start + p);
		Page		page;
		uint64		cnt = Min(per_page, n - done);

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) || EytzPageGetOpaque(page)->flags != flags ||
			EytzPageGetOpaque(page)->page_id != EYTZ_PAGE_ID)
			CORRUPT(index, "Block %u should be a %s page.", start + p,
					flags == EYTZ_PAGE_KEYS ? "key" : "TID");
		if (((PageHeader) page)->pd_lower != MAXALIGN(SizeOfPageHeaderData) + cnt * width)
			CORRUPT(index, "Block %u holds %u bytes of entries, expected " UINT64_FORMAT ".",
					start + p,
					(unsigned) (((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData)),
					(uint64) (cnt * width));
		memcpy(dst + done * width, PageGetContents(page), cnt * width);
		done += cnt;
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}
}

Datum
eytzgpu_verify(PG_FUNCTION_ARGS)
{
	Relation	index = eytz_open_index(PG_GETARG_OID(0), AccessShareLock);
	EytzMetaPageData meta;
	EytzShape	shape;
	BlockNumber nblocks;
	uint64		n;
	char	   *keys;
	ItemPointerData *tids;
	uint64	   *slot_of_rank;
	uint64		t,
				r,
				dead = 0,
				npending = 0;
	BlockNumber blkno,
				last = InvalidBlockNumber;
	uint32		steps = 0;

	/* no merge or insert while we look */
	LockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	eytz_read_meta(index, &meta);
	nblocks = RelationGetNumberOfBlocks(index);
	n = meta.nentries;

	if (meta.key_width != 4 && meta.key_width != 8)
		CORRUPT(index, "Key width %u is neither 4 nor 8.", meta.key_width);
	if (!eytz_fanout_valid(meta.fanout))
		CORRUPT(index, "Fan-out %u is not of the form 2^p + 1.", meta.fanout);
	if ((meta.layout == EYTZ_LAYOUT_EBS) != (meta.fanout == 2) ||
		(meta.layout != EYTZ_LAYOUT_EBS && meta.layout != EYTZ_LAYOUT_EKS))
		CORRUPT(index, "Layout %u does not match fan-out %u.", meta.layout, meta.fanout);
	shape = eytz_shape(n, meta.fanout);
	if (meta.levels != shape.levels)
		CORRUPT(index, "Metapage says %u levels, " UINT64_FORMAT " entries need %u.",
				meta.levels, n, shape.levels);
	if (meta.keys_per_page != (uint32) eytz_keys_per_page(meta.key_width, meta.fanout))
		CORRUPT(index, "Metapage says %u keys per page, expected %d.",
				meta.keys_per_page, eytz_keys_per_page(meta.key_width, meta.fanout));
	if (meta.nkeypages != (n + meta.keys_per_page - 1) / meta.keys_per_page ||
		meta.ntidpages != (n + EYTZ_TIDS_PER_PAGE - 1) / EYTZ_TIDS_PER_PAGE)
		CORRUPT(index, "Page counts %u/%u do not fit " UINT64_FORMAT " entries.",
				meta.nkeypages, meta.ntidpages, n);
	if (n > 0 && (meta.keys_start == EYTZ_METAPAGE_BLKNO ||
				  meta.tids_start != meta.keys_start + meta.nkeypages ||
				  meta.tids_start + meta.ntidpages > nblocks))
		CORRUPT(index, "Layout region at block %u does not fit in %u blocks.",
				meta.keys_start, nblocks);

	keys = MemoryContextAllocHuge(CurrentMemoryContext, Max(n, 1) * meta.key_width);
	tids = MemoryContextAllocHuge(CurrentMemoryContext, Max(n, 1) * sizeof(ItemPointerData));
	slot_of_rank = MemoryContextAllocHuge(CurrentMemoryContext, Max(n, 1) * sizeof(uint64));
	if (n > 0)
	{
		read_region(index, meta.keys_start, meta.nkeypages, EYTZ_PAGE_KEYS,
					meta.keys_per_page, meta.key_width, n, keys);
		read_region(index, meta.tids_start, meta.ntidpages, EYTZ_PAGE_TIDS,
					EYTZ_TIDS_PER_PAGE, sizeof(ItemPointerData), n, (char *) tids);
	}

	/* in-order (rank order) the entries must ascend by (key, TID) */
	for (t = 0; t < n; t++)
		slot_of_rank[eytz_sorted_rank(&shape, t)] = t;
	for (r = 0; r < n; r++)
	{
		uint64		s = slot_of_rank[r];
		ItemPointer tid = &tids[s];

		if (ItemPointerGetBlockNumberNoCheck(tid) == InvalidBlockNumber)
			dead++;
		else if (ItemPointerGetOffsetNumberNoCheck(tid) == InvalidOffsetNumber)
			CORRUPT(index, "Slot " UINT64_FORMAT " has an invalid TID.", s);
		if (r > 0)
		{
			uint64		ps = slot_of_rank[r - 1];
			uint64		pk = eytz_key_at(keys, meta.key_width, ps);
			uint64		k = eytz_key_at(keys, meta.key_width, s);

			if (pk > k)
				CORRUPT(index, "Key at slot " UINT64_FORMAT " (rank " UINT64_FORMAT ") is smaller than its in-order predecessor at slot " UINT64_FORMAT ".",
						s, r, ps);
			if (pk == k &&
				ItemPointerGetBlockNumberNoCheck(&tids[ps]) != InvalidBlockNumber &&
				ItemPointerGetBlockNumberNoCheck(tid) != InvalidBlockNumber &&
				ItemPointerCompare(&tids[ps], tid) >= 0)
				CORRUPT(index, "Equal keys at slots " UINT64_FORMAT " and " UINT64_FORMAT " are not in TID order.",
						ps, s);
		}
		if ((r & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	if (dead != meta.ndead)
		CORRUPT(index, "Metapage counts " UINT64_FORMAT " tombstones, the layout has " UINT64_FORMAT ".",
				meta.ndead, dead);

	for (blkno = meta.pending_head; blkno != InvalidBlockNumber;)
	{
		Buffer		buf;
		Page		page;
		EytzPageOpaque opaque;

		if (blkno == EYTZ_METAPAGE_BLKNO || blkno >= nblocks ||
			eytz_block_in_region(&meta, blkno) || ++steps > nblocks)
			CORRUPT(index, "Pending list reaches invalid block %u.", blkno);
		buf = ReadBuffer(index, blkno);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = EytzPageGetOpaque(page);
		if (PageIsNew(page) || opaque->flags != EYTZ_PAGE_PENDING ||
			opaque->count > EYTZ_PENDING_PER_PAGE)
			CORRUPT(index, "Block %u in the pending list is not a valid pending page.", blkno);
		npending += opaque->count;
		last = blkno;
		blkno = opaque->next;
		UnlockReleaseBuffer(buf);
	}
	if (npending != meta.npending)
		CORRUPT(index, "Metapage counts " UINT64_FORMAT " pending entries, the list has " UINT64_FORMAT ".",
				meta.npending, npending);
	if (last != meta.pending_tail)
		CORRUPT(index, "Pending list ends at block %u, the metapage says %u.",
				last, meta.pending_tail);

	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ExclusiveLock);
	relation_close(index, AccessShareLock);
	pfree(keys);
	pfree(tids);
	pfree(slot_of_rank);
	PG_RETURN_BOOL(true);
}
