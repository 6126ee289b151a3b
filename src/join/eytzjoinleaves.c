/*
 * eytzjoinleaves.c
 *		The batched join over a partitioned inner table: its inner side is
 *		the set of leaves that survive the planner's pruning, each searched
 *		through its own eytzgpu index.  The planner's half finds the leaves
 *		and each one's index on the join column; the executor's half routes
 *		a batch's keys to the leaves that can hold them (eytzpartroute.h)
 *		where the join column is the partition key, so each key is searched
 *		in one leaf, or gives every leaf every key.  Leaves that the inner
 *		table's restrictions exclude once their parameters are known (a
 *		generic plan's $1) are pruned at the scan's start, with PostgreSQL's
 *		predicate proofs against each leaf's partition constraint.  A batch's
 *		leaves are then taken in turn (eytz_join_next_leaf), each one's share
 *		sent to its lookup in chunks sized for that share
 *		(eytz_join_chunk_max).
 */
#include "postgres.h"

#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/clauses.h"
#include "parser/parsetree.h"
#include "partitioning/partdesc.h"
#include "pgstat.h"
#include "rewrite/rewriteManip.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/partcache.h"
#include "utils/rel.h"

#include "eytzjoinexec.h"
#include "eytzjoinleaves.h"
#include "eytzpartroute.h"

/*
 * Append the leaves of partitioned rel that survived pruning (their
 * RelOptInfos, in bound order) to *leaves and count the partitions pruned
 * (at any level) in *npruned; false when a leaf is not of relkind: a plain
 * table (RELKIND_RELATION) for the EytzGPU Join, a foreign table whose FDW
 * is known (RELKIND_FOREIGN_TABLE) or a plain table (the foreign join,
 * eytzfdwjoin.c: shards beside local leaves)
 */
bool
eytz_join_collect_leaves(PlannerInfo *root, RelOptInfo *rel, char relkind,
						 List **leaves, int *npruned)
{
	int			i;

	if (rel->nparts < 0 || (rel->nparts > 0 && rel->part_rels == NULL))
		return false;
	for (i = 0; i < rel->nparts; i++)
	{
		RelOptInfo *child = rel->part_rels[i];
		RangeTblEntry *rte;

		if (child == NULL || IS_DUMMY_REL(child))
		{
			(*npruned)++;
			continue;
		}
		rte = planner_rt_fetch(child->relid, root);
		if (rte->relkind == RELKIND_PARTITIONED_TABLE)
		{
			if (!eytz_join_collect_leaves(root, child, relkind, leaves, npruned))
				return false;
			continue;
		}
		if (rte->relkind != relkind &&
			!(relkind == RELKIND_FOREIGN_TABLE && rte->relkind == RELKIND_RELATION))
			return false;
		if (rte->relkind == RELKIND_FOREIGN_TABLE &&
			(child->fdwroutine == NULL || !bms_is_empty(child->lateral_relids)))
			return false;
		*leaves = lappend(*leaves, child);
	}
	return true;
}

/* The column of leaf that is column attno of its ancestor parent (by name) */
AttrNumber
eytz_join_leaf_attno(Oid parent, AttrNumber attno, Oid leaf)
{
	if (attno <= 0 || parent == leaf)
		return attno;
	return get_attnum(leaf, get_attname(parent, attno, false));
}

/*
 * Is the join column keyattno of partitioned rel the whole partition key of
 * its top level?  Then keys can be routed to the leaves.
 */
bool
eytz_join_routable(RelOptInfo *rel, AttrNumber keyattno)
{
	Expr	   *expr;

	if (rel->part_scheme == NULL || rel->part_scheme->partnatts != 1 ||
		rel->partexprs == NULL || list_length(rel->partexprs[0]) != 1)
		return false;
	expr = linitial(rel->partexprs[0]);
	return IsA(expr, Var) && ((Var *) expr)->varattno == keyattno;
}

static bool
has_extern_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind == PARAM_EXTERN;
	return expression_tree_walker(node, has_extern_param, context);
}

/*
 * The restrictions of partitioned rel that a statement's parameter decides
 * (the planner prunes by the others itself): no volatile function, no
 * value of another plan node; their Vars renumbered 1, as in a partition
 * constraint.  NIL when there are none.
 */
List *
eytz_join_start_prune_quals(RelOptInfo *rel)
{
	List	   *quals = NIL;
	ListCell   *lc;

	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);
		Node	   *clause = (Node *) ri->clause;

		if (ri->pseudoconstant || !has_extern_param(clause, NULL) ||
			contain_volatile_functions(clause) || contain_subplans(clause) ||
			contain_exec_param(clause, NIL))
			continue;
		quals = lappend(quals, copyObject(clause));
	}
	if (quals != NIL)
		ChangeVarNodes((Node *) quals, rel->relid, 1, 0);
	return quals;
}

