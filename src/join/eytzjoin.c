/*
 * eytzjoin.c
 *		Planner side of the batched index-nested-loop join ("EytzGPU Join"):
 *		GUCs, the set_join_pathlist_hook, its paths and the CustomScan plan
 *		(costed by eytzjoincost.c, built with eytzjoinplan.h's pieces).
 *
 * When the inner side of an INNER, LEFT, SEMI or ANTI join is a plain table
 * with an eytzgpu index whose column is compared with an expression of the
 * outer side, by equality or by a lower and an upper bound, a CustomPath is
 * offered: the outer side is read in batches, each batch is looked up in the
 * index at once (GPU or CPU), and the inner tuples are fetched in TID order.
 * A partitioned inner table is searched as the set of its leaves that
 * survive pruning, each through its own eytzgpu index on the column
 * (inner_sides, eytzjoinleaves.c): one path, costed leaf by leaf.
 * Where the outer rel has partial paths, a partial variant of the path
 * (add_partial_join_path) runs under Gather: each process batches its share
 * of the parallel outer scan and searches the whole index.
 *
 * The plan's custom_scan_tlist is the outer plan's target list followed by
 * the inner table's columns the join needs (plain columns, system columns,
 * the whole row), so an INDEX_VAR attno <= nouter is also the outer tuple's
 * attno: the outer key expressions are evaluated directly on the outer
 * tuples.  custom_exprs and custom_private are lists indexed by the enums of
 * eytzjoin.h; custom_private holds only integers, floats and OIDs, so the
 * plan survives copyObject.
 */
#include "postgres.h"

#include <unistd.h>

#include "access/stratnum.h"
#include "catalog/pg_class.h"
#include "catalog/pg_operator.h"
#include "commands/defrem.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "eytzcompat.h"
#include "eytzimage.h"
#include "eytzjoin.h"
#include "eytzjoinleaves.h"
#include "eytzjoinplan.h"
#include "eytzouter.h"

bool		eytz_enable_join = true;

static const struct config_enum_entry parallel_image_options[] = {
	{"auto", EYTZ_PARALLEL_IMAGE_AUTO, false},
	{"in_place", EYTZ_PARALLEL_IMAGE_IN_PLACE, false},
	{"copy", EYTZ_PARALLEL_IMAGE_COPY, false},
	{NULL, 0, false}
};

static const struct config_enum_entry lookup_overlap_options[] = {
	{"off", EYTZ_OVERLAP_OFF, false},
	{"on", EYTZ_OVERLAP_ON, false},
	{"always", EYTZ_OVERLAP_ALWAYS, false},
	{NULL, 0, false}
};

static set_join_pathlist_hook_type prev_join_pathlist_hook = NULL;

/* The OID of the eytzgpu access method, InvalidOid until looked up */
static Oid	eytz_am_oid = InvalidOid;

/* The CustomPath's custom_private */
enum EytzPathPrivateIndex
{
	EYTZ_PATH_INDEXOIDS,		/* per leaf: OIDs of the index and its table */
	EYTZ_PATH_HEAPOIDS,
	EYTZ_PATH_JOINTYPE,
	EYTZ_PATH_SINGLE_MATCH,
	EYTZ_PATH_KEYATTNOS,		/* per leaf: the indexed column */
	EYTZ_PATH_LEAF_RELIDS,		/* per leaf: its RelOptInfo's relid */
	EYTZ_PATH_INNER_RELID,
	EYTZ_PATH_EXPECTED_KEYS,
	EYTZ_PATH_STRATEGIES,
	EYTZ_PATH_ARGTYPES,
	EYTZ_PATH_OUTER_EXPRS,
	EYTZ_PATH_JOINQUALS,		/* RestrictInfos */
	EYTZ_PATH_OTHERQUALS,		/* RestrictInfos */
	EYTZ_PATH_INDEX_ONLY,		/* the index holds every inner column needed */
	EYTZ_PATH_PARENT,			/* as the plan's EYTZ_PRIV_PARENT ... */
	EYTZ_PATH_ROUTE_OPNO,
	EYTZ_PATH_PRUNED
};

