/*
 * eytz_kernels.cuh
 *		Everything of the GPU side below the C API, for the tests and the
 *		benchmark, which call the same kernels and pipelines as the library:
 *		primitives (eytz_prim.cuh), kernels by family (eytz_range.cuh,
 *		eytz_point.cuh, eytz_build.cuh, eytz_reorder.cuh) and the dispatch
 *		layer (eytz_dispatch.cuh, eytz_sorted.cuh, eytz_join.cuh).
 */
#ifndef EYTZ_KERNELS_CUH
#define EYTZ_KERNELS_CUH

#include "eytz_build.cuh"
#include "eytz_sorted.cuh"
#include "eytz_join.cuh"

#endif							/* EYTZ_KERNELS_CUH */
