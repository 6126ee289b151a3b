/*
 * eytzgpu_index.cu
 *		The index life cycle of the C API (eytzgpu_cuda.h): probe, upload,
 *		GPU build, facts, free, error texts.
 */
#include <stdlib.h>
#include <string.h>

#include "eytzgpu_internal.cuh"

using namespace eytzk;
using namespace eytzapi;

extern "C" const char *
eytzgpu_strerror(int code)
{
	switch (code)
	{
		case EYTZGPU_OK:
			return "ok";
		case EYTZGPU_ENODEV:
			return "no usable GPU";
		case EYTZGPU_ENOMEM:
			return "out of GPU memory";
		case EYTZGPU_EINVAL:
			return "invalid argument";
		default:
			return "GPU failure";
	}
}

/* Select the device after checking that a driver and the device exist */
static int
use_device(int device, char *errbuf, size_t errlen)
{
	int			count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);

	if (e != cudaSuccess)
	{
		(void) cudaGetLastError();
		set_msg(errbuf, errlen, "eytzgpu: no usable GPU: %s", cudaGetErrorString(e));
		return EYTZGPU_ENODEV;
	}
	if (device < 0)
		device = 0;
	if (count == 0 || device >= count)
	{
		set_msg(errbuf, errlen, "eytzgpu: no GPU %d (%d present)", device, count);
		return EYTZGPU_ENODEV;
	}
	return ck(cudaSetDevice(device), "cudaSetDevice", errbuf, errlen);
}

extern "C" int
eytzgpu_device_count(int *count, char *errbuf, size_t errlen)
{
	cudaError_t e;

	if (!count)
	{
		set_msg(errbuf, errlen, "eytzgpu: NULL count");
		return EYTZGPU_EINVAL;
	}
	*count = 0;
	e = cudaGetDeviceCount(count);
	if (e != cudaSuccess || *count == 0)
	{
		(void) cudaGetLastError();
		set_msg(errbuf, errlen, "eytzgpu: no usable GPU: %s",
				e != cudaSuccess ? cudaGetErrorString(e) : "no device");
		*count = 0;
		return EYTZGPU_ENODEV;
	}
	return EYTZGPU_OK;
}

