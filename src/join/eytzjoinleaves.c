/*
 * eytzjoinleaves.c
 *		The batched join over a partitioned inner table: its inner side is
 *		the set of leaves that survive the planner's pruning, each searched
 *		through its own eytzgpu index.  The planner's half finds the leaves
 *		and each one's index on the join column; the executor's half routes
 *		a batch's keys to the leaves that can hold them (eytzpartroute.h)
 *		where the join column is the partition key, so each key is searched
 *		in one leaf, or gives every leaf every key.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "partitioning/partdesc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzjoinexec.h"
#include "eytzjoinleaves.h"
#include "eytzpartroute.h"

/*
 * Append the leaves of partitioned rel that survived pruning (their
 * RelOptInfos, in bound order) to *leaves and count the partitions pruned
 * (at any level) in *npruned; false when a leaf is not a plain table (a
 * foreign table: eytzfdwjoin.c's join)
 */
bool
eytz_join_collect_leaves(PlannerInfo *root, RelOptInfo *rel, List **leaves, int *npruned)
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
			if (!eytz_join_collect_leaves(root, child, leaves, npruned))
				return false;
			continue;
		}
		if (rte->relkind != RELKIND_RELATION)
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
	Relation	parent = table_open(st->parentoid, NoLock);
	List	   *leaf_oids = NIL;
	EytzPartRoute *route = NULL;
	int			i;

	for (i = 0; i < st->nleaves; i++)
		leaf_oids = lappend_oid(leaf_oids, st->leaves[i].heapoid);
	if (estate->es_partition_directory == NULL)
		estate->es_partition_directory =
			CreatePartitionDirectory(estate->es_query_cxt, !IsolationUsesXactSnapshot());
	if (st->kt->exact)
		route = eytz_partroute_create(estate->es_partition_directory, parent,
									  eytz_join_leaf_attno(st->leaves[0].heapoid,
														   st->leaves[0].keyattno,
														   st->parentoid),
									  st->route_opno, st->kt->typid,
									  st->leaves[0].index->rd_indcollation[0],
									  leaf_oids);
	table_close(parent, NoLock);
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
		pfree(st->rhi);
		pfree(st->rrow);
	}
	st->rlo = MemoryContextAllocHuge(cxt, n * sizeof(uint64));
	st->rhi = MemoryContextAllocHuge(cxt, n * sizeof(uint64));
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
			st->leaves[i].nq = st->nq;
		}
		return;
	}

	memset(st->rcount, 0, sizeof(uint32) * st->nleaves);
	if (st->rleaf == NULL)
		st->rleaf = MemoryContextAllocHuge(st->css.ss.ps.state->es_query_cxt,
										   sizeof(int32) * st->cap);
	for (q = 0; q < st->nq; q++)
	{
		const int  *targets;
		int			n = eytz_partroute_find(st->route, st->kt->decode(st->qlo[q]), &targets);

		/* the one leaf a key goes to, kept for the second pass */
		st->rleaf[q] = n == 1 ? targets[0] : n == 0 ? -1 : -2;
		for (i = 0; i < n; i++)
			st->rcount[targets[i]]++;
		total += n;
	}
	reserve_routed(st, Max(total, 1));
	/* each leaf's place, then its queries in batch order */
	total = 0;
	for (i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];

		leaf->qlo = st->rlo + total;
		leaf->qhi = st->rhi + total;
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

			leaf->qlo[leaf->nq] = st->qlo[q];
			leaf->qhi[leaf->nq] = st->qhi[q];
			leaf->qrow[leaf->nq] = st->qrow[q];
			leaf->nq++;
		}
	}
}
