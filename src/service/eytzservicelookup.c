/*
 * eytzservicelookup.c
 *		The service worker's lookups on its resident copies (interface:
 *		eytzservicecopies.h): a whole copy's on its GPU (submitted, then
 *		waited for while the worker takes other requests) or on its CPU
 *		image; a sliced copy's (a copy too large for any one device, in
 *		key-range slices on several, see eytzservicecopies.c) on every slice
 *		its keys fall in, the slices' GPUs working at the same time, the
 *		answers then merged into one.
 *
 * Every answer is the protocol's (eytzservice.h): the matches of the
 * longest prefix of the batch's queries that fit in the slot's max, sorted
 * by (tid, row), with the keys and asked-for values staged at the
 * positions the matches' "unused" name.  A slice is searched with the
 * query's index in the batch as its row, so that the merge knows which
 * prefix each slice answered; rows are the batch's again after the merge.
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "eytzgpucopy.h"
#include "eytzimage.h"
#include "eytzservice.h"
#include "eytzservicecopies.h"

/*
 * What one search answered into an answer area laid out as a window's
 * (matches, then keys and values at max stride)
 */
typedef struct PartAnswer
{
	uint32		nout;
	uint32		nq_done;
	bool		staged;
	float		kernel_ms;
	float		transfer_ms;
} PartAnswer;

/*
 * CPU answers: the queries in batch order, the matches' sort scratch, and
 * the "have" flags of a stage (every match of an image has its values)
 */
static EytzMatch *cpu_order;
static uint32 cpu_order_cap;
static EytzMatch *cpu_scratch;
static bool *cpu_have;
static uint32 cpu_scratch_cap;

/* Sliced answers: each slice's answer area, its queries, the per-query counts */
static char *slice_answers;
static Size slice_answers_bytes;
static uint64 *slice_lo;
static uint64 *slice_hi;
static uint32 *slice_rows;		/* per slice: its queries' indexes */
static uint32 *slice_counts;
static uint32 slice_cap;

/* eytz_alloc_large for arrays kept across requests, freed when outgrown */
static void *
regrow(void *old, Size bytes)
{
	if (old)
		eytz_free_large(old);
	return eytz_alloc_large(eytz_svc_copies_cxt, Max(bytes, 1));
}

/* Room for the sort of max matches and their "have" flags */
static void
ensure_scratch(uint32 max)
{
	if (cpu_scratch_cap >= max)
		return;
	cpu_scratch = regrow(cpu_scratch, sizeof(EytzMatch) * (Size) max);
	cpu_have = regrow(cpu_have, sizeof(bool) * (Size) max);
	cpu_scratch_cap = max;
}

/* The stage of an answer area of max matches (NULL without want) */
static EytzStage *
answer_stage(EytzStage *stage, EytzSvcSlot *s, char *answer, uint32 max, bool *have)
{
	int			j;

	if (!s->want)
		return NULL;
	memset(stage, 0, sizeof(EytzStage));
	stage->ncols = s->ncols;
	stage->have = have;
	stage->keys = eytz_svc_keys(answer, max);
	for (j = 0; j < s->ncols; j++)
	{
		stage->cols[j] = s->cols[j];
		stage->values[j] = eytz_svc_values(answer, max, j);
		stage->isnull[j] = eytz_svc_isnull(answer, max, s->ncols, j);
	}
	return stage;
}

/*
 * Submit nq queries of slot s to the GPU copy gpu on device and return
 * while it works (one batch in flight per copy).  hi is NULL for points (no
 * count pass on a unique index); ascending rows take the cheaper sort.
 */
static bool
gpu_start(EytzGpuCopy *gpu, bool *in_flight, int device, EytzSvcSlot *s,
		  const uint64 *lo, const uint64 *hi, const uint32 *rows, uint32 nq,
		  bool ascending)
{
	EytzGpuFailure failure;

	if (!eytz_gpu_copy_select(gpu, s->want, s->ncols, s->cols, &failure) ||
		!eytz_gpu_copy_submit(gpu, lo, hi, rows, nq, s->max, ascending, &failure))
		return eytz_svc_gpu_failed(s->why, device, &failure);
	*in_flight = true;
	return true;
}

