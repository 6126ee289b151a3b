/*
 * eytzservicemain.c
 *		The eytzgpu service worker (eytzservice.h): one process that holds
 *		the devices and the resident copies, and answers the backends'
 *		requests oldest first, as a pipeline: a GPU lookup is submitted and
 *		its answer handed back as soon as its GPU finished it, while the
 *		worker takes the requests for other copies (on the same GPU or
 *		another) in the meantime.
 *
 * Its devices are chosen at start from eytzgpu.service_device: every GPU
 * CUDA shows it, a context each (the only CUDA contexts of the server), or
 * eytzgpu.service_cpu_devices CPU pseudo-devices, or none: without a GPU
 * at 'auto' it sleeps and backends answer themselves.  The copies, their
 * placement and eviction and the lookups on them are in
 * eytzservicecopies.c; this file takes the requests, answers them (a
 * request that raises an error, e.g. a damaged node in a CPU image, is
 * answered with its message) and hands the answers back.  A GPU that
 * failed other than for want of memory is dropped once none of its lookups
 * is in flight, and with no GPU left the process ends: the postmaster starts a
 * fresh one (and CUDA contexts) a second later.  Shutdown or a restart
 * makes every waiting backend continue on its CPU path.  The progress mark
 * (eytzservice.h) moves at every turn of the main loop and whenever a
 * request is taken or answered, to what the requests in flight may take.
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/procsignal.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "eytzdevice.h"
#include "eytzservice.h"
#include "eytzservicecopies.h"

/* requests in flight at most (taken and not yet answered) */
#define EYTZ_SVC_ROUND 32
static MemoryContext svc_cxt;

/*
 * Answer slot i's request; an error becomes a failed answer.  *in_flight:
 * the copy a lookup was submitted to on the GPU, answered by
 * eytz_svc_lookup_finish; -1 for an answer given at once.
 */
static EytzSvcStatus
answer(int i, int *in_flight)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	char	   *window = eytz_svc_window(i);
	volatile EytzSvcStatus status = ST_FAILED;

	s->why[0] = '\0';
	s->nout = 0;
	s->nq_done = 0;
	s->staged = false;
	s->raw = false;
	*in_flight = -1;
	PG_TRY();
	{
		switch (s->op)
		{
			case OP_LOAD_BEGIN:
				status = eytz_svc_load_begin(i, s);
				break;
			case OP_LOAD_DATA:
				status = eytz_svc_load_data(i, s, window);
				break;
			case OP_LOAD_COLUMN:
				status = eytz_svc_load_column(i, s, window);
				break;
			case OP_LOAD_END:
				status = eytz_svc_load_end(i, s);
				break;
			case OP_LOOKUP:
				status = eytz_svc_lookup(s, window, in_flight);
				break;
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		LWLockReleaseAll();
		MemoryContextSwitchTo(svc_cxt);
		edata = CopyErrorData();
		FlushErrorState();
		strlcpy(s->why, edata->message, sizeof(s->why));
		FreeErrorData(edata);
		s->nout = 0;
		s->nq_done = 0;
		s->staged = false;
		s->raw = false;
		status = ST_FAILED;
	}
	PG_END_TRY();
	return status;
}

/*
 * Move the progress mark to now plus what the request taken now may take
 * (allow_us); backends wait eytzgpu.service_timeout beyond it
 */
static void
progress(int64 allow_us)
{
	pg_atomic_write_u64(&eytz_svc->progress_at, (uint64) (GetCurrentTimestamp() + allow_us));
}

/*
 * What slot i's request may take: a microsecond per 8 bytes it reads or
 * writes (slower than any device), the whole window for a lookup or a piece
 * of an upload, the whole copy for the upload's end (copied to the GPU)
 */
static int64
request_allowance(int i)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	uint64		bytes = eytz_svc->slot_bytes;

	if (s->op == OP_LOAD_END)
		bytes += eytz_svc_load_reserved(i);
	return (int64) (bytes / 8);
}

/* Has the owner given slot s up without the lock? */
static bool
forsaken(EytzSvcSlot *s)
{
	return pg_atomic_read_u32(&s->forsaken) != 0;
}

/* Free slot s (lock held) */
static void
free_slot(EytzSvcSlot *s)
{
	s->state = SLOT_FREE;
	s->resident = -1;
	pg_atomic_write_u32(&s->forsaken, 0);
}