static Plan *eytz_plan_path(PlannerInfo *root, RelOptInfo *rel,
							CustomPath *best_path, List *tlist,
							List *clauses, List *custom_plans);

static const CustomPathMethods eytz_path_methods = {
	.CustomName = "EytzGPU Join",
	.PlanCustomPath = eytz_plan_path,
};

static const CustomScanMethods eytz_scan_methods = {
	.CustomName = "EytzGPU Join",
	.CreateCustomScanState = eytz_join_create_scan_state,
};

static bool
is_inner_var(Node *node, RelOptInfo *innerrel)
{
	node = eytz_strip_relabel(node);
	return IsA(node, Var) && ((Var *) node)->varno == innerrel->relid;
}

/* Is clause "inner.key OP outer_expr" (either way round) usable? */
static bool
match_index_clause(PlannerInfo *root, RestrictInfo *rinfo, const EytzInnerSide *side,
				   RelOptInfo *outerrel, RelOptInfo *innerrel, EytzIdxClause *out)
{
	OpExpr	   *op;
	Node	   *left,
			   *right,
			   *other;
	Var		   *var;
	Oid			opno;
	int			strategy;
	Oid			lefttype,
				righttype;
	Relids		other_relids;

	if (rinfo->pseudoconstant || !IsA(rinfo->clause, OpExpr))
		return false;
	op = (OpExpr *) rinfo->clause;
	if (list_length(op->args) != 2)
		return false;
	left = linitial(op->args);
	right = lsecond(op->args);
	opno = op->opno;
	if (is_inner_var(left, innerrel))
	{
		var = (Var *) eytz_strip_relabel(left);
		other = right;
		other_relids = rinfo->right_relids;
	}
	else if (is_inner_var(right, innerrel))
	{
		var = (Var *) eytz_strip_relabel(right);
		other = left;
		other_relids = rinfo->left_relids;
		opno = get_commutator(opno);
		if (!OidIsValid(opno))
			return false;
	}
	else
		return false;
	if (var->varlevelsup != 0 || var->varattno != side->keyattno)
		return false;
	/* the other side comes from the outer rel only, and is stable */
	if (bms_is_empty(other_relids) || !bms_is_subset(other_relids, outerrel->relids) ||
		bms_overlap(other_relids, innerrel->relids) ||
		contain_volatile_functions(other))
		return false;
	if (!op_in_opfamily(opno, side->opfamily))
		return false;
	get_op_opfamily_properties(opno, side->opfamily, false,
							   &strategy, &lefttype, &righttype);
	if (lefttype != side->opcintype || exprType(other) != righttype ||
		strategy < BTLessStrategyNumber || strategy > BTGreaterStrategyNumber)
		return false;
	out->rinfo = rinfo;
	out->strategy = strategy;
	out->argtype = righttype;
	out->outer_expr = (Expr *) other;
	return true;
}

/*
 * The index column (0-based) holding the table's column attno that the
 * index can return, or -1
 */
static int
index_returns_column(IndexOptInfo *index, AttrNumber attno)
{
	int			i;

	if (attno <= 0)
		return -1;
	for (i = 0; i < index->ncolumns; i++)
		if (index->indexkeys[i] == attno && index->canreturn[i])
			return i;
	return -1;
}

/* Is index an eytzgpu index?  The AM's OID is looked up once (and again after DROP EXTENSION) */
static bool
is_eytz_index(IndexOptInfo *index)
{
	if (!OidIsValid(eytz_am_oid))
		eytz_am_oid = get_am_oid("eytzgpu", true);
	return OidIsValid(eytz_am_oid) && index->relam == eytz_am_oid;
}

static void
eytz_am_cache_callback(Datum arg, int cacheid, uint32 hashvalue)
{
	eytz_am_oid = InvalidOid;
}

/*
 * Can the join take every inner column it needs from the index: is each
 * Var of the inner rel's target (what the join clauses and the rest of the
 * query read) and of its own restrictions a plain column that the index
 * returns (its key or an included column, amcanreturn)?
 */