/*
 * Wait for the batch gpu_start submitted: the matches (sorted by the GPU),
 * and with s->want the keys and values the GPU gathered for them, in match
 * order, into the answer area
 */
static bool
gpu_finish(EytzGpuCopy *gpu, bool *in_flight, int device, EytzSvcSlot *s,
		   char *answer, PartAnswer *a)
{
	EytzGpuFailure failure;
	EytzGpuAnswer ga;
	EytzStage	stage;

	*in_flight = false;
	if (!eytz_gpu_copy_wait(gpu, (EytzMatch *) answer,
							answer_stage(&stage, s, answer, s->max, NULL) ?
							&stage : NULL, 0, &ga, &failure))
		return eytz_svc_gpu_failed(s->why, device, &failure);
	a->nout = ga.nout;
	a->nq_done = ga.nq_done;
	a->staged = ga.staged;
	a->kernel_ms = ga.kernel_ms;
	a->transfer_ms = ga.transfer_ms;
	return true;
}

/*
 * The CPU answer of nq queries over image: the seam's batched search, then
 * the sort.  The queries are searched sorted by low key, as the seam's own
 * image view does (neighbouring searches share their upper path): points
 * within 2^32 of the least key as packed 8-byte records, others as an
 * order.  The answer must be a prefix of the batch: when the matches of the
 * whole batch do not fit in max, a shorter prefix is searched.  With
 * rows_in_order (points, rows ascending) the matches of one TID come in
 * row order either way (the sort by key is stable).
 */
static void
cpu_search(EytzImage *image, EytzSvcSlot *s, const uint64 *lo, const uint64 *hi,
		   const uint32 *rows, uint32 nq, bool points, bool rows_in_order,
		   char *answer, PartAnswer *a)
{
	EytzMatch  *out = (EytzMatch *) answer;
	EytzStage	stage;
	EytzStage  *st;
	uint64		base = PG_UINT64_MAX,
				top = 0;
	uint64	   *packed = NULL;
	uint32		n = 0;
	uint32		p;
	uint32		i;

	if (cpu_order_cap < nq)
	{
		/* twice: the sort's scratch */
		cpu_order = regrow(cpu_order, sizeof(EytzMatch) * (Size) nq * 2);
		cpu_order_cap = nq;
	}
	ensure_scratch(s->max);
	/* the values go to the answer at the matches' positions as found */
	st = answer_stage(&stage, s, answer, s->max, cpu_have);
	for (i = 0; i < nq; i++)
	{
		base = Min(base, lo[i]);
		top = Max(top, lo[i]);
	}
	/*
	 * The first p queries sorted and searched; while their matches do not
	 * all fit, p becomes a little less than the number of those searched
	 * that did (a prefix of that size fits most likely), down to the
	 * first query alone.  A batch of more queries than matches fit starts
	 * from twice as many queries as fit (with misses, more queries fit
	 * than matches): the seam asks for what is left of its chunk, often a
	 * few matches, and sorting the whole window's queries for those costs
	 * more than the search.
	 */
	p = nq <= s->max ? nq : Min(nq, 2 * s->max + 16);
	for (;;)
	{
		uint32		done;

		packed = NULL;
		if (points && p > 0 && top - base <= PG_UINT32_MAX)
		{
			packed = (uint64 *) cpu_order;
			for (i = 0; i < p; i++)
				packed[i] = (lo[i] - base) << 32 | rows[i];
			eytz_sort_u64(packed, p, packed + p, ~(uint64) PG_UINT32_MAX);
		}
		else
		{
			for (i = 0; i < p; i++)
			{
				cpu_order[i].tid = lo[i];
				cpu_order[i].row = i;
				cpu_order[i].unused = rows[i];
			}
			eytz_match_sort_keys(cpu_order, p, cpu_order + p);
		}
		n = 0;
		done = eytz_image_search(image, cpu_order, packed, base,
								 0, p, hi, s->max, out, &n, st, false, 0);
		if (done == p)
			break;
		/* a little fewer than the sorted pass took: a prefix that fits */
		p = done - done / 8;
	}
	a->nq_done = p;
	a->staged = s->want;
	a->nout = eytz_match_sort(out, n, cpu_scratch, rows_in_order);
	a->kernel_ms = 0;
	a->transfer_ms = 0;
}

