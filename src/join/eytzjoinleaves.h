/*
 * eytzjoinleaves.h
 *		The planner's side of the batched join over a partitioned inner
 *		table (eytzjoinleaves.c): the leaves that survive pruning, their
 *		columns, whether keys can be routed to them.  The foreign join
 *		(eytzfdwjoin.c) takes its leaves, foreign tables, from here too.
 */
#ifndef EYTZJOINLEAVES_H
#define EYTZJOINLEAVES_H

#include "postgres.h"

#include "nodes/pathnodes.h"

extern bool eytz_join_collect_leaves(PlannerInfo *root, RelOptInfo *rel, char relkind,
									 List **leaves, int *npruned);
extern AttrNumber eytz_join_leaf_attno(Oid parent, AttrNumber attno, Oid leaf);
extern bool eytz_join_routable(RelOptInfo *rel, AttrNumber keyattno);
extern List *eytz_join_start_prune_quals(RelOptInfo *rel);

#endif							/* EYTZJOINLEAVES_H */
