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
 *
 * A level keyed on an integer column under its type's default support
 * function (btint2cmp, btint4cmp, btint8cmp; hashint2extended,
 * hashint4extended) reads its bounds once into an array that it searches
 * without a function call per step: the same search, comparisons and hash
 * as partition_range_datum_bsearch, partition_list_bsearch and
 * compute_partition_hash_value, at a fraction of their cost per key.
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_type_d.h"
#include "common/hashfn.h"
#include "parser/parse_coerce.h"
#include "partitioning/partbounds.h"
#include "partitioning/partdesc.h"
#include "utils/fmgroids.h"
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
	/*
	 * an integer key under its default support function (see the header):
	 * range and list bounds in order, a range's MINVALUE as INT64_MIN (below
	 * every key) and its MAXVALUE left out (above every key)
	 */
	bool		native;
	int64	   *bound_values;
	int			nvalues;
} RouteLevel;

struct EytzPartRoute
{
	RouteConversion conversion;
	Oid			key_type;		/* of the keys routed */
	Oid			column_type;	/* of the partition key, what they become */
	int			nlevels;
	RouteLevel *levels;			/* levels[0] is the parent */
	/*
	 * one level of hash partitions on an int2/int4 key of the keys' own
	 * type, each a leaf or pruned: eytz_partroute_find_many routes its keys
	 * without a call a key
	 */
	bool		flat_hash;
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

static int64
integer_value(Oid typid, Datum value)
{
	return typid == INT2OID ? DatumGetInt16(value) :
		typid == INT4OID ? DatumGetInt32(value) : DatumGetInt64(value);
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
	v = integer_value(key_type, key);
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

/* Read level's bounds into arrays where its key and support allow (header) */
static void
native_bounds(RouteLevel *level, Oid column_type)
{
	PartitionBoundInfo bounds = level->bounds;
	Oid			fn = level->partsupfunc.fn_oid;
	int			i;

	if (!is_integer_type(column_type) || bounds == NULL)
		return;
	switch (level->strategy)
	{
		case PARTITION_STRATEGY_HASH:
			level->native = (column_type == INT2OID && fn == F_HASHINT2EXTENDED) ||
				(column_type == INT4OID && fn == F_HASHINT4EXTENDED);
			return;
		case PARTITION_STRATEGY_RANGE:
		case PARTITION_STRATEGY_LIST:
			if (fn != (column_type == INT2OID ? F_BTINT2CMP :
					   column_type == INT4OID ? F_BTINT4CMP : F_BTINT8CMP))
				return;
			level->bound_values = palloc(sizeof(int64) * Max(bounds->ndatums, 1));
			for (i = 0; i < bounds->ndatums; i++)
			{
				PartitionRangeDatumKind kind = level->strategy == PARTITION_STRATEGY_RANGE ?
					bounds->kind[i][0] : PARTITION_RANGE_DATUM_VALUE;

				/* one column: MINVALUE can only come first, MAXVALUE last */
				if (kind == PARTITION_RANGE_DATUM_MAXVALUE)
					break;
				level->bound_values[i] = kind == PARTITION_RANGE_DATUM_MINVALUE ? PG_INT64_MIN :
					integer_value(column_type, bounds->datums[i][0]);
			}
			level->nvalues = i;
			level->native = true;
			return;
		default:
			return;
	}
}

/*
 * The greatest bound of level <= v, or -1 (what partition_range_datum_bsearch
 * and partition_list_bsearch return: the bounds are distinct), without a
 * branch a step: random keys would mispredict half of them
 */
static int
native_bsearch(const RouteLevel *level, int64 v)
{
	const int64 *base = level->bound_values;
	int			n = level->nvalues;

	if (n == 0)
		return -1;
	while (n > 1)
	{
		int			half = n / 2;

		base = base[half] <= v ? base + half : base;
		n -= half;
	}
	return (int) (base - level->bound_values) + (*base <= v) - 1;
}

/* The index of the partition of a native level that holds value, or -1 */
static int
native_partition(const RouteLevel *level, Oid column_type, Datum value)
{
	PartitionBoundInfo bounds = level->bounds;
	int64		v = integer_value(column_type, value);
	int			offset;

	switch (level->strategy)
	{
		case PARTITION_STRATEGY_HASH:
			{
				/* hashint2extended and hashint4extended hash the int32 */
				uint64		hash = DatumGetUInt64(hash_uint32_extended((uint32) (int32) v,
																	   HASH_PARTITION_SEED));

				return bounds->indexes[hash_combine64(0, hash) % bounds->nindexes];
			}
		case PARTITION_STRATEGY_LIST:
			offset = native_bsearch(level, v);
			return offset >= 0 && level->bound_values[offset] == v ? bounds->indexes[offset] : -1;
		default:
			offset = native_bsearch(level, v);
			return bounds->indexes[offset + 1];
	}
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
	if (level->routable)
		native_bounds(level, b->column_type);
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

/* Whether route is one native level of hash partitions, each a leaf or pruned */
static bool
flat_hash_level(const EytzPartRoute *route)
{
	const RouteLevel *level = &route->levels[0];

	if (route->conversion != ROUTE_SAME || route->key_type != route->column_type ||
		!level->native || level->strategy != PARTITION_STRATEGY_HASH)
		return false;
	for (int i = 0; i < level->bounds->nindexes; i++)
	{
		int			part = level->bounds->indexes[i];

		if (part >= 0 && level->target[part] != ROUTE_NOWHERE && level->target[part] < 0)
			return false;
	}
	return true;
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
	b.route->column_type = column_type;
	b.route->levels = palloc(sizeof(RouteLevel));
	(void) build_level(&b, parent, attno);
	if (!b.route->levels[0].routable)
		return NULL;
	b.route->flat_hash = flat_hash_level(b.route);
	return b.route;
}

/* The index of the partition of level that holds value, or -1 */
static int
level_partition(RouteLevel *level, Oid column_type, Datum value)
{
	PartitionBoundInfo bounds = level->bounds;
	bool		equal = false;
	bool		isnull = false;
	int			offset;
	int			part = -1;

	if (level->native)
	{
		part = native_partition(level, column_type, value);
		return part >= 0 ? part : bounds->default_index;
	}
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
		int			part = level_partition(level, route->column_type, value);
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

uint64
eytz_partroute_find_many(EytzPartRoute *route, Datum (*decode) (uint64),
						 const uint64 *keys, uint32 n, int32 *leaf, uint32 *count)
{
	uint64		total = 0;

	if (route->flat_hash)
	{
		const RouteLevel *level = &route->levels[0];
		const int  *indexes = level->bounds->indexes;
		uint64		nindexes = (uint64) level->bounds->nindexes;
		bool		int2 = route->column_type == INT2OID;

		/* the same hash as native_partition's, the modulus a mask where it can */
		for (uint32 q = 0; q < n; q++)
		{
			Datum		d = decode(keys[q]);
			int32		v = int2 ? (int32) DatumGetInt16(d) : DatumGetInt32(d);
			uint64		h = hash_combine64(0, hash_bytes_uint32_extended((uint32) v,
																		 HASH_PARTITION_SEED));
			int			part = indexes[(nindexes & (nindexes - 1)) == 0 ?
									   (h & (nindexes - 1)) : h % nindexes];

			leaf[q] = part >= 0 && level->target[part] >= 0 ? level->target[part] : -1;
			if (leaf[q] >= 0)
			{
				count[leaf[q]]++;
				total++;
			}
		}
		return total;
	}
	for (uint32 q = 0; q < n; q++)
	{
		const int  *targets;
		int			found = eytz_partroute_find(route, decode(keys[q]), &targets);

		leaf[q] = found == 1 ? targets[0] : found == 0 ? -1 : -2;
		for (int t = 0; t < found; t++)
			count[targets[t]]++;
		total += found;
	}
	return total;
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
