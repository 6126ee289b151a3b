/*
 * eytzjoinexplain.c
 *		What the batched join shows under EXPLAIN (ANALYZE): its counters,
 *		the stage budget and the cost of its clock reads, per process; and
 *		the parallel join's shared memory, which carries the workers'
 *		reports back to the leader and tells them where the leader's image
 *		is (through the lookup seam).
 */
#include "postgres.h"

#include "port/atomics.h"
#include "utils/lsyscache.h"

#include "eytzjoinexec.h"

/*
 * Nanoseconds one clock read takes here: the least mean of eight rounds of
 * 16 (a round the process was preempted in does not count).  The stages'
 * clock reads, a few a row with TIMING, are part of the stage times, and
 * EXPLAIN says how much (Stage Clock Cost).
 */
double
eytz_join_clock_read_cost(void)
{
	double		best = 0;
	int			round,
				i;

	for (round = 0; round < 8; round++)
	{
		instr_time	start,
					now;

		INSTR_TIME_SET_CURRENT(start);
		for (i = 0; i < 16; i++)
			INSTR_TIME_SET_CURRENT(now);
		INSTR_TIME_SUBTRACT(now, start);
		if (round == 0 || INSTR_TIME_GET_DOUBLE(now) < best)
			best = INSTR_TIME_GET_DOUBLE(now);
	}
	return best * 1e9 / 16;
}


static const char *
join_type_name(JoinType jt)
{
	switch (jt)
	{
		case JOIN_INNER:
			return "Inner";
		case JOIN_LEFT:
			return "Left";
		case JOIN_SEMI:
			return "Semi";
		case JOIN_ANTI:
			return "Anti";
		default:
			return "?";
	}
}

/* Add what st did so far to report r */
static void
report_add(EytzJoinState *st, EytzJoinReport *r)
{
	int			i;

	if (!st->started)
		return;
	/* the leaves' lookups add up; a device each searched leaf's differs from: "mixed" */
	for (i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];
		const EytzLookupStats *ls = eytz_lookup_stats(leaf->lookup);

		if (leaf->searches > 0 || (i == 0 && r->device[0] == '\0'))
		{
			if (r->device[0] == '\0' || (i == 0 && leaf->searches == 0))
				strlcpy(r->device, ls->device, sizeof(r->device));
			else if (strcmp(r->device, ls->device) != 0)
				strlcpy(r->device, "mixed", sizeof(r->device));
		}
		if (ls->cpu_reason && r->cpu_reason[0] == '\0')
			strlcpy(r->cpu_reason, ls->cpu_reason, sizeof(r->cpu_reason));
		r->lookups += ls->lookups;
		r->matches += ls->matches;
		r->heap_blocks += eytz_heap_pages(leaf->hf);
		r->gpu_batches += ls->gpu_batches;
		r->overlap_batches += ls->overlap_batches;
		r->wait_ms += ls->wait_ms;
		r->acquire_ms += ls->acquire_ms;
		r->search_ms += ls->search_ms;
		r->transfer_ms += ls->transfer_ms;
		r->kernel_ms += ls->kernel_ms;
		r->sort_ms += ls->sort_ms;
		r->leaf_searches += leaf->searches;
	}
	eytz_heap_order_report(st, r);
	r->batches += st->nbatches;
	r->chunks += st->nchunks;
	r->fetches += st->nfetches;
	r->outer_pages += eytz_outer_pages(st->outer_scan);
	for (i = 0; i < NUM_STAGES; i++)
		r->stage_ms[i] += INSTR_TIME_GET_MILLISEC(st->stage_time[i]);
	r->clock_reads += st->clock_reads;
	r->clock_ms += st->clock_reads * st->clock_read_ns / 1e6;
}

