/*
 * eytzpartroute.c
 *		Routing join keys to the leaves of a partitioned table that can hold
 *		them, with PostgreSQL's own partition key, bounds and bound search
 *		(partbounds.c), the way tuple routing finds a row's partition.
 *
 * The router is a tree mirroring the partition hierarchy: each partitioned
 * level keyed on the join column alone sends a key to one partition (its
 * bound search, else its default partition); a level keyed on anything
 * else sends it to every leaf below.  Routing is exact only when a row
 * equal to the key under the join's operator is stored where the key
 * itself would be routed: the operator must belong to the partition key's
 * operator family, the key must convert exactly to the partition key's type,
 * and the collations must agree on equality.  Otherwise no router is made
 * and the caller searches every leaf.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "parser/parse_coerce.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"

#include "eytzpartroute.h"

/* How a key of the caller's type becomes a value of the partition key's type */
typedef enum RouteConversion
{
	ROUTE_SAME,					/* the same type, or binary coercible */
	ROUTE_TO_INT2,				/* from another integer type, range checked */
	ROUTE_TO_INT4,
	ROUTE_TO_INT8
} RouteConversion;

/* Where a partition of a level leads */
#define ROUTE_NOWHERE	(-1)	/* pruned, or a leaf the caller does not search */
#define ROUTE_SUBLEVEL(n)	(-2 - (n))	/* to level n */
#define ROUTE_LEVEL_OF(t)	(-2 - (t))

typedef struct RouteLevel
{
	bool		routable;		/* keyed on the join column alone */
	char		strategy;		/* PARTITION_STRATEGY_* */
	FmgrInfo	partsupfunc;	/* the key's comparison or hash support */
	Oid			partcollation;
	PartitionBoundInfo bounds;	/* owned by the partition directory */
	int		   *target;			/* per partition: a leaf position, or above */
	int			nbelow;			/* every searched leaf below this level */
	int		   *below;
} RouteLevel;

struct EytzPartRoute
{
	RouteConversion conversion;
	Oid			key_type;		/* of the keys routed */
	int			nlevels;
	RouteLevel *levels;			/* levels[0] is the parent */
};

static RouteConversion
integer_conversion(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
			return ROUTE_TO_INT2;
		case INT4OID:
			return ROUTE_TO_INT4;
		case INT8OID:
			return ROUTE_TO_INT8;
		default:
			return ROUTE_SAME;
	}
}

static bool
is_integer_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID;
}

/* The key as a value of the partition key's type; false when none equals it */
static bool
convert_key(RouteConversion conversion, Oid key_type, Datum key, Datum *value)
{
	int64		v;

	if (conversion == ROUTE_SAME)
	{
		*value = key;
		return true;
	}
	v = key_type == INT2OID ? DatumGetInt16(key) :
		key_type == INT4OID ? DatumGetInt32(key) : DatumGetInt64(key);
	switch (conversion)
	{
		case ROUTE_TO_INT2:
			if (v < PG_INT16_MIN || v > PG_INT16_MAX)
				return false;
			*value = Int16GetDatum((int16) v);
			return true;
		case ROUTE_TO_INT4:
			if (v < PG_INT32_MIN || v > PG_INT32_MAX)
				return false;
			*value = Int32GetDatum((int32) v);
			return true;
		default:
			*value = Int64GetDatum(v);
			return true;
	}
}

/* Do keys compared under collation and rows stored under partcollation agree? */
static bool
collations_agree(Oid collation, Oid partcollation)
{
	if (collation == partcollation || !OidIsValid(partcollation))
		return true;
	return OidIsValid(collation) &&
		get_collation_isdeterministic(collation) &&
		get_collation_isdeterministic(partcollation);
}

static int
leaf_position(List *leaf_oids, Oid relid)
{
	ListCell   *lc;

	foreach(lc, leaf_oids)
		if (lfirst_oid(lc) == relid)
			return foreach_current_index(lc);
	return ROUTE_NOWHERE;
}

typedef struct RouteBuild
{
	PartitionDirectory pdir;
	List	   *leaf_oids;
	Oid			eq_opno;
	Oid			collation;
	Oid			column_type;	/* of the join column */
	EytzPartRoute *route;
} RouteBuild;

/*
 * Set up the level of partitioned table rel (column attno is the join
 * column) as level n and every level below it; returns n
 */
