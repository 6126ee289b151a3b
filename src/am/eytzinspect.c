/*
 * eytzinspect.c
 *		SQL functions eytzgpu_info() and eytzgpu_verify().
 *
 * eytzgpu_verify() is the amcheck of eytzgpu: through the page layer it
 * re-derives every property the search relies on (eytzpage.c), checks that
 * every TID points into the table and every NULL included value is stored
 * as zeros, and with heapallindexed that every live heap tuple has its
 * entry, with the heap's included values (as amcheck's
 * bt_index_check(index, true)); it raises ERRCODE_INDEX_CORRUPTED naming
 * the first violation.
 *
 * Both functions reveal what the table holds, so they require SELECT on the
 * table (or pg_monitor), checked before anything is locked.  verify holds
 * the merge lock in share mode, as inserts do: merges and VACUUM wait,
 * writers do not.  heapallindexed runs the index's expressions and
 * predicate as the table's owner, restricted, as REINDEX does.  verify of a
 * partitioned index verifies each leaf's; info refuses one, naming the
 * per-leaf call.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type_d.h"
#include "commands/defrem.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "eytzcompat.h"
#include "eytzinclude.h"

PG_FUNCTION_INFO_V1(eytzgpu_info);
PG_FUNCTION_INFO_V1(eytzgpu_verify);

/*
 * Open an index and make sure it is an eytzgpu index.  A partitioned
 * eytzgpu index holds no entries (each leaf's index does): fname, the
 * calling function, is named in the hint that says what to call instead.
 */
Relation
eytz_open_index(Oid indexoid, LOCKMODE lockmode, const char *fname)
{
	Relation	index = try_relation_open(indexoid, lockmode);

	if (index == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", indexoid)));
	if (index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX &&
		index->rd_rel->relam == get_index_am_oid("eytzgpu", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned eytzgpu index",
						RelationGetRelationName(index)),
				 errdetail("Its entries are held by the index of each partition."),
				 errhint("Call %s for each leaf: SELECT relid, %s(relid) FROM pg_partition_tree(%s) WHERE isleaf;",
						 fname, fname,
						 quote_literal_cstr(quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
																	   RelationGetRelationName(index))))));
	if (index->rd_rel->relkind != RELKIND_INDEX ||
		index->rd_rel->relam != get_index_am_oid("eytzgpu", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an eytzgpu index",
						RelationGetRelationName(index))));
	return index;
}

/*
 * The caller may read what the index says about its table: SELECT on the
 * table, or pg_monitor.  Checked from the catalogs, before any lock.
 */
static void
check_read_privilege(Oid indexoid)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);

	if (OidIsValid(heapoid) &&
		pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT) != ACLCHECK_OK &&
		!has_privs_of_role(GetUserId(), ROLE_PG_MONITOR))
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(heapoid));
}