/* Hand a whole copy's answer to the slot */
static void
set_answer(EytzSvcSlot *s, const PartAnswer *a)
{
	s->nout = a->nout;
	s->nq_done = a->nq_done;
	s->staged = a->staged;
	s->kernel_ms = a->kernel_ms;
	s->transfer_ms = a->transfer_ms;
}

/*
 * Make room for a sliced lookup of nq queries over nslices slices, each
 * answering into an area of max matches
 */
static void
slice_room(EytzSvcSlot *s, int nslices)
{
	Size		per = eytz_svc_match_bytes(s->want, s->ncols) * (Size) s->max;

	if (slice_answers_bytes < per * nslices)
	{
		slice_answers = regrow(slice_answers, per * nslices);
		slice_answers_bytes = per * nslices;
	}
	if (slice_cap < s->nq)
	{
		slice_lo = regrow(slice_lo, sizeof(uint64) * (Size) s->nq);
		slice_hi = regrow(slice_hi, sizeof(uint64) * (Size) s->nq);
		slice_rows = regrow(slice_rows, sizeof(uint32) * (Size) s->nq * EYTZ_SVC_MAX_DEVICES);
		slice_counts = regrow(slice_counts, sizeof(uint32) * (Size) s->nq);
		slice_cap = s->nq;
	}
}

/*
 * Merge the slices' answers (area k of slice k, its queries the batch
 * indexes rows_k) into the window's answer out: the longest prefix of the
 * batch that every slice answered and whose matches fit in max, rows back
 * to the batch's, staged values packed in match order, sorted by (tid, row)
 */
static void
slice_merge(EytzSvcSlot *s, int nslices, const uint32 *nsub, const PartAnswer *a,
			const uint32 *rows, char *window_out)
{
	EytzMatch  *out = (EytzMatch *) window_out;
	Size		per = eytz_svc_match_bytes(s->want, s->ncols) * (Size) s->max;
	uint32		prefix = s->nq;
	uint64		total = 0;
	uint32		keep = 0;
	uint32		n = 0;
	bool		staged = s->want;
	EytzStage	to;
	EytzStage  *stage_out;
	int			k;

	/* the first query some slice did not answer bounds the prefix */
	for (k = 0; k < nslices; k++)
	{
		if (a[k].nq_done < nsub[k])
			prefix = Min(prefix, slice_rows[(Size) k * s->nq + a[k].nq_done]);
		if (a[k].nout > 0 && !a[k].staged)
			staged = false;
	}
	/* the longest prefix of that whose matches fit in max */
	memset(slice_counts, 0, sizeof(uint32) * (Size) prefix);
	for (k = 0; k < nslices; k++)
	{
		const EytzMatch *m = (const EytzMatch *) (slice_answers + per * k);
		uint32		j;

		for (j = 0; j < a[k].nout; j++)
			if (m[j].row < prefix)
				slice_counts[m[j].row]++;
	}
	while (keep < prefix && total + slice_counts[keep] <= s->max)
		total += slice_counts[keep++];

	stage_out = answer_stage(&to, s, window_out, s->max, NULL);
	for (k = 0; k < nslices; k++)
	{
		char	   *area = slice_answers + per * k;
		const EytzMatch *m = (const EytzMatch *) area;
		EytzStage	from;
		uint32		j;
		int			c;

		(void) answer_stage(&from, s, area, s->max, NULL);
		for (j = 0; j < a[k].nout; j++)
		{
			if (m[j].row >= keep)
				continue;
			out[n].tid = m[j].tid;
			out[n].row = rows[m[j].row];
			out[n].unused = n;
			if (staged && stage_out)
			{
				uint32		u = m[j].unused;

				to.keys[n] = from.keys[u];
				for (c = 0; c < s->ncols; c++)
				{
					to.values[c][n] = from.values[c][u];
					to.isnull[c][n] = from.isnull[c][u];
				}
			}
			n++;
		}
	}
	ensure_scratch(s->max);
	s->nout = eytz_match_sort(out, n, cpu_scratch, false);
	s->nq_done = keep;
	s->staged = staged;
	s->kernel_ms = 0;
	s->transfer_ms = 0;
	for (k = 0; k < nslices; k++)
	{
		s->kernel_ms += a[k].kernel_ms;
		s->transfer_ms += a[k].transfer_ms;
	}
}

