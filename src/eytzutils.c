/*
 * eytzutils.c
 *		The eytzgpu access method handler, reloptions, GUCs and page initialisation.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/generic_xlog.h"
#include "access/reloptions.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "eytzgpu.h"
#include "eytzjoin.h"

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(eytzgpu_handler);

static relopt_kind eytz_relopt_kind;

static relopt_enum_elt_def eytz_layout_values[] = {
	{"auto", EYTZ_LAYOUT_AUTO},
	{"ebs", EYTZ_LAYOUT_EBS},
	{"eks", EYTZ_LAYOUT_EKS},
	{(const char *) NULL}
};

static void
eytz_validate_fanout(const char *value)
{
	int			k;

	if (value == NULL)
		return;
	k = atoi(value);
	if (!eytz_fanout_valid((uint32) k) || k < 3)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for eytzgpu option \"fanout\": %s", value),
				 errdetail("The fan-out of an EKS layout must be 2^p + 1: 3, 5, 9, 17 or 33.")));
}

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
					  EYTZ_DEFAULT_PENDING_LIMIT, 16, 64 * 1024 * 1024,
					  AccessExclusiveLock);
	eytz_join_init();
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
	if (validate && result)
	{
		EytzOptions *opts = (EytzOptions *) result;
		char		buf[16];

		snprintf(buf, sizeof(buf), "%d", opts->fanout);
		eytz_validate_fanout(buf);
	}
	return result;
}

/*
 * Layout, fan-out and pending limit of an index about to hold n entries:
 * 'auto' takes EBS while keys and TIDs fit in a GPU's L2 (the paper's rule).
 */
void
eytz_choose_layout(Relation index, uint64 n, int key_width,
				   int *layout, int *fanout, int *pending_limit)
{
	EytzOptions *opts = (EytzOptions *) index->rd_options;
	int			lay = opts ? opts->layout : EYTZ_LAYOUT_AUTO;

	if (lay == EYTZ_LAYOUT_AUTO)
		lay = (n * (key_width + sizeof(ItemPointerData)) <= EYTZ_AUTO_EBS_MAX_BYTES)
			? EYTZ_LAYOUT_EBS : EYTZ_LAYOUT_EKS;
	*layout = lay;
	*fanout = lay == EYTZ_LAYOUT_EBS ? 2 : (opts ? opts->fanout : EYTZ_DEFAULT_FANOUT);
	*pending_limit = opts ? opts->pending_limit : EYTZ_DEFAULT_PENDING_LIMIT;
}

const char *
eytz_layout_name(int layout)
{
	return layout == EYTZ_LAYOUT_EBS ? "ebs" : "eks";
}

/* keys per page: as many as fit, rounded down to whole nodes */
int
eytz_keys_per_page(int key_width, int fanout)
{
	int			fit = EYTZ_PAGE_CAPACITY / key_width;

	return fit - fit % (fanout - 1);
}

void
eytz_init_page(Page page, uint16 flags)
{
	EytzPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(EytzPageOpaqueData));
	opaque = EytzPageGetOpaque(page);
	opaque->next = InvalidBlockNumber;
	opaque->count = 0;
	opaque->flags = flags;
	opaque->page_id = EYTZ_PAGE_ID;
}

void
eytz_init_metapage(Page page, int key_width, int layout, int fanout,
				   int pending_limit)
{
	EytzMetaPage meta;

	eytz_init_page(page, EYTZ_PAGE_META);
	meta = EytzPageGetMeta(page);
	memset(meta, 0, sizeof(EytzMetaPageData));
	meta->magic = EYTZ_MAGIC;
	meta->version = EYTZ_VERSION;
	meta->key_width = key_width;
	meta->layout = layout;
	meta->fanout = fanout;
	meta->keys_per_page = eytz_keys_per_page(key_width, fanout);
	meta->keys_start = InvalidBlockNumber;
	meta->tids_start = InvalidBlockNumber;
	meta->pending_head = InvalidBlockNumber;
	meta->pending_tail = InvalidBlockNumber;
	meta->pending_limit = pending_limit;
	/* let full-page images skip the unused part of the page */
	((PageHeader) page)->pd_lower = (char *) meta + sizeof(EytzMetaPageData) - (char *) page;
}

char *
eytz_buildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case EYTZ_PHASE_LOAD:
			return "loading tuples";
		case EYTZ_PHASE_SORT:
			return "sorting keys";
		case EYTZ_PHASE_WRITE:
			return "writing Eytzinger layout";
		default:
			return NULL;
	}
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
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = true;
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_BULKDEL;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = eytz_build;
	amroutine->ambuildempty = eytz_buildempty;
	amroutine->aminsert = eytz_insert;
	amroutine->ambulkdelete = eytz_bulkdelete;
	amroutine->amvacuumcleanup = eytz_vacuumcleanup;
	amroutine->amcanreturn = NULL;
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
