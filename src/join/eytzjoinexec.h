/*
 * eytzjoinexec.h
 *		The state of the batched join's executor, shared by its files:
 *		eytzjoinexec.c (the state machine and the batches' matches),
 *		eytzjoinbatch.c (the batch arrays, the outer rows read into them
 *		and the pipeline's second buffer), eytzjoinsorted.c (the heap-order
 *		mode: every batch's heap matches sorted by TID, fetched in one pass),
 *		eytzjoinfetch.c (chunks of matches, visibility map classification
 *		and the inner fetch) and eytzjoinexplain.c (EXPLAIN, the stage
 *		clocks and the parallel join's shared memory).
 */
#ifndef EYTZJOINEXEC_H
#define EYTZJOINEXEC_H

#include "postgres.h"

#include "access/parallel.h"
#include "commands/explain.h"
#include "nodes/execnodes.h"
#include "portability/instr_time.h"

#include "eytzcompat.h"
#include "eytzheap.h"
#include "eytzjoin.h"
#include "eytzlookup.h"
#include "eytzouter.h"

#define EYTZ_FIRST_BATCH 1024
/*
 * Batches and chunks grow by this factor: each batch (each chunk) visits
 * its heap blocks anew, so the small first ones cost block visits out of
 * proportion; 16 reaches the full size in three steps (4 took five)
 */
#define EYTZ_GROWTH 16
/* the part of work_mem a chunk of matches takes; outer rows get the rest */
#define EYTZ_CHUNK_SHARE 4
#define EYTZ_MIN_CHUNK 64
/* the scan's first chunk: small, so that a LIMIT above costs little */
#define EYTZ_FIRST_CHUNK 1024
#define NO_ROW PG_UINT32_MAX
/* inner columns read from the page one by one at most (inner_from_page) */
#define EYTZ_INNER_DIRECT_COLS 4
/* matches ahead whose batch rows are prefetched */
#define EYTZ_ROW_AHEAD 8

/*
 * Index-only: visibility map pages kept pinned at once.  An unsorted chunk
 * checks its heap blocks in random order; one buffer for all map pages
 * would be given up and pinned again at nearly every check.  A map page
 * covers about 32k heap blocks (256 MB), so four cover a 1 GB table, and
 * the scan's pins stay within the backend's private refcount array (8).
 * Map pages share these buffers by their number modulo EYTZ_VM_BUFS.
 */
#define EYTZ_VM_BUFS 4
#define EYTZ_VM_HEAPBLOCKS_PER_PAGE ((BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) * 4)

/*
 * What the matches of a batch row need of it, in one place: its key range,
 * its outer values, then its flags (row_flags): one cache line for one or
 * two outer columns, the one miss a match pays for its row
 */
typedef struct BatchRow
{
	uint64		lo;				/* key range; lo > hi: no query */
	uint64		hi;
	Datum		values[FLEXIBLE_ARRAY_MEMBER];	/* nouter of them */
} BatchRow;

/*
 * The flags after a row's values: matched, has_nulls, pending (heap order:
 * some of its matches went to the sort), then a null per value
 */
#define FLAG_MATCHED 0
#define FLAG_HAS_NULLS 1
#define FLAG_PENDING 2
#define FLAG_NULLS 3
/* rows start on cache lines (when their size divides one) */
#define EYTZ_ROW_ALIGN 64

typedef enum JoinPhase
{
	PHASE_FILL,
	PHASE_MATCHES,
	PHASE_UNMATCHED,
	PHASE_SORTED,				/* heap order: the sorted matches */
	PHASE_SORTED_UNMATCHED,		/* heap order: rows none of them matched */
	PHASE_DONE
} JoinPhase;

/* Where the node's time goes (EXPLAIN ANALYZE) */
typedef enum JoinStage
{
	STAGE_OWN,					/* control flow between the stages */
	STAGE_FILL,					/* outer scan, key expressions, batch fill */
	STAGE_LOOKUP,				/* the lookup seam */
	STAGE_FETCH,				/* heap fetch and key recheck */
	STAGE_QUAL,					/* inner and join quals, projection */
	NUM_STAGES
} JoinStage;

/*
 * What EXPLAIN ANALYZE shows of one process's part of the join: the
 * leader's, or a parallel worker's, which the worker leaves in the node's
 * shared memory when it shuts the node down (summed over rescans).
 */
