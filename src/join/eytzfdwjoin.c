/*
 * eytzfdwjoin.c
 *		The batched join over a foreign inner side ("EytzGPU Foreign Join"):
 *		batched key access through postgres_fdw (or another FDW that ships
 *		"column = ANY($param)").
 *
 * When the inner side of an INNER, LEFT, SEMI or ANTI equi-join is a foreign
 * table, or a partitioned table whose leaves are all foreign tables, the
 * outer side is read in batches; each batch's distinct non-NULL keys,
 * sorted, are sent to each leaf as the one array parameter of the clause
 * "key = ANY($n)" that the leaf's own ForeignScan ships: one remote query
 * per leaf per batch.  The ForeignScans are planned by the FDW itself
 * (GetForeignRelSize, GetForeignPaths, GetForeignPlan over a copy of the
 * leaf's RelOptInfo with the clause added to its restrictions), so its
 * shippability rules, connections, user mappings, remote transactions and
 * fetch_size apply as they are; where it would not ship the clause the path
 * is not offered.  Several leaves sit under an Append whose ForeignScans are
 * asynchronous where the FDW supports it: every leaf's query is sent before
 * any is read.  Keys are routed to the leaves by the partition key where it
 * is the join column (eytzpartroute.h), else sent to every leaf.  The rows
 * that come back are matched with the batch through a hash of its keys, and
 * the join's clauses are evaluated locally on each pair.
 *
 * The plan: custom_plans are the outer plan and the inner one (a
 * ForeignScan, or an Append of ForeignScans); custom_scan_tlist is the outer
 * plan's target list followed by the inner plan's columns; custom_exprs and
 * custom_private are lists indexed by the enums below.  The array
 * parameters are PARAM_EXEC params that only this node sets: they are added
 * to root->outer_params (as a NestLoop's params are valid below it) so that
 * SS_finalize_plan accepts them below this node.
 */
#include "postgres.h"

#include <math.h>

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paramassign.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "partitioning/partdesc.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/sortsupport.h"
#include "utils/typcache.h"

#include "eytzcompat.h"
#include "eytzjoin.h"
#include "eytzpartroute.h"

static bool eytz_enable_foreign_join = true;
static int	eytz_foreign_batch_size = 65536;

static set_join_pathlist_hook_type prev_join_pathlist_hook = NULL;

/* The CustomPath's custom_private */
enum FdwPathPrivateIndex
{
	FJ_PATH_JOINTYPE,
	FJ_PATH_OUTER_KEY,			/* the outer side of the key clause */
	FJ_PATH_JOINQUALS,			/* RestrictInfos, the key clause among them */
	FJ_PATH_OTHERQUALS,			/* RestrictInfos */
	FJ_PATH_INNER_PLAN,			/* the ForeignScan or the Append of them */
	FJ_PATH_PARAMIDS,			/* per leaf: its array param */
	FJ_PATH_LEAF_OIDS,
	FJ_PATH_KEY_COL,			/* the key's column in the inner tuple (1-based) */
	FJ_PATH_KEYTYPE,
	FJ_PATH_COLLATION,
	FJ_PATH_EQ_OPNO,
	FJ_PATH_PARENT_OID,			/* the partitioned table, or InvalidOid */
	FJ_PATH_KEY_ATTNO			/* the key column of the partitioned table */
};

/* The CustomScan's custom_private */
enum FdwScanPrivateIndex
{
	FJ_PRIV_JOINTYPE,
	FJ_PRIV_NOUTER,
	FJ_PRIV_KEY_COL,
	FJ_PRIV_KEYTYPE,
	FJ_PRIV_COLLATION,
	FJ_PRIV_EQ_OPNO,
	FJ_PRIV_PARENT_OID,
	FJ_PRIV_KEY_ATTNO,
	FJ_PRIV_PARAMIDS,
	FJ_PRIV_LEAF_OIDS,
	FJ_PRIV_BATCH_SIZE,
	FJ_NUM_PRIV
};

/* The CustomScan's custom_exprs */
enum FdwScanExprIndex
{
	FJ_EXPR_OUTER_KEY,
	FJ_EXPR_JOINQUAL,
	FJ_EXPR_OTHERQUAL,
	FJ_NUM_EXPR
};

static Plan *fdwjoin_plan_path(PlannerInfo *root, RelOptInfo *rel,
							   CustomPath *best_path, List *tlist,
							   List *clauses, List *custom_plans);
static Node *fdwjoin_create_scan_state(CustomScan *cscan);

static const CustomPathMethods fdwjoin_path_methods = {
	.CustomName = "EytzGPU Foreign Join",
	.PlanCustomPath = fdwjoin_plan_path,
};

static const CustomScanMethods fdwjoin_scan_methods = {
	.CustomName = "EytzGPU Foreign Join",
	.CreateCustomScanState = fdwjoin_create_scan_state,
};

/* ---------------------------------------------------------------------
 * Planner
 * ---------------------------------------------------------------------
 */

/* The key clause: "inner.key = outer_expr", one type, its default equality */
typedef struct FdwKeyClause
{
	RestrictInfo *rinfo;
	Expr	   *inner_arg;		/* the inner column, maybe relabeled */
	Var		   *inner_var;
	Expr	   *outer_expr;
	Oid			keytype;
	Oid			collation;
	Oid			eq_opno;
} FdwKeyClause;

static Node *
strip_relabel(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node;
}

