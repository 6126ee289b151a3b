/*
 * eytz_tuning.h
 *		The measured constants of the GPU side, each with where it came from.
 *
 * Plain C (macros) so that the strategy choice (eytz_strategy.h, compiled by
 * the CPU test too) and the kernels read the same numbers.  Unless said
 * otherwise, "measured" means the H100 runs recorded in
 * cuda/bench/results/README.md (the section named beside each constant),
 * where the figures are.
 */
#ifndef EYTZ_TUNING_H
#define EYTZ_TUNING_H

/* ---- kernels: block shapes ---- */

/*
 * Threads a block of the lookup kernels: 256, a common default, not swept
 * (the grid is sized to what is resident, so occupancy decides, not this).
 * Block-local reordering sorts 256 x 8 keys a block.
 */
#define EYTZ_SINGLE_BLOCK		256
#define EYTZ_LSORT_BLOCK		256
#define EYTZ_LSORT_ITEMS		8
#define EYTZ_GROUP_BLOCK		256
#define EYTZ_BS_BLOCK			256

/*
 * A thread hands a per-level run to its warp after this many hits (paper
 * 5.1); the warp takeover beat the baseline up to 1024 hits (cuda/README.md,
 * "Results on the H100").
 */
#define EYTZ_HYBRID_T			32

/*
 * Pinned copies larger than this run in 1024-thread blocks, one per SM: a
 * big pin leaves room for one block only, so make it a big one (measured
 * faster at 2^15 keys: cuda/README.md, "Point lookups").
 */
#define EYTZ_BIG_PIN			(64 * 1024)

/* ---- point fast paths ---- */

/* largest whole-index copy the shared-memory point kernel takes (the H100 gives a block up to 227 KB) */
#define EYTZ_SMEM_POINT_MAX		(200 * 1024)
/* lookups per thread of k_point_smem: 4 measured fastest ("Point fast paths") */
#define EYTZ_SMEM_Q				4
/*
 * Lookups per thread of the CSR API's shared-memory walk (k_point_smem with
 * a CsrSink: warp tiles of 32 x 8 queries, half the look-backs of 32 x 4;
 * measured fastest at 2^15 keys: "The CSR API at 2^15: the walk and the
 * tiles").
 */
#define EYTZ_CSR_SMEM_Q			8
/* ids per tile of the bucketed write-back (k_tile_write, -1): 2048 results, 16 KB of shared memory */
#define EYTZ_SCATTER_TILE_LOG2	11

/*
 * Cluster tile write (Hopper): a tile of 2^EYTZ_CTILE_LOG2 ids spread over
 * the shared memory of a cluster of EYTZ_CTILE_CLUSTER blocks, 2^14 results
 * (128 KB) each; 8 is the portable cluster size maximum.  Half the time of
 * two partition passes ("Cluster tiles and the fused partition").
 */
#define EYTZ_CTILE_SLICE_LOG2	14
#define EYTZ_CTILE_CLUSTER		8
#define EYTZ_CTILE_LOG2			(EYTZ_CTILE_SLICE_LOG2 + 3)
#define EYTZ_CTILE_BLOCK		1024

/*
 * Fused partition of sorted lookups: one bucket counter per thread of a
 * 256-thread block (2^8 buckets: batches up to 2^25), 4 lookups per thread
 * in a chunk (faster than 2 or 8: "Cluster tiles and the fused partition").
 */
#define EYTZ_PART_MAX_BITS		8
#define EYTZ_PART_BLOCK			256
#define EYTZ_PART_ITEMS			4

/*
 * CSR compaction of point results already in query order (k_csr_compact):
 * 4 results a thread, a warp's tile of 128 queries per look-back (not
 * tuned; the shared-memory walk's tiles are 32 x EYTZ_CSR_SMEM_Q).
 */
#define EYTZ_COMPACT_Q			4

/* ---- composite strategy (cuda/README.md, "Composite strategy") ---- */

/* keys of at most this many bytes also get a binary (k = 2) copy: EBS with pinning wins there */
#define EYTZ_EBS_COPY_MAX_KEY_BYTES	(512 * 1024)
/* pinned top levels: (nearly) the whole index when it fits, else 16 KiB (more cost occupancy) */
#define EYTZ_PIN_BYTES_SMALL	(200 * 1024)
#define EYTZ_PIN_BYTES_LARGE	(16 * 1024)
/* ranges with at least this many expected hits take EKS group (won from 64 hits, even at 32) */
#define EYTZ_WIDE_RANGE_HITS	32
/* chunked global reordering: 2^21 lookups a chunk, 16 key bits (slower than unsorted at 2^28: never chosen) */
#define EYTZ_REORDER_LOGC		21
#define EYTZ_REORDER_BITS		16

/*
 * Globally sorted point lookups: sort on 16 significant key bits (two radix
 * passes; 12 bits measured slower), the fused partition (-2), from 32 MiB
 * of keys (where sorting started to win) and batches of 2^20 lookups (the
 * sort's fixed cost): "Sorted point lookups at 2^28".
 */
#define EYTZ_GSORT_KEY_BITS		16
#define EYTZ_GSORT_SCATTER_BITS	(-2)
#define EYTZ_GSORT_MIN_KEY_BYTES	(32ull << 20)
#define EYTZ_GSORT_MIN_BATCH	(1u << 20)

/*
 * Join inputs from the caller's arrays: copied into pinned memory (4-byte
 * keys narrowed on the way, streaming stores: eytz_stage.h) in chunks of
 * nq / (EYTZ_STAGE_CHUNKS_PER_THREAD x threads) queries, at least 2^16 and
 * at most 2^20, by one thread per EYTZ_STAGE_THREAD_QUERIES queries, at
 * most EYTZ_STAGE_THREADS and all cores but the caller's; each thread
 * takes the next chunk no other has taken and sends it on a stream of its
 * own as soon as it has copied it.
 * Copying threads because one thread cannot fill the copy engines from
 * pageable memory; streaming stores because the pinned lines need no read
 * for ownership; each thread sending its own chunks because a calling
 * thread that queued every transfer waited for preempted copiers, so more
 * threads made it slower; chunks taken by whichever thread is free rather
 * than dealt in turn.  Measured: "Staging the caller's arrays", "Streaming
 * stores in the staging", "Staging threads that send their own chunks"
 * (cuda/bench/stage_probe.cu, h100_stage_probe*.log, h100_api_*.log).
 */
#define EYTZ_STAGE_CHUNKS_PER_THREAD	4

/*
 * Join point batches that arrive in chunks of at least this many queries
 * are walked chunk by chunk as they arrive (EytzPlan.chunked): 2^25 queries
 * come in chunks of nq / 60 (15 threads), the executor's batches of 2^20
 * in chunks of 2^16, which keep their one walk after the transfer (a
 * launch per 2^16 queries was not measured).
 */
#define EYTZ_CHUNK_WALK_MIN		(1ull << 17)
#define EYTZ_STAGE_CHUNK_MIN	(1ull << 16)
#define EYTZ_STAGE_CHUNK_MAX	(1ull << 20)
#define EYTZ_STAGE_THREADS		15
#define EYTZ_STAGE_THREAD_QUERIES	(1ull << 17)

#endif							/* EYTZ_TUNING_H */