/* The counters and (with TIMING) the stage budget of one process */
static void
explain_report(const EytzJoinReport *r, bool partitioned, ExplainState *es)
{
	ExplainPropertyText("Device", r->device, es);
	if (r->cpu_reason[0] != '\0')
		ExplainPropertyText("CPU Reason", r->cpu_reason, es);
	ExplainPropertyUInteger("Batches", NULL, r->batches, es);
	if (partitioned)
		ExplainPropertyUInteger("Leaf Searches", NULL, r->leaf_searches, es);
	ExplainPropertyUInteger("Chunks", NULL, r->chunks, es);
	ExplainPropertyUInteger("Lookups", NULL, r->lookups, es);
	ExplainPropertyUInteger("Matches", NULL, r->matches, es);
	ExplainPropertyUInteger("Heap Fetches", NULL, r->fetches, es);
	ExplainPropertyUInteger("Heap Blocks", NULL, r->heap_blocks, es);
	/* the outer Seq Scan's pages that the join read itself */
	if (r->outer_pages > 0)
		ExplainPropertyUInteger("Outer Pages Read Directly", NULL, r->outer_pages, es);
	if (r->sorted_batches > 0)
		ExplainPropertyText("Heap Order",
							psprintf("one pass, %llu matches of %llu batches sorted (%s %lld kB)",
									 (unsigned long long) r->sorted_matches,
									 (unsigned long long) r->sorted_batches,
									 r->sort_disk ? "disk" : "memory",
									 (long long) r->sort_kb), es);
	if (r->image_share != EYTZ_SHARE_NONE)
		ExplainPropertyText("Shared Image", r->image_share == EYTZ_SHARE_IN_PLACE ?
							"in place" : "copied", es);
	/* without TIMING: the stages timed per batch and chunk */
	ExplainPropertyFloat("Outer Time", "ms", r->stage_ms[STAGE_FILL], 3, es);
	ExplainPropertyFloat("Lookup Time", "ms", r->stage_ms[STAGE_LOOKUP], 3, es);
	ExplainPropertyFloat("Lookup Acquire Time", "ms", r->acquire_ms, 3, es);
	ExplainPropertyFloat("Lookup Search Time", "ms", r->search_ms, 3, es);
	if (r->gpu_batches > 0)
	{
		ExplainPropertyFloat("GPU Transfer Time", "ms", r->transfer_ms, 3, es);
		ExplainPropertyFloat("GPU Kernel Time", "ms", r->kernel_ms, 3, es);
	}
	ExplainPropertyFloat("Match Sort Time", "ms", r->sort_ms, 3, es);
	/* the pipeline: batches whose lookup ran while the next was read */
	if (r->overlap_batches > 0)
	{
		ExplainPropertyUInteger("Lookup Overlap", "batches", r->overlap_batches, es);
		ExplainPropertyFloat("Lookup Wait Time", "ms", r->wait_ms, 3, es);
	}
	if (!es->timing)
		return;
	ExplainPropertyFloat("Heap Fetch Time", "ms", r->stage_ms[STAGE_FETCH], 3, es);
	ExplainPropertyFloat("Qual Time", "ms", r->stage_ms[STAGE_QUAL], 3, es);
	ExplainPropertyFloat("Own Time", "ms", r->stage_ms[STAGE_OWN], 3, es);
	/* how much of the stage times above their own clock reads took */
	ExplainPropertyUInteger("Stage Clock Reads", NULL, r->clock_reads, es);
	ExplainPropertyFloat("Stage Clock Cost", "ms", r->clock_ms, 3, es);
}

/*
 * The parallel workers' reports, each under "Worker N:" in text (a "Join
 * Workers" list otherwise: the node's own "Workers" list is explain.c's)
 */
static void
explain_workers(EytzJoinState *st, ExplainState *es)
{
	int			i;
	int			ndone = 0;

	for (i = 0; i < st->nworker_reports; i++)
		ndone += st->worker_reports[i].done;
	if (ndone == 0)
		return;
	ExplainOpenGroup("Join Workers", "Join Workers", false, es);
	for (i = 0; i < st->nworker_reports; i++)
	{
		if (!st->worker_reports[i].done)
			continue;
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Worker %d:\n", i);
			es->indent++;
		}
		ExplainOpenGroup("Worker", NULL, true, es);
		if (es->format != EXPLAIN_FORMAT_TEXT)
			ExplainPropertyInteger("Worker Number", NULL, i, es);
		explain_report(&st->worker_reports[i], st->parentoid != InvalidOid, es);
		ExplainCloseGroup("Worker", NULL, true, es);
		if (es->format == EXPLAIN_FORMAT_TEXT)
			es->indent--;
	}
	ExplainCloseGroup("Join Workers", "Join Workers", false, es);
}

/*
 * VERBOSE: per leaf of a partitioned inner table (the leader's part), its
 * index, the batches that searched it, its lookups and matches, its device
 */