/* A statement parameter's value as a Const (as the planner binds one) */
static Node *
bind_params_mutator(Node *node, ParamListInfo params)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXTERN &&
		params != NULL)
	{
		Param	   *param = (Param *) node;
		ParamExternData fetched;
		ParamExternData *prm = NULL;
		int16		typlen;
		bool		typbyval;

		if (param->paramid > 0 && param->paramid <= params->numParams)
			prm = params->paramFetch != NULL ?
				params->paramFetch(params, param->paramid, false, &fetched) :
				&params->params[param->paramid - 1];
		if (prm == NULL || prm->ptype != param->paramtype)
			return (Node *) copyObject(param);
		get_typlenbyval(param->paramtype, &typlen, &typbyval);
		return (Node *) makeConst(param->paramtype, param->paramtypmod,
								  param->paramcollid, (int) typlen,
								  prm->isnull ? (Datum) 0 :
								  datumCopy(prm->value, typbyval, typlen),
								  prm->isnull, typbyval);
	}
	return expression_tree_mutator(node, bind_params_mutator, params);
}

/*
 * Mark the leaves that the restrictions quals (eytz_join_start_prune_quals),
 * with this execution's parameters bound, refute the partition constraint
 * of (ancestors' included): no row of theirs can pass, so no key is
 * searched there.
 */
void
eytz_join_prune_at_start(EytzJoinState *st, List *quals)
{
	EState	   *estate = st->css.ss.ps.state;
	Relation	parent;
	List	   *bound;
	ListCell   *lc;
	bool		none = false;
	int			i;

	st->npruned_start = -1;
	if (quals == NIL || !OidIsValid(st->parentoid))
		return;
	st->npruned_start = 0;
	bound = (List *) bind_params_mutator((Node *) quals, estate->es_param_list_info);
	bound = (List *) eval_const_expressions(NULL, (Node *) bound);
	/* a restriction false or NULL for these values: no leaf has a row */
	foreach(lc, bound)
	{
		Const	   *c = lfirst(lc);

		if (IsA(c, Const) && (c->constisnull || !DatumGetBool(c->constvalue)))
			none = true;
	}
	parent = table_open(st->parentoid, AccessShareLock);
	for (i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];
		Relation	rel = table_open(leaf->heapoid, AccessShareLock);
		List	   *constraint = RelationGetPartitionQual(rel);

		leaf->pruned = none || (constraint != NIL &&
								predicate_refuted_by(constraint,
													 map_partition_varattnos(bound, 1,
																			 rel, parent),
													 false));
		st->npruned_start += leaf->pruned;
		table_close(rel, NoLock);
	}
	table_close(parent, NoLock);
}

/*
 * Each leaf's other_pages: the heap and index pages of the leaves a batch
 * may search besides it.  A batch reads them all, so a leaf's layout stays
 * pinned in shared buffers only where all of them fit beside it (else
 * each batch would read the pinned layouts again: the image pays).
 */
void
eytz_join_leaf_footprints(EytzJoinState *st)
{
	double		total = 0;
	int			i;

	for (i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];

		leaf->other_pages = leaf->pruned ? 0 :
			(double) RelationGetNumberOfBlocks(leaf->heap) +
			(double) RelationGetNumberOfBlocks(leaf->index);
		total += leaf->other_pages;
	}
	for (i = 0; i < st->nleaves; i++)
		st->leaves[i].other_pages = total - st->leaves[i].other_pages;
}

/*
 * The router of the partitioned inner table, made at the first batch with
 * the query's partition directory (the bounds the plan was made with); NULL
 * when the keys cannot be routed exactly (eytz_partroute_create), or decode
 * to values other than those encoded (a float's -0)
 */
static EytzPartRoute *
make_route(EytzJoinState *st)
{
	EState	   *estate = st->css.ss.ps.state;
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	List	   *leaf_oids = NIL;
	EytzPartRoute *route = NULL;
	int			i;

	for (i = 0; i < st->nleaves; i++)
		leaf_oids = lappend_oid(leaf_oids, st->leaves[i].heapoid);
	if (st->kt->exact)
		route = eytz_partroute_for_query(estate, st->parentoid, NoLock,
										 eytz_join_leaf_attno(st->leaves[0].heapoid,
															  st->leaves[0].keyattno,
															  st->parentoid),
										 st->route_opno, st->kt->typid,
										 st->leaves[0].index->rd_indcollation[0],
										 leaf_oids);
	st->rcount = palloc0(sizeof(uint32) * st->nleaves);
	MemoryContextSwitchTo(old);
	return route;
}

/* The routed copies' arrays, for at least n queries */
static void
reserve_routed(EytzJoinState *st, Size n)
{
	MemoryContext cxt = st->css.ss.ps.state->es_query_cxt;

	if (n <= st->rcap)
		return;
	n = Max(n, st->rcap * 2);
	if (st->rlo)
	{
		pfree(st->rlo);
		pfree(st->rrow);
	}
	st->rlo = MemoryContextAllocHuge(cxt, n * sizeof(uint64));
	st->rrow = MemoryContextAllocHuge(cxt, n * sizeof(uint32));
	st->rcap = n;
}

/*
 * Give each leaf its queries of the current batch: with a router (the join
 * column is the partition key, every clause an equality) each key goes to
 * the leaves that can hold it, one unless a sub-partitioned level is keyed
 * on another column, copied grouped by leaf; else every leaf gets the
 * batch's queries as they are.
 */
