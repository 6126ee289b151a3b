/*
 * eytzjoinexec.c
 *		Executor of the batched index-nested-loop join ("EytzGPU Join").
 *
 * Each batch: read up to the batch size of outer rows (pass-by-reference
 * values copied into the batch's memory), evaluate their key expressions
 * into key ranges (a NULL or empty range never matches) and submit the
 * ranges to the lookup seam (eytzlookup.h), which answers them on the GPU or
 * the CPU.  The matches come back as (TID, batch row) in chunks sorted by
 * TID whose size follows work_mem, so a batch's matches never sit in memory
 * whole and a LIMIT stops the work early.  The inner tuples of each heap
 * block of a chunk are fetched together (eytzheap.c), the key is rechecked
 * on each tuple (the TIDs come from an unpinned copy and may have been
 * vacuumed and reused), then the inner quals, join quals and other quals
 * are applied as a nested loop would.  An index-only plan (the index holds
 * every inner column the join reads) takes a match's values from the index
 * instead when the visibility map says its heap page is all-visible, as an
 * Index Only Scan does, and reads only the other pages: its chunks come
 * unsorted, the matches the index answers are returned in the order they
 * come, and the others are sorted by TID and fetched from the heap after
 * them (the chunk's second pass).  LEFT and ANTI emit the unmatched rows
 * of a batch after its last chunk; SEMI and ANTI (and unique inner sides)
 * skip a row's further matches.
 *
 * The first batch is small and batches grow geometrically to the batch
 * size, as do the chunks to their work_mem share: a CustomScan
 * never learns a LIMIT above it.  The batch arrays are taken once, for
 * the largest batch work_mem allows, from memory the backend reuses.
 *
 * Under Gather (the parallel join) each process runs this executor on its
 * share of the outer rows; the node's shared memory tells the workers where
 * the leader's cached image is (or carries a copy of it) and carries their
 * counters back to the leader.
 *
 * Under EXPLAIN ANALYZE the node's time is split into stages by one clock
 * that moves from stage to stage (outer scan and batch fill, lookup, heap
 * fetch, qual and projection, the node's own control flow), so the stages
 * add up to the node's time.  With TIMING OFF only the outer scan and
 * batch fill and the lookup are timed, once per batch and per chunk: no
 * clock is read per row, here or in the outer plan (whose own
 * instrumentation reads two per row with TIMING ON), so these two stages
 * show what they cost without EXPLAIN.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/visibilitymap.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeHash.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "port/pg_bitutils.h"
#include "portability/instr_time.h"
#include "storage/dsm.h"
#include "storage/predicate.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "eytzcompat.h"
#include "eytzheap.h"
#include "eytzimage.h"
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

/* the executor's own settings (registered by eytz_join_init) */
int			eytz_batch_size = 1048576;
int			eytz_lookup_overlap = EYTZ_OVERLAP_ON;
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

/* The flags after a row's values: matched, has_nulls, then a null per value */
#define FLAG_MATCHED 0
#define FLAG_HAS_NULLS 1
#define FLAG_NULLS 2
/* rows start on cache lines (when their size divides one) */
#define EYTZ_ROW_ALIGN 64

typedef enum JoinPhase
{
	PHASE_FILL,
	PHASE_MATCHES,
	PHASE_UNMATCHED,
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

/* How a worker used the image the leader shared */
typedef enum ImageShare
{
	IMAGE_NOT_SHARED,			/* none shared (or no longer there): the
								 * lookup pinned its own */
	IMAGE_COPIED,				/* copied into the worker's memory */
	IMAGE_IN_PLACE				/* searched in the leader's kept image */
} ImageShare;

static const char *const image_share_names[] = {NULL, "copied", "in place"};

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
	ImageShare	image_share;	/* worker: how it used the leader's image */
} EytzJoinReport;

/*
 * The parallel join's shared memory: a report per worker and, when the
 * leader had the index's image cached, how the workers find it instead of
 * each loading its own: the handle of the leader's kept segment
 * (image_kept), or a copy of the image after the reports, which the workers
 * search in place or copy (image_meta: the metapage the image was loaded
 * under)
 */
