/*
 * eytzfdwjoin.c
 *		The planner of the batched join over a foreign inner side ("EytzGPU
 *		Foreign Join", run by eytzfdwjoinexec.c): batched key access through
 *		postgres_fdw (or another FDW that ships "column = ANY($param)").
 *
 * When the inner side of an INNER, LEFT, SEMI or ANTI equi-join is a foreign
 * table, or a partitioned table whose leaves are foreign tables (local ones
 * beside them too), the outer side is read in batches; each batch's
 * distinct non-NULL keys, sorted, are sent to each leaf as the one array
 * parameter of the clause "key = ANY($n)" that the leaf's own ForeignScan
 * ships: one remote query per leaf per batch.  A local leaf takes the same
 * array as the condition of its own index scan (PostgreSQL's index paths
 * for the clause; an eytzgpu index answers it with one batched lookup).
 * The ForeignScans are planned by the FDW itself (GetForeignRelSize,
 * GetForeignPaths, GetForeignPlan over a copy of the leaf's RelOptInfo
 * with the clause added to its restrictions), so its
 * shippability rules, connections, user mappings, remote transactions and
 * fetch_size apply as they are; where it would not ship the clause the path
 * is not offered.  Several leaves sit under an Append whose ForeignScans are
 * asynchronous where the FDW supports it: every leaf's query is sent before
 * any is read.  Keys are routed to the leaves by the partition key where it
 * is the join column (eytzpartroute.h), else sent to every leaf.  The rows
 * that come back are matched with the batch through a hash of its keys, and
 * the join's clauses are evaluated locally on each pair.  The joins it takes,
 * its leaves, its path and its plan's scan tuple are built as the EytzGPU
 * Join's are (eytzjoinplan.h, eytzjoinleaves.h).
 *
 * The plan: custom_plans are the outer plan and the inner one (a
 * ForeignScan, or an Append of the leaves' scans); custom_scan_tlist is the
 * outer plan's target list followed by the inner plan's columns;
 * custom_exprs and custom_private are lists indexed by the enums below.  The
 * array parameters are PARAM_EXEC params that only this node sets: they are
 * added to root->outer_params (as a NestLoop's params are valid below it) so
 * that SS_finalize_plan accepts them below this node.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
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
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/typcache.h"

#include "eytzcompat.h"
#include "eytzfdwjoin.h"
#include "eytzjoin.h"
#include "eytzjoinleaves.h"
#include "eytzjoinplan.h"

static bool eytz_enable_foreign_join = true;
static int	eytz_foreign_batch_size = 262144;

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

static Plan *fdwjoin_plan_path(PlannerInfo *root, RelOptInfo *rel,
							   CustomPath *best_path, List *tlist,
							   List *clauses, List *custom_plans);

static const CustomPathMethods fdwjoin_path_methods = {
	.CustomName = "EytzGPU Foreign Join",
	.PlanCustomPath = fdwjoin_plan_path,
};

static const CustomScanMethods fdwjoin_scan_methods = {
	.CustomName = "EytzGPU Foreign Join",
	.CreateCustomScanState = eytz_fdwjoin_create_scan_state,
};

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
		Node	   *inner = eytz_strip_relabel(args[side]);
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

/* "key = ANY($n)", $n a new PARAM_EXEC array param of the key's type (*param) */
static ScalarArrayOpExpr *
key_array_clause(PlannerInfo *root, const FdwKeyClause *kc, Node *key, Param **param)
{
	ScalarArrayOpExpr *saop = makeNode(ScalarArrayOpExpr);

	*param = generate_new_exec_param(root, get_array_type(kc->keytype), -1,
									 exprCollation(key));
	saop->opno = kc->eq_opno;
	saop->opfuncid = get_opcode(kc->eq_opno);
	saop->useOr = true;
	saop->inputcollid = kc->collation;
	saop->args = list_make2(key, *param);
	saop->location = -1;
	return saop;
}