/* The Vars the inner rel's target and its own restrictions read */
static List *
inner_vars(RelOptInfo *innerrel)
{
	List	   *vars = pull_var_clause((Node *) innerrel->reltarget->exprs,
									 PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	foreach(lc, innerrel->baserestrictinfo)
		vars = list_concat(vars,
						   pull_var_clause((Node *) ((RestrictInfo *) lfirst(lc))->clause,
									   PVC_RECURSE_PLACEHOLDERS));
	return vars;
}

static bool
eytz_join_index_only(RelOptInfo *innerrel, IndexOptInfo *index)
{
	ListCell   *lc;

	foreach(lc, inner_vars(innerrel))
	{
		Var		   *var = lfirst(lc);

		if (var->varno != innerrel->relid)
			continue;
		if (index_returns_column(index, var->varattno) < 0)
			return false;
	}
	return true;
}

/*
 * The planner's estimate of the outer rows, for custom_private.  Written
 * with a decimal point: a plan sent to parallel workers goes through
 * nodeToString, and "1000" would be read back as an Integer node.
 */
static Node *
expected_keys_node(double rows)
{
	return (Node *) makeFloat(psprintf("%.1f", Max(rows, 1.0)));
}

/*
 * The outer side of the parallel join: the outer rel's cheapest partial
 * path, or where that is a parallel seq scan of a table, one with more
 * workers if the join's heap fetches call for them.  Most of the join's
 * work is per match, a random heap page visit each, which
 * compute_parallel_worker is asked to size as if they were pages to scan
 * (PostgreSQL's parallel hash join takes its workers from the larger side,
 * too), while a parallel scan of a small outer table gets few (2 for 2M
 * rows; 1.9M matches call for 7).
 */
static Path *
partial_outer_path(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
				   RelOptInfo *innerrel)
{
	Path	   *outer_path = linitial(outerrel->partial_pathlist);
	RangeTblEntry *rte;
	int			workers;

	if (PATH_REQ_OUTER(outer_path) != NULL || outer_path->parallel_workers <= 0)
		return NULL;
	if (outer_path->pathtype != T_SeqScan || !IS_SIMPLE_REL(outerrel))
		return outer_path;
	rte = planner_rt_fetch(outerrel->relid, root);
	if (rte->rtekind != RTE_RELATION || rte->relkind != RELKIND_RELATION ||
		rte->tablesample != NULL)
		return outer_path;
	workers = compute_parallel_worker(innerrel, Max(innerrel->pages, joinrel->rows), -1,
									  max_parallel_workers_per_gather);
	if (workers <= outer_path->parallel_workers)
		return outer_path;
	return create_seqscan_path(root, outerrel, NULL, workers);
}

/* The partial path of serial over outer_path */
static void
add_partial_over(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *innerrel,
				 const CustomPath *serial, const EytzInnerSide *side, Path *outer_path,
				 List *idxclauses, List *joinquals, List *otherquals)
{
	CustomPath *ppath = makeNode(CustomPath);

	memcpy(ppath, serial, sizeof(CustomPath));
	ppath->path.parallel_aware = true;
	ppath->path.parallel_safe = true;
	ppath->path.parallel_workers = outer_path->parallel_workers;
	ppath->path.rows = clamp_row_est(joinrel->rows /
									 eytz_parallel_divisor(outer_path->parallel_workers));
	ppath->custom_paths = list_make1(outer_path);
	ppath->custom_private = list_copy(serial->custom_private);
	list_nth_cell(ppath->custom_private, EYTZ_PATH_EXPECTED_KEYS)->ptr_value =
		expected_keys_node(outer_path->rows);
	eytz_join_cost(root, ppath, outer_path, innerrel, side, idxclauses,
				   joinquals, otherquals, ppath->path.rows, true,
				   intVal(list_nth(serial->custom_private, EYTZ_PATH_INDEX_ONLY)));
	add_partial_path(joinrel, &ppath->path);
}

/*
 * The parallel variant of serial (made for the same index and clauses): a
 * partial path over a parallel outer path (partial_outer_path).  Each
 * process batches its share of the parallel outer scan and searches the
 * whole index for it, which is exact for every join type the join supports
 * (INNER, LEFT, SEMI, ANTI): each outer row is seen by one process, with
 * all its matches.  The path is parallel aware only for its shared EXPLAIN
 * ANALYZE counters (eytzjoinexec.c); the work is divided by the outer scan.
 * Where its processes would outnumber the machine's cores (the default 2
 * workers and the leader on 2 cores), also one with a process per core:
 * the cost charges the processes that take turns (eytz_join_cost), and
 * each worker's copy of the inner side's images, so the cheaper wins.
 */
static void
add_partial_join_path(PlannerInfo *root, RelOptInfo *joinrel,
					  RelOptInfo *outerrel, RelOptInfo *innerrel,
					  const CustomPath *serial, const EytzInnerSide *side,
					  List *idxclauses, List *joinquals, List *otherquals)
{
	Path	   *outer_path;
	long		cores = sysconf(_SC_NPROCESSORS_ONLN);
	int			leader = parallel_leader_participation ? 1 : 0;

	if (!joinrel->consider_parallel || !innerrel->consider_parallel ||
		outerrel->partial_pathlist == NIL || !bms_is_empty(joinrel->lateral_relids))
		return;
	outer_path = partial_outer_path(root, joinrel, outerrel, innerrel);
	if (outer_path == NULL)
		return;
	add_partial_over(root, joinrel, innerrel, serial, side, outer_path,
					 idxclauses, joinquals, otherquals);
	if (outer_path->pathtype == T_SeqScan && IS_SIMPLE_REL(outerrel) &&
		cores > 1 && outer_path->parallel_workers + leader > cores &&
		cores - leader >= 1)
		add_partial_over(root, joinrel, innerrel, serial, side,
						 create_seqscan_path(root, outerrel, NULL, (int) (cores - leader)),
						 idxclauses, joinquals, otherquals);
}

/* Can index be the index a path searches (one key column, of a known type, not partial)? */
static bool
usable_index(IndexOptInfo *index)
{
	return is_eytz_index(index) && index->nkeycolumns == 1 && index->indexkeys[0] > 0 &&
		index->indpred == NIL && eytz_key_type(index->opcintype[0]) != NULL;
}

/*
 * The inner sides a path can search: each usable eytzgpu index of a plain
 * inner table; over a partitioned one, per usable index of its first leaf,
 * a set of indexes, one per leaf that survived pruning, on the same column
 * with the same operator family and key type (an index-only one where a
 * leaf has several).  A leaf without one leaves that column out (DEBUG1
 * says which leaf).
 */
static List *
inner_sides(PlannerInfo *root, RelOptInfo *innerrel, RangeTblEntry *rte)
{
	List	   *sides = NIL;
	List	   *leaves = NIL;
	int			npruned = 0;
	RelOptInfo *first;
	ListCell   *lc;

	if (rte->relkind != RELKIND_PARTITIONED_TABLE)
	{
		foreach(lc, innerrel->indexlist)
		{
			IndexOptInfo *index = lfirst(lc);
			EytzInnerSide *side;

			if (!usable_index(index))
				continue;
			side = palloc0(sizeof(EytzInnerSide));
			side->keyattno = index->indexkeys[0];
			side->opfamily = index->opfamily[0];
			side->opcintype = index->opcintype[0];
			side->leaf_rels = list_make1(innerrel);
			side->leaf_indexes = list_make1(index);
			sides = lappend(sides, side);
		}
		return sides;
	}

	if (!eytz_join_collect_leaves(root, innerrel, RELKIND_RELATION, &leaves, &npruned) || leaves == NIL)
		return NIL;
	first = linitial(leaves);
	foreach(lc, first->indexlist)
	{
		IndexOptInfo *index = lfirst(lc);
		Oid			first_oid = planner_rt_fetch(first->relid, root)->relid;
		EytzInnerSide *side;
		ListCell   *lc2;

		if (!usable_index(index))
			continue;
		side = palloc0(sizeof(EytzInnerSide));
		side->keyattno = eytz_join_leaf_attno(first_oid, index->indexkeys[0], rte->relid);
		side->opfamily = index->opfamily[0];
		side->opcintype = index->opcintype[0];
		side->parentoid = rte->relid;
		side->npruned = npruned;
		side->routed = eytz_join_routable(innerrel, side->keyattno);
		if (side->keyattno <= 0)
			continue;
		foreach(lc2, leaves)
		{
			RelOptInfo *leaf = lfirst(lc2);
			Oid			leaf_oid = planner_rt_fetch(leaf->relid, root)->relid;
			AttrNumber	attno = eytz_join_leaf_attno(rte->relid, side->keyattno, leaf_oid);
			IndexOptInfo *found = NULL;
			ListCell   *lc3;

			foreach(lc3, leaf->indexlist)
			{
				IndexOptInfo *li = lfirst(lc3);

				if (!usable_index(li) || li->indexkeys[0] != attno ||
					li->opfamily[0] != side->opfamily || li->opcintype[0] != side->opcintype)
					continue;
				if (found == NULL || (!eytz_join_index_only(leaf, found) &&
									  eytz_join_index_only(leaf, li)))
					found = li;
			}
			if (found == NULL)
			{
				ereport(DEBUG1,
						(errmsg_internal("eytzgpu join: partition \"%s\" of \"%s\" has no eytzgpu index on column \"%s\"",
										 get_rel_name(leaf_oid), get_rel_name(rte->relid),
										 get_attname(rte->relid, side->keyattno, false))));
				side = NULL;
				break;
			}
			side->leaf_rels = lappend(side->leaf_rels, leaf);
			side->leaf_indexes = lappend(side->leaf_indexes, found);
		}
		if (side != NULL)
			sides = lappend(sides, side);
	}
	return sides;
}

/*
 * Does an inner Var read the whole row?  A leaf's row is not its
 * partitioned table's row type.
 */
static bool
reads_whole_row(RelOptInfo *innerrel)
{
	ListCell   *lc;

	foreach(lc, inner_vars(innerrel))
	{
		Var		   *var = lfirst(lc);

		if (var->varno == innerrel->relid && var->varattno == 0)
			return true;
	}
	return false;
}

static void
eytz_join_pathlist(PlannerInfo *root, RelOptInfo *joinrel,
				   RelOptInfo *outerrel, RelOptInfo *innerrel,
				   JoinType jointype, JoinPathExtraData *extra)
{
	RangeTblEntry *rte;
	Path	   *outer_path;
	List	   *joinquals = NIL;
	List	   *otherquals = NIL;
	ListCell   *lc;

	if (prev_join_pathlist_hook)
		prev_join_pathlist_hook(root, joinrel, outerrel, innerrel, jointype, extra);

	if (!eytz_enable_join)
		return;
	rte = eytz_join_inner_rte(root, innerrel, jointype);
	if (rte == NULL)
		return;
	if (rte->relkind == RELKIND_PARTITIONED_TABLE)
	{
		/* a partitioned table's leaves, as one inner side (not its rows alone: ONLY) */
		if (!rte->inh || reads_whole_row(innerrel))
			return;
	}
	else if (rte->inh || innerrel->indexlist == NIL ||
			 (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_MATVIEW))
		return;
	outer_path = eytz_join_outer_path(outerrel);
	if (outer_path == NULL)
		return;

	/* the inner side provides columns, system columns and whole rows only */
	foreach(lc, innerrel->reltarget->exprs)
	{
		if (!IsA(lfirst(lc), Var))
			return;
	}

	if (!eytz_join_split_quals(joinrel, jointype, extra->restrictlist,
							   &joinquals, &otherquals))
		return;

	foreach(lc, inner_sides(root, innerrel, rte))
	{
		EytzInnerSide *side = lfirst(lc);
		List	   *idxclauses = NIL;
		List	   *rest = NIL;
		bool		has_eq = false,
					has_lo = false,
					has_hi = false;
		ListCell   *lc2,
				   *lc3;
		CustomPath *cpath;
		bool		index_only = true;
		List	   *strategies = NIL;
		List	   *argtypes = NIL;
		List	   *outer_exprs = NIL;
		List	   *indexoids = NIL;
		List	   *heapoids = NIL;
		List	   *keyattnos = NIL;
		List	   *relids = NIL;
		Oid			route_opno = InvalidOid;

		foreach(lc2, joinquals)
		{
			RestrictInfo *rinfo = lfirst(lc2);
			EytzIdxClause ic;

			if (match_index_clause(root, rinfo, side, outerrel, innerrel, &ic))
			{
				EytzIdxClause *icp = palloc(sizeof(EytzIdxClause));

				*icp = ic;
				idxclauses = lappend(idxclauses, icp);
				has_eq |= ic.strategy == BTEqualStrategyNumber;
				has_lo |= ic.strategy == BTGreaterStrategyNumber ||
					ic.strategy == BTGreaterEqualStrategyNumber;
				has_hi |= ic.strategy == BTLessStrategyNumber ||
					ic.strategy == BTLessEqualStrategyNumber;
			}
			else
				rest = lappend(rest, rinfo);
		}
		/* one-sided ranges match a large part of the table per row */
		if (!has_eq && !(has_lo && has_hi))
			continue;

		foreach(lc2, idxclauses)
		{
			EytzIdxClause *ic = lfirst(lc2);

			strategies = lappend_int(strategies, ic->strategy);
			argtypes = lappend_oid(argtypes, ic->argtype);
			outer_exprs = lappend(outer_exprs, ic->outer_expr);
			side->routed &= ic->strategy == BTEqualStrategyNumber;
		}
		forboth(lc2, side->leaf_rels, lc3, side->leaf_indexes)
		{
			RelOptInfo *leaf = lfirst(lc2);
			IndexOptInfo *index = lfirst(lc3);

			indexoids = lappend_oid(indexoids, index->indexoid);
			heapoids = lappend_oid(heapoids, planner_rt_fetch(leaf->relid, root)->relid);
			keyattnos = lappend_int(keyattnos, index->indexkeys[0]);
			relids = lappend_int(relids, (int) leaf->relid);
			index_only &= eytz_join_index_only(leaf, index);
		}
		if (side->routed)
			route_opno = get_opfamily_member(side->opfamily, side->opcintype,
											 side->opcintype, BTEqualStrategyNumber);
		side->routed &= OidIsValid(route_opno);

		/* a worker can run it whole (under Gather, or as another join's inner side) */
		cpath = eytz_join_new_path(joinrel, outer_path,
								   joinrel->consider_parallel &&
								   innerrel->consider_parallel && outer_path->parallel_safe,
								   &eytz_path_methods);
		/* in the order of EytzPathPrivateIndex */
		cpath->custom_private =
			list_make4(indexoids, heapoids, makeInteger(jointype),
					   makeInteger(jointype == JOIN_SEMI || jointype == JOIN_ANTI ||
								   extra->inner_unique));
		cpath->custom_private =
			list_concat(cpath->custom_private,
						list_make4(keyattnos, relids, makeInteger((int) innerrel->relid),
								   expected_keys_node(outer_path->rows)));
		cpath->custom_private =
			list_concat(cpath->custom_private,
						list_make5(strategies, argtypes, outer_exprs, rest, otherquals));
		cpath->custom_private =
			list_concat(cpath->custom_private,
						list_make4(makeInteger(index_only), makeInteger((int) side->parentoid),
								   makeInteger((int) route_opno), makeInteger(side->npruned)));
		eytz_join_cost(root, cpath, outer_path, innerrel, side, idxclauses,
					   rest, otherquals, joinrel->rows, false, index_only);
		/* before add_path, which may free cpath */
		add_partial_join_path(root, joinrel, outerrel, innerrel, cpath, side,
							  idxclauses, rest, otherquals);
		add_path(joinrel, &cpath->path);
	}
}

/*
 * For an index-only path: per inner scan column, the index column of index
 * that holds it (0 the key, 1.. the included columns); NIL when one is not
 * there (the join reads the heap for every match)
 */
static List *
index_only_columns(IndexOptInfo *index, List *inner_attnos)
{
	List	   *cols = NIL;
	ListCell   *lc;

	foreach(lc, inner_attnos)
	{
		int			col = index_returns_column(index, lfirst_int(lc));

		if (col < 0)
			return NIL;
		cols = lappend_int(cols, col);
	}
	/* an inner side of no columns: a non-empty list still says index-only */
	return cols ? cols : list_make1_int(-1);
}

/* The IndexOptInfo of indexoid among rel's indexes */
static IndexOptInfo *
find_index(RelOptInfo *rel, Oid indexoid)
{
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = lfirst(lc);

		if (index->indexoid == indexoid)
			return index;
	}
	elog(ERROR, "eytzgpu join: index %u of relation %u is gone", indexoid, rel->relid);
	return NULL;
}