typedef struct EytzJoinShared
{
	int			nworkers;
	bool		has_image;
	bool		image_kept;
	dsm_handle	image_handle;
	Size		image_offset;
	EytzMetaPageData image_meta;
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

typedef struct EytzJoinState
{
	CustomScanState css;

	/* from the plan */
	Oid			indexoid;
	Oid			heapoid;
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

	/* opened at the first batch */
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
	EytzMetaPageData share_meta;	/* leader: the generation it shares */
	EytzImage  *kept;			/* and its kept image, pinned for the query */
	MemoryContextCallback kept_cb;	/* which unpins it */
	Size		share_bytes;	/* or the bytes of the copy, or 0 */
	uint64		kept_queries;	/* leader: the queries the kept image served */
	bool		image_copied;	/* leader: it copied its image instead */
	double		import_ms;		/* worker: taking up the shared image */
	ImageShare	image_share;	/* worker: how */
	EytzJoinReport *worker_reports;
	int			nworker_reports;
} EytzJoinState;

static void eytz_join_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *eytz_join_exec(CustomScanState *node);
static void eytz_join_end(CustomScanState *node);
static void eytz_join_rescan(CustomScanState *node);
static void eytz_join_explain(CustomScanState *node, List *ancestors, ExplainState *es);
static Size eytz_join_estimate_dsm(CustomScanState *node, ParallelContext *pcxt);
static void eytz_join_init_dsm(CustomScanState *node, ParallelContext *pcxt,
							   void *coordinate);
static void eytz_join_reinit_dsm(CustomScanState *node, ParallelContext *pcxt,
								 void *coordinate);
static void eytz_join_init_worker(CustomScanState *node, shm_toc *toc,
								  void *coordinate);
static void eytz_join_shutdown(CustomScanState *node);

static const CustomExecMethods eytz_exec_methods = {
	.CustomName = "EytzGPU Join",
	.BeginCustomScan = eytz_join_begin,
	.ExecCustomScan = eytz_join_exec,
	.EndCustomScan = eytz_join_end,
	.ReScanCustomScan = eytz_join_rescan,
	.EstimateDSMCustomScan = eytz_join_estimate_dsm,
	.InitializeDSMCustomScan = eytz_join_init_dsm,
	.ReInitializeDSMCustomScan = eytz_join_reinit_dsm,
	.InitializeWorkerCustomScan = eytz_join_init_worker,
	.ShutdownCustomScan = eytz_join_shutdown,
	.ExplainCustomScan = eytz_join_explain,
};

Node *
eytz_join_create_scan_state(CustomScan *cscan)
{
	EytzJoinState *st = (EytzJoinState *) newNode(sizeof(EytzJoinState),
												  T_CustomScanState);

	st->css.methods = &eytz_exec_methods;
	return (Node *) st;
}

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
 * Nanoseconds one clock read takes here: the least mean of eight rounds of
 * 16 (a round the process was preempted in does not count).  The stages'
 * clock reads, a few a row with TIMING, are part of the stage times, and
 * EXPLAIN says how much (Stage Clock Cost).
 */
static double
clock_read_cost(void)
{
	double		best = 0;
	int			round,
				i;

	for (round = 0; round < 8; round++)
	{
		instr_time	start,
					now;

		INSTR_TIME_SET_CURRENT(start);
		for (i = 0; i < 16; i++)
			INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (round == 0 || INSTR_TIME_GET_DOUBLE(now) < best)
			best = INSTR_TIME_GET_DOUBLE(now);
	}
	return best * 1e9 / 16;
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

static PlanState *
outer_ps(EytzJoinState *st)
{
	return (PlanState *) linitial(st->css.custom_ps);
}

/*
 * An index-only plan: where each inner column comes from in the index, and
 * which included columns the lookup must return with the matches
 */
static void
init_index_only(EytzJoinState *st, List *index_cols)
{
	ListCell   *lc;
	int			i = 0;

	st->index_only = index_cols != NIL;
	if (!st->index_only)
		return;
	st->index_cols = palloc0(sizeof(int) * Max(st->ninner, 1));
	foreach(lc, index_cols)
	{
		int			col = lfirst_int(lc);

		if (col > 0)
			st->include_mask |= 1U << (col - 1);
	}
	foreach(lc, index_cols)
	{
		int			col = lfirst_int(lc);

		if (i < st->ninner)
			st->index_cols[i++] = col <= 0 ? 0 :
				1 + pg_popcount32(st->include_mask & ((1U << (col - 1)) - 1));
	}
}

/*
 * Does the projection or a join or other qual read an outer column (or the
 * whole scan tuple)?  The outer columns lead the scan tuple.
 */
static bool
reads_outer_columns(EytzJoinState *st, CustomScan *cscan)
{
	Bitmapset  *attnos = NULL;
	int			x = -1;

	pull_varattnos((Node *) cscan->scan.plan.targetlist, INDEX_VAR, &attnos);
	pull_varattnos(list_nth(cscan->custom_exprs, EYTZ_EXPR_JOINQUAL), INDEX_VAR, &attnos);
	pull_varattnos(list_nth(cscan->custom_exprs, EYTZ_EXPR_OTHERQUAL), INDEX_VAR, &attnos);
	while ((x = bms_next_member(attnos, x)) >= 0)
		if (x + FirstLowInvalidHeapAttributeNumber <= st->nouter)
			return true;
	return false;
}

static void
eytz_join_begin(CustomScanState *node, EState *estate, int eflags)
{
	EytzJoinState *st = (EytzJoinState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *priv = cscan->custom_private;
	List	   *strategies = list_nth(priv, EYTZ_PRIV_STRATEGIES);
	List	   *argtypes = list_nth(priv, EYTZ_PRIV_ARGTYPES);
	List	   *inner_attnos = list_nth(priv, EYTZ_PRIV_INNER_ATTNOS);
	List	   *keyexprs = list_nth(cscan->custom_exprs, EYTZ_EXPR_KEYS);
	PlanState  *ps = &node->ss.ps;
	TupleDesc	scandesc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	ListCell   *lc;
	int			i;

	st->indexoid = (Oid) intVal(list_nth(priv, EYTZ_PRIV_INDEXOID));
	st->heapoid = (Oid) intVal(list_nth(priv, EYTZ_PRIV_HEAPOID));
	st->jointype = (JoinType) intVal(list_nth(priv, EYTZ_PRIV_JOINTYPE));
	st->single_match = intVal(list_nth(priv, EYTZ_PRIV_SINGLE_MATCH)) != 0;
	st->keyattno = (AttrNumber) intVal(list_nth(priv, EYTZ_PRIV_KEYATTNO));
	st->nouter = intVal(list_nth(priv, EYTZ_PRIV_NOUTER));
	st->expected_keys = floatVal(list_nth(priv, EYTZ_PRIV_EXPECTED_KEYS));
	st->nclauses = list_length(keyexprs);
	st->strategies = palloc(sizeof(StrategyNumber) * st->nclauses);
	st->argtypes = palloc(sizeof(Oid) * st->nclauses);
	st->keyexprs = palloc(sizeof(ExprState *) * st->nclauses);
	st->key_attnos = palloc0(sizeof(AttrNumber) * st->nclauses);
	for (i = 0; i < st->nclauses; i++)
	{
		Expr	   *expr = list_nth(keyexprs, i);

		st->strategies[i] = list_nth_int(strategies, i);
		st->argtypes[i] = list_nth_oid(argtypes, i);
		st->keyexprs[i] = ExecInitExpr(expr, ps);
		/* the outer columns lead the scan tuple: INDEX_VAR attno = outer attno */
		if (IsA(expr, Var) && ((Var *) expr)->varno == INDEX_VAR)
			st->key_attnos[i] = ((Var *) expr)->varattno;
	}
	st->ninner = list_length(inner_attnos);
	st->inner_attnos = palloc(sizeof(AttrNumber) * Max(st->ninner, 1));
	st->inner_natts = st->keyattno;
	i = 0;
	foreach(lc, inner_attnos)
	{
		st->inner_attnos[i] = lfirst_int(lc);
		st->inner_natts = Max(st->inner_natts, st->inner_attnos[i]);
		i++;
	}
	init_index_only(st, list_nth(priv, EYTZ_PRIV_INDEX_COLUMNS));
	st->joinqual = ExecInitQual(list_nth(cscan->custom_exprs, EYTZ_EXPR_JOINQUAL), ps);
	st->otherqual = ExecInitQual(list_nth(cscan->custom_exprs, EYTZ_EXPR_OTHERQUAL), ps);
	st->innerqual = ExecInitQual(list_nth(cscan->custom_exprs, EYTZ_EXPR_INNERQUAL), ps);
	st->outer_per_match = reads_outer_columns(st, cscan);
	st->flags_per_match = st->jointype != JOIN_INNER || st->single_match;
	st->keep_rows = st->outer_per_match || st->flags_per_match;
	st->point_keys = true;
	for (i = 0; i < st->nclauses; i++)
	{
		st->point_keys &= st->strategies[i] == BTEqualStrategyNumber;
		st->key_exprs |= st->key_attnos[i] == 0;
		st->key_natts = Max(st->key_natts, st->key_attnos[i]);
	}

	st->outer_byval = palloc(sizeof(bool) * Max(st->nouter, 1));
	st->outer_len = palloc(sizeof(int16) * Max(st->nouter, 1));
	for (i = 0; i < st->nouter; i++)
	{
		Form_pg_attribute att = TupleDescAttr(scandesc, i);

		st->outer_byval[i] = att->attbyval;
		st->outer_len[i] = att->attlen;
	}

	node->custom_ps = list_make1(ExecInitNode(linitial(cscan->custom_plans),
											  estate, eflags));

	/* the relations are locked by the range table; the index like an index scan */
	st->heap = table_open(st->heapoid, AccessShareLock);
	st->index = index_open(st->indexoid, AccessShareLock);
	st->kt = eytz_index_key_type(st->index);
	st->plain_key = st->nclauses == 1 && st->point_keys && st->key_attnos[0] > 0 &&
		(st->argtypes[0] == InvalidOid || st->argtypes[0] == st->kt->typid);
	st->batchcxt = AllocSetContextCreate(estate->es_query_cxt,
										 "eytzgpu join batch",
										 ALLOCSET_DEFAULT_SIZES);
	st->innercxt = AllocSetContextCreate(estate->es_query_cxt,
										 "eytzgpu join inner tuple",
										 ALLOCSET_SMALL_SIZES);
	st->phase = PHASE_FILL;
	st->next_batch = Min(EYTZ_FIRST_BATCH, eytz_batch_size);
	st->slot_row = NO_ROW;
}

/*
 * A chunk's bytes per match: the match and its sort scratch, and for an
 * index-only plan its values as the lookup collects them (key, flag, the
 * included columns asked for), whether the index answers it, for the
 * heap a copy and its sort scratch, and the room of four heap blocks in
 * the visibility memo (vm_seen)
 */
static Size
chunk_match_bytes(EytzJoinState *st)
{
	Size		bytes = 2 * sizeof(EytzMatch);

	if (st->index_only)
		bytes += sizeof(uint64) + sizeof(bool) +
			pg_popcount32(st->include_mask) * (sizeof(Datum) + sizeof(bool)) +
			sizeof(bool) + 2 * sizeof(EytzMatch) + 4;
	return bytes;
}

/* Bytes of one set of batch arrays: the rows, then the queries */
static inline Size
batch_rows_bytes(EytzJoinState *st)
{
	return MAXALIGN(st->row_stride * st->cap);
}

static inline Size
batch_bytes(EytzJoinState *st)
{
	return batch_rows_bytes(st) +
		MAXALIGN((2 * sizeof(uint64) + sizeof(uint32)) * (Size) st->cap);
}

/* Carve a set of batch arrays out of p (batch_bytes long) into b */
static void
carve_batch(EytzJoinState *st, char *p, JoinBatch *b)
{
	b->rowmem = p;
	b->qlo = (uint64 *) (p + batch_rows_bytes(st));
	b->qhi = b->qlo + st->cap;
	b->qrow = (uint32 *) (b->qhi + st->cap);
}

/*
 * The batch arrays for the largest batch (and the index-only plan's flags
 * and heap matches for the largest chunk), in one scratch array that the backend keeps from
 * scan to scan: fresh memory costs a page fault per page touched (so does
 * growing the arrays with the batches), and a short scan touches only the
 * pages of its small first batches.
 */
static void
alloc_batch_arrays(EytzJoinState *st)
{
	Size		deferred = st->index_only ? 2 * sizeof(EytzMatch) * (Size) st->chunk_cap : 0;
	Size		flags = st->index_only ? sizeof(bool) * (Size) st->chunk_cap : 0;
	char	   *p = eytz_scratch_alloc(st->css.ss.ps.state->es_query_cxt,
									   EYTZ_ROW_ALIGN + batch_bytes(st) + deferred + flags);
	JoinBatch	b;

	p = (char *) TYPEALIGN(EYTZ_ROW_ALIGN, p);
	carve_batch(st, p, &b);
	st->rowmem = b.rowmem;
	st->qlo = b.qlo;
	st->qhi = b.qhi;
	st->qrow = b.qrow;
	p += batch_bytes(st);
	st->deferred = st->index_only ? (EytzMatch *) p : NULL;
	st->from_index = st->index_only ? (bool *) (p + deferred) : NULL;
}

/*
 * Pin the index's view, open the heap fetch and size batches and chunks,
 * once per scan: a quarter of work_mem for a chunk of matches, the rest for
 * the largest batch of outer rows.
 */
static void
eytz_join_start(EytzJoinState *st)
{
	EState	   *estate = st->css.ss.ps.state;
	Size		mem_limit = get_hash_memory_limit();
	Size		chunk_mem = mem_limit / EYTZ_CHUNK_SHARE;
	int			no = Max(st->nouter, 1);
	Size		row_stride = MAXALIGN(offsetof(BatchRow, values) + sizeof(Datum) * no +
									  FLAG_NULLS + sizeof(bool) * no);
	Size		per_row = row_stride + 2 * sizeof(uint64) + sizeof(uint32);
	MemoryContext cxt = estate->es_query_cxt;

	st->timing = st->css.ss.ps.instrument != NULL;
	st->fine_timing = st->timing && st->css.ss.ps.instrument->need_timer;
	if (st->fine_timing)
	{
		st->clock_read_ns = clock_read_cost();
		st->stage_start = st->css.ss.ps.instrument->starttime;
	}
	else if (st->timing)
		INSTR_TIME_SET_CURRENT(st->stage_start);
	st->stage = STAGE_LOOKUP;
	st->lookup = eytz_lookup_begin(st->index, st->expected_keys, cxt);
	st->hf = eytz_heap_begin(st->heap, estate->es_snapshot, cxt);
	/*
	 * a whole row or a system column: through the heap slot; so are many
	 * columns, which one deform of the slot reads in one pass where a
	 * heap_getattr() each would walk the tuple from its start for every
	 * column past a NULL or a variable-width one
	 */
	st->inner_direct = eytz_heap_by_page(st->hf) && st->ninner <= EYTZ_INNER_DIRECT_COLS;
	for (int i = 0; i < st->ninner; i++)
		st->inner_direct &= st->inner_attnos[i] > 0;
	st->outer_scan = eytz_outer_begin(outer_ps(st), estate);
	/* the visibility map is the heap access method's */
	if (st->heap->rd_tableam != GetHeapamTableAmRoutine())
		st->index_only = false;
	if (st->index_only)
		eytz_lookup_want_columns(st->lookup, st->include_mask);
	st->serializable = IsolationIsSerializable();
	/* a relation-level predicate lock: the scan reads through no index pages */
	PredicateLockRelation(st->heap, estate->es_snapshot);

	st->row_bytes = per_row;
	st->row_stride = row_stride;
	st->rows_mem = mem_limit - chunk_mem;
	st->chunk_cap = (uint32) Min(Max(chunk_mem / chunk_match_bytes(st), EYTZ_MIN_CHUNK),
								 (Size) PG_INT32_MAX);
	/* the classification's memo: at most four bytes a match (chunk_match_bytes) */
	if (st->index_only)
	{
		st->vm_seen_blocks = (BlockNumber) Min((uint64) RelationGetNumberOfBlocks(st->heap),
											   (uint64) st->chunk_cap * 4);
		st->vm_seen = MemoryContextAllocHuge(cxt, Max(st->vm_seen_blocks, 1));
	}
	st->cap = (uint32) Max(1, Min((Size) eytz_batch_size, st->rows_mem / per_row));
	st->next_chunk = Min(EYTZ_FIRST_CHUNK, st->chunk_cap);
	/*
	 * The pipeline takes a second set of batch arrays; never smaller
	 * batches for it: a batch's fewer matches would visit more heap blocks
	 * than the overlap saves
	 */
	st->overlap = eytz_lookup_overlap != EYTZ_OVERLAP_OFF &&
		(Size) st->cap * per_row * 2 <= st->rows_mem;
	alloc_batch_arrays(st);
	st->started = true;
}

/* Key range of one outer row from its key expressions; false: no match */
static bool
row_range(EytzJoinState *st, ExprContext *econtext, uint64 *lo, uint64 *hi)
{
	int			i;

	if (st->plain_key)
	{
		/* the key itself, as scalar_range makes it */
		AttrNumber	a = st->key_attnos[0];

		if (econtext->ecxt_scantuple->tts_isnull[a - 1])
			return false;
		*lo = *hi = st->kt->encode(econtext->ecxt_scantuple->tts_values[a - 1]);
		return true;
	}
	*lo = st->kt->dom_min;
	*hi = st->kt->dom_max;
	for (i = 0; i < st->nclauses; i++)
	{
		AttrNumber	a = st->key_attnos[i];
		bool		isnull;
		Datum		v;
		EytzRange	r;

		if (a > 0)
		{
			/* the outer tuple is deformed: no expression to run */
			v = econtext->ecxt_scantuple->tts_values[a - 1];
			isnull = econtext->ecxt_scantuple->tts_isnull[a - 1];
		}
		else
			v = ExecEvalExprSwitchContext(st->keyexprs[i], econtext, &isnull);

		/* btree operators are strict: NULL never matches */
		if (isnull)
			return false;
		if (!scalar_range(st->index, st->kt, st->strategies[i], st->argtypes[i], v, &r))
			return false;
		*lo = Max(*lo, r.lo);
		*hi = Min(*hi, r.hi);
		if (*lo > *hi)
			return false;
	}
	return true;
}

/*
 * The batches of a parallel join's process after its first: an even share
 * of the outer rows the planner expects in all processes, at most the batch
 * size and at least a 16th of it (an underestimate).  Its share is small,
 * and the fewer of its matches a batch holds, the more heap blocks its
 * fetches visit (each block once per batch), so it takes it in one batch;
 * but not more: the leader starts tens of milliseconds before the workers
 * (their start, JIT), and with full batches it took a full one while they
 * started and then finished last (random 20M x 2M, 2 workers on 2 cores:
 * 1.05M outer rows against 0.47M for each worker).
 */
static uint32
parallel_batch(EytzJoinState *st)
{
	int			workers = st->shared->nworkers;
	int			procs = workers + (parallel_leader_participation ? 1 : 0);
	double		share = st->expected_keys * eytz_parallel_divisor(workers) / Max(procs, 1);

	return (uint32) Max(Min(share, (double) eytz_batch_size),
						(double) (eytz_batch_size / EYTZ_GROWTH));
}

/* The next outer row: read from its pages directly where that is possible */
static pg_attribute_always_inline TupleTableSlot *
next_outer(EytzJoinState *st, PlanState *outer)
{
	return st->outer_scan ? eytz_outer_next(st->outer_scan) : ExecProcNode(outer);
}

/*
 * The queries of up to "want" outer rows whose key is a column of their
 * own (plain_key), read from the outer table's tuples as they lie in its
 * pages: neither a slot nor a deformed row per tuple
 */
static void
read_keys_direct(EytzJoinState *st, uint32 want)
{
	TupleDesc	desc = eytz_outer_desc(st->outer_scan);
	AttrNumber	a = eytz_outer_attno(st->outer_scan, st->key_attnos[0]);
	uint64		(*encode) (Datum value) = st->kt->encode;

	while (st->nrows < want)
	{
		HeapTuple	tuple = eytz_outer_next_tuple(st->outer_scan);
		bool		isnull;
		Datum		key;

		if (tuple == NULL)
		{
			st->outer_done = true;
			break;
		}
		key = heap_getattr(tuple, a, desc, &isnull);
		if (!isnull)
		{
			st->qlo[st->nq] = st->qhi[st->nq] = encode(key);
			st->qrow[st->nq] = st->nq;
			st->nq++;
		}
		st->nrows++;
	}
}

/*
 * Read the next batch of outer rows into the current batch arrays, the
 * rows and their copied values within limit bytes (the outer rows' share
 * of work_mem, less what a batch read before holds).  Where no match reads
 * anything of its row but the key range (an inner join whose projection
 * and quals read no outer column), the batch keeps only the queries, and a
 * match's "row" is its query.
 */
static void
read_batch(EytzJoinState *st, Size limit)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	PlanState  *outer = outer_ps(st);
	int			no = st->nouter;
	uint32		want = Min(st->next_batch, st->cap);
	Size		used = 0;

	MemoryContextReset(st->batchcxt);
	st->nrows = 0;
	st->nq = 0;
	if (st->outer_scan)
		eytz_outer_resume(st->outer_scan);
	if (st->outer_scan && !st->keep_rows && st->plain_key)
		read_keys_direct(st, want);

	while (!st->keep_rows && st->nrows < want && !st->outer_done)
	{
		TupleTableSlot *slot = next_outer(st, outer);

		if (TupIsNull(slot))
		{
			st->outer_done = true;
			break;
		}
		/*
		 * nothing of the row is kept: its query stands for it, and only the
		 * key columns are deformed (expressions deform what they read)
		 */
		if (st->key_natts > 0)
			slot_getsomeattrs(slot, st->key_natts);
		econtext->ecxt_scantuple = slot;
		if (row_range(st, econtext, &st->qlo[st->nq], &st->qhi[st->nq]))
		{
			st->qrow[st->nq] = st->nq;
			st->nq++;
		}
		/* only an expression leaves anything in the per-tuple memory */
		if (st->key_exprs)
			ResetExprContext(econtext);
		st->nrows++;
	}
	while (st->keep_rows && st->nrows < want && (st->nrows == 0 || used < limit))
	{
		TupleTableSlot *slot = next_outer(st, outer);
		uint32		row = st->nrows;
		BatchRow   *r = batch_row(st, row);
		Datum	   *vals = r->values;
		bool	   *flags = row_flags(st, r);
		bool	   *nulls = flags + FLAG_NULLS;
		bool		has_nulls = false;
		int			i;

		if (TupIsNull(slot))
		{
			st->outer_done = true;
			break;
		}
		slot_getallattrs(slot);
		/* a loop: a few columns, not worth a library call each */
		for (i = 0; i < no; i++)
		{
			MemoryContext old;

			vals[i] = slot->tts_values[i];
			nulls[i] = slot->tts_isnull[i];
			has_nulls |= nulls[i];
			if (nulls[i] || st->outer_byval[i])
				continue;
			old = MemoryContextSwitchTo(st->batchcxt);
			vals[i] = datumCopy(vals[i], false, st->outer_len[i]);
			MemoryContextSwitchTo(old);
			used += MAXALIGN(datumGetSize(vals[i], false, st->outer_len[i])) + 16;
		}
		used += st->row_bytes;
		econtext->ecxt_scantuple = slot;
		if (row_range(st, econtext, &r->lo, &r->hi))
		{
			st->qlo[st->nq] = r->lo;
			st->qhi[st->nq] = r->hi;
			st->qrow[st->nq] = row;
			st->nq++;
		}
		else
		{
			r->lo = 1;
			r->hi = 0;
		}
		ResetExprContext(econtext);
		flags[FLAG_MATCHED] = false;
		flags[FLAG_HAS_NULLS] = has_nulls;
		st->nrows++;
	}
	if (st->outer_scan)
		eytz_outer_pause(st->outer_scan);
	/*
	 * Grow geometrically up to the batch size; a parallel join's process
	 * takes its share after its first batch (parallel_batch)
	 */
	st->next_batch = st->shared ? parallel_batch(st) :
		(uint32) Min((uint64) want * EYTZ_GROWTH, (uint64) eytz_batch_size);
	if (st->nrows > 0)
		st->nbatches++;
	st->used = used;
	st->scan_reads++;
}

/*
 * Submit the current batch's key ranges.  true when the lookup works on its
 * first chunk while the caller reads the next batch (the pipeline): not for
 * the scan's first batch, which is small so that a LIMIT above reads few
 * outer rows (reading the next, 16 times larger, batch ahead would undo
 * that; its lookup is too short to hide anything anyway).
 */
static bool
start_batch(EytzJoinState *st)
{
	st->nchunk = 0;
	st->pos = 0;
	st->block_end = 0;
	st->index_pass = false;
	st->cur_tid = PG_UINT64_MAX;
	st->slot_row = NO_ROW;
	st->unmatched_pos = 0;
	st->batch_done = st->nq == 0;
	if (st->nq == 0)
		return false;
	stage_enter(st, STAGE_LOOKUP);
	eytz_lookup_submit(st->lookup, st->qlo, st->qhi, st->qrow, st->nq);
	pgstat_count_index_scan(st->index);
	return st->overlap && st->scan_reads > 1 &&
		eytz_lookup_start(st->lookup, st->next_chunk,
						  eytz_lookup_overlap == EYTZ_OVERLAP_ALWAYS);
}

/* Exchange the current batch's arrays with the other buffer's */
static void
swap_batches(EytzJoinState *st)
{
	JoinBatch	cur = {st->rowmem, st->qlo, st->qhi, st->qrow, st->batchcxt,
	st->nrows, st->nq, st->used};

	st->rowmem = st->other.rowmem;
	st->qlo = st->other.qlo;
	st->qhi = st->other.qhi;
	st->qrow = st->other.qrow;
	st->batchcxt = st->other.cxt;
	st->nrows = st->other.nrows;
	st->nq = st->other.nq;
	st->used = st->other.used;
	st->other = cur;
}

/*
 * While the lookup answers the current batch, read the next one into the
 * other buffer, within what the current one leaves of work_mem.  A batch
 * that this cuts short turns the pipeline off for the rest of the scan
 * (its batches must not be smaller than without it).
 */
static void
read_ahead(EytzJoinState *st)
{
	Size		held = st->used;
	uint32		want = Min(st->next_batch, st->cap);

	/* the second set of arrays at the first read ahead (a CPU view takes none) */
	if (st->other.rowmem == NULL)
	{
		MemoryContext cxt = st->css.ss.ps.state->es_query_cxt;

		carve_batch(st, (char *) TYPEALIGN(EYTZ_ROW_ALIGN,
										   eytz_scratch_alloc(cxt, EYTZ_ROW_ALIGN + batch_bytes(st))),
					&st->other);
		st->other.cxt = AllocSetContextCreate(cxt, "eytzgpu join batch ahead",
											  ALLOCSET_DEFAULT_SIZES);
	}
	swap_batches(st);
	stage_enter(st, STAGE_FILL);
	read_batch(st, held < st->rows_mem ? st->rows_mem - held : 0);
	if (!st->outer_done && st->nrows < want)
		st->overlap = false;
	st->ahead_ready = st->nrows > 0;
	swap_batches(st);
}

/* Is heap block blk all-visible?  (the map page's buffer stays pinned) */
static inline bool
block_all_visible(EytzJoinState *st, BlockNumber blk)
{
	Buffer	   *vmbuf = &st->vmbufs[(blk / EYTZ_VM_HEAPBLOCKS_PER_PAGE) % EYTZ_VM_BUFS];

	return VM_ALL_VISIBLE(st->heap, blk, vmbuf);
}

/*
 * Is every page of the heap all-visible now?  Then a match the index
 * answers needs no look at the map, nor its TID (eytz_lookup_heap_all_visible):
 * a fully vacuumed table's index-only join reads no TID.  Two reads of
 * the map per thousands of heap pages, before each chunk.
 */
static bool
heap_all_visible(EytzJoinState *st)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(st->heap);
	BlockNumber all_visible;
	BlockNumber all_frozen;

	visibilitymap_count(st->heap, &all_visible, &all_frozen);
	return all_visible >= nblocks;
}

/* vm_seen: not looked up yet in this chunk, not all-visible, all-visible */
#define VM_UNSEEN 0
#define VM_NOT_ALL_VISIBLE 1
#define VM_ALL_VISIBLE_SEEN 2

/*
 * Index-only: which matches of the new (unsorted) chunk take their values
 * from the index: those the lookup returned values for, on heap pages the
 * visibility map shows all-visible (every tuple there is visible to every
 * snapshot), as long as no VACUUM has removed an entry of the chunk's view
 * since it was read (asked after the map, see eytz_lookup_chunk_current).
 * A chunk with at least a quarter as many matches as the table has blocks
 * looks each block up once (vm_seen); smaller ones ask the map each time
 * the block changes.  Where the whole heap was all-visible before the
 * chunk was read (heap_all_visible), the image's matches came as slots
 * without their TIDs and need no look at all.
 */
static void
classify_chunk(EytzJoinState *st)
{
	BlockNumber blk = InvalidBlockNumber;
	BlockNumber seen_blocks = 0;
	bool		all_visible = false;
	bool		any = false;
	uint32		i;

	st->cols = eytz_lookup_columns(st->lookup);
	if ((uint64) st->nchunk * 4 >= st->vm_seen_blocks)
	{
		seen_blocks = st->vm_seen_blocks;
		memset(st->vm_seen, VM_UNSEEN, seen_blocks);
	}
	for (i = 0; i < st->nchunk; i++)
	{
		if (!st->cols->have[st->chunk[i].unused])
		{
			st->from_index[i] = false;
			continue;
		}
		/* left a slot: its page, as every page, was all-visible */
		if (st->chunk[i].tid & EYTZ_MATCH_SLOT)
		{
			st->from_index[i] = true;
			any = true;
			continue;
		}
		if (eytz_tid_block(st->chunk[i].tid) != blk)
		{
			blk = eytz_tid_block(st->chunk[i].tid);
			if (blk >= seen_blocks)
				all_visible = block_all_visible(st, blk);
			else
			{
				if (st->vm_seen[blk] == VM_UNSEEN)
					st->vm_seen[blk] = block_all_visible(st, blk) ?
						VM_ALL_VISIBLE_SEEN : VM_NOT_ALL_VISIBLE;
				all_visible = st->vm_seen[blk] == VM_ALL_VISIBLE_SEEN;
			}
		}
		st->from_index[i] = all_visible;
		any |= all_visible;
	}
	if (any && !eytz_lookup_chunk_current(st->lookup))
	{
		/* the heap answers for every match, by TID */
		eytz_lookup_resolve_chunk(st->lookup);
		memset(st->from_index, 0, sizeof(bool) * st->nchunk);
	}
}

/*
 * Resolve the TIDs of the block of chunk[pos] (its matches are adjacent) in
 * one visit of the page; rows already satisfied need no tuple.
 */
static void
resolve_block(EytzJoinState *st)
{
	BlockNumber blk = eytz_tid_block(st->chunk[st->pos].tid);
	bool		page_read = false;
	uint32		i;

	stage_enter(st, STAGE_FETCH);
	/*
	 * the tuple in the scan slot (its values may point into the last
	 * block's page, which the next block's pin lets go) is fetched again
	 */
	st->cur_tid = PG_UINT64_MAX;
	for (i = st->pos; i < st->nchunk && eytz_tid_block(st->chunk[i].tid) == blk; i++)
	{
		uint32		row = st->chunk[i].row;

		if (st->single_match && row_flags(st, batch_row(st, row))[FLAG_MATCHED])
			continue;
		if (!page_read)
			eytz_heap_block_begin(st->hf, blk);
		page_read = true;
		eytz_heap_resolve(st->hf, eytz_tid_offset(st->chunk[i].tid));
	}
	if (page_read)
		eytz_heap_block_end(st->hf);
	st->block_end = i;
}

/*
 * The inner columns of match m from the values the lookup returned (at
 * m->unused); its page is predicate-locked as an Index Only Scan does
 */
static inline void
inner_from_index(EytzJoinState *st, const EytzMatch *m)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	uint32		pos = m->unused;
	int			no = st->nouter;
	int			i;

	if (st->serializable)
		PredicateLockPage(st->heap, eytz_tid_block(m->tid),
						  st->css.ss.ps.state->es_snapshot);
	st->cur_key = st->cols->keys[pos];
	for (i = 0; i < st->ninner; i++)
	{
		int			j = st->index_cols[i];

		if (j == 0)
		{
			scan->tts_values[no + i] = st->kt->decode(st->cur_key);
			scan->tts_isnull[no + i] = false;
		}
		else
		{
			scan->tts_values[no + i] = st->cols->values[j - 1][pos];
			scan->tts_isnull[no + i] = st->cols->isnull[j - 1][pos];
		}
	}
}

