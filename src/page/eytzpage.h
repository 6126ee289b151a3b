/*
 * eytzpage.h
 *		The on-disk format of an eytzgpu index: the metapage, the layout
 *		region of key and TID pages, INCLUDE pages, the pending list and the
 *		retired generations.  Page init is eytzpageinit.c, the checked readers
 *		eytzpage.c (the pending list's eytzpagepending.c), INCLUDE pages
 *		eytzinclude.c, the pending list's writer eytzinsert.c.
 *
 * All pages carry an EytzPageOpaqueData in their special
 * space whose last two bytes are EYTZ_PAGE_ID, as contrib/bloom does.  The
 * pages:
 *	- block 0: the metapage (EytzMetaPageData);
 *	- the layout region: a run of key pages, then a run of TID pages, starting
 *	  at meta->keys_start.  Concatenating the key pages' contents gives the
 *	  Eytzinger-ordered key array (4- or 8-byte order-preserving unsigned
 *	  keys); the TID pages give the matching ItemPointerData array.  A key
 *	  page holds a multiple of (k - 1) keys so no node straddles two pages.
 *	  Deleted entries keep their key and get an invalid TID (a tombstone).
 *	  An index with INCLUDE columns has, after the TID pages, for each
 *	  included column its value pages (the values' by-value bytes in slot
 *	  order) and then its NULL bitmap pages (eytzinclude.h).
 *	- pending pages: a linked list of unsorted (key, TID) entries inserted
 *	  since the last build or merge; every scan searches them too.
 *	- retired pages: the region and pending list of an older generation,
 *	  listed in the metapage after EytzMetaPageData (EytzRetired) with the
 *	  transaction horizon after which no scan can still read them;
 *	- free pages: recycled retired pages, recorded in the free space map.
 *
 * The layout math of the region is cuda/eytz_layout.h's, shared with the
 * GPU copy.
 */
#ifndef EYTZPAGE_H
#define EYTZPAGE_H

#include "postgres.h"

#include "access/itup.h"
#include "storage/bufmgr.h"
#include "utils/relcache.h"

#include "eytz_layout.h"

#define EYTZ_MAGIC			0x45595447	/* "EYTG" */
#define EYTZ_VERSION		1
#define EYTZ_METAPAGE_BLKNO 0

/*
 * Heavyweight page locks on the index: the one on the metapage's block is
 * the merge lock (merges, VACUUM exclusive; inserts, verify share); the one
 * on this block number (only a lock tag: no page is read for it) keeps
 * ambulkdelete out while an index-only scan holds TIDs it returned but the
 * executor may not have checked against the visibility map (eytzscan.c).
 */
#define EYTZ_IOS_LOCK_BLKNO 1
#define EYTZ_PAGE_ID		0xFE77

/* page types (EytzPageOpaqueData.flags) */
#define EYTZ_PAGE_META		1
#define EYTZ_PAGE_KEYS		2
#define EYTZ_PAGE_TIDS		3
#define EYTZ_PAGE_PENDING	4
#define EYTZ_PAGE_FREE		5
#define EYTZ_PAGE_INCLUDE	6
#define EYTZ_PAGE_NULLS		7

/* at most this many INCLUDE columns */
#define EYTZ_MAX_INCLUDE	16

/* layouts (reloption values and metapage) */
#define EYTZ_LAYOUT_AUTO	0
#define EYTZ_LAYOUT_EBS		1
#define EYTZ_LAYOUT_EKS		2

typedef struct EytzPageOpaqueData
{
	BlockNumber next;			/* next pending page, or InvalidBlockNumber */
	uint16		count;			/* entries on a pending page */
	uint16		flags;			/* EYTZ_PAGE_* */
	uint16		unused;
	uint16		page_id;		/* EYTZ_PAGE_ID, for tools */
} EytzPageOpaqueData;

typedef EytzPageOpaqueData *EytzPageOpaque;

#define EytzPageGetOpaque(page) ((EytzPageOpaque) PageGetSpecialPointer(page))

/* usable bytes of a data page */
#define EYTZ_PAGE_CAPACITY \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(EytzPageOpaqueData)))

/*
 * a pending entry: key (always 8 bytes here) and TID; on the pages of an
 * index with INCLUDE columns each is followed by the included values
 * (eytz_pending_entry_size())
 */
typedef struct EytzPendingEntry
{
	uint64		key;
	ItemPointerData tid;
} EytzPendingEntry;

#define EYTZ_PENDING_PER_PAGE (EYTZ_PAGE_CAPACITY / sizeof(EytzPendingEntry))

/*
 * Inserts start a new pending page after this many entries (pages with up
 * to EYTZ_PENDING_PER_PAGE stay valid): GenericXLog compares the used part
 * of a page to find its delta, so the cost of an append grows with the
 * page's fill; 2 kB pages make it a quarter of that of full ones.
 */
#define EYTZ_PENDING_FILL	128

#define EYTZ_TIDS_PER_PAGE	((uint32) (EYTZ_PAGE_CAPACITY / sizeof(ItemPointerData)))

typedef struct EytzMetaPageData
{
	uint32		magic;
	uint32		version;
	uint16		key_width;		/* 4 or 8 */
	uint16		unused;			/* was the layout: it follows from fanout */
	uint32		fanout;			/* k */
	uint64		generation;		/* bumped by every build and merge */
	uint64		nentries;		/* entries in the layout, tombstones included */
	uint64		ndead;			/* tombstones in the layout */
	uint32		levels;
	uint32		keys_per_page;
	BlockNumber keys_start;		/* first key page (layout region start) */
	uint32		nkeypages;
	BlockNumber tids_start;		/* first TID page */
	uint32		ntidpages;
	BlockNumber pending_head;
	BlockNumber pending_tail;
	uint64		npending;
	uint32		pending_limit;	/* merge when npending reaches it */
	uint32		nretired;		/* EytzRetired records after this struct */
} EytzMetaPageData;

typedef EytzMetaPageData *EytzMetaPage;

/* The layout of a metapage: EBS is the fan-out 2, EKS any other */
static inline int
eytz_meta_layout(const EytzMetaPageData *meta)
{
	return meta->fanout == 2 ? EYTZ_LAYOUT_EBS : EYTZ_LAYOUT_EKS;
}

#define EytzPageGetMeta(page) ((EytzMetaPage) PageGetContents(page))

/*
 * The pages of a generation that a merge replaced: reusable once no
 * transaction that may have read the metapage naming them is running, i.e.
 * once GlobalVisCheckRemovableFullXid(NULL, stamp) (as nbtree's deleted pages).
 */
typedef struct EytzRetired
{
	FullTransactionId stamp;	/* the XID of the merge that retired it */
	BlockNumber region_start;	/* the old layout region, or InvalidBlockNumber */
	uint32		region_len;
	BlockNumber pending_head;	/* the old pending list (still linked) */
	uint32		unused;
} EytzRetired;

/* at most this many retired generations wait for the horizon */
#define EYTZ_MAX_RETIRED	256

#define EytzPageGetRetired(page) \
	((EytzRetired *) ((char *) PageGetContents(page) + MAXALIGN(sizeof(EytzMetaPageData))))

#endif							/* EYTZPAGE_H */
