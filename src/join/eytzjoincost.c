/*
 * eytzjoincost.c
 *		The cost of an EytzGPU Join path (eytzjoin.c builds the paths): the
 *		outer side, the lookup seam's cost per key on the device that would
 *		answer (eytzlookupcost.c), the heap fetches in TID order, the quals;
 *		for a partial path, what its processes pay to touch shared memory
 *		first.
 */
#include "postgres.h"

#include <math.h>
#include <unistd.h>

#include "miscadmin.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/restrictinfo.h"
#include "storage/pg_shmem.h"
#include "utils/spccache.h"

#include "eytzjoin.h"
#include "eytzjoinplan.h"
#include "eytzlookup.h"

/*
 * The fraction of an index-only join's matches that still need their heap
 * page: those on pages not marked all-visible, as cost_index assumes for
 * index-only scans (relallvisible / relpages); 1 for the other joins.
 */
static double
eytz_join_heap_fraction(RelOptInfo *innerrel, bool index_only)
{
	return index_only ? 1.0 - innerrel->allvisfrac : 1.0;
}

/*
 * A parallel worker is a fresh process: the first time it reads a page of
 * shared memory (a shared buffer, the image the leader shares) the kernel
 * maps it, a page fault per page (or per 16 of them where the kernel maps
 * the neighbours along).  That is cheap on most machines but costly on some
 * virtual machines (shadow page tables), where a worker's first touches of
 * a large table's buffers can outweigh its share of the join
 * (bench/service_results.md, "The default plan on this VM").  It is
 * eytzgpu.page_touch_cost a page: 0 by default, as PostgreSQL charges its
 * own parallel plans nothing for it (its parallel hash join's workers touch
 * the whole inner table: charging only this join would hand such a VM the
 * parallel hash join, slower still); -1 measures it once per backend
 * (eytz_page_fault_cost).  With huge_pages = on a page maps 512 small ones:
 * the touches cost next to nothing.
 */
double		eytz_page_touch_cost = 0;

/* What a fresh process pays to touch bytes of shared memory first */
static Cost
shared_touch_cost(double bytes)
{
	double		per_page = eytz_page_touch_cost;

	if (huge_pages == HUGE_PAGES_ON || bytes <= 0)
		return 0;
	if (per_page < 0)
		per_page = eytz_page_fault_cost(true);
	return ceil(bytes / sysconf(_SC_PAGESIZE)) * per_page;
}

/*
 * Cost of the join: the outer path; per outer row the key expressions and
 * the lookup seam's per-key cost on the device that would answer (plus its
 * cost of pinning the index's view once); per match a heap fetch in TID
 * order (pages charged like a bitmap heap scan per batch) and the quals; per
 * result row the projection.  For a partial path (in_workers) outer_path and
 * rows are one process's share, the view is costed as a worker would pin it
 * and the first touches of the heap pages it visits are charged (a worker
 * is a fresh process: shared_touch_cost).  An index-only path
 * (index_only) fetches only the heap pages that are not all-visible.  Over
 * the leaves of a partitioned table each leaf is costed with its share of
 * the keys (all of them where keys are not routed) and of the matches
 * (by its rows).
 */