/*
 * The inner columns of the heap tuple at TID t (its block resolved) read
 * where they lie in the page (table columns only: inner_direct); false if
 * it is not visible or its key is NULL.  Values passed by reference point
 * into the page, pinned until the next block begins.
 */
static bool
inner_from_page(EytzJoinState *st, ItemPointer tid)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	TupleDesc	desc = RelationGetDescr(st->heap);
	HeapTuple	tuple = eytz_heap_tuple(st->hf, tid);
	bool		isnull;
	Datum		key;
	int			no = st->nouter;
	int			i;

	if (tuple == NULL)
		return false;
	key = heap_getattr(tuple, st->keyattno, desc, &isnull);
	if (isnull)
		return false;
	st->cur_key = st->kt->encode(key);
	for (i = 0; i < st->ninner; i++)
		scan->tts_values[no + i] = heap_getattr(tuple, st->inner_attnos[i], desc,
												&scan->tts_isnull[no + i]);
	return true;
}

/*
 * The inner columns of the heap tuple at TID t (its block resolved); false
 * if it is not visible or its key is NULL
 */
static bool
inner_from_heap(EytzJoinState *st, uint64 t)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	TupleTableSlot *heapslot = eytz_heap_slot(st->hf);
	ItemPointerData tid;
	bool		isnull;
	Datum		key;
	int			no = st->nouter;
	int			i;

	eytz_tid_unpack(t, &tid);
	st->nfetches++;
	if (st->inner_direct)
		return inner_from_page(st, &tid);
	if (!eytz_heap_fetch(st->hf, &tid))
		return false;
	key = slot_getattr(heapslot, st->keyattno, &isnull);
	if (isnull)
		return false;
	st->cur_key = st->kt->encode(key);
	slot_getsomeattrs(heapslot, st->inner_natts);
	for (i = 0; i < st->ninner; i++)
	{
		AttrNumber	a = st->inner_attnos[i];

		if (a > 0)
		{
			scan->tts_values[no + i] = heapslot->tts_values[a - 1];
			scan->tts_isnull[no + i] = heapslot->tts_isnull[a - 1];
		}
		else if (a == 0)
		{
			/* the whole row, kept for the tuple's matches */
			MemoryContext old;

			MemoryContextReset(st->innercxt);
			old = MemoryContextSwitchTo(st->innercxt);
			scan->tts_values[no + i] = ExecFetchSlotHeapTupleDatum(heapslot);
			scan->tts_isnull[no + i] = false;
			MemoryContextSwitchTo(old);
		}
		else
			scan->tts_values[no + i] = slot_getsysattr(heapslot, a,
													   &scan->tts_isnull[no + i]);
	}
	return true;
}