static Plan *
eytz_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan;
	List	   *ppriv = best_path->custom_private;
	Index		inner_relid = (Index) intVal(list_nth(ppriv, EYTZ_PATH_INNER_RELID));
	RelOptInfo *innerrel = find_base_rel(root, inner_relid);
	Oid			parentoid = (Oid) intVal(list_nth(ppriv, EYTZ_PATH_PARENT));
	List	   *leaf_attnos = NIL;
	List	   *index_cols = NIL;
	bool		index_only;
	ListCell   *lc2,
			   *lc3;
	List	   *joinquals = eytz_clause_exprs(list_nth(ppriv, EYTZ_PATH_JOINQUALS));
	List	   *otherquals = eytz_clause_exprs(list_nth(ppriv, EYTZ_PATH_OTHERQUALS));
	List	   *innerquals = eytz_clause_exprs(innerrel->baserestrictinfo);
	List	   *scan_tlist;
	List	   *inner_attnos = NIL;
	List	   *vars;
	ListCell   *lc;
	int			nouter;

	/* outer columns first, in the outer plan's order */
	cscan = eytz_join_new_scan(best_path, tlist, custom_plans, &nouter, &eytz_scan_methods);
	scan_tlist = cscan->custom_scan_tlist;

	/*
	 * then every inner column the quals and the target list need, system
	 * columns and whole-row references included: the executor takes them
	 * from the fetched heap tuple
	 */
	vars = pull_var_clause((Node *) list_make4(tlist, joinquals, otherquals, innerquals),
						   PVC_RECURSE_AGGREGATES | PVC_RECURSE_WINDOWFUNCS |
						   PVC_RECURSE_PLACEHOLDERS);
	foreach(lc, vars)
	{
		Var		   *var = lfirst(lc);

		if (var->varno != inner_relid || var->varlevelsup != 0)
			continue;
		if (eytz_scan_tlist_column(scan_tlist, var) != NULL)
			continue;
		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) copyObject(var),
											 list_length(scan_tlist) + 1, NULL, false));
		inner_attnos = lappend_int(inner_attnos, var->varattno);
	}
	cscan->custom_scan_tlist = scan_tlist;
	/* in the order of EytzScanExprIndex */
	cscan->custom_exprs = (List *)
		eytz_match_scan_tlist((Node *) list_make4(list_nth(ppriv, EYTZ_PATH_OUTER_EXPRS),
												  joinquals, otherquals, innerquals),
							  scan_tlist);

	/*
	 * Per leaf, its columns for the inner scan columns (a leaf's attnos may
	 * differ from its partitioned table's) and, for an index-only path, the
	 * index columns holding them, which must be the same in every leaf's
	 * index: else the heap answers
	 */
	index_only = intVal(list_nth(ppriv, EYTZ_PATH_INDEX_ONLY)) != 0;
	forthree(lc, list_nth(ppriv, EYTZ_PATH_LEAF_RELIDS),
			 lc2, list_nth(ppriv, EYTZ_PATH_HEAPOIDS),
			 lc3, list_nth(ppriv, EYTZ_PATH_INDEXOIDS))
	{
		RelOptInfo *leaf = find_base_rel(root, (Index) lfirst_int(lc));
		List	   *attnos = NIL;
		List	   *cols;
		ListCell   *lc4;

		foreach(lc4, inner_attnos)
			attnos = lappend_int(attnos,
								 parentoid == InvalidOid ? lfirst_int(lc4) :
								 eytz_join_leaf_attno(parentoid, lfirst_int(lc4),
													  lfirst_oid(lc2)));
		leaf_attnos = lappend(leaf_attnos, attnos);
		if (!index_only)
			continue;
		cols = index_only_columns(find_index(leaf, lfirst_oid(lc3)), attnos);
		if (index_cols == NIL || equal(cols, index_cols))
			index_cols = cols;
		else
			index_only = false;
		index_only &= cols != NIL;
	}
	/* in the order of EytzScanPrivateIndex */
	cscan->custom_private =
		list_make5(list_copy(list_nth(ppriv, EYTZ_PATH_INDEXOIDS)),
				   list_copy(list_nth(ppriv, EYTZ_PATH_HEAPOIDS)),
				   copyObject(list_nth(ppriv, EYTZ_PATH_JOINTYPE)),
				   copyObject(list_nth(ppriv, EYTZ_PATH_SINGLE_MATCH)),
				   list_copy(list_nth(ppriv, EYTZ_PATH_KEYATTNOS)));
	cscan->custom_private =
		list_concat(cscan->custom_private,
					list_make5(makeInteger(nouter),
							   copyObject(list_nth(ppriv, EYTZ_PATH_EXPECTED_KEYS)),
							   list_copy(list_nth(ppriv, EYTZ_PATH_STRATEGIES)),
							   list_copy(list_nth(ppriv, EYTZ_PATH_ARGTYPES)),
							   leaf_attnos));
	cscan->custom_private =
		list_concat(cscan->custom_private,
					list_make4(index_only ? index_cols : NIL,
							   copyObject(list_nth(ppriv, EYTZ_PATH_PARENT)),
							   copyObject(list_nth(ppriv, EYTZ_PATH_ROUTE_OPNO)),
							   copyObject(list_nth(ppriv, EYTZ_PATH_PRUNED))));
	cscan->custom_private =
		lappend(cscan->custom_private,
				OidIsValid(parentoid) ? eytz_join_start_prune_quals(innerrel) : NIL);
	Assert(list_length(cscan->custom_private) == EYTZ_NUM_PRIV);
	Assert(list_length(cscan->custom_exprs) == EYTZ_NUM_EXPR);
	return &cscan->scan.plan;
}

