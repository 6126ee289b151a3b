/*
 * eytzgpu_lookup.cu
 *		CSR lookups of the C API (eytzgpu_lookup): every match of every query,
 *		grouped by query, with the composite strategy (eytz_strategy.h).
 */
#include <string.h>

#include "eytzgpu_internal.cuh"
#include "eytz_strategy.h"

using namespace eytzk;
using namespace eytzapi;

/* Per-query device buffers: all sized for q_cap queries together (grown geometrically) */
int
eytzapi::ensure_queries(EytzGpuIndex *h, uint64_t nq, bool need_sort, char *errbuf, size_t errlen)
{
	int			kw = h->kw;
	int			rc = EYTZGPU_OK;
	size_t		tb = 0;

	if (nq > h->q_cap || !h->d_lo)
	{
		uint64_t	cap = h->q_cap * 2 > nq ? h->q_cap * 2 : nq;

		if (cap < 1024)
			cap = 1024;
		dfree(h->d_lo);
		dfree(h->d_hi);
		dfree(h->d_comp_a);
		dfree(h->d_comp_b);
		dfree(h->d_cnt);
		dfree(h->d_off);
		dfree(h->d_first);
		h->d_lo = h->d_hi = NULL;
		dfree(h->d_u32);
		h->d_comp_a = h->d_comp_b = NULL;
		h->d_u32 = NULL;
		h->iota_ok = false;
		h->d_cnt = h->d_off = h->d_first = NULL;
		h->q_cap = 0;
		CK(cudaMalloc(&h->d_lo, cap * kw));
		CK(cudaMalloc(&h->d_hi, cap * kw));
		CK(cudaMalloc((void **) &h->d_cnt, (cap + 1) * 8));
		CK(cudaMalloc((void **) &h->d_off, (cap + 1) * 8));
		CK(cudaMalloc((void **) &h->d_first, cap * 8));
		h->q_cap = cap;
	}
	if (need_sort && !h->d_comp_a)
	{
		CK(cudaMalloc((void **) &h->d_comp_a, h->q_cap * 8));
		CK(cudaMalloc((void **) &h->d_comp_b, h->q_cap * 8));
	}
	if (need_sort && !h->d_u32)
	{
		CK(cudaMalloc((void **) &h->d_u32, h->q_cap * 3 * 4));
		h->iota_ok = false;
	}
	/* CUB workspace: the larger of the scan and (if needed) the sort */
	CK(csr_temp_bytes(h->q_cap, &tb));
	if (need_sort)
	{
		size_t		sb = 0;

		CK(reorder_chunked_temp(h->q_cap, &sb));
		if (sb > tb)
			tb = sb;
		CK(kw == 4 ? sorted_point_temp_bytes<uint32_t>(h->q_cap, &sb) : sorted_point_temp_bytes<uint64_t>(h->q_cap, &sb));
		if (sb > tb)
			tb = sb;
	}
	CK(grow(&h->d_temp, &h->temp_cap, tb, false));
done:
	return rc;
}

/*
 * One batch: the plan (eytz_strategy.h), the queries in, then the CSR
 * result.  Point fast paths (unique keys: one match at most a query) write
 * it in one pass (the shared-memory walk compacts its own results; the
 * sorted path's results are compacted after it), the total back; the others
 * run the count pass and the scan, the total back to size the output, the
 * fill pass.  Then the results out.
 */