typedef struct EytzJoinReport
{
	bool		done;			/* a worker has written it */
	char		device[32];
	char		cpu_reason[128];
	uint64		batches;
	uint64		leaf_searches;	/* a partitioned inner table's leaves searched */
	uint64		chunks;
	uint64		lookups;
	uint64		matches;
	uint64		fetches;
	uint64		heap_blocks;
	uint64		outer_pages;	/* read directly (eytzouter.c) */
	uint64		gpu_batches;
	uint64		overlap_batches;
	double		acquire_ms;
	double		search_ms;
	double		transfer_ms;
	double		kernel_ms;
	double		sort_ms;
	double		wait_ms;
	double		stage_ms[NUM_STAGES];
	uint64		clock_reads;	/* the stage budget's clock reads */
	double		clock_ms;		/* and what they cost (clock_read_cost) */
	EytzShareKind image_share;	/* worker: how it took up the leader's image */
	uint64		sorted_batches; /* heap order: batches whose matches were sorted */
	uint64		sorted_matches;
	int64		sort_kb;		/* the sort's memory or disk */
	bool		sort_disk;
} EytzJoinReport;

/*
 * The parallel join's shared memory: a report per worker; after them, per
 * leaf, how the workers take up the leader's image of its index (the
 * lookup seam's EytzLookupShared), the offsets of the images' copies, if
 * any, and the copies (eytzjoinexplain.c)
 */
typedef struct EytzJoinShared
{
	int			nworkers;
	int			nleaves;
	EytzJoinReport reports[FLEXIBLE_ARRAY_MEMBER];
} EytzJoinShared;

/*
 * The arrays of a batch not being read (the pipeline's other buffer); the
 * current batch's are fields of the node (the matches read them)
 */
typedef struct JoinBatch
{
	char	   *rowmem;
	uint64	   *qlo;
	uint64	   *qhi;
	uint32	   *qrow;
	MemoryContext cxt;
	uint32		nrows;
	uint32		nq;
	Size		used;
} JoinBatch;

/*
 * One table the join searches: the inner table, or one leaf of a
 * partitioned inner table.  The state's current-leaf fields (index, heap,
 * lookup, hf, keyattno, inner_attnos, ...) are copies of the leaf being
 * searched (eytz_join_use_leaf), so that the fetch reads one place.
 */
typedef struct EytzJoinLeaf
{
	Oid			indexoid;
	Oid			heapoid;
	AttrNumber	keyattno;		/* the leaf's indexed column */
	AttrNumber *inner_attnos;	/* per inner scan column, the leaf's attno */
	AttrNumber	inner_natts;
	Relation	index;
	Relation	heap;
	EytzLookup *lookup;
	EytzHeapFetch *hf;
	bool		inner_direct;
	bool		pruned;			/* by a parameter, at the scan's start */
	double		other_pages;	/* the other leaves' heap and index pages */
	BlockNumber vm_seen_blocks;
	/* the current batch's queries routed to it */
	uint64	   *qlo;
	uint64	   *qhi;
	uint32	   *qrow;
	uint32		nq;
	bool		submitted;		/* the batch's queries went to its lookup */
	uint32		first_max;		/* its first chunk was started this big (0: not) */
	/* EXPLAIN ANALYZE: the batches that searched it */
	uint64		searches;
	/* parallel join, leader: its image shared with the workers */
	EytzLookupShare *share;
	Size		share_bytes;	/* room for its copy in shared memory */
} EytzJoinLeaf;

