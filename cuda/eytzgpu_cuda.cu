/*
 * eytzgpu_cuda.cu
 *		The C API of eytzgpu_cuda.h: probe, upload, GPU build, batched CSR
 *		lookups with the composite strategy, free.
 *
 * Every CUDA call is checked and turned into an EYTZGPU_* code plus a message;
 * nothing aborts.  Device and pinned buffers of a handle are allocated on
 * first need and grown geometrically, so steady-state lookups allocate nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <time.h>

#include <cuda_runtime.h>

#include "eytzgpu_cuda.h"
#include "eytz_kernels.cuh"

using namespace eytzk;

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
	int			sms;
	uint64_t	l2;
	cudaStream_t st;
	cudaEvent_t ev[4];
	/* lookup workspace, grown geometrically */
	uint64_t	q_cap;			/* queries the device query buffers hold */
	void	   *d_lo,
			   *d_hi;
	uint64_t   *d_comp_a,		/* chunked global reordering; sorted points: tmp, pay2 */
			   *d_comp_b;
	uint32_t   *d_u32;			/* sorted points: iota, perm, perm2 (q_cap each) */
	bool		iota_ok;		/* d_u32 holds 0..q_cap-1 */
	bool		points_ok;		/* unique keys, no payload equal to EYTZGPU_NO_MATCH: point fast paths */
	uint64_t   *d_cnt,
			   *d_off,
			   *d_first;
	void	   *d_temp;
	size_t		temp_cap;
	uint64_t   *d_out;
	uint64_t	out_cap;
	void	   *h_q;			/* pinned staging of lo then hi */
	size_t		hq_cap;
	uint64_t   *h_off;
	uint64_t	hoff_cap;
	uint64_t   *h_pay;
	uint64_t	hpay_cap;
};

/* ---------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------- */

static void
set_msg(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list		ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

static int
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
static int
ck(cudaError_t e, const char *what, char *errbuf, size_t errlen)
{
	if (e == cudaSuccess)
		return EYTZGPU_OK;
	set_msg(errbuf, errlen, "eytzgpu: %s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
	/* clear a non-sticky error so the next call starts clean */
	(void) cudaGetLastError();
	return code_of(e);
}

#define CK(call) do { if ((rc = ck((call), #call, errbuf, errlen)) != EYTZGPU_OK) goto done; } while (0)

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

/* Keys of at most this many bytes also get a binary copy: EBS with pinning wins there */
static const uint64_t EBS_COPY_MAX_KEY_BYTES = 512 * 1024;

/* ---------------------------------------------------------------------------
 * Handle life cycle
 * ------------------------------------------------------------------------- */

static void
dfree(void *p)
{
	if (p)
		(void) cudaFree(p);
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
		if (h->h_q)
			(void) cudaFreeHost(h->h_q);
		if (h->h_off)
			(void) cudaFreeHost(h->h_off);
		if (h->h_pay)
			(void) cudaFreeHost(h->h_pay);
		for (i = 0; i < 4; i++)
			if (h->ev[i])
				(void) cudaEventDestroy(h->ev[i]);
		if (h->st)
			(void) cudaStreamDestroy(h->st);
		(void) cudaGetLastError();
	}
	free(h);
}

static int
new_handle(int device, int kw, uint32_t k, uint64_t n, EytzGpuIndex **out, char *errbuf, size_t errlen)
{
	EytzGpuIndex *h = (EytzGpuIndex *) calloc(1, sizeof(EytzGpuIndex));
	cudaDeviceProp prop;
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
	CK(cudaGetDeviceProperties(&prop, h->device));
	h->sms = prop.multiProcessorCount;
	h->l2 = (uint64_t) prop.l2CacheSize;
	CK(cudaStreamCreateWithFlags(&h->st, cudaStreamNonBlocking));
	for (i = 0; i < 4; i++)
		CK(cudaEventCreate(&h->ev[i]));
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

static unsigned
grid1d(uint64_t n)
{
	uint64_t	g = (n + 255) / 256;

	return (unsigned) (g < 1 ? 1 : g > 65535 * 8 ? 65535 * 8 : g);
}

/*
 * Point fast paths need unique keys (one match per point) and no payload
 * equal to EYTZGPU_NO_MATCH (their miss marker).  Checked once per handle,
 * on the sorted keys; a failure here only turns the fast paths off.
 */
template <class KT>
__global__ void
k_points_bad(const KT *sk, const uint64_t *sp, uint64_t n, unsigned *bad)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		if ((i + 1 < n && sk[i] == sk[i + 1]) || (sp && sp[i] == EYTZGPU_NO_MATCH))
			*bad = 1;
}

/* Eytzinger keys back to sorted order (keys only) */
template <class KT>
__global__ void
k_unpermute_keys(PermShape ps, const KT *ek, KT *sk)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t t = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; t < ps.n; t += stride)
		sk[fast_rank(ps, t)] = ek[t];
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

