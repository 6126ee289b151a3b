/*
 * eytzcompat.h
 *		What differs between the PostgreSQL major versions eytzgpu builds
 *		against (15 to 18), behind PG_VERSION_NUM checks.
 *
 * Every version check of the C sources lives here, so that the other files
 * call one name whatever the server: each macro or inline function below
 * names the release that changed the API it covers.
 */
#ifndef EYTZCOMPAT_H
#define EYTZCOMPAT_H

#include "postgres.h"

#include "access/heapam.h"
#include "access/relscan.h"
#include "catalog/pg_class.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/tuplesort.h"

#if PG_VERSION_NUM >= 180000
/*
 * 18 moved ExplainProperty*() and the EXPLAIN groups out of explain.h, and
 * ExplainState into explain_state.h
 */
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif

#if PG_VERSION_NUM < 150000
#error "eytzgpu needs PostgreSQL 15 or later"
#endif

/*
 * 16 renamed RelFileNode (spcNode, dbNode, relNode) to RelFileLocator
 * (spcOid, dbOid, relNumber), and the relation's rd_node to rd_locator.
 */
#if PG_VERSION_NUM >= 160000
#include "storage/relfilelocator.h"
typedef RelFileLocator EytzRelFile;
#define EytzRelationFile(rel)	((rel)->rd_locator)
#define EytzRelFileNumber(file)	((file).relNumber)
#else
#include "storage/relfilenode.h"
typedef RelFileNode EytzRelFile;
#define EytzRelationFile(rel)	((rel)->rd_node)
#define EytzRelFileNumber(file)	((file).relNode)
#endif

/*
 * 17 numbered backends by ProcNumber: PGPROC's pgprocno became
 * MyProcNumber, INVALID_PGPROCNO INVALID_PROC_NUMBER
 */
#if PG_VERSION_NUM >= 170000
#include "storage/procnumber.h"
#define EYTZ_INVALID_PROCNO		INVALID_PROC_NUMBER
#define EytzMyProcNumber()		MyProcNumber
#else
#include "storage/proc.h"
#define EYTZ_INVALID_PROCNO		INVALID_PGPROCNO
#define EytzMyProcNumber()		(MyProc->pgprocno)
#endif

/*
 * 16 marks each Var with the outer joins that can null it (varnullingrels);
 * copy src's marks to dst (nothing to copy before)
 */
#if PG_VERSION_NUM >= 160000
#define EytzVarCopyNullingRels(dst, src) \
	((dst)->varnullingrels = bms_copy((src)->varnullingrels))
#else
#define EytzVarCopyNullingRels(dst, src) ((void) 0)
#endif

/* 16 replaced the per-catalog ownership checks by object_ownercheck() */
#if PG_VERSION_NUM >= 160000
#define eytz_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#define eytz_class_ownercheck(relid, roleid) pg_class_ownercheck((relid), (roleid))
#endif

/*
 * 16 added tuplesort_getdatum()'s "copy"; true keeps 15's behaviour (a
 * pass-by-reference datum comes back as a palloc'd copy of the caller's own)
 */
#if PG_VERSION_NUM >= 160000
#define eytz_tuplesort_getdatum(state, forward, val, isnull) \
	tuplesort_getdatum((state), (forward), true, (val), (isnull), NULL)
#else
#define eytz_tuplesort_getdatum(state, forward, val, isnull) \
	tuplesort_getdatum((state), (forward), (val), (isnull), NULL)
#endif

/*
 * 17 also pins search_path to "pg_catalog, pg_temp" where maintenance runs
 * an index's expressions as the table's owner (REINDEX, amcheck); before
 * 17 those run under the caller's search_path, as here
 */
#if PG_VERSION_NUM >= 170000
#define eytz_restrict_search_path() RestrictSearchPath()
#else
#define eytz_restrict_search_path() ((void) 0)
#endif

/* 18 tells vacuum_delay_point() whether ANALYZE calls it */
#if PG_VERSION_NUM >= 180000
#define eytz_vacuum_delay_point() vacuum_delay_point(false)
#else
#define eytz_vacuum_delay_point() vacuum_delay_point()
#endif

/*
 * Pin heap block "block" in page-at-a-time scan "scan" (dropping the page it
 * had) and list the tuples its snapshot sees in rs_vistuples[].  17 replaced
 * heapgetpage() by read streams and heap_prepare_pagescan(), which lists the
 * tuples of the page the scan has pinned: pin it as the sample scan does.
 */
static inline void
eytz_heap_read_page(TableScanDesc scan, BlockNumber block)
{
#if PG_VERSION_NUM >= 170000
	HeapScanDesc hs = (HeapScanDesc) scan;

	CHECK_FOR_INTERRUPTS();
	if (BufferIsValid(hs->rs_cbuf))
	{
		ReleaseBuffer(hs->rs_cbuf);
		hs->rs_cbuf = InvalidBuffer;
	}
	hs->rs_cbuf = ReadBufferExtended(scan->rs_rd, MAIN_FORKNUM, block, RBM_NORMAL,
									 hs->rs_strategy);
	hs->rs_cblock = block;
	heap_prepare_pagescan(scan);
#else
	heapgetpage(scan, block);
#endif
}

/*
 * The planner's API the join over a foreign inner side (eytzfdwjoin.c)
 * uses: 16 gave make_restrictinfo() the clone flags and incompatible relids
 * (for nullable_relids and outerjoin_delayed), took the child and parent
 * RelOptInfos in adjust_appendrel_attrs_multilevel() (their relids before),
 * and added ForeignScan's checkAsUser and fs_base_relids (15's FDWs read
 * the user from the range table entry); 18 replaced Append's
 * part_prune_info by an index into the statement's list (-1: none).
 */
#if PG_VERSION_NUM >= 160000
#define eytz_make_restrictinfo(root, clause, relids) \
	make_restrictinfo((root), (clause), true, false, false, false, 0, (relids), NULL, NULL)
#define eytz_adjust_appendrel_multilevel(root, node, childrel, parentrel) \
	adjust_appendrel_attrs_multilevel((root), (node), (childrel), (parentrel))
#define eytz_foreignscan_set_relids(fscan, relids, userid) \
	((fscan)->fs_base_relids = bms_copy(relids), (fscan)->checkAsUser = (userid))
#else
#define eytz_make_restrictinfo(root, clause, relids) \
	make_restrictinfo((root), (clause), true, false, false, 0, (relids), NULL, NULL)
#define eytz_adjust_appendrel_multilevel(root, node, childrel, parentrel) \
	adjust_appendrel_attrs_multilevel((root), (node), (childrel)->relids, (parentrel)->relids)
#define eytz_foreignscan_set_relids(fscan, relids, userid) ((void) 0)
#endif
#if PG_VERSION_NUM >= 180000
#define eytz_append_no_pruning(append) ((append)->part_prune_index = -1)
#else
#define eytz_append_no_pruning(append) ((append)->part_prune_info = NULL)
#endif

/* 17 raised postgres_fdw's default fdw_tuple_cost from 0.01 to 0.2 */
#if PG_VERSION_NUM >= 170000
#define EYTZ_PGFDW_DEFAULT_TUPLE_COST	0.2
#else
#define EYTZ_PGFDW_DEFAULT_TUPLE_COST	0.01
#endif

#endif							/* EYTZCOMPAT_H */