static bool
match_key_clause(RestrictInfo *rinfo, RelOptInfo *outerrel, RelOptInfo *innerrel,
				 FdwKeyClause *out)
{
	OpExpr	   *op;
	Node	   *args[2];
	Relids		relids[2];
	int			side;
	TypeCacheEntry *tc;

	if (rinfo->pseudoconstant || !IsA(rinfo->clause, OpExpr))
		return false;
	op = (OpExpr *) rinfo->clause;
	if (list_length(op->args) != 2)
		return false;
	args[0] = linitial(op->args);
	args[1] = lsecond(op->args);
	relids[0] = rinfo->left_relids;
	relids[1] = rinfo->right_relids;
	for (side = 0; side < 2; side++)
	{
		Node	   *inner = strip_relabel(args[side]);
		Node	   *other = args[1 - side];
		Relids		other_relids = relids[1 - side];

		if (!IsA(inner, Var) || ((Var *) inner)->varno != innerrel->relid ||
			((Var *) inner)->varlevelsup != 0 || ((Var *) inner)->varattno <= 0)
			continue;
		if (bms_is_empty(other_relids) || !bms_is_subset(other_relids, outerrel->relids) ||
			contain_volatile_functions(other))
			continue;
		if (exprType(args[side]) != exprType(other))
			continue;
		tc = lookup_type_cache(exprType(other),
							   TYPECACHE_EQ_OPR | TYPECACHE_LT_OPR | TYPECACHE_HASH_PROC);
		if (tc->eq_opr != op->opno || !OidIsValid(tc->lt_opr) ||
			!OidIsValid(tc->hash_proc) || !OidIsValid(get_array_type(tc->type_id)))
			continue;
		out->rinfo = rinfo;
		out->inner_arg = (Expr *) args[side];
		out->inner_var = (Var *) inner;
		out->outer_expr = (Expr *) other;
		out->keytype = tc->type_id;
		out->collation = op->inputcollid;
		out->eq_opno = op->opno;
		return true;
	}
	return false;
}

/*
 * The leaves of partitioned rel: false if one is not a foreign table (a
 * pruned or empty one is left out)
 */
static bool
collect_foreign_leaves(PlannerInfo *root, RelOptInfo *rel, List **leaves)
{
	ListCell   *lc;

	foreach(lc, root->append_rel_list)
	{
		AppendRelInfo *appinfo = lfirst(lc);
		RelOptInfo *child;
		RangeTblEntry *crte;

		if (appinfo->parent_relid != rel->relid)
			continue;
		child = root->simple_rel_array[appinfo->child_relid];
		if (child == NULL || IS_DUMMY_REL(child))
			continue;
		crte = planner_rt_fetch(appinfo->child_relid, root);
		if (crte->inh)
		{
			if (!collect_foreign_leaves(root, child, leaves))
				return false;
			continue;
		}
		if (crte->relkind != RELKIND_FOREIGN_TABLE || child->fdwroutine == NULL ||
			!bms_is_empty(child->lateral_relids))
			return false;
		*leaves = lappend(*leaves, child);
	}
	return true;
}

static bool
param_walker(Node *node, int *paramid)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC &&
		((Param *) node)->paramid == *paramid)
		return true;
	return expression_tree_walker(node, param_walker, paramid);
}

/* Does any Var of node (of rel relid) name a system column or a whole row? */
static bool
has_system_vars(Node *node, Index relid)
{
	List	   *vars = pull_var_clause(node, PVC_RECURSE_PLACEHOLDERS |
									   PVC_RECURSE_AGGREGATES |
									   PVC_RECURSE_WINDOWFUNCS);
	ListCell   *lc;

	foreach(lc, vars)
	{
		Var		   *var = lfirst(lc);

		if (var->varno == relid && var->varattno <= 0)
			return true;
	}
	return false;
}

/*
 * The FDW's own ForeignScan of leaf with "key = ANY($n)" added to its
 * restrictions ($n a new PARAM_EXEC array param, *paramid), returning the
 * columns parent_vars (of parent, translated to leaf); NULL where the FDW
 * would not ship the clause.  *per_query and *per_row: the FDW's costs of
 * one remote query and of a row it returns (postgres_fdw's
 * fdw_startup_cost and fdw_tuple_cost).
 */
static ForeignScan *
plan_foreign_leaf(PlannerInfo *root, RelOptInfo *parent, RelOptInfo *leaf,
				  const FdwKeyClause *kc, List *parent_vars, int *paramid)
{
	RangeTblEntry *rte = planner_rt_fetch(leaf->relid, root);
	RelOptInfo *rel = makeNode(RelOptInfo);
	Node	   *key;
	List	   *vars;
	List	   *tlist = NIL;
	Param	   *param;
	ScalarArrayOpExpr *saop;
	RestrictInfo *rinfo;
	Path	   *best = NULL;
	ForeignScan *fscan;
	ListCell   *lc;
	int			resno = 1;

	if (leaf == parent)
	{
		key = (Node *) copyObject(kc->inner_arg);
		vars = copyObject(parent_vars);
	}
	else
	{
		key = eytz_adjust_appendrel_multilevel(root, (Node *) kc->inner_arg, leaf, parent);
		vars = (List *) eytz_adjust_appendrel_multilevel(root, (Node *) parent_vars,
														 leaf, parent);
	}
	foreach(lc, vars)
		tlist = lappend(tlist, makeTargetEntry(lfirst(lc), resno++, NULL, false));

	param = generate_new_exec_param(root, get_array_type(kc->keytype), -1,
									exprCollation(key));
	saop = makeNode(ScalarArrayOpExpr);
	saop->opno = kc->eq_opno;
	saop->opfuncid = get_opcode(kc->eq_opno);
	saop->useOr = true;
	saop->inputcollid = kc->collation;
	saop->args = list_make2(key, param);
	saop->location = -1;
	rinfo = eytz_make_restrictinfo(root, (Expr *) saop, leaf->relids);

	/* the FDW plans a copy of the leaf: the leaf's own paths stay as they are */
	memcpy(rel, leaf, sizeof(RelOptInfo));
	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	rel->ppilist = NIL;
	rel->cheapest_startup_path = NULL;
	rel->cheapest_total_path = NULL;
	rel->cheapest_unique_path = NULL;
	rel->cheapest_parameterized_paths = NIL;
	rel->fdw_private = NULL;
	rel->baserestrictinfo = lappend(list_copy(leaf->baserestrictinfo), rinfo);

	rel->fdwroutine->GetForeignRelSize(root, rel, rte->relid);
	rel->fdwroutine->GetForeignPaths(root, rel, rte->relid);
	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (IsA(path, ForeignPath) && path->param_info == NULL &&
			(best == NULL || path->total_cost < best->total_cost))
			best = path;
	}
	if (best == NULL)
		return NULL;
	fscan = rel->fdwroutine->GetForeignPlan(root, rel, rte->relid, (ForeignPath *) best,
											tlist, rel->baserestrictinfo, NULL);
	/* shipped: not a local qual, and its param among the values sent */
	if (list_member(fscan->scan.plan.qual, saop) ||
		!param_walker((Node *) fscan->fdw_exprs, &param->paramid))
		return NULL;

	/* what create_foreignscan_plan adds to the FDW's plan */
	fscan->scan.plan.startup_cost = best->startup_cost;
	fscan->scan.plan.total_cost = best->total_cost;
	fscan->scan.plan.plan_rows = best->rows;
	fscan->scan.plan.plan_width = best->pathtarget->width;
	fscan->scan.plan.parallel_aware = false;
	fscan->scan.plan.parallel_safe = false;
	fscan->fs_server = rel->serverid;
	fscan->fs_relids = bms_copy(rel->relids);
	eytz_foreignscan_set_relids(fscan, rel->relids, rel->userid);
	fscan->fsSystemCol = false;
	if (rel->useridiscurrent)
		root->glob->dependsOnRole = true;
	*paramid = param->paramid;
	return fscan;
}