/*
 * Slot s's lookup over the sliced copy r, answered at once: each slice
 * gets the queries whose range meets its keys (a point one slice, or two
 * where equal keys straddle a boundary); on the GPU every slice's batch is
 * submitted before the first is waited for
 */
static bool
sliced_lookup(int r, EytzSvcSlot *s, const uint64 *lo, const uint64 *hi,
			  const uint32 *rows, bool points, char *window_out)
{
	SvcCopy    *copy = &eytz_svc_copies[r];
	Size		per;
	PartAnswer	a[EYTZ_SVC_MAX_DEVICES];
	uint32		nsub[EYTZ_SVC_MAX_DEVICES];
	bool		ok = true;
	int			k;

	slice_room(s, copy->nslices);
	per = eytz_svc_match_bytes(s->want, s->ncols) * (Size) s->max;
	memset(a, 0, sizeof(a));
	for (k = 0; k < copy->nslices; k++)
	{
		SvcSlice   *slice = &copy->slices[k];
		uint32	   *sub_rows = slice_rows + (Size) k * s->nq;
		uint32		m = 0;
		uint32		i;

		for (i = 0; i < s->nq; i++)
		{
			uint64		h = points ? lo[i] : hi[i];

			if (lo[i] <= slice->maxkey && h >= slice->minkey)
			{
				slice_lo[m] = lo[i];
				slice_hi[m] = h;
				sub_rows[m] = i;
				m++;
			}
		}
		nsub[k] = m;
		if (m == 0 || !ok)
			continue;
		/* the GPU copies the batch in at submission: the arrays are free again */
		if (eytz_svc->state == SVC_GPU)
			ok = gpu_start(&slice->gpu, &slice->in_flight, slice->device, s,
						   slice_lo, points ? NULL : slice_hi, sub_rows, m, true);
		else
			cpu_search(&slice->image, s, slice_lo, points ? NULL : slice_hi,
					   sub_rows, m, points, points, slice_answers + per * k, &a[k]);
	}
	/* every slice's batch waited for, also after a failure (its buffers) */
	for (k = 0; k < copy->nslices; k++)
	{
		SvcSlice   *slice = &copy->slices[k];

		if (slice->in_flight &&
			!gpu_finish(&slice->gpu, &slice->in_flight, slice->device, s,
						slice_answers + per * k, &a[k]))
			ok = false;
	}
	if (ok)
		slice_merge(s, copy->nslices, nsub, a, rows, window_out);
	return ok;
}

/*
 * Answer slot s's lookup; on the GPU only submit it to a whole copy
 * (*in_flight: the copy it went to, then eytz_svc_lookup_finish waits for
 * it; else -1)
 */