Datum
eytzgpu_info(PG_FUNCTION_ARGS)
{
	Relation	index;
	EytzMetaPageData meta;
	TupleDesc	tupdesc;
	Datum		values[11];
	bool		nulls[11] = {false};
	BlockNumber nblocks;
	Datum		names[EYTZ_MAX_INCLUDE];
	int			ncols;
	int			c;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	check_read_privilege(PG_GETARG_OID(0));
	index = eytz_open_index(PG_GETARG_OID(0), AccessShareLock, "eytzgpu_info");
	eytz_read_meta(index, &meta);
	nblocks = RelationGetNumberOfBlocks(index);
	ncols = eytz_include_count(index);
	for (c = 0; c < ncols && c < EYTZ_MAX_INCLUDE; c++)
		names[c] = CStringGetTextDatum(NameStr(TupleDescAttr(RelationGetDescr(index),
															 1 + c)->attname));
	relation_close(index, AccessShareLock);

	values[0] = CStringGetTextDatum(eytz_layout_name(eytz_meta_layout(&meta)));
	values[1] = Int32GetDatum(meta.fanout);
	values[2] = Int32GetDatum(meta.key_width);
	values[3] = Int64GetDatum((int64) (meta.nentries - meta.ndead));
	values[4] = Int64GetDatum((int64) meta.npending);
	values[5] = Int64GetDatum((int64) meta.ndead);
	values[6] = Int32GetDatum(meta.levels);
	values[7] = Int64GetDatum((int64) nblocks);
	values[8] = Int64GetDatum((int64) nblocks * BLCKSZ);
	values[9] = Int64GetDatum((int64) meta.generation);
	/* the INCLUDE columns (a 0.1.0 definition of the function has no such column) */
	values[10] = PointerGetDatum(construct_array(names, c, TEXTOID, -1, false,
												 TYPALIGN_INT));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/* heapallindexed: the index's entries, sorted, probed by every heap tuple */
typedef struct HeapCheckState
{
	Relation	index;
	const EytzKeyType *kt;
	EytzPairs  *entries;
	const EytzRowValues *rv;	/* the entries' included values, by row */
	int64		tuples;
} HeapCheckState;

/* The position of (key, TID) in the sorted pairs, or -1 */
static int64
entry_find(const EytzPairs *p, uint64 key, uint64 tid)
{
	uint64		lo = 0,
				hi = p->n;

	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (p->keys[mid] < key || (p->keys[mid] == key && p->tids[mid] < tid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->n && p->keys[lo] == key && p->tids[lo] == tid ? (int64) lo : -1;
}

/* The first included column whose value in the index differs from the heap's, or -1 */
static int
include_differs(const EytzRowValues *rv, uint64 row, const Datum *values,
				const bool *isnull)
{
	Datum		stored[EYTZ_MAX_INCLUDE];
	bool		stored_null[EYTZ_MAX_INCLUDE];
	int			c;

	eytz_rows_get(rv, row, stored, stored_null);
	for (c = 0; c < rv->inc.ncols; c++)
	{
		int			w = rv->inc.width[c];
		char		a[8] = {0},
					b[8] = {0};

		if (stored_null[c] != isnull[c])
			return c;
		if (isnull[c])
			continue;
		/* the bytes: -0.0 is not 0.0 for an index-only scan */
		eytz_include_store(a, w, stored[c]);
		eytz_include_store(b, w, values[c]);
		if (memcmp(a, b, w) != 0)
			return c;
	}
	return -1;
}

static void
heap_tuple_check(Relation index, ItemPointer tid, Datum *values, bool *isnull,
				 bool tupleIsAlive, void *arg)
{
	HeapCheckState *hs = (HeapCheckState *) arg;
	int64		pos;
	int			c;

	/* NULLs are not indexed */
	if (isnull[0])
		return;
	hs->tuples++;
	pos = entry_find(hs->entries, hs->kt->encode(values[0]), eytz_tid_pack(tid));
	if (pos < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("eytzgpu index \"%s\" lacks an entry for heap tuple (%u,%u)",
						RelationGetRelationName(hs->index),
						ItemPointerGetBlockNumber(tid),
						ItemPointerGetOffsetNumber(tid)),
				 errhint("REINDEX the index.")));
	if (hs->rv->inc.ncols > 0 &&
		(c = include_differs(hs->rv, hs->entries->rows[pos], values + 1, isnull + 1)) >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("eytzgpu index \"%s\" holds another value of INCLUDE column \"%s\" than heap tuple (%u,%u)",
						RelationGetRelationName(hs->index),
						NameStr(TupleDescAttr(RelationGetDescr(index), 1 + c)->attname),
						ItemPointerGetBlockNumber(tid),
						ItemPointerGetOffsetNumber(tid)),
				 errhint("REINDEX the index.")));
	if ((hs->tuples & 0xFFFF) == 0)
		CHECK_FOR_INTERRUPTS();
}

/* Probe the sorted entries with every heap tuple the snapshot sees */
static void
check_heap_all_indexed(Relation heap, Relation index, Snapshot snapshot,
					   EytzPairs *entries, const EytzRowValues *rv)
{
	HeapCheckState hs;
	IndexInfo  *indexInfo = BuildIndexInfo(index);
	TableScanDesc scan;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;

	/* as amcheck: the scan's snapshot decides which tuples must be there */
	indexInfo->ii_Concurrent = true;
	indexInfo->ii_Unique = false;
	indexInfo->ii_ExclusionOps = NULL;
	indexInfo->ii_ExclusionProcs = NULL;
	indexInfo->ii_ExclusionStrats = NULL;
	hs.index = index;
	hs.kt = eytz_index_key_type(index);
	hs.entries = entries;
	hs.rv = rv;
	hs.tuples = 0;

	/*
	 * The index's expressions and predicate are the table owner's code: run
	 * them as the owner, under SECURITY_RESTRICTED_OPERATION and with GUC
	 * changes kept local, as REINDEX and amcheck do, never with the rights
	 * of whoever verifies.  An ERROR restores the caller's identity.
	 */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(heap->rd_rel->relowner,
						   save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	eytz_restrict_search_path();
	scan = table_beginscan_strat(heap, snapshot, 0, NULL, true, true);
	table_index_build_scan(heap, index, indexInfo, true, false,
						   heap_tuple_check, &hs, scan);
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/* Every TID of the entries points below the table's end */
static void
check_tid_blocks(Relation index, const EytzPairs *p, BlockNumber heap_nblocks,
				 BlockNumber where)
{
	uint64		i;

	for (i = 0; i < p->n; i++)
		if (eytz_tid_block(p->tids[i]) >= heap_nblocks)
			EYTZ_CORRUPT(index, where,
						 "TID (%u,%u) points past the end of the table (%u blocks).",
						 eytz_tid_block(p->tids[i]), eytz_tid_offset(p->tids[i]),
						 heap_nblocks);
}

/*
 * Every included column's pages (their types and counts are checked as they
 * are read): a NULL's value bytes are zeros
 */
static void
check_include_pages(Relation index, const EytzMetaPageData *meta,
					const EytzInclude *inc)
{
	uint64		n = meta->nentries;
	int			c;

	for (c = 0; c < inc->ncols; c++)
	{
		int			w = inc->width[c];
		char	   *values = MemoryContextAllocHuge(CurrentMemoryContext, n * w);
		uint8	   *nulls = MemoryContextAllocHuge(CurrentMemoryContext, (n + 7) / 8);
		static const char zeros[8] = {0};
		uint64		t;

		eytz_region_load_include(index, meta, inc, NULL, c, values, nulls);
		for (t = 0; t < n; t++)
			if (((nulls[t / 8] >> (t % 8)) & 1) && memcmp(values + t * w, zeros, w) != 0)
				EYTZ_CORRUPT(index, eytz_include_values_start(meta, inc, c) +
							 t / eytz_include_per_page(w),
							 "Slot " UINT64_FORMAT " of INCLUDE column %d is NULL but has a value.",
							 t, c + 1);
		pfree(values);
		pfree(nulls);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Verify one eytzgpu index (the caller checked the privilege) */
static void
verify_index(Oid indexoid, bool heapallindexed)
{
	Oid			heapoid;
	Relation	heap;
	Relation	index;
	Snapshot	snapshot = InvalidSnapshot;
	EytzMetaPageData meta;
	EytzMetaPageData after;
	EytzPairs	layout;
	EytzPairs	pending;
	EytzInclude inc;
	EytzRowValues rv;			/* of layout's rows */
	EytzRowValues prv;			/* of pending's */
	EytzPendingReader pr;
	EytzPendingEntry *page;
	Datum	   *values;
	bool	   *isnull;
	BlockNumber blkno,
				last = InvalidBlockNumber,
				heap_nblocks;
	int			count,
				i;

	/* the table first, as every index user locks them */
	heapoid = IndexGetRelation(indexoid, true);
	heap = OidIsValid(heapoid) ? table_open(heapoid, AccessShareLock) : NULL;
	index = eytz_open_index(indexoid, AccessShareLock, "eytzgpu_verify");
	if (heapallindexed)
	{
		snapshot = RegisterSnapshot(GetTransactionSnapshot());
		if (!index->rd_index->indisvalid ||
			(index->rd_index->indcheckxmin &&
			 !TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
									snapshot->xmin)))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("index \"%s\" cannot be verified using the transaction's snapshot",
							RelationGetRelationName(index)),
					 errdetail("The index is not valid yet, or too new for the snapshot.")));
	}

	/* no merge or VACUUM while we look; inserts go on */
	LockPage(index, EYTZ_METAPAGE_BLKNO, ShareLock);
	eytz_read_meta(index, &meta);
	heap_nblocks = RelationGetNumberOfBlocks(heap);

	eytz_include_get(index, &inc);
	eytz_rows_init(&rv, &inc);
	eytz_rows_init(&prv, &inc);
	eytz_pairs_init(&layout, 0);
	if (inc.ncols > 0)
		eytz_pairs_with_rows(&layout, 0);
	eytz_region_load_sorted(index, &meta, &layout, &rv);
	check_tid_blocks(index, &layout, heap_nblocks, meta.tids_start);
	check_include_pages(index, &meta, &inc);

	eytz_pairs_init(&pending, 0);
	page = palloc(sizeof(EytzPendingEntry) * EYTZ_PENDING_PER_PAGE);
	values = palloc(sizeof(Datum) * EYTZ_PENDING_PER_PAGE * Max(inc.ncols, 1));
	isnull = palloc(sizeof(bool) * EYTZ_PENDING_PER_PAGE * Max(inc.ncols, 1));
	eytz_pending_begin(&pr, index, &meta);
	while ((count = eytz_pending_next_include(&pr, page, values, isnull, &blkno)) >= 0)
	{
		for (i = 0; i < count; i++)
		{
			eytz_pairs_add(&pending, page[i].key, &page[i].tid);
			eytz_rows_add(&prv, values + i * inc.ncols, isnull + i * inc.ncols);
		}
		last = blkno;
		CHECK_FOR_INTERRUPTS();
	}
	check_tid_blocks(index, &pending, heap_nblocks, meta.pending_head);

	/* inserts may have appended meanwhile, each counted with its entry */
	eytz_read_meta(index, &after);
	if (pending.n < meta.npending || pending.n > after.npending)
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Metapage counts " UINT64_FORMAT " pending entries, the list has " UINT64_FORMAT ".",
					 meta.npending, (uint64) pending.n);
	if (pending.n == after.npending && last != after.pending_tail)
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Pending list ends at block %u, the metapage says %u.",
					 last, after.pending_tail);

	if (heapallindexed)
	{
		uint64		j;

		for (j = 0; j < pending.n; j++)
		{
			ItemPointerData tid;
			Datum		v[EYTZ_MAX_INCLUDE];
			bool		n[EYTZ_MAX_INCLUDE];

			eytz_tid_unpack(pending.tids[j], &tid);
			eytz_pairs_add(&layout, pending.keys[j], &tid);
			if (inc.ncols > 0)
			{
				eytz_rows_get(&prv, j, v, n);
				eytz_rows_add(&rv, v, n);
			}
		}
		eytz_pairs_sort(&layout);
		check_heap_all_indexed(heap, index, snapshot, &layout, &rv);
		UnregisterSnapshot(snapshot);
	}

	UnlockPage(index, EYTZ_METAPAGE_BLKNO, ShareLock);
	relation_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	eytz_pairs_free(&layout);
	eytz_pairs_free(&pending);
	eytz_rows_free(&rv);
	eytz_rows_free(&prv);
	pfree(page);
	pfree(values);
	pfree(isnull);
}

/* Is indexoid a partitioned index of eytzgpu? */
static bool
is_partitioned_eytz_index(Oid indexoid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
	bool		result = false;

	if (HeapTupleIsValid(tuple))
	{
		Form_pg_class rel = (Form_pg_class) GETSTRUCT(tuple);

		result = rel->relkind == RELKIND_PARTITIONED_INDEX &&
			rel->relam == get_index_am_oid("eytzgpu", false);
		ReleaseSysCache(tuple);
	}
	return result;
}

/*
 * eytzgpu_verify(index regclass, heapallindexed boolean DEFAULT false)
 *
 * A partitioned index is verified leaf by leaf: the privilege on the
 * partitioned table covers its partitions, as a query of it reads them.
 */
Datum
eytzgpu_verify(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	bool		heapallindexed = PG_NARGS() > 1 && PG_GETARG_BOOL(1);

	check_read_privilege(indexoid);
	if (is_partitioned_eytz_index(indexoid))
	{
		ListCell   *lc;

		foreach(lc, find_all_inheritors(indexoid, NoLock, NULL))
			if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_INDEX)
				verify_index(lfirst_oid(lc), heapallindexed);
	}
	else
		verify_index(indexoid, heapallindexed);
	PG_RETURN_BOOL(true);
}
