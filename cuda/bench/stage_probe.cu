/*
 * stage_probe.cu
 *		How fast can 2^25 join queries (64-bit keys, 32-bit rows) get from a
 *		caller's pageable arrays to the GPU?  Host copy bandwidth by thread
 *		count (plain, narrowing to 32-bit keys, narrowing with the library's
 *		streaming stores), pageable and registered transfers, and chunked
 *		copy+transfer pipelines.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <sys/mman.h>
#include <atomic>
#include <thread>
#include <vector>
#include <algorithm>

#include "../eytz_stage.h"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static const uint64_t NQ = 1ull << 25;

/* How a copy runs: plain memcpy, keys narrowed, narrowed with streaming stores (eytz_stage.h) */
enum
{
	PLAIN,
	NARROW,
	NARROW_NT
};
static const char *const mode_name[] = {"plain ", "narrow", "narrow streaming"};

/* copy [a, b) of lo/rows into pinned, narrowing keys unless PLAIN */
static void
copy_range(const uint64_t *lo, const uint32_t *rows, void *plo, uint32_t *prows, uint64_t a, uint64_t b, int nar)
{
	if (nar == NARROW_NT)
	{
		eytz_stage_narrow((uint32_t *) plo + a, lo + a, b - a);
		eytz_stage_copy(prows + a, rows + a, (b - a) * 4);
		eytz_stage_fence();
		return;
	}
	if (nar == NARROW)
	{
		uint32_t   *d = (uint32_t *) plo;

		for (uint64_t i = a; i < b; i++)
			d[i] = (uint32_t) lo[i];
	}
	else
		memcpy((uint64_t *) plo + a, lo + a, (b - a) * 8);
	memcpy(prows + a, rows + a, (b - a) * 4);
}

/* T threads, contiguous slices, no transfer */
static double
host_copy(const uint64_t *lo, const uint32_t *rows, void *plo, uint32_t *prows, int T, int nar)
{
	double		t0 = now_ms();
	std::vector<std::thread> w;

	for (int t = 0; t < T; t++)
		w.emplace_back([=] {
			copy_range(lo, rows, plo, prows, NQ * t / T, NQ * (t + 1) / T, nar);
		});
	for (auto &x : w)
		x.join();
	return now_ms() - t0;
}

/* chunked pipeline: T threads copy chunks (round robin), main thread queues each chunk's H2D when done */
static double
pipeline(const uint64_t *lo, const uint32_t *rows, void *plo, uint32_t *prows, void *dlo, uint32_t *drows,
		 int T, uint64_t chunk, int nar, cudaStream_t st)
{
	uint64_t	nch = NQ / chunk;
	std::vector<std::atomic<int>> done(nch);
	std::vector<std::thread> w;
	size_t		kb = nar != PLAIN ? 4 : 8;
	double		t0 = now_ms();

	for (auto &d : done)
		d.store(0);
	for (int t = 0; t < T; t++)
		w.emplace_back([&, t] {
			for (uint64_t c = t; c < nch; c += T)
			{
				copy_range(lo, rows, plo, prows, c * chunk, (c + 1) * chunk, nar);
				done[c].store(1, std::memory_order_release);
			}
		});
	for (uint64_t c = 0; c < nch; c++)
	{
		while (!done[c].load(std::memory_order_acquire))
			std::this_thread::yield();
		CK(cudaMemcpyAsync((char *) dlo + c * chunk * kb, (char *) plo + c * chunk * kb, chunk * kb,
						   cudaMemcpyHostToDevice, st));
		CK(cudaMemcpyAsync(drows + c * chunk, prows + c * chunk, chunk * 4, cudaMemcpyHostToDevice, st));
	}
	for (auto &x : w)
		x.join();
	CK(cudaStreamSynchronize(st));
	return now_ms() - t0;
}

/* Two copies on st, timed together */
static void
two_copies(const char *what, void *d1, const void *s1, size_t b1, void *d2, const void *s2, size_t b2,
		   cudaMemcpyKind kind, cudaStream_t st)
{
	double		t = now_ms();

	CK(cudaMemcpyAsync(d1, s1, b1, kind, st));
	CK(cudaMemcpyAsync(d2, s2, b2, kind, st));
	CK(cudaStreamSynchronize(st));
	printf("%s: %.2f ms\n", what, now_ms() - t);
}