/*
 * Fetch the inner tuple of match m into the inner part of the scan slot
 * (from the index in an index-only chunk's first pass, else from the heap);
 * false if it is not visible or fails the inner table's quals.
 */
static pg_attribute_always_inline bool
fetch_inner(EytzJoinState *st, const EytzMatch *m)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	if (st->index_pass)
		inner_from_index(st, m);
	else if (!inner_from_heap(st, m->tid))
		return false;
	if (TTS_EMPTY(scan))
		ExecStoreVirtualTuple(scan);
	if (st->innerqual)
	{
		bool		pass;

		/* inner quals read only the inner part of the slot */
		stage_enter(st, STAGE_QUAL);
		econtext->ecxt_scantuple = scan;
		pass = ExecQual(st->innerqual, econtext);
		ResetExprContext(econtext);
		if (!pass)
			return false;
	}
	return true;
}

/* Put batch row's outer values into the scan slot (where not there yet) */
static void
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
 * What the matches of batch row "row" will read of it.  Always inlined: a
 * call of its own, which has no effect GCC counts, is deleted.
 */
static pg_attribute_always_inline void
prefetch_row(EytzJoinState *st, uint32 row)
{
	BatchRow   *r;

	if (!st->keep_rows)
	{
		/* its query's range */
		__builtin_prefetch(&st->qlo[row]);
		if (!st->point_keys)
			__builtin_prefetch(&st->qhi[row]);
		return;
	}
	r = batch_row(st, row);
	__builtin_prefetch(r);
	/* a row across two cache lines: its flags are in the second */
	__builtin_prefetch(row_flags(st, r));
}

