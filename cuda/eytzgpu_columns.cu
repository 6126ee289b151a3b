/*
 * eytzgpu_columns.cu
 *		Included columns of a resident index (eytzgpu_attach_columns,
 *		eytzgpu_join_columns): values in slot order and NULL bitmaps on the
 *		device, which join batches gather for their matches after the sort
 *		by payload (eytzgpu_join.cu, k_join_gather).
 *
 * A binary copy of a small index (the point fast path may search it) has
 * other slots: a map from its slots to the index's is made here, from the
 * two layouts' sorted ranks.
 */
#include <string.h>

#include "eytzgpu_internal.cuh"

using namespace eytzk;
using namespace eytzapi;

static_assert(EYTZGPU_MAX_COLUMNS == EYTZ_JOIN_MAX_COLUMNS, "one column limit");

/* Free the attached columns and the copy's slot map (their bytes leave dev_bytes) */
static void
detach_columns(EytzGpuIndex *h)
{
	for (int c = 0; c < EYTZGPU_MAX_COLUMNS; c++)
	{
		dfree(h->d_col[c]);
		dfree(h->d_col_nulls[c]);
		h->d_col[c] = NULL;
		h->d_col_nulls[c] = NULL;
	}
	dfree(h->d_ebs_map);
	h->d_ebs_map = NULL;
	h->dev_bytes -= h->col_bytes;
	h->col_bytes = 0;
	h->ncols = 0;
	h->col_mask = 0;
}

/* cudaMalloc of bytes, counted in the columns' bytes */
static cudaError_t
col_alloc(EytzGpuIndex *h, void **p, size_t bytes)
{
	cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);

	if (e == cudaSuccess)
		h->col_bytes += bytes ? bytes : 16;
	return e;
}

extern "C" int
eytzgpu_attach_columns(EytzGpuIndex *h, int m, const int *widths, const void *const *values,
					   const uint8_t *const *nulls, uint64_t *device_bytes, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	uint64_t	n;
	uint32_t   *inv = NULL;

	if (!h || m < 0 || m > EYTZGPU_MAX_COLUMNS || (m > 0 && (!widths || !values)))
	{
		set_msg(errbuf, errlen, "eytzgpu: bad included columns (NULL handle or arrays, or more than %d)",
				EYTZGPU_MAX_COLUMNS);
		return EYTZGPU_EINVAL;
	}
	n = h->n;
	for (int c = 0; c < m; c++)
		if ((widths[c] != 1 && widths[c] != 2 && widths[c] != 4 && widths[c] != 8) || (n > 0 && !values[c]))
		{
			set_msg(errbuf, errlen, "eytzgpu: included column %d: width %d or values missing", c, widths[c]);
			return EYTZGPU_EINVAL;
		}
	if (m > 0 && n > UINT32_MAX)
	{
		set_msg(errbuf, errlen, "eytzgpu: included columns need an index of at most 2^32-1 entries");
		return EYTZGPU_EINVAL;
	}
	if (h->sets[0].pending || h->sets[1].pending)
	{
		set_msg(errbuf, errlen, "eytzgpu: a join batch is in flight (wait for it first)");
		return EYTZGPU_EINVAL;
	}
	if ((rc = ck(cudaSetDevice(h->device), "cudaSetDevice", errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	CK(cudaStreamSynchronize(h->st));
	detach_columns(h);
	for (int c = 0; c < m; c++)
	{
		CK(col_alloc(h, &h->d_col[c], n * widths[c]));
		h->col_width[c] = widths[c];
		if (n > 0)
			CK(cudaMemcpy(h->d_col[c], values[c], n * widths[c], cudaMemcpyHostToDevice));
		if (nulls && nulls[c])
		{
			CK(col_alloc(h, (void **) &h->d_col_nulls[c], (n + 7) / 8));
			if (n > 0)
				CK(cudaMemcpy(h->d_col_nulls[c], nulls[c], (n + 7) / 8, cudaMemcpyHostToDevice));
		}
	}
	if (m > 0 && h->d_ebs_keys && n > 0)
	{
		/* the binary copy's slot -> the slot of the same entry in the index */
		CK(cudaMalloc((void **) &inv, n * 4));
		CK(col_alloc(h, (void **) &h->d_ebs_map, n * 4));
		k_slot_of_rank<<<grid1d(n), 256, 0, h->st>>>(make_perm_shape(n, h->k), inv);
		k_slot_map<<<grid1d(n), 256, 0, h->st>>>(make_perm_shape(n, 2), inv, h->d_ebs_map);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(h->st));
	}
	h->ncols = m;
	h->dev_bytes += h->col_bytes;
done:
	dfree(inv);
	if (rc != EYTZGPU_OK)
	{
		/* nothing half attached: the bytes counted so far were not added yet */
		h->dev_bytes += h->col_bytes;
		detach_columns(h);
	}
	if (device_bytes)
		*device_bytes = h->dev_bytes;
	return rc;
}

extern "C" int
eytzgpu_join_columns(EytzGpuIndex *h, uint32_t mask, char *errbuf, size_t errlen)
{
	if (!h)
	{
		set_msg(errbuf, errlen, "eytzgpu: NULL handle");
		return EYTZGPU_EINVAL;
	}
	if (h->ncols < 32 && (mask >> h->ncols) != 0)
	{
		set_msg(errbuf, errlen, "eytzgpu: column mask %#x names columns that are not attached (%d are)", mask,
				h->ncols);
		return EYTZGPU_EINVAL;
	}
	h->col_mask = mask;
	return EYTZGPU_OK;
}
