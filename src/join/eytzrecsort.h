/*
 * eytzrecsort.h
 *		Fixed-width records sorted by an unsigned 8-byte key, their first
 *		field, within work_mem (eytzrecsort.c): the heap-order join's
 *		records where every field is by value.
 */
#ifndef EYTZRECSORT_H
#define EYTZRECSORT_H

typedef struct EytzRecSort EytzRecSort;

/* rec_size: a multiple of 8, the key (uint64) first; memory within mem_kb */
extern EytzRecSort *eytz_recsort_begin(Size rec_size, int mem_kb);

/* Room for the next record, to be filled before the next call */
extern void *eytz_recsort_append(EytzRecSort *rs);

/* No more records: sort them (merging the runs written past mem_kb) */
extern void eytz_recsort_finish(EytzRecSort *rs);

/* The next record in key order (valid until the next call), or NULL */
extern const void *eytz_recsort_next(EytzRecSort *rs);

/* EXPLAIN: the memory used or the bytes written out, in kB */
extern void eytz_recsort_stats(EytzRecSort *rs, int64 *kb, bool *disk);

extern void eytz_recsort_end(EytzRecSort *rs);

#endif							/* EYTZRECSORT_H */
