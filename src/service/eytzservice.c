/*
 * eytzservice.c
 *		The eytzgpu service's GUCs, shared memory and registration, and the
 *		backend's side of it (interface: eytzservice.h).
 *
 * The worker is eytzservicemain.c (copies: eytzservicecopies.c, SQL
 * functions: eytzservicestatus.c).  Backends never touch CUDA when the
 * service owns the GPU: they stream the pages of the generation they pinned
 * (eytzpage.c) to the worker once; a fresh backend then pins the resident
 * copy with one look at shared memory.  A backend waits on its latch, wakes for
 * interrupts (a cancel frees its slot through the lookup seam's memory
 * context callback) and gives up, so that the seam continues on the CPU,
 * as soon as the worker's incarnation is not the one it started with.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "eytzgpucopy.h"
#include "eytzservice.h"

int			eytz_service_device = EYTZ_SERVICE_AUTO;
int			eytz_service_slots = 64;
int			eytz_service_slot_kb = 1024;
int			eytz_service_timeout_ms = 10000;
int			eytz_service_cpu_devices = 1;

EytzSvcShared *eytz_svc = NULL;
char	   *eytz_svc_windows = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static bool exit_cb_registered = false;

/* how long a backend sleeps at most between looks at a worker that does not answer */
#define SVC_WAIT_MS 1000
/* the longest sleep between tries for the lock while another process holds it */
#define SVC_LOCK_DELAY_US 1000
/* tries for the lock before the first sleep */
#define SVC_LOCK_SPINS 200

#define SVC_NOT_ANSWERING "the eytzgpu service is not answering (eytzgpu.service_timeout)"
/* and between tries while another backend streams the same generation */
#define SVC_BUSY_WAIT_MS 10

struct EytzServiceView
{
	Relation	index;
	EytzMetaPageData meta;
	EytzSvcKey	key;
	int			slot;			/* -1 once released or given up */
	uint64		serial;			/* the slot's claim */
	char	   *gone;			/* why it was given up, or NULL */
	uint32		incarnation;
	bool		gpu;
	uint64		ndead;			/* of the copy it pins */
	char		device[40];		/* what answers, for EXPLAIN */
	/* a lookup posted by eytz_service_lookup_start, not waited for yet */
	bool		posted;
	bool		posted_alive;	/* the worker was there to take it */
	uint32		posted_q;		/* its queries in the window */
	TimestampTz posted_at;
	int64		last_us;		/* the last request's time in the service (post to answer) */
};

static const struct config_enum_entry service_device_options[] = {
	{"off", EYTZ_SERVICE_OFF, false},
	{"auto", EYTZ_SERVICE_AUTO, false},
	{"gpu", EYTZ_SERVICE_GPU, false},
	{"cpu", EYTZ_SERVICE_CPU, false},
	{NULL, 0, false}
};

static Size
svc_shmem_size(void)
{
	return add_size(offsetof(EytzSvcShared, slots),
					mul_size(eytz_service_slots, sizeof(EytzSvcSlot)));
}

static Size
svc_window_bytes(void)
{
	return (Size) eytz_service_slot_kb * 1024;
}

static void
svc_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(svc_shmem_size());
	RequestAddinShmemSpace(add_size(mul_size(eytz_service_slots, svc_window_bytes()),
									PG_CACHE_LINE_SIZE));
	RequestNamedLWLockTranche("eytzgpu service", 1);
}

