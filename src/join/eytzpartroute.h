/*
 * eytzpartroute.h
 *		Routing join keys to the leaves of a partitioned table that can hold
 *		them, with PostgreSQL's own partition key and bounds
 *		(eytzpartroute.c): used by the joins over a partitioned inner side,
 *		so that each key is searched in (or sent to) one leaf only.
 */
#ifndef EYTZPARTROUTE_H
#define EYTZPARTROUTE_H

#include "postgres.h"

#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "storage/lockdefs.h"
#include "partitioning/partdefs.h"
#include "utils/relcache.h"

typedef struct EytzPartRoute EytzPartRoute;

/*
 * A router for the keys of a join clause "column attno of parent = key",
 * parent being a partitioned table the caller has open and locked, eq_opno
 * the clause's operator, key_type and collation those of the keys that
 * will be routed.  leaf_oids are the leaves the caller will search, in its
 * own order (those pruned are left out: a key only they could hold is routed
 * to none).  pdir: the query's partition directory (the planner's or
 * estate->es_partition_directory), so that the bounds are those the plan
 * was made with.  Allocated in CurrentMemoryContext.
 *
 * NULL when keys cannot be routed exactly: the column is not the whole
 * partition key of the top level, eq_opno is not in the partition key's
 * operator family, or a key of key_type cannot be converted exactly to the
 * partition key's type.  The caller then searches every leaf.  A
 * sub-partitioned level keyed on another column routes to all its leaves.
 */
extern EytzPartRoute *eytz_partroute_create(PartitionDirectory pdir, Relation parent,
											AttrNumber attno, Oid eq_opno,
											Oid key_type, Oid collation,
											List *leaf_oids);

/*
 * eytz_partroute_create for an executor node: with the query's partition
 * directory (made in estate's query context where it has none yet) and
 * parentoid opened with lockmode for the while.
 */
extern EytzPartRoute *eytz_partroute_for_query(EState *estate, Oid parentoid,
											   LOCKMODE lockmode, AttrNumber attno,
											   Oid eq_opno, Oid key_type,
											   Oid collation, List *leaf_oids);

/*
 * The leaves that can hold rows equal to key (not NULL): their number
 * (0 when none can), their positions in leaf_oids in *leaves (valid until
 * the next call).
 */
extern int	eytz_partroute_find(EytzPartRoute *route, Datum key, const int **leaves);

/*
 * eytz_partroute_find for keys[0..n), each decode(keys[i]) (not NULL): the
 * one leaf position it goes to in leaf[i], -1 when none, -2 when several
 * (which eytz_partroute_find lists); count[p] (the caller's, zeroed) grows
 * by the keys that go to leaf position p.  Returns the (key, leaf) pairs.
 */
extern uint64 eytz_partroute_find_many(EytzPartRoute *route, Datum (*decode) (uint64),
									   const uint64 *keys, uint32 n, int32 *leaf,
									   uint32 *count);

#endif							/* EYTZPARTROUTE_H */
