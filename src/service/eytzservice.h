/*
 * eytzservice.h
 *		The eytzgpu service (issue 11): with shared_preload_libraries =
 *		'eytzgpu', one background worker holds the device and one resident
 *		copy per (index, generation) for all backends, which send it lookup
 *		batches through shared memory and get join-shaped answers back.
 *
 * eytzservice.c: the GUCs, the shared memory, the worker's registration,
 * the backend's side (the eytz_service_* calls of the lookup seam).
 * eytzservicestatus.c: the status functions.  eytzservicemain.c and
 * eytzservicecopies.c: the worker.  The second half of this header is
 * shared by the service's files only.
 *
 * The protocol: a scan claims a slot (a window of shared memory of
 * eytzgpu.service_slot_buffer bytes) for its whole length, and through it
 * pins the resident copy of the generation it read from the metapage, or
 * streams that generation's layout (read by the backend from its own pages,
 * under its own snapshot) to the worker.  Each lookup is a request in the
 * window: keys in, matches out; the backend waits on its latch.  The worker
 * answers only for the generation the slot pinned, and a copy pinned by a
 * live slot is never evicted.  A scan that ends (or fails) frees its slot;
 * the worker frees those of backends that are gone.  When the worker stops,
 * waiting backends see it and continue on their CPU path.
 *
 * A worker that is there but makes no progress (a hung GPU call, a stopped
 * process) is told apart from a busy one by its progress mark: a time the
 * worker moves on at every request it takes (to the time that request's
 * size allows) and finishes, and at every turn of its loop.  A backend
 * whose request saw neither an answer nor the mark move for
 * eytzgpu.service_timeout gives its slot up (the worker frees it, and drops
 * a late answer, once it runs again) and continues on the CPU; until the
 * mark moves, new scans do not ask the service.
 */
#ifndef EYTZSERVICE_H
#define EYTZSERVICE_H

#include "eytzam.h"
#include "eytzinclude.h"
#include "eytzmatchsort.h"

/* eytzgpu.service_device */
#define EYTZ_SERVICE_OFF	0
#define EYTZ_SERVICE_AUTO	1
#define EYTZ_SERVICE_GPU	2
#define EYTZ_SERVICE_CPU	3

/*
 * The GUCs (eytzgpu.service_device, _slots, _slot_buffer in kB, _timeout
 * in ms)
 */
extern int	eytz_service_device;
extern int	eytz_service_slots;
extern int	eytz_service_slot_kb;
extern int	eytz_service_timeout_ms;
extern int	eytz_service_cpu_devices;

/* _PG_init's call: the GUCs, and under shared_preload_libraries the worker */
extern void eytz_service_init(void);

/*
 * Does the service answer this backend's GPU lookups (so the backend must
 * not open a CUDA context of its own)?  True when it was preloaded and is
 * not asleep for want of a GPU, also while it restarts.
 */
extern bool eytz_service_owns_gpu(void);

/* Is it answering now?  false with *why (if not NULL) */
extern bool eytz_service_ready(char **why);

/* Is the generation meta names of index resident in the service? */
extern bool eytz_service_resident(Relation index, const EytzMetaPageData *meta);

typedef struct EytzServiceView EytzServiceView;

/*
 * A slot pinning the generation meta names (read in this transaction,
 * index open): resident already, or streamed to the service now.  NULL
 * with *why when the service cannot take it.  The view is allocated in
 * CurrentMemoryContext.
 */
extern EytzServiceView *eytz_service_pin(Relation index,
										 const EytzMetaPageData *meta,
										 char **why);

/*
 * What answers through the view: "gpu (service)" or "cpu (service)"; with
 * several devices "gpu N (service)" (the device of its copy), or "gpu
 * (service, in slices)" for a copy in key-range slices on several.  Valid
 * while the view is.
 */
extern const char *eytz_service_device_name(const EytzServiceView *v);

/*
 * eytz_device_lookup_start/finish's contract (eytzdevice.h) through the
 * service: eytz_service_lookup_start copies the request into the slot's
 * window and posts it (first < nq), and the caller may go on while the
 * service answers; eytz_service_lookup_finish waits for the answer: the
 * matches of the longest prefix of queries first..nq-1 that fits in max
 * (and in the slot's window), sorted by (tid, row), tombstones dropped,
 * into out; with a stage (else NULL), each match's key and asked-for
 * included values at stage positions stage_from + j (the match's "unused"
 * says which j).  false with *why when the service failed or stopped:
 * nothing returned.  One request at a time per view:
 * eytz_service_lookup_cancel waits for one posted and forgets its answer
 * (releasing the view also abandons it).
 */
