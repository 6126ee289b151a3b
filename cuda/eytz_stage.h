/*
 * eytz_stage.h
 *		Host copies of a join batch's inputs into pinned memory (the library's
 *		staging in eytzgpu_join.cu, measured by bench/stage_probe.cu) with
 *		streaming stores: the pinned buffers are only read again by the GPU's
 *		DMA, so the stores bypass the caches and the cache lines are not read
 *		first (with ordinary stores every line written is also read: for a
 *		4-byte index 12 bytes a query read, 8 written, 8 read for ownership).
 *		Call eytz_stage_fence() before the copied bytes are handed to a
 *		transfer or to another thread: streaming stores are weakly ordered.
 */
#ifndef EYTZ_STAGE_H
#define EYTZ_STAGE_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The low 4 bytes of m keys */
static inline void
eytz_stage_narrow(uint32_t *out, const uint64_t *in, uint64_t m)
{
	uint64_t	i = 0;

#if defined(__SSE2__)
	/* up to a 16-byte boundary of out, then 4 keys a store */
	for (; i < m && ((uintptr_t) (out + i) & 15) != 0; i++)
		out[i] = (uint32_t) in[i];
	for (; i + 4 <= m; i += 4)
	{
		__m128		a = _mm_castsi128_ps(_mm_loadu_si128((const __m128i *) (in + i)));
		__m128		b = _mm_castsi128_ps(_mm_loadu_si128((const __m128i *) (in + i + 2)));

		/* the low halves of the four 64-bit keys (little-endian lanes 0 and 2) */
		_mm_stream_si128((__m128i *) (out + i), _mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))));
	}
#endif
	for (; i < m; i++)
		out[i] = (uint32_t) in[i];
}

/* bytes from in to out (4-byte multiples: keys and rows) */
static inline void
eytz_stage_copy(void *out, const void *in, size_t bytes)
{
	char	   *o = (char *) out;
	const char *s = (const char *) in;
	size_t		i = 0;

#if defined(__SSE2__)
	size_t		head = (16 - ((uintptr_t) o & 15)) & 15;

	if (head > bytes)
		head = bytes;
	memcpy(o, s, head);
	for (i = head; i + 16 <= bytes; i += 16)
		_mm_stream_si128((__m128i *) (o + i), _mm_loadu_si128((const __m128i *) (s + i)));
#endif
	memcpy(o + i, s + i, bytes - i);
}

/* The streaming stores before this are visible to the DMA and other threads */
static inline void
eytz_stage_fence(void)
{
#if defined(__SSE2__)
	_mm_sfence();
#endif
}

#endif							/* EYTZ_STAGE_H */