void
eytz_join_cost(PlannerInfo *root, CustomPath *cpath, Path *outer_path,
			   RelOptInfo *innerrel, const EytzInnerSide *side, List *idxclauses,
			   List *joinquals, List *otherquals, double rows, bool in_workers,
			   bool index_only)
{
	double		outer_rows = Max(outer_path->rows, 1.0);
	double		inner_tuples = 0;
	double		heap_pages = 0;
	double		index_pages = 0;
	List	   *rinfos = NIL;
	List	   *keyexprs = NIL;
	ListCell   *lc,
			   *lc2;
	Selectivity sel;
	double		matches,
				batch_rows,
				nbatches,
				pages = 0,
				heap_touch = 0,
				cost_per_page;
	double		spc_random,
				spc_seq;
	QualCost	keycost,
				jqcost,
				oqcost,
				iqcost;
	Cost		lookup_startup = 0,
				lookup_per_key = 0,
				startup,
				run;
	double		touch_bytes = 0;

	forboth(lc, side->leaf_rels, lc2, side->leaf_indexes)
	{
		RelOptInfo *leaf = lfirst(lc);
		IndexOptInfo *index = lfirst(lc2);

		inner_tuples += Max(leaf->tuples, 0);
		heap_pages += Max(leaf->pages, 0);
		index_pages += Max(index->pages, 0);
	}
	inner_tuples = Max(inner_tuples, 1.0);
	heap_pages = Max(heap_pages, 1.0);

	foreach(lc, idxclauses)
	{
		EytzIdxClause *ic = lfirst(lc);

		rinfos = lappend(rinfos, ic->rinfo);
		keyexprs = lappend(keyexprs, ic->outer_expr);
	}
	sel = clauselist_selectivity(root, rinfos, 0, JOIN_INNER, NULL);
	matches = outer_rows * clamp_row_est(sel * inner_tuples);

	cost_qual_eval(&keycost, keyexprs, root);
	cost_qual_eval(&jqcost, extract_actual_clauses(joinquals, false), root);
	cost_qual_eval(&oqcost, extract_actual_clauses(otherquals, false), root);
	cost_qual_eval(&iqcost, extract_actual_clauses(innerrel->baserestrictinfo, false), root);
	batch_rows = Min((double) eytz_batch_size, outer_rows);
	nbatches = ceil(outer_rows / Max(batch_rows, 1.0));
	forboth(lc, side->leaf_rels, lc2, side->leaf_indexes)
	{
		RelOptInfo *leaf = lfirst(lc);
		IndexOptInfo *index = lfirst(lc2);
		double		share = Max(leaf->tuples, 0) / inner_tuples;
		double		leaf_pages = Max(leaf->pages, 1.0);
		double		leaf_matches = matches * share;
		double		key_share = side->routed ? share : 1.0;
		Cost		leaf_startup,
					leaf_per_key;
		double		leaf_touch;

		/* a batch reads the other leaves' pages too (eytz_join_leaf_footprints) */
		eytz_lookup_plan_cost(index->indexoid, outer_rows * key_share, in_workers,
							  heap_pages + index_pages - Max(leaf->pages, 0) -
							  Max(index->pages, 0),
							  &leaf_startup, &leaf_per_key, &leaf_touch);
		lookup_startup += leaf_startup;
		lookup_per_key += leaf_per_key * key_share;
		touch_bytes += leaf_touch;
		/* heap pages per batch, read in block order */
		pages += index_pages_fetched(leaf_matches / nbatches, (BlockNumber) leaf_pages,
									 leaf_pages, root) *
			eytz_join_heap_fraction(leaf, index_only);
		heap_touch += leaf_pages * (1.0 - exp(-leaf_matches / leaf_pages)) *
			eytz_join_heap_fraction(leaf, index_only);
	}
	get_tablespace_page_costs(innerrel->reltablespace, &spc_random, &spc_seq);
	if (pages >= 2.0)
		cost_per_page = spc_random - (spc_random - spc_seq) * sqrt(pages / heap_pages);
	else
		cost_per_page = spc_random;

	run = outer_rows * (keycost.per_tuple + lookup_per_key + cpu_operator_cost) +
		matches * (cpu_tuple_cost + 3.0 * cpu_operator_cost +
				   iqcost.per_tuple + jqcost.per_tuple + oqcost.per_tuple) +
		rows * (cpu_tuple_cost + cpath->path.pathtarget->cost.per_tuple);
	/*
	 * the heap: each batch's visits of its pages (a large heap's again and
	 * again), or the matches sorted and one pass over the pages they touch
	 * (eytzjoinsorted.c)
	 */
	run += eytz_heap_order_cost(outer_rows, matches, heap_pages, index_pages,
								nbatches * pages * cost_per_page,
								heap_touch * cost_per_page, cost_per_page);
	if (in_workers)
	{
		/*
		 * The divisor assumes a core per process: with more processes than
		 * the machine has cores (3 on the 2-core VM) they take turns, and
		 * each one's share (and the pinning of its view) runs that much
		 * longer (bench/join_results.md,
		 * run 18)
		 */
		long		cores = sysconf(_SC_NPROCESSORS_ONLN);
		int			procs = cpath->path.parallel_workers +
			(parallel_leader_participation ? 1 : 0);

		if (cores > 0 && procs > cores)
		{
			run *= (double) procs / cores;
			lookup_startup *= (double) procs / cores;
		}
		lookup_startup += shared_touch_cost(touch_bytes);
		run += shared_touch_cost(heap_touch * BLCKSZ);
	}
	startup = outer_path->startup_cost + lookup_startup + keycost.startup +
		jqcost.startup + oqcost.startup + iqcost.startup +
		cpath->path.pathtarget->cost.startup;

	/* the first batch is small (it grows geometrically): startup is cheap */
	cpath->path.startup_cost = startup + run * Min(1.0, 1024.0 / outer_rows);
	cpath->path.total_cost = outer_path->total_cost - outer_path->startup_cost +
		startup + run;
}