extern void eytz_service_lookup_start(EytzServiceView *v, const uint64 *lo,
									  const uint64 *hi, const uint32 *rows,
									  uint32 nq, uint32 first, uint32 max,
									  const EytzStage *stage);
extern bool eytz_service_lookup_finish(EytzServiceView *v, EytzMatch *out,
									   EytzStage *stage, uint32 stage_from,
									   EytzGpuAnswer *answer, char **why);
extern void eytz_service_lookup_cancel(EytzServiceView *v);

/*
 * The tombstones the layout of the view's copy counted (meta.ndead when it
 * was streamed): the copy lacks those VACUUM made since
 */
extern uint64 eytz_service_ndead(const EytzServiceView *v);

/* Free the view's slot (also on error); the view is not used afterwards */
extern void eytz_service_release(EytzServiceView *v);

/* ---- shared by the service's files (eytzservice*.c) ---- */

#include <sched.h>

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "eytzcompat.h"

/*
 * How long a backend looks for its answer without the lock before sleeping
 * on its latch (a wakeup through the latch takes longer than a small
 * request): at least EYTZ_SVC_SPIN_US, and until its last request's time
 * and half again has passed since it posted, at most EYTZ_SVC_SPIN_MAX_US.
 * The worker looks for a next request for EYTZ_SVC_IDLE_SPIN_US after its
 * last answer: a join's next batch comes after the backend fetched the
 * last one's rows, and a sleeping worker adds a wakeup to its round trip.
 */
#define EYTZ_SVC_SPIN_US 50
#define EYTZ_SVC_SPIN_MAX_US 1000
#define EYTZ_SVC_IDLE_SPIN_US 500

/*
 * One turn of such a wait, the i-th: after a few, the CPU is offered to
 * others (on a machine of few cores the process waited for may need it)
 */
static inline void
eytz_svc_spin_turn(int i)
{
	if (i < 16)
		pg_spin_delay();
	else
		sched_yield();
}

/* resident copies at most (each also bounded by eytzgpu.gpu_memory_limit) */
#define EYTZ_SVC_MAX_RESIDENT 64

/* the worker's state */
typedef enum EytzSvcState
{
	SVC_STOPPED,				/* not running (or restarting) */
	SVC_SLEEPING,				/* running, no GPU: backends answer themselves */
	SVC_CPU,					/* answering from its CPU images */
	SVC_GPU						/* answering from the GPU */
} EytzSvcState;

/* One generation of one index; compared bytewise (built zeroed) */
typedef struct EytzSvcKey
{
	Oid			dboid;
	Oid			indexoid;
	EytzRelFile node;
	uint64		generation;
	uint64		nentries;		/* with the region's place: a relfilenode */
	BlockNumber keys_start;		/* reused after OID wraparound differs */
	uint32		fanout;
	uint32		key_width;
} EytzSvcKey;

/*
 * The devices the service answers with: its GPUs (one CUDA context each,
 * as CUDA_VISIBLE_DEVICES shows them), or with the CPU one pseudo-device
 * per eytzgpu.service_cpu_devices (the placement of copies tested without
 * a GPU).  eytzgpu.gpu_memory_limit bounds each.
 */
#define EYTZ_SVC_MAX_DEVICES 16

typedef struct EytzSvcDevice
{
	char		name[64];
	bool		failed;			/* takes no copies (a GPU error) */
	int			copies;
	uint64		bytes;			/* of its resident copies */
	uint64		loading;		/* reserved by uploads under way */
	uint64		loads;
	uint64		hits;
	uint64		failures;
} EytzSvcDevice;

typedef struct EytzSvcResident
{
	bool		used;
	int			device;			/* where it lies (sliced: its first slice) */
	/*
	 * A copy no one device can hold lies in key-range slices, one per
	 * device, each its own layout (eytzservicecopies.c): their devices,
	 * bytes and entries, in key order
	 */
	int			nslices;		/* 0: whole on device */
	int8		slice_device[EYTZ_SVC_MAX_DEVICES];
	uint64		slice_bytes[EYTZ_SVC_MAX_DEVICES];
	uint64		slice_entries[EYTZ_SVC_MAX_DEVICES];
	EytzSvcKey	key;
	NameData	name;			/* the index's name when it was loaded */
	uint64		ndead;			/* its layout's tombstones then */
	uint64		bytes;
	uint64		hits;			/* lookup requests answered */
	uint64		last_used;		/* the LRU clock */
	TimestampTz last_used_at;
} EytzSvcResident;