/* A numeric option of a foreign server, or dflt */
static double
server_cost_option(Oid serverid, const char *name, double dflt)
{
	ForeignServer *server = GetForeignServer(serverid);
	ListCell   *lc;

	foreach(lc, server->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, name) == 0)
			return strtod(defGetString(def), NULL);
	}
	return dflt;
}

/*
 * Cost: the outer path; per outer row the key, its sort and hash; per
 * batch and leaf one remote query (the server's fdw_startup_cost) with its
 * distinct keys (a lookup each on the remote side, about an index
 * descent); per row returned (those of the distinct keys) the server's
 * fdw_tuple_cost and a probe of the batch; per pair matched the join's
 * clauses; per result row the projection.
 */
static void
cost_fdw_join(PlannerInfo *root, CustomPath *cpath, Path *outer_path,
			  RelOptInfo *innerrel, List *leaves, const FdwKeyClause *kc,
			  List *joinquals, List *otherquals)
{
	double		outer_rows = Max(outer_path->rows, 1.0);
	double		batch_rows = Min((double) eytz_foreign_batch_size, outer_rows);
	double		nbatches = ceil(outer_rows / Max(batch_rows, 1.0));
	double		inner_tuples = Max(innerrel->tuples, Max(innerrel->rows, 1.0));
	Selectivity sel;
	double		outer_keys,
				inner_keys,
				returned,
				matches;
	Cost		remote = 0;
	QualCost	keycost,
				jqcost,
				oqcost;
	ListCell   *lc;
	Cost		run;

	/*
	 * the rows the leaves return: those of the batch's distinct keys, each
	 * sent once however many outer rows hold it
	 */
	outer_keys = estimate_num_groups(root, list_make1(kc->outer_expr), outer_rows, NULL, NULL);
	inner_keys = estimate_num_groups(root, list_make1(kc->inner_arg), inner_tuples, NULL, NULL);
	sel = clauselist_selectivity(root, list_make1(kc->rinfo), 0, JOIN_INNER, NULL);
	returned = clamp_row_est(Min(outer_rows * sel * inner_tuples,
								 Min(outer_keys * nbatches, inner_keys) *
								 inner_tuples / Max(inner_keys, 1.0)));
	matches = clamp_row_est(outer_rows * sel * inner_tuples);
	cost_qual_eval_node(&keycost, (Node *) kc->outer_expr, root);
	cost_qual_eval(&jqcost, extract_actual_clauses(joinquals, false), root);
	cost_qual_eval(&oqcost, extract_actual_clauses(otherquals, false), root);

	foreach(lc, leaves)
	{
		RelOptInfo *leaf = lfirst(lc);
		double		share = leaf->tuples > 0 ? leaf->tuples / inner_tuples :
			1.0 / list_length(leaves);
		double		tuple_cost = server_cost_option(leaf->serverid, "fdw_tuple_cost",
													EYTZ_PGFDW_DEFAULT_TUPLE_COST);

		remote += nbatches * server_cost_option(leaf->serverid, "fdw_startup_cost", 100.0);
		remote += returned * share * (tuple_cost + cpu_tuple_cost);
		/* the remote lookups: one descent per key sent */
		remote += Min(outer_keys * nbatches, outer_rows) * Min(share * list_length(leaves), 1.0) *
			cpu_operator_cost * (2.0 + log2(Max(leaf->tuples, 2.0)));
	}
	run = outer_rows * (keycost.per_tuple + cpu_tuple_cost +
						cpu_operator_cost * (3.0 + log2(Max(batch_rows, 2.0)))) +
		remote +
		returned * cpu_operator_cost +
		matches * (jqcost.per_tuple + oqcost.per_tuple + cpu_operator_cost) +
		cpath->path.rows * (cpu_tuple_cost + cpath->path.pathtarget->cost.per_tuple);
	cpath->path.startup_cost = outer_path->startup_cost + keycost.startup +
		jqcost.startup + oqcost.startup + cpath->path.pathtarget->cost.startup +
		run / nbatches;
	cpath->path.total_cost = outer_path->total_cost + keycost.startup +
		jqcost.startup + oqcost.startup + cpath->path.pathtarget->cost.startup + run;
}

