/*
 * eytzgpu_internal.cuh
 *		The handle behind the C API and the helpers its files share: index
 *		life cycle (eytzgpu_index.cu), CSR lookups (eytzgpu_lookup.cu) and
 *		join-shaped lookups (eytzgpu_join.cu).
 *
 * Every CUDA call is checked and turned into an EYTZGPU_* code plus a
 * message; nothing aborts.  Device and pinned buffers of a handle are
 * allocated on first need and grown geometrically, so steady-state lookups
 * allocate nothing.
 */
#ifndef EYTZGPU_INTERNAL_CUH
#define EYTZGPU_INTERNAL_CUH

#include <stdio.h>
#include <string.h>
#include <stdarg.h>
#include <time.h>

#include <cuda_runtime.h>

#include "eytzgpu_cuda_test.h"
#include "eytz_kernels.cuh"
#include "eytz_strategy.h"

/* One of the two pinned buffer sets of join lookups (see eytzgpu_join.cu) */
struct EytzJoinSet
{
	uint64_t   *h_lo,			/* inputs, nq each (pinned) */
			   *h_hi;
	uint32_t   *h_rows;
	uint64_t	in_cap;			/* queries the inputs hold */
	uint64_t   *h_pay;			/* results (pinned) */
	uint32_t   *h_row;
	uint64_t	out_cap;		/* matches the results hold */
	unsigned char *h_cols;		/* included columns' values and NULL flags (pinned, see col_layout) */
	size_t		cols_cap;		/* bytes */
	uint32_t	mask;			/* the columns of this batch */
	size_t		val_off[EYTZGPU_MAX_COLUMNS],	/* where column c's values and NULL flags start */
				null_off[EYTZGPU_MAX_COLUMNS];
	eytzk::JoinStat *h_stat;	/* counts of the batch (pinned) */
	cudaEvent_t ev[6];			/* H2D, kernels (two parts), D2H */
	bool		pending;		/* submitted, not yet waited for */
	uint64_t	nq;
	struct timespec t0;			/* submit's start */
	uint32_t	strategy;
	bool		point_mode;
	/* a small batch (k_join_small): its inputs, then its answer, in one pinned block (EYTZ_SMALL_BYTES) */
	unsigned char *h_small;
	bool		small;			/* this batch went that way */
	uint64_t	max_matches;	/* as submitted (its answer's room; the pipeline's, where it did not fit) */
	uint32_t	flags;
};

