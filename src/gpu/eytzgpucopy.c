/*
 * eytzgpucopy.c
 *		A copy of an index on a GPU: the only C file that calls the GPU
 *		library of cuda/eytzgpu_cuda.h (interface: eytzgpucopy.h).
 *
 * The backend's resident cache (eytzdevice.c) and the service worker
 * (eytzservicemain.c) hold their copies through these functions, so that
 * uploading, attaching columns, choosing the columns a batch returns,
 * copying matches and values out and wording the library's failures are
 * written once.  Without CUDA at build time every call fails with "eytzgpu
 * was built without CUDA" and no GPU is seen.
 */
#include "postgres.h"

#include <unistd.h>

#include "eytzgpucopy.h"
#include "eytzinclude.h"

void
eytz_gpu_failure_text(char *buf, size_t len, const EytzGpuFailure *failure,
					  int device)
{
	if (device >= 0)
		snprintf(buf, len, "%s on GPU %d failed: %s", failure->what, device,
				 failure->detail);
	else
		snprintf(buf, len, "%s failed: %s", failure->what, failure->detail);
}

void
eytz_gpu_batch_shape(const uint64 *lo, const uint64 *hi, const uint32 *rows,
					 uint32 n, bool *points, bool *ascending)
{
	bool		pt = true;
	bool		asc = true;
	uint32		i;

	/* one pass, no early exit: branch-free, the arrays are read once */
	for (i = 0; i < n; i++)
	{
		pt &= hi == NULL || lo[i] == hi[i];
		asc &= i == 0 || rows[i] > rows[i - 1];
	}
	*points = pt;
	*ascending = asc;
}

/* keys, payloads and the library's extra copies: about twice the data */
uint64
eytz_gpu_build_estimate(uint64 n, int key_width)
{
	return n * (key_width + sizeof(uint64)) * 2;
}

/* Can the keys ride along as a column after the included ones? */
static bool
key_column_fits(const EytzInclude *inc)
{
	return inc->ncols > 0 && inc->ncols < EYTZ_MAX_INCLUDE;
}

uint64
eytz_gpu_copy_estimate(const EytzMetaPageData *meta, const EytzInclude *inc)
{
	uint64		n = meta->nentries;
	uint64		bytes = eytz_gpu_build_estimate(n, meta->key_width);
	int			c;

	/* the attached columns: values, NULL bitmaps and the keys again */
	for (c = 0; c < inc->ncols; c++)
		bytes += n * inc->width[c] + (n + 7) / 8;
	if (key_column_fits(inc))
		bytes += n * meta->key_width;
	return bytes;
}

#ifdef EYTZ_HAVE_CUDA

#include "eytzgpu_cuda.h"

StaticAssertDecl(EYTZ_MAX_INCLUDE <= EYTZGPU_MAX_COLUMNS,
				 "every included column can be attached");

/*
 * Fill *failure: what, and the code's text with the library's message
 * (without its own "eytzgpu: ", ours say it already)
 */
static bool
failed(EytzGpuFailure *failure, const char *what, int rc, const char *errbuf)
{
	if (strncmp(errbuf, "eytzgpu: ", 9) == 0)
		errbuf += 9;
	failure->what = what;
	failure->out_of_memory = rc == EYTZGPU_ENOMEM;
	snprintf(failure->detail, sizeof(failure->detail), "%s%s%s",
			 eytzgpu_strerror(rc), errbuf[0] ? ": " : "", errbuf);
	return false;
}

/* The driver's absence said plainly (the runtime calls it an old driver) */
static bool
driver_loaded(void)
{
	return access("/proc/driver/nvidia/version", F_OK) == 0;
}

