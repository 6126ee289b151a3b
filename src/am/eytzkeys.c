/*
 * eytzkeys.c
 *		Order-preserving keys and the translation of scan keys into key ranges.
 *
 * Every indexed value becomes an unsigned 4- or 8-byte key whose unsigned
 * order is PostgreSQL's btree order of the type: signed integers flip the
 * sign bit; floats map NaN to the largest key and -0 to +0, exactly as
 * float4/float8 comparisons order them (so a float key does not decode to
 * the value it came from: index-only scans cannot return it).
 *
 * A qual "col OP arg" becomes a closed range of keys.  For the column's own
 * type and the integer family (int2/int4/int8 against each other) this is
 * arithmetic; any other cross-type operator of the operator family (date
 * against timestamp, float4 against float8, ...) is translated exactly by a
 * binary search over the key domain with the family's comparison function,
 * so the index agrees with the operator by construction.
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/arrayaccess.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "eytzam.h"
#include "eytzmatchsort.h"			/* eytz_sort_u64, scratch arrays */

#define SIGN32 UINT64CONST(0x80000000)
#define SIGN64 UINT64CONST(0x8000000000000000)

static uint64
enc_int2(Datum v)
{
	return (uint32) (int32) DatumGetInt16(v) ^ SIGN32;
}

static Datum
dec_int2(uint64 k)
{
	return Int16GetDatum((int16) (int32) (uint32) (k ^ SIGN32));
}

static uint64
enc_int4(Datum v)
{
	return (uint32) DatumGetInt32(v) ^ SIGN32;
}

static Datum
dec_int4(uint64 k)
{
	return Int32GetDatum((int32) (uint32) (k ^ SIGN32));
}

static uint64
enc_int8(Datum v)
{
	return (uint64) DatumGetInt64(v) ^ SIGN64;
}

static Datum
dec_int8(uint64 k)
{
	return Int64GetDatum((int64) (k ^ SIGN64));
}

static uint64
enc_oid(Datum v)
{
	return DatumGetObjectId(v);
}

static Datum
dec_oid(uint64 k)
{
	return ObjectIdGetDatum((Oid) k);
}

static uint64
enc_float4(Datum v)
{
	float4		f = DatumGetFloat4(v);
	uint32		bits;

	if (isnan(f))
		return PG_UINT32_MAX;
	if (f == 0)
		f = 0;					/* -0 sorts as +0 */
	memcpy(&bits, &f, sizeof(bits));
	return (bits & SIGN32) ? (uint32) ~bits : (bits | SIGN32);
}

static Datum
dec_float4(uint64 k)
{
	uint32		bits = (k & SIGN32) ? (uint32) (k ^ SIGN32) : (uint32) ~k;
	float4		f;

	memcpy(&f, &bits, sizeof(f));
	return Float4GetDatum(f);
}

static uint64
enc_float8(Datum v)
{
	float8		f = DatumGetFloat8(v);
	uint64		bits;

	if (isnan(f))
		return PG_UINT64_MAX;
	if (f == 0)
		f = 0;
	memcpy(&bits, &f, sizeof(bits));
	return (bits & SIGN64) ? ~bits : (bits | SIGN64);
}

static Datum
dec_float8(uint64 k)
{
	uint64		bits = (k & SIGN64) ? (k ^ SIGN64) : ~k;
	float8		f;

	memcpy(&f, &bits, sizeof(f));
	return Float8GetDatum(f);
}

/*
 * Keys of int32/int64 values outside the valid date/timestamp range are never
 * stored, but the binary search over the key domain decodes them.  The
 * cross-type comparisons overflow on them (date_cmp_timestamp() multiplies an
 * invalid date by USECS_PER_DAY), which would break the monotonicity the
 * search needs; so they decode as -infinity or infinity, which order where
 * their keys do.
 */
static Datum
dec_date(uint64 k)
{
	DateADT		d = (DateADT) (int32) (uint32) (k ^ SIGN32);

	if (!IS_VALID_DATE(d) && !DATE_NOT_FINITE(d))
	{
		if (d < 0)
			DATE_NOBEGIN(d);
		else
			DATE_NOEND(d);
	}
	return DateADTGetDatum(d);
}

