/*
 * eytzservicecopies.h
 *		The service worker's resident copies (eytzservicecopies.c) and the
 *		lookups on them (eytzservicelookup.c), for its main loop
 *		(eytzservicemain.c): the requests that load a layout and look
 *		batches up, and the state of the devices the copies live on.
 *		Shared by those three files only.
 */
#ifndef EYTZSERVICECOPIES_H
#define EYTZSERVICECOPIES_H

#include "eytzgpucopy.h"
#include "eytzimage.h"
#include "eytzservice.h"

/*
 * One key range of a copy too large for any one device: its own layout of
 * the entries whose keys lie in [minkey, maxkey], on its own device
 */
typedef struct SvcSlice
{
	int			device;
	uint64		minkey;			/* encoded keys of its first and last entry */
	uint64		maxkey;
	EytzImage	image;			/* CPU: the slice's layout, included columns */
	EytzGpuCopy gpu;			/* GPU: the slice on its device */
	bool		in_flight;		/* GPU: a batch submitted, not waited for */
} SvcSlice;

/* The worker's side of resident copy r: whole on one device, or in slices */
typedef struct SvcCopy
{
	EytzImage	image;			/* CPU: the layout and included columns (sliced:
								 * the included columns' description only) */
	EytzGpuCopy gpu;			/* GPU: the copy on its device */
	bool		in_flight;		/* GPU: a batch submitted, not waited for */
	int			nslices;		/* 0: whole */
	SvcSlice   *slices;		/* in key order, in eytz_svc_copies_cxt */
} SvcCopy;

extern SvcCopy eytz_svc_copies[EYTZ_SVC_MAX_RESIDENT];
extern MemoryContext eytz_svc_copies_cxt;

/*
 * A GPU failure on device as s->why-sized why (naming the GPU when there
 * are several); a failure other than memory marks the device broken.
 * Returns false.
 */
extern bool eytz_svc_gpu_failed(char *why, int device,
								const EytzGpuFailure *failure);

/* At the worker's start: the copies' memory lives in cxt */
extern void eytz_svc_copies_init(MemoryContext cxt);

/* The GPUs this process sees, their names into devices (at most max) */
extern int	eytz_svc_gpu_devices(EytzSvcDevice *devices, int max);

/* The requests of slot i (s), window its shared memory */
extern EytzSvcStatus eytz_svc_load_begin(int i, EytzSvcSlot *s);
extern EytzSvcStatus eytz_svc_load_data(int i, EytzSvcSlot *s, const char *window);
extern EytzSvcStatus eytz_svc_load_column(int i, EytzSvcSlot *s, const char *window);
extern EytzSvcStatus eytz_svc_load_end(int i, EytzSvcSlot *s);

/*
 * A lookup: answered at once on a CPU device, submitted on a GPU to the
 * copy *in_flight, its answer then taken by eytz_svc_lookup_finish(i, r),
 * which waits unless eytz_svc_lookup_ready(r)
 */
extern EytzSvcStatus eytz_svc_lookup(EytzSvcSlot *s, char *window, int *in_flight);
extern EytzSvcStatus eytz_svc_lookup_finish(int i, int r);
/* Has copy r's GPU finished the lookup in flight (or failed it)? */
extern bool eytz_svc_lookup_ready(int r);

/* An upload through slot i whose slot was freed or claimed again */
extern bool eytz_svc_load_orphaned(int i);
/* Drop those uploads */
extern void eytz_svc_drop_orphan_loads(void);
/* Bytes slot i's upload counts against its device (0: none) */
extern uint64 eytz_svc_load_reserved(int i);

/* Evict from device d until its copies fit eytzgpu.gpu_memory_limit (reloaded) */
extern void eytz_svc_evict_to_limit(int d);

/* Did GPU d fail other than for want of memory (not yet dropped)? */
extern bool eytz_svc_device_broken(int d);
/* Stop using GPU d (see eytzservicecopies.c); may end the process */
extern void eytz_svc_device_failed(int d);

#endif							/* EYTZSERVICECOPIES_H */
