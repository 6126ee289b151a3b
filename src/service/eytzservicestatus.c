/*
 * eytzservicestatus.c
 *		The SQL functions that report the eytzgpu service:
 *		eytzgpu_service_status(), eytzgpu_service_resident() and
 *		eytzgpu_service_gpus(), read from its shared memory (eytzservice.h).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "eytzservice.h"

PG_FUNCTION_INFO_V1(eytzgpu_service_status);
PG_FUNCTION_INFO_V1(eytzgpu_service_resident);
PG_FUNCTION_INFO_V1(eytzgpu_service_gpus);

/* Both functions: superusers and pg_monitor */
static void
svc_check_privilege(const char *fname)
{
	if (!has_privs_of_role(GetUserId(), ROLE_PG_MONITOR))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for function %s", fname),
				 errdetail("Only roles with privileges of the \"pg_monitor\" role may see the eytzgpu service.")));
}

static const char *
svc_state_name(EytzSvcState state)
{
	switch (state)
	{
		case SVC_STOPPED:
			return "stopped";
		case SVC_SLEEPING:
			return "sleeping";
		case SVC_CPU:
		case SVC_GPU:
			return "running";
	}
	return "unknown";
}

/*
 * eytzgpu_service_status(): one row, the service as a whole (state "not
 * loaded" without shared_preload_libraries = 'eytzgpu', "off" when
 * eytzgpu.service_device is off, "not answering" while it runs but a
 * request waits past eytzgpu.service_timeout or a backend gave up on it).
 * Read without the lock if a stalled worker holds it: a report.
 */