EytzSvcStatus
eytz_svc_lookup(EytzSvcSlot *s, char *window, int *in_flight)
{
	int			r = s->resident;
	const uint64 *lo = (const uint64 *) window;
	const uint64 *hi = s->points ? NULL : lo + s->nq;
	const uint32 *rows = (const uint32 *) (lo + 2 * (Size) s->nq);
	char	   *out = window + eytz_svc_out_offset(s->nq);
	SvcCopy    *copy;
	PartAnswer	a;
	bool		points,
				ascending,
				ok;
	int			j;

	if (r < 0 || !eytz_svc->resident[r].used ||
		memcmp(&eytz_svc->resident[r].key, &s->key, sizeof(EytzSvcKey)) != 0)
	{
		snprintf(s->why, sizeof(s->why), "the eytzgpu service does not hold this generation");
		return ST_FAILED;
	}
	copy = &eytz_svc_copies[r];
	for (j = 0; j < s->ncols; j++)
		if (s->cols[j] < 0 || s->cols[j] >= copy->image.inc.ncols)
		{
			snprintf(s->why, sizeof(s->why), "the eytzgpu service's copy has no included column %d", s->cols[j] + 1);
			return ST_FAILED;
		}
	/* the batch's shape, once: hi is NULL for points, it reads lo and rows then */
	eytz_gpu_batch_shape(lo, hi, rows, s->nq, &points, &ascending);
	if (copy->nslices > 0)
		ok = sliced_lookup(r, s, lo, hi, rows, points, out);
	else if (eytz_svc->state == SVC_GPU)
	{
		ok = gpu_start(&copy->gpu, &copy->in_flight, eytz_svc->resident[r].device,
					   s, lo, points ? NULL : hi, rows, s->nq, ascending);
		*in_flight = ok ? r : -1;
	}
	else
	{
		cpu_search(&copy->image, s, lo, hi, rows, s->nq, points,
				   points && ascending, out, &a);
		set_answer(s, &a);
		ok = true;
	}
	/* finish counts the hit, under the lock it hands the answer over with */
	return ok ? ST_OK : ST_FAILED;
}

bool
eytz_svc_lookup_ready(int r)
{
	return eytz_gpu_copy_ready(&eytz_svc_copies[r].gpu);
}

/*
 * A whole copy's GPU answer into the window as it came (the raw layout,
 * eytzservice.h), the backend converting it; converted here only where the
 * raw layout would not fit the room the converted answer has
 */
static bool
gpu_finish_raw(EytzGpuCopy *gpu, bool *in_flight, int device, EytzSvcSlot *s,
			   char *answer)
{
	EytzGpuFailure failure;
	EytzGpuAnswer ga;
	EytzGpuRawAnswer raw;
	EytzSvcRawLayout l;
	PartAnswer	a;
	int			j;

	*in_flight = false;
	if (!eytz_gpu_copy_wait_raw(gpu, &raw, &ga, &failure))
		return eytz_svc_gpu_failed(s->why, device, &failure);
	memset(&a, 0, sizeof(a));
	a.nout = ga.nout;
	a.nq_done = ga.nq_done;
	a.staged = s->want && raw.keys != NULL;
	a.kernel_ms = ga.kernel_ms;
	a.transfer_ms = ga.transfer_ms;
	s->raw_key_width = (int8) raw.key_width;
	for (j = 0; j < s->ncols; j++)
		s->raw_widths[j] = (int8) raw.widths[s->cols[j]];
	eytz_svc_raw_layout(&l, s->max, a.staged, raw.key_width, s->ncols, s->raw_widths);
	if (l.end <= eytz_svc_match_bytes(s->want, s->ncols) * (Size) s->max)
	{
		memcpy(answer + l.tids, raw.tids, raw.n * sizeof(uint64));
		memcpy(answer + l.rows, raw.rows, raw.n * sizeof(uint32));
		if (a.staged)
		{
			memcpy(answer + l.keys, raw.keys, raw.n * raw.key_width);
			for (j = 0; j < s->ncols; j++)
			{
				memcpy(answer + l.values[j], raw.values[s->cols[j]], raw.n * s->raw_widths[j]);
				memcpy(answer + l.nulls[j], raw.nulls[s->cols[j]], raw.n);
			}
		}
		s->raw = true;
	}
	else
	{
		EytzStage	stage;

		eytz_gpu_raw_to_matches(&raw, (EytzMatch *) answer,
								answer_stage(&stage, s, answer, s->max, NULL), 0);
	}
	set_answer(s, &a);
	return true;
}

/*
 * The answer of slot i's lookup submitted to copy r of the GPU (not the
 * slot's resident: a backend that abandons its slot clears that)
 */
EytzSvcStatus
eytz_svc_lookup_finish(int i, int r)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];

	s->raw = false;
	if (!gpu_finish_raw(&eytz_svc_copies[r].gpu, &eytz_svc_copies[r].in_flight,
						eytz_svc->resident[r].device, s,
						eytz_svc_window(i) + eytz_svc_out_offset(s->nq)))
		return ST_FAILED;
	return ST_OK;
}