static void
svc_shmem_startup(void)
{
	bool		found;
	char	   *windows;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	eytz_svc = ShmemInitStruct("eytzgpu service", svc_shmem_size(), &found);
	if (!found)
	{
		int			i;

		memset(eytz_svc, 0, svc_shmem_size());
		eytz_svc->lock = &(GetNamedLWLockTranche("eytzgpu service"))->lock;
		eytz_svc->state = SVC_STOPPED;
		eytz_svc->procno = EYTZ_INVALID_PROCNO;
		eytz_svc->nslots = eytz_service_slots;
		eytz_svc->slot_bytes = svc_window_bytes();
		pg_atomic_init_u64(&eytz_svc->progress_at, 0);
		pg_atomic_init_u64(&eytz_svc->given_up_at, 0);
		for (i = 0; i < eytz_svc->nslots; i++)
			pg_atomic_init_u32(&eytz_svc->slots[i].forsaken, 0);
	}
	windows = ShmemInitStruct("eytzgpu service windows",
							  eytz_service_slots * svc_window_bytes() + PG_CACHE_LINE_SIZE,
							  &found);
	eytz_svc_windows = (char *) CACHELINEALIGN(windows);
	LWLockRelease(AddinShmemInitLock);
}

void
eytz_service_init(void)
{
	BackgroundWorker worker;

	/*
	 * Loaded into one backend only, the settings mean nothing there; as
	 * PGC_POSTMASTER variables set in postgresql.conf they would make that
	 * backend fail ("cannot create PGC_POSTMASTER variables after startup").
	 */
	GucContext	context = process_shared_preload_libraries_in_progress ?
		PGC_POSTMASTER : PGC_SIGHUP;

	DefineCustomEnumVariable("eytzgpu.service_device",
							 "What the eytzgpu service answers lookups with: off, auto, gpu or cpu.",
							 "Needs shared_preload_libraries = 'eytzgpu'.  auto uses the GPU where there is one and "
							 "otherwise leaves the backends to their own CPU path; cpu answers from one CPU image "
							 "per index in the service (for testing the service without a GPU).",
							 &eytz_service_device, EYTZ_SERVICE_AUTO, service_device_options,
							 context, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("eytzgpu.service_slots",
							"Lookups the eytzgpu service can hold open at once (one per running join).",
							NULL, &eytz_service_slots, 64, 1, 10000,
							context, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("eytzgpu.service_slot_buffer",
							"Shared memory of each eytzgpu service slot: the keys and matches of one request.",
							NULL, &eytz_service_slot_kb, 1024, 64, 1024 * 1024,
							context, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("eytzgpu.service_timeout",
							"How long a join waits for an eytzgpu service that makes no progress before it continues on the CPU.",
							"Counted from the request or the service's last progress, whichever is later, beyond the time the size of the request the service works on allows; 0 waits as long as the service runs.",
							&eytz_service_timeout_ms, 10000, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);

	DefineCustomIntVariable("eytzgpu.service_cpu_devices",
							"Devices the eytzgpu service with service_device = cpu divides its copies among (for testing).",
							"Each takes eytzgpu.gpu_memory_limit, as each GPU does with service_device = gpu.",
							&eytz_service_cpu_devices, 1, 1, EYTZ_SVC_MAX_DEVICES,
							context, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);

	if (!process_shared_preload_libraries_in_progress ||
		eytz_service_device == EYTZ_SERVICE_OFF)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = svc_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = svc_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	/* connected to no database: but in the proc array, for pg_terminate_backend */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	/* back within a second after pg_terminate_backend or a GPU failure */
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "eytzgpu");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "eytz_service_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "eytzgpu service");
	snprintf(worker.bgw_type, BGW_MAXLEN, "eytzgpu service");
	RegisterBackgroundWorker(&worker);
}

bool
eytz_service_owns_gpu(void)
{
	return eytz_svc != NULL && eytz_svc->state != SVC_SLEEPING;
}

bool
eytz_svc_given_up(void)
{
	uint64		given_up = pg_atomic_read_u64(&eytz_svc->given_up_at);

	return given_up != 0 && given_up == pg_atomic_read_u64(&eytz_svc->progress_at);
}

bool
eytz_service_ready(char **why)
{
	EytzSvcState state = eytz_svc ? eytz_svc->state : SVC_STOPPED;

	if ((state == SVC_CPU || state == SVC_GPU) && !eytz_svc_given_up())
		return true;
	if (why)
		*why = state == SVC_CPU || state == SVC_GPU ? SVC_NOT_ANSWERING :
			"the eytzgpu service is not running";
	return false;
}

/*
 * The service's lock, unless the worker holds it while it makes no
 * progress (stopped within it): false once it has made none for
 * eytzgpu.service_timeout since "since" (0: the first try).  A backend
 * never waits uninterruptibly on a stalled worker.  No interrupts are
 * served here (it also runs while an error is cleaned up).
 */
static bool
svc_lock_since(LWLockMode mode, TimestampTz since)
{
	long		delay_us = 10;
	int			spins = 0;

	if (eytz_service_timeout_ms == 0)
	{
		LWLockAcquire(eytz_svc->lock, mode);
		return true;
	}
	while (!LWLockConditionalAcquire(eytz_svc->lock, mode))
	{
		TimestampTz now;

		/*
		 * The lock is held for microseconds: spin first, as a sleep lasts
		 * at least the timer slack (tens of microseconds)
		 */
		if (++spins < SVC_LOCK_SPINS)
		{
			eytz_svc_spin_turn(spins);
			continue;
		}
		now = GetCurrentTimestamp();
		if (since == 0)
			since = now;
		else if (eytz_svc_overdue(since, now, NULL))
			return false;
		pg_usleep(delay_us);
		delay_us = Min(delay_us * 2, SVC_LOCK_DELAY_US);
	}
	return true;
}

bool
eytz_svc_lock(LWLockMode mode)
{
	return svc_lock_since(mode, 0);
}

/* The key of the generation meta names */
static void
svc_key(Relation index, const EytzMetaPageData *meta, EytzSvcKey *key)
{
	memset(key, 0, sizeof(*key));
	key->dboid = MyDatabaseId;
	key->indexoid = RelationGetRelid(index);
	key->node = EytzRelationFile(index);
	key->generation = meta->generation;
	key->nentries = meta->nentries;
	key->keys_start = meta->keys_start;
	key->fanout = meta->fanout;
	key->key_width = meta->key_width;
}

/* The resident copy of key, or -1 (lock held) */
static int
svc_find(const EytzSvcKey *key)
{
	int			i;

	for (i = 0; i < EYTZ_SVC_MAX_RESIDENT; i++)
		if (eytz_svc->resident[i].used &&
			memcmp(&eytz_svc->resident[i].key, key, sizeof(EytzSvcKey)) == 0)
			return i;
	return -1;
}

bool
eytz_service_resident(Relation index, const EytzMetaPageData *meta)
{
	EytzSvcKey	key;
	bool		found;

	svc_key(index, meta, &key);
	if (!eytz_svc_lock(LW_SHARED))
		return false;
	found = svc_find(&key) >= 0;
	LWLockRelease(eytz_svc->lock);
	return found;
}

/*
 * Free slot i if this backend owns it; the worker frees one it is
 * answering, or one whose lock it holds stalled (forsaken: since, as for
 * svc_lock_since, a request the worker is known to be overdue for makes
 * that at the first failed try)
 */
static void
svc_free_slot_since(int i, TimestampTz since)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	int			worker = EYTZ_INVALID_PROCNO;

	if (!svc_lock_since(LW_EXCLUSIVE, since))
	{
		if (s->owner_pid == MyProcPid)
			pg_atomic_write_u32(&s->forsaken, 1);
		return;
	}
	if (s->state != SLOT_FREE && s->owner_pid == MyProcPid)
	{
		s->state = s->state == SLOT_WORKING ? SLOT_ABANDONED : SLOT_FREE;
		s->resident = -1;
	}
	/* read under the lock: the worker's exit resets it */
	if (eytz_svc->state != SVC_STOPPED)
		worker = eytz_svc->procno;
	LWLockRelease(eytz_svc->lock);
	/* the worker also drops a half-streamed layout of the slot */
	if (worker != EYTZ_INVALID_PROCNO)
		SetLatch(&GetPGProcByNumber(worker)->procLatch);
}

static void
svc_free_slot(int i)
{
	svc_free_slot_since(i, 0);
}

/* A backend that exits frees the slots its failed queries did not */
static void
svc_backend_exit(int code, Datum arg)
{
	int			i;

	for (i = 0; i < eytz_svc->nslots; i++)
		if (eytz_svc->slots[i].state != SLOT_FREE &&
			eytz_svc->slots[i].owner_pid == MyProcPid)
			svc_free_slot(i);
}

/* Claim a free slot for v; false with *why when all are taken */
static bool
svc_claim(EytzServiceView *v, char **why)
{
	int			i;

	if (!exit_cb_registered)
	{
		before_shmem_exit(svc_backend_exit, (Datum) 0);
		exit_cb_registered = true;
	}
	v->slot = -1;
	if (!eytz_svc_lock(LW_EXCLUSIVE))
	{
		*why = SVC_NOT_ANSWERING;
		return false;
	}
	for (i = 0; i < eytz_svc->nslots && v->slot < 0; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		if (s->state != SLOT_FREE)
			continue;
		s->state = SLOT_IDLE;
		pg_atomic_write_u32(&s->forsaken, 0);
		s->owner_pid = MyProcPid;
		s->owner_procno = EytzMyProcNumber();
		s->incarnation = eytz_svc->incarnation;
		s->serial++;
		s->key = v->key;
		s->resident = -1;
		v->slot = i;
		v->serial = s->serial;
		v->incarnation = s->incarnation;
		v->gpu = eytz_svc->state == SVC_GPU;
		snprintf(v->device, sizeof(v->device), "%s (service)", v->gpu ? "gpu" : "cpu");
	}
	LWLockRelease(eytz_svc->lock);
	if (v->slot < 0)
		*why = psprintf("all %d slots of the eytzgpu service are in use (eytzgpu.service_slots)",
						eytz_svc->nslots);
	return v->slot >= 0;
}

/*
 * The worker made no progress on v's request for eytzgpu.service_timeout
 * (mark: its progress mark then): give the slot up, so that no later
 * request of v can take the answer the worker may still write as its own
 * (the worker frees the slot once it runs again), and keep new scans off
 * the service until the mark moves.
 */
static void
svc_give_up(EytzServiceView *v, uint64 mark)
{
	int			pid = eytz_svc->pid;

	if (pg_atomic_exchange_u64(&eytz_svc->given_up_at, mark) != mark)
		ereport(LOG,
				(errmsg("eytzgpu service (PID %d) made no progress for %d ms: joins continue on the CPU until it does",
						pid, eytz_service_timeout_ms)));
	svc_free_slot_since(v->slot, v->posted_at);
	v->slot = -1;
	v->gone = SVC_NOT_ANSWERING;
}

/*
 * Send the request the slot's fields describe; false when the worker is
 * not there to take it (svc_wait then says so)
 */
static bool
svc_post(EytzServiceView *v)
{
	EytzSvcSlot *s;
	bool		alive;
	int			worker = EYTZ_INVALID_PROCNO;

	if (v->slot < 0)
		return false;
	s = &eytz_svc->slots[v->slot];
	v->posted_at = GetCurrentTimestamp();
	if (!eytz_svc_lock(LW_EXCLUSIVE))
	{
		svc_give_up(v, pg_atomic_read_u64(&eytz_svc->progress_at));
		return false;
	}
	alive = eytz_svc->incarnation == v->incarnation &&
		(eytz_svc->state == SVC_CPU || eytz_svc->state == SVC_GPU);
	if (alive)
	{
		s->state = SLOT_SUBMITTED;
		s->seq = ++eytz_svc->seq;
		s->posted_at = v->posted_at;
		worker = eytz_svc->procno;
	}
	LWLockRelease(eytz_svc->lock);
	if (alive)
		SetLatch(&GetPGProcByNumber(worker)->procLatch);
	return alive;
}

/* Look at slot s without the lock while the worker answers (for how long: EYTZ_SVC_SPIN_US) */
static void
svc_spin_for_answer(EytzServiceView *v, EytzSvcSlot *s)
{
	volatile EytzSvcSlot *vs = s;
	TimestampTz until = 0;
	int			i;

	for (i = 0;; i++)
	{
		EytzSvcSlotState state = vs->state;

		if (state != SLOT_SUBMITTED && state != SLOT_WORKING)
			return;
		if ((i & 31) == 0)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (until == 0)
				until = Min(Max(now + EYTZ_SVC_SPIN_US, v->posted_at + v->last_us * 3 / 2),
							now + EYTZ_SVC_SPIN_MAX_US);
			else if (now >= until)
				return;
		}
		eytz_svc_spin_turn(i);
	}
}