/*
 * Is key in the range of batch row "row" (r, or without kept rows its
 * query's)?
 */
static inline bool
in_row_range(EytzJoinState *st, uint32 row, const BatchRow *r, uint64 key)
{
	if (r == NULL)
		return st->point_keys ? key == st->qlo[row] :
			key >= st->qlo[row] && key <= st->qhi[row];
	return key >= r->lo && key <= r->hi;
}

/*
 * Move to the batch's next chunk of matches; false after its last.  An
 * index-only chunk's matches that the index does not answer (classify_chunk)
 * are set aside in its first pass, then sorted by TID and fetched from the
 * heap as a chunk of their own.
 */
static bool
next_chunk(EytzJoinState *st)
{
	st->pos = 0;
	st->block_end = 0;
	if (st->index_pass && st->ndeferred > 0)
	{
		stage_enter(st, STAGE_LOOKUP);
		st->nchunk = eytz_match_sort(st->deferred, st->ndeferred,
									 st->deferred + st->chunk_cap, false);
		st->chunk = st->deferred;
		st->index_pass = false;
		st->cur_tid = PG_UINT64_MAX;
		eytz_heap_set_chunk(st->hf, st->chunk, st->nchunk);
		return true;
	}
	st->index_pass = false;
	if (st->batch_done)
		return false;
	CHECK_FOR_INTERRUPTS();
	if (st->index_only && !st->serializable)
	{
		stage_enter(st, STAGE_FETCH);
		eytz_lookup_heap_all_visible(st->lookup, heap_all_visible(st));
	}
	stage_enter(st, STAGE_LOOKUP);
	st->nchunk = eytz_lookup_next(st->lookup, st->next_chunk, &st->chunk);
	st->next_chunk = (uint32) Min((uint64) st->next_chunk * EYTZ_GROWTH, (uint64) st->chunk_cap);
	if (st->nchunk == 0)
	{
		st->batch_done = true;
		return false;
	}
	st->nchunks++;
	if (st->index_only)
	{
		stage_enter(st, STAGE_FETCH);
		classify_chunk(st);
		st->index_pass = true;
		st->ndeferred = 0;
	}
	else
		eytz_heap_set_chunk(st->hf, st->chunk, st->nchunk);
	return true;
}