Datum
eytzgpu_service_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[12];
	bool		nulls[12];
	int			i,
				used = 0,
				copies = 0;
	bool		locked;
	bool		stalled;
	TimestampTz now = GetCurrentTimestamp();

	svc_check_privilege("eytzgpu_service_status");
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(nulls, true, sizeof(nulls));
	if (eytz_svc == NULL)
	{
		values[0] = CStringGetTextDatum(eytz_service_device == EYTZ_SERVICE_OFF ?
										"off" : "not loaded");
		nulls[0] = false;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}
	memset(nulls, false, sizeof(nulls));
	locked = eytz_svc_lock(LW_SHARED);
	stalled = eytz_svc_given_up();
	for (i = 0; i < eytz_svc->nslots; i++)
	{
		EytzSvcSlot *s = &eytz_svc->slots[i];

		used += s->state != SLOT_FREE;
		stalled |= (s->state == SLOT_SUBMITTED || s->state == SLOT_WORKING) &&
			s->incarnation == eytz_svc->incarnation &&
			eytz_svc_overdue(s->posted_at, now, NULL);
	}
	for (i = 0; i < EYTZ_SVC_MAX_RESIDENT; i++)
		copies += eytz_svc->resident[i].used;
	values[0] = CStringGetTextDatum((eytz_svc->state == SVC_CPU || eytz_svc->state == SVC_GPU) &&
									stalled ? "not answering" :
									svc_state_name(eytz_svc->state));
	values[1] = CStringGetTextDatum(eytz_svc->state == SVC_GPU ? "gpu" : "cpu");
	nulls[1] = eytz_svc->state != SVC_GPU && eytz_svc->state != SVC_CPU;
	values[2] = CStringGetTextDatum(eytz_svc->detail);
	nulls[2] = eytz_svc->detail[0] == '\0';
	values[3] = Int32GetDatum(eytz_svc->pid);
	nulls[3] = eytz_svc->state == SVC_STOPPED;
	values[4] = Int32GetDatum(copies);
	values[5] = Int64GetDatum((int64) eytz_svc->bytes);
	values[6] = Int64GetDatum((int64) eytz_svc->loads);
	values[7] = Int64GetDatum((int64) eytz_svc->hits);
	values[8] = Int64GetDatum((int64) eytz_svc->evictions);
	values[9] = Int64GetDatum((int64) eytz_svc->failures);
	values[10] = Int32GetDatum(used);
	values[11] = Int32GetDatum(eytz_svc->nslots);
	if (locked)
		LWLockRelease(eytz_svc->lock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * eytzgpu_service_resident(): a row per resident copy (a sliced one's: per
 * slice), most recently used first
 */
Datum
eytzgpu_service_resident(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	EytzSvcResident copy[EYTZ_SVC_MAX_RESIDENT];
	int			n = 0;
	int			i;
	bool		locked;

	svc_check_privilege("eytzgpu_service_resident");
	InitMaterializedSRF(fcinfo, 0);
	if (eytz_svc == NULL)
		return (Datum) 0;
	/* without the lock if a stalled worker holds it: a report */
	locked = eytz_svc_lock(LW_SHARED);
	for (i = 0; i < EYTZ_SVC_MAX_RESIDENT; i++)
		if (eytz_svc->resident[i].used)
			copy[n++] = eytz_svc->resident[i];
	if (locked)
		LWLockRelease(eytz_svc->lock);
	while (n > 0)
	{
		Datum		values[10];
		bool		nulls[10] = {false};
		int			best = 0;
		int			k;

		for (i = 1; i < n; i++)
			if (copy[i].last_used > copy[best].last_used)
				best = i;
		values[0] = ObjectIdGetDatum(copy[best].key.dboid);
		values[1] = ObjectIdGetDatum(copy[best].key.indexoid);
		values[2] = NameGetDatum(&copy[best].name);
		values[3] = ObjectIdGetDatum(EytzRelFileNumber(copy[best].key.node));
		values[4] = Int64GetDatum((int64) copy[best].key.generation);
		values[5] = Int64GetDatum((int64) copy[best].key.nentries);
		values[6] = Int64GetDatum((int64) copy[best].bytes);
		values[7] = Int64GetDatum((int64) copy[best].hits);
		values[8] = TimestampTzGetDatum(copy[best].last_used_at);
		values[9] = Int32GetDatum(copy[best].device);
		if (copy[best].nslices == 0)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		/* a sliced copy: a row per slice, its entries, bytes and device */
		for (k = 0; k < copy[best].nslices; k++)
		{
			values[5] = Int64GetDatum((int64) copy[best].slice_entries[k]);
			values[6] = Int64GetDatum((int64) copy[best].slice_bytes[k]);
			values[9] = Int32GetDatum(copy[best].slice_device[k]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
		copy[best] = copy[--n];
	}
	return (Datum) 0;
}

/*
 * eytzgpu_service_gpus(): a row per device of the running service (its
 * GPUs, or with service_device = cpu its CPU devices): what it holds, and
 * whether it failed
 */
Datum
eytzgpu_service_gpus(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	EytzSvcDevice devices[EYTZ_SVC_MAX_DEVICES];
	int			n = 0;
	int			d;
	bool		locked;
	bool		gpu;

	svc_check_privilege("eytzgpu_service_gpus");
	InitMaterializedSRF(fcinfo, 0);
	if (eytz_svc == NULL)
		return (Datum) 0;
	/* without the lock if a stalled worker holds it: a report */
	locked = eytz_svc_lock(LW_SHARED);
	gpu = eytz_svc->state == SVC_GPU;
	if (gpu || eytz_svc->state == SVC_CPU)
	{
		n = Min(eytz_svc->ndevices, EYTZ_SVC_MAX_DEVICES);
		memcpy(devices, eytz_svc->devices, sizeof(EytzSvcDevice) * n);
	}
	if (locked)
		LWLockRelease(eytz_svc->lock);
	for (d = 0; d < n; d++)
	{
		Datum		values[9];
		bool		nulls[9] = {false};

		values[0] = Int32GetDatum(d);
		values[1] = CStringGetTextDatum(gpu ? "gpu" : "cpu");
		values[2] = CStringGetTextDatum(devices[d].name);
		values[3] = CStringGetTextDatum(devices[d].failed ? "failed" : "ok");
		values[4] = Int32GetDatum(devices[d].copies);
		values[5] = Int64GetDatum((int64) devices[d].bytes);
		values[6] = Int64GetDatum((int64) devices[d].loads);
		values[7] = Int64GetDatum((int64) devices[d].hits);
		values[8] = Int64GetDatum((int64) devices[d].failures);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