/* Does resident copy res (or a slice of it) lie on device d? */
static inline bool
eytz_svc_resident_on(const EytzSvcResident *res, int d)
{
	int			k;

	if (res->nslices == 0)
		return res->device == d;
	for (k = 0; k < res->nslices; k++)
		if (res->slice_device[k] == d)
			return true;
	return false;
}

typedef enum EytzSvcSlotState
{
	SLOT_FREE,
	SLOT_IDLE,					/* owned, no request */
	SLOT_SUBMITTED,
	SLOT_WORKING,				/* the worker is answering it */
	SLOT_DONE,
	SLOT_ABANDONED				/* the owner left while the worker answers */
} EytzSvcSlotState;

typedef enum EytzSvcOp
{
	OP_LOAD_BEGIN,				/* meta, name: make room, expect the layout */
	OP_LOAD_DATA,				/* entries [offset, offset + count) */
	OP_LOAD_COLUMN,				/* included column's values and NULL bits,
								 * the same (offset a multiple of 8) */
	OP_LOAD_END,				/* make it resident and pin it */
	OP_LOOKUP					/* nq queries, at most max matches */
} EytzSvcOp;

typedef enum EytzSvcStatus
{
	ST_OK,
	ST_RESIDENT,				/* LOAD_BEGIN: resident already, now pinned */
	ST_BUSY,					/* LOAD_BEGIN: another slot is loading it */
	ST_FAILED					/* why says why */
} EytzSvcStatus;

typedef struct EytzSvcSlot
{
	EytzSvcSlotState state;
	/* set without the lock by an owner that gave the slot up: the worker frees it */
	pg_atomic_uint32 forsaken;
	int			owner_pid;
	int			owner_procno;
	uint32		incarnation;	/* of the worker when claimed */
	uint64		serial;			/* bumped at every claim */
	uint64		seq;			/* submission order */
	TimestampTz posted_at;		/* of the request submitted */
	TimestampTz answered_at;	/* when the worker finished it (SLOT_DONE) */
	EytzSvcKey	key;
	int			resident;		/* the copy it pins, or -1 */

	/* the request */
	EytzSvcOp	op;
	EytzMetaPageData meta;		/* LOAD_BEGIN */
	NameData	name;
	EytzInclude inc;
	uint64		offset;			/* LOAD_DATA, LOAD_COLUMN */
	uint64		count;
	int			column;			/* LOAD_COLUMN */
	uint32		nq;				/* LOOKUP */
	uint32		max;
	bool		points;
	bool		want;			/* the matches' keys and values of cols */
	int			ncols;
	int			cols[EYTZ_MAX_INCLUDE];

	/* the answer */
	EytzSvcStatus status;
	uint32		nout;
	uint32		nq_done;
	bool		staged;			/* LOOKUP with want: the values follow */
	bool		raw;			/* in the raw layout (eytz_svc_raw_layout) */
	int8		raw_key_width;
	int8		raw_widths[EYTZ_MAX_INCLUDE];	/* of the asked columns */
	float		kernel_ms;
	float		transfer_ms;
	char		why[256];
} EytzSvcSlot;

typedef struct EytzSvcShared
{
	LWLock	   *lock;
	EytzSvcState state;
	int			pid;
	int			procno;
	uint32		incarnation;	/* bumped at every start of the worker */
	char		detail[128];	/* the GPU's name, or why it sleeps */
	/* the progress mark (a TimestampTz), and the mark a backend gave up at */
	pg_atomic_uint64 progress_at;
	pg_atomic_uint64 given_up_at;
	uint64		clock;
	uint64		seq;
	uint64		bytes;			/* of the resident copies */
	uint64		loads;
	uint64		hits;
	uint64		evictions;
	uint64		failures;
	int			ndevices;
	EytzSvcDevice devices[EYTZ_SVC_MAX_DEVICES];
	int			nslots;
	Size		slot_bytes;		/* window of a slot */
	EytzSvcResident resident[EYTZ_SVC_MAX_RESIDENT];
	EytzSvcSlot slots[FLEXIBLE_ARRAY_MEMBER];
} EytzSvcShared;

/* set in every process by the shared memory startup hook */
extern EytzSvcShared *eytz_svc;
extern char *eytz_svc_windows;