static void
fdwjoin_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
				 RelOptInfo *outerrel, RelOptInfo *innerrel,
				 JoinType jointype, JoinPathExtraData *extra)
{
	RangeTblEntry *rte;
	Path	   *outer_path;
	List	   *joinquals = NIL;
	List	   *otherquals = NIL;
	List	   *leaves = NIL;
	List	   *inner_vars = NIL;
	List	   *leaf_plans = NIL;
	List	   *paramids = NIL;
	List	   *leaf_oids = NIL;
	FdwKeyClause kc = {0};
	bool		have_key = false;
	int			key_col = 0;
	Plan	   *inner_plan;
	CustomPath *cpath;
	ListCell   *lc;

	if (prev_join_pathlist_hook)
		prev_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);

	if (!eytz_enable_join || !eytz_enable_foreign_join)
		return;
	/* row marks: a recheck (EvalPlanQual) could not run a batch again */
	if (root->rowMarks != NIL || root->parse->resultRelation == (int) innerrel->relid)
		return;
	if (jointype != JOIN_INNER && jointype != JOIN_LEFT &&
		jointype != JOIN_SEMI && jointype != JOIN_ANTI)
		return;
	if (!IS_SIMPLE_REL(innerrel) || innerrel->rtekind != RTE_RELATION ||
		!bms_is_empty(innerrel->lateral_relids))
		return;
	rte = planner_rt_fetch(innerrel->relid, root);
	if (rte->relkind == RELKIND_FOREIGN_TABLE && !rte->inh)
	{
		if (innerrel->fdwroutine == NULL)
			return;
		leaves = list_make1(innerrel);
	}
	else if (rte->relkind == RELKIND_PARTITIONED_TABLE && rte->inh)
	{
		if (!collect_foreign_leaves(root, innerrel, &leaves) || leaves == NIL)
			return;
	}
	else
		return;
	outer_path = outerrel->cheapest_total_path;
	if (outer_path == NULL || PATH_REQ_OUTER(outer_path) != NULL)
		return;

	/* the inner side provides plain columns only */
	foreach(lc, innerrel->reltarget->exprs)
	{
		Var		   *var = lfirst(lc);

		if (!IsA(var, Var) || var->varno != innerrel->relid || var->varattno <= 0)
			return;
		inner_vars = lappend(inner_vars, var);
	}
	foreach(lc, innerrel->baserestrictinfo)
	{
		if (has_system_vars((Node *) ((RestrictInfo *) lfirst(lc))->clause, innerrel->relid))
			return;
	}

	foreach(lc, extra->restrictlist)
	{
		RestrictInfo *rinfo = lfirst(lc);

		if (rinfo->pseudoconstant)
			return;
		if (IS_OUTER_JOIN(jointype) && RINFO_IS_PUSHED_DOWN(rinfo, joinrel->relids))
			otherquals = lappend(otherquals, rinfo);
		else
		{
			if (!have_key)
				have_key = match_key_clause(rinfo, outerrel, innerrel, &kc);
			joinquals = lappend(joinquals, rinfo);
		}
	}
	if (!have_key)
		return;
	foreach(lc, inner_vars)
	{
		Var		   *var = lfirst(lc);

		if (var->varattno == kc.inner_var->varattno)
		{
			key_col = foreach_current_index(lc) + 1;
			break;
		}
	}
	if (key_col == 0)
		return;

	foreach(lc, leaves)
	{
		RelOptInfo *leaf = lfirst(lc);
		int			paramid;
		ForeignScan *fscan = plan_foreign_leaf(root, innerrel, leaf, &kc,
											   inner_vars, &paramid);

		if (fscan == NULL)
			return;
		leaf_plans = lappend(leaf_plans, fscan);
		paramids = lappend_int(paramids, paramid);
		leaf_oids = lappend_oid(leaf_oids, planner_rt_fetch(leaf->relid, root)->relid);
	}

	if (list_length(leaf_plans) == 1 && linitial(leaves) == innerrel)
		inner_plan = linitial(leaf_plans);
	else
	{
		Append	   *append = makeNode(Append);
		List	   *tlist = NIL;
		int			resno = 1;

		foreach(lc, inner_vars)
			tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
												   NULL, false));
		append->plan.targetlist = tlist;
		append->apprelids = bms_copy(innerrel->relids);
		append->appendplans = leaf_plans;
		append->first_partial_plan = list_length(leaf_plans);
		eytz_append_no_pruning(append);
		/*
		 * every leaf's query of a batch is sent before any is read: the
		 * leaves are asynchronous where the FDW can be (each leaf's
		 * ForeignScan belongs to this join alone)
		 */
		foreach(lc, leaf_plans)
		{
			ForeignScan *fscan = lfirst(lc);
			RelOptInfo *leaf = list_nth(leaves, foreach_current_index(lc));

			if (list_length(leaf_plans) > 1 && leaf->fdwroutine->ForeignAsyncRequest != NULL)
			{
				fscan->scan.plan.async_capable = true;
				append->nasyncplans++;
			}
			append->plan.startup_cost = Max(append->plan.startup_cost,
											fscan->scan.plan.startup_cost);
			append->plan.total_cost += fscan->scan.plan.total_cost;
			append->plan.plan_rows += fscan->scan.plan.plan_rows;
			append->plan.plan_width = fscan->scan.plan.plan_width;
		}
		inner_plan = &append->plan;
	}

	cpath = makeNode(CustomPath);
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parent = joinrel;
	cpath->path.pathtarget = joinrel->reltarget;
	cpath->path.param_info = NULL;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.rows = joinrel->rows;
	cpath->path.pathkeys = NIL;
	/*
	 * no CUSTOMPATH_SUPPORT_PROJECTION: a target list set after
	 * PlanCustomPath would not match custom_scan_tlist's nulling marks (16+)
	 */
	cpath->flags = 0;
	cpath->custom_paths = list_make1(outer_path);
	/* in the order of FdwPathPrivateIndex */
	cpath->custom_private = list_make5(makeInteger(jointype), kc.outer_expr,
									   joinquals, otherquals, inner_plan);
	cpath->custom_private = list_concat(cpath->custom_private,
										list_make5(paramids, leaf_oids,
												   makeInteger(key_col),
												   makeInteger((int) kc.keytype),
												   makeInteger((int) kc.collation)));
	cpath->custom_private = list_concat(cpath->custom_private,
										list_make3(makeInteger((int) kc.eq_opno),
												   makeInteger(rte->relkind == RELKIND_PARTITIONED_TABLE ?
															   (int) rte->relid : 0),
												   makeInteger(kc.inner_var->varattno)));
	cpath->methods = &fdwjoin_path_methods;
	cost_fdw_join(root, cpath, outer_path, innerrel, leaves, &kc, joinquals, otherquals);
	add_path(joinrel, &cpath->path);
}

static List *
clause_exprs(List *rinfos)
{
	List	   *res = NIL;
	ListCell   *lc;

	foreach(lc, rinfos)
		res = lappend(res, ((RestrictInfo *) lfirst(lc))->clause);
	return res;
}

