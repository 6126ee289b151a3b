/*
 * eytzjoinplan.c
 *		The planner's pieces both batched joins share (eytzjoinplan.h): the
 *		EytzGPU Join (eytzjoin.c) and the EytzGPU Foreign Join
 *		(eytzfdwjoin.c) take the same joins, split the join's clauses the
 *		same way, and build their CustomPath and CustomScan alike, with a
 *		scan tuple that is the outer plan's target list followed by the
 *		inner columns.
 */
#include "postgres.h"

#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/pathnode.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"

#include "eytzcompat.h"
#include "eytzjoinplan.h"

RangeTblEntry *
eytz_join_inner_rte(PlannerInfo *root, RelOptInfo *innerrel, JoinType jointype)
{
	/*
	 * Row marks (UPDATE and DELETE with other tables, SELECT FOR UPDATE):
	 * a concurrent update's recheck (EvalPlanQual) runs the join again over
	 * the one row version of each table it locked, which a batched lookup
	 * would not return
	 */
	if (root->rowMarks != NIL || root->parse->resultRelation == (int) innerrel->relid)
		return NULL;
	if (jointype != JOIN_INNER && jointype != JOIN_LEFT &&
		jointype != JOIN_SEMI && jointype != JOIN_ANTI)
		return NULL;
	if (!IS_SIMPLE_REL(innerrel) || innerrel->rtekind != RTE_RELATION ||
		!bms_is_empty(innerrel->lateral_relids))
		return NULL;
	return planner_rt_fetch(innerrel->relid, root);
}

Path *
eytz_join_outer_path(RelOptInfo *outerrel)
{
	Path	   *outer_path = outerrel->cheapest_total_path;

	if (outer_path == NULL || PATH_REQ_OUTER(outer_path) != NULL)
		return NULL;
	return outer_path;
}

bool
eytz_join_split_quals(RelOptInfo *joinrel, JoinType jointype, List *restrictlist,
					  List **joinquals, List **otherquals)
{
	ListCell   *lc;

	foreach(lc, restrictlist)
	{
		RestrictInfo *rinfo = lfirst(lc);

		if (rinfo->pseudoconstant)
			return false;
		if (IS_OUTER_JOIN(jointype) && RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
			*otherquals = lappend(*otherquals, rinfo);
		else
			*joinquals = lappend(*joinquals, rinfo);
	}
	return true;
}

CustomPath *
eytz_join_new_path(RelOptInfo *joinrel, Path *outer_path, bool parallel_safe,
				   const CustomPathMethods *methods)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = parallel_safe;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = joinrel->rows;
	cpath->path.pathkeys = NIL;
	/*
	 * no CUSTOMPATH_SUPPORT_PROJECTION: a target list set after
	 * PlanCustomPath would not match custom_scan_tlist's nulling marks (16+)
	 */
	cpath->flags = 0;
	cpath->custom_paths = list_make1(outer_path);
	cpath->methods = methods;
	return cpath;
}

/* A column of a domain type comes relabeled to its base type (indxpath.c looks through it too) */
Node *
eytz_strip_relabel(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node;
}

List *
eytz_clause_exprs(List *rinfos)
{
	List	   *res = NIL;
	ListCell   *lc;

	foreach(lc, rinfos)
		res = lappend(res, ((RestrictInfo *) lfirst(lc))->clause);
	return res;
}

static int
tle_attno_cmp(const ListCell *a, const ListCell *b)
{
	AttrNumber	x = ((Var *) ((TargetEntry *) lfirst(a))->expr)->varattno;
	AttrNumber	y = ((Var *) ((TargetEntry *) lfirst(b))->expr)->varattno;

	return (x > y) - (x < y);
}

/*
 * The columns of a sequential scan of the outer table in the table's order:
 * a scan whose target list is the stored row itself returns it without a
 * projection per row (the planner orders the join's needed columns
 * otherwise); the join reads the outer columns by position, as its scan
 * tuple lists them
 */
static void
outer_columns_in_table_order(Plan *outer_plan)
{
	List	   *cols = NIL;
	ListCell   *lc;
	AttrNumber	prev = 0;
	bool		ordered = true;
	int			resno = 1;

	if (!IsA(outer_plan, SeqScan))
		return;
	foreach(lc, outer_plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *var = (Var *) tle->expr;

		if (tle->resjunk || !IsA(var, Var) || var->varlevelsup != 0 ||
			var->varno != ((Scan *) outer_plan)->scanrelid || var->varattno <= 0)
			return;
		ordered = ordered && var->varattno > prev;
		prev = var->varattno;
	}
	if (ordered)
		return;
	foreach(lc, outer_plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		cols = lappend(cols, makeTargetEntry(tle->expr, 0, tle->resname, false));
	}
	list_sort(cols, tle_attno_cmp);
	foreach(lc, cols)
		((TargetEntry *) lfirst(lc))->resno = resno++;
	outer_plan->targetlist = cols;
}

CustomScan *
eytz_join_new_scan(CustomPath *best_path, List *tlist, List *custom_plans, int *nouter,
				   const CustomScanMethods *methods)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *outer_plan = linitial(custom_plans);
	List	   *scan_tlist = NIL;
	ListCell   *lc;
	int			resno = 1;

	outer_columns_in_table_order(outer_plan);

	/* outer columns first, in the outer plan's order */
	foreach(lc, outer_plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(tle->expr), resno++, NULL, false));
	}
	*nouter = resno - 1;

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_scan_tlist = scan_tlist;
	cscan->methods = methods;
	return cscan;
}

TargetEntry *
eytz_scan_tlist_column(List *scan_tlist, const Var *var)
{
	ListCell   *lc;

	foreach(lc, scan_tlist)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *col = (Var *) tle->expr;

		if (IsA(col, Var) && col->varno == var->varno &&
			col->varattno == var->varattno && col->varlevelsup == 0)
			return tle;
	}
	return NULL;
}

/*
 * A copy of expression node whose columns of the scan tuple are marked
 * nulled by the outer joins their scan_tlist entry is.  16 marks a column
 * read above an outer join (the target list) apart from the same column
 * read below it (the join's own quals), but the join produces each column
 * once and setrefs.c wants every reference to equal its one entry: the
 * marks only check the planner's work, the executor ignores them.
 */
static Node *
match_scan_tlist_mutator(Node *node, List *scan_tlist)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == 0)
	{
		Var		   *var = (Var *) copyObject(node);
		TargetEntry *tle = eytz_scan_tlist_column(scan_tlist, var);

		if (tle != NULL)
			EytzVarCopyNullingRels(var, (Var *) tle->expr);
		return (Node *) var;
	}
	return expression_tree_mutator(node, match_scan_tlist_mutator, scan_tlist);
}

Node *
eytz_match_scan_tlist(Node *node, List *scan_tlist)
{
	return match_scan_tlist_mutator(node, scan_tlist);
}