bool
eytz_gpu_probe(char *why, size_t len)
{
	EytzGpuInfo info;
	int			rc;

	why[0] = '\0';
	rc = eytzgpu_probe(-1, &info, why, len);
	if (rc == EYTZGPU_OK)
		return true;
	if (rc == EYTZGPU_ENODEV && !driver_loaded())
		strlcpy(why, "no NVIDIA driver is loaded", len);
	else if (why[0] == '\0')
		strlcpy(why, eytzgpu_strerror(rc), len);
	else if (strncmp(why, "eytzgpu: ", 9) == 0)
		memmove(why, why + 9, strlen(why + 9) + 1);
	return false;
}

int
eytz_gpu_device_count(void)
{
	char		errbuf[64];
	int			n = 0;

	if (eytzgpu_device_count(&n, errbuf, sizeof(errbuf)) != EYTZGPU_OK || n < 1)
		n = 1;					/* device 0 answered the probe */
	return n;
}

void
eytz_gpu_device_name(int device, char *name, size_t len)
{
	EytzGpuInfo info;
	char		errbuf[64];

	if (eytzgpu_probe(device, &info, errbuf, sizeof(errbuf)) == EYTZGPU_OK)
		strlcpy(name, info.name, len);
	else
		snprintf(name, len, "GPU %d", device);
}

/*
 * Attach the included columns and the keys to the copy's handle; false
 * with *failure (the handle freed) on failure
 */
