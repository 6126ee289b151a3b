/*
 * eytzouter.h
 *		The batched join's outer rows read straight from the heap pages of a
 *		plain Seq Scan (eytzouter.c).
 */
#ifndef EYTZOUTER_H
#define EYTZOUTER_H

#include "access/htup.h"
#include "nodes/execnodes.h"

typedef struct EytzOuterScan EytzOuterScan;

extern bool eytz_direct_outer;

extern EytzOuterScan *eytz_outer_begin(PlanState *outer, EState *estate);
extern HeapTuple eytz_outer_next_tuple(EytzOuterScan *os);
extern TupleTableSlot *eytz_outer_next(EytzOuterScan *os);
extern TupleDesc eytz_outer_desc(const EytzOuterScan *os);
extern AttrNumber eytz_outer_attno(const EytzOuterScan *os, AttrNumber col);
extern void eytz_outer_resume(EytzOuterScan *os);
extern void eytz_outer_pause(EytzOuterScan *os);
extern void eytz_outer_rescan(EytzOuterScan *os);
extern uint64 eytz_outer_pages(const EytzOuterScan *os);
extern void eytz_outer_end(EytzOuterScan *os);

#endif							/* EYTZOUTER_H */