template <class KT>
static int
lookup_impl(EytzGpuIndex *h, const KT *lo, const KT *hi, uint64_t nq, uint32_t flags,
			EytzGpuResult *res, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	EytzPlanInput in;
	EytzPlan	plan;
	Idx<KT>		ix;
	Qs<KT>		q;
	Cfg			cfg;
	CsrBufs		b;
	bool		one_pass;
	uint64_t	total = 0;
	float		ms1 = 0,
				ms2 = 0;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	in = plan_input<KT>(h, nq, hi == NULL, flags);
	in.wide = eytz_wide_ranges(lo, hi, sizeof(KT), sizeof(KT), nq, h->minkey, h->maxkey, h->n);
	plan = eytz_plan(&in);
	ix = plan_idx<KT>(h, plan.on_copy);
	cfg = plan_cfg(plan);
	one_pass = plan.path != EYTZ_PATH_KERNELS;

	if ((rc = ensure_queries(h, nq, plan.reord == EYTZGPU_REORDER_GLOBAL, errbuf, errlen)) != EYTZGPU_OK)
		goto done;
	CK(grow((void **) &h->h_off, &h->hoff_cap, (nq + 1) * 8, true));
	CK(grow(&h->h_q, &h->hq_cap, nq * sizeof(KT) * (hi ? 2 : 1) + 8, true));
	if (one_pass)
		CK(grow((void **) &h->d_out, &h->out_cap, nq * 8 + 8, false));
	if (nq > 0)
	{
		memcpy(h->h_q, lo, nq * sizeof(KT));
		CK(cudaMemcpyAsync(h->d_lo, h->h_q, nq * sizeof(KT), cudaMemcpyHostToDevice, h->st));
		if (hi)
		{
			memcpy((char *) h->h_q + nq * sizeof(KT), hi, nq * sizeof(KT));
			CK(cudaMemcpyAsync(h->d_hi, (char *) h->h_q + nq * sizeof(KT), nq * sizeof(KT),
							   cudaMemcpyHostToDevice, h->st));
		}
	}
	memset(&q, 0, sizeof(q));
	q.lo = (const KT *) h->d_lo;
	q.hi = hi ? (const KT *) h->d_hi : NULL;
	q.nq = nq;
	b = csr_bufs_of(h);
	b.out = h->d_out;

	CK(cudaEventRecord(h->ev[0], h->st));
	if (flags & EYTZGPU_POISON)
	{
		CK(cudaMemsetAsync(h->d_cnt, 0xFF, (nq + 1) * 8, h->st));
		CK(cudaMemsetAsync(h->d_off, 0xFF, (nq + 1) * 8, h->st));
		CK(cudaMemsetAsync(h->d_first, 0xFF, nq * 8, h->st));
		if (one_pass)
			CK(cudaMemsetAsync(h->d_out, 0xFF, nq * 8, h->st));
	}
	if (plan.path == EYTZ_PATH_SMEM)
		CK(csr_point_smem<KT>(plan_idx<KT>(h, plan.smem_on_copy), q.lo, nq, b, h->st));
	else if (one_pass)
	{
		CK(point_first<KT>(h, plan, ix, q.lo, nq, h->d_first));
		CK(csr_compact_first(nq, b, h->st));
	}
	else
	{
		if (plan.reord == EYTZGPU_REORDER_GLOBAL && nq > 0)
			CK(reorder_chunked<KT>(q, (KT) h->minkey, (KT) h->maxkey, Reorder{EYTZ_REORDER_LOGC, EYTZ_REORDER_BITS},
								   h->d_comp_a, h->d_comp_b, h->d_temp, h->temp_cap, h->st));
		CK(csr_count<KT>(ix, q, cfg, false, b, h->st));
	}
	CK(cudaEventRecord(h->ev[1], h->st));
	CK(cudaMemcpyAsync(h->h_off + nq, h->d_off + nq, 8, cudaMemcpyDeviceToHost, h->st));
	CK(cudaStreamSynchronize(h->st));
	total = h->h_off[nq];
	if (total > 0)
	{
		if (!one_pass)
			CK(grow((void **) &h->d_out, &h->out_cap, total * 8, false));
		CK(grow((void **) &h->h_pay, &h->hpay_cap, total * 8, true));
	}
	b.out = h->d_out;
	CK(cudaEventRecord(h->ev[2], h->st));
	if (total > 0 && !one_pass && (flags & EYTZGPU_POISON))
		CK(cudaMemsetAsync(h->d_out, 0xFF, total * 8, h->st));
	if (total > 0 && !one_pass)
		CK(csr_fill<KT>(ix, q, cfg, b, h->st));
	CK(cudaEventRecord(h->ev[3], h->st));
	CK(cudaMemcpyAsync(h->h_off, h->d_off, (nq + 1) * 8, cudaMemcpyDeviceToHost, h->st));
	if (total > 0)
		CK(cudaMemcpyAsync(h->h_pay, h->d_out, total * 8, cudaMemcpyDeviceToHost, h->st));
	CK(cudaStreamSynchronize(h->st));
	CK(cudaEventElapsedTime(&ms1, h->ev[0], h->ev[1]));
	CK(cudaEventElapsedTime(&ms2, h->ev[2], h->ev[3]));
	if (res)
	{
		res->offsets = h->h_off;
		res->payloads = h->h_pay;
		res->total = total;
		res->strategy = plan.strat | plan.reord | plan.pin;
		res->kernel_ms = ms1 + ms2;
		res->total_ms = (float) ms_since(&t0);
	}
done:
	return rc;
}

extern "C" int
eytzgpu_lookup(EytzGpuIndex *h, const void *lo, const void *hi, uint64_t nq, uint32_t flags,
			   EytzGpuResult *res, char *errbuf, size_t errlen)
{
	int			rc;

	if (!h || (!lo && nq > 0))
	{
		set_msg(errbuf, errlen, "eytzgpu: NULL handle or query array");
		return EYTZGPU_EINVAL;
	}
	if ((rc = begin_batch(h, nq, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	if (h->kw == 4)
		return lookup_impl<uint32_t>(h, (const uint32_t *) lo, (const uint32_t *) hi, nq, flags, res, errbuf, errlen);
	return lookup_impl<uint64_t>(h, (const uint64_t *) lo, (const uint64_t *) hi, nq, flags, res, errbuf, errlen);
}
