/*
 * eytzjoinplan.h
 *		The planner's pieces both batched joins share: the EytzGPU Join over
 *		eytzgpu indexes (eytzjoin.c, costed in eytzjoincost.c) and the
 *		EytzGPU Foreign Join (eytzfdwjoin.c).  Which joins they can take,
 *		their inner side (one table or the leaves of a partitioned one), the
 *		CustomPath and the CustomScan with its scan tuple (eytzjoinplan.c).
 *		The leaves of a partitioned inner side are eytzjoinleaves.h's.
 */
#ifndef EYTZJOINPLAN_H
#define EYTZJOINPLAN_H

#include "postgres.h"

#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

/*
 * What one path of the EytzGPU Join searches: the inner table's index, or
 * the index of each leaf of a partitioned inner table that survived
 * pruning, all on the join column keyattno (the inner rel's attno) with one
 * operator family and key type
 */
typedef struct EytzInnerSide
{
	AttrNumber	keyattno;
	Oid			opfamily;
	Oid			opcintype;
	List	   *leaf_rels;		/* RelOptInfos */
	List	   *leaf_indexes;	/* IndexOptInfos */
	bool		routed;			/* keys go to the one leaf that holds them */
	Oid			parentoid;		/* the partitioned table, or InvalidOid */
	int			npruned;
} EytzInnerSide;

/* One index clause of the EytzGPU Join: inner.key <strategy> outer_expr */
typedef struct EytzIdxClause
{
	RestrictInfo *rinfo;
	StrategyNumber strategy;
	Oid			argtype;
	Expr	   *outer_expr;
} EytzIdxClause;

/* eytzjoincost.c: the EytzGPU Join's cost (see there) */
extern void eytz_join_cost(PlannerInfo *root, CustomPath *cpath, Path *outer_path,
						   RelOptInfo *innerrel, const EytzInnerSide *side,
						   List *idxclauses, List *joinquals, List *otherquals,
						   double rows, bool in_workers, bool index_only);

/* eytzjoinplan.c */

/*
 * The inner rel's range table entry when a batched join can be offered for
 * this join at all (an INNER, LEFT, SEMI or ANTI join of a base table that
 * the query does not lock or modify, not lateral), else NULL
 */
extern RangeTblEntry *eytz_join_inner_rte(PlannerInfo *root, RelOptInfo *innerrel,
										  JoinType jointype);

/* The outer rel's cheapest unparameterized path, or NULL */
extern Path *eytz_join_outer_path(RelOptInfo *outerrel);

/*
 * Split the join's restrictlist into the join's own clauses and, for an
 * outer join, those pushed down to it; false when one is pseudoconstant
 */
extern bool eytz_join_split_quals(RelOptInfo *joinrel, JoinType jointype,
								  List *restrictlist, List **joinquals,
								  List **otherquals);

/* A CustomPath of joinrel over outer_path, to be costed */
extern CustomPath *eytz_join_new_path(RelOptInfo *joinrel, Path *outer_path,
									  bool parallel_safe,
									  const CustomPathMethods *methods);

/* A column maybe relabeled to a domain's base type: the column */
extern Node *eytz_strip_relabel(Node *node);

/* The clauses of a list of RestrictInfos */
extern List *eytz_clause_exprs(List *rinfos);

/*
 * The CustomScan of a batched join: its scan tuple starts with the outer
 * plan's target list (*nouter entries), then the inner columns the caller
 * appends to cscan->custom_scan_tlist
 */
extern CustomScan *eytz_join_new_scan(CustomPath *best_path, List *tlist,
									  List *custom_plans, int *nouter,
									  const CustomScanMethods *methods);

/* The entry of scan_tlist that is the table column var names, or NULL */
extern TargetEntry *eytz_scan_tlist_column(List *scan_tlist, const Var *var);

/*
 * A copy of node whose Vars of the scan tuple carry the nulling marks of
 * their custom_scan_tlist entry (setrefs.c wants them equal)
 */
extern Node *eytz_match_scan_tlist(Node *node, List *scan_tlist);

#endif							/* EYTZJOINPLAN_H */
