/*
 * eytzgpu.c
 *		The entry file of the eytzgpu extension: _PG_init, the access method
 *		handler and the index's reloptions.
 *
 * Each part defines its own GUCs in its own init function: the join's
 * (eytzgpu.enable_join, eytzgpu.batch_size) in eytz_join_init, the lookup
 * seam's and devices' (eytzgpu.device, eytzgpu.gpu_memory_limit,
 * eytzgpu.image_cache_limit) in eytz_lookup_init, the service's
 * (eytzgpu.service_*) in eytz_service_init, which also registers the
 * service under shared_preload_libraries.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/reloptions.h"
#include "commands/vacuum.h"
#include "utils/guc.h"

#include "eytzam.h"
#include "eytzjoin.h"
#include "eytzlookup.h"
#include "eytzmatchsort.h"
#include "eytzservice.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(eytzgpu_handler);

static relopt_kind eytz_relopt_kind;

static relopt_enum_elt_def eytz_layout_values[] = {
	{"auto", EYTZ_LAYOUT_AUTO},
	{"ebs", EYTZ_LAYOUT_EBS},
	{"eks", EYTZ_LAYOUT_EKS},
	{(const char *) NULL}
};

void
_PG_init(void)
{
	eytz_relopt_kind = add_reloption_kind();
	add_enum_reloption(eytz_relopt_kind, "layout",
					   "Eytzinger layout: ebs (binary), eks (k-ary) or auto",
					   eytz_layout_values, EYTZ_LAYOUT_AUTO,
					   "Valid values are \"auto\", \"ebs\" and \"eks\".",
					   AccessExclusiveLock);
	add_int_reloption(eytz_relopt_kind, "fanout",
					  "Fan-out k of the EKS layout (2^p + 1)",
					  EYTZ_DEFAULT_FANOUT, 3, EYTZ_MAX_FANOUT,
					  AccessExclusiveLock);
	add_int_reloption(eytz_relopt_kind, "pending_limit",
					  "Pending entries that trigger a merge into the layout",
					  EYTZ_PENDING_LIMIT_AUTO, 16, 64 * 1024 * 1024,
					  AccessExclusiveLock);
	eytz_alloc_init();
	eytz_join_init();
	eytz_heap_order_init();
	eytz_fdwjoin_init();
	eytz_lookup_init();
	eytz_service_init();
	MarkGUCPrefixReserved("eytzgpu");
}

bytea *
eytz_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"layout", RELOPT_TYPE_ENUM, offsetof(EytzOptions, layout)},
		{"fanout", RELOPT_TYPE_INT, offsetof(EytzOptions, fanout)},
		{"pending_limit", RELOPT_TYPE_INT, offsetof(EytzOptions, pending_limit)},
	};
	bytea	   *result;

	result = (bytea *) build_reloptions(reloptions, validate, eytz_relopt_kind,
										sizeof(EytzOptions), tab, lengthof(tab));
	/* the range 3..33 is checked by the reloption; the form 2^p + 1 here */
	if (validate && result && !eytz_fanout_valid((uint32) ((EytzOptions *) result)->fanout))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for eytzgpu option \"fanout\": %d",
						((EytzOptions *) result)->fanout),
				 errdetail("The fan-out of an EKS layout must be 2^p + 1: 3, 5, 9, 17 or 33.")));
	return result;
}

Datum
eytzgpu_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = BTMaxStrategyNumber;
	amroutine->amsupport = 1;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = false;
	amroutine->amsearcharray = true;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = true;
	amroutine->amusemaintenanceworkmem = true;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_BULKDEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = eytz_build;
	amroutine->ambuildempty = eytz_buildempty;
	amroutine->aminsert = eytz_insert;
	amroutine->ambulkdelete = eytz_bulkdelete;
	amroutine->amvacuumcleanup = eytz_vacuumcleanup;
	amroutine->amcanreturn = eytz_canreturn;
	amroutine->amcostestimate = eytz_costestimate;
	amroutine->amoptions = eytz_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = eytz_buildphasename;
	amroutine->amvalidate = eytz_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = eytz_beginscan;
	amroutine->amrescan = eytz_rescan;
	amroutine->amgettuple = eytz_gettuple;
	amroutine->amgetbitmap = eytz_getbitmap;
	amroutine->amendscan = eytz_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
