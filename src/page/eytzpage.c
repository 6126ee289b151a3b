/*
 * eytzpage.c
 *		The page layer of eytzgpu: every read of the metapage and of a
 *		layout region goes through here (of the pending list through
 *		eytzpagepending.c), with the checks the readers rely on.
 *
 * Nothing on a page is trusted: the metapage's fields must be in range and
 * agree with each other and with the file's size, every page must have the
 * type its position says, every TID must have an offset a heap page can
 * hold (tombstones excepted), and a walk of the pending list is bounded by
 * the number of blocks in the file, so that a cycle is reported rather than
 * followed forever.  Any violation raises ERRCODE_INDEX_CORRUPTED naming the
 * index and block, so that scans, joins, merges, VACUUM and eytzgpu_verify()
 * never act on a damaged index.
 *
 * The generation protocol: a reader reads the metapage once and then the
 * region and pending list it names, without re-checking.  That is safe
 * because a merge never writes into pages that a running transaction may
 * still read: the pages it replaces are "retired" in the metapage with the
 * merge's own XID, and only become reusable once
 * GlobalVisCheckRemovableFullXid() says no snapshot older than that is left,
 * as nbtree does with its deleted pages, or once no other transaction holds
 * the index open and no scan of the merging backend is open (eytzmerge.c).
 * A reader must therefore keep the index open while it reads (every
 * executor node does) and may hold the generation across calls.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "eytzinclude.h"

/*
 * A page that is not what the generation a reader started on says.  On a hot
 * standby that is how a recycling on the primary shows (the primary does not
 * know the standby's snapshots without hot_standby_feedback): report it as
 * the recovery conflict it is.
 */
static void
page_mismatch(Relation index, const EytzMetaPageData *meta, BlockNumber blkno,
			  const char *detail)
{
	if (RecoveryInProgress())
	{
		Buffer		buf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
		uint64		generation;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		generation = EytzPageGetMeta(BufferGetPage(buf))->generation;
		UnlockReleaseBuffer(buf);
		if (generation != meta->generation)
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("canceling statement due to conflict with recovery"),
					 errdetail("The primary reused pages of index \"%s\" that this query was reading.",
							   RelationGetRelationName(index)),
					 errhint("Set hot_standby_feedback = on on the standby.")));
	}
	EYTZ_CORRUPT(index, blkno, "%s", detail);
}

/*
 * Check a data page's header and type, and that it holds bytes of entries
 * (for a pending page: as many as its count says, at most a page's worth).
 */
void
eytz_check_page(Relation index, const EytzMetaPageData *meta, Page page,
				BlockNumber blkno, uint16 flags, Size bytes)
{
	static const char *const names[] = {"", "meta", "key", "TID", "pending", "free",
	"included value", "NULL"};
	PageHeader	ph = (PageHeader) page;
	char		detail[128];

	/* the special space's position first: the type is read from there */
	if (PageIsNew(page) ||
		ph->pd_special != BLCKSZ - MAXALIGN(sizeof(EytzPageOpaqueData)) ||
		EytzPageGetOpaque(page)->page_id != EYTZ_PAGE_ID ||
		EytzPageGetOpaque(page)->flags != flags)
	{
		snprintf(detail, sizeof(detail), "Block %u should be a %s page.",
				 blkno, names[flags]);
		page_mismatch(index, meta, blkno, detail);
	}
	if (flags == EYTZ_PAGE_PENDING)
	{
		int			ncols = eytz_include_count(index);

		if (EytzPageGetOpaque(page)->count > eytz_pending_per_page(ncols))
			EYTZ_CORRUPT(index, blkno, "Pending page %u counts %u entries.",
						 blkno, EytzPageGetOpaque(page)->count);
		bytes = EytzPageGetOpaque(page)->count * eytz_pending_entry_size(ncols);
	}
	if (ph->pd_lower != MAXALIGN(SizeOfPageHeaderData) + bytes)
	{
		snprintf(detail, sizeof(detail),
				 "%s page %u holds %u bytes of entries, expected %zu.",
				 names[flags], blkno,
				 (unsigned) (ph->pd_lower - MAXALIGN(SizeOfPageHeaderData)),
				 bytes);
		page_mismatch(index, meta, blkno, detail);
	}
}

/*
 * The metapage's fields in range and consistent with each other and with a
 * file of nblocks blocks.
 */