template <class KT>
static Idx<KT>
make_idx(const void *keys, const uint64_t *pays, const unsigned char *aos, uint64_t n, uint32_t k)
{
	Idx<KT>		ix;
	EytzShape	sh = eytz_shape(n, k);

	memset(&ix, 0, sizeof(ix));
	ix.keys = aos ? NULL : (const KT *) keys;
	ix.pays = aos ? NULL : pays;
	ix.aos = aos;
	ix.n = n;
	ix.k = k;
	ix.p = 0;
	while ((1u << ix.p) < k - 1)
		ix.p++;
	ix.levels = sh.levels;
	ix.tp = aos_tile_log2(k, sizeof(KT));
	ix.tile_bytes = (uint32_t) ((sizeof(KT) + 8) << ix.tp);
	return ix;
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
	bool		small = n * sizeof(KT) <= EBS_COPY_MAX_KEY_BYTES;
	KT		   *tk = NULL;
	uint64_t   *tp = NULL;

	/* SoA by default: keys-only lines keep more levels in L2 (measured, README) */
	if (want == 0)
		want = EYTZGPU_LAYOUT_SOA;
	h->layout = want;

	if (k != 2 && small && n > 0 && !(flags & EYTZGPU_NO_EBS_COPY))
	{
		/* composite strategy: a binary copy for cache-resident sizes */
		uint64_t	pad2 = padded_slots(n, 2, sizeof(KT));

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
		uint32_t	tpl = aos_tile_log2(k, sizeof(KT));
		uint32_t	tb = (uint32_t) ((sizeof(KT) + 8) << tpl);
		uint64_t	tiles = (padded_slots(n, k, sizeof(KT)) >> tpl);

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
		uint64_t	pad = padded_slots(n, k, sizeof(KT));

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
	uint64_t	pad = padded_slots(n, h->k, sizeof(KT));
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
	uint64_t	pad = padded_slots(n, k, sizeof(KT));
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

extern "C" void
eytzgpu_index_info(const EytzGpuIndex *h, uint64_t *n, int *key_width, uint32_t *k,
				   uint32_t *layout, uint64_t *device_bytes)
{
	if (!h)
		return;
	if (n)
		*n = h->n;
	if (key_width)
		*key_width = h->kw;
	if (k)
		*k = h->k;
	if (layout)
		*layout = h->layout;
	if (device_bytes)
		*device_bytes = h->dev_bytes;
}

/* ---------------------------------------------------------------------------
 * Lookups
 * ------------------------------------------------------------------------- */

/* Grow a device (pinned = false) or pinned host buffer to at least need bytes */
static cudaError_t
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

/* Per-query device buffers: all sized for q_cap queries together */
static int
ensure_queries(EytzGpuIndex *h, uint64_t nq, int kw, bool need_sort, char *errbuf, size_t errlen)
{
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
	CK(cub::DeviceScan::ExclusiveSum(NULL, tb, (uint64_t *) NULL, (uint64_t *) NULL, (int) (h->q_cap + 1)));
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

/* Cheap look at the batch on the host: sorted?  skewed?  (composite strategy) */
template <class KT>
static void
sample_batch(const KT *lo, uint64_t nq, bool *sorted, bool *skewed)
{
	const int	S = 256;
	KT			v[S];
	int			asc = 0,
				distinct = 1,
				i;
	uint64_t	x = 0x9E3779B97F4A7C15ull;

	*sorted = false;
	*skewed = false;
	if (nq < 4096)
		return;
	for (i = 0; i < S; i++)
	{
		uint64_t	j = (nq - 1) * (uint64_t) i / S;

		asc += lo[j] <= lo[j + 1];
	}
	*sorted = asc >= S * 15 / 16;
	for (i = 0; i < S; i++)
	{
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v[i] = lo[x % nq];
	}
	/* tiny insertion sort, then count distinct sampled keys */
	for (i = 1; i < S; i++)
	{
		KT			t = v[i];
		int			j = i - 1;

		while (j >= 0 && v[j] > t)
		{
			v[j + 1] = v[j];
			j--;
		}
		v[j + 1] = t;
	}
	for (i = 1; i < S; i++)
		distinct += v[i] != v[i - 1];
	*skewed = distinct < S * 3 / 4;
}

/*
 * Do the sampled ranges hold many matches each?  Expected hits of [lo, hi]
 * is its width times the index's key density; from 32 hits on, group scans
 * with coalesced loads win (section 5.1, measured in cuda/README.md).
 */
template <class KT>
static bool
wide_ranges(const KT *lo, const KT *hi, uint64_t nq, KT mn, KT mx, uint64_t n)
{
	const int	S = 64;
	int			wide = 0,
				i;
	double		density = n / ((double) mx - (double) mn + 1.0);

	if (nq == 0 || n == 0)
		return false;
	for (i = 0; i < S; i++)
	{
		uint64_t	j = (nq - 1) * (uint64_t) i / S;
		double		w = hi[j] >= lo[j] ? (double) hi[j] - (double) lo[j] + 1.0 : 0.0;

		wide += w * density >= 32.0;
	}
	return wide * 2 > S;
}

/* Tuned on the H100 (cuda/README.md): shared memory for pinned top levels */
static const uint32_t PIN_BYTES_SMALL = 200 * 1024;	/* whole (or nearly whole) index */
static const uint32_t PIN_BYTES_LARGE = 16 * 1024;
/* chunked global reordering: 2^21 lookups a chunk, sorted on 16 key bits */
static const Reorder REORDER_CHUNKS = {21, 16};
/*
 * Point fast paths (unique keys; measured on the H100, README): the whole
 * index in shared memory with SMEM_Q lookups per thread; globally sorted
 * lookups (sort on GSORT_KEY_BITS key bits, partition on GSORT_SCATTER_BITS
 * query-id bits) for indexes of at least GSORT_MIN_KEY_BYTES of keys and
 * batches of at least GSORT_MIN_BATCH.
 */
static const int SMEM_Q = 4;
static const int GSORT_KEY_BITS = 16;
static const int GSORT_SCATTER_BITS = -2;	/* lookups partition, cluster tile write (README) */
static const uint64_t GSORT_MIN_KEY_BYTES = 32ull << 20;	/* won from 2^23 32-bit keys (README) */
static const uint64_t GSORT_MIN_BATCH = 1u << 20;

/* CSR of point results (one match at most each): counts, then the fill */
__global__ void
k_point_counts(const uint64_t *first, uint64_t nq, uint64_t *cnt)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nq; i += stride)
		cnt[i] = first[i] != EYTZGPU_NO_MATCH;
}

__global__ void
k_point_fill(const uint64_t *first, const uint64_t *off, uint64_t nq, uint64_t *out)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;

	for (uint64_t i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < nq; i += stride)
		if (first[i] != EYTZGPU_NO_MATCH)
			out[off[i]] = first[i];
}