static void
explain_leaves(EytzJoinState *st, ExplainState *es)
{
	ExplainOpenGroup("Leaves Searched", "Leaves Searched", false, es);
	for (int i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];
		const EytzLookupStats *ls = eytz_lookup_stats(leaf->lookup);

		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str,
							 "Leaf %s: Index: %s  Searches: " UINT64_FORMAT
							 "  Lookups: " UINT64_FORMAT "  Matches: " UINT64_FORMAT
							 "  Device: %s\n",
							 RelationGetRelationName(leaf->heap),
							 RelationGetRelationName(leaf->index),
							 leaf->searches, ls->lookups, ls->matches,
							 leaf->searches > 0 ? ls->device : "none");
			continue;
		}
		ExplainOpenGroup("Leaf", NULL, true, es);
		ExplainPropertyText("Table", RelationGetRelationName(leaf->heap), es);
		ExplainPropertyText("Index", RelationGetRelationName(leaf->index), es);
		ExplainPropertyUInteger("Searches", NULL, leaf->searches, es);
		ExplainPropertyUInteger("Lookups", NULL, ls->lookups, es);
		ExplainPropertyUInteger("Matches", NULL, ls->matches, es);
		ExplainPropertyText("Device", leaf->searches > 0 ? ls->device : "none", es);
		ExplainCloseGroup("Leaf", NULL, true, es);
	}
	ExplainCloseGroup("Leaves Searched", "Leaves Searched", false, es);
}

void
eytz_join_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	EytzJoinState *st = (EytzJoinState *) node;
	EytzMetaPageData meta;
	char		buf[64];
	uint64		kept_queries;
	bool		image_copied;

	ExplainPropertyText("Join Type", join_type_name(st->jointype), es);
	if (OidIsValid(st->parentoid))
	{
		char	   *name = get_rel_name(st->parentoid);

		ExplainPropertyText("Partitioned Table", name ? name : "?", es);
		ExplainPropertyInteger("Leaves", NULL, st->nleaves, es);
		ExplainPropertyInteger("Partitions Pruned", NULL, st->npruned, es);
		if (st->npruned_start >= 0)
			ExplainPropertyInteger("Leaves Pruned at Start", NULL, st->npruned_start, es);
		ExplainPropertyText("Key Routing",
							OidIsValid(st->route_opno) && st->point_keys &&
							(st->rcount == NULL || st->route != NULL) ?
							"partition key" : "every leaf",
							es);
	}
	else
	{
		eytz_read_meta(st->index, &meta);
		ExplainPropertyText("Index", RelationGetRelationName(st->index), es);
		if (eytz_meta_layout(&meta) == EYTZ_LAYOUT_EKS)
			snprintf(buf, sizeof(buf), "eks (fanout %u)", meta.fanout);
		else
			snprintf(buf, sizeof(buf), "ebs");
		ExplainPropertyText("Layout", buf, es);
	}
	if (st->index_only)
		ExplainPropertyBool("Index Only", true, es);
	if (!es->analyze)
		return;
	/* how the leader shared its images: kept (and the queries they served) */
	kept_queries = 0;
	image_copied = false;
	for (int i = 0; i < st->nleaves; i++)
	{
		uint64		kept;
		bool		copied;

		eytz_lookup_share_report(st->leaves[i].share, &kept, &copied);
		kept_queries += kept;
		image_copied |= copied;
	}
	if (kept_queries > 0)
	{
		ExplainPropertyText("Image Shared", "kept", es);
		ExplainPropertyUInteger("Image Shared Queries", NULL, kept_queries, es);
	}
	else if (image_copied)
		ExplainPropertyText("Image Shared", "copied", es);
	/* the leader's own part, when it ran the node */
	if (st->started)
	{
		EytzJoinReport own;

		memset(&own, 0, sizeof(own));
		report_add(st, &own);
		explain_report(&own, OidIsValid(st->parentoid), es);
		if (es->verbose && OidIsValid(st->parentoid))
			explain_leaves(st, es);
	}
	explain_workers(st, es);
}

/*
 * Parallel join (a partial path under Gather): the outer scan divides the
 * work and each process pins its own view of each index.  Shared memory
 * holds the workers' reports for the leader's EXPLAIN ANALYZE and, per
 * leaf, when the leader has its index's image cached and the workers search
 * images, the way to it (the lookup seam's eytz_lookup_share_*), which
 * spares each worker a load; the copies of images, if any, come last.
 */
static Size
reports_size(int nworkers)
{
	return MAXALIGN(add_size(offsetof(EytzJoinShared, reports),
							 mul_size(sizeof(EytzJoinReport), nworkers)));
}

