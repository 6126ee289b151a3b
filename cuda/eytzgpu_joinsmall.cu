/*
 * eytzgpu_joinsmall.cu
 *		Small join batches (eytzgpu_lookup_join_submit/wait): point batches
 *		of up to EYTZ_JOIN_SMALL queries without columns answered by one
 *		launch (k_join_small, eytz_join.cuh), their keys and rows sent in
 *		one transfer and their answer returned in one.  The pipeline of
 *		eytzgpu_join.cu is a chain of launches with a synchronization in the
 *		middle, which costs such a batch more than its searches.
 */
#include <string.h>
#include <algorithm>

#include "eytzgpu_internal.cuh"

using namespace eytzk;

namespace eytzapi
{

/*
 * A small batch's block (EytzJoinSet.h_small, EytzGpuIndex.d_small): its
 * keys and rows, then its answer: the counts, the payloads and the rows of
 * up to min(max_matches, EYTZ_JOIN_SMALL) pairs; one transfer each way
 */
#define EYTZ_SMALL_IN_BYTES ((size_t) EYTZ_JOIN_SMALL * 12)
#define EYTZ_SMALL_STAT_BYTES ((size_t) 64)
#define EYTZ_SMALL_BYTES (EYTZ_SMALL_IN_BYTES + EYTZ_SMALL_STAT_BYTES + (size_t) EYTZ_JOIN_SMALL * 12)

/*
 * A small point batch without columns (a LIMIT's first batch, a rescan, a
 * service request of a few thousand keys): k_join_small answers it in one
 * launch.  Not where the caller chose a strategy.
 */
bool
join_small_fits(const EytzGpuIndex *h, bool ranges, uint64_t nq, uint32_t flags)
{
	return !ranges && h->col_mask == 0 && h->code.one_key && nq > 0 && nq <= EYTZ_JOIN_SMALL &&
		(flags & (EYTZGPU_STRAT_MASK | EYTZGPU_REORDER_MASK | EYTZGPU_PIN_MASK)) == 0;
}

/*
 * Queue a small batch (join_small_fits) on the handle's stream: its keys and
 * rows copied into the set's block and sent at once, the kernel, the answer
 * back at once.  The view searched is the one the plan would search.
 */
template <class KT>
static int
submit_small(EytzGpuIndex *h, EytzJoinSet *js, const uint64_t *lo, const uint32_t *rows, uint64_t nq,
			 uint64_t max_matches, uint32_t flags, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	EytzPlanInput in;
	EytzPlan	plan;
	CsrBufs		b;
	cudaStream_t st = h->st;
	uint64_t	cap = std::min<uint64_t>(max_matches, EYTZ_JOIN_SMALL);
	unsigned char *d_out;

	in = plan_input<KT>(h, nq, true, flags);
	in.chunk = nq;
	plan = eytz_plan(&in);
	if ((rc = ensure_queries(h, nq, false, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	CK(grow((void **) &h->d_out, &h->out_cap, EYTZ_JOIN_SMALL * 8, false));
	if (!js->h_small)
		CK(cudaMallocHost((void **) &js->h_small, EYTZ_SMALL_BYTES));
	if (!h->d_small)
		CK(cudaMalloc((void **) &h->d_small, EYTZ_SMALL_BYTES));
	d_out = h->d_small + EYTZ_SMALL_IN_BYTES;
	memcpy(js->h_small, lo, nq * 8);
	memcpy(js->h_small + nq * 8, rows, nq * 4);
	js->small = true;
	js->max_matches = max_matches;
	js->flags = flags;
	js->strategy = plan.strat | plan.reord | plan.pin;
	js->point_mode = in.points_ok;
	b = csr_bufs_of(h);
	b.out = h->d_out;

	CK(cudaEventRecord(js->ev[0], st));
	CK(cudaMemcpyAsync(h->d_small, js->h_small, nq * 12, cudaMemcpyHostToDevice, st));
	CK(cudaEventRecord(js->ev[1], st));
	CK(launch_join_small<KT>(plan_idx<KT>(h, plan.on_copy), (const uint64_t *) h->d_small,
							 (const uint32_t *) (h->d_small + nq * 8), nq, max_matches, h->code,
							 (flags & EYTZGPU_ROWS_ASCENDING) != 0, b,
							 (uint64_t *) (d_out + EYTZ_SMALL_STAT_BYTES),
							 (uint32_t *) (d_out + EYTZ_SMALL_STAT_BYTES + cap * 8), (JoinStat *) d_out, st));
	CK(cudaEventRecord(js->ev[2], st));
	CK(cudaEventRecord(js->ev[3], st));
	CK(cudaEventRecord(js->ev[4], st));
	CK(cudaMemcpyAsync(js->h_small + EYTZ_SMALL_IN_BYTES, d_out, EYTZ_SMALL_STAT_BYTES + cap * 12,
					   cudaMemcpyDeviceToHost, st));
	CK(cudaEventRecord(js->ev[5], st));
done:
	return rc;
}

int
join_small_submit(EytzGpuIndex *h, EytzJoinSet *js, const uint64_t *lo, const uint32_t *rows, uint64_t nq,
				  uint64_t max_matches, uint32_t flags, char *errbuf, size_t errlen)
{
	return h->kw == 4 ? submit_small<uint32_t>(h, js, lo, rows, nq, max_matches, flags, errbuf, errlen)
		: submit_small<uint64_t>(h, js, lo, rows, nq, max_matches, flags, errbuf, errlen);
}

const JoinStat *
join_small_answer(const EytzJoinSet *js, uint64_t **pays, uint32_t **rows)
{
	unsigned char *out = js->h_small + EYTZ_SMALL_IN_BYTES;

	*pays = (uint64_t *) (out + EYTZ_SMALL_STAT_BYTES);
	*rows = (uint32_t *) (out + EYTZ_SMALL_STAT_BYTES + std::min<uint64_t>(js->max_matches, EYTZ_JOIN_SMALL) * 8);
	return (const JoinStat *) out;
}

void
join_small_inputs(const EytzJoinSet *js, const uint64_t **lo, const uint32_t **rows)
{
	*lo = (const uint64_t *) js->h_small;
	*rows = (const uint32_t *) (js->h_small + js->nq * 8);
}

}								/* namespace eytzapi */