void
eytz_join_init(void)
{
	DefineCustomBoolVariable("eytzgpu.enable_join",
							 "Enables the batched eytzgpu index-nested-loop join.",
							 NULL, &eytz_enable_join, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("eytzgpu.batch_size",
							"Outer rows the eytzgpu join looks up at once.",
							"Batches are also bounded by work_mem * hash_mem_multiplier; the first batch of a scan is small and grows.",
							&eytz_batch_size, 1048576, 1, 16 * 1024 * 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("eytzgpu.direct_outer",
							 "Lets the eytzgpu join read the pages of an outer Seq Scan itself.",
							 "Where the outer side is a Seq Scan of a heap table without a filter or a projection, the join reads its visible tuples a page at a time instead of a row at a time through the Seq Scan node.",
							 &eytz_direct_outer, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("eytzgpu.lookup_overlap",
							 "Lets the eytzgpu join read its next batch of outer rows while the GPU looks up the current one.",
							 "on: where the GPU (or the GPU service) answers and work_mem * hash_mem_multiplier holds two full batches; off: never; always: also on the CPU, which then answers the first chunk at once (to test the pipeline without a GPU).",
							 &eytz_lookup_overlap, EYTZ_OVERLAP_ON,
							 lookup_overlap_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("eytzgpu.page_touch_cost",
							 "Sets the planner's estimate of the cost of a parallel worker's first access to a page of shared memory.",
							 "A fresh process pays a page fault to map each page of shared memory it reads (nothing with huge_pages = on); 0 charges nothing, as for PostgreSQL's own parallel plans; -1 measures it once per backend.",
							 &eytz_page_touch_cost, 0, -1, 1e6,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("eytzgpu.parallel_image",
							 "How parallel workers of the eytzgpu join use the index image the leader shares.",
							 "auto: the leader keeps its image in dynamic shared memory carved from the main shared memory (min_dynamic_shared_memory) across queries and the workers search it in place, where huge_pages is on; in_place: whether or not it is; copy: the leader copies its image for each query and the workers copy it.",
							 &eytz_parallel_image, EYTZ_PARALLEL_IMAGE_AUTO,
							 parallel_image_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);

	prev_join_pathlist_hook = set_join_pathlist_hook;
	set_join_pathlist_hook = eytz_join_pathlist;
	CacheRegisterSyscacheCallback(AMOID, eytz_am_cache_callback, (Datum) 0);
	RegisterCustomScanMethods(&eytz_scan_methods);
}