static Datum
dec_timestamp(uint64 k)
{
	Timestamp	t = (Timestamp) (k ^ SIGN64);

	if (!IS_VALID_TIMESTAMP(t) && !TIMESTAMP_NOT_FINITE(t))
	{
		if (t < 0)
			TIMESTAMP_NOBEGIN(t);
		else
			TIMESTAMP_NOEND(t);
	}
	return TimestampGetDatum(t);
}

/* encoded -inf: keys below it decode to negative NaNs and are never made */
#define FLOAT4_NEG_INF_KEY	UINT64CONST(0x007FFFFF)
#define FLOAT8_NEG_INF_KEY	UINT64CONST(0x000FFFFFFFFFFFFF)

static const EytzKeyType key_types[] = {
	{INT2OID, 4, true, PG_INT16_MIN, PG_INT16_MAX,
	 (uint32) PG_INT16_MIN ^ SIGN32, (uint32) PG_INT16_MAX ^ SIGN32, enc_int2, dec_int2, true},
	{INT4OID, 4, true, PG_INT32_MIN, PG_INT32_MAX, 0, PG_UINT32_MAX, enc_int4, dec_int4, true},
	{INT8OID, 8, true, PG_INT64_MIN, PG_INT64_MAX, 0, PG_UINT64_MAX, enc_int8, dec_int8, true},
	{OIDOID, 4, false, 0, 0, 0, PG_UINT32_MAX, enc_oid, dec_oid, true},
	{DATEOID, 4, false, 0, 0, 0, PG_UINT32_MAX, enc_int4, dec_date, true},
	{TIMESTAMPOID, 8, false, 0, 0, 0, PG_UINT64_MAX, enc_int8, dec_timestamp, true},
	{TIMESTAMPTZOID, 8, false, 0, 0, 0, PG_UINT64_MAX, enc_int8, dec_timestamp, true},
	{FLOAT4OID, 4, false, 0, 0, FLOAT4_NEG_INF_KEY, PG_UINT32_MAX, enc_float4, dec_float4, false},
	{FLOAT8OID, 8, false, 0, 0, FLOAT8_NEG_INF_KEY, PG_UINT64_MAX, enc_float8, dec_float8, false},
};

/* The key type of a data type, or NULL if eytzgpu cannot index it */
const EytzKeyType *
eytz_key_type(Oid typid)
{
	int			i;

	for (i = 0; i < lengthof(key_types); i++)
		if (key_types[i].typid == typid)
			return &key_types[i];
	return NULL;
}

/* The key type of an index's (single) column */
const EytzKeyType *
eytz_index_key_type(Relation index)
{
	Oid			typid = index->rd_opcintype[0];
	const EytzKeyType *kt = eytz_key_type(typid);

	if (kt == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("eytzgpu does not support indexing type %s",
						format_type_be(typid))));
	return kt;
}

static int64
integer_datum(Oid typid, Datum v)
{
	switch (typid)
	{
		case INT2OID:
			return DatumGetInt16(v);
		case INT4OID:
			return DatumGetInt32(v);
		default:
			return DatumGetInt64(v);
	}
}

static uint64
encode_integer(const EytzKeyType *kt, int64 v)
{
	return kt->width == 4 ? ((uint32) (int32) v ^ SIGN32) : ((uint64) v ^ SIGN64);
}

/*
 * Smallest key u in the domain with cmp(decode(u), arg) >= want (want is 0
 * for ">= arg", 1 for "> arg"); *found is false if there is none.
 */