static Plan *
fdwjoin_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *outer_plan = linitial(custom_plans);
	List	   *ppriv = best_path->custom_private;
	Plan	   *inner_plan = list_nth(ppriv, FJ_PATH_INNER_PLAN);
	List	   *scan_tlist = NIL;
	List	   *tlist_vars;
	ListCell   *lc;
	int			resno = 1;
	int			nouter;

	foreach(lc, outer_plan->targetlist)
	{
		TargetEntry *tle = lfirst(lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry(copyObject(tle->expr), resno++, NULL, false));
	}
	nouter = resno - 1;
	/*
	 * then the inner plan's columns (the inner rel's), each as the target
	 * list reads it: above an outer join, marked nulled by it (16+), which
	 * the quals below it then copy (eytz_match_scan_tlist)
	 */
	tlist_vars = pull_var_clause((Node *) tlist, PVC_RECURSE_AGGREGATES |
								 PVC_RECURSE_WINDOWFUNCS | PVC_RECURSE_PLACEHOLDERS);
	foreach(lc, inner_plan->targetlist)
	{
		Var		   *var = (Var *) ((TargetEntry *) lfirst(lc))->expr;
		ListCell   *lc2;

		foreach(lc2, tlist_vars)
		{
			Var		   *tvar = lfirst(lc2);

			if (IsA(tvar, Var) && tvar->varno == var->varno &&
				tvar->varattno == var->varattno && tvar->varlevelsup == 0)
			{
				var = tvar;
				break;
			}
		}
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) copyObject(var), resno++, NULL, false));
	}

	/* the array params are set by this node: valid below it (see the top) */
	foreach(lc, (List *) list_nth(ppriv, FJ_PATH_PARAMIDS))
		root->outer_params = bms_add_member(root->outer_params, lfirst_int(lc));

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = list_make2(outer_plan, inner_plan);
	cscan->custom_scan_tlist = scan_tlist;
	/* in the order of FdwScanExprIndex */
	cscan->custom_exprs = (List *)
		eytz_match_scan_tlist((Node *) list_make3(list_nth(ppriv, FJ_PATH_OUTER_KEY),
												  clause_exprs(list_nth(ppriv, FJ_PATH_JOINQUALS)),
												  clause_exprs(list_nth(ppriv, FJ_PATH_OTHERQUALS))),
							  scan_tlist);
	/* in the order of FdwScanPrivateIndex */
	cscan->custom_private =
		list_make5(copyObject(list_nth(ppriv, FJ_PATH_JOINTYPE)),
				   makeInteger(nouter),
				   copyObject(list_nth(ppriv, FJ_PATH_KEY_COL)),
				   copyObject(list_nth(ppriv, FJ_PATH_KEYTYPE)),
				   copyObject(list_nth(ppriv, FJ_PATH_COLLATION)));
	cscan->custom_private =
		list_concat(cscan->custom_private,
					list_make5(copyObject(list_nth(ppriv, FJ_PATH_EQ_OPNO)),
							   copyObject(list_nth(ppriv, FJ_PATH_PARENT_OID)),
							   copyObject(list_nth(ppriv, FJ_PATH_KEY_ATTNO)),
							   list_copy(list_nth(ppriv, FJ_PATH_PARAMIDS)),
							   list_copy(list_nth(ppriv, FJ_PATH_LEAF_OIDS))));
	cscan->custom_private = lappend(cscan->custom_private,
									makeInteger(eytz_foreign_batch_size));
	Assert(list_length(cscan->custom_private) == FJ_NUM_PRIV);
	cscan->methods = &fdwjoin_scan_methods;
	return &cscan->scan.plan;
}

/* ---------------------------------------------------------------------
 * Executor
 * ---------------------------------------------------------------------
 */

/* A leaf of the inner side and what it did (EXPLAIN ANALYZE) */
typedef struct FdwLeafState
{
	int			paramid;
	PlanState  *ps;				/* its ForeignScan */
	char	   *name;			/* "server.table" */
	uint64		queries;
	uint64		keys_sent;
	uint64		rows;
	/* this batch's keys */
	Datum	   *keys;
	int			nkeys;
} FdwLeafState;

typedef enum FdwJoinPhase
{
	FJ_FILL,					/* read the next batch */
	FJ_PROBE,					/* match the inner rows with the batch */
	FJ_UNMATCHED,				/* LEFT, ANTI: the batch's unmatched rows */
	FJ_DONE
} FdwJoinPhase;

typedef struct FdwJoinState
{
	CustomScanState css;
	PlanState  *outer_ps;
	PlanState  *inner_ps;
	JoinType	jointype;
	int			nouter;
	int			ninner;
	int			key_col;
	int			batch_size;
	ExprState  *outer_key;
	ExprState  *joinqual;
	ExprState  *otherqual;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Oid			keytype;
	SortSupportData sortsup;	/* the key type's default order */
	FmgrInfo	hash_finfo;
	int			nleaves;
	FdwLeafState *leaves;
	EytzPartRoute *route;
	TupleTableSlot *outer_mslot;	/* a batch row */
	MemoryContext batch_cxt;

	/* the batch */
	int			nrows;
	int			maxrows;
	MinimalTuple *rows;
	Datum	   *keys;
	bool	   *keynull;
	bool	   *matched;
	int		   *next_same;		/* rows of one key */
	int			ndistinct;
	Datum	   *dkeys;			/* sorted */
	int		   *dfirst;
	int		   *dnext;			/* hash chains */
	int		   *buckets;
	uint32		mask;
	bool		outer_done;

	/* where the output is */
	FdwJoinPhase phase;
	TupleTableSlot *inner_slot;
	int			cur_row;
	int			last_leaf;

	/* EXPLAIN ANALYZE */
	uint64		batches;
	uint64		outer_rows;
	uint64		distinct_keys;
	double		wait_ms;
} FdwJoinState;

static void fdwjoin_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *fdwjoin_exec(CustomScanState *node);
static void fdwjoin_end(CustomScanState *node);
static void fdwjoin_rescan(CustomScanState *node);
static void fdwjoin_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomExecMethods fdwjoin_exec_methods = {
	.CustomName = "EytzGPU Foreign Join",
	.BeginCustomScan = fdwjoin_begin,
	.ExecCustomScan = fdwjoin_exec,
	.EndCustomScan = fdwjoin_end,
	.ReScanCustomScan = fdwjoin_rescan,
	.ExplainCustomScan = fdwjoin_explain,
};

static Node *
fdwjoin_create_scan_state(CustomScan *cscan)
{
	FdwJoinState *st = (FdwJoinState *) newNode(sizeof(FdwJoinState), T_CustomScanState);

	st->css.methods = &fdwjoin_exec_methods;
	return (Node *) st;
}

