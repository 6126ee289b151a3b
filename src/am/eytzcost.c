/*
 * eytzcost.c
 *		amcostestimate for eytzgpu.
 *
 * Like btree's: genericcostestimate() charges the index pages and entries the
 * selectivity implies, plus the CPU of a descent through the layout's levels
 * and of a linear pass over the pending list.  The correlation is the key
 * column's with the heap, from its statistics, as btree takes it: the scan
 * sorts each chunk of TIDs into heap order, but chunks double in size from
 * small ones, so a range of many rows visits most of its heap pages once
 * per chunk, not once, and a bitmap scan (which visits each once) is the
 * better plan for it, as for btree.
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

#include "access/stratnum.h"
#include "catalog/pg_statistic.h"
#include "optimizer/cost.h"
#include "parser/parsetree.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"
#include "access/relation.h"

#include "eytzam.h"
#include "eytzlookup.h"

/*
 * The correlation of the index's key with the heap's order, from the
 * statistics of the table's column (or of the index's expression), 0 when
 * there are none
 */
static double
key_correlation(PlannerInfo *root, IndexOptInfo *index)
{
	RangeTblEntry *rte = planner_rt_fetch(index->rel->relid, root);
	VariableStatData vardata;
	double		correlation = 0.0;
	Oid			lessop;
	AttStatsSlot sslot;

	MemSet(&vardata, 0, sizeof(vardata));
	if (index->indexkeys[0] != 0)
	{
		if (!(get_relation_stats_hook &&
			  (*get_relation_stats_hook) (root, rte, index->indexkeys[0], &vardata)))
		{
			vardata.statsTuple = SearchSysCache3(STATRELATTINH,
												 ObjectIdGetDatum(rte->relid),
												 Int16GetDatum(index->indexkeys[0]),
												 BoolGetDatum(rte->inh));
			vardata.freefunc = ReleaseSysCache;
		}
	}
	else if (!(get_index_stats_hook &&
			   (*get_index_stats_hook) (root, index->indexoid, 1, &vardata)))
	{
		vardata.statsTuple = SearchSysCache3(STATRELATTINH,
											 ObjectIdGetDatum(index->indexoid),
											 Int16GetDatum(1), BoolGetDatum(false));
		vardata.freefunc = ReleaseSysCache;
	}
	lessop = get_opfamily_member(index->opfamily[0], index->opcintype[0],
								 index->opcintype[0], BTLessStrategyNumber);
	if (HeapTupleIsValid(vardata.statsTuple) && OidIsValid(lessop) &&
		get_attstatsslot(&sslot, vardata.statsTuple, STATISTIC_KIND_CORRELATION,
						 lessop, ATTSTATSSLOT_NUMBERS))
	{
		if (sslot.nnumbers == 1)
			correlation = sslot.numbers[0];
		free_attstatsslot(&sslot);
	}
	ReleaseVariableStats(vardata);
	return correlation;
}

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
		eytz_lookup_plan_cost(index->indexoid, searches, false, 0, &startup,
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
	*indexCorrelation = key_correlation(root, index);
	*indexPages = costs.numIndexPages;
}