template <class KT>
static int
lookup_impl(EytzGpuIndex *h, const KT *lo, const KT *hi, uint64_t nq, uint32_t flags,
			EytzGpuResult *res, char *errbuf, size_t errlen)
{
	int			rc = EYTZGPU_OK;
	uint32_t	strat = flags & EYTZGPU_STRAT_MASK;
	uint32_t	reord = flags & EYTZGPU_REORDER_MASK;
	uint32_t	pin = flags & EYTZGPU_PIN_MASK;
	bool		all_auto = (flags & (EYTZGPU_STRAT_MASK | EYTZGPU_REORDER_MASK | EYTZGPU_PIN_MASK)) == 0;
	int			ppath = 0;		/* point fast path: 1 = shared memory, 2 = globally sorted */
	Idx<KT>		ixm;
	bool		tiny = h->n * sizeof(KT) <= EBS_COPY_MAX_KEY_BYTES;
	bool		have_ebs = h->k == 2 || h->d_ebs_keys;
	uint64_t	pad_bytes = padded_slots(h->n, h->k, sizeof(KT)) * sizeof(KT);
	Idx<KT>		ix;
	Qs<KT>		q;
	Outs		o;
	Cfg			cfg;
	uint64_t	total = 0;
	float		ms1 = 0,
				ms2 = 0;
	struct timespec t0,
				t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* composite strategy */
	if (strat == EYTZGPU_STRAT_AUTO)
	{
		bool		sorted,
					skewed;

		sample_batch(lo, nq, &sorted, &skewed);
		(void) sorted;
		(void) skewed;
		/*
		 * Measured on the H100 (README): groups win ranges of 32+ expected
		 * hits; EBS with its top levels pinned in shared memory wins tiny
		 * indexes; above that one thread per lookup with 16-byte node loads
		 * (EKS single) wins at every size, skew and order.  Reordering never
		 * paid off there, so the sorted/skewed detection changes nothing.
		 */
		if (hi && wide_ranges(lo, hi, nq, (KT) h->minkey, (KT) h->maxkey, h->n) && h->k > 2)
			strat = EYTZGPU_STRAT_GROUP;
		else if (tiny && have_ebs)
			strat = EYTZGPU_STRAT_EBS;
		else
			strat = EYTZGPU_STRAT_SINGLE;
	}
	/*
	 * Point batches on unique keys: the fast paths (README) where they won on
	 * the H100; an explicit global reordering of such points also takes the
	 * sorted path (the chunked one stays for ranges and duplicate keys).
	 */
	ixm = make_idx<KT>(h->d_keys, h->d_pays, h->d_aos, h->n, h->k);
	if (!hi && h->points_ok && nq > 0)
	{
		/* the binary copy (EBS) beat EKS in shared memory (README) */
		if (h->k != 2 && h->d_ebs_keys)
		{
			Idx<KT>		ixe = make_idx<KT>(h->d_ebs_keys, h->d_ebs_pays, NULL, h->n, 2);

			if (smem_point_fits(ixe))
				ixm = ixe;
		}
		if (all_auto && smem_point_fits(ixm))
			ppath = 1;
		else if (all_auto && h->n * sizeof(KT) >= GSORT_MIN_KEY_BYTES && nq >= GSORT_MIN_BATCH)
			ppath = 2;
		else if (reord == EYTZGPU_REORDER_GLOBAL && strat != EYTZGPU_STRAT_GROUP)
			ppath = 2;
		if (ppath && all_auto)
		{
			strat = EYTZGPU_STRAT_SINGLE;
			reord = ppath == 2 ? EYTZGPU_REORDER_GLOBAL : EYTZGPU_REORDER_NONE;
			pin = ppath == 2 ? EYTZGPU_PIN_OFF : EYTZGPU_PIN_ON;
		}
	}
	if (strat == EYTZGPU_STRAT_EBS && h->k != 2 && !h->d_ebs_keys)
		strat = EYTZGPU_STRAT_SINGLE;
	if (strat == EYTZGPU_STRAT_GROUP && h->k == 2)
		strat = EYTZGPU_STRAT_SINGLE;
	if (reord == EYTZGPU_REORDER_AUTO)
		reord = EYTZGPU_REORDER_NONE;
	if (pin == EYTZGPU_PIN_AUTO)
		pin = strat == EYTZGPU_STRAT_GROUP ? EYTZGPU_PIN_OFF : EYTZGPU_PIN_ON;

	if (strat == EYTZGPU_STRAT_EBS && h->k != 2)
		ix = make_idx<KT>(h->d_ebs_keys, h->d_ebs_pays, NULL, h->n, 2);
	else
		ix = make_idx<KT>(h->d_keys, h->d_pays, h->d_aos, h->n, h->k);
	memset(&cfg, 0, sizeof(cfg));
	cfg.algo = strat == EYTZGPU_STRAT_GROUP ? ALGO_GROUP : ALGO_SINGLE;
	cfg.lsort = reord == EYTZGPU_REORDER_LOCAL;
	/* a big pinned copy means one block per SM: worth it only for (nearly) the whole index */
	cfg.pin_bytes = 0;
	if (pin == EYTZGPU_PIN_ON)
		cfg.pin_bytes = strat == EYTZGPU_STRAT_EBS || pad_bytes <= PIN_BYTES_SMALL ? PIN_BYTES_SMALL
			: PIN_BYTES_LARGE;
	cfg.blocks_per_sm = 0;

	if ((rc = ensure_queries(h, nq, sizeof(KT), reord == EYTZGPU_REORDER_GLOBAL, errbuf, errlen)) != EYTZGPU_OK)
		goto done;
	CK(grow((void **) &h->h_off, (size_t *) &h->hoff_cap, (nq + 1) * 8, true));
	CK(grow(&h->h_q, &h->hq_cap, nq * sizeof(KT) * (hi ? 2 : 1) + 8, true));
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
	q.lo = (const KT *) h->d_lo;
	q.hi = hi ? (const KT *) h->d_hi : NULL;
	q.perm = NULL;
	q.nq = nq;
	q.comp = NULL;
	q.logc = q.cshift = 0;

	CK(cudaEventRecord(h->ev[0], h->st));
	if (flags & EYTZGPU_POISON)
	{
		CK(cudaMemsetAsync(h->d_cnt, 0xFF, (nq + 1) * 8, h->st));
		CK(cudaMemsetAsync(h->d_off, 0xFF, (nq + 1) * 8, h->st));
		CK(cudaMemsetAsync(h->d_first, 0xFF, nq * 8, h->st));
	}
	if (ppath == 1)
	{
		/* one payload (or NO_MATCH) per point into d_first, then counts */
		CK(launch_point_smem<KT>(ixm, q.lo, nq, h->d_first, SMEM_Q, 0, h->st));
		k_point_counts<<<grid1d(nq), 256, 0, h->st>>>(h->d_first, nq, h->d_cnt);
		CK(cudaGetLastError());
	}
	else if (ppath == 2)
	{
		SortedWork<KT> w;

		w.skeys = (KT *) h->d_hi;	/* unused by points */
		w.iota = h->d_u32;
		w.perm = h->d_u32 + h->q_cap;
		w.perm2 = h->d_u32 + 2 * h->q_cap;
		w.tmp = h->d_comp_a;
		w.pay2 = h->d_comp_b;
		w.temp = h->d_temp;
		w.temp_bytes = h->temp_cap;
		if (!h->iota_ok)
		{
			/* ids 0..q_cap-1, made once per buffer size */
			k_iota<<<grid1d(h->q_cap), 256, 0, h->st>>>(w.iota, h->q_cap);
			CK(cudaGetLastError());
			h->iota_ok = true;
		}
		CK((sorted_point<KT, false>(ix, q.lo, nq, h->d_first, cfg, (KT) h->minkey, (KT) h->maxkey,
									GSORT_KEY_BITS, GSORT_SCATTER_BITS, w, true, h->st)));
		k_point_counts<<<grid1d(nq), 256, 0, h->st>>>(h->d_first, nq, h->d_cnt);
		CK(cudaGetLastError());
	}
	else
	{
		if (reord == EYTZGPU_REORDER_GLOBAL && nq > 0)
			CK(reorder_chunked<KT>(q, (KT) h->minkey, (KT) h->maxkey, REORDER_CHUNKS, h->d_comp_a, h->d_comp_b,
								   h->d_temp, h->temp_cap, h->st));
		o.pay = NULL;
		o.counts = h->d_cnt;
		o.first = h->d_first;
		CK((launch_lookup<KT, MODE_COUNT>(ix, q, o, cfg, h->st)));
	}
	CK(cudaMemsetAsync(h->d_cnt + nq, 0, 8, h->st));
	{
		size_t		tb = h->temp_cap;

		CK(cub::DeviceScan::ExclusiveSum(h->d_temp, tb, h->d_cnt, h->d_off, (int) (nq + 1), h->st));
	}
	CK(cudaEventRecord(h->ev[1], h->st));
	CK(cudaMemcpyAsync(h->h_off + nq, h->d_off + nq, 8, cudaMemcpyDeviceToHost, h->st));
	CK(cudaStreamSynchronize(h->st));
	total = h->h_off[nq];
	if (total > 0)
	{
		CK(grow((void **) &h->d_out, (size_t *) &h->out_cap, total * 8, false));
		CK(grow((void **) &h->h_pay, (size_t *) &h->hpay_cap, total * 8, true));
	}
	CK(cudaEventRecord(h->ev[2], h->st));
	if (total > 0)
	{
		if (flags & EYTZGPU_POISON)
			CK(cudaMemsetAsync(h->d_out, 0xFF, total * 8, h->st));
		o.pay = h->d_out;
		o.counts = h->d_off;
		o.first = h->d_first;
		if (ppath)
		{
			k_point_fill<<<grid1d(nq), 256, 0, h->st>>>(h->d_first, h->d_off, nq, h->d_out);
			CK(cudaGetLastError());
		}
		else
			CK((launch_lookup<KT, MODE_FILL>(ix, q, o, cfg, h->st)));
	}
	CK(cudaEventRecord(h->ev[3], h->st));
	CK(cudaMemcpyAsync(h->h_off, h->d_off, (nq + 1) * 8, cudaMemcpyDeviceToHost, h->st));
	if (total > 0)
		CK(cudaMemcpyAsync(h->h_pay, h->d_out, total * 8, cudaMemcpyDeviceToHost, h->st));
	CK(cudaStreamSynchronize(h->st));
	CK(cudaEventElapsedTime(&ms1, h->ev[0], h->ev[1]));
	CK(cudaEventElapsedTime(&ms2, h->ev[2], h->ev[3]));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (res)
	{
		res->offsets = h->h_off;
		res->payloads = h->h_pay;
		res->total = total;
		res->strategy = strat | reord | pin;
		res->kernel_ms = ms1 + ms2;
		res->total_ms = (float) ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
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
	if (nq >= ((uint64_t) 1 << 31))
	{
		set_msg(errbuf, errlen, "eytzgpu: batch of %llu lookups is too large (limit 2^31-1)",
				(unsigned long long) nq);
		return EYTZGPU_EINVAL;
	}
	if ((rc = ck(cudaSetDevice(h->device), "cudaSetDevice", errbuf, errlen)) != EYTZGPU_OK)
		return rc;
	if (h->kw == 4)
		return lookup_impl<uint32_t>(h, (const uint32_t *) lo, (const uint32_t *) hi, nq, flags, res, errbuf, errlen);
	return lookup_impl<uint64_t>(h, (const uint64_t *) lo, (const uint64_t *) hi, nq, flags, res, errbuf, errlen);
}