static void
check_meta(Relation index, const EytzMetaPageData *m, BlockNumber nblocks)
{
	uint64		n = m->nentries;
	EytzInclude inc;

	eytz_include_get(index, &inc);

	if (m->magic != EYTZ_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not an eytzgpu index",
						RelationGetRelationName(index))));
	if (m->version != EYTZ_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" has eytzgpu format version %u, expected %u",
						RelationGetRelationName(index), m->version, EYTZ_VERSION),
				 errhint("REINDEX the index.")));
	if (m->key_width != 4 && m->key_width != 8)
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO, "Key width %u is neither 4 nor 8.",
					 m->key_width);
	if (!eytz_fanout_valid(m->fanout))
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Fan-out %u is not a valid layout.", m->fanout);
	if (m->keys_per_page != (uint32) eytz_keys_per_page(m->key_width, m->fanout))
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO, "Metapage says %u keys per page, expected %d.",
					 m->keys_per_page, eytz_keys_per_page(m->key_width, m->fanout));
	if (m->ndead > n || m->levels != eytz_shape(n, m->fanout).levels)
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Metapage counts " UINT64_FORMAT " entries, " UINT64_FORMAT " tombstones and %u levels, which do not agree.",
					 n, m->ndead, m->levels);
	if (m->nkeypages != (n + m->keys_per_page - 1) / m->keys_per_page ||
		m->ntidpages != (n + EYTZ_TIDS_PER_PAGE - 1) / EYTZ_TIDS_PER_PAGE)
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Page counts %u/%u do not fit " UINT64_FORMAT " entries.",
					 m->nkeypages, m->ntidpages, n);
	if (n > 0 ? (m->keys_start == EYTZ_METAPAGE_BLKNO || m->keys_start >= nblocks ||
				 m->tids_start != m->keys_start + m->nkeypages ||
				 (uint64) m->keys_start + eytz_region_npages(m, &inc) > nblocks)
		: (m->keys_start != InvalidBlockNumber || m->tids_start != InvalidBlockNumber))
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Layout region at block %u does not fit in the %u blocks of the file.",
					 m->keys_start, nblocks);
	if ((m->pending_head == InvalidBlockNumber) != (m->pending_tail == InvalidBlockNumber) ||
		(m->pending_head == InvalidBlockNumber && m->npending > 0) ||
		(m->pending_head != InvalidBlockNumber &&
		 (m->pending_head == EYTZ_METAPAGE_BLKNO || m->pending_head >= nblocks ||
		  m->pending_tail == EYTZ_METAPAGE_BLKNO || m->pending_tail >= nblocks ||
		  eytz_block_in_region(m, &inc, m->pending_head) ||
		  eytz_block_in_region(m, &inc, m->pending_tail))))
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Pending list from block %u to %u with " UINT64_FORMAT " entries is not valid in %u blocks.",
					 m->pending_head, m->pending_tail, m->npending, nblocks);
	if (m->pending_limit == 0 || m->nretired > EYTZ_MAX_RETIRED)
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO,
					 "Pending limit %u or %u retired generations out of range.",
					 m->pending_limit, m->nretired);
}

/* Copy of the metapage contents, checked */
void
eytz_read_meta(Relation index, EytzMetaPageData *meta)
{
	Buffer		buf = ReadBuffer(index, EYTZ_METAPAGE_BLKNO);
	Page		page;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (PageIsNew(page) ||
		((PageHeader) page)->pd_special != BLCKSZ - MAXALIGN(sizeof(EytzPageOpaqueData)) ||
		EytzPageGetOpaque(page)->flags != EYTZ_PAGE_META)
	{
		UnlockReleaseBuffer(buf);
		EYTZ_CORRUPT(index, EYTZ_METAPAGE_BLKNO, "Block 0 is not a metapage.");
	}
	memcpy(meta, EytzPageGetMeta(page), sizeof(EytzMetaPageData));
	UnlockReleaseBuffer(buf);
	check_meta(index, meta, RelationGetNumberOfBlocks(index));
}

/* Is blkno one of the layout region's pages? */
bool
eytz_block_in_region(const EytzMetaPageData *meta, const EytzInclude *inc,
					 BlockNumber blkno)
{
	return meta->keys_start != InvalidBlockNumber &&
		blkno >= meta->keys_start &&
		blkno - meta->keys_start < eytz_region_npages(meta, inc);
}