/*
 * The next match of an index-only chunk's first pass that the index
 * answers, its inner columns in the scan slot, or NULL at the end of the
 * pass; the others are set aside for the heap.  The index's entry is in
 * the row's key range (no recheck): without kept rows nothing of the row
 * is read.
 */
static const EytzMatch *
next_index_match(EytzJoinState *st, BatchRow **r)
{
	while (st->pos < st->nchunk)
	{
		const EytzMatch *m = &st->chunk[st->pos];
		uint32		ahead = st->pos + EYTZ_ROW_AHEAD;

		if (!st->from_index[st->pos++])
		{
			st->deferred[st->ndeferred++] = *m;
			continue;
		}
		*r = NULL;
		if (st->keep_rows)
		{
			/* the rows of the matches ahead, at random in the batch: their misses overlap */
			if (ahead < st->nchunk && st->from_index[ahead])
				prefetch_row(st, st->chunk[ahead].row);
			*r = batch_row(st, m->row);
			if (st->single_match && row_flags(st, *r)[FLAG_MATCHED])
				continue;
		}
		stage_enter(st, STAGE_FETCH);
		if (fetch_inner(st, m))
			return m;
	}
	return NULL;
}

/*
 * The next match of a chunk sorted by TID whose inner tuple is visible (in
 * the scan slot), or NULL at the end of the chunk
 */
static const EytzMatch *
next_heap_match(EytzJoinState *st, BatchRow **r)
{
	while (st->pos < st->nchunk)
	{
		const EytzMatch *m;

		if (st->pos == st->block_end)
			resolve_block(st);
		if (st->pos + EYTZ_ROW_AHEAD < st->nchunk)
			prefetch_row(st, st->chunk[st->pos + EYTZ_ROW_AHEAD].row);
		m = &st->chunk[st->pos++];
		*r = st->keep_rows ? batch_row(st, m->row) : NULL;
		if (st->single_match && row_flags(st, *r)[FLAG_MATCHED])
			continue;
		if (m->tid != st->cur_tid)
		{
			stage_enter(st, STAGE_FETCH);
			st->cur_tid = m->tid;
			st->cur_found = fetch_inner(st, m);
		}
		if (st->cur_found)
			return m;
	}
	return NULL;
}

/* The next joined row of the batch's matches, or NULL after its last chunk */
static TupleTableSlot *
next_match(EytzJoinState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;

	for (;;)
	{
		const EytzMatch *m;
		BatchRow   *r;

		m = st->index_pass ? next_index_match(st, &r) : next_heap_match(st, &r);
		if (m == NULL)
		{
			if (!next_chunk(st))
				return NULL;
			continue;
		}
		/*
		 * recheck: the heap tuple's key must be in the row's range (an
		 * index entry's is: the lookup returned it for that range)
		 */
		if (!st->index_pass && !in_row_range(st, m->row, r, st->cur_key))
			continue;
		stage_enter(st, STAGE_QUAL);
		if (st->outer_per_match)
			store_outer(st, m->row);
		else
			econtext->ecxt_scantuple = st->css.ss.ss_ScanTupleSlot;
		if (st->joinqual && !ExecQual(st->joinqual, econtext))
		{
			InstrCountFiltered1(&st->css, 1);
			ResetExprContext(econtext);
			continue;
		}
		/* (no write to a row that nothing reads back) */
		if (st->flags_per_match)
			row_flags(st, r)[FLAG_MATCHED] = true;
		if (st->jointype == JOIN_ANTI)
			continue;
		if (!other_quals_pass(st))
			continue;
		return project(st);
	}
}

/* The inner part of the scan slot: NULLs, for the unmatched rows */
static void
set_inner_nulls(EytzJoinState *st)
{
	TupleTableSlot *scan = st->css.ss.ss_ScanTupleSlot;
	int			i;

	for (i = 0; i < st->ninner; i++)
	{
		scan->tts_values[st->nouter + i] = (Datum) 0;
		scan->tts_isnull[st->nouter + i] = true;
	}
	st->cur_tid = PG_UINT64_MAX;
}

/* The next unmatched row of the batch, null-extended, or NULL */
static TupleTableSlot *
next_unmatched(EytzJoinState *st)
{
	while (st->unmatched_pos < st->nrows)
	{
		uint32		row = st->unmatched_pos++;

		if (row_flags(st, batch_row(st, row))[FLAG_MATCHED])
			continue;
		store_outer(st, row);
		if (!other_quals_pass(st))
			continue;
		return project(st);
	}
	return NULL;
}