static void
fdwjoin_begin(CustomScanState *node, EState *estate, int eflags)
{
	FdwJoinState *st = (FdwJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *paramids = list_nth(priv, FJ_PRIV_PARAMIDS);
	List	   *leaf_oids = list_nth(priv, FJ_PRIV_LEAF_OIDS);
	Oid			parent_oid = (Oid) intVal(list_nth(priv, FJ_PRIV_PARENT_OID));
	TypeCacheEntry *tc;
	PlanState **leaf_ps;
	int			i;

	st->jointype = (JoinType) intVal(list_nth(priv, FJ_PRIV_JOINTYPE));
	st->nouter = intVal(list_nth(priv, FJ_PRIV_NOUTER));
	st->key_col = intVal(list_nth(priv, FJ_PRIV_KEY_COL));
	st->keytype = (Oid) intVal(list_nth(priv, FJ_PRIV_KEYTYPE));
	st->collation = (Oid) intVal(list_nth(priv, FJ_PRIV_COLLATION));
	st->batch_size = intVal(list_nth(priv, FJ_PRIV_BATCH_SIZE));
	st->outer_ps = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	st->inner_ps = ExecInitNode(lsecond(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make2(st->outer_ps, st->inner_ps);
	st->ninner = list_length(lsecond_node(Plan, cscan->custom_plans)->targetlist);

	st->outer_key = ExecInitExpr(list_nth(cscan->custom_exprs, FJ_EXPR_OUTER_KEY),
								 &node->ss.ps);
	st->joinqual = ExecInitQual(list_nth(cscan->custom_exprs, FJ_EXPR_JOINQUAL),
								&node->ss.ps);
	st->otherqual = ExecInitQual(list_nth(cscan->custom_exprs, FJ_EXPR_OTHERQUAL),
								 &node->ss.ps);

	tc = lookup_type_cache(st->keytype, TYPECACHE_LT_OPR | TYPECACHE_HASH_PROC_FINFO);
	st->sortsup.ssup_cxt = CurrentMemoryContext;
	st->sortsup.ssup_collation = st->collation;
	PrepareSortSupportFromOrderingOp(tc->lt_opr, &st->sortsup);
	fmgr_info_copy(&st->hash_finfo, &tc->hash_proc_finfo, CurrentMemoryContext);
	get_typlenbyvalalign(st->keytype, &st->typlen, &st->typbyval, &st->typalign);

	st->outer_mslot = MakeSingleTupleTableSlot(ExecGetResultType(st->outer_ps),
											   &TTSOpsMinimalTuple);
	st->batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "EytzGPU Foreign Join batch",
										  ALLOCSET_DEFAULT_SIZES);

	/* the leaves' ForeignScans, in the plan's order (a lone one: no Append) */
	st->nleaves = list_length(paramids);
	st->leaves = palloc0(sizeof(FdwLeafState) * st->nleaves);
	if (IsA(st->inner_ps, AppendState))
	{
		AppendState *as = (AppendState *) st->inner_ps;

		Assert(as->as_nplans == st->nleaves);
		leaf_ps = as->appendplans;
	}
	else
		leaf_ps = &st->inner_ps;
	for (i = 0; i < st->nleaves; i++)
	{
		Oid			relid = list_nth_oid(leaf_oids, i);
		ForeignTable *ft = GetForeignTable(relid);

		st->leaves[i].paramid = list_nth_int(paramids, i);
		st->leaves[i].ps = leaf_ps[i];
		st->leaves[i].name = psprintf("%s.%s", GetForeignServer(ft->serverid)->servername,
									  get_rel_name(relid));
	}

	/* keys go to the leaves that can hold them, where the partition key says */
	if (OidIsValid(parent_oid) && st->nleaves > 1)
	{
		Relation	parent = table_open(parent_oid, AccessShareLock);

		if (estate->es_partition_directory == NULL)
			estate->es_partition_directory =
				CreatePartitionDirectory(estate->es_query_cxt, !IsolationUsesXactSnapshot());
		st->route = eytz_partroute_create(estate->es_partition_directory, parent,
										  (AttrNumber) intVal(list_nth(priv, FJ_PRIV_KEY_ATTNO)),
										  (Oid) intVal(list_nth(priv, FJ_PRIV_EQ_OPNO)),
										  st->keytype, st->collation, leaf_oids);
		table_close(parent, NoLock);
	}
	st->phase = FJ_FILL;
	st->last_leaf = 0;
}

static int
key_cmp(const void *a, const void *b, void *arg)
{
	FdwJoinState *st = arg;

	return ApplySortComparator(st->keys[*(const int *) a], false,
							   st->keys[*(const int *) b], false, &st->sortsup);
}

static uint32
key_hash(FdwJoinState *st, Datum key)
{
	return DatumGetUInt32(FunctionCall1Coll(&st->hash_finfo, st->collation, key));
}

/* The scan tuple of an outer tuple and an inner one (or none) */
static TupleTableSlot *
form_scan_tuple(FdwJoinState *st, TupleTableSlot *outer, TupleTableSlot *inner)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	int			i;

	ExecClearTuple(scan);
	slot_getallattrs(outer);
	memcpy(scan->tts_values, outer->tts_values, sizeof(Datum) * st->nouter);
	memcpy(scan->tts_isnull, outer->tts_isnull, sizeof(bool) * st->nouter);
	if (inner != NULL)
	{
		slot_getallattrs(inner);
		memcpy(scan->tts_values + st->nouter, inner->tts_values, sizeof(Datum) * st->ninner);
		memcpy(scan->tts_isnull + st->nouter, inner->tts_isnull, sizeof(bool) * st->ninner);
	}
	else
		for (i = 0; i < st->ninner; i++)
			scan->tts_isnull[st->nouter + i] = true;
	return ExecStoreVirtualTuple(scan);
}

/* The scan tuple of batch row r and an inner tuple (or none) */
static TupleTableSlot *
form_batch_scan_tuple(FdwJoinState *st, int r, TupleTableSlot *inner)
{
	return form_scan_tuple(st, ExecStoreMinimalTuple(st->rows[r], st->outer_mslot, false),
						   inner);
}

/* Append a row to the batch, growing its arrays */
static void
batch_add_row(FdwJoinState *st, TupleTableSlot *outer)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int			r = st->nrows;
	Datum		key;
	bool		isnull;

	if (r == st->maxrows)
	{
		int			n = Max(1024, st->maxrows * 2);

		if (st->maxrows == 0)
		{
			st->rows = palloc(sizeof(MinimalTuple) * n);
			st->keys = palloc(sizeof(Datum) * n);
			st->keynull = palloc(sizeof(bool) * n);
		}
		else
		{
			st->rows = repalloc(st->rows, sizeof(MinimalTuple) * n);
			st->keys = repalloc(st->keys, sizeof(Datum) * n);
			st->keynull = repalloc(st->keynull, sizeof(bool) * n);
		}
		st->maxrows = n;
	}
	st->rows[r] = ExecCopySlotMinimalTuple(outer);
	econtext->ecxt_scantuple = form_scan_tuple(st, outer, NULL);
	key = ExecEvalExprSwitchContext(st->outer_key, econtext, &isnull);
	st->keynull[r] = isnull;
	st->keys[r] = isnull ? (Datum) 0 : datumCopy(key, st->typbyval, st->typlen);
	ResetExprContext(econtext);
	st->nrows++;
}

