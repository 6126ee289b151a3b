/*
 * eytzjoin.h
 *		The batched index-nested-loop join of eytzgpu ("EytzGPU Join"): the
 *		planner (eytzjoin.c, costed in eytzjoincost.c, with the pieces it
 *		shares with the foreign join in eytzjoinplan.h) and the executor
 *		(eytzjoinexec.c).  The join
 *		reaches the index only through the lookup seam (eytzlookup.h) and the
 *		heap through eytzheap.h.
 */
#ifndef EYTZJOIN_H
#define EYTZJOIN_H

#include "eytzam.h"

#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"

/*
 * GUCs: enable_join (eytzjoin.c), page_touch_cost (eytzjoincost.c),
 * batch_size (eytzjoinbatch.c), lookup_overlap (eytzjoinexec.c),
 * join_heap_order (eytzjoinsorted.c); eytzgpu.parallel_image is eytzimage.h's
 */
extern bool eytz_enable_join;
extern int	eytz_batch_size;
extern int	eytz_lookup_overlap;
extern int	eytz_join_heap_order;	/* eytzjoinsorted.c */

/* eytzgpu.join_heap_order */
#define EYTZ_HEAP_ORDER_OFF		0
#define EYTZ_HEAP_ORDER_AUTO	1
#define EYTZ_HEAP_ORDER_ON		2

/* eytzgpu.lookup_overlap */
#define EYTZ_OVERLAP_OFF	0
#define EYTZ_OVERLAP_ON		1	/* GPU views, when work_mem holds two batches */
#define EYTZ_OVERLAP_ALWAYS	2	/* CPU views too (testing) */
extern double eytz_page_touch_cost;

/*
 * The CustomScan's custom_private: scalars as Integer (OIDs cast) or Float
 * nodes, the per-clause and per-leaf lists as int or OID lists.  The inner
 * side is one table, or the leaves of a partitioned table that survived
 * pruning: the per-leaf lists have one element per table searched.
 */
enum EytzScanPrivateIndex
{
	EYTZ_PRIV_INDEXOIDS,		/* per leaf: its eytzgpu index */
	EYTZ_PRIV_HEAPOIDS,			/* per leaf: the table */
	EYTZ_PRIV_JOINTYPE,			/* INNER, LEFT, SEMI or ANTI */
	EYTZ_PRIV_SINGLE_MATCH,		/* stop at a row's first match */
	EYTZ_PRIV_KEYATTNOS,		/* per leaf: its indexed column */
	EYTZ_PRIV_NOUTER,			/* outer columns leading the scan tuple */
	EYTZ_PRIV_EXPECTED_KEYS,	/* planner's estimate of the outer rows */
	EYTZ_PRIV_STRATEGIES,		/* per key clause: btree strategy */
	EYTZ_PRIV_ARGTYPES,			/* per key clause: the outer value's type */
	EYTZ_PRIV_INNER_ATTNOS,		/* per leaf, an int list: per inner scan
								 * column, the leaf's attno (0 whole row,
								 * < 0 system column) */
	EYTZ_PRIV_INDEX_COLUMNS,	/* index-only: per inner scan column, the
								 * index column holding it (0 the key, 1..
								 * the included ones; -1 alone: none is
								 * read), the same in every leaf's index;
								 * NIL: every match reads the heap */
	EYTZ_PRIV_PARENT,			/* the partitioned inner table, or 0 */
	EYTZ_PRIV_ROUTE_OPNO,		/* the equality operator by which keys are
								 * routed to the leaves by the partition
								 * key, or 0: every leaf gets every key */
	EYTZ_PRIV_PRUNED,			/* partitions pruned at plan time */
	EYTZ_PRIV_START_PRUNE,		/* the partitioned table's restrictions a
								 * parameter decides (its Vars numbered 1),
								 * to prune leaves by at the scan's start */
	EYTZ_NUM_PRIV
};

/* The CustomScan's custom_exprs: lists of expressions */
enum EytzScanExprIndex
{
	EYTZ_EXPR_KEYS,				/* per key clause: the outer expression */
	EYTZ_EXPR_JOINQUAL,			/* other join clauses */
	EYTZ_EXPR_OTHERQUAL,		/* pushed-down quals of an outer join */
	EYTZ_EXPR_INNERQUAL,		/* the inner table's own restrictions */
	EYTZ_NUM_EXPR
};

/* eytzjoin.c */
extern void eytz_join_init(void);

/* eytzfdwjoin.c: the join over a foreign inner side ("EytzGPU Foreign Join", eytzfdwjoin.h) */
extern void eytz_fdwjoin_init(void);

/*
 * The processes a partial path's rows are divided among, as costsize.c
 * divides a parallel join's rows: the workers and what the leader adds (it
 * does less the more workers it serves).  Inline: the planner (eytzjoin.c)
 * and the executor (eytzjoinexec.c) both use it, and the executor's file
 * calls nothing of the planner's.
 */
static inline double
eytz_parallel_divisor(int workers)
{
	double		leader = 1.0 - 0.3 * workers;

	return workers + (parallel_leader_participation && leader > 0 ? leader : 0);
}

/* eytzjoinexec.c */
extern Node *eytz_join_create_scan_state(CustomScan *cscan);

/* eytzjoinsorted.c: eytzgpu.join_heap_order, and its cost for the planner */
extern void eytz_heap_order_init(void);
extern Cost eytz_heap_order_cost(double outer_rows, double matches, double heap_pages,
								 double index_pages, Cost batch_visits, Cost one_pass,
								 Cost cost_per_page);

#endif							/* EYTZJOIN_H */