/* Hand slot i's answer to its owner, or free the slot if the owner left */
static void
finish(int i, EytzSvcStatus status)
{
	EytzSvcSlot *s = &eytz_svc->slots[i];
	int			owner = -1;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	s->status = status;
	if (status == ST_FAILED)
	{
		eytz_svc->failures++;
		if (s->op == OP_LOOKUP && s->resident >= 0 && eytz_svc->resident[s->resident].used)
			eytz_svc->devices[eytz_svc->resident[s->resident].device].failures++;
	}
	else if (s->op == OP_LOOKUP && s->resident >= 0 &&
			 eytz_svc->resident[s->resident].used)
	{
		EytzSvcResident *res = &eytz_svc->resident[s->resident];

		res->hits++;
		res->last_used = ++eytz_svc->clock;
		res->last_used_at = GetCurrentTimestamp();
		eytz_svc->devices[res->device].hits++;
		eytz_svc->hits++;
	}
	if (s->state == SLOT_ABANDONED || forsaken(s))
		free_slot(s);
	else
	{
		s->answered_at = GetCurrentTimestamp();
		s->state = SLOT_DONE;
		owner = s->owner_procno;
	}
	LWLockRelease(eytz_svc->lock);
	if (owner >= 0)
		SetLatch(&GetPGProcByNumber(owner)->procLatch);
}

/*
 * The lookups in flight on the GPUs, oldest first: their slots and copies
 * (at most one a copy)
 */
typedef struct InFlight
{
	int			n;
	int			slot[EYTZ_SVC_ROUND];
	int			copy[EYTZ_SVC_ROUND];
} InFlight;

/* Is slot i's lookup in flight on a GPU? */
static bool
slot_in_flight(const InFlight *f, int i)
{
	int			k;

	for (k = 0; k < f->n; k++)
		if (f->slot[k] == i)
			return true;
	return false;
}

/*
 * The requests to take now, oldest first, marked as being answered (into
 * taken, at most max; returns how many): a lookup only for a copy with no
 * batch in flight, as a copy answers one batch at a time, so that lookups
 * of different copies (on one GPU, or on several) run at once.  The same
 * pass frees the slots of owners that left while the worker answered them,
 * or that are gone (reclaim), but not a slot in flight (f), whose window
 * its answer is written to, and *loads_to_drop says whether a freed slot
 * may have left an upload behind.
 */
static int
take_requests(int *taken, int max, const InFlight *f, bool *loads_to_drop)
{
	int			n = 0;
	int			i;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		if (s->state != SLOT_FREE && !slot_in_flight(f, i) &&
			(s->state == SLOT_ABANDONED || forsaken(s) ||
			 GetPGProcByNumber(s->owner_procno)->pid != s->owner_pid))
			free_slot(s);
		if (eytz_svc_load_orphaned(i))
			*loads_to_drop = true;
	}
	while (n < max)
	{
		int			best = -1;

		for (i = 0; i < eytz_svc->nslots; i++)
		{
			EytzSvcSlot *s = &eytz_svc->slots[i];
			bool		busy = false;
			int			j;

			if (s->state != SLOT_SUBMITTED || s->incarnation != eytz_svc->incarnation ||
				(best >= 0 && s->seq >= eytz_svc->slots[best].seq))
				continue;
			if (s->op == OP_LOOKUP && s->resident >= 0)
				busy = eytz_svc_copies[s->resident].in_flight;
			for (j = 0; j < n && s->op == OP_LOOKUP; j++)
				busy |= eytz_svc->slots[taken[j]].op == OP_LOOKUP &&
					eytz_svc->slots[taken[j]].resident == s->resident;
			if (!busy)
				best = i;
		}
		if (best < 0)
			break;
		eytz_svc->slots[best].state = SLOT_WORKING;
		taken[n++] = best;
	}
	LWLockRelease(eytz_svc->lock);
	return n;
}

/*
 * Is a request submitted?  A look without the lock, while the worker
 * spins for EYTZ_SVC_IDLE_SPIN_US before it sleeps on its latch.
 */
static bool
request_waiting(void)
{
	int			i;

	for (i = 0; i < eytz_svc->nslots; i++)
		if (((volatile EytzSvcSlot *) &eytz_svc->slots[i])->state == SLOT_SUBMITTED)
			return true;
	return false;
}


/* On exit: backends waiting on this incarnation go on without it */
static void
svc_exit(int code, Datum arg)
{
	int			i;

	LWLockReleaseAll();
	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->state = SVC_STOPPED;
	eytz_svc->procno = EYTZ_INVALID_PROCNO;
	eytz_svc->bytes = 0;
	eytz_svc->ndevices = 0;
	memset(eytz_svc->resident, 0, sizeof(eytz_svc->resident));
	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		if (s->state == SLOT_SUBMITTED || s->state == SLOT_WORKING)
			SetLatch(&GetPGProcByNumber(s->owner_procno)->procLatch);
	}
	LWLockRelease(eytz_svc->lock);
}