/* The per-leaf table after the reports: the images' shared states, then the copies' offsets */
static Size
leaf_table_size(int nleaves)
{
	return MAXALIGN(sizeof(EytzLookupShared) * nleaves) + MAXALIGN(sizeof(Size) * nleaves);
}

static EytzLookupShared *
shared_images(EytzJoinShared *shared)
{
	return (EytzLookupShared *) ((char *) shared + reports_size(shared->nworkers));
}

static Size *
shared_copy_offsets(EytzJoinShared *shared)
{
	return (Size *) ((char *) shared_images(shared) +
					 MAXALIGN(sizeof(EytzLookupShared) * shared->nleaves));
}

Size
eytz_join_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	EytzJoinState *st = (EytzJoinState *) node;
	Size		size = add_size(reports_size(pcxt->nworkers), leaf_table_size(st->nleaves));

	for (int i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];

		leaf->share_bytes = MAXALIGN(eytz_lookup_share_estimate(&leaf->share, leaf->index,
																leaf->other_pages,
																st->css.ss.ps.state->es_query_cxt));
		size = add_size(size, leaf->share_bytes);
	}
	return size;
}

void
eytz_join_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	EytzJoinState *st = (EytzJoinState *) node;
	EytzJoinShared *shared = (EytzJoinShared *) coordinate;
	Size		off = reports_size(pcxt->nworkers) + leaf_table_size(st->nleaves);

	memset(shared, 0, off);
	shared->nworkers = pcxt->nworkers;
	shared->nleaves = st->nleaves;
	for (int i = 0; i < st->nleaves; i++)
	{
		EytzJoinLeaf *leaf = &st->leaves[i];

		shared_copy_offsets(shared)[i] = off;
		eytz_lookup_share_init(leaf->share, leaf->index, &shared_images(shared)[i],
							   (char *) shared + off);
		off += leaf->share_bytes;
	}
	st->shared = shared;
}

/* A rescan relaunches the workers: their reports add up over the scans */
void
eytz_join_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	((EytzJoinState *) node)->shared = (EytzJoinShared *) coordinate;
}

void
eytz_join_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	EytzJoinState *st = (EytzJoinState *) node;
	EytzJoinShared *shared = (EytzJoinShared *) coordinate;
	instr_time	t0,
				t1;

	st->shared = shared;
	INSTR_TIME_SET_CURRENT(t0);
	for (int i = 0; i < st->nleaves && i < shared->nleaves; i++)
	{
		EytzShareKind kind;

		if (!shared_images(shared)[i].has_image)
			continue;
		kind = eytz_lookup_attach(st->leaves[i].index, &shared_images(shared)[i],
								  (char *) shared + shared_copy_offsets(shared)[i]);
		if (st->image_share == EYTZ_SHARE_NONE)
			st->image_share = kind;
	}
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	st->import_ms = INSTR_TIME_GET_MILLISEC(t1);
}

/*
 * A worker leaves its report; the leader copies the reports of the workers
 * that are done (all of them unless a LIMIT stopped the scan early) before
 * Gather frees the shared memory: the leader shuts its children down first.
 */
void
eytz_join_shutdown(CustomScanState *node)
{
	EytzJoinState *st = (EytzJoinState *) node;
	int			i;

	if (st->shared == NULL)
		return;
	if (IsParallelWorker())
	{
		EytzJoinReport *r;

		if (ParallelWorkerNumber >= st->shared->nworkers)
			return;
		r = &st->shared->reports[ParallelWorkerNumber];
		report_add(st, r);
		/* taking up the shared image is part of pinning its view */
		r->acquire_ms += st->import_ms;
		st->import_ms = 0;
		r->image_share = st->image_share;
		pg_write_barrier();
		r->done = true;
		return;
	}
	if (st->worker_reports == NULL)
		st->worker_reports = MemoryContextAllocZero(st->css.ss.ps.state->es_query_cxt,
													sizeof(EytzJoinReport) * Max(st->shared->nworkers, 1));
	st->nworker_reports = st->shared->nworkers;
	for (i = 0; i < st->shared->nworkers; i++)
	{
		if (!st->shared->reports[i].done)
			continue;
		pg_read_barrier();
		st->worker_reports[i] = st->shared->reports[i];
	}
	/* Gather frees the shared memory next */
	st->shared = NULL;
}