/*
 * Wait for the answer to the request posted (alive: svc_post's result).
 * false with *why when the worker stopped (or restarted) meanwhile, or
 * made no progress for eytzgpu.service_timeout (the slot is then given
 * up); a cancel raises here, and the seam's callback frees the slot.
 */
static bool
svc_wait(EytzServiceView *v, bool alive, char **why)
{
	EytzSvcSlot *s = v->slot >= 0 ? &eytz_svc->slots[v->slot] : NULL;

	if (alive && s)
		svc_spin_for_answer(v, s);
	while (alive)
	{
		EytzSvcSlotState state;
		TimestampTz now;
		uint64		mark;
		long		wait_ms = SVC_WAIT_MS;

		if (!eytz_svc_lock(LW_EXCLUSIVE))
		{
			svc_give_up(v, pg_atomic_read_u64(&eytz_svc->progress_at));
			break;
		}
		/* a slot freed under it (forsaken by mistake) is a request lost */
		state = s->serial == v->serial ? s->state : SLOT_FREE;
		alive = eytz_svc->incarnation == v->incarnation &&
			(eytz_svc->state == SVC_CPU || eytz_svc->state == SVC_GPU) &&
			state != SLOT_FREE;
		if (state == SLOT_DONE)
		{
			/* the worker is done with the slot: it is ours again */
			s->state = SLOT_IDLE;
			v->last_us = Max(s->answered_at - v->posted_at, 0);
			LWLockRelease(eytz_svc->lock);
			if (s->status == ST_FAILED)
				*why = pstrdup(s->why);
			return s->status != ST_FAILED;
		}
		LWLockRelease(eytz_svc->lock);
		if (state == SLOT_FREE)
		{
			/* not ours any more: never touch it again */
			v->slot = -1;
			v->gone = "the eytzgpu service lost the request";
			break;
		}
		if (!alive)
			break;
		now = GetCurrentTimestamp();
		if (eytz_svc_overdue(v->posted_at, now, &mark))
		{
			svc_give_up(v, mark);
			break;
		}
		/* look again when the timeout would run out, the mark unmoved */
		if (eytz_service_timeout_ms > 0)
			wait_ms = Min(wait_ms, 1 + (Max((TimestampTz) mark, v->posted_at) +
										(TimestampTz) eytz_service_timeout_ms * 1000 - now) / 1000);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Max(wait_ms, 1), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if (v->slot < 0)
	{
		*why = v->gone ? v->gone : "the eytzgpu service stopped";
		return false;
	}
	*why = "the eytzgpu service stopped";
	return false;
}

/* Send the request the slot's fields describe and wait for the answer */
static bool
svc_call(EytzServiceView *v, char **why)
{
	return svc_wait(v, svc_post(v), why);
}

/*
 * Stream included column c of v's generation (read into cxt) to the
 * worker: values and NULL bits of a multiple of 8 entries per piece
 */
static bool
svc_load_column(EytzServiceView *v, MemoryContext cxt, int c, char **why)
{
	EytzSvcSlot *s = &eytz_svc->slots[v->slot];
	char	   *window = eytz_svc_window(v->slot);
	const EytzMetaPageData *meta = &v->meta;
	int			width = s->inc.width[c];
	uint64		per_call = (eytz_svc->slot_bytes * 8 / (8 * width + 1)) & ~UINT64CONST(7);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	char	   *values = MemoryContextAllocHuge(cxt, meta->nentries * width);
	uint8	   *nulls = MemoryContextAllocHuge(cxt, (meta->nentries + 7) / 8);
	uint64		pos;

	eytz_region_load_include(v->index, meta, &s->inc, strategy, c, values, nulls);
	FreeAccessStrategy(strategy);
	for (pos = 0; pos < meta->nentries; pos += s->count)
	{
		s->op = OP_LOAD_COLUMN;
		s->column = c;
		s->offset = pos;
		s->count = Min(per_call, meta->nentries - pos);
		memcpy(window, values + pos * width, s->count * width);
		memcpy(window + s->count * width, nulls + pos / 8, (s->count + 7) / 8);
		if (!svc_call(v, why))
			return false;
	}
	return true;
}

/*
 * Stream the layout of v's generation (keys, TIDs, included columns) to
 * the worker through the slot's window and pin it.  ST_BUSY when another
 * backend is streaming it now.
 */
static EytzSvcStatus
svc_load(EytzServiceView *v, char **why)
{
	EytzSvcSlot *s = &eytz_svc->slots[v->slot];
	char	   *window = eytz_svc_window(v->slot);
	const EytzMetaPageData *meta = &v->meta;
	Size		width = meta->key_width + sizeof(uint64);
	uint64		per_call = eytz_svc->slot_bytes / width;
	MemoryContext cxt;
	MemoryContext old;
	BufferAccessStrategy strategy;
	char	   *keys = NULL;
	uint64	   *tids = NULL;
	uint64		pos;
	int			c;

	s->op = OP_LOAD_BEGIN;
	s->meta = *meta;
	namestrcpy(&s->name, RelationGetRelationName(v->index));
	eytz_include_get(v->index, &s->inc);
	if (!svc_call(v, why))
		return ST_FAILED;
	if (s->status != ST_OK)
		return s->status;

	/* the pages of the pinned generation, read as the CPU image loads them */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "eytzgpu service upload",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	if (meta->nentries > 0)
	{
		keys = MemoryContextAllocHuge(cxt, meta->nentries * meta->key_width);
		tids = MemoryContextAllocHuge(cxt, meta->nentries * sizeof(uint64));
	}
	strategy = GetAccessStrategy(BAS_BULKREAD);
	eytz_region_load(v->index, meta, strategy, keys, tids);
	FreeAccessStrategy(strategy);
	MemoryContextSwitchTo(old);

	for (pos = 0; pos < meta->nentries; pos += s->count)
	{
		s->op = OP_LOAD_DATA;
		s->offset = pos;
		s->count = Min(per_call, meta->nentries - pos);
		memcpy(window, keys + pos * meta->key_width, s->count * meta->key_width);
		memcpy(window + s->count * meta->key_width, tids + pos, s->count * sizeof(uint64));
		if (!svc_call(v, why))
		{
			MemoryContextDelete(cxt);
			return ST_FAILED;
		}
	}
	MemoryContextReset(cxt);
	for (c = 0; c < s->inc.ncols && meta->nentries > 0; c++)
	{
		if (!svc_load_column(v, cxt, c, why))
		{
			MemoryContextDelete(cxt);
			return ST_FAILED;
		}
		MemoryContextReset(cxt);
	}
	MemoryContextDelete(cxt);
	s->op = OP_LOAD_END;
	return svc_call(v, why) ? ST_OK : ST_FAILED;
}

/* Pin v's generation through its slot, streaming it if it is not resident */
static bool
svc_pin_slot(EytzServiceView *v, char **why)
{
	for (;;)
	{
		EytzSvcSlot *s = &eytz_svc->slots[v->slot];
		EytzSvcStatus st;
		int			i;

		/* resident: pin it under the lock the worker evicts under */
		if (!eytz_svc_lock(LW_EXCLUSIVE))
		{
			*why = SVC_NOT_ANSWERING;
			return false;
		}
		i = svc_find(&v->key);
		if (i >= 0 && eytz_svc->incarnation == v->incarnation)
			s->resident = i;
		LWLockRelease(eytz_svc->lock);
		if (i >= 0)
			return true;

		st = svc_load(v, why);
		if (st != ST_BUSY)
			return st != ST_FAILED;
		/* another backend streams it: wait for it to be resident */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 SVC_BUSY_WAIT_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

EytzServiceView *
eytz_service_pin(Relation index, const EytzMetaPageData *meta, char **why)
{
	EytzServiceView *v = palloc0(sizeof(EytzServiceView));
	volatile bool ok;

	v->index = index;
	v->meta = *meta;
	svc_key(index, meta, &v->key);
	if (!eytz_service_ready(why) || !svc_claim(v, why))
	{
		pfree(v);
		return NULL;
	}
	/* the seam knows of the slot once we return: free it if this fails */
	PG_TRY();
	{
		ok = svc_pin_slot(v, why);
		if (ok && !eytz_svc_lock(LW_SHARED))
		{
			*why = SVC_NOT_ANSWERING;
			ok = false;
		}
		else if (ok)
		{
			int			r = eytz_svc->slots[v->slot].resident;

			v->ndead = r >= 0 ? eytz_svc->resident[r].ndead : 0;
			/* with several devices, which one (or that it lies in slices) */
			if (r >= 0 && eytz_svc->resident[r].nslices > 0)
				snprintf(v->device, sizeof(v->device), "%s (service, in slices)",
						 v->gpu ? "gpu" : "cpu");
			else if (r >= 0 && eytz_svc->ndevices > 1)
				snprintf(v->device, sizeof(v->device), "%s %d (service)",
						 v->gpu ? "gpu" : "cpu", eytz_svc->resident[r].device);
			LWLockRelease(eytz_svc->lock);
		}
	}
	PG_CATCH();
	{
		eytz_service_release(v);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (!ok)
	{
		eytz_service_release(v);
		pfree(v);
		return NULL;
	}
	return v;
}

const char *
eytz_service_device_name(const EytzServiceView *v)
{
	return v->device;
}

uint64
eytz_service_ndead(const EytzServiceView *v)
{
	return v->ndead;
}

/* The staged keys and values of a lookup's n matches into stage from "from" */
static void
svc_stage(EytzSvcSlot *s, char *answer, uint32 n, EytzStage *stage, uint32 from)
{
	int			j;

	memset(stage->have + from, true, n * sizeof(bool));
	memcpy(stage->keys + from, eytz_svc_keys(answer, s->max), n * sizeof(uint64));
	for (j = 0; j < s->ncols; j++)
	{
		memcpy(stage->values[j] + from, eytz_svc_values(answer, s->max, j), n * sizeof(Datum));
		memcpy(stage->isnull[j] + from, eytz_svc_isnull(answer, s->max, s->ncols, j),
			   n * sizeof(bool));
	}
}

/*
 * A raw answer's n matches into out (match j's unused: from + j) and, when
 * staged, their keys and values into stage from "from": the window read as
 * the GPU's arrays (eytzservice.h), converted as a GPU copy's answer is
 */
static void
svc_from_raw(EytzSvcSlot *s, char *answer, EytzMatch *out, EytzStage *stage,
			 uint32 from)
{
	EytzSvcRawLayout l;
	EytzGpuRawAnswer raw;
	int			j;

	eytz_svc_raw_layout(&l, s->max, s->staged, s->raw_key_width, s->ncols, s->raw_widths);
	memset(&raw, 0, sizeof(raw));
	raw.n = s->nout;
	raw.tids = (const uint64 *) (answer + l.tids);
	raw.rows = (const uint32 *) (answer + l.rows);
	if (s->staged)
	{
		raw.keys = answer + l.keys;
		raw.key_width = s->raw_key_width;
		for (j = 0; j < s->ncols; j++)
		{
			raw.values[s->cols[j]] = answer + l.values[j];
			raw.nulls[s->cols[j]] = (const uint8 *) answer + l.nulls[j];
			raw.widths[s->cols[j]] = s->raw_widths[j];
		}
	}
	eytz_gpu_raw_to_matches(&raw, out, s->staged ? stage : NULL, from);
}

void
eytz_service_lookup_start(EytzServiceView *v, const uint64 *lo,
						  const uint64 *hi, const uint32 *rows, uint32 nq,
						  uint32 first, uint32 max, const EytzStage *stage)
{
	EytzSvcSlot *s;
	char	   *window;
	Size		bytes = eytz_svc->slot_bytes;
	uint32		q = nq - first;
	uint32		m;
	uint32		i;
	bool		points = true;

	Assert(!v->posted && first < nq);
	if (v->slot < 0)
	{
		/* given up: finish says why */
		v->posted = true;
		v->posted_alive = false;
		return;
	}
	s = &eytz_svc->slots[v->slot];
	window = eytz_svc_window(v->slot);
	/* half the window for queries at most, the rest for matches */
	q = Min(q, (uint32) (bytes / 2 / EYTZ_SVC_QUERY_BYTES));
	m = Min(max, (uint32) ((bytes - eytz_svc_out_offset(q)) /
						   eytz_svc_match_bytes(stage != NULL,
												stage ? stage->ncols : 0)));
	for (i = 0; i < q && points; i++)
		points = lo[first + i] == hi[first + i];
	memcpy(window, lo + first, q * sizeof(uint64));
	if (!points)
		memcpy(window + q * sizeof(uint64), hi + first, q * sizeof(uint64));
	memcpy(window + 2 * q * sizeof(uint64), rows + first, q * sizeof(uint32));
	s->op = OP_LOOKUP;
	s->nq = q;
	s->max = m;
	s->points = points;
	s->want = stage != NULL;
	s->ncols = stage ? stage->ncols : 0;
	if (stage)
		memcpy(s->cols, stage->cols, sizeof(s->cols));
	v->posted = true;
	v->posted_q = q;
	v->posted_alive = svc_post(v);
}

bool
eytz_service_lookup_finish(EytzServiceView *v, EytzMatch *out,
						   EytzStage *stage, uint32 stage_from,
						   EytzGpuAnswer *answer, char **why)
{
	EytzSvcSlot *s;
	char	   *reply;
	uint32		i;

	Assert(v->posted);
	v->posted = false;
	memset(answer, 0, sizeof(EytzGpuAnswer));
	if (!svc_wait(v, v->posted_alive, why))
		return false;
	s = &eytz_svc->slots[v->slot];
	reply = eytz_svc_window(v->slot) + eytz_svc_out_offset(v->posted_q);
	answer->staged = s->staged;
	if (s->raw)
		svc_from_raw(s, reply, out, stage, stage_from);
	else
	{
		memcpy(out, reply, s->nout * sizeof(EytzMatch));
		/* a match's "unused" is its staged position in the reply */
		if (s->staged)
		{
			for (i = 0; i < s->nout; i++)
				out[i].unused += stage_from;
			svc_stage(s, reply, s->nout, stage, stage_from);
		}
	}
	answer->nout = s->nout;
	answer->nq_done = s->nq_done;
	answer->kernel_ms = s->kernel_ms;
	answer->transfer_ms = s->transfer_ms;
	return true;
}

void
eytz_service_lookup_cancel(EytzServiceView *v)
{
	char	   *why;

	if (!v->posted)
		return;
	v->posted = false;
	/* a failure here is the next request's to report */
	(void) svc_wait(v, v->posted_alive, &why);
}

void
eytz_service_release(EytzServiceView *v)
{
	if (v->slot >= 0)
		svc_free_slot(v->slot);
	v->slot = -1;
}