extern "C" int
eytzgpu_probe(int device, EytzGpuInfo *info, char *errbuf, size_t errlen)
{
	int			rc;
	cudaDeviceProp prop;
	size_t		fr = 0,
				tot = 0;

	if (device < 0)
		device = 0;
	if ((rc = use_device(device, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	CK(cudaGetDeviceProperties(&prop, device));
	CK(cudaMemGetInfo(&fr, &tot));
	if (info)
	{
		memset(info, 0, sizeof(*info));
		snprintf(info->name, sizeof(info->name), "%s", prop.name);
		info->device = device;
		info->sm_count = prop.multiProcessorCount;
		info->cc_major = prop.major;
		info->cc_minor = prop.minor;
		info->l2_bytes = (uint64_t) prop.l2CacheSize;
		info->total_mem = tot;
		info->free_mem = fr;
	}
done:
	return rc;
}

extern "C" void
eytzgpu_free(EytzGpuIndex *h)
{
	int			i;

	if (!h)
		return;
	if (cudaSetDevice(h->device) == cudaSuccess)
	{
		if (h->st)
			(void) cudaStreamSynchronize(h->st);
		dfree(h->d_keys);
		dfree(h->d_pays);
		dfree(h->d_aos);
		dfree(h->d_ebs_keys);
		dfree(h->d_ebs_pays);
		dfree(h->d_lo);
		dfree(h->d_hi);
		dfree(h->d_comp_a);
		dfree(h->d_comp_b);
		dfree(h->d_u32);
		dfree(h->d_cnt);
		dfree(h->d_off);
		dfree(h->d_first);
		dfree(h->d_temp);
		dfree(h->d_out);
		dfree(h->d_jlo);
		dfree(h->d_jhi);
		dfree(h->d_jrows);
		dfree(h->jb.key_a);
		dfree(h->jb.key_b);
		dfree(h->jb.row_a);
		dfree(h->jb.row_b);
		dfree(h->d_stat);
		dfree(h->d_small);
		dfree(h->d_jslot_a);
		dfree(h->d_jslot_b);
		dfree(h->d_jrs_a);
		dfree(h->d_jrs_b);
		dfree(h->d_cols_out);
		dfree(h->d_ebs_map);
		for (i = 0; i < EYTZGPU_MAX_COLUMNS; i++)
		{
			dfree(h->d_col[i]);
			dfree(h->d_col_nulls[i]);
		}
		if (h->h_q)
			(void) cudaFreeHost(h->h_q);
		if (h->h_off)
			(void) cudaFreeHost(h->h_off);
		if (h->h_pay)
			(void) cudaFreeHost(h->h_pay);
		for (i = 0; i < 2; i++)
		{
			EytzJoinSet *js = &h->sets[i];
			void	   *pinned[] = {js->h_lo, js->h_hi, js->h_rows, js->h_pay, js->h_row, js->h_stat, js->h_cols,
				js->h_small};

			for (size_t j = 0; j < sizeof(pinned) / sizeof(pinned[0]); j++)
				if (pinned[j])
					(void) cudaFreeHost(pinned[j]);
			for (size_t j = 0; j < sizeof(js->ev) / sizeof(js->ev[0]); j++)
				if (js->ev[j])
					(void) cudaEventDestroy(js->ev[j]);
		}
		for (i = 0; i < 4; i++)
			if (h->ev[i])
				(void) cudaEventDestroy(h->ev[i]);
		if (h->ev_sent)
			(void) cudaEventDestroy(h->ev_sent);
		if (h->ev_walked)
			(void) cudaEventDestroy(h->ev_walked);
		if (h->ev_inputs_free)
			(void) cudaEventDestroy(h->ev_inputs_free);
		for (i = 0; i < EYTZ_STAGE_THREADS; i++)
		{
			if (h->ev_staged[i])
				(void) cudaEventDestroy(h->ev_staged[i]);
			if (h->st_stage[i])
				(void) cudaStreamDestroy(h->st_stage[i]);
		}
		if (h->st)
			(void) cudaStreamDestroy(h->st);
		if (h->st_walk)
			(void) cudaStreamDestroy(h->st_walk);
		(void) cudaGetLastError();
	}
	free(h);
}

static int
new_handle(int device, int kw, uint32_t k, uint64_t n, EytzGpuIndex **out, char *errbuf, size_t errlen)
{
	EytzGpuIndex *h = (EytzGpuIndex *) calloc(1, sizeof(EytzGpuIndex));
	int			rc = EYTZGPU_OK,
				i;

	if (!h)
	{
		set_msg(errbuf, errlen, "eytzgpu: out of host memory");
		return EYTZGPU_ENOMEM;
	}
	h->device = device < 0 ? 0 : device;
	h->kw = kw;
	h->k = k;
	h->n = n;
	CK(cudaStreamCreateWithFlags(&h->st, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&h->st_walk, cudaStreamNonBlocking));
	for (i = 0; i < 4; i++)
		CK(cudaEventCreate(&h->ev[i]));
	CK(cudaEventCreateWithFlags(&h->ev_sent, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&h->ev_walked, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&h->ev_inputs_free, cudaEventDisableTiming));
	for (i = 0; i < EYTZ_STAGE_THREADS; i++)
	{
		CK(cudaStreamCreateWithFlags(&h->st_stage[i], cudaStreamNonBlocking));
		CK(cudaEventCreateWithFlags(&h->ev_staged[i], cudaEventDisableTiming));
	}
	for (i = 0; i < 2; i++)
		for (size_t j = 0; j < sizeof(h->sets[i].ev) / sizeof(h->sets[i].ev[0]); j++)
			CK(cudaEventCreate(&h->sets[i].ev[j]));
	h->code = join_code_of(NULL, 0);
done:
	if (rc != EYTZGPU_OK)
	{
		eytzgpu_free(h);
		h = NULL;
	}
	*out = h;
	return rc;
}

/* cudaMalloc that also counts the bytes */
static cudaError_t
dalloc(void **p, size_t bytes, uint64_t *counter)
{
	cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);

	if (e == cudaSuccess && counter)
		*counter += bytes ? bytes : 16;
	return e;
}

/* sk sorted keys on the device (or NULL: ek, Eytzinger order, is unpermuted into a temporary) */
template <class KT>
static bool
points_ok_check(const KT *sk, const KT *ek, const uint64_t *sp, uint64_t n, uint32_t k, cudaStream_t st)
{
	unsigned   *dbad = NULL;
	unsigned	bad = 1;
	KT		   *tmp = NULL;
	bool		ok = false;

	if (n == 0)
		return true;
	if (cudaMalloc((void **) &dbad, sizeof(unsigned)) != cudaSuccess)
		goto out;
	if (!sk)
	{
		if (cudaMalloc((void **) &tmp, n * sizeof(KT)) != cudaSuccess)
			goto out;
		k_unpermute_keys<KT><<<grid1d(n), 256, 0, st>>>(make_perm_shape(n, k), ek, tmp);
		sk = tmp;
	}
	if (cudaMemsetAsync(dbad, 0, sizeof(unsigned), st) != cudaSuccess)
		goto out;
	k_points_bad<KT><<<grid1d(n), 256, 0, st>>>(sk, sp, n, dbad);
	if (cudaMemcpyAsync(&bad, dbad, sizeof(unsigned), cudaMemcpyDeviceToHost, st) != cudaSuccess ||
		cudaStreamSynchronize(st) != cudaSuccess)
		goto out;
	ok = bad == 0;
out:
	if (dbad)
		cudaFree(dbad);
	if (tmp)
		cudaFree(tmp);
	(void) cudaGetLastError();
	return ok;
}

/*
 * Make the resident copies from Eytzinger SoA arrays already on the device
 * (d_ek/d_ep, padded, owned by the caller until this returns; on success they
 * may have been adopted by the handle, which then NULLs them).  d_sorted_k/p
 * is the sorted order when known (build), else NULL (computed if needed).
 */
template <class KT>
static int
make_resident(EytzGpuIndex *h, uint32_t flags, void **d_ek, uint64_t **d_ep,
			  const KT *d_sorted_k, const uint64_t *d_sorted_p, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	uint64_t	n = h->n;
	uint32_t	k = h->k;
	uint32_t	want = flags & (EYTZGPU_LAYOUT_SOA | EYTZGPU_LAYOUT_AOS);
	bool		small = n * sizeof(KT) <= EYTZ_EBS_COPY_MAX_KEY_BYTES;
	KT		   *tk = NULL;
	uint64_t   *tp = NULL;

	/* SoA by default: keys-only lines keep more levels in L2 (measured, README) */
	if (want == 0)
		want = EYTZGPU_LAYOUT_SOA;
	h->layout = want;

	if (k != 2 && small && n > 0 && !(flags & EYTZGPU_NO_EBS_COPY))
	{
		/* composite strategy: a binary copy for cache-resident sizes */
		uint64_t	pad2 = eytz_padded_slots(n, 2, sizeof(KT));

		if (!d_sorted_k)
		{
			CK(cudaMalloc((void **) &tk, n * sizeof(KT)));
			CK(cudaMalloc((void **) &tp, n * 8));
			k_unpermute<KT><<<grid1d(n), 256, 0, h->st>>>(make_perm_shape(n, k), (const KT *) *d_ek, *d_ep, tk, tp);
			CK(cudaGetLastError());
			d_sorted_k = tk;
			d_sorted_p = tp;
		}
		CK(dalloc(&h->d_ebs_keys, pad2 * sizeof(KT), &h->dev_bytes));
		CK(dalloc((void **) &h->d_ebs_pays, pad2 * 8, &h->dev_bytes));
		CK(cudaMemsetAsync(h->d_ebs_keys, 0, pad2 * sizeof(KT), h->st));
		CK(cudaMemsetAsync(h->d_ebs_pays, 0, pad2 * 8, h->st));
		k_permute<KT><<<grid1d(n), 256, 0, h->st>>>(make_perm_shape(n, 2), d_sorted_k, d_sorted_p,
													(KT *) h->d_ebs_keys, h->d_ebs_pays, NULL, 0, 0);
		CK(cudaGetLastError());
	}

	if (want == EYTZGPU_LAYOUT_AOS)
	{
		uint32_t	tpl = eytz_aos_tile_log2(k, sizeof(KT));
		uint32_t	tb = (uint32_t) ((sizeof(KT) + 8) << tpl);
		uint64_t	tiles = (eytz_padded_slots(n, k, sizeof(KT)) >> tpl);

		CK(dalloc((void **) &h->d_aos, tiles * tb, &h->dev_bytes));
		CK(cudaMemsetAsync(h->d_aos, 0, tiles * tb, h->st));
		if (n > 0)
		{
			k_soa_to_aos<KT><<<grid1d(n), 256, 0, h->st>>>(n, (const KT *) *d_ek, *d_ep, h->d_aos, tpl, tb);
			CK(cudaGetLastError());
		}
	}
	else
	{
		uint64_t	pad = eytz_padded_slots(n, k, sizeof(KT));

		h->d_keys = *d_ek;
		h->d_pays = *d_ep;
		*d_ek = NULL;
		*d_ep = NULL;
		h->dev_bytes += pad * (sizeof(KT) + 8);
	}
	CK(cudaStreamSynchronize(h->st));
done:
	dfree(tk);
	dfree(tp);
	return rc;
}

static int
check_args(int key_width, uint32_t k, uint64_t n, const void *keys, const uint64_t *pays,
		   char *errbuf, size_t errlen)
{
	if (key_width != 4 && key_width != 8)
	{
		set_msg(errbuf, errlen, "eytzgpu: key width must be 4 or 8, not %d", key_width);
		return EYTZGPU_EINVAL;
	}
	if (!eytz_fanout_valid(k))
	{
		set_msg(errbuf, errlen, "eytzgpu: fan-out %u is not 2^p+1 <= %d", k, EYTZ_MAX_FANOUT);
		return EYTZGPU_EINVAL;
	}
	if (n >= ((uint64_t) 1 << 31))
	{
		set_msg(errbuf, errlen, "eytzgpu: %llu entries is too many (limit 2^31-1)", (unsigned long long) n);
		return EYTZGPU_EINVAL;
	}
	if (n > 0 && (!keys || !pays))
	{
		set_msg(errbuf, errlen, "eytzgpu: NULL key or payload array");
		return EYTZGPU_EINVAL;
	}
	return EYTZGPU_OK;
}

/* Smallest and largest key from the Eytzinger array on the host (leftmost/rightmost paths) */
static void
host_minmax(const void *keys, int kw, uint64_t n, uint32_t k, uint64_t *mn, uint64_t *mx)
{
	uint64_t	s = 0,
				t;

	*mn = 0;
	*mx = 0;
	if (n == 0)
		return;
	while (eytz_child(s, 0, k) < n)
		s = eytz_child(s, 0, k);
	*mn = kw == 4 ? ((const uint32_t *) keys)[s] : ((const uint64_t *) keys)[s];
	s = 0;
	while (eytz_child(s, k - 1, k) < n)
		s = eytz_child(s, k - 1, k);
	t = s + k - 2 < n - 1 ? s + k - 2 : n - 1;
	*mx = kw == 4 ? ((const uint32_t *) keys)[t] : ((const uint64_t *) keys)[t];
}

template <class KT>
static int
upload_impl(EytzGpuIndex *h, const void *keys, const uint64_t *pays, uint32_t flags,
			char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	uint64_t	n = h->n;
	uint64_t	pad = eytz_padded_slots(n, h->k, sizeof(KT));
	void	   *dk = NULL;
	uint64_t   *dp = NULL;

	CK(cudaMalloc(&dk, pad * sizeof(KT)));
	CK(cudaMalloc((void **) &dp, pad * 8));
	CK(cudaMemsetAsync(dk, 0, pad * sizeof(KT), h->st));
	CK(cudaMemsetAsync(dp, 0, pad * 8, h->st));
	if (n > 0)
	{
		CK(cudaMemcpyAsync(dk, keys, n * sizeof(KT), cudaMemcpyHostToDevice, h->st));
		CK(cudaMemcpyAsync(dp, pays, n * 8, cudaMemcpyHostToDevice, h->st));
	}
	host_minmax(keys, sizeof(KT), n, h->k, &h->minkey, &h->maxkey);
	{
		bool		pay_ok = true;

		for (uint64_t i = 0; i < n && pay_ok; i++)
			pay_ok = pays[i] != EYTZGPU_NO_MATCH;
		h->points_ok = pay_ok && points_ok_check<KT>(NULL, (const KT *) dk, NULL, n, h->k, h->st);
		h->code = join_code_of(pays, n);
	}
	rc = make_resident<KT>(h, flags, &dk, &dp, NULL, NULL, errbuf, errlen);
done:
	dfree(dk);
	dfree(dp);
	return rc;
}

extern "C" int
eytzgpu_upload(int device, const void *keys, const uint64_t *payloads, uint64_t n, int key_width,
			   uint32_t k, uint32_t flags, EytzGpuIndex **out, uint64_t *device_bytes,
			   char *errbuf, size_t errlen)
{
	EytzGpuIndex *h = NULL;
	int			rc;

	if (!out)
	{
		set_msg(errbuf, errlen, "eytzgpu: NULL handle pointer");
		return EYTZGPU_EINVAL;
	}
	*out = NULL;
	if ((rc = check_args(key_width, k, n, keys, payloads, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	if ((rc = use_device(device, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	if ((rc = new_handle(device, key_width, k, n, &h, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	rc = key_width == 4 ? upload_impl<uint32_t>(h, keys, payloads, flags, errbuf, errlen)
		: upload_impl<uint64_t>(h, keys, payloads, flags, errbuf, errlen);
	if (rc != EYTZGPU_OK)
	{
		eytzgpu_free(h);
		return rc;
	}
	if (device_bytes)
		*device_bytes = h->dev_bytes;
	*out = h;
	return EYTZGPU_OK;
}

template <class KT>
static int
build_impl(int device, const void *keys, const uint64_t *pays, uint64_t n, uint32_t k, uint32_t flags,
		   void *out_keys, uint64_t *out_pays, EytzGpuIndex **out, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	uint64_t	pad = eytz_padded_slots(n, k, sizeof(KT));
	KT		   *k0 = NULL,
			   *k1 = NULL;
	uint64_t   *p0 = NULL,
			   *p1 = NULL;
	void	   *temp = NULL;
	size_t		temp_bytes = 0;
	cudaStream_t st = NULL;
	EytzGpuIndex *h = NULL;

	if (out)
	{
		if ((rc = new_handle(device, sizeof(KT), k, n, &h, errbuf, errlen)) != EYTZGPU_OK)
			return rc;
		st = h->st;
	}
	else
		CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

	CK(cudaMalloc((void **) &k0, pad * sizeof(KT)));
	CK(cudaMalloc((void **) &p0, pad * 8));
	CK(cudaMalloc((void **) &k1, pad * sizeof(KT)));
	CK(cudaMalloc((void **) &p1, pad * 8));
	/* the padding past n is read (masked) by whole-node loads: define it */
	CK(cudaMemsetAsync(k0 + n, 0, (pad - n) * sizeof(KT), st));
	CK(cudaMemsetAsync(p0 + n, 0, (pad - n) * 8, st));
	CK(cudaMemsetAsync(k1 + n, 0, (pad - n) * sizeof(KT), st));
	CK(cudaMemsetAsync(p1 + n, 0, (pad - n) * 8, st));
	if (n > 0)
	{
		cub::DoubleBuffer<KT> dk(k0, k1);
		cub::DoubleBuffer<uint64_t> dp(p0, p1);
		KT		   *ek,
				   *sk;
		uint64_t   *ep,
				   *sp;

		CK(cudaMemcpyAsync(k0, keys, n * sizeof(KT), cudaMemcpyHostToDevice, st));
		CK(cudaMemcpyAsync(p0, pays, n * 8, cudaMemcpyHostToDevice, st));
		CK(cub::DeviceRadixSort::SortPairs(NULL, temp_bytes, dk, dp, (int) n, 0, (int) (8 * sizeof(KT)), st));
		CK(cudaMalloc(&temp, temp_bytes));
		CK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, dk, dp, (int) n, 0, (int) (8 * sizeof(KT)), st));
		sk = dk.Current();
		sp = dp.Current();
		ek = dk.Alternate();
		ep = dp.Alternate();
		k_permute<KT><<<grid1d(n), 256, 0, st>>>(make_perm_shape(n, k), sk, sp, ek, ep, NULL, 0, 0);
		CK(cudaGetLastError());
		if (out_keys)
			CK(cudaMemcpyAsync(out_keys, ek, n * sizeof(KT), cudaMemcpyDeviceToHost, st));
		if (out_pays)
			CK(cudaMemcpyAsync(out_pays, ep, n * 8, cudaMemcpyDeviceToHost, st));
		CK(cudaStreamSynchronize(st));
		if (h)
		{
			void	   *vek = ek;
			KT			mn,
						mx;

			CK(cudaMemcpy(&mn, sk, sizeof(KT), cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(&mx, sk + n - 1, sizeof(KT), cudaMemcpyDeviceToHost));
			h->minkey = mn;
			h->maxkey = mx;
			h->points_ok = points_ok_check<KT>(sk, NULL, sp, n, k, st);
			h->code = join_code_of(pays, n);
			uint64_t   *vep = ep;

			rc = make_resident<KT>(h, flags, &vek, &vep, sk, sp, errbuf, errlen);
			if (rc != EYTZGPU_OK)
				goto done;
			/* adopted buffers must not be freed below */
			if (vek == NULL)
			{
				if (ek == k0)
					k0 = NULL;
				else
					k1 = NULL;
				if (ep == p0)
					p0 = NULL;
				else
					p1 = NULL;
			}
		}
	}
	else if (h)
	{
		void	   *vek = k1;
		uint64_t   *vep = p1;

		rc = make_resident<KT>(h, flags, &vek, &vep, NULL, NULL, errbuf, errlen);
		if (rc != EYTZGPU_OK)
			goto done;
		if (vek == NULL)
			k1 = NULL;
		if (vep == NULL)
			p1 = NULL;
	}
	CK(cudaStreamSynchronize(st));
done:
	dfree(k0);
	dfree(k1);
	dfree(p0);
	dfree(p1);
	dfree(temp);
	if (!h && st)
		(void) cudaStreamDestroy(st);
	if (h)
	{
		if (rc != EYTZGPU_OK)
		{
			eytzgpu_free(h);
			h = NULL;
		}
		*out = h;
	}
	return rc;
}

extern "C" int
eytzgpu_build(int device, const void *keys, const uint64_t *payloads, uint64_t n, int key_width,
			  uint32_t k, uint32_t flags, void *out_keys, uint64_t *out_payloads,
			  EytzGpuIndex **out, uint64_t *device_bytes, char *errbuf, size_t errlen)
{
	int			rc;

	if (out)
		*out = NULL;
	if ((rc = check_args(key_width, k, n, keys, payloads, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	if ((rc = use_device(device, errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	rc = key_width == 4
		? build_impl<uint32_t>(device, keys, payloads, n, k, flags, out_keys, out_payloads, out, errbuf, errlen)
		: build_impl<uint64_t>(device, keys, payloads, n, k, flags, out_keys, out_payloads, out, errbuf, errlen);
	if (rc == EYTZGPU_OK && out && *out && device_bytes)
		*device_bytes = (*out)->dev_bytes;
	return rc;
}