/* Is blkno in the region of a generation the metapage lists as retired? */
bool
eytz_block_retired_region(Page metapage, BlockNumber blkno)
{
	const EytzMetaPageData *meta = EytzPageGetMeta(metapage);
	const EytzRetired *ret = EytzPageGetRetired(metapage);
	uint32		i;

	for (i = 0; i < meta->nretired; i++)
		if (ret[i].region_start != InvalidBlockNumber &&
			blkno >= ret[i].region_start &&
			blkno - ret[i].region_start < ret[i].region_len)
			return true;
	return false;
}

/*
 * A new page for the pending list, returned exclusively locked: a free page
 * from the free space map, or a new block.  The caller holds the metapage
 * (metapage) locked.  The map is only a hint (it is not WAL-logged), so a
 * page it offers is taken only if it is no live or retired page: not in the
 * current or a retired region, and not a metapage or pending page (retired
 * pending pages keep their type until they are recycled).
 */
Buffer
eytz_new_buffer(Relation index, Page metapage)
{
	const EytzMetaPageData *meta = EytzPageGetMeta(metapage);
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	Buffer		buf;
	bool		needLock;
	EytzInclude inc;

	eytz_include_get(index, &inc);

	for (;;)
	{
		BlockNumber blkno = GetFreeIndexPage(index);

		if (blkno == InvalidBlockNumber)
			break;
		if (blkno == EYTZ_METAPAGE_BLKNO || blkno >= nblocks ||
			eytz_block_in_region(meta, &inc, blkno) ||
			eytz_block_retired_region(metapage, blkno))
			continue;
		buf = ReadBuffer(index, blkno);
		if (ConditionalLockBuffer(buf))
		{
			Page		page = BufferGetPage(buf);

			if (PageIsNew(page) ||
				(EytzPageGetOpaque(page)->flags != EYTZ_PAGE_META &&
				 EytzPageGetOpaque(page)->flags != EYTZ_PAGE_PENDING))
				return buf;
			LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		}
		ReleaseBuffer(buf);
	}

	needLock = !RELATION_IS_LOCAL(index);
	if (needLock)
		LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (needLock)
		UnlockRelationForExtension(index, ExclusiveLock);
	return buf;
}

/* ---- the layout region ---- */

