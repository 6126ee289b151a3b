/*
 * eytzfdwjoin.h
 *		The batched join over a foreign inner side ("EytzGPU Foreign Join"):
 *		its plan's custom_private and custom_exprs, written by the planner
 *		(eytzfdwjoin.c) and read by the executor (eytzfdwjoinexec.c).
 *		eytz_fdwjoin_init is eytzjoin.h's.
 */
#ifndef EYTZFDWJOIN_H
#define EYTZFDWJOIN_H

#include "postgres.h"

#include "nodes/plannodes.h"

/* The CustomScan's custom_private */
enum FdwScanPrivateIndex
{
	FJ_PRIV_JOINTYPE,
	FJ_PRIV_NOUTER,
	FJ_PRIV_KEY_COL,
	FJ_PRIV_KEYTYPE,
	FJ_PRIV_COLLATION,
	FJ_PRIV_EQ_OPNO,
	FJ_PRIV_PARENT_OID,
	FJ_PRIV_KEY_ATTNO,
	FJ_PRIV_PARAMIDS,
	FJ_PRIV_LEAF_OIDS,
	FJ_PRIV_BATCH_SIZE,
	FJ_NUM_PRIV
};

/* The CustomScan's custom_exprs */
enum FdwScanExprIndex
{
	FJ_EXPR_OUTER_KEY,
	FJ_EXPR_JOINQUAL,
	FJ_EXPR_OTHERQUAL,
	FJ_NUM_EXPR
};

/* eytzfdwjoinexec.c */
extern Node *eytz_fdwjoin_create_scan_state(CustomScan *cscan);
extern Size eytz_fdwjoin_row_bytes(int nouter, int16 keylen);

#endif							/* EYTZFDWJOIN_H */