int
main(void)
{
	uint64_t   *lo = (uint64_t *) malloc(NQ * 8);
	uint32_t   *rows = (uint32_t *) malloc(NQ * 4);
	void	   *plo;
	uint32_t   *prows;
	void	   *dlo;
	uint32_t   *drows;
	void	   *pout;
	cudaStream_t st;
	double		t;
	int			threads[] = {1, 2, 4, 8, 12, 15, 16};

	printf("hardware_concurrency %u\n", std::thread::hardware_concurrency());
	CK(cudaFree(0));
	CK(cudaStreamCreate(&st));
	for (uint64_t i = 0; i < NQ; i++)
	{
		lo[i] = (i * 0x9E3779B97F4A7C15ull) >> 32;
		rows[i] = (uint32_t) i;
	}
	CK(cudaMallocHost(&plo, NQ * 8));
	CK(cudaMallocHost(&prows, NQ * 4));
	CK(cudaMallocHost(&pout, NQ * 12));
	CK(cudaMalloc(&dlo, NQ * 8));
	CK(cudaMalloc((void **) &drows, NQ * 4));
	memset(plo, 1, NQ * 8);
	memset(prows, 1, NQ * 4);
	memset(pout, 1, NQ * 12);

	for (int rep = 0; rep < 2; rep++)
	{
		two_copies("h2d pinned 12 B/q", dlo, plo, NQ * 8, drows, prows, NQ * 4, cudaMemcpyHostToDevice, st);
		two_copies("h2d pinned 8 B/q", dlo, plo, NQ * 4, drows, prows, NQ * 4, cudaMemcpyHostToDevice, st);
		two_copies("d2h pinned 12 B/q", pout, dlo, NQ * 8, (char *) pout + NQ * 8, drows, NQ * 4,
				   cudaMemcpyDeviceToHost, st);
		two_copies("h2d pageable 12 B/q (driver staging)", dlo, lo, NQ * 8, drows, rows, NQ * 4,
				   cudaMemcpyHostToDevice, st);
	}
	for (int T : threads)
		for (int nar = PLAIN; nar <= NARROW_NT; nar++)
		{
			double		best = 1e9;

			for (int r = 0; r < 3; r++)
				best = std::min(best, host_copy(lo, rows, plo, prows, T, nar));
			printf("host copy T=%2d %s: %.2f ms (%.1f GB/s read)\n", T, mode_name[nar], best,
				   NQ * 12 / best / 1e6);
		}
	for (int T : {4, 8, 12, 15})
		for (uint64_t chunk : {1ull << 16, 1ull << 18, 1ull << 20})
			for (int nar = PLAIN; nar <= NARROW_NT; nar++)
			{
				double		best = 1e9;

				for (int r = 0; r < 3; r++)
					best = std::min(best, pipeline(lo, rows, plo, prows, dlo, drows, T, chunk, nar, st));
				printf("pipeline T=%2d chunk 2^%d %s: %.2f ms\n", T, __builtin_ctzll(chunk), mode_name[nar],
					   best);
			}
	for (int r = 0; r < 3; r++)
	{
		double		t1,
					t2,
					t3;

		t = now_ms();
		CK(cudaHostRegister(lo, NQ * 8, cudaHostRegisterDefault));
		CK(cudaHostRegister(rows, NQ * 4, cudaHostRegisterDefault));
		t1 = now_ms();
		CK(cudaMemcpyAsync(dlo, lo, NQ * 8, cudaMemcpyHostToDevice, st));
		CK(cudaMemcpyAsync(drows, rows, NQ * 4, cudaMemcpyHostToDevice, st));
		CK(cudaStreamSynchronize(st));
		t2 = now_ms();
		CK(cudaHostUnregister(lo));
		CK(cudaHostUnregister(rows));
		t3 = now_ms();
		printf("register %.2f ms, h2d registered %.2f ms, unregister %.2f ms\n", t1 - t, t2 - t1, t3 - t2);
	}
	/* hugepage-advised source: does a THP source copy faster? */
	{
		uint64_t   *lo2 = NULL;

		if (posix_memalign((void **) &lo2, 2 << 20, NQ * 8) == 0)
		{
			madvise(lo2, NQ * 8, MADV_HUGEPAGE);
			memcpy(lo2, lo, NQ * 8);
			for (int T : {8, 15})
			{
				double		best = 1e9;

				for (int r = 0; r < 3; r++)
					best = std::min(best, host_copy(lo2, rows, plo, prows, T, NARROW));
				printf("host copy THP source T=%2d narrow: %.2f ms\n", T, best);
			}
			free(lo2);
		}
	}
	return 0;
}
