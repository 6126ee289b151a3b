/*
 * eytzgpu_join.cu
 *		Join-shaped lookups of the C API (eytzgpu_lookup_join and its
 *		asynchronous pair): 64-bit keys and the caller's rows in, the matches
 *		out as (payload, row) pairs sorted by payload then row, tombstones
 *		dropped, for the longest prefix of the queries that fits a bound.
 *
 * Two pinned buffer sets alternate: batch i uses set i % 2, so the caller
 * reads the results of batch i (and fills the inputs of batch i + 1) while
 * the GPU works on batch i + 1.  Device buffers are shared by the sets: one
 * stream orders the batches (the streams of the staging threads wait for
 * it, and it for them: stage_inputs).  The pipelines (eytz_join.cuh):
 *	- point batches on unique keys, globally sorted path (large indexes): sort
 *	  (key, row) on the top key bits, look up in sorted order straight into
 *	  sort items, sort by (payload, row), split;
 *	- other point batches on unique keys: a point fast path or the point
 *	  kernels give one result per query, made into sort items;
 *	- ranges and duplicate keys: count, scan, the prefix, fill, sort items;
 *	- small point batches without columns: all of it in one launch
 *	  (eytzgpu_joinsmall.cu).
 */
#include <signal.h>
#include <string.h>
#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "eytzgpu_internal.cuh"
#include "eytz_stage.h"

using namespace eytzk;
using namespace eytzapi;