static TupleTableSlot *
eytz_join_exec(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	TupleTableSlot *res = NULL;

	/* the node's time starts where its instrumentation started it */
	if (st->fine_timing)
	{
		st->stage_start = node->ss.ps.instrument->starttime;
		st->stage = STAGE_OWN;
	}
	if (!st->started)
		eytz_join_start(st);

	while (res == NULL)
	{
		MemoryContext tuplecxt = node->ss.ps.ps_ExprContext->ecxt_per_tuple_memory;

		/* a call per match: none where the last left nothing to free */
		if (!tuplecxt->isReset || tuplecxt->firstchild != NULL)
			MemoryContextReset(tuplecxt);
		switch (st->phase)
		{
			case PHASE_FILL:
				CHECK_FOR_INTERRUPTS();
				if (st->ahead_ready)
				{
					/* read while the lookup answered the last batch */
					swap_batches(st);
					st->ahead_ready = false;
				}
				else if (st->outer_done)
				{
					st->phase = PHASE_DONE;
					break;
				}
				else
				{
					stage_enter(st, STAGE_FILL);
					read_batch(st, st->rows_mem);
				}
				if (start_batch(st) && !st->outer_done)
					read_ahead(st);
				st->phase = PHASE_MATCHES;
				break;

			case PHASE_MATCHES:
				res = next_match(st);
				if (res == NULL)
				{
					stage_enter(st, STAGE_FETCH);
					eytz_heap_reset(st->hf);
					st->phase = PHASE_FILL;
					if (st->jointype == JOIN_LEFT || st->jointype == JOIN_ANTI)
					{
						set_inner_nulls(st);
						st->phase = PHASE_UNMATCHED;
					}
				}
				break;

			case PHASE_UNMATCHED:
				res = next_unmatched(st);
				if (res == NULL)
					st->phase = PHASE_FILL;
				break;

			case PHASE_DONE:
				res = ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
				break;
		}
	}
	/* the clock stops until the next call */
	if (st->fine_timing)
		stage_charge(st);
	return res;
}

static void
eytz_join_end(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	int			i;

	if (st->outer_scan)
		eytz_outer_end(st->outer_scan);
	ExecEndNode(outer_ps(st));
	for (i = 0; i < EYTZ_VM_BUFS; i++)
	{
		if (BufferIsValid(st->vmbufs[i]))
			ReleaseBuffer(st->vmbufs[i]);
		st->vmbufs[i] = InvalidBuffer;
	}
	if (st->hf)
		eytz_heap_end(st->hf);
	if (st->lookup)
		eytz_lookup_end(st->lookup);
	if (st->index)
		index_close(st->index, AccessShareLock);
	if (st->heap)
		table_close(st->heap, AccessShareLock);
}

static void
eytz_join_rescan(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	PlanState  *outer = outer_ps(st);

	/* custom children do not get the changed parameters from ExecReScan */
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(outer, node->ss.ps.chgParam);
	if (outer->chgParam == NULL)
		ExecReScan(outer);
	if (st->outer_scan)
		eytz_outer_rescan(st->outer_scan);
	if (st->hf)
		eytz_heap_reset(st->hf);
	ExecClearTuple(node->ss.ss_ScanTupleSlot);
	st->slot_row = NO_ROW;
	st->cur_tid = PG_UINT64_MAX;
	/* the next batch's submit drops the unread matches of this one */
	MemoryContextReset(st->batchcxt);
	if (st->ahead_ready)
		MemoryContextReset(st->other.cxt);
	st->ahead_ready = false;
	st->scan_reads = 0;
	st->nrows = 0;
	st->nchunk = 0;
	st->pos = 0;
	st->index_pass = false;
	st->batch_done = true;
	st->phase = PHASE_FILL;
	st->outer_done = false;
	st->next_batch = Min(EYTZ_FIRST_BATCH, eytz_batch_size);
	st->next_chunk = Min(EYTZ_FIRST_CHUNK, st->chunk_cap);
}

static const char *
join_type_name(JoinType jt)
{
	switch (jt)
	{
		case JOIN_INNER:
			return "Inner";
		case JOIN_LEFT:
			return "Left";
		case JOIN_SEMI:
			return "Semi";
		case JOIN_ANTI:
			return "Anti";
		default:
			return "?";
	}
}

/* Add what st did so far to report r */
static void
report_add(EytzJoinState *st, EytzJoinReport *r)
{
	const EytzLookupStats *ls;
	int			i;

	if (!st->started)
		return;
	ls = eytz_lookup_stats(st->lookup);
	strlcpy(r->device, ls->device, sizeof(r->device));
	if (ls->cpu_reason)
		strlcpy(r->cpu_reason, ls->cpu_reason, sizeof(r->cpu_reason));
	r->batches += st->nbatches;
	r->chunks += st->nchunks;
	r->lookups += ls->lookups;
	r->matches += ls->matches;
	r->fetches += st->nfetches;
	r->heap_blocks += eytz_heap_pages(st->hf);
	r->outer_pages += eytz_outer_pages(st->outer_scan);
	r->gpu_batches += ls->gpu_batches;
	r->overlap_batches += ls->overlap_batches;
	r->wait_ms += ls->wait_ms;
	r->acquire_ms += ls->acquire_ms;
	r->search_ms += ls->search_ms;
	r->transfer_ms += ls->transfer_ms;
	r->kernel_ms += ls->kernel_ms;
	r->sort_ms += ls->sort_ms;
	for (i = 0; i < NUM_STAGES; i++)
		r->stage_ms[i] += INSTR_TIME_GET_MILLISEC(st->stage_time[i]);
	r->clock_reads += st->clock_reads;
	r->clock_ms += st->clock_reads * st->clock_read_ns / 1e6;
}

/* The counters and (with TIMING) the stage budget of one process */
static void
explain_report(const EytzJoinReport *r, ExplainState *es)
{
	ExplainPropertyText("Device", r->device, es);
	if (r->cpu_reason[0] != '\0')
		ExplainPropertyText("CPU Reason", r->cpu_reason, es);
	ExplainPropertyUInteger("Batches", NULL, r->batches, es);
	ExplainPropertyUInteger("Chunks", NULL, r->chunks, es);
	ExplainPropertyUInteger("Lookups", NULL, r->lookups, es);
	ExplainPropertyUInteger("Matches", NULL, r->matches, es);
	ExplainPropertyUInteger("Heap Fetches", NULL, r->fetches, es);
	ExplainPropertyUInteger("Heap Blocks", NULL, r->heap_blocks, es);
	/* the outer Seq Scan's pages that the join read itself */
	if (r->outer_pages > 0)
		ExplainPropertyUInteger("Outer Pages Read Directly", NULL, r->outer_pages, es);
	if (r->image_share != IMAGE_NOT_SHARED)
		ExplainPropertyText("Shared Image", image_share_names[r->image_share], es);
	/* without TIMING: the stages timed per batch and chunk */
	ExplainPropertyFloat("Outer Time", "ms", r->stage_ms[STAGE_FILL], 3, es);
	ExplainPropertyFloat("Lookup Time", "ms", r->stage_ms[STAGE_LOOKUP], 3, es);
	ExplainPropertyFloat("Lookup Acquire Time", "ms", r->acquire_ms, 3, es);
	ExplainPropertyFloat("Lookup Search Time", "ms", r->search_ms, 3, es);
	if (r->gpu_batches > 0)
	{
		ExplainPropertyFloat("GPU Transfer Time", "ms", r->transfer_ms, 3, es);
		ExplainPropertyFloat("GPU Kernel Time", "ms", r->kernel_ms, 3, es);
	}
	ExplainPropertyFloat("Match Sort Time", "ms", r->sort_ms, 3, es);
	/* the pipeline: batches whose lookup ran while the next was read */
	if (r->overlap_batches > 0)
	{
		ExplainPropertyUInteger("Lookup Overlap", "batches", r->overlap_batches, es);
		ExplainPropertyFloat("Lookup Wait Time", "ms", r->wait_ms, 3, es);
	}
	if (!es->timing)
		return;
	ExplainPropertyFloat("Heap Fetch Time", "ms", r->stage_ms[STAGE_FETCH], 3, es);
	ExplainPropertyFloat("Qual Time", "ms", r->stage_ms[STAGE_QUAL], 3, es);
	ExplainPropertyFloat("Own Time", "ms", r->stage_ms[STAGE_OWN], 3, es);
	/* how much of the stage times above their own clock reads took */
	ExplainPropertyUInteger("Stage Clock Reads", NULL, r->clock_reads, es);
	ExplainPropertyFloat("Stage Clock Cost", "ms", r->clock_ms, 3, es);
}

