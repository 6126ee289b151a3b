/*
 * eytzlookupcost.c
 *		The cost model of the lookup seam's views (eytzlookup.c) and the
 *		planner's question to it (eytz_lookup_plan_cost): the same costs
 *		choose the view at run time and cost the join at plan time, so the
 *		planner charges a load exactly when the executor would do one.
 */
#include "postgres.h"

#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "access/genam.h"
#include "optimizer/optimizer.h"
#include "portability/instr_time.h"
#include "utils/guc.h"
#include "utils/rel.h"

#include "eytzdevice.h"
#include "eytzimage.h"
#include "eytzlookup.h"
#include "eytzservice.h"

/*
 * Costs of the views, in operator evaluations (cpu_operator_cost each),
 * calibrated against PostgreSQL's own sequential scan on the same machine
 * (the 2-core VM; bench/join_results.md, run 18), which keeps the join's
 * costs and times in the same ratio as PostgreSQL's plans'.  A key searched
 * in the image: a batch's keys walk the levels together, so the top levels
 * stay in cache and the misses of many keys overlap; a level costs about a
 * sixth of an operator per comparison of its node (log2(k)).  A key
 * searched through the pages costs 70 operators more per level (the buffer
 * access); loading the image 350 operators per page (a fresh backend's
 * load, its checks and the page faults of its new memory included, at the
 * scale of the plans a cold join competes with: PostgreSQL's hash joins run
 * about three times as long per unit of cost as its seq scan here).  So a
 * join of fewer than about 15,000 keys reads the pages, a larger one loads,
 * unless the pages can be pinned (below).  The GPU: next to nothing per key
 * once resident, the upload about 400 operators per MB over PCIe; through
 * the service, each batch's request pays its round trip (so a batch of a
 * few keys stays on the CPU).
 */
#define PAGE_ACCESS_OPS		70.0
#define PAGE_LOAD_OPS		350.0
/*
 * The pinned view (eytzimage.h): a pin and a header check per page, and a
 * key walks the same levels as in the image with one more load (the page's
 * pointer), a division by a constant and the node's check per level, on
 * 4 kB pages of shared memory (TLB misses where the image has huge pages)
 */
#define PAGE_PIN_OPS		20.0
#define PINNED_LEVEL_OPS	0.1

#define GPU_KEY_OPS			0.05
#define GPU_UPLOAD_OPS_PER_MB 400.0
/*
 * A parallel worker's copy of the image the leader shares (memcpy; the
 * page faults of its fresh memory as this machine charges them,
 * eytz_page_fault_cost)
 */
#define COPY_OPS_PER_MB		10000.0
/*
 * A request to the eytzgpu service: its round trip through shared memory
 * and two latches, with the device's own call (bench/service_latency.sh)
 */
#define SERVICE_REQUEST_OPS	3000.0

#define FAULT_PROBE_PAGES	256
#define OPERATOR_NS			10.0

/*
 * What this machine charges a process for the first touch of a page, in
 * cost units at the model's 10 ns an operator, measured once per backend
 * (best of three over a small mapping): shared, a read of shared memory
 * whose pages exist but are not mapped in this process yet (MADV_DONTNEED),
 * as a fresh worker's reads of shared buffers; else a write of fresh
 * private memory, as a copy into new memory (page faults and the kernel's
 * zeroing).  Cheap on most machines, tens of microseconds a page on some
 * virtual machines.
 */