/* Device buffers of a join batch of nq queries (hi too when ranges) */
static int
ensure_join_inputs(EytzGpuIndex *h, uint64_t nq, bool ranges, bool need_sort, char *errbuf, size_t errlen)
{
	int			rc;

	if ((rc = ensure_queries(h, nq, need_sort, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	CK(grow((void **) &h->d_jlo, &h->jlo_cap, nq * 8, false));
	if (ranges)
		CK(grow((void **) &h->d_jhi, &h->jhi_cap, nq * 8, false));
	CK(grow((void **) &h->d_jrows, &h->jrows_cap, nq * 4, false));
	if (!h->d_stat)
		CK(cudaMalloc((void **) &h->d_stat, sizeof(JoinStat)));
done:
	return rc;
}

/*
 * Sort buffers for items (pairs or markers) and the sort's workspace; with
 * columns also the items' slots (and in two-key or ascending sorts their
 * (slot, row)).
 */
static int
ensure_join_items(EytzGpuIndex *h, uint64_t items, bool cols, bool asc, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	size_t		tb = 0,
				kcap = h->jkey_cap,
				rcap = h->jrow_cap,
				cap;

	if (cols)
	{
		cap = h->jslot_cap;
		CK(grow((void **) &h->d_jslot_a, &cap, items * 4, false));
		cap = h->jslot_cap;
		CK(grow((void **) &h->d_jslot_b, &cap, items * 4, false));
		h->jslot_cap = cap;
		if (!h->code.one_key || asc)
		{
			cap = h->jrs_cap;
			CK(grow((void **) &h->d_jrs_a, &cap, items * 8, false));
			cap = h->jrs_cap;
			CK(grow((void **) &h->d_jrs_b, &cap, items * 8, false));
			h->jrs_cap = cap;
		}
	}

	CK(grow((void **) &h->jb.key_a, &kcap, items * 8, false));
	kcap = h->jkey_cap;
	CK(grow((void **) &h->jb.key_b, &kcap, items * 8, false));
	h->jkey_cap = kcap;
	CK(grow((void **) &h->jb.row_a, &rcap, items * 4, false));
	rcap = h->jrow_cap;
	CK(grow((void **) &h->jb.row_b, &rcap, items * 4, false));
	h->jrow_cap = rcap;
	CK(join_sort_temp_bytes(items, &tb));
	CK(grow(&h->d_temp, &h->temp_cap, tb, false));
done:
	return rc;
}

/* Pinned inputs of a set for nq queries (hi when ranges) */
static int
ensure_set_inputs(EytzJoinSet *js, uint64_t nq, bool ranges, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	size_t		cap;

	if (nq <= js->in_cap && js->h_lo && js->h_rows && (!ranges || js->h_hi))
		return EYTZGPU_OK;
	if (nq < js->in_cap)
		nq = js->in_cap;
	cap = js->in_cap * 8;
	CK(grow((void **) &js->h_lo, &cap, nq * 8, true));
	cap = js->in_cap * 8;
	if (ranges || js->h_hi)
		CK(grow((void **) &js->h_hi, &cap, nq * 8, true));
	cap = js->in_cap * 4;
	CK(grow((void **) &js->h_rows, &cap, nq * 4, true));
	js->in_cap = nq;
done:
	if (rc != EYTZGPU_OK)
		js->in_cap = 0;
	return rc;
}

/*
 * Where the included columns of up to cap matches go in a batch's column
 * buffers (device and pinned alike): per column of the mask its values,
 * then its NULL flags, each run 16-byte aligned.  Returns the bytes.
 */
static size_t
col_layout(const EytzGpuIndex *h, uint32_t mask, uint64_t cap, size_t *val_off, size_t *null_off)
{
	size_t		off = 0;

	for (int c = 0; c < h->ncols; c++)
		if (mask & (1u << c))
		{
			val_off[c] = off;
			off += (cap * h->col_width[c] + 15) & ~(size_t) 15;
			null_off[c] = off;
			off += (cap + 15) & ~(size_t) 15;
		}
	return off;
}

/* Poisoned sort items (EYTZGPU_POISON) */
static cudaError_t
poison_items(const JoinBufs &b, uint64_t items, cudaStream_t st)
{
	cudaError_t e;

	if ((e = cudaMemsetAsync(b.key_a, 0xFF, items * 8, st)) != cudaSuccess ||
		(e = cudaMemsetAsync(b.key_b, 0xFF, items * 8, st)) != cudaSuccess ||
		(e = cudaMemsetAsync(b.row_a, 0xFF, items * 4, st)) != cudaSuccess)
		return e;
	if (b.slot_a && ((e = cudaMemsetAsync(b.slot_a, 0xFF, items * 4, st)) != cudaSuccess ||
					 (e = cudaMemsetAsync(b.slot_b, 0xFF, items * 4, st)) != cudaSuccess))
		return e;
	if (b.rs_a && ((e = cudaMemsetAsync(b.rs_a, 0xFF, items * 8, st)) != cudaSuccess ||
				   (e = cudaMemsetAsync(b.rs_b, 0xFF, items * 8, st)) != cudaSuccess))
		return e;
	return cudaSuccess;
}

/* The sort buffers of a batch (ensure_join_items): with columns the slots' too */
static JoinBufs
join_bufs_of(const EytzGpuIndex *h, bool cols, bool asc)
{
	JoinBufs	b = h->jb;
	bool		rs = cols && (!h->code.one_key || asc);

	b.slot_a = cols ? h->d_jslot_a : NULL;
	b.slot_b = cols ? h->d_jslot_b : NULL;
	b.rs_a = rs ? h->d_jrs_a : NULL;
	b.rs_b = rs ? h->d_jrs_b : NULL;
	b.asc = asc;
	return b;
}

/* How the item kernels turn the lookups' results into payloads (with columns: slots of the view searched) */
template <class KT>
static JoinSlots
join_slots_of(const EytzGpuIndex *h, bool cols, bool on_copy)
{
	Idx<KT>		o = plan_idx<KT>(h, false);
	JoinSlots	js;

	memset(&js, 0, sizeof(js));
	js.on = cols;
	js.map = on_copy ? h->d_ebs_map : NULL;
	js.pays = o.pays;
	js.aos = o.aos;
	js.tp = o.tp;
	js.tile_bytes = o.tile_bytes;
	js.key_bytes = sizeof(KT);
	return js;
}

/* The caller's own input arrays of a batch (not the set's pinned inputs) */
struct StageSrc
{
	const uint64_t *lo,
			   *hi;
	const uint32_t *rows;
};

/*
 * How a batch's inputs reach the device: chunks of "chunk" queries; with
 * "narrow" (a 4-byte index fed from the caller's arrays) the keys are
 * narrowed while they are copied into the pinned inputs and sent as 4-byte
 * keys straight into the query buffers (a third less to copy and to send).
 */
struct StagePlan
{
	uint64_t	chunk;
	bool		narrow;
};

/*
 * Chunk c of the inputs: [c * sp.chunk, ...) of nq, its pinned copy (src:
 * with streaming stores, eytz_stage.h) or (!src) its transfer on stream st
 */
static cudaError_t
stage_chunk(EytzGpuIndex *h, EytzJoinSet *js, const StageSrc *src, uint64_t nq, bool ranges,
			const StagePlan &sp, uint64_t c, cudaStream_t st)
{
	uint64_t	a = c * sp.chunk,
				m = nq - a < sp.chunk ? nq - a : sp.chunk;
	cudaError_t e;

	if (src && sp.narrow)
	{
		eytz_stage_narrow((uint32_t *) js->h_lo + a, src->lo + a, m);
		if (ranges)
			eytz_stage_narrow((uint32_t *) js->h_hi + a, src->hi + a, m);
	}
	else if (src)
	{
		eytz_stage_copy(js->h_lo + a, src->lo + a, m * 8);
		if (ranges)
			eytz_stage_copy(js->h_hi + a, src->hi + a, m * 8);
	}
	if (src)
	{
		eytz_stage_copy(js->h_rows + a, src->rows + a, m * 4);
		eytz_stage_fence();
		return cudaSuccess;
	}
	if (sp.narrow)
	{
		if ((e = cudaMemcpyAsync((uint32_t *) h->d_lo + a, (uint32_t *) js->h_lo + a, m * 4,
								 cudaMemcpyHostToDevice, st)) != cudaSuccess ||
			(ranges &&
			 (e = cudaMemcpyAsync((uint32_t *) h->d_hi + a, (uint32_t *) js->h_hi + a, m * 4,
								  cudaMemcpyHostToDevice, st)) != cudaSuccess))
			return e;
	}
	else if ((e = cudaMemcpyAsync(h->d_jlo + a, js->h_lo + a, m * 8, cudaMemcpyHostToDevice, st)) !=
			 cudaSuccess ||
			 (ranges &&
			  (e = cudaMemcpyAsync(h->d_jhi + a, js->h_hi + a, m * 8, cudaMemcpyHostToDevice, st)) !=
			  cudaSuccess))
		return e;
	return cudaMemcpyAsync(h->d_jrows + a, js->h_rows + a, m * 4, cudaMemcpyHostToDevice, st);
}

/*
 * Threads that copy a batch of nq queries from the caller's arrays: one per
 * EYTZ_STAGE_THREAD_QUERIES, at most all cores but the caller's and
 * EYTZ_STAGE_THREADS
 */
static uint64_t
stage_threads(uint64_t nq)
{
	uint64_t	cores = std::thread::hardware_concurrency();
	uint64_t	want = std::max<uint64_t>(nq / EYTZ_STAGE_THREAD_QUERIES, 1);

	return std::min<uint64_t>(std::min<uint64_t>(EYTZ_STAGE_THREADS, want), cores > 1 ? cores - 1 : 1);
}

/* Queries per chunk of a batch of nq: EYTZ_STAGE_CHUNKS_PER_THREAD for every staging thread, within bounds */
static uint64_t
stage_chunk_queries(uint64_t nq)
{
	uint64_t	chunk = nq / (EYTZ_STAGE_CHUNKS_PER_THREAD * stage_threads(nq));

	return std::min<uint64_t>(std::max<uint64_t>(chunk, EYTZ_STAGE_CHUNK_MIN), EYTZ_STAGE_CHUNK_MAX);
}

/*
 * What to do with a chunk [a, a + m) of the queries once its transfer is
 * queued on stream st (the handle's own, or a staging thread's)
 */
typedef std::function<cudaError_t(uint64_t a, uint64_t m, cudaStream_t st)> ChunkSent;

/*
 * The inputs to the device.  From the set's pinned inputs: their transfer,
 * chunk by chunk on the handle's stream.  From the caller's arrays: copied
 * into the pinned inputs (narrowed, see StagePlan; streaming stores) chunk
 * by chunk by staging threads (one thread copies far less than the bus
 * carries, see eytz_tuning.h).  Each takes the next chunk no thread has
 * taken (a preempted thread takes fewer), copies it and queues its
 * transfer (and what sent does with it) on a stream of its own: no thread
 * waits for another, and the copies and transfers overlap.  Chunks are
 * sized so that every thread gets EYTZ_STAGE_CHUNKS_PER_THREAD
 * (EYTZ_STAGE_CHUNK_MIN .. EYTZ_STAGE_CHUNK_MAX queries); a join's batch
 * of 2^20 queries is staged by up to 8 threads, one per 2^17 queries
 * (stage_threads).  The threads copy memory and call CUDA and nothing
 * else; they start with every signal blocked (the host process's handlers
 * stay on its own thread) and are joined before this returns.  The handle's stream then waits for
 * every thread's stream; the staging streams first wait for the work
 * queued before (an earlier batch's kernels read the same query buffers).
 */
static cudaError_t
stage_inputs(EytzGpuIndex *h, EytzJoinSet *js, const StageSrc *src, uint64_t nq, bool ranges, bool narrow,
			 const ChunkSent &sent)
{
	uint64_t	maxthreads = stage_threads(nq);
	StagePlan	sp;
	uint64_t	nch,
				nthreads;
	std::vector<std::thread> workers;
	cudaError_t errs[EYTZ_STAGE_THREADS] = {};	/* cudaSuccess: set again before any thread starts */
	std::atomic<uint64_t> next_chunk(0);
	cudaError_t e = cudaSuccess;
	sigset_t	all,
				old;

	sp.narrow = src && narrow;
	sp.chunk = stage_chunk_queries(nq);

	/* chunk c: its copy (from the caller's arrays), its transfer, then what the caller does with it */
	auto		stage = [&](uint64_t c, cudaStream_t st) {
		uint64_t	a = c * sp.chunk;
		cudaError_t se;

		if (src)
			stage_chunk(h, js, src, nq, ranges, sp, c, st);
		se = stage_chunk(h, js, NULL, nq, ranges, sp, c, st);
		if (se == cudaSuccess && sent)
			se = sent(a, std::min(sp.chunk, nq - a), st);
		return se;
	};
	/* thread t: the next chunk no thread has taken, until none is left (a preempted thread takes fewer) */
	auto		take = [&](uint64_t t) {
		uint64_t	c;

		while (errs[t] == cudaSuccess && (c = next_chunk.fetch_add(1)) < nch)
			errs[t] = stage(c, h->st_stage[t]);
	};
	nch = (nq + sp.chunk - 1) / sp.chunk;
	nthreads = std::min<uint64_t>(maxthreads, nch);
	if (!src || nch < 2 || nthreads < 2)
	{
		/* one thread: each chunk's transfer overlaps the next chunk's copy */
		for (uint64_t c = 0; c < nch && e == cudaSuccess; c++)
			e = stage(c, h->st);
		return e;
	}
	if ((e = cudaEventRecord(h->ev_inputs_free, h->st)) != cudaSuccess)
		return e;
	for (uint64_t t = 0; t < nthreads; t++)
	{
		errs[t] = cudaSuccess;
		if ((e = cudaStreamWaitEvent(h->st_stage[t], h->ev_inputs_free, 0)) != cudaSuccess)
			return e;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	try
	{
		for (uint64_t t = 0; t < nthreads; t++)
			workers.emplace_back([&, t] {
				/* a thread's CUDA calls go to the device of its last cudaSetDevice */
				errs[t] = cudaSetDevice(h->device);
				take(t);
			});
	}
	catch (...)
	{
		/* fewer threads than asked: those that started take every chunk */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (workers.empty())
		take(0);
	for (auto &w : workers)
		w.join();
	/* every thread's stream, even after an error: a synchronization of the handle's stream covers them */
	for (uint64_t t = 0; t < nthreads; t++)
	{
		cudaError_t we = cudaEventRecord(h->ev_staged[t], h->st_stage[t]);

		if (we == cudaSuccess)
			we = cudaStreamWaitEvent(h->st, h->ev_staged[t], 0);
		if (e == cudaSuccess)
			e = errs[t] != cudaSuccess ? errs[t] : we;
	}
	return e;
}

/*
 * The point walk of chunk [a, a + m) of a batch, sent on stream sent_on:
 * on a staging thread's stream right after the transfer, or on st_walk
 * (once the transfer is done) for chunks sent on the handle's stream, which
 * goes on with the next chunk's transfer.  Its keys narrowed to the index's
 * width unless they came narrowed, its results to d_first + a.
 */
template <class KT>
static cudaError_t
walk_chunk(EytzGpuIndex *h, const Idx<KT> &ix, const Cfg &cfg, bool narrowed, uint64_t a, uint64_t m,
		   cudaStream_t sent_on)
{
	Qs<KT>		q;
	Outs		o = {h->d_first + a, NULL, NULL};
	cudaStream_t ws = sent_on;
	cudaError_t e;

	if (sent_on == h->st)
	{
		if ((e = cudaEventRecord(h->ev_sent, h->st)) != cudaSuccess ||
			(e = cudaStreamWaitEvent(h->st_walk, h->ev_sent, 0)) != cudaSuccess)
			return e;
		ws = h->st_walk;
	}
	memset(&q, 0, sizeof(q));
	q.nq = m;
	if (narrowed || sizeof(KT) == 8)
		q.lo = (const KT *) (narrowed ? h->d_lo : (void *) h->d_jlo) + a;
	else
	{
		k_narrow<KT><<<grid1d(m), 256, 0, ws>>>(h->d_jlo + a, (KT *) h->d_lo + a, m);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return e;
		q.lo = (const KT *) h->d_lo + a;
	}
	return launch_lookup<KT, MODE_POINT>(ix, q, o, cfg, ws);
}

/*
 * Queue the batch on the handle's stream.  js: its pinned set, inputs there
 * already, or (src) in the caller's arrays (copied while they are sent).  On
 * return the whole batch is queued (ranges: after the count pass was waited
 * for).
 */
template <class KT>
static int
submit_impl(EytzGpuIndex *h, EytzJoinSet *js, const StageSrc *src, bool ranges, uint64_t nq, uint64_t max_matches,
			uint32_t flags, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	EytzPlanInput in;
	EytzPlan	plan;
	Idx<KT>		ix;
	Cfg			cfg;
	Qs<KT>		q;
	CsrBufs		b;
	bool		point_mode;
	uint64_t	items,
				copied;
	uint64_t   *rpay = NULL;
	uint32_t   *rrow = NULL,
			   *rslot = NULL;
	bool		cols = js->mask != 0;
	bool		asc = (flags & EYTZGPU_ROWS_ASCENDING) && h->code.one_key;	/* else the two-key sorts */
	bool		smem_fused;
	bool		narrowed = src && sizeof(KT) == 4;	/* keys arrive narrowed (StagePlan) */
	JoinBufs	jb;
	JoinSlots	jsl;
	size_t		cols_bytes = 0;
	cudaStream_t st = h->st;

	in = plan_input<KT>(h, nq, !ranges, flags);
	in.wide = ranges && eytz_wide_ranges(src ? src->lo : js->h_lo, src ? src->hi : js->h_hi, 8, sizeof(KT), nq,
										 h->minkey, h->maxkey, h->n);
	in.chunk = stage_chunk_queries(nq);
	plan = eytz_plan(&in);
	point_mode = in.point && in.points_ok;
	smem_fused = point_mode && plan.path == EYTZ_PATH_SMEM && max_matches >= nq;
	if (!point_mode && plan.reord == EYTZGPU_REORDER_GLOBAL)
		plan.reord = EYTZGPU_REORDER_NONE;	/* the chunked order does not fill a prefix */
	ix = plan_idx<KT>(h, plan.on_copy, cols);
	cfg = plan_cfg(plan);
	js->strategy = plan.strat | plan.reord | plan.pin;
	js->point_mode = point_mode;
	/* the shared-memory point path may search the other view than ix */
	jsl = join_slots_of<KT>(h, cols, point_mode && plan.path == EYTZ_PATH_SMEM ? plan.smem_on_copy : plan.on_copy);

	if ((rc = ensure_join_inputs(h, nq, ranges, plan.path == EYTZ_PATH_SORTED, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	if (point_mode && (rc = ensure_join_items(h, nq, cols, asc, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	jb = join_bufs_of(h, cols, asc);
	if (!js->h_stat)
		CK(cudaMallocHost((void **) &js->h_stat, sizeof(JoinStat)));

	/* inputs in; chunked point batches are walked (into d_first) on st_walk as their chunks arrive */
	CK(cudaEventRecord(js->ev[0], st));
	if (flags & EYTZGPU_POISON)
	{
		CK(cudaMemsetAsync(h->d_first, 0xFF, nq * 8, st));
		CK(cudaMemsetAsync(h->d_off, 0xFF, (nq + 1) * 8, st));
		if (point_mode)
			CK(poison_items(jb, nq, st));
	}
	if (plan.chunked && point_mode)
	{
		CK(stage_inputs(h, js, src, nq, ranges, narrowed, [&](uint64_t a, uint64_t m, cudaStream_t sent_on) {
			return walk_chunk<KT>(h, ix, cfg, narrowed, a, m, sent_on);
		}));
		CK(cudaEventRecord(h->ev_walked, h->st_walk));
		CK(cudaStreamWaitEvent(st, h->ev_walked, 0));
	}
	else
		CK(stage_inputs(h, js, src, nq, ranges, narrowed, ChunkSent()));
	CK(cudaEventRecord(js->ev[1], st));

	/* keys of the index's width (the fused shared-memory path narrows them itself; chunked walks did) */
	memset(&q, 0, sizeof(q));
	q.nq = nq;
	if (narrowed || (plan.chunked && point_mode && sizeof(KT) == 4))
	{
		q.lo = (const KT *) h->d_lo;
		q.hi = ranges ? (const KT *) h->d_hi : NULL;
	}
	else if (sizeof(KT) == 8 || smem_fused)
	{
		q.lo = (const KT *) h->d_jlo;
		q.hi = ranges ? (const KT *) h->d_jhi : NULL;
	}
	else
	{
		k_narrow<KT><<<grid1d(nq), 256, 0, st>>>(h->d_jlo, (KT *) h->d_lo, nq);
		if (ranges)
			k_narrow<KT><<<grid1d(nq), 256, 0, st>>>(h->d_jhi, (KT *) h->d_hi, nq);
		CK(cudaGetLastError());
		q.lo = (const KT *) h->d_lo;
		q.hi = ranges ? (const KT *) h->d_hi : NULL;
	}
	b = csr_bufs_of(h);

	if (smem_fused)
	{
		/* the whole index in shared memory, each result made into its item at once */
		JoinSink	sink;

		memset(&sink, 0, sizeof(sink));
		sink.rows = h->d_jrows;
		sink.nq = nq;
		sink.c = h->code;
		sink.b = jb;
		sink.js = jsl;
		sink.stat = h->d_stat;
		sink.check_rows = (flags & EYTZGPU_ROWS_ASCENDING) != 0;
		k_join_prefix<<<1, 1, 0, st>>>(NULL, nq, max_matches, h->d_stat);
		CK(cudaGetLastError());
		if (narrowed)
			CK((launch_point_smem_sink<KT, KT, JoinSink>(plan_idx<KT>(h, plan.smem_on_copy, cols), q.lo, nq, sink,
														  EYTZ_SMEM_Q, 0, st)));
		else
			CK((launch_point_smem_sink<KT, uint64_t, JoinSink>(plan_idx<KT>(h, plan.smem_on_copy, cols), h->d_jlo,
																nq, sink, EYTZ_SMEM_Q, 0, st)));
	}
	else if (point_mode && plan.path == EYTZ_PATH_SORTED && max_matches >= nq)
	{
		/* sorted by key with the rows beside, looked up straight into sort items */
		SortedWork<KT> w = sorted_work_of<KT>(h);

		CK(sorted_point_sort<KT>(q.lo, h->d_jrows, nq, (KT) h->minkey, (KT) h->maxkey, EYTZ_GSORT_KEY_BITS, w,
								 true, st));
		k_join_prefix<<<1, 1, 0, st>>>(NULL, nq, max_matches, h->d_stat);
		CK(cudaGetLastError());
		CK(launch_point_join<KT>(ix, w.skeys, w.perm, nq, h->code, jb, jsl, h->d_stat, st));
	}
	else if (point_mode)
	{
		if (!plan.chunked)
			CK(point_first<KT>(h, plan, ix, q.lo, nq, h->d_first));
		if (max_matches < nq)
			CK(csr_count<KT>(ix, q, cfg, true, b, st));
		k_join_prefix<<<1, 1, 0, st>>>(max_matches < nq ? h->d_off : NULL, nq, max_matches, h->d_stat);
		if (nq > 0)
			k_join_from_first<<<grid1d(nq), 256, 0, st>>>(h->d_first, h->d_jrows, nq, h->code, jb, jsl, h->d_stat);
		CK(cudaGetLastError());
	}
	if (point_mode)
	{
		items = nq;
		copied = max_matches < nq ? max_matches : nq;
		CK(cudaEventRecord(js->ev[2], st));
		CK(cudaEventRecord(js->ev[3], st));
	}
	else
	{
		uint64_t	nq_done,
					total;

		/* count, scan, the prefix; its size sizes the rest */
		CK(csr_count<KT>(ix, q, cfg, false, b, st));
		k_join_prefix<<<1, 1, 0, st>>>(h->d_off, nq, max_matches, h->d_stat);
		CK(cudaGetLastError());
		CK(cudaEventRecord(js->ev[2], st));
		CK(cudaMemcpyAsync(js->h_stat, h->d_stat, sizeof(JoinStat), cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		nq_done = js->h_stat->nq_done;
		total = js->h_stat->total;
		CK(grow((void **) &h->d_out, &h->out_cap, total * 8, false));
		if ((rc = ensure_join_items(h, total, cols, asc, errbuf, errlen)) != EYTZGPU_OK)
			goto done;
		jb = join_bufs_of(h, cols, asc);
		b.out = h->d_out;
		b.temp = h->d_temp;
		b.temp_bytes = h->temp_cap;
		CK(cudaEventRecord(js->ev[3], st));
		if (flags & EYTZGPU_POISON)
		{
			CK(cudaMemsetAsync(h->d_out, 0xFF, total * 8, st));
			CK(poison_items(jb, total, st));
		}
		/* the fill of the prefix: its offsets are those of the whole batch */
		q.nq = nq_done;
		if (total > 0)
			CK(csr_fill<KT>(ix, q, cfg, b, st));
		if (nq_done > 0)
			k_join_from_csr<<<grid1d(nq_done), 256, 0, st>>>(h->d_out, h->d_off, h->d_jrows, nq_done, h->code,
															  jb, jsl, h->d_stat);
		CK(cudaGetLastError());
		items = total;
		copied = total;
	}
	if ((flags & EYTZGPU_ROWS_ASCENDING) && nq > 1 && !smem_fused)
	{
		/* the promise, verified: the wait fails when it was broken */
		k_rows_check<<<grid1d(nq), 256, 0, st>>>(h->d_jrows, nq, h->d_stat);
		CK(cudaGetLastError());
	}
	CK(join_sort(jb, items, h->code, h->d_stat, h->d_temp, h->temp_cap, &rpay, &rrow, &rslot, st));
	if (cols)
		cols_bytes = col_layout(h, js->mask, copied, js->val_off, js->null_off);
	if (cols && copied > 0)
	{
		/* the included columns of the sorted matches, gathered at their slots */
		JoinGather	g;

		memset(&g, 0, sizeof(g));
		CK(grow((void **) &h->d_cols_out, &h->cols_out_cap, cols_bytes, false));
		if (flags & EYTZGPU_POISON)
			CK(cudaMemsetAsync(h->d_cols_out, 0xFF, cols_bytes, st));
		for (int c = 0; c < h->ncols; c++)
			if (js->mask & (1u << c))
			{
				g.width[g.ncols] = h->col_width[c];
				g.values[g.ncols] = h->d_col[c];
				g.nulls[g.ncols] = h->d_col_nulls[c];
				g.out[g.ncols] = h->d_cols_out + js->val_off[c];
				g.out_nulls[g.ncols] = h->d_cols_out + js->null_off[c];
				g.ncols++;
			}
		k_join_gather<<<grid1d(copied), 256, 0, st>>>(rslot, copied, h->d_stat, g);
		CK(cudaGetLastError());
	}
	CK(cudaEventRecord(js->ev[4], st));

	/* results out (an upper bound of the pairs: the live count comes with them) */
	if (copied > js->out_cap || !js->h_pay)
	{
		size_t		pc = js->out_cap * 8,
					rcap = js->out_cap * 4;
		uint64_t	want = copied > js->out_cap * 2 ? copied : js->out_cap * 2;

		js->out_cap = 0;
		CK(grow((void **) &js->h_pay, &pc, want * 8, true));
		CK(grow((void **) &js->h_row, &rcap, want * 4, true));
		js->out_cap = want;
	}
	if (cols)
		CK(grow((void **) &js->h_cols, &js->cols_cap, cols_bytes, true));
	if (copied > 0)
	{
		CK(cudaMemcpyAsync(js->h_pay, rpay, copied * 8, cudaMemcpyDeviceToHost, st));
		CK(cudaMemcpyAsync(js->h_row, rrow, copied * 4, cudaMemcpyDeviceToHost, st));
	}
	if (cols_bytes > 0)
		CK(cudaMemcpyAsync(js->h_cols, h->d_cols_out, cols_bytes, cudaMemcpyDeviceToHost, st));
	CK(cudaMemcpyAsync(js->h_stat, h->d_stat, sizeof(JoinStat), cudaMemcpyDeviceToHost, st));
	CK(cudaEventRecord(js->ev[5], st));
done:
	return rc;
}

extern "C" int
eytzgpu_lookup_join_inputs(EytzGpuIndex *h, uint64_t nq, uint64_t **lo, uint64_t **hi, uint32_t **rows,
						   char *errbuf, size_t errlen)
{
	EytzJoinSet *js;
	int			rc;

	if (!h || !lo || !rows)
	{
		set_msg(errbuf, errlen, "eytzgpu: NULL argument for join inputs");
		return EYTZGPU_EINVAL;
	}
	if ((rc = begin_batch(h, nq, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	js = &h->sets[h->next_set];
	if ((rc = ensure_set_inputs(js, nq, hi != NULL, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	*lo = js->h_lo;
	if (hi)
		*hi = js->h_hi;
	*rows = js->h_rows;
	return EYTZGPU_OK;
}

/* After a failed submit: let whatever was queued finish before the buffers are touched again (walks too) */
static void
settle(EytzGpuIndex *h)
{
	(void) cudaStreamSynchronize(h->st);
	(void) cudaStreamSynchronize(h->st_walk);
	for (int t = 0; t < EYTZ_STAGE_THREADS; t++)
		(void) cudaStreamSynchronize(h->st_stage[t]);
	(void) cudaGetLastError();
}

extern "C" int
eytzgpu_lookup_join_submit(EytzGpuIndex *h, const uint64_t *lo, const uint64_t *hi, const uint32_t *rows,
						   uint64_t nq, uint64_t max_matches, uint32_t flags, char *errbuf, size_t errlen)
{
	EytzJoinSet *js;
	struct timespec t0;
	StageSrc	src;
	bool		in_place;
	int			rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!h || (nq > 0 && (!lo || !rows)))
	{
		set_msg(errbuf, errlen, "eytzgpu: NULL handle, key or row array");
		return EYTZGPU_EINVAL;
	}
	if (h->sets[0].pending || h->sets[1].pending)
	{
		set_msg(errbuf, errlen, "eytzgpu: a join batch is already in flight (wait for it first)");
		return EYTZGPU_EINVAL;
	}
	if ((rc = begin_batch(h, nq, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	js = &h->sets[h->next_set];
	/* the caller's arrays go through this set's pinned inputs, unless they are those */
	in_place = lo == js->h_lo && (!hi || hi == js->h_hi) && rows == js->h_rows;
	if (!in_place && (rc = ensure_set_inputs(js, nq, hi != NULL, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	src.lo = lo;
	src.hi = hi;
	src.rows = rows;
	js->t0 = t0;
	js->nq = nq;
	js->mask = h->col_mask;
	js->small = false;
	if (join_small_fits(h, hi != NULL, nq, flags))
		rc = join_small_submit(h, js, lo, rows, nq, max_matches, flags, errbuf, errlen);
	else
		rc = h->kw == 4 ? submit_impl<uint32_t>(h, js, in_place ? NULL : &src, hi != NULL, nq, max_matches, flags,
												errbuf, errlen)
			: submit_impl<uint64_t>(h, js, in_place ? NULL : &src, hi != NULL, nq, max_matches, flags, errbuf,
									errlen);
	if (rc != EYTZGPU_OK)
	{
		settle(h);
		return rc;
	}
	js->pending = true;
	h->next_set ^= 1;
	return EYTZGPU_OK;
}

extern "C" int
eytzgpu_lookup_join_ready(EytzGpuIndex *h, int *ready)
{
	*ready = 1;
	if (!h || !(h->sets[0].pending || h->sets[1].pending))
		return EYTZGPU_EINVAL;
	/* any failure (of the device choice too) is the wait's to report */
	if (cudaSetDevice(h->device) == cudaSuccess &&
		cudaEventQuery(h->sets[h->sets[0].pending ? 0 : 1].ev[5]) == cudaErrorNotReady)
		*ready = 0;
	(void) cudaGetLastError();
	return EYTZGPU_OK;
}

extern "C" int
eytzgpu_lookup_join_wait(EytzGpuIndex *h, EytzGpuJoinResult *res, char *errbuf, size_t errlen)
{
	EytzJoinSet *js;
	float		t_in = 0,
				t_k1 = 0,
				t_k2 = 0,
				t_out = 0;
	const JoinStat *stat;
	uint64_t   *pays = NULL;
	uint32_t   *prows = NULL;
	int			rc;

	if (!h || !(h->sets[0].pending || h->sets[1].pending))
	{
		set_msg(errbuf, errlen, "eytzgpu: no join batch in flight");
		return EYTZGPU_EINVAL;
	}
	js = &h->sets[h->sets[0].pending ? 0 : 1];
	js->pending = false;
	if ((rc = eytzapi::ck(cudaSetDevice(h->device), "cudaSetDevice", errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	CK(cudaEventSynchronize(js->ev[5]));
	stat = js->small ? join_small_answer(js, &pays, &prows) : js->h_stat;
	if (js->small && stat->small_over)
	{
		/*
		 * The prefix held more matches than the small path sorts: the
		 * pipeline, from the inputs in the set's block
		 */
		StageSrc	src = {NULL, NULL, NULL};

		join_small_inputs(js, &src.lo, &src.rows);

		js->small = false;
		if ((rc = ensure_set_inputs(js, js->nq, false, errbuf, errlen)) != EYTZGPU_OK)
			return rc;
		rc = h->kw == 4 ? submit_impl<uint32_t>(h, js, &src, false, js->nq, js->max_matches, js->flags, errbuf,
												errlen)
			: submit_impl<uint64_t>(h, js, &src, false, js->nq, js->max_matches, js->flags, errbuf, errlen);
		if (rc != EYTZGPU_OK)
		{
			settle(h);
			return rc;
		}
		CK(cudaEventSynchronize(js->ev[5]));
		stat = js->h_stat;
	}
	CK(cudaEventElapsedTime(&t_in, js->ev[0], js->ev[1]));
	CK(cudaEventElapsedTime(&t_k1, js->ev[1], js->ev[2]));
	CK(cudaEventElapsedTime(&t_k2, js->ev[3], js->ev[4]));
	CK(cudaEventElapsedTime(&t_out, js->ev[4], js->ev[5]));
	if (stat->rows_unordered)
	{
		set_msg(errbuf, errlen, "eytzgpu: join batch with EYTZGPU_ROWS_ASCENDING whose rows do not ascend");
		return EYTZGPU_EINVAL;
	}
	if (res)
	{
		res->payloads = js->small ? pays : js->h_pay;
		res->rows = js->small ? prows : js->h_row;
		for (int c = 0; c < EYTZGPU_MAX_COLUMNS; c++)
		{
			bool		on = (js->mask & (1u << c)) && js->h_cols;

			res->columns[c] = on ? js->h_cols + js->val_off[c] : NULL;
			res->column_nulls[c] = on ? js->h_cols + js->null_off[c] : NULL;
		}
		res->nmatch = stat->nmatch;
		res->nq_done = stat->nq_done;
		res->strategy = js->strategy;
		res->point_mode = js->point_mode;
		res->kernel_ms = t_k1 + t_k2;
		res->transfer_ms = t_in + t_out;
		res->total_ms = (float) ms_since(&js->t0);
	}
done:
	return rc;
}

extern "C" int
eytzgpu_lookup_join(EytzGpuIndex *h, const uint64_t *lo, const uint64_t *hi, const uint32_t *rows, uint64_t nq,
					uint64_t max_matches, uint32_t flags, EytzGpuJoinResult *res, char *errbuf, size_t errlen)
{
	int			rc = eytzgpu_lookup_join_submit(h, lo, hi, rows, nq, max_matches, flags, errbuf, errlen);

	if (rc != EYTZGPU_OK)
		return rc;
	return eytzgpu_lookup_join_wait(h, res, errbuf, errlen);
}