void
eytz_join_route_batch(EytzJoinState *st)
{
	uint32		q;
	Size		total = 0;
	int			i;

	if (st->nleaves > 1 && OidIsValid(st->route_opno) && st->point_keys &&
		st->rcount == NULL)
		st->route = make_route(st);
	if (st->route == NULL || !st->point_keys)
	{
		for (i = 0; i < st->nleaves; i++)
		{
			st->leaves[i].qlo = st->qlo;
			st->leaves[i].qhi = st->qhi;
			st->leaves[i].qrow = st->qrow;
			st->leaves[i].nq = st->leaves[i].pruned ? 0 : st->nq;
		}
		return;
	}

	memset(st->rcount, 0, sizeof(uint32) * st->nleaves);
	if (st->rleaf == NULL)
		st->rleaf = MemoryContextAllocHuge(st->css.ss.ps.state->es_query_cxt,
										   sizeof(int32) * st->cap);
	/* the one leaf a key goes to, kept for the second pass, and the counts */
	total = eytz_partroute_find_many(st->route, st->kt->decode, st->qlo, st->nq,
									 st->rleaf, st->rcount);
	reserve_routed(st, Max(total, 1));
	/* each leaf's place, then its queries in batch order */
	total = 0;
	for (i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];

		/* routed keys are points: each one's range ends where it starts */
		leaf->qlo = st->rlo + total;
		leaf->qhi = leaf->qlo;
		leaf->qrow = st->rrow + total;
		total += st->rcount[i];
		leaf->nq = 0;
	}
	for (q = 0; q < st->nq; q++)
	{
		const int  *targets;
		int			one = st->rleaf[q];
		int			n;

		if (one == -1)
			continue;
		if (one >= 0)
		{
			targets = &one;
			n = 1;
		}
		else
			n = eytz_partroute_find(st->route, st->kt->decode(st->qlo[q]), &targets);
		for (i = 0; i < n; i++)
		{
			EytzJoinLeaf *leaf = &st->leaves[targets[i]];

			if (leaf->pruned)
				continue;
			leaf->qlo[leaf->nq] = st->qlo[q];
			leaf->qrow[leaf->nq] = st->qrow[q];
			leaf->nq++;
		}
	}
}

/*
 * The most matches leaf's next chunk may take: the chunk's growth, within
 * what the leaf's share of the batch is expected to give (its keys at the
 * matches a key of the batches done, at least one, a quarter more, and a
 * first chunk's worth), so that each leaf's lookup sizes its chunk arrays
 * for its share, not for a whole batch's matches: a partitioned join's
 * fresh parallel workers zeroed a huge page for every array of every leaf
 * (bench/partition_results.md, run 9).  More matches than that take one
 * more chunk.
 */
uint32
eytz_join_chunk_max(EytzJoinState *st, EytzJoinLeaf *leaf)
{
	double		expected;

	/* before any batch is done, a match a key */
	expected = (double) leaf->nq * Max(st->match_ratio, 1.0) * 1.25 + EYTZ_FIRST_CHUNK;
	return (uint32) Min((double) st->next_chunk, expected);
}

/* Matches a key in the batches done, before the next batch is submitted */
void
eytz_join_update_match_ratio(EytzJoinState *st)
{
	uint64		lookups = 0,
				matches = 0;

	for (int l = 0; l < st->nleaves; l++)
	{
		const EytzLookupStats *s = eytz_lookup_stats(st->leaves[l].lookup);

		lookups += s->lookups;
		matches += s->matches;
	}
	st->match_ratio = lookups > 0 && matches > 0 ? (double) matches / lookups : 0;
}

/* Send leaf's share of the current batch to its lookup */
void
eytz_join_submit_leaf(EytzJoinLeaf *leaf)
{
	eytz_lookup_submit(leaf->lookup, leaf->qlo, leaf->qhi, leaf->qrow, leaf->nq);
	pgstat_count_index_scan(leaf->index);
	leaf->searches++;
	leaf->submitted = true;
}

/*
 * Move to the current batch's next leaf that has queries and submit them to
 * its lookup (unless start_leaves did); false when no leaf is left
 */
bool
eytz_join_next_leaf(EytzJoinState *st)
{
	EytzJoinLeaf *leaf;

	do
	{
		if (++st->cur_leaf >= st->nleaves)
			return false;
	} while (st->leaves[st->cur_leaf].nq == 0);
	if (st->nleaves > 1)
	{
		/* the last leaf's pins go (as at a batch's end) */
		if (st->hf != NULL)
			eytz_heap_reset(st->hf);
		eytz_join_use_leaf(st, st->cur_leaf);
	}
	leaf = &st->leaves[st->cur_leaf];
	st->nchunk = 0;
	st->pos = 0;
	st->block_end = 0;
	st->index_pass = false;
	st->cur_tid = PG_UINT64_MAX;
	st->batch_done = false;
	stage_enter(st, STAGE_LOOKUP);
	if (!leaf->submitted)
		eytz_join_submit_leaf(leaf);
	return true;
}