/* slot i's window */
static inline char *
eytz_svc_window(int i)
{
	return eytz_svc_windows + (Size) i * eytz_svc->slot_bytes;
}

/*
 * Where a lookup's arrays lie in a window: nq queries (lo, hi, rows) and
 * the matches after them.  The matches that fit after nq queries.
 */
#define EYTZ_SVC_QUERY_BYTES (2 * sizeof(uint64) + sizeof(uint32))
static inline Size
eytz_svc_out_offset(uint32 nq)
{
	return TYPEALIGN(sizeof(EytzMatch), (Size) nq * EYTZ_SVC_QUERY_BYTES);
}

/*
 * With the matches' values (want), after max matches: their keys (uint64),
 * then per asked column its values (Datum), then per column the NULL flags
 * (bool), each array max long.  The bytes one match takes.
 */
static inline Size
eytz_svc_match_bytes(bool want, int ncols)
{
	return sizeof(EytzMatch) +
		(want ? sizeof(uint64) + (Size) ncols * (sizeof(Datum) + sizeof(bool)) : 0);
}

/* Where the keys, values of column j and NULL flags of column j lie */
static inline uint64 *
eytz_svc_keys(char *out, uint32 max)
{
	return (uint64 *) (out + (Size) max * sizeof(EytzMatch));
}

static inline Datum *
eytz_svc_values(char *out, uint32 max, int j)
{
	return (Datum *) (out + (Size) max * (sizeof(EytzMatch) + sizeof(uint64) +
										  (Size) j * sizeof(Datum)));
}

static inline bool *
eytz_svc_isnull(char *out, uint32 max, int ncols, int j)
{
	return (bool *) eytz_svc_values(out, max, ncols) + (Size) j * max;
}

/*
 * A raw answer (slot's raw): a GPU copy's arrays as the GPU returned them,
 * copied by the worker as they are and turned into matches and staged
 * values by the backend, so that the one worker does not convert every
 * match of every backend.  From the matches' offset: the max packed TIDs,
 * the max rows, and when staged the keys (key_width bytes each) and per
 * asked column its values (widths[j] bytes each) and NULL flags (a byte
 * each), every array on 8 bytes.  The worker sends it so where its bytes
 * (end) fit in the converted answer's room (all but the smallest max).
 */
typedef struct EytzSvcRawLayout
{
	Size		tids;
	Size		rows;
	Size		keys;
	Size		values[EYTZ_MAX_INCLUDE];
	Size		nulls[EYTZ_MAX_INCLUDE];
	Size		end;
} EytzSvcRawLayout;

static inline void
eytz_svc_raw_layout(EytzSvcRawLayout *l, uint32 max, bool staged, int key_width,
					int ncols, const int8 *widths)
{
	Size		at = 0;
	int			j;

	l->tids = at;
	at += TYPEALIGN(8, (Size) max * sizeof(uint64));
	l->rows = at;
	at += TYPEALIGN(8, (Size) max * sizeof(uint32));
	l->keys = at;
	if (staged)
	{
		at += TYPEALIGN(8, (Size) max * key_width);
		for (j = 0; j < ncols; j++)
		{
			l->values[j] = at;
			at += TYPEALIGN(8, (Size) max * widths[j]);
			l->nulls[j] = at;
			at += TYPEALIGN(8, (Size) max);
		}
	}
	l->end = at;
}

/*
 * Has the worker made no progress for eytzgpu.service_timeout since
 * "since" (a request's posting) or its progress mark, whichever is later?
 * *mark (if not NULL): the mark judged.
 */
static inline bool
eytz_svc_overdue(TimestampTz since, TimestampTz now, uint64 *mark)
{
	uint64		m = pg_atomic_read_u64(&eytz_svc->progress_at);

	if (mark)
		*mark = m;
	return eytz_service_timeout_ms > 0 &&
		now > Max((TimestampTz) m, since) + (TimestampTz) eytz_service_timeout_ms * 1000;
}

/*
 * The service's lock (eytzservice.c), unless the worker holds it while it
 * makes no progress: false then, after eytzgpu.service_timeout
 */
extern bool eytz_svc_lock(LWLockMode mode);

/* Has a backend given up on the worker since its progress mark last moved? */
extern bool eytz_svc_given_up(void);

/* The worker's entry point (bgw_function_name) */
extern PGDLLEXPORT void eytz_service_main(Datum arg);

#endif							/* EYTZSERVICE_H */
