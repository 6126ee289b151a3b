/*
 * eytzfdwjoinexec.h
 *		The state of the EytzGPU Foreign Join's executor, shared by its files:
 *		eytzfdwjoinexec.c (the node: the returned rows read ahead into a ring
 *		and matched, EXPLAIN) and eytzfdwjoinbatch.c (a batch of outer rows
 *		read, grouped by key in a hash table and made each leaf's array).
 */
#ifndef EYTZFDWJOINEXEC_H
#define EYTZFDWJOINEXEC_H

#include "postgres.h"

#include "common/hashfn.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "utils/sortsupport.h"

#include "eytzpartroute.h"

/* A leaf of the inner side and what it did (EXPLAIN ANALYZE) */
typedef struct FdwLeafState
{
	int			paramid;
	PlanState  *ps;				/* its ForeignScan, or a local leaf's index scan */
	char	   *name;			/* "server.table", or a local leaf's "table" */
	bool		local;
	uint64		queries;
	uint64		keys_sent;
	uint64		rows;
	double		wait_ms;		/* waiting for the rows it returned (EXPLAIN ANALYZE) */
	/* this batch's keys (routed: its own array, kept across batches) */
	Datum	   *keys;
	int			nkeys;
	int			maxkeys;
} FdwLeafState;

/*
 * A distinct key of the batch, in an open-addressing table: its newest batch
 * row, whose record holds the key, and the key's hash, which spares most
 * probes of other keys a look at their rows
 */
typedef struct FdwKeySlot
{
	int32		first;			/* -1: an empty slot */
	uint32		hash;
} FdwKeySlot;

/*
 * A batch row, all that a match reads of it in one place (one cache miss):
 * its key, chain and flags, its nouter isnull flags, and at values_off its
 * nouter outer column values (by-reference ones copied)
 */
typedef struct FdwBatchRow
{
	Datum		key;
	int32		next_same;		/* the next (older) row of its key, or -1 */
	bool		matched;
	bool		keynull;
	bool		isnull[FLEXIBLE_ARRAY_MEMBER];
} FdwBatchRow;

/* returned rows read ahead of their match, and how far ahead the build looks */
#define FDW_RING 16

/* A returned row read ahead: its copy, and where its key's slot is */
typedef struct FdwRingRow
{
	TupleTableSlot *slot;
	Datum		key;			/* in slot */
	uint32		hash;
	int32		pos;			/* its table slot's first candidate; -1: none */
} FdwRingRow;

/*
 * What a batch row costs beyond its record: its hash, its share of the
 * table (at most 4/3 slots of every row, rounded up to a power of two),
 * its key in the leaves' arrays and in the array parameter
 */
#define FDW_ROW_EXTRA(keylen) \
	(sizeof(uint32) + 8 * sizeof(FdwKeySlot) / 3 + sizeof(Datum) + (keylen))

typedef enum FdwJoinPhase
{
	FJ_FILL,					/* read the next batch */
	FJ_PROBE,					/* match the inner rows with the batch */
	FJ_UNMATCHED,				/* LEFT, ANTI: the batch's unmatched rows */
	FJ_DONE
} FdwJoinPhase;

typedef struct FdwJoinState
{
	CustomScanState css;
	PlanState  *outer_ps;
	PlanState  *inner_ps;
	JoinType	jointype;
	int			nouter;
	int			ninner;
	int			key_col;
	int			batch_size;
	ExprState  *outer_key;
	ExprState  *joinqual;
	ExprState  *otherqual;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Oid			keytype;
	SortSupportData sortsup;	/* the key type's default order */
	FmgrInfo	hash_finfo;
	bool		image_equal;	/* by value, equal keys are equal Datums */
	int			nleaves;
	FdwLeafState *leaves;
	EytzPartRoute *route;
	int16	   *outer_len;		/* the outer columns' types */
	bool	   *outer_byval;
	MemoryContext arrays_cxt;	/* the batch's arrays, kept from batch to batch */
	MemoryContext batch_cxt;	/* what one batch copies and sends */
	Size		row_bytes;		/* a batch row's record and its arrays' share */

	/*
	 * the batch: row r at rows + r * row_width, its outer columns deformed
	 * once rather than at each match
	 */
	int			nrows;
	int			maxrows;
	char	   *rows;
	Size		row_width;
	Size		values_off;
	uint32	   *hashes;			/* the rows' keys' hashes */
	int			maxhashes;
	int			ndistinct;
	Datum	   *dkeys;			/* in order of first appearance */
	FdwKeySlot *table;
	uint32		mask;
	uint32		maxslots;
	bool		outer_done;

	/* the returned rows read ahead */
	FdwRingRow	ring[FDW_RING];
	int			ring_len;
	int			ring_pos;

	/* where the output is */
	FdwJoinPhase phase;
	TupleTableSlot *inner_slot;
	int			cur_row;
	int			last_leaf;

	/* EXPLAIN ANALYZE */
	uint64		batches;
	uint64		outer_rows;
	uint64		distinct_keys;
	double		wait_ms;
} FdwJoinState;

/*
 * The key's hash: a by-value key whose equal values are equal Datums
 * (image_equal) is hashed as its Datum, without a call through fmgr (the
 * batch is hashed here only: any hash that equal keys share will do)
 */
static inline uint32
key_hash(FdwJoinState *st, Datum key)
{
	if (st->image_equal)
	{
		uint64		d = (uint64) key;

		return murmurhash32((uint32) (d ^ (d >> 32)));
	}
	return DatumGetUInt32(FunctionCall1Coll(&st->hash_finfo, st->collation, key));
}

/* Whether the keys' equality is that of their Datums */
static inline bool
key_equal(FdwJoinState *st, Datum a, Datum b)
{
	if (st->image_equal)
		return a == b;
	return ApplySortComparator(a, false, b, false, &st->sortsup) == 0;
}

static inline FdwBatchRow *
batch_row(FdwJoinState *st, int r)
{
	return (FdwBatchRow *) (st->rows + (Size) r * st->row_width);
}

static inline Datum *
row_values(FdwJoinState *st, FdwBatchRow *row)
{
	return (Datum *) ((char *) row + st->values_off);
}

/*
 * The table slot that holds key (of hash h), or the empty one where it would
 * go, looking from slot i on
 */
static inline FdwKeySlot *
key_slot_from(FdwJoinState *st, uint32 i, Datum key, uint32 h)
{
	for (;; i = (i + 1) & st->mask)
	{
		FdwKeySlot *slot = &st->table[i];

		if (slot->first < 0 ||
			(slot->hash == h && key_equal(st, batch_row(st, slot->first)->key, key)))
			return slot;
	}
}

/* eytzfdwjoinbatch.c */
extern TupleTableSlot *eytz_fdwjoin_form_scan_tuple(FdwJoinState *st, const Datum *values,
													const bool *isnull, TupleTableSlot *inner);
extern bool eytz_fdwjoin_fill_batch(FdwJoinState *st);

#endif							/* EYTZFDWJOINEXEC_H */