typedef struct EytzJoinState
{
	CustomScanState css;

	/* from the plan */
	JoinType	jointype;
	bool		single_match;
	AttrNumber	keyattno;
	double		expected_keys;
	int			nouter;
	int			ninner;
	int			nclauses;
	StrategyNumber *strategies;
	Oid		   *argtypes;
	AttrNumber *inner_attnos;	/* > 0 column, 0 whole row, < 0 system column */
	AttrNumber	inner_natts;	/* columns to deform */
	bool		inner_direct;	/* inner columns read from the tuple in its
								 * page, no slot (table columns only) */
	ExprState **keyexprs;
	AttrNumber *key_attnos;		/* outer column a key expression just reads, or 0 */
	ExprState  *joinqual;
	ExprState  *otherqual;
	ExprState  *innerqual;
	bool	   *outer_byval;
	int16	   *outer_len;
	bool		index_only;
	int		   *index_cols;		/* index-only: per inner column, 0 the key
								 * or 1 + its place among the values the
								 * lookup returns */
	uint32		include_mask;	/* the included columns to return */
	bool		outer_per_match;	/* a match's projection or quals read
									 * outer columns */
	bool		flags_per_match;	/* a match marks its row matched */
	bool		keep_rows;		/* the batch keeps its rows (BatchRow): a
								 * match reads outer values or flags */
	bool		point_keys;		/* every key clause is an equality: a
								 * query's range is one key */
	bool		plain_key;		/* one clause, an equality on an outer
								 * column of the index's key type */
	bool		key_exprs;		/* a key clause evaluates an expression */
	AttrNumber	key_natts;		/* the highest outer column a key clause
								 * reads as it is (0: none) */

	/* the tables searched: one, or the leaves of a partitioned table */
	EytzJoinLeaf *leaves;
	int			nleaves;
	int			cur_leaf;		/* the leaf being searched, or -1 */
	Oid			parentoid;		/* the partitioned inner table, or 0 */
	Oid			route_opno;		/* keys routed by the partition key with it */
	int			npruned;		/* partitions the planner pruned */
	int			npruned_start;	/* leaves pruned at the start, or -1: no
								 * parameter decides any */
	struct EytzPartRoute *route;	/* the router, once made (NULL: none) */
	uint64	   *rlo;			/* the routed copies of a batch's point queries */
	uint32	   *rrow;
	Size		rcap;
	uint32	   *rcount;			/* per leaf: routed queries (scratch) */
	int32	   *rleaf;			/* per query: its one leaf, -1 none, -2 several */

	/* the current leaf (opened at the start) */
	Relation	index;
	Relation	heap;
	const EytzKeyType *kt;
	bool		started;
	EytzLookup *lookup;
	EytzHeapFetch *hf;
	EytzOuterScan *outer_scan;	/* the outer Seq Scan read directly, or NULL */
	MemoryContext innercxt;		/* whole-row values of the current inner tuple */
	Buffer		vmbufs[EYTZ_VM_BUFS];	/* index-only: visibility map pages */
	bool	   *from_index;		/* index-only: per match of the chunk */
	uint8	   *vm_seen;		/* index-only: per heap block below
								 * vm_seen_blocks, its visibility as the
								 * chunk's classification found it */
	BlockNumber vm_seen_blocks;
	const EytzChunkColumns *cols;	/* index-only: the chunk's values */
	bool		index_pass;		/* index-only: the chunk's first pass */
	EytzMatch  *deferred;		/* index-only: the chunk's matches for the
								 * heap, and their sort scratch */
	uint32		ndeferred;
	bool		serializable;	/* pages answered from the index get
								 * predicate locks */

	/* batch arrays, for cap rows (the largest batch) */
	uint32		cap;
	uint32		chunk_cap;		/* the largest chunk */
	uint32		next_chunk;		/* the next chunk: grows to chunk_cap */
	double		match_ratio;	/* matches a key in the batches done (0: none done) */
	Size		rows_mem;		/* the outer rows' share of work_mem */
	Size		row_bytes;		/* array bytes per row */
	char	   *rowmem;			/* the rows, row_stride bytes apart */
	Size		row_stride;
	uint64	   *qlo;
	uint64	   *qhi;
	uint32	   *qrow;

	/* the current batch */
	MemoryContext batchcxt;		/* copied outer values */
	JoinPhase	phase;
	bool		outer_done;
	uint32		next_batch;
	uint32		nrows;
	uint32		nq;
	Size		used;			/* bytes of its rows and copied values */
	bool		batch_done;		/* its last chunk was read */
	const EytzMatch *chunk;
	uint32		nchunk;
	uint32		pos;			/* next match of the chunk */
	uint32		block_end;		/* end of the matches of the current block */
	uint64		cur_tid;		/* inner tuple in the scan slot */
	bool		cur_found;
	uint64		cur_key;
	uint32		slot_row;		/* batch row in the scan slot, or NO_ROW */
	uint32		unmatched_pos;

	/*
	 * The pipeline (eytz_lookup_start): the next batch read into the other
	 * buffer while the device looks up the current one
	 */
	bool		overlap;		/* allowed: work_mem holds two full batches */
	uint32		scan_reads;		/* batches read since the scan (re)started */
	bool		ahead_ready;	/* the other buffer holds the next batch */
	JoinBatch	other;

	/*
	 * Heap order (eytzjoinsorted.c): the batches' heap matches go to a sort
	 * by (leaf, TID), read back in windows of batch rows, one per match
	 */
	bool		heap_order;		/* this scan's batches are sorted */
	bool		heap_order_decided;
	struct EytzHeapOrder *ho;
	uint64	   *window_serials; /* per window row, its outer row's serial
								 * (reading the sort), else NULL */
	uint64	   *matched_bits;	/* per serial: matched (heap order) */
	uint64		outer_rows;		/* outer rows read (this scan) */

	/* EXPLAIN ANALYZE */
	uint64		nbatches;
	uint64		nchunks;
	uint64		nfetches;
	bool		timing;			/* the stages are timed */
	bool		fine_timing;	/* all of them (EXPLAIN's TIMING) */
	JoinStage	stage;
	instr_time	stage_start;
	instr_time	stage_time[NUM_STAGES];
	uint64		clock_reads;	/* by stage_charge */
	double		clock_read_ns;	/* what one costs (TIMING: clock_read_cost) */

	/* parallel join: the workers' reports (leader: copied at shutdown) */
	EytzJoinShared *shared;
	double		import_ms;		/* worker: taking up the shared image */
	EytzShareKind image_share;	/* worker: how */
	EytzJoinReport *worker_reports;
	int			nworker_reports;
} EytzJoinState;