static uint64
domain_lower_bound(const EytzKeyType *kt, FmgrInfo *cmp, Oid collation,
				   Datum arg, int want, bool *found)
{
	uint64		lo = kt->dom_min;
	uint64		hi = kt->dom_max;

	if (DatumGetInt32(FunctionCall2Coll(cmp, collation, kt->decode(hi), arg)) < want)
	{
		*found = false;
		return 0;
	}
	*found = true;
	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (DatumGetInt32(FunctionCall2Coll(cmp, collation, kt->decode(mid), arg)) >= want)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * Translate "col <strategy> arg" into one key range; false if nothing can
 * match.  arg is of type argtype (InvalidOid: the column's type).
 */
bool
scalar_range(Relation index, const EytzKeyType *kt, StrategyNumber strategy,
			 Oid argtype, Datum arg, EytzRange *r)
{
	uint64		lo = kt->dom_min;
	uint64		hi = kt->dom_max;

	if (argtype == InvalidOid || argtype == kt->typid)
	{
		uint64		e = kt->encode(arg);

		switch (strategy)
		{
			case BTLessStrategyNumber:
				if (e == kt->dom_min)
					return false;
				hi = e - 1;
				break;
			case BTLessEqualStrategyNumber:
				hi = e;
				break;
			case BTEqualStrategyNumber:
				lo = hi = e;
				break;
			case BTGreaterEqualStrategyNumber:
				lo = e;
				break;
			case BTGreaterStrategyNumber:
				if (e == kt->dom_max)
					return false;
				lo = e + 1;
				break;
		}
	}
	else if (kt->is_integer &&
			 (argtype == INT2OID || argtype == INT4OID || argtype == INT8OID))
	{
		int64		v = integer_datum(argtype, arg);
		int64		ilo = kt->int_min;
		int64		ihi = kt->int_max;

		switch (strategy)
		{
			case BTLessStrategyNumber:
				if (v <= ilo)
					return false;
				ihi = Min(ihi, v - 1);
				break;
			case BTLessEqualStrategyNumber:
				ihi = Min(ihi, v);
				break;
			case BTEqualStrategyNumber:
				if (v < ilo || v > ihi)
					return false;
				ilo = ihi = v;
				break;
			case BTGreaterEqualStrategyNumber:
				ilo = Max(ilo, v);
				break;
			case BTGreaterStrategyNumber:
				if (v >= ihi)
					return false;
				ilo = Max(ilo, v + 1);
				break;
		}
		if (ilo > ihi)
			return false;
		lo = encode_integer(kt, ilo);
		hi = encode_integer(kt, ihi);
	}
	else
	{
		Oid			procid = get_opfamily_proc(index->rd_opfamily[0],
											   kt->typid, argtype, 1);
		FmgrInfo	cmp;
		Oid			coll = index->rd_indcollation[0];
		bool		has_ge,
					has_gt;
		uint64		ge,
					gt;

		if (!OidIsValid(procid))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("missing support function 1(%s,%s) in eytzgpu operator family of index \"%s\"",
							format_type_be(kt->typid), format_type_be(argtype),
							RelationGetRelationName(index))));
		fmgr_info(procid, &cmp);
		ge = domain_lower_bound(kt, &cmp, coll, arg, 0, &has_ge);
		gt = domain_lower_bound(kt, &cmp, coll, arg, 1, &has_gt);
		switch (strategy)
		{
			case BTLessStrategyNumber:
				if (has_ge && ge == kt->dom_min)
					return false;
				if (has_ge)
					hi = ge - 1;
				break;
			case BTLessEqualStrategyNumber:
				if (has_gt && gt == kt->dom_min)
					return false;
				if (has_gt)
					hi = gt - 1;
				break;
			case BTEqualStrategyNumber:
				if (!has_ge || (has_gt && gt == ge))
					return false;
				lo = ge;
				if (has_gt)
					hi = gt - 1;
				break;
			case BTGreaterEqualStrategyNumber:
				if (!has_ge)
					return false;
				lo = ge;
				break;
			case BTGreaterStrategyNumber:
				if (!has_gt)
					return false;
				lo = gt;
				break;
		}
	}
	if (lo > hi)
		return false;
	r->lo = lo;
	r->hi = hi;
	return true;
}

static int
ranges_by_lo(const void *a, const void *b)
{
	const EytzRange *ra = a;
	const EytzRange *rb = b;

	if (ra->lo != rb->lo)
		return ra->lo < rb->lo ? -1 : 1;
	return 0;
}

/*
 * Sort points (ranges of one key each: an array's equalities) by a radix
 * sort of their keys (a comparison sort of a large array's ranges took
 * longer than looking them up)
 */
static void
sort_points(EytzRange *r, int n)
{
	uint64	   *keys = eytz_scratch_alloc(CurrentMemoryContext, sizeof(uint64) * 2 * (Size) n);
	int			i;

	for (i = 0; i < n; i++)
		keys[i] = r[i].lo;
	eytz_sort_u64(keys, (uint32) n, keys + n, ~UINT64CONST(0));
	for (i = 0; i < n; i++)
		r[i].lo = r[i].hi = keys[i];
	eytz_scratch_free(keys);
}