struct EytzGpuIndex
{
	int			device;
	int			kw;				/* key width, 4 or 8 */
	uint32_t	k;
	uint64_t	n;
	uint32_t	layout;			/* EYTZGPU_LAYOUT_SOA or _AOS */
	void	   *d_keys;			/* SoA */
	uint64_t   *d_pays;
	unsigned char *d_aos;		/* AoS */
	void	   *d_ebs_keys;		/* binary (k = 2) SoA copy for small indexes */
	uint64_t   *d_ebs_pays;
	uint64_t	minkey,
				maxkey;
	uint64_t	dev_bytes;
	bool		points_ok;		/* unique keys, no payload equal to EYTZGPU_NO_MATCH: point fast paths */
	eytzk::JoinCode code;		/* how join results compact the live payloads */
	cudaStream_t st;
	cudaEvent_t ev[4];
	/* join batches whose chunks are walked as they arrive (EytzPlan.chunked) */
	cudaStream_t st_walk;		/* the walks, beside the transfers on st */
	cudaEvent_t ev_sent,		/* a chunk is on the device */
				ev_walked;		/* every chunk is walked */
	/* join inputs copied by staging threads: each sends and walks its chunks on a stream of its own */
	cudaStream_t st_stage[EYTZ_STAGE_THREADS];
	cudaEvent_t ev_staged[EYTZ_STAGE_THREADS];	/* a thread's chunks are sent and walked */
	cudaEvent_t ev_inputs_free;	/* the work queued before this batch is done with the query buffers */
	/* lookup workspace, grown geometrically */
	uint64_t	q_cap;			/* queries the device query buffers hold */
	void	   *d_lo,			/* keys of the index's width */
			   *d_hi;
	uint64_t   *d_comp_a,		/* chunked global reordering; sorted points: tmp, pay2 */
			   *d_comp_b;
	uint32_t   *d_u32;			/* sorted points: iota, perm, perm2 (q_cap each) */
	bool		iota_ok;		/* d_u32 holds 0..q_cap-1 */
	uint64_t   *d_cnt,
			   *d_off,
			   *d_first;
	void	   *d_temp;
	size_t		temp_cap;
	uint64_t   *d_out;
	size_t		out_cap;		/* bytes */
	void	   *h_q;			/* pinned staging of lo then hi */
	size_t		hq_cap;
	uint64_t   *h_off;
	size_t		hoff_cap;
	uint64_t   *h_pay;
	size_t		hpay_cap;
	/* join workspace: 64-bit keys and rows in, sort keys, results */
	uint64_t   *d_jlo,
			   *d_jhi;
	uint32_t   *d_jrows;
	size_t		jlo_cap,
				jhi_cap,
				jrows_cap;		/* bytes */
	eytzk::JoinBufs jb;
	size_t		jkey_cap,		/* bytes of each of the join sort buffers */
				jrow_cap;
	eytzk::JoinStat *d_stat;
	unsigned char *d_small;		/* a small batch's inputs and answer (EYTZ_SMALL_BYTES, as EytzJoinSet.h_small) */
	uint32_t   *d_jslot_a,		/* with columns: the items' slots (jb.slot_a/b) */
			   *d_jslot_b;
	size_t		jslot_cap;		/* bytes of each */
	uint64_t   *d_jrs_a,		/* with columns, two-key sorts: slot << 32 | row (jb.rs_a/b) */
			   *d_jrs_b;
	size_t		jrs_cap;
	/* included columns (eytzgpu_attach_columns), slot order */
	int			ncols;
	int			col_width[EYTZGPU_MAX_COLUMNS];
	void	   *d_col[EYTZGPU_MAX_COLUMNS];
	uint8_t    *d_col_nulls[EYTZGPU_MAX_COLUMNS];	/* NULL: the column has no NULLs */
	uint32_t   *d_ebs_map;		/* slot of the binary copy -> the index's slot */
	uint64_t	col_bytes;		/* device bytes of the above (in dev_bytes too) */
	uint32_t	col_mask;		/* the columns join batches return */
	unsigned char *d_cols_out;	/* gathered columns of a batch (col_layout) */
	size_t		cols_out_cap;
	EytzJoinSet sets[2];
	int			next_set;		/* the set the next submit uses */
};