/* Charge the time since the last switch to the current stage */
static inline void
stage_charge(EytzJoinState *st)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_ACCUM_DIFF(st->stage_time[st->stage], now, st->stage_start);
	st->stage_start = now;
	st->clock_reads++;
}

/*
 * Leave the current stage for stage s (without TIMING, the stages of the
 * matches and the time outside the node count as the node's own)
 */
static inline void
stage_enter(EytzJoinState *st, JoinStage s)
{
	if (!st->timing)
		return;
	if (!st->fine_timing && s != STAGE_FILL && s != STAGE_LOOKUP)
		s = STAGE_OWN;
	if (st->stage == s)
		return;
	stage_charge(st);
	st->stage = s;
}

static inline BatchRow *
batch_row(EytzJoinState *st, uint32 row)
{
	return (BatchRow *) (st->rowmem + (Size) row * st->row_stride);
}

static inline bool *
row_flags(EytzJoinState *st, BatchRow *r)
{
	return (bool *) &r->values[st->nouter];
}

/*
 * Has batch row "row" (r) been matched?  A window row of the sorted
 * matches stands for its outer row's serial: its state is in matched_bits.
 */
static inline bool
row_matched(EytzJoinState *st, uint32 row, BatchRow *r)
{
	if (unlikely(st->window_serials != NULL))
	{
		uint64		s = st->window_serials[row];

		return (st->matched_bits[s / 64] >> (s % 64)) & 1;
	}
	return row_flags(st, r)[FLAG_MATCHED];
}

static inline void
set_row_matched(EytzJoinState *st, uint32 row, BatchRow *r)
{
	if (unlikely(st->window_serials != NULL))
	{
		uint64		s = st->window_serials[row];

		st->matched_bits[s / 64] |= UINT64CONST(1) << (s % 64);
	}
	row_flags(st, r)[FLAG_MATCHED] = true;
}

/* Put batch row's outer values into the scan slot (where not there yet) */
static inline void
store_outer(EytzJoinState *st, uint32 row)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	int			no = st->nouter;

	if (st->slot_row != row)
	{
		BatchRow   *r = batch_row(st, row);
		const Datum *vals = r->values;
		const bool *flags = row_flags(st, r);
		const bool *nulls = flags + FLAG_NULLS;
		bool		has_nulls = flags[FLAG_HAS_NULLS];
		int			i;

		/* rows without NULLs (the row's flags are in cache): no other read */
		for (i = 0; i < no; i++)
		{
			scan->tts_values[i] = vals[i];
			scan->tts_isnull[i] = has_nulls && nulls[i];
		}
		st->slot_row = row;
	}
	if (TTS_EMPTY(scan))
		ExecStoreVirtualTuple(scan);
	st->css.ss.ps.ps_ExprContext->ecxt_scantuple = scan;
}