/*
 * Read the next batch of outer rows, group their keys and send them to the
 * leaves: false when the outer side has no more rows
 */
static bool
fill_batch(FdwJoinState *st)
{
	Size		mem_limit = get_hash_memory_limit();
	MemoryContext old;
	int		   *order;
	int			nkeyed = 0;
	int			i,
				d;
	Bitmapset  *changed = NULL;

	if (st->outer_done)
		return false;
	MemoryContextReset(st->batch_cxt);
	st->nrows = st->maxrows = 0;
	while (st->nrows < st->batch_size &&
		   MemoryContextMemAllocated(st->batch_cxt, true) < mem_limit)
	{
		TupleTableSlot *outer = ExecProcNode(st->outer_ps);

		if (TupIsNull(outer))
		{
			st->outer_done = true;
			break;
		}
		old = MemoryContextSwitchTo(st->batch_cxt);
		batch_add_row(st, outer);
		MemoryContextSwitchTo(old);
	}
	if (st->nrows == 0)
		return false;
	old = MemoryContextSwitchTo(st->batch_cxt);
	st->batches++;
	st->outer_rows += st->nrows;
	st->matched = palloc0(sizeof(bool) * st->nrows);
	st->next_same = palloc(sizeof(int) * st->nrows);

	/* the distinct keys, sorted, each with its rows */
	order = palloc(sizeof(int) * st->nrows);
	for (i = 0; i < st->nrows; i++)
		if (!st->keynull[i])
			order[nkeyed++] = i;
	qsort_arg(order, nkeyed, sizeof(int), key_cmp, st);
	st->dkeys = palloc(sizeof(Datum) * Max(nkeyed, 1));
	st->dfirst = palloc(sizeof(int) * Max(nkeyed, 1));
	st->ndistinct = 0;
	for (i = 0; i < nkeyed; i++)
	{
		int			r = order[i];

		if (i > 0 && key_cmp(&order[i - 1], &order[i], st) == 0)
		{
			st->next_same[r] = st->dfirst[st->ndistinct - 1];
			st->dfirst[st->ndistinct - 1] = r;
			continue;
		}
		st->dkeys[st->ndistinct] = st->keys[r];
		st->dfirst[st->ndistinct] = r;
		st->next_same[r] = -1;
		st->ndistinct++;
	}
	st->distinct_keys += st->ndistinct;

	/* the hash of the distinct keys */
	st->mask = 1;
	while (st->mask < (uint32) st->ndistinct * 2)
		st->mask <<= 1;
	st->buckets = palloc(sizeof(int) * st->mask);
	memset(st->buckets, -1, sizeof(int) * st->mask);
	st->mask--;
	st->dnext = palloc(sizeof(int) * Max(st->ndistinct, 1));
	for (d = 0; d < st->ndistinct; d++)
	{
		uint32		b = key_hash(st, st->dkeys[d]) & st->mask;

		st->dnext[d] = st->buckets[b];
		st->buckets[b] = d;
	}

	if (st->ndistinct == 0)
	{
		MemoryContextSwitchTo(old);
		return true;
	}

	/* the keys of each leaf, in sorted order */
	if (st->route != NULL)
	{
		for (i = 0; i < st->nleaves; i++)
		{
			st->leaves[i].keys = palloc(sizeof(Datum) * st->ndistinct);
			st->leaves[i].nkeys = 0;
		}
		for (d = 0; d < st->ndistinct; d++)
		{
			const int  *targets;
			int			n = eytz_partroute_find(st->route, st->dkeys[d], &targets);

			for (i = 0; i < n; i++)
			{
				FdwLeafState *leaf = &st->leaves[targets[i]];

				leaf->keys[leaf->nkeys++] = st->dkeys[d];
			}
		}
	}
	else
		for (i = 0; i < st->nleaves; i++)
		{
			st->leaves[i].keys = st->dkeys;
			st->leaves[i].nkeys = st->ndistinct;
		}

	/* one array parameter per leaf: each leaf's query is sent once */
	for (i = 0; i < st->nleaves; i++)
	{
		FdwLeafState *leaf = &st->leaves[i];
		ParamExecData *prm = &st->css.ss.ps.state->es_param_exec_vals[leaf->paramid];
		ArrayType  *arr = construct_array(leaf->keys, leaf->nkeys, st->keytype,
										  st->typlen, st->typbyval, st->typalign);

		prm->execPlan = NULL;
		prm->value = PointerGetDatum(arr);
		prm->isnull = false;
		changed = bms_add_member(changed, leaf->paramid);
		leaf->queries++;
		leaf->keys_sent += leaf->nkeys;
	}
	MemoryContextSwitchTo(old);
	st->inner_ps->chgParam = bms_join(st->inner_ps->chgParam, changed);
	return true;
}

/* The leaf whose ForeignScan returned slot */
static int
leaf_of_slot(FdwJoinState *st, TupleTableSlot *slot)
{
	int			i;

	for (i = 0; i < st->nleaves; i++)
	{
		int			l = (st->last_leaf + i) % st->nleaves;
		PlanState  *ps = st->leaves[l].ps;

		if (slot == ps->ps_ResultTupleSlot || slot == ((ScanState *) ps)->ss_ScanTupleSlot)
		{
			st->last_leaf = l;
			return l;
		}
	}
	return -1;
}