/*
 * Start as a new incarnation with device state and its ndevices devices:
 * old requests fail
 */
static void
svc_start(EytzSvcState state, const char *detail, const EytzSvcDevice *devices,
		  int ndevices)
{
	int			i;

	LWLockAcquire(eytz_svc->lock, LW_EXCLUSIVE);
	eytz_svc->incarnation++;
	eytz_svc->pid = MyProcPid;
	eytz_svc->procno = EytzMyProcNumber();
	eytz_svc->state = state;
	progress(0);
	strlcpy(eytz_svc->detail, detail, sizeof(eytz_svc->detail));
	eytz_svc->bytes = 0;
	memset(eytz_svc->resident, 0, sizeof(eytz_svc->resident));
	eytz_svc->ndevices = ndevices;
	memcpy(eytz_svc->devices, devices, sizeof(EytzSvcDevice) * ndevices);
	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		s->resident = -1;
		if (s->state == SLOT_ABANDONED || (s->state != SLOT_FREE && forsaken(s)))
			free_slot(s);
		else if (s->state == SLOT_SUBMITTED || s->state == SLOT_WORKING)
		{
			s->status = ST_FAILED;
			strlcpy(s->why, "the eytzgpu service restarted", sizeof(s->why));
			s->state = SLOT_DONE;
		}
	}
	LWLockRelease(eytz_svc->lock);
	on_shmem_exit(svc_exit, (Datum) 0);
}

/*
 * The device eytzgpu.service_device asks for and this machine has, and
 * its devices (*ndevices of them): every GPU CUDA shows, or
 * eytzgpu.service_cpu_devices CPU ones
 */
static EytzSvcState
choose_device(char *detail, size_t len, EytzSvcDevice *devices, int *ndevices)
{
	char	   *why = NULL;
	int			d;

	detail[0] = '\0';
	*ndevices = 0;
	if (eytz_service_device == EYTZ_SERVICE_CPU)
	{
		*ndevices = Min(eytz_service_cpu_devices, EYTZ_SVC_MAX_DEVICES);
		for (d = 0; d < *ndevices; d++)
		{
			memset(&devices[d], 0, sizeof(EytzSvcDevice));
			snprintf(devices[d].name, sizeof(devices[d].name), "cpu %d", d);
		}
		if (*ndevices > 1)
			snprintf(detail, len, "%d CPU devices", *ndevices);
		return SVC_CPU;
	}
	if (eytz_device_available(&why) &&
		(*ndevices = eytz_svc_gpu_devices(devices, EYTZ_SVC_MAX_DEVICES)) > 0)
	{
		if (*ndevices == 1)
			strlcpy(detail, devices[0].name, len);
		else
			snprintf(detail, len, "%d GPUs: %s", *ndevices, devices[0].name);
		return SVC_GPU;
	}
	strlcpy(detail, why, len);
	ereport(eytz_service_device == EYTZ_SERVICE_GPU ? WARNING : LOG,
			(errmsg("eytzgpu service found no GPU: backends run their joins on the CPU"),
			 errdetail("The GPU cannot be used: %s.", why)));
	return SVC_SLEEPING;
}

/* What the requests in flight may take (the progress mark's allowance) */
static int64
in_flight_allowance(const InFlight *f)
{
	int64		allow = 0;
	int			k;

	for (k = 0; k < f->n; k++)
		allow += request_allowance(f->slot[k]);
	return allow;
}

/*
 * Answer the n requests taken: those answered at once handed back, the GPU
 * lookups added to f
 */
static void
answer_taken(const int *taken, int n, InFlight *f)
{
	int			k;

	for (k = 0; k < n; k++)
	{
		int			copy;
		EytzSvcStatus status = answer(taken[k], &copy);

		if (copy < 0)
			finish(taken[k], status);
		else
		{
			f->slot[f->n] = taken[k];
			f->copy[f->n] = copy;
			f->n++;
		}
	}
}

/*
 * Hand back the answers of the lookups in flight that the GPUs finished,
 * in any order (a copy on one GPU does not wait for another's); true when
 * any was
 */
static bool
collect_answers(InFlight *f)
{
	bool		any = false;
	int			k = 0;

	while (k < f->n)
	{
		int			i = f->slot[k];

		if (!eytz_svc_lookup_ready(f->copy[k]))
		{
			k++;
			continue;
		}
		finish(i, eytz_svc_lookup_finish(i, f->copy[k]));
		f->n--;
		memmove(&f->slot[k], &f->slot[k + 1], sizeof(int) * (f->n - k));
		memmove(&f->copy[k], &f->copy[k + 1], sizeof(int) * (f->n - k));
		any = true;
	}
	return any;
}