/*
 * The parallel workers' reports, each under "Worker N:" in text (a "Join
 * Workers" list otherwise: the node's own "Workers" list is explain.c's)
 */
static void
explain_workers(EytzJoinState *st, ExplainState *es)
{
	int			i;
	int			ndone = 0;

	for (i = 0; i < st->nworker_reports; i++)
		ndone += st->worker_reports[i].done;
	if (ndone == 0)
		return;
	ExplainOpenGroup("Join Workers", "Join Workers", false, es);
	for (i = 0; i < st->nworker_reports; i++)
	{
		if (!st->worker_reports[i].done)
			continue;
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Worker %d:\n", i);
			es->indent++;
		}
		ExplainOpenGroup("Worker", NULL, true, es);
		if (es->format != EXPLAIN_FORMAT_TEXT)
			ExplainPropertyInteger("Worker Number", NULL, i, es);
		explain_report(&st->worker_reports[i], es);
		ExplainCloseGroup("Worker", NULL, true, es);
		if (es->format == EXPLAIN_FORMAT_TEXT)
			es->indent--;
	}
	ExplainCloseGroup("Join Workers", "Join Workers", false, es);
}

static void
eytz_join_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	EytzJoinState *st = (EytzJoinState *) node;
	EytzMetaPageData meta;
	char		buf[64];

	eytz_read_meta(st->index, &meta);
	ExplainPropertyText("Join Type", join_type_name(st->jointype), es);
	ExplainPropertyText("Index", RelationGetRelationName(st->index), es);
	if (eytz_meta_layout(&meta) == EYTZ_LAYOUT_EKS)
		snprintf(buf, sizeof(buf), "eks (fanout %u)", meta.fanout);
	else
		snprintf(buf, sizeof(buf), "ebs");
	ExplainPropertyText("Layout", buf, es);
	if (st->index_only)
		ExplainPropertyBool("Index Only", true, es);
	if (!es->analyze)
		return;
	/* how the leader shared its image: kept (and the queries it served) */
	if (st->kept_queries > 0)
	{
		ExplainPropertyText("Image Shared", "kept", es);
		ExplainPropertyUInteger("Image Shared Queries", NULL, st->kept_queries, es);
	}
	else if (st->image_copied)
		ExplainPropertyText("Image Shared", "copied", es);
	/* the leader's own part, when it ran the node */
	if (st->started)
	{
		EytzJoinReport own;

		memset(&own, 0, sizeof(own));
		report_add(st, &own);
		explain_report(&own, es);
	}
	explain_workers(st, es);
}

/*
 * Parallel join (a partial path under Gather): the outer scan divides the
 * work and each process pins its own view of the index.  Shared memory
 * holds the workers' reports for the leader's EXPLAIN ANALYZE and, when the
 * leader has the index's image cached and the workers search images (no
 * service answers them), the way to it, which spares each worker a load
 * (reading and checking every page of the index).  Where a worker can
 * search the image in place (eytz_image_in_place) that is the handle of
 * the leader's kept image (eytz_image_pin_kept): no copy per query.  Else
 * (no room for it in the main shared memory, small pages) the leader
 * copies its image into the query's shared memory and each worker copies
 * it into its own.
 */
static Size
reports_size(int nworkers)
{
	return MAXALIGN(add_size(offsetof(EytzJoinShared, reports),
							 mul_size(sizeof(EytzJoinReport), nworkers)));
}

/* The end of the query (or its error) unpins the kept image */
static void
kept_unpin(void *arg)
{
	EytzJoinState *st = (EytzJoinState *) arg;

	if (st->kept)
		eytz_image_release(st->kept);
	st->kept = NULL;
}

static Size
eytz_join_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	EytzJoinState *st = (EytzJoinState *) node;

	eytz_read_meta(st->index, &st->share_meta);
	st->share_bytes = 0;
	/* a Gather run again after its shutdown sets up its shared memory anew */
	kept_unpin(st);
	/* workers that the service answers need no image */
	if (eytz_lookup_service_answers() ||
		!eytz_image_resident(st->index, st->share_meta.generation))
		return reports_size(pcxt->nworkers);
	/* pinned until the query ends: the workers attach it after this */
	st->kept = eytz_image_pin_kept(st->index, &st->share_meta);
	if (st->kept && st->kept_cb.func == NULL)
	{
		st->kept_cb.func = kept_unpin;
		st->kept_cb.arg = st;
		MemoryContextRegisterResetCallback(st->css.ss.ps.state->es_query_cxt,
										   &st->kept_cb);
	}
	if (st->kept == NULL)
		st->share_bytes = eytz_image_shared_size(st->index, &st->share_meta);
	return add_size(reports_size(pcxt->nworkers), st->share_bytes);
}

static void
eytz_join_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	EytzJoinState *st = (EytzJoinState *) node;
	EytzJoinShared *shared = (EytzJoinShared *) coordinate;

	memset(shared, 0, reports_size(pcxt->nworkers));
	shared->nworkers = pcxt->nworkers;
	if (st->kept)
	{
		shared->has_image = true;
		shared->image_kept = true;
		shared->image_handle = dsm_segment_handle(st->kept->seg);
		shared->image_meta = st->kept->img.meta;
		st->kept_queries = ++st->kept->kept_queries;
	}
	else if (st->share_bytes > 0)
	{
		shared->image_offset = reports_size(pcxt->nworkers);
		shared->has_image = eytz_image_export(st->index, &st->share_meta,
											  (char *) shared + shared->image_offset,
											  &shared->image_meta);
		st->image_copied = shared->has_image;
	}
	st->shared = shared;
}

/* A rescan relaunches the workers: their reports add up over the scans */
static void
eytz_join_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	((EytzJoinState *) node)->shared = (EytzJoinShared *) coordinate;
}

/*
 * A worker that cannot attach the leader's kept image (gone: not while the
 * leader's query pins it) loads its own, as without a shared image
 */
static void
eytz_join_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	EytzJoinState *st = (EytzJoinState *) node;
	instr_time	t0,
				t1;

	st->shared = (EytzJoinShared *) coordinate;
	if (!st->shared->has_image)
		return;
	INSTR_TIME_SET_CURRENT(t0);
	if (st->shared->image_kept)
		st->image_share = eytz_image_attach_kept(st->index, &st->shared->image_meta,
												 st->shared->image_handle) ?
			IMAGE_IN_PLACE : IMAGE_NOT_SHARED;
	else
	{
		eytz_image_import(st->index, &st->shared->image_meta,
						  (char *) st->shared + st->shared->image_offset);
		st->image_share = IMAGE_COPIED;
	}
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	st->import_ms = INSTR_TIME_GET_MILLISEC(t1);
}

/*
 * A worker leaves its report; the leader copies the reports of the workers
 * that are done (all of them unless a LIMIT stopped the scan early) before
 * Gather frees the shared memory: the leader shuts its children down first.
 */
static void
eytz_join_shutdown(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	int			i;

	if (st->shared == NULL)
		return;
	if (IsParallelWorker())
	{
		EytzJoinReport *r;

		if (ParallelWorkerNumber >= st->shared->nworkers)
			return;
		r = &st->shared->reports[ParallelWorkerNumber];
		report_add(st, r);
		/* taking up the shared image is part of pinning its view */
		r->acquire_ms += st->import_ms;
		st->import_ms = 0;
		r->image_share = st->image_share;
		pg_write_barrier();
		r->done = true;
		return;
	}
	if (st->worker_reports == NULL)
		st->worker_reports = MemoryContextAllocZero(st->css.ss.ps.state->es_query_cxt,
													sizeof(EytzJoinReport) * Max(st->shared->nworkers, 1));
	st->nworker_reports = st->shared->nworkers;
	for (i = 0; i < st->shared->nworkers; i++)
	{
		if (!st->shared->reports[i].done)
			continue;
		pg_read_barrier();
		st->worker_reports[i] = st->shared->reports[i];
	}
	/* Gather frees the shared memory next */
	st->shared = NULL;
}