/* The next inner row of the batch that has rows to match: false at the end */
static bool
next_inner_row(FdwJoinState *st)
{
	for (;;)
	{
		instr_time	t0,
					t1;
		TupleTableSlot *inner;
		Datum		key;
		bool		isnull;
		int			d;
		int			l;

		INSTR_TIME_SET_CURRENT(t0);
		inner = ExecProcNode(st->inner_ps);
		INSTR_TIME_SET_CURRENT(t1);
		INSTR_TIME_SUBTRACT(t1, t0);
		st->wait_ms += INSTR_TIME_GET_MILLISEC(t1);
		if (TupIsNull(inner))
			return false;
		l = leaf_of_slot(st, inner);
		if (l >= 0)
			st->leaves[l].rows++;
		key = slot_getattr(inner, st->key_col, &isnull);
		if (isnull)
			continue;
		for (d = st->buckets[key_hash(st, key) & st->mask]; d >= 0; d = st->dnext[d])
		{
			if (ApplySortComparator(st->dkeys[d], false, key, false, &st->sortsup) == 0)
				break;
		}
		if (d < 0)
			continue;
		st->inner_slot = inner;
		st->cur_row = st->dfirst[d];
		return true;
	}
}

static TupleTableSlot *
project(FdwJoinState *st)
{
	ProjectionInfo *proj = st->css.ss.ps.ps_ProjInfo;

	if (proj == NULL)
		return st->css.ss.ss_ScanTupleSlot;
	return ExecProject(proj);
}

static TupleTableSlot *
fdwjoin_exec(CustomScanState *node)
{
	FdwJoinState *st = (FdwJoinState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		ResetExprContext(econtext);
		switch (st->phase)
		{
			case FJ_FILL:
				if (!fill_batch(st))
				{
					st->phase = FJ_DONE;
					break;
				}
				st->cur_row = -1;
				st->phase = st->ndistinct > 0 ? FJ_PROBE : FJ_UNMATCHED;
				break;

			case FJ_PROBE:
				if (st->cur_row < 0)
				{
					if (!next_inner_row(st))
					{
						st->cur_row = 0;
						st->phase = FJ_UNMATCHED;
						break;
					}
				}
				while (st->cur_row >= 0)
				{
					int			r = st->cur_row;

					st->cur_row = st->next_same[r];
					if (st->matched[r] &&
						(st->jointype == JOIN_SEMI || st->jointype == JOIN_ANTI))
						continue;
					econtext->ecxt_scantuple = form_batch_scan_tuple(st, r, st->inner_slot);
					if (st->joinqual && !ExecQual(st->joinqual, econtext))
					{
						ResetExprContext(econtext);
						continue;
					}
					st->matched[r] = true;
					if (st->jointype == JOIN_ANTI)
						continue;
					if (st->otherqual && !ExecQual(st->otherqual, econtext))
					{
						ResetExprContext(econtext);
						continue;
					}
					return project(st);
				}
				break;

			case FJ_UNMATCHED:
				if (st->cur_row < 0)
					st->cur_row = 0;
				if (st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI)
				{
					while (st->cur_row < st->nrows)
					{
						int			r = st->cur_row++;

						if (st->matched[r])
							continue;
						econtext->ecxt_scantuple = form_batch_scan_tuple(st, r, NULL);
						if (st->otherqual && !ExecQual(st->otherqual, econtext))
						{
							ResetExprContext(econtext);
							continue;
						}
						return project(st);
					}
				}
				st->phase = FJ_FILL;
				break;

			case FJ_DONE:
				return NULL;
		}
	}
}

static void
fdwjoin_end(CustomScanState *node)
{
	FdwJoinState *st = (FdwJoinState *) node;

	ExecEndNode(st->outer_ps);
	ExecEndNode(st->inner_ps);
	ExecDropSingleTupleTableSlot(st->outer_mslot);
	MemoryContextDelete(st->batch_cxt);
}

static void
fdwjoin_rescan(CustomScanState *node)
{
	FdwJoinState *st = (FdwJoinState *) node;

	if (st->outer_ps->chgParam == NULL)
		ExecReScan(st->outer_ps);
	st->outer_done = false;
	st->phase = FJ_FILL;
	st->nrows = 0;
	/* the inner side is rescanned by the next batch's params */
}

static void
fdwjoin_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	FdwJoinState *st = (FdwJoinState *) node;
	int			i;

	ExplainPropertyInteger("Batch Size", NULL, st->batch_size, es);
	ExplainPropertyText("Key Routing",
						st->nleaves == 1 ? "one table" :
						st->route != NULL ? "partition key" : "every leaf", es);
	if (!es->analyze)
		return;
	ExplainPropertyUInteger("Batches", NULL, st->batches, es);
	ExplainPropertyUInteger("Outer Rows", NULL, st->outer_rows, es);
	ExplainPropertyUInteger("Distinct Keys", NULL, st->distinct_keys, es);
	if (es->timing)
		ExplainPropertyFloat("Remote Wait", "ms", st->wait_ms, 3, es);
	for (i = 0; i < st->nleaves; i++)
	{
		FdwLeafState *leaf = &st->leaves[i];

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			char	   *label = psprintf("Shard %s", leaf->name);

			ExplainPropertyText(label,
								psprintf("round trips=" UINT64_FORMAT " keys sent=" UINT64_FORMAT
										 " rows=" UINT64_FORMAT,
										 leaf->queries, leaf->keys_sent, leaf->rows), es);
		}
		else
		{
			ExplainOpenGroup("Shard", NULL, true, es);
			ExplainPropertyText("Shard", leaf->name, es);
			ExplainPropertyUInteger("Round Trips", NULL, leaf->queries, es);
			ExplainPropertyUInteger("Keys Sent", NULL, leaf->keys_sent, es);
			ExplainPropertyUInteger("Rows Returned", NULL, leaf->rows, es);
			ExplainCloseGroup("Shard", NULL, true, es);
		}
	}
}

void
eytz_fdwjoin_init(void)
{
	DefineCustomBoolVariable("eytzgpu.enable_foreign_join",
							 "Enables the batched eytzgpu join over a foreign inner side.",
							 "Where the inner side of an equi-join is a foreign table, or a partitioned table of foreign tables, the join sends each batch of distinct outer keys to each of them as one \"key = ANY($1)\" query.",
							 &eytz_enable_foreign_join, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("eytzgpu.foreign_batch_size",
							"Outer rows the eytzgpu foreign join sends to the remote tables at once.",
							"Batches are also bounded by work_mem * hash_mem_multiplier.",
							&eytz_foreign_batch_size, 65536, 1, 16 * 1024 * 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);
	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = fdwjoin_pathlist;
	RegisterCustomScanMethods(&fdwjoin_scan_methods);
}