/* Sort ranges and merge overlapping or adjacent ones; returns the count */
static int
normalize_ranges(EytzRange *r, int n)
{
	int			out = 0;
	bool		points = true;
	int			i;

	if (n == 0)
		return 0;
	for (i = 0; i < n && points; i++)
		points = r[i].lo == r[i].hi;
	if (points)
		sort_points(r, n);
	else
		qsort(r, n, sizeof(EytzRange), ranges_by_lo);
	for (i = 1; i < n; i++)
	{
		if (r[i].lo <= r[out].hi || r[i].lo - 1 == r[out].hi)
		{
			if (r[i].hi > r[out].hi)
				r[out].hi = r[i].hi;
		}
		else
			r[++out] = r[i];
	}
	return out + 1;
}

/* Intersection of two normalized range lists, into a new array */
static int
intersect_ranges(const EytzRange *a, int na, const EytzRange *b, int nb,
				 EytzRange **out)
{
	EytzRange  *res = eytz_scratch_alloc(CurrentMemoryContext,
										  sizeof(EytzRange) * Max(na + nb, 1));
	int			i = 0,
				j = 0,
				n = 0;

	while (i < na && j < nb)
	{
		uint64		lo = Max(a[i].lo, b[j].lo);
		uint64		hi = Min(a[i].hi, b[j].hi);

		if (lo <= hi)
		{
			res[n].lo = lo;
			res[n].hi = hi;
			n++;
		}
		if (a[i].hi < b[j].hi)
			i++;
		else
			j++;
	}
	*out = res;
	return n;
}

/* The ranges of one scan key (several for "= ANY(array)") */
static int
scankey_ranges(Relation index, const EytzKeyType *kt, ScanKey key,
			   EytzRange **out)
{
	EytzRange  *res;
	int			n = 0;

	if (key->sk_flags & SK_ISNULL)
	{
		*out = NULL;
		return 0;
	}
	if (key->sk_flags & SK_SEARCHARRAY)
	{
		ArrayType  *arr = DatumGetArrayTypeP(key->sk_argument);
		Oid			elemtype = ARR_ELEMTYPE(arr);
		int			nelems = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		array_iter	iter;
		int16		typlen;
		bool		typbyval;
		char		typalign;
		int			i;

		/* elements read in place: no Datum array to allocate and fill */
		get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
		array_iter_setup(&iter, (AnyArrayType *) arr);
		res = eytz_scratch_alloc(CurrentMemoryContext, sizeof(EytzRange) * Max(nelems, 1));
		for (i = 0; i < nelems; i++)
		{
			bool		isnull;
			Datum		elem = array_iter_next(&iter, &isnull, i, typlen, typbyval, typalign);

			if (!isnull &&
				scalar_range(index, kt, key->sk_strategy, elemtype, elem, &res[n]))
				n++;
		}
	}
	else
	{
		res = eytz_scratch_alloc(CurrentMemoryContext, sizeof(EytzRange));
		if (scalar_range(index, kt, key->sk_strategy, key->sk_subtype,
						 key->sk_argument, &res[0]))
			n = 1;
	}
	*out = res;
	return normalize_ranges(res, n);
}

/*
 * The disjoint, ascending key ranges that satisfy all scan keys (ANDed).
 * Returns their count; 0 means no entry can match.
 */
int
eytz_build_ranges(Relation index, ScanKey keys, int nkeys, EytzRange **ranges)
{
	const EytzKeyType *kt = eytz_index_key_type(index);
	EytzRange  *cur = eytz_scratch_alloc(CurrentMemoryContext, sizeof(EytzRange));
	int			ncur = 1;
	int			i;

	cur[0].lo = kt->dom_min;
	cur[0].hi = kt->dom_max;
	for (i = 0; i < nkeys && ncur > 0; i++)
	{
		EytzRange  *kr;
		int			nk = scankey_ranges(index, kt, &keys[i], &kr);
		EytzRange  *next;

		ncur = intersect_ranges(cur, ncur, kr, nk, &next);
		eytz_scratch_free(cur);
		if (kr)
			eytz_scratch_free(kr);
		cur = next;
	}
	*ranges = cur;
	return ncur;
}