namespace eytzapi
{

static inline void
set_msg(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list		ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

static inline int
code_of(cudaError_t e)
{
	switch (e)
	{
		case cudaSuccess:
			return EYTZGPU_OK;
		case cudaErrorNoDevice:
		case cudaErrorInsufficientDriver:
		case cudaErrorInitializationError:
		case cudaErrorStubLibrary:
		case cudaErrorSystemDriverMismatch:
		case cudaErrorCompatNotSupportedOnDevice:
		case cudaErrorDevicesUnavailable:
		case cudaErrorInvalidDevice:
		case cudaErrorNoKernelImageForDevice:
			return EYTZGPU_ENODEV;
		case cudaErrorMemoryAllocation:
			return EYTZGPU_ENOMEM;
		default:
			return EYTZGPU_EFAIL;
	}
}

/* Check a CUDA result; on failure set the message and return the code */
static inline int
ck(cudaError_t e, const char *what, char *errbuf, size_t errlen)
{
	if (e == cudaSuccess)
		return EYTZGPU_OK;
	set_msg(errbuf, errlen, "eytzgpu: %s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
	/* clear a non-sticky error so the next call starts clean */
	(void) cudaGetLastError();
	return code_of(e);
}

#define CK(call) do { if ((rc = eytzapi::ck((call), #call, errbuf, errlen)) != EYTZGPU_OK) goto done; } while (0)

static inline void
dfree(void *p)
{
	if (p)
		(void) cudaFree(p);
}

/* Grow a device (pinned = false) or pinned host buffer to at least need bytes */
static inline cudaError_t
grow(void **p, size_t *cap, size_t need, bool pinned)
{
	size_t		nc;
	cudaError_t e;

	if (need <= *cap && *p)
		return cudaSuccess;
	nc = *cap * 2 > need ? *cap * 2 : need;
	if (nc < 4096)
		nc = 4096;
	if (*p)
		(void) (pinned ? cudaFreeHost(*p) : cudaFree(*p));
	*p = NULL;
	*cap = 0;
	e = pinned ? cudaMallocHost(p, nc) : cudaMalloc(p, nc);
	if (e != cudaSuccess)
	{
		/* geometric growth may overshoot what is free: retry exactly */
		(void) cudaGetLastError();
		nc = need;
		e = pinned ? cudaMallocHost(p, nc) : cudaMalloc(p, nc);
		if (e != cudaSuccess)
		{
			*p = NULL;
			return e;
		}
	}
	*cap = nc;
	return cudaSuccess;
}

static inline double
ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A batch of nq lookups on h: within the limit, on the handle's device */
static inline int
begin_batch(EytzGpuIndex *h, uint64_t nq, char *errbuf, size_t errlen)
{
	if (nq >= ((uint64_t) 1 << 31))
	{
		set_msg(errbuf, errlen, "eytzgpu: batch of %llu lookups is too large (limit 2^31-1)",
				(unsigned long long) nq);
		return EYTZGPU_EINVAL;
	}
	return ck(cudaSetDevice(h->device), "cudaSetDevice", errbuf, errlen);
}

/*
 * What eytz_plan asks of a batch of nq queries (points or not) on h; the
 * caller adds whether its ranges are wide and its staging chunk
 */
template <class KT>
static inline EytzPlanInput
plan_input(const EytzGpuIndex *h, uint64_t nq, bool point, uint32_t flags)
{
	EytzPlanInput in;

	memset(&in, 0, sizeof(in));
	in.n = h->n;
	in.key_width = sizeof(KT);
	in.k = h->k;
	in.have_ebs_copy = h->d_ebs_keys != NULL;
	in.points_ok = h->points_ok || (flags & EYTZGPU_UNIQUE);
	in.point = point;
	in.nq = nq;
	in.flags = flags;
	return in;
}

/*
 * Small join batches (eytzgpu_joinsmall.cu): whether a batch goes that way,
 * submit it (the set's small fields), its answer's counts, payloads and
 * rows once waited for, its inputs (for the pipeline where the answer did
 * not fit)
 */
extern bool join_small_fits(const EytzGpuIndex *h, bool ranges, uint64_t nq, uint32_t flags);
extern int	join_small_submit(EytzGpuIndex *h, EytzJoinSet *js, const uint64_t *lo, const uint32_t *rows,
							  uint64_t nq, uint64_t max_matches, uint32_t flags, char *errbuf, size_t errlen);
extern const eytzk::JoinStat *join_small_answer(const EytzJoinSet *js, uint64_t **pays, uint32_t **rows);
extern void join_small_inputs(const EytzJoinSet *js, const uint64_t **lo, const uint32_t **rows);

/* Device query buffers of the handle for nq queries (and the sort buffers when need_sort) */
extern int	ensure_queries(EytzGpuIndex *h, uint64_t nq, bool need_sort, char *errbuf, size_t errlen);

/*
 * The plan's index views: the one the kernels search, and the shared-memory
 * point path's.  slots: matches return their slot instead of their payload.
 */
template <class KT>
static inline eytzk::Idx<KT>
plan_idx(const EytzGpuIndex *h, bool on_copy, bool slots = false)
{
	eytzk::Idx<KT> ix;

	if (on_copy)
		ix = eytzk::make_idx<KT>(h->d_ebs_keys, h->d_ebs_pays, NULL, h->n, 2);
	else
		ix = eytzk::make_idx<KT>(h->d_keys, h->d_pays, h->d_aos, h->n, h->k);
	ix.slots = slots;
	return ix;
}

/* Launch configuration of the lookup kernels of a plan */
static inline eytzk::Cfg
plan_cfg(const EytzPlan &plan)
{
	eytzk::Cfg	cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.algo = plan.strat == EYTZGPU_STRAT_GROUP ? eytzk::ALGO_GROUP : eytzk::ALGO_SINGLE;
	cfg.lsort = plan.reord == EYTZGPU_REORDER_LOCAL;
	cfg.pin_bytes = plan.pin_bytes;
	return cfg;
}

/* The CSR buffers of the handle's query workspace (no output yet) */
static inline eytzk::CsrBufs
csr_bufs_of(const EytzGpuIndex *h)
{
	eytzk::CsrBufs b = {h->d_cnt, h->d_off, h->d_first, NULL, h->d_temp, h->temp_cap};

	return b;
}

/* Buffers of sorted point lookups in the handle's query workspace (ensure_queries with need_sort) */
template <class KT>
static inline eytzk::SortedWork<KT>
sorted_work_of(const EytzGpuIndex *h)
{
	eytzk::SortedWork<KT> w;

	w.skeys = (KT *) h->d_hi;	/* point batches have no hi */
	w.iota = h->d_u32;
	w.perm = h->d_u32 + h->q_cap;
	w.perm2 = h->d_u32 + 2 * h->q_cap;
	w.tmp = h->d_comp_a;
	w.pay2 = h->d_comp_b;
	w.temp = h->d_temp;
	w.temp_bytes = h->temp_cap;
	return w;
}

/*
 * One result per point query lo[i] (device) into out[i]: the payload of a
 * match (its slot when ix.slots, of the view the path searched) or NO_MATCH,
 * by the plan's fast path (or its point kernels).
 */
template <class KT>
static inline cudaError_t
point_first(EytzGpuIndex *h, const EytzPlan &plan, const eytzk::Idx<KT> &ix, const KT *lo, uint64_t nq,
			uint64_t *out)
{
	cudaError_t e;

	if (nq == 0)
		return cudaSuccess;
	if (plan.path == EYTZ_PATH_SMEM)
		return eytzk::launch_point_smem<KT>(plan_idx<KT>(h, plan.smem_on_copy, ix.slots), lo, nq, out, EYTZ_SMEM_Q,
											0, h->st);
	if (plan.path == EYTZ_PATH_SORTED)
	{
		if (!h->iota_ok)
		{
			/* query ids 0..q_cap-1, made once per buffer size */
			eytzk::k_iota<<<eytzk::grid1d(h->q_cap), 256, 0, h->st>>>(h->d_u32, h->q_cap);
			if ((e = cudaGetLastError()) != cudaSuccess)
				return e;
			h->iota_ok = true;
		}
		return eytzk::sorted_point<KT, false>(ix, lo, nq, out, plan_cfg(plan), (KT) h->minkey, (KT) h->maxkey,
											 EYTZ_GSORT_KEY_BITS, EYTZ_GSORT_SCATTER_BITS, sorted_work_of<KT>(h),
											 true, h->st);
	}
	{
		eytzk::Qs<KT> q;
		eytzk::Outs o = {out, NULL, NULL};

		memset(&q, 0, sizeof(q));
		q.lo = lo;
		q.nq = nq;
		return eytzk::launch_lookup<KT, eytzk::MODE_POINT>(ix, q, o, plan_cfg(plan), h->st);
	}
}

}								/* namespace eytzapi */

#endif							/* EYTZGPU_INTERNAL_CUH */