static int
build_level(RouteBuild *b, Relation rel, AttrNumber attno)
{
	PartitionKey key = RelationGetPartitionKey(rel);
	PartitionDesc desc = PartitionDirectoryLookup(b->pdir, rel);
	EytzPartRoute *route = b->route;
	RouteLevel *level;
	int			n = route->nlevels++;
	int			i;
	const char *colname = get_attname(RelationGetRelid(rel), attno, false);

	route->levels = repalloc(route->levels, sizeof(RouteLevel) * route->nlevels);
	level = &route->levels[n];
	memset(level, 0, sizeof(RouteLevel));
	level->routable = key->partnatts == 1 && key->partattrs[0] == attno &&
		key->parttypid[0] == b->column_type &&
		op_in_opfamily(b->eq_opno, key->partopfamily[0]) &&
		collations_agree(b->collation, key->partcollation[0]);
	level->strategy = (char) key->strategy;
	fmgr_info_copy(&level->partsupfunc, &key->partsupfunc[0], CurrentMemoryContext);
	level->partcollation = key->partcollation[0];
	level->bounds = desc->boundinfo;
	level->target = palloc(sizeof(int) * Max(desc->nparts, 1));
	level->below = palloc(sizeof(int) * Max(list_length(b->leaf_oids), 1));

	for (i = 0; i < desc->nparts; i++)
	{
		if (desc->is_leaf[i])
		{
			int			pos = leaf_position(b->leaf_oids, desc->oids[i]);

			route->levels[n].target[i] = pos;
			if (pos != ROUTE_NOWHERE)
				route->levels[n].below[route->levels[n].nbelow++] = pos;
		}
		else
		{
			Relation	sub = table_open(desc->oids[i], AccessShareLock);
			AttrNumber	subattno = get_attnum(RelationGetRelid(sub), colname);
			int			m = build_level(b, sub, subattno);
			RouteLevel *sublevel = &route->levels[m];

			/* levels moved when the array grew */
			level = &route->levels[n];
			level->target[i] = ROUTE_SUBLEVEL(m);
			memcpy(level->below + level->nbelow, sublevel->below,
				   sizeof(int) * sublevel->nbelow);
			level->nbelow += sublevel->nbelow;
			table_close(sub, AccessShareLock);
		}
	}
	return n;
}

EytzPartRoute *
eytz_partroute_create(PartitionDirectory pdir, Relation parent, AttrNumber attno,
					  Oid eq_opno, Oid key_type, Oid collation, List *leaf_oids)
{
	PartitionKey key = RelationGetPartitionKey(parent);
	Oid			column_type = get_atttype(RelationGetRelid(parent), attno);
	RouteConversion conversion;
	RouteBuild	b;

	if (key == NULL || key->partnatts != 1 || key->partattrs[0] != attno)
		return NULL;
	if (key_type == column_type || IsBinaryCoercible(key_type, column_type))
		conversion = ROUTE_SAME;
	else if (is_integer_type(key_type) && is_integer_type(column_type))
		conversion = integer_conversion(column_type);
	else
		return NULL;

	b.pdir = pdir;
	b.leaf_oids = leaf_oids;
	b.eq_opno = eq_opno;
	b.collation = collation;
	b.column_type = column_type;
	b.route = palloc0(sizeof(EytzPartRoute));
	b.route->conversion = conversion;
	b.route->key_type = key_type;
	b.route->levels = palloc(sizeof(RouteLevel));
	(void) build_level(&b, parent, attno);
	if (!b.route->levels[0].routable)
		return NULL;
	return b.route;
}

/* The index of the partition of level that holds value, or -1 */
static int
level_partition(RouteLevel *level, Datum value)
{
	PartitionBoundInfo bounds = level->bounds;
	bool		equal = false;
	bool		isnull = false;
	int			offset;
	int			part = -1;

	switch (level->strategy)
	{
		case PARTITION_STRATEGY_HASH:
			{
				uint64		hash = compute_partition_hash_value(1, &level->partsupfunc,
																&level->partcollation,
																&value, &isnull);

				return bounds->indexes[hash % bounds->nindexes];
			}
		case PARTITION_STRATEGY_LIST:
			offset = partition_list_bsearch(&level->partsupfunc, &level->partcollation,
											bounds, value, &equal);
			if (offset >= 0 && equal)
				part = bounds->indexes[offset];
			break;
		case PARTITION_STRATEGY_RANGE:
			/* the bound at offset is <= value: offset + 1 is the upper one */
			offset = partition_range_datum_bsearch(&level->partsupfunc,
												   &level->partcollation,
												   bounds, 1, &value, &equal);
			part = bounds->indexes[offset + 1];
			break;
		default:
			elog(ERROR, "unexpected partition strategy: %d", (int) level->strategy);
	}
	return part >= 0 ? part : bounds->default_index;
}

int
eytz_partroute_find(EytzPartRoute *route, Datum key, const int **leaves)
{
	RouteLevel *level = &route->levels[0];
	Datum		value;

	if (!convert_key(route->conversion, route->key_type, key, &value))
		return 0;
	while (level->routable)
	{
		int			part = level_partition(level, value);
		int			target;

		if (part < 0)
			return 0;
		target = level->target[part];
		if (target == ROUTE_NOWHERE)
			return 0;
		if (target >= 0)
		{
			/* the leaf's position is the target itself */
			*leaves = &level->target[part];
			return 1;
		}
		level = &route->levels[ROUTE_LEVEL_OF(target)];
	}
	*leaves = level->below;
	return level->nbelow;
}

EytzPartRoute *
eytz_partroute_for_query(EState *estate, Oid parentoid, LOCKMODE lockmode,
						 AttrNumber attno, Oid eq_opno, Oid key_type, Oid collation,
						 List *leaf_oids)
{
	Relation	parent = table_open(parentoid, lockmode);
	EytzPartRoute *route;

	if (estate->es_partition_directory == NULL)
		estate->es_partition_directory =
			CreatePartitionDirectory(estate->es_query_cxt, !IsolationUsesXactSnapshot());
	route = eytz_partroute_create(estate->es_partition_directory, parent, attno,
								  eq_opno, key_type, collation, leaf_oids);
	table_close(parent, NoLock);
	return route;
}