/* Switch *buf to data page p of array a of the region, checked */
static const char *
region_page(Relation index, const EytzMetaPageData *m, const EytzInclude *inc,
			BufferAccessStrategy strategy, Buffer *buf, uint32 p, int a)
{
	EytzRegionArray arr;
	BlockNumber blkno;
	Page		page;

	eytz_region_array(m, inc, a, &arr);
	blkno = arr.start + p;
	if (BufferIsValid(*buf))
		UnlockReleaseBuffer(*buf);
	*buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
	LockBuffer(*buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(*buf);
	eytz_check_page(index, m, page, blkno, arr.flags,
					eytz_region_array_bytes(&arr, m->nentries, p));
	return PageGetContents(page);
}

void
eytz_page_bad_tid(Relation index, const EytzMetaPageData *m, BlockNumber blkno,
		const ItemPointerData *tid)
{
	char		detail[128];

	snprintf(detail, sizeof(detail), "TID (%u,%u) has an offset outside 1..%d.",
			 ItemPointerGetBlockNumberNoCheck(tid),
			 ItemPointerGetOffsetNumberNoCheck(tid), (int) MaxHeapTuplesPerPage);
	page_mismatch(index, m, blkno, detail);
}

/*
 * Start reading the region of the generation meta describes (meta was read
 * with eytz_read_meta()).  The reader holds at most one key page and one TID
 * page pinned and share-locked; eytz_region_release() drops them (before
 * returning to the executor) and the next access takes them again.
 */
void
eytz_region_begin(EytzRegionReader *r, Relation index,
				  const EytzMetaPageData *meta, BufferAccessStrategy strategy)
{
	int			c;

	r->index = index;
	r->meta = *meta;
	r->strategy = strategy;
	r->keybuf = InvalidBuffer;
	r->tidbuf = InvalidBuffer;
	eytz_include_get(index, &r->inc);
	for (c = 0; c < r->inc.ncols; c++)
		r->valbuf[c] = r->nullbuf[c] = InvalidBuffer;
}

uint64
eytz_region_key(EytzRegionReader *r, uint64 slot)
{
	uint32		p = slot / r->meta.keys_per_page;

	Assert(slot < r->meta.nentries);
	if (!BufferIsValid(r->keybuf) || p != r->keypage)
	{
		r->keys = region_page(r->index, &r->meta, &r->inc, r->strategy,
							  &r->keybuf, p, EYTZ_ARRAY_KEYS);
		r->keypage = p;
	}
	return eytz_key_at(r->keys, r->meta.key_width, slot % r->meta.keys_per_page);
}

/* The TID of a slot; false for a tombstone */
bool
eytz_region_tid(EytzRegionReader *r, uint64 slot, ItemPointer tid)
{
	uint32		p = slot / EYTZ_TIDS_PER_PAGE;

	Assert(slot < r->meta.nentries);
	if (!BufferIsValid(r->tidbuf) || p != r->tidpage)
	{
		r->tids = (const ItemPointerData *)
			region_page(r->index, &r->meta, &r->inc, r->strategy, &r->tidbuf, p,
						EYTZ_ARRAY_TIDS);
		r->tidpage = p;
	}
	*tid = r->tids[slot % EYTZ_TIDS_PER_PAGE];
	if (!eytz_tid_ok(tid, true))
		eytz_page_bad_tid(r->index, &r->meta, r->meta.tids_start + p, tid);
	return ItemPointerGetBlockNumberNoCheck(tid) != InvalidBlockNumber;
}

/* The included values of a slot (tombstones keep theirs) */
void
eytz_region_include(EytzRegionReader *r, uint64 slot, Datum *values,
					bool *isnull)
{
	int			c;

	Assert(slot < r->meta.nentries);
	for (c = 0; c < r->inc.ncols; c++)
	{
		int			width = r->inc.width[c];
		uint32		vp = slot / eytz_include_per_page(width);
		uint32		np = slot / EYTZ_NULLS_PER_PAGE;
		uint64		bit = slot % EYTZ_NULLS_PER_PAGE;

		if (!BufferIsValid(r->nullbuf[c]) || np != r->nullpage[c])
		{
			r->nulls[c] = (const uint8 *)
				region_page(r->index, &r->meta, &r->inc, r->strategy,
							&r->nullbuf[c], np, EYTZ_ARRAY_NULLS(c));
			r->nullpage[c] = np;
		}
		isnull[c] = (r->nulls[c][bit / 8] >> (bit % 8)) & 1;
		if (isnull[c])
		{
			values[c] = (Datum) 0;
			continue;
		}
		if (!BufferIsValid(r->valbuf[c]) || vp != r->valpage[c])
		{
			r->vals[c] = region_page(r->index, &r->meta, &r->inc, r->strategy,
									 &r->valbuf[c], vp, EYTZ_ARRAY_VALUES(c));
			r->valpage[c] = vp;
		}
		values[c] = eytz_include_fetch(r->vals[c] +
									   (slot % eytz_include_per_page(width)) * width,
									   width);
	}
}

void
eytz_region_release(EytzRegionReader *r)
{
	int			c;

	if (BufferIsValid(r->keybuf))
		UnlockReleaseBuffer(r->keybuf);
	if (BufferIsValid(r->tidbuf))
		UnlockReleaseBuffer(r->tidbuf);
	r->keybuf = InvalidBuffer;
	r->tidbuf = InvalidBuffer;
	for (c = 0; c < r->inc.ncols; c++)
	{
		if (BufferIsValid(r->valbuf[c]))
			UnlockReleaseBuffer(r->valbuf[c]);
		if (BufferIsValid(r->nullbuf[c]))
			UnlockReleaseBuffer(r->nullbuf[c]);
		r->valbuf[c] = r->nullbuf[c] = InvalidBuffer;
	}
}

/*
 * Check that loaded keys are a search tree: every node's keys ascend within
 * the bounds its parent's keys set for it (a damaged key would send a
 * search into the wrong subtree and lose rows: XX002 instead).  The batched
 * searches of a loaded layout then check no node (checking there cost them
 * a large share of their time: bench/join_results.md, "Design measurements").  Level by level, from the bounds of the nodes of the level above
 * (node c of a level is child c % k of node c / k above, which is whole:
 * only the bottom level is partial).
 */
#define DEFINE_CHECK_ORDER(NAME, KT) \
static void \
NAME(Relation index, const EytzMetaPageData *meta, const void *keyarray) \
{ \
	const KT   *keys = (const KT *) keyarray; \
	uint32		k = meta->fanout; \
	uint64		n = meta->nentries; \
	uint64	   *plb = NULL; \
	uint64	   *pub = NULL; \
	uint64		pstart = 0; \
	uint64		start = 0; \
	uint32		l; \
\
	for (l = 0; l < meta->levels; l++) \
	{ \
		uint64		end = eytz_level_end(l, k, n); \
		uint64		nnodes = (end - start + k - 2) / (k - 1); \
		uint64	   *lb = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * nnodes); \
		uint64	   *ub = MemoryContextAllocHuge(CurrentMemoryContext, sizeof(uint64) * nnodes); \
		uint64		c; \
\
		for (c = 0; c < nnodes; c++) \
		{ \
			const KT   *nk = &keys[start + c * (k - 1)]; \
			uint32		nkeys = (uint32) Min(k - 1, end - start - c * (k - 1)); \
			uint32		j = c % k; \
			const KT   *pk = &keys[pstart + c / k * (k - 1)]; \
			uint64		lo = l == 0 ? 0 : j > 0 ? pk[j - 1] : plb[c / k]; \
			uint64		hi = l == 0 ? PG_UINT64_MAX : j < k - 1 ? pk[j] : pub[c / k]; \
			bool		bad = nk[0] < lo || nk[nkeys - 1] > hi; \
			uint32		i; \
\
			for (i = 1; i < nkeys; i++) \
				bad |= nk[i] < nk[i - 1]; \
			if (unlikely(bad)) \
				EYTZ_CORRUPT(index, meta->keys_start + (start + c * (k - 1)) / meta->keys_per_page, \
							 "Node at slot " UINT64_FORMAT " is out of order with the keys on its search path.", \
							 start + c * (k - 1)); \
			lb[c] = lo; \
			ub[c] = hi; \
		} \
		CHECK_FOR_INTERRUPTS(); \
		if (plb) \
		{ \
			pfree(plb); \
			pfree(pub); \
		} \
		plb = lb; \
		pub = ub; \
		pstart = start; \
		start = end; \
	} \
	if (plb) \
	{ \
		pfree(plb); \
		pfree(pub); \
	} \
}