static bool
attach_columns(EytzGpuCopy *copy, const EytzMetaPageData *meta,
			   const void *keys, const EytzInclude *inc, char *const *values,
			   uint8 *const *nulls, uint64 *bytes, EytzGpuFailure *failure)
{
	const void *cols[EYTZGPU_MAX_COLUMNS];
	const uint8_t *colnulls[EYTZGPU_MAX_COLUMNS];
	int			widths[EYTZGPU_MAX_COLUMNS];
	int			m = 0;
	char		errbuf[256] = "";
	int			rc;

	for (; m < inc->ncols; m++)
	{
		cols[m] = values[m];
		colnulls[m] = nulls[m];
		widths[m] = inc->width[m];
	}
	if (key_column_fits(inc))
	{
		cols[m] = keys;
		colnulls[m] = NULL;
		widths[m] = meta->key_width;
		m++;
	}
	rc = eytzgpu_attach_columns(copy->handle, m, widths, cols, colnulls, bytes,
								errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
	{
		eytz_gpu_copy_free(copy);
		return failed(failure, "GPU upload of the included columns", rc, errbuf);
	}
	copy->ninclude = inc->ncols;
	copy->key_column = key_column_fits(inc) ? inc->ncols : -1;
	for (m = 0; m < inc->ncols; m++)
		copy->widths[m] = inc->width[m];
	return true;
}

bool
eytz_gpu_copy_upload(EytzGpuCopy *copy, int device,
					 const EytzMetaPageData *meta, const void *keys,
					 const uint64 *tids, const EytzInclude *inc,
					 char *const *values, uint8 *const *nulls, uint64 *bytes,
					 EytzGpuFailure *failure)
{
	EytzGpuIndex *h = NULL;
	char		errbuf[256] = "";
	int			rc;

	memset(copy, 0, sizeof(EytzGpuCopy));
	copy->key_width = meta->key_width;
	copy->key_column = -1;
	rc = eytzgpu_upload(device, keys, tids, meta->nentries, meta->key_width,
						meta->fanout, 0, &h, bytes, errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
		return failed(failure, "GPU upload", rc, errbuf);
	copy->handle = h;
	if (inc->ncols > 0 && meta->nentries > 0)
		return attach_columns(copy, meta, keys, inc, values, nulls, bytes, failure);
	return true;
}

bool
eytz_gpu_copy_select(EytzGpuCopy *copy, bool want, int ncols, const int *cols,
					 EytzGpuFailure *failure)
{
	uint32		mask = 0;
	char		errbuf[256] = "";
	int			rc;
	int			j;

	if (want && copy->key_column >= 0)
	{
		mask = 1U << copy->key_column;
		for (j = 0; j < ncols; j++)
			mask |= 1U << cols[j];
	}
	if (mask != copy->mask)
	{
		rc = eytzgpu_join_columns(copy->handle, mask, errbuf, sizeof(errbuf));
		if (rc != EYTZGPU_OK)
			return failed(failure, "GPU column selection", rc, errbuf);
		copy->mask = mask;
	}
	return true;
}

bool
eytz_gpu_copy_submit(EytzGpuCopy *copy, const uint64 *lo, const uint64 *hi,
					 const uint32 *rows, uint32 nq, uint32 max, bool ascending,
					 EytzGpuFailure *failure)
{
	char		errbuf[256] = "";
	int			rc;

	rc = eytzgpu_lookup_join_submit(copy->handle, lo, hi, rows, nq, max,
									ascending ? EYTZGPU_ROWS_ASCENDING : 0,
									errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
		return failed(failure, "GPU lookup", rc, errbuf);
	return true;
}

bool
eytz_gpu_copy_ready(EytzGpuCopy *copy)
{
	int			ready;

	return eytzgpu_lookup_join_ready(copy->handle, &ready) != EYTZGPU_OK || ready;
}

bool
eytz_gpu_copy_wait_raw(EytzGpuCopy *copy, EytzGpuRawAnswer *raw,
					   EytzGpuAnswer *answer, EytzGpuFailure *failure)
{
	EytzGpuJoinResult res;
	char		errbuf[256] = "";
	int			rc;
	int			c;

	rc = eytzgpu_lookup_join_wait(copy->handle, &res, errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
		return failed(failure, "GPU lookup", rc, errbuf);
	memset(answer, 0, sizeof(EytzGpuAnswer));
	answer->nout = (uint32) res.nmatch;
	answer->nq_done = (uint32) res.nq_done;
	answer->kernel_ms = res.kernel_ms;
	answer->transfer_ms = res.transfer_ms;
	memset(raw, 0, sizeof(EytzGpuRawAnswer));
	raw->n = res.nmatch;
	raw->tids = res.payloads;
	raw->rows = res.rows;
	raw->key_width = copy->key_width;
	if (copy->mask != 0)
	{
		raw->keys = res.columns[copy->key_column];
		for (c = 0; c < copy->ninclude; c++)
		{
			raw->values[c] = res.columns[c];
			raw->nulls[c] = res.column_nulls[c];
			raw->widths[c] = copy->widths[c];
		}
	}
	return true;
}

bool
eytz_gpu_copy_wait(EytzGpuCopy *copy, EytzMatch *out, EytzStage *stage,
				   uint32 from, EytzGpuAnswer *answer, EytzGpuFailure *failure)
{
	EytzGpuRawAnswer raw;

	if (!eytz_gpu_copy_wait_raw(copy, &raw, answer, failure))
		return false;
	if (out != NULL)
		eytz_gpu_raw_to_matches(&raw, out, stage, from);
	answer->staged = out != NULL && stage != NULL && raw.keys != NULL;
	return true;
}

void
eytz_gpu_copy_free(EytzGpuCopy *copy)
{
	eytzgpu_free(copy->handle);
	copy->handle = NULL;
	copy->key_column = -1;
	copy->mask = 0;
}

bool
eytz_gpu_build(const void *keys, const uint64 *tids, uint64 n, int key_width,
			   int fanout, void *out_keys, uint64 *out_tids, EytzGpuCopy *keep,
			   uint64 *bytes, EytzGpuFailure *failure)
{
	EytzGpuIndex *h = NULL;
	char		errbuf[256] = "";
	int			rc;

	rc = eytzgpu_build(-1, keys, tids, n, key_width, fanout, 0, out_keys,
					   out_tids, keep ? &h : NULL, bytes, errbuf, sizeof(errbuf));
	if (rc != EYTZGPU_OK)
		return failed(failure, "GPU build", rc, errbuf);
	if (keep)
	{
		memset(keep, 0, sizeof(EytzGpuCopy));
		keep->handle = h;
		keep->key_width = key_width;
		keep->key_column = -1;
	}
	return true;
}

#else							/* !EYTZ_HAVE_CUDA: no GPU is ever seen */

static bool
no_cuda(EytzGpuFailure *failure, const char *what)
{
	failure->what = what;
	failure->out_of_memory = false;
	strlcpy(failure->detail, "eytzgpu was built without CUDA", sizeof(failure->detail));
	return false;
}

bool
eytz_gpu_probe(char *why, size_t len)
{
	strlcpy(why, "eytzgpu was built without CUDA", len);
	return false;
}

int
eytz_gpu_device_count(void)
{
	return 0;
}

void
eytz_gpu_device_name(int device, char *name, size_t len)
{
	snprintf(name, len, "GPU %d", device);
}

bool
eytz_gpu_copy_upload(EytzGpuCopy *copy, int device,
					 const EytzMetaPageData *meta, const void *keys,
					 const uint64 *tids, const EytzInclude *inc,
					 char *const *values, uint8 *const *nulls, uint64 *bytes,
					 EytzGpuFailure *failure)
{
	memset(copy, 0, sizeof(EytzGpuCopy));
	copy->key_column = -1;
	return no_cuda(failure, "GPU upload");
}

bool
eytz_gpu_copy_select(EytzGpuCopy *copy, bool want, int ncols, const int *cols,
					 EytzGpuFailure *failure)
{
	return no_cuda(failure, "GPU column selection");
}

bool
eytz_gpu_copy_submit(EytzGpuCopy *copy, const uint64 *lo, const uint64 *hi,
					 const uint32 *rows, uint32 nq, uint32 max, bool ascending,
					 EytzGpuFailure *failure)
{
	return no_cuda(failure, "GPU lookup");
}

bool
eytz_gpu_copy_ready(EytzGpuCopy *copy)
{
	return true;
}

bool
eytz_gpu_copy_wait_raw(EytzGpuCopy *copy, EytzGpuRawAnswer *raw,
					   EytzGpuAnswer *answer, EytzGpuFailure *failure)
{
	return no_cuda(failure, "GPU lookup");
}

bool
eytz_gpu_copy_wait(EytzGpuCopy *copy, EytzMatch *out, EytzStage *stage,
				   uint32 from, EytzGpuAnswer *answer, EytzGpuFailure *failure)
{
	return no_cuda(failure, "GPU lookup");
}

void
eytz_gpu_copy_free(EytzGpuCopy *copy)
{
}

bool
eytz_gpu_build(const void *keys, const uint64 *tids, uint64 n, int key_width,
			   int fanout, void *out_keys, uint64 *out_tids, EytzGpuCopy *keep,
			   uint64 *bytes, EytzGpuFailure *failure)
{
	return no_cuda(failure, "GPU build");
}

#endif							/* EYTZ_HAVE_CUDA */

void
eytz_gpu_raw_to_matches(const EytzGpuRawAnswer *raw, EytzMatch *out,
						EytzStage *stage, uint32 from)
{
	uint64		i;
	int			j;

	for (i = 0; i < raw->n; i++)
	{
		out[i].tid = raw->tids[i];
		out[i].row = raw->rows[i];
		out[i].unused = from + (uint32) i;
	}
	if (stage == NULL || raw->keys == NULL)
		return;
	for (i = 0; i < raw->n; i++)
		stage->keys[from + i] = eytz_key_at(raw->keys, raw->key_width, i);
	if (stage->have)
		memset(stage->have + from, true, raw->n * sizeof(bool));
	for (j = 0; j < stage->ncols; j++)
	{
		int			c = stage->cols[j];
		int			width = raw->widths[c];
		const char *vals = raw->values[c];
		const uint8 *nulls = raw->nulls[c];

		for (i = 0; i < raw->n; i++)
		{
			bool		isnull = nulls[i] != 0;

			stage->isnull[j][from + i] = isnull;
			stage->values[j][from + i] = isnull ? (Datum) 0 :
				eytz_include_fetch(vals + i * width, width);
		}
	}
}