/* Stop using the GPUs that failed, once none of their lookups is in flight */
static void
drop_broken_devices(const InFlight *f)
{
	int			d,
				k;

	for (d = 0; d < eytz_svc->ndevices; d++)
	{
		bool		busy = false;

		if (!eytz_svc_device_broken(d))
			continue;
		for (k = 0; k < f->n; k++)
			busy |= eytz_svc_resident_on(&eytz_svc->resident[f->copy[k]], d);
		if (!busy)
			eytz_svc_device_failed(d);
	}
}

void
eytz_service_main(Datum arg)
{
	char		detail[128];
	EytzSvcState state;
	EytzSvcDevice devices[EYTZ_SVC_MAX_DEVICES];
	int			ndevices;
	InFlight	flight;

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	if (eytz_svc == NULL)
		proc_exit(0);			/* cannot happen: registered with the memory */
	/* no database, like the logical replication launcher */
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	svc_cxt = AllocSetContextCreate(TopMemoryContext, "eytzgpu service",
									ALLOCSET_DEFAULT_SIZES);
	eytz_svc_copies_init(svc_cxt);
	flight.n = 0;
	MemoryContextSwitchTo(svc_cxt);
	state = choose_device(detail, sizeof(detail), devices, &ndevices);
	svc_start(state, detail, devices, ndevices);
	ereport(LOG,
			(errmsg("eytzgpu service started: %s%s%s",
					state == SVC_GPU ? "GPU" : state == SVC_CPU ? "CPU images" : "sleeping",
					detail[0] ? ", " : "", detail)));

	for (;;)
	{
		int			taken[EYTZ_SVC_ROUND];
		int			n,
					d;

		ResetLatch(MyLatch);
		progress(0);
		/*
		 * procsignal barriers: DROP DATABASE and ALTER TABLESPACE wait for
		 * every process to absorb theirs (not CHECK_FOR_INTERRUPTS: a
		 * pg_cancel_backend would then end the service with an ERROR)
		 */
		if (ProcSignalBarrierPending)
			ProcessProcSignalBarrier();
		if (ShutdownRequestPending)
			proc_exit(1);		/* restarted unless the server shuts down */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			for (d = 0; state != SVC_SLEEPING && d < eytz_svc->ndevices; d++)
				eytz_svc_evict_to_limit(d);
		}

		/*
		 * The pipeline: take what can be taken, submit the GPU lookups and
		 * answer the rest at once, hand back what the GPUs finished, and
		 * again; while lookups are in flight new requests are taken for
		 * the other copies, and each answer goes back as soon as its GPU
		 * is done.  With nothing in flight and nothing submitted, look for
		 * a next request for a while (EYTZ_SVC_IDLE_SPIN_US: a join's next
		 * batch often comes that soon, and a wakeup through the latch costs
		 * more), then sleep on the latch.
		 */
		for (int idle = 0;; idle++)
		{
			bool		orphans = false;
			bool		answered;

			if (state == SVC_SLEEPING)
				break;
			/* the lock only when a request may be there to take */
			n = flight.n == 0 || idle == 0 || request_waiting() ?
				take_requests(taken, EYTZ_SVC_ROUND - flight.n, &flight, &orphans) : 0;
			if (orphans)
				eytz_svc_drop_orphan_loads();
			if (n == 0 && flight.n == 0)
			{
				TimestampTz spin_until = GetCurrentTimestamp() + EYTZ_SVC_IDLE_SPIN_US;
				int			spins;

				for (spins = 0; !request_waiting() && GetCurrentTimestamp() < spin_until; spins++)
					eytz_svc_spin_turn(spins);
				if (!request_waiting())
					break;
				continue;
			}
			if (n > 0)
			{
				int64		allow = in_flight_allowance(&flight);

				for (int k = 0; k < n; k++)
					allow += request_allowance(taken[k]);
				progress(allow);
				answer_taken(taken, n, &flight);
			}
			answered = collect_answers(&flight);
			if (n > 0 || answered)
			{
				progress(in_flight_allowance(&flight));
				idle = 0;
			}
			else
				eytz_svc_spin_turn(idle);	/* the GPUs work, no new request */
			if (ProcSignalBarrierPending)
				ProcessProcSignalBarrier();
			drop_broken_devices(&flight);
			if (ShutdownRequestPending)
				proc_exit(1);
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000, PG_WAIT_EXTENSION);
	}
}
