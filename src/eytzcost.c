/*
 * eytzcost.c
 *		amcostestimate for eytzgpu.
 *
 * Like btree's: genericcostestimate() charges the index pages and entries the
 * selectivity implies, plus the CPU of a descent through the layout's levels
 * and of a linear pass over the pending list.  The scan hands TIDs out in
 * heap order, so the heap is read in physical order.
 *
 * An array qual ("k = ANY(array)") of several elements is not a descent per
 * element: its keys are sorted once and looked up in one batched walk of the
 * view the lookup seam would choose for that many keys (eytzarrayscan.c), so
 * it costs what eytz_lookup_plan_cost says, as the batched join does: an
 * image load or GPU upload only when the keys pay for it (nothing when the
 * backend or the service has it resident), and the pages otherwise.
 */
#include "postgres.h"

#include <math.h>

#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "access/relation.h"

#include "eytzgpu.h"
#include "eytzlookup.h"

void
eytz_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				  Cost *indexStartupCost, Cost *indexTotalCost,
				  Selectivity *indexSelectivity, double *indexCorrelation,
				  double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	GenericCosts costs;
	EytzMetaPageData meta;
	Relation	irel;
	Cost		startup;
	Cost		descent;
	double		searches;

	irel = index_open(index->indexoid, AccessShareLock);
	eytz_read_meta(irel, &meta);
	index_close(irel, AccessShareLock);

	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, path, loop_count, &costs);

	searches = Max(costs.num_sa_scans, 1);
	if (searches > 1)
	{
		Cost		per_key;
		double		touch_bytes;

		/* the keys sorted, the pending list read once, then one batched walk */
		eytz_lookup_plan_cost(index->indexoid, searches, false, &startup,
							  &per_key, &touch_bytes);
		startup += searches * log2(searches) * cpu_operator_cost +
			meta.npending * cpu_operator_cost;
		descent = startup + searches * per_key;
	}
	else
	{
		/* compare along the levels, touch about one page per level */
		descent = (meta.levels + 1) * (meta.fanout - 1) * cpu_operator_cost +
			(meta.levels + 1) * 50.0 * cpu_operator_cost +
			meta.npending * cpu_operator_cost;
		startup = descent;
	}

	/*
	 * an index-only scan gathers each entry's key and included values from
	 * their own arrays (and forms a tuple of them): per column, about what
	 * btree pays for a whole index tuple
	 */
	if (path->path.pathtype == T_IndexOnlyScan)
		costs.indexTotalCost += costs.numIndexTuples * searches *
			(list_length(path->indexinfo->indextlist) * cpu_index_tuple_cost);

	*indexStartupCost = costs.indexStartupCost + startup;
	*indexTotalCost = costs.indexTotalCost + descent;
	*indexSelectivity = costs.indexSelectivity;
	*indexCorrelation = 1.0;
	*indexPages = costs.numIndexPages;
}