double
eytz_page_fault_cost(bool shared)
{
	static double measured_ns[2] = {-1, -1};
	long		page = sysconf(_SC_PAGESIZE);
	Size		len = (Size) page * FAULT_PROBE_PAGES;
	double		best_ns = -1;

	/* the time is kept, not the cost: cpu_operator_cost may change */
	if (measured_ns[shared] >= 0)
		return measured_ns[shared] / OPERATOR_NS * cpu_operator_cost;
	for (int round = 0; round < 3; round++)
	{
		volatile char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
								  (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
		instr_time	t0,
					t1;
		bool		ok = mem != MAP_FAILED;

		if (ok && shared)
		{
			for (int i = 0; i < FAULT_PROBE_PAGES; i++)
				mem[(Size) i * page] = 1;
			ok = madvise((void *) mem, len, MADV_DONTNEED) == 0;
		}
		if (ok)
		{
			INSTR_TIME_SET_CURRENT(t0);
			for (int i = 0; i < FAULT_PROBE_PAGES; i++)
			{
				if (shared)
					(void) mem[(Size) i * page];
				else
					mem[(Size) i * page] = 1;
			}
			INSTR_TIME_SET_CURRENT(t1);
			INSTR_TIME_SUBTRACT(t1, t0);
			if (best_ns < 0 || INSTR_TIME_GET_DOUBLE(t1) * 1e9 < best_ns)
				best_ns = INSTR_TIME_GET_DOUBLE(t1) * 1e9;
		}
		if (mem != MAP_FAILED)
			munmap((void *) mem, len);
	}
	measured_ns[shared] = best_ns < 0 ? 0 : best_ns / FAULT_PROBE_PAGES;
	return measured_ns[shared] / OPERATOR_NS * cpu_operator_cost;
}

/*
 * The keys of one batch of nkeys: eytzgpu.batch_size at most (read by name:
 * the join's modules call this one, not the other way round)
 */
static double
keys_per_request(double nkeys)
{
	const char *batch = GetConfigOption("eytzgpu.batch_size", true, false);
	double		keys = Max(nkeys, 1.0);

	if (batch != NULL && strtod(batch, NULL) >= 1.0)
		keys = Min(keys, strtod(batch, NULL));
	return keys;
}

/* Levels a search visits, at least one (an empty index still costs a look) */
static double
levels_of(const EytzMetaPageData *meta)
{
	return Max(meta->levels, 1);
}

/* Search cost per key on the image: a sixth of an operator per comparison a level */
static Cost
image_key_cost(const EytzMetaPageData *meta)
{
	return cpu_operator_cost *
		(1.0 + (levels_of(meta) + 1) * log2(Max(meta->fanout, 2)) / 6.0);
}

/* The same through the buffer manager: a page access per level */
static Cost
pages_key_cost(const EytzMetaPageData *meta)
{
	return image_key_cost(meta) + cpu_operator_cost * PAGE_ACCESS_OPS * levels_of(meta);
}

/* Loading the image: every key and TID page read once */
static Cost
image_load_cost(const EytzMetaPageData *meta)
{
	return cpu_operator_cost * PAGE_LOAD_OPS * (meta->nkeypages + meta->ntidpages);
}

/* Pinning the layout's pages */
static Cost
pin_cost(const EytzMetaPageData *meta)
{
	return cpu_operator_cost * PAGE_PIN_OPS * (meta->nkeypages + meta->ntidpages);
}

static Cost
pinned_key_cost(const EytzMetaPageData *meta)
{
	return image_key_cost(meta) + cpu_operator_cost * PINNED_LEVEL_OPS * levels_of(meta);
}

double
eytz_view_rent_keys(const EytzMetaPageData *meta)
{
	return image_load_cost(meta) / (pinned_key_cost(meta) - image_key_cost(meta));
}

/* Uploading the image to the GPU: by the megabytes it copies */
static Cost
gpu_upload_cost(const EytzMetaPageData *meta)
{
	return cpu_operator_cost * GPU_UPLOAD_OPS_PER_MB *
		(double) meta->nentries * (meta->key_width + sizeof(uint64)) / (1024.0 * 1024.0);
}

/* Pending entries: a binary search per key */
static Cost
pending_key_cost(const EytzMetaPageData *meta)
{
	return meta->npending > 0 ? cpu_operator_cost * log2((double) meta->npending + 1.0) : 0;
}

/*
 * The cheapest view for nkeys keys, given what is resident: its kind, its
 * startup (load) cost and its cost per key.  The pinned pages are
 * considered only when pinned_ok (eytz_image_pages_ok) and no GPU may
 * answer (a GPU copy, the backend's or the service's for every backend, is
 * uploaded from an image), instead of the image where eytzgpu.cpu_view =
 * pinned; the GPU only when gpu_ok.
 */
EytzViewKind
eytz_view_cost(const EytzMetaPageData *meta, bool image_resident, bool pinned_ok,
			   bool gpu_ok, bool gpu_resident, double nkeys, Cost *startup,
			   Cost *per_key)
{
	Cost		pages_total = nkeys * pages_key_cost(meta);
	Cost		image_start = image_resident ? 0 : image_load_cost(meta);
	Cost		image_total = image_start + nkeys * image_key_cost(meta);
	bool		image_ok = !pinned_ok || gpu_ok || eytz_cpu_view != EYTZ_CPU_VIEW_PINNED;
	EytzViewKind	kind = EYTZ_VIEW_PAGES;

	*startup = 0;
	*per_key = pages_key_cost(meta);
	if (image_ok && image_total < pages_total)
	{
		kind = EYTZ_VIEW_IMAGE;
		*startup = image_start;
		*per_key = image_key_cost(meta);
	}
	if (pinned_ok && !gpu_ok &&
		pin_cost(meta) + nkeys * pinned_key_cost(meta) < *startup + nkeys * *per_key)
	{
		kind = EYTZ_VIEW_PINNED;
		*startup = pin_cost(meta);
		*per_key = pinned_key_cost(meta);
	}
	if (gpu_ok)
	{
		Cost		gpu_start = gpu_resident ? 0 : image_start + gpu_upload_cost(meta);
		Cost		gpu_key = GPU_KEY_OPS * cpu_operator_cost;

		/* through the service: each batch (request) pays a round trip */
		if (eytz_service_owns_gpu())
			gpu_key += cpu_operator_cost * SERVICE_REQUEST_OPS / keys_per_request(nkeys);

		if (gpu_start + nkeys * gpu_key < *startup + nkeys * *per_key)
		{
			kind = EYTZ_VIEW_GPU;
			*startup = gpu_start;
			*per_key = gpu_key;
		}
	}
	*per_key += pending_key_cost(meta);
	return kind;
}

void
eytz_lookup_plan_cost(Oid indexoid, double nkeys, bool fresh_backend,
					  double other_pages, Cost *startup_cost, Cost *per_key_cost,
					  double *touch_bytes)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	EytzMetaPageData meta;
	bool		service = eytz_service_owns_gpu();
	bool		gpu_ok;
	bool		resident;
	bool		pinned_ok;
	bool		shared;
	EytzViewKind kind;

	eytz_read_meta(index, &meta);

	/*
	 * A parallel worker uses the GPU only through the service (as
	 * choose_view decides) and starts with nothing resident: it takes up the
	 * image the leader shares when the leader (this backend) has it cached
	 * and the workers would not rather pin the pages (eytzjoinexec.c:
	 * searched in place, or copied), else pins the pages or loads its own
	 * image, first touching the index's shared buffers.  The service's
	 * copy serves every backend.
	 */
	gpu_ok = eytz_device_mode != EYTZ_DEVICE_CPU &&
		(service ? eytz_service_ready(NULL) :
		 !fresh_backend && eytz_device_available(NULL));
	resident = eytz_image_resident(index, meta.generation);
	pinned_ok = eytz_image_pages_ok(index, &meta, other_pages, fresh_backend);
	shared = fresh_backend && !gpu_ok && resident &&
		(!pinned_ok ||
		 eytz_image_in_place(NULL, (Size) meta.nentries * (meta.key_width + sizeof(uint64))));
	*touch_bytes = 0;
	kind = eytz_view_cost(&meta, resident && (shared || !fresh_backend),
						  pinned_ok && !shared, gpu_ok,
						  gpu_ok && (service ? eytz_service_resident(index, &meta) :
									 eytz_device_resident(index, meta.generation)),
						  Max(nkeys, 1.0), startup_cost, per_key_cost);
	if (fresh_backend && kind == EYTZ_VIEW_IMAGE)
	{
		Size		bytes = eytz_image_shared_size(index, &meta, other_pages);
		bool		in_place = eytz_image_in_place(NULL, bytes);

		/* a worker's image, copied or loaded, is fresh memory of its own */
		if (!in_place)
			*startup_cost += ceil(bytes / sysconf(_SC_PAGESIZE)) * eytz_page_fault_cost(false);
		if (shared)
		{
			*touch_bytes = bytes;
			if (!in_place)
				*startup_cost += cpu_operator_cost * COPY_OPS_PER_MB * bytes / (1024.0 * 1024.0);
		}
		else
			*touch_bytes = (double) (meta.nkeypages + meta.ntidpages) * BLCKSZ;
	}
	else if (fresh_backend && kind == EYTZ_VIEW_PINNED)
		*touch_bytes = (double) (meta.nkeypages + meta.ntidpages) * BLCKSZ;
	index_close(index, AccessShareLock);
}