DEFINE_CHECK_ORDER(check_order_4, uint32)
DEFINE_CHECK_ORDER(check_order_8, uint64)

/*
 * The whole region in slot order, checked: keys (nentries keys of
 * meta->key_width bytes, in search tree order) and TIDs (packed with
 * eytz_tid_pack(); tombstones have an invalid block).  Either array may be
 * NULL.
 */
void
eytz_region_load(Relation index, const EytzMetaPageData *meta,
				 BufferAccessStrategy strategy, void *keys, uint64 *tids)
{
	uint64		n = meta->nentries;
	Buffer		buf = InvalidBuffer;
	uint32		p;
	EytzInclude inc;

	eytz_include_get(index, &inc);
	for (p = 0; keys && p < meta->nkeypages; p++)
	{
		uint64		first = (uint64) p * meta->keys_per_page;
		const char *c = region_page(index, meta, &inc, strategy, &buf, p,
									EYTZ_ARRAY_KEYS);

		memcpy((char *) keys + first * meta->key_width, c,
			   Min(meta->keys_per_page, n - first) * meta->key_width);
		CHECK_FOR_INTERRUPTS();
	}
	for (p = 0; tids && p < meta->ntidpages; p++)
	{
		uint64		first = (uint64) p * EYTZ_TIDS_PER_PAGE;
		uint64		cnt = Min(EYTZ_TIDS_PER_PAGE, n - first);
		const ItemPointerData *src = (const ItemPointerData *)
			region_page(index, meta, &inc, strategy, &buf, p, EYTZ_ARRAY_TIDS);
		uint64		i;

		for (i = 0; i < cnt; i++)
		{
			if (!eytz_tid_ok(&src[i], true))
				eytz_page_bad_tid(index, meta, meta->tids_start + p, &src[i]);
			tids[first + i] = eytz_tid_pack((ItemPointer) &src[i]);
		}
		CHECK_FOR_INTERRUPTS();
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
	/* with no buffer locked */
	if (keys && meta->key_width == 4)
		check_order_4(index, meta, keys);
	else if (keys)
		check_order_8(index, meta, keys);
}

/*
 * Included column col of the region in slot order, checked: values
 * (nentries * width bytes, 0 for a NULL) and nulls ((nentries + 7) / 8
 * bytes, bit slot % 8 of byte slot / 8); either may be NULL.
 */
void
eytz_region_load_include(Relation index, const EytzMetaPageData *meta,
						 const EytzInclude *inc, BufferAccessStrategy strategy,
						 int col, void *values, uint8 *nulls)
{
	Buffer		buf = InvalidBuffer;
	int			pass;

	Assert(col >= 0 && col < inc->ncols);
	for (pass = 0; pass < 2; pass++)
	{
		int			a = pass == 0 ? EYTZ_ARRAY_VALUES(col) : EYTZ_ARRAY_NULLS(col);
		char	   *dst = pass == 0 ? (char *) values : (char *) nulls;
		EytzRegionArray arr;
		uint32		p;

		if (dst == NULL)
			continue;
		eytz_region_array(meta, inc, a, &arr);
		for (p = 0; p < arr.npages; p++)
		{
			const char *src = region_page(index, meta, inc, strategy, &buf, p, a);
			Size		bytes = eytz_region_array_bytes(&arr, meta->nentries, p);

			/* a NULL page holds whole bytes: per_page is a multiple of 8 */
			memcpy(dst + (arr.width > 0 ? (uint64) p * arr.per_page * arr.width
						  : (uint64) p * arr.per_page / 8),
				   src, bytes);
			CHECK_FOR_INTERRUPTS();
		}
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

/*
 * Start streaming the live entries of the generation meta describes in
 * (key, TID) order.
 */
void
eytz_sorted_begin(EytzSortedReader *r, Relation index,
				  const EytzMetaPageData *meta)
{
	Size		ncopies;
	Size		i;

	r->index = index;
	r->meta = *meta;
	eytz_include_get(index, &r->inc);
	eytz_rank_walk_init(&r->walk, meta->nentries, meta->fanout);
	r->nlevels = Max(r->walk.shape.levels, 1);
	r->narrays = eytz_region_narrays(&r->inc);
	ncopies = (Size) r->narrays * r->nlevels;
	r->held = palloc(sizeof(uint32) * ncopies);
	for (i = 0; i < ncopies; i++)
		r->held[i] = PG_UINT32_MAX;
	r->copies = MemoryContextAllocHuge(CurrentMemoryContext,
									   ncopies * EYTZ_PAGE_CAPACITY);
	r->slot = 0;
	r->level = 0;
	r->dead = 0;
	r->last_key = 0;
	r->last_live = 0;
	r->have_live = false;
}

/*
 * The contents of page p of array a for level l's copy: from another level
 * that holds it already (a level's last page is the next one's first), or
 * read and checked.
 */
static const char *
sorted_page(EytzSortedReader *r, int a, uint32 l, uint32 p)
{
	uint32	   *held = r->held + (Size) a * r->nlevels;
	char	   *copies = r->copies + (Size) a * r->nlevels * EYTZ_PAGE_CAPACITY;
	char	   *dst = copies + (Size) l * EYTZ_PAGE_CAPACITY;
	EytzRegionArray arr;
	Size		bytes;
	uint32		other;

	if (held[l] == p)
		return dst;
	eytz_region_array(&r->meta, &r->inc, a, &arr);
	bytes = eytz_region_array_bytes(&arr, r->meta.nentries, p);
	for (other = 0; other < r->walk.shape.levels; other++)
		if (other != l && held[other] == p)
		{
			memcpy(dst, copies + (Size) other * EYTZ_PAGE_CAPACITY, bytes);
			break;
		}
	if (other == r->walk.shape.levels)
	{
		Buffer		buf = InvalidBuffer;

		memcpy(dst, region_page(r->index, &r->meta, &r->inc, NULL, &buf, p, a),
			   bytes);
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}
	held[l] = p;
	return dst;
}

/*
 * The next live entry; false after the last.  Checks on the way what the
 * search relies on: keys ascend in order of rank, equal keys have ascending
 * TIDs, TIDs are valid, and the metapage's tombstone count is right.  Merges
 * and verify read through here: a merge never launders a damaged layout
 * into a new one.
 */
bool
eytz_sorted_next(EytzSortedReader *r, uint64 *key, uint64 *packed_tid)
{
	const EytzMetaPageData *m = &r->meta;

	while (r->walk.rank < m->nentries)
	{
		uint64		rank = r->walk.rank;
		uint32		l;
		uint64		t = eytz_rank_walk_next(&r->walk, &l);
		uint32		kp = t / m->keys_per_page;
		uint32		tp = t / EYTZ_TIDS_PER_PAGE;
		const char *keys = sorted_page(r, EYTZ_ARRAY_KEYS, l, kp);
		const ItemPointerData *tids = (const ItemPointerData *)
			sorted_page(r, EYTZ_ARRAY_TIDS, l, tp);
		const ItemPointerData *tid = &tids[t % EYTZ_TIDS_PER_PAGE];
		uint64		k = eytz_key_at(keys, m->key_width, t % m->keys_per_page);
		uint64		packed = eytz_tid_pack((ItemPointer) tid);
		bool		live;

		if (!eytz_tid_ok(tid, true))
			eytz_page_bad_tid(r->index, m, m->tids_start + tp, tid);
		live = ItemPointerGetBlockNumberNoCheck(tid) != InvalidBlockNumber;
		if (rank > 0 && k != r->last_key)
			r->have_live = false;
		if ((rank > 0 && k < r->last_key) ||
			(live && r->have_live && packed <= r->last_live))
			EYTZ_CORRUPT(r->index, m->keys_start + kp,
						 "Entry at slot " UINT64_FORMAT " (rank " UINT64_FORMAT ") is not above its in-order predecessor.",
						 t, rank);
		r->last_key = k;
		if (!live)
		{
			r->dead++;
			continue;
		}
		r->have_live = true;
		r->last_live = packed;
		r->slot = t;
		r->level = l;
		*key = k;
		*packed_tid = packed;
		return true;
	}
	if (r->dead != m->ndead)
		EYTZ_CORRUPT(r->index, EYTZ_METAPAGE_BLKNO,
					 "Metapage counts " UINT64_FORMAT " tombstones, the layout has " UINT64_FORMAT ".",
					 m->ndead, r->dead);
	return false;
}

/* The included values of the entry eytz_sorted_next() returned last */
void
eytz_sorted_include(EytzSortedReader *r, Datum *values, bool *isnull)
{
	uint64		t = r->slot;
	int			c;

	for (c = 0; c < r->inc.ncols; c++)
	{
		int			width = r->inc.width[c];
		uint32		per = eytz_include_per_page(width);
		const uint8 *nulls = (const uint8 *)
			sorted_page(r, EYTZ_ARRAY_NULLS(c), r->level, t / EYTZ_NULLS_PER_PAGE);
		uint64		bit = t % EYTZ_NULLS_PER_PAGE;
		const char *vals = sorted_page(r, EYTZ_ARRAY_VALUES(c), r->level, t / per);

		isnull[c] = (nulls[bit / 8] >> (bit % 8)) & 1;
		values[c] = isnull[c] ? (Datum) 0 :
			eytz_include_fetch(vals + (t % per) * width, width);
	}
}

void
eytz_sorted_end(EytzSortedReader *r)
{
	pfree(r->walk.next_slot);
	pfree(r->held);
	pfree(r->copies);
}

/*
 * The live entries of the region, appended to pairs in (key, TID) order,
 * and their included values to rv (if not NULL), in the same order
 */
void
eytz_region_load_sorted(Relation index, const EytzMetaPageData *meta,
						EytzPairs *pairs, EytzRowValues *rv)
{
	EytzSortedReader r;
	uint64		key;
	uint64		tid;
	Datum		values[EYTZ_MAX_INCLUDE];
	bool		isnull[EYTZ_MAX_INCLUDE];

	eytz_sorted_begin(&r, index, meta);
	while (eytz_sorted_next(&r, &key, &tid))
	{
		ItemPointerData itid;

		eytz_tid_unpack(tid, &itid);
		eytz_pairs_add(pairs, key, &itid);
		if (rv)
		{
			eytz_sorted_include(&r, values, isnull);
			eytz_rows_add(rv, values, isnull);
		}
	}
	eytz_sorted_end(&r);
}