static inline TupleTableSlot *
project(EytzJoinState *st)
{
	ProjectionInfo *proj = st->css.ss.ps.ps_ProjInfo;

	stage_enter(st, STAGE_QUAL);
	if (proj == NULL)
		return st->css.ss.ss_ScanTupleSlot;
	return ExecProject(proj);
}

/* The pushed-down quals on a joined (or null-extended) row */
static inline bool
other_quals_pass(EytzJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	stage_enter(st, STAGE_QUAL);
	if (st->otherqual && !ExecQual(st->otherqual, econtext))
	{
		InstrCountFiltered2(&st->css, 1);
		ResetExprContext(econtext);
		return false;
	}
	return true;
}

/*
 * Make leaf i the current one: the fetch and the lookup read the current
 * leaf's fields.  The visibility map pages pinned are the last leaf's.
 */
static inline void
eytz_join_use_leaf(EytzJoinState *st, int i)
{
	EytzJoinLeaf *leaf = &st->leaves[i];

	if (st->heap != NULL && st->heap != leaf->heap)
	{
		for (int b = 0; b < EYTZ_VM_BUFS; b++)
		{
			if (BufferIsValid(st->vmbufs[b]))
				ReleaseBuffer(st->vmbufs[b]);
			st->vmbufs[b] = InvalidBuffer;
		}
	}
	st->index = leaf->index;
	st->heap = leaf->heap;
	st->lookup = leaf->lookup;
	st->hf = leaf->hf;
	st->keyattno = leaf->keyattno;
	st->inner_attnos = leaf->inner_attnos;
	st->inner_natts = leaf->inner_natts;
	st->inner_direct = leaf->inner_direct;
	st->vm_seen_blocks = leaf->vm_seen_blocks;
}

/* eytzjoinbatch.c: the outer rows and their batches */
extern void eytz_join_alloc_batch_arrays(EytzJoinState *st);
extern void eytz_join_read_batch(EytzJoinState *st, Size limit);
extern void eytz_join_read_ahead(EytzJoinState *st);
extern void eytz_join_swap_batches(EytzJoinState *st);

/* eytzjoinsorted.c: the heap-order mode */
extern void eytz_heap_order_decide(EytzJoinState *st);
extern void eytz_heap_order_spill(EytzJoinState *st, const EytzMatch *m, uint32 n);
extern void eytz_heap_order_batch_end(EytzJoinState *st);
extern bool eytz_heap_order_next_window(EytzJoinState *st);
extern bool eytz_heap_order_next_unmatched(EytzJoinState *st);
extern void eytz_heap_order_report(EytzJoinState *st, EytzJoinReport *r);
extern void eytz_heap_order_reset(EytzJoinState *st);

/* eytzjoinleaves.c: the leaves a parameter prunes; a batch's queries and chunks for each leaf */
extern void eytz_join_prune_at_start(EytzJoinState *st, List *quals);
extern void eytz_join_leaf_footprints(EytzJoinState *st);
extern void eytz_join_route_batch(EytzJoinState *st);
extern void eytz_join_update_match_ratio(EytzJoinState *st);
extern uint32 eytz_join_chunk_max(EytzJoinState *st, EytzJoinLeaf *leaf);
extern void eytz_join_submit_leaf(EytzJoinLeaf *leaf);
extern bool eytz_join_next_leaf(EytzJoinState *st);

/* eytzjoinfetch.c: the matches of a batch, their inner tuples, the joined rows */
extern TupleTableSlot *eytz_join_next_match(EytzJoinState *st);

/* eytzjoinexplain.c: EXPLAIN, the stage clocks, the parallel join */
extern double eytz_join_clock_read_cost(void);
extern void eytz_join_explain(CustomScanState *node, List *ancestors, ExplainState *es);
extern Size eytz_join_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
extern void eytz_join_init_dsm(CustomScanState *node, ParallelContext *pcxt,
							   void *coordinate);
extern void eytz_join_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
								 void *coordinate);
extern void eytz_join_init_worker(CustomScanState *node, shm_toc *toc,
								  void *coordinate);
extern void eytz_join_shutdown(CustomScanState *node);

#endif							/* EYTZJOINEXEC_H */