/* A copy of leaf, without its paths, with restriction rinfo added */
static RelOptInfo *
leaf_copy(RelOptInfo *leaf, RestrictInfo *rinfo)
{
	RelOptInfo *rel = makeNode(RelOptInfo);

	memcpy(rel, leaf, sizeof(RelOptInfo));
	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	rel->ppilist = NIL;
	rel->cheapest_startup_path = NULL;
	rel->cheapest_total_path = NULL;
	rel->cheapest_unique_path = NULL;
	rel->cheapest_parameterized_paths = NIL;
	rel->baserestrictinfo = lappend(list_copy(leaf->baserestrictinfo), rinfo);
	return rel;
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
	RelOptInfo *rel;
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

	saop = key_array_clause(root, kc, key, &param);
	rinfo = eytz_make_restrictinfo(root, (Expr *) saop, leaf->relids);

	/* the FDW plans a copy of the leaf: the leaf's own paths stay as they are */
	rel = leaf_copy(leaf, rinfo);
	rel->fdw_private = NULL;

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

/*
 * A local leaf beside the shards: PostgreSQL's own index paths for a copy of
 * the leaf (and of its indexes) with "key = ANY($n)" added to its
 * restrictions ($n a new PARAM_EXEC array param, *paramid), returning the
 * columns parent_vars (of parent, translated to leaf): the cheapest
 * unparameterized index or bitmap scan (an eytzgpu index answers the array
 * with one batched lookup), or NULL where no index takes the clause (a
 * sequential scan per batch would not be batched key access).
 */
static Path *
path_local_leaf(PlannerInfo *root, RelOptInfo *parent, RelOptInfo *leaf,
				const FdwKeyClause *kc, List *parent_vars, int *paramid)
{
	RelOptInfo *rel;
	Node	   *key;
	List	   *vars;
	Param	   *param;
	ScalarArrayOpExpr *saop;
	Path	   *best = NULL;
	ListCell   *lc;

	key = eytz_adjust_appendrel_multilevel(root, (Node *) kc->inner_arg, leaf, parent);
	vars = (List *) eytz_adjust_appendrel_multilevel(root, (Node *) parent_vars, leaf, parent);
	saop = key_array_clause(root, kc, key, &param);
	/* the leaf's own paths stay as they are */
	rel = leaf_copy(leaf, eytz_make_restrictinfo(root, (Expr *) saop, leaf->relids));
	rel->consider_parallel = false;
	/* the scan returns exactly the columns the other leaves' scans do */
	rel->reltarget = create_empty_pathtarget();
	foreach(lc, vars)
		add_column_to_pathtarget(rel->reltarget, lfirst(lc), 0);
	set_pathtarget_cost_width(root, rel->reltarget);
	/* an index matches the restrictions of its own rel (indrestrictinfo) */
	rel->indexlist = NIL;
	foreach(lc, leaf->indexlist)
	{
		IndexOptInfo *index = makeNode(IndexOptInfo);

		memcpy(index, lfirst(lc), sizeof(IndexOptInfo));
		index->rel = rel;
		rel->indexlist = lappend(rel->indexlist, index);
	}
	check_index_predicates(root, rel);
	set_baserel_size_estimates(root, rel);
	create_index_paths(root, rel);
	foreach(lc, rel->pathlist)
	{
		Path	   *path = lfirst(lc);

		if (path->param_info == NULL &&
			(IsA(path, IndexPath) || IsA(path, BitmapHeapPath)) &&
			(best == NULL || path->total_cost < best->total_cost))
			best = path;
	}
	if (best != NULL)
		*paramid = param->paramid;
	return best;
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
	Size		row_bytes = eytz_fdwjoin_row_bytes(list_length(outer_path->pathtarget->exprs),
												   get_typlen(exprType((Node *) kc->outer_expr)));
	double		batch_rows = Min(Min((double) eytz_foreign_batch_size, outer_rows),
								 Max(floor(get_hash_memory_limit() / (double) row_bytes), 1.0));
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
		double		tuple_cost = 0;

		/* a local leaf: no remote query, its rows read here */
		if (OidIsValid(leaf->serverid))
		{
			tuple_cost = server_cost_option(leaf->serverid, "fdw_tuple_cost",
											EYTZ_PGFDW_DEFAULT_TUPLE_COST);
			remote += nbatches * server_cost_option(leaf->serverid, "fdw_startup_cost", 100.0);
		}
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
	int			npruned = 0;
	List	   *inner_vars = NIL;
	List	   *leaf_plans = NIL;
	List	   *paramids = NIL;
	List	   *leaf_oids = NIL;
	List	   *local_paths = NIL;
	List	   *cpath_local = NIL;
	int			nforeign = 0;
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
	rte = eytz_join_inner_rte(root, innerrel, jointype);
	if (rte == NULL)
		return;
	if (rte->relkind == RELKIND_FOREIGN_TABLE && !rte->inh)
	{
		if (innerrel->fdwroutine == NULL)
			return;
		leaves = list_make1(innerrel);
	}
	else if (rte->relkind == RELKIND_PARTITIONED_TABLE && rte->inh)
	{
		if (!eytz_join_collect_leaves(root, innerrel, RELKIND_FOREIGN_TABLE, &leaves,
									  &npruned) || leaves == NIL)
			return;
	}
	else
		return;
	outer_path = eytz_join_outer_path(outerrel);
	if (outer_path == NULL)
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

	if (!eytz_join_split_quals(joinrel, jointype, extra->restrictlist,
							   &joinquals, &otherquals))
		return;
	foreach(lc, joinquals)
	{
		if (match_key_clause(lfirst(lc), outerrel, innerrel, &kc))
		{
			have_key = true;
			break;
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

	/* only local leaves: the EytzGPU Join's (eytzjoin.c) */
	foreach(lc, leaves)
		nforeign += OidIsValid(((RelOptInfo *) lfirst(lc))->serverid);
	if (nforeign == 0)
		return;

	/*
	 * each leaf's scan for one batch: a foreign leaf's ForeignScan, planned
	 * now; a local leaf's index scan (a slot left NULL in leaf_plans), planned
	 * with the join (custom_paths) and put in its slot then
	 */
	foreach(lc, leaves)
	{
		RelOptInfo *leaf = lfirst(lc);
		int			paramid = 0;
		ForeignScan *fscan = NULL;
		Path	   *lpath = NULL;

		if (OidIsValid(leaf->serverid))
			fscan = plan_foreign_leaf(root, innerrel, leaf, &kc, inner_vars, &paramid);
		else
		{
			lpath = path_local_leaf(root, innerrel, leaf, &kc, inner_vars, &paramid);
			if (lpath == NULL)
				elog(DEBUG1, "eytzgpu: no foreign join over \"%s\": its leaf \"%s\" has no index for \"%s = ANY(...)\"",
					 get_rel_name(rte->relid), get_rel_name(planner_rt_fetch(leaf->relid, root)->relid),
					 get_attname(rte->relid, kc.inner_var->varattno, false));
		}
		if (fscan == NULL && lpath == NULL)
			return;
		leaf_plans = lappend(leaf_plans, fscan);
		local_paths = lappend(local_paths, lpath);
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
			Path	   *lpath = list_nth(local_paths, foreach_current_index(lc));

			if (lpath != NULL)
			{
				/* a local leaf: read while the shards' queries run */
				append->plan.startup_cost = Max(append->plan.startup_cost,
												lpath->startup_cost);
				append->plan.total_cost += lpath->total_cost;
				append->plan.plan_rows += lpath->rows;
				cpath_local = lappend(cpath_local, lpath);
				continue;
			}
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

	cpath = eytz_join_new_path(joinrel, outer_path, false, &fdwjoin_path_methods);
	cpath->custom_paths = list_concat(cpath->custom_paths, cpath_local);
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
	cost_fdw_join(root, cpath, outer_path, innerrel, leaves, &kc, joinquals, otherquals);
	add_path(joinrel, &cpath->path);
}

static Plan *
fdwjoin_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
				  List *tlist, List *clauses, List *custom_plans)
{
	List	   *ppriv = best_path->custom_private;
	Plan	   *inner_plan = list_nth(ppriv, FJ_PATH_INNER_PLAN);
	CustomScan *cscan;
	List	   *scan_tlist;
	List	   *tlist_vars;
	ListCell   *lc;
	int			nouter;

	/* the local leaves' plans (custom_plans after the outer one) into their slots */
	if (list_length(custom_plans) > 1)
	{
		Append	   *append = castNode(Append, inner_plan);
		int			next = 1;

		append->appendplans = list_copy(append->appendplans);
		foreach(lc, append->appendplans)
		{
			if (lfirst(lc) == NULL)
			{
				Plan	   *leaf_plan = list_nth(custom_plans, next++);

				lfirst(lc) = leaf_plan;
				append->plan.plan_width = leaf_plan->plan_width;
			}
		}
		Assert(next == list_length(custom_plans));
	}
	cscan = eytz_join_new_scan(best_path, tlist,
							   list_make2(linitial(custom_plans), inner_plan),
							   &nouter, &fdwjoin_scan_methods);
	scan_tlist = cscan->custom_scan_tlist;
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
							 makeTargetEntry((Expr *) copyObject(var),
											 list_length(scan_tlist) + 1, NULL, false));
	}
	cscan->custom_scan_tlist = scan_tlist;

	/* the array params are set by this node: valid below it (see the top) */
	foreach(lc, (List *) list_nth(ppriv, FJ_PATH_PARAMIDS))
		root->outer_params = bms_add_member(root->outer_params, lfirst_int(lc));

	/* in the order of FdwScanExprIndex */
	cscan->custom_exprs = (List *)
		eytz_match_scan_tlist((Node *) list_make3(list_nth(ppriv, FJ_PATH_OUTER_KEY),
												  eytz_clause_exprs(list_nth(ppriv, FJ_PATH_JOINQUALS)),
												  eytz_clause_exprs(list_nth(ppriv, FJ_PATH_OTHERQUALS))),
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
	return &cscan->scan.plan;
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
							&eytz_foreign_batch_size, 262144, 1, 16 * 1024 * 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);
	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = fdwjoin_pathlist;
	RegisterCustomScanMethods(&fdwjoin_scan_methods);
}
