/* timeline.h — trace-file=PATH: a timeline of every pause and collector
 * phase, written as a Chrome trace-event JSON file (opens in Perfetto and
 * chrome://tracing).
 *
 * Recording: an event is 48 bytes put into a ring buffer (Concurrency
 * Kit's ck_ring, single producer, single consumer) by the thread it
 * happened on, with no lock, no allocation and no system call. Rings:
 *
 *   ring 0      the thread holding the gc lock: pauses and their phases,
 *               counters. The gc lock makes its producers one at a time
 *               (ck_ring's single producer; the lock orders them).
 *   ring 1 + i  worker thread lull-mark/(i+1): its share of each pause's
 *               parallel work and of the concurrent mark, and worker 0's
 *               preclean passes and background sweep.
 *
 * A full ring drops the event and counts it (the file says how many).
 *
 * Writing: a helper thread, lull-trace, never attached (so never stopped
 * by a pause) and holding no lock a stopped thread may hold, drains the
 * rings every 20 ms into the file with write(2), one event per line. The
 * file is a complete JSON document after lull_shutdown and after a normal
 * exit (an atexit handler finishes it); each event is also written
 * within about 20 ms, so a crash leaves everything but the closing
 * brackets. A fork()ed child traces nothing (the parent's file is the
 * parent's).
 *
 * Timestamps are CLOCK_MONOTONIC (lull_now_ns) in microseconds with three
 * decimals: a pause's event carries exactly the start and duration that
 * lull_stats and the pause hook see. */
#ifndef LULL_TIMELINE_H
#define LULL_TIMELINE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/events.h"

enum lull_tl_kind {
    /* pauses (ring 0): a = collection, b = promoted bytes, c = live bytes
     * (majors), s = reason */
    LULL_TL_PAUSE_MINOR,
    LULL_TL_PAUSE_MAJOR,          /* a synchronous major: one pause */
    LULL_TL_PAUSE_INITIAL,        /* a concurrent major's initial pause */
    LULL_TL_PAUSE_FINAL,          /* its final pause */
    /* phases inside a pause (ring 0) */
    LULL_TL_STOP_WORLD,           /* a = threads stopped */
    LULL_TL_MINOR,                /* the nursery's part of the pause */
    LULL_TL_MINOR_PIN,
    LULL_TL_MINOR_COPY,
    LULL_TL_MINOR_WEAK,           /* weak handles and finalizers */
    LULL_TL_MINOR_REBUILD,        /* free space between pinned objects */
    LULL_TL_MARK,                 /* a = overflows */
    LULL_TL_SWEEP,                /* a = live bytes */
    LULL_TL_SWEEP_REST,           /* the last cycle's lazy sweep, finished before a mark */
    LULL_TL_RESTART,
    /* workers (ring 1 + i) */
    LULL_TL_WORKER_JOB,           /* share of a pause's parallel work */
    LULL_TL_CONCURRENT_MARK,      /* a = cycle, b = objects: one worker's run of the background mark */
    LULL_TL_PRECLEAN,             /* a = cards rescanned */
    LULL_TL_BG_SWEEP,             /* a = blocks swept */
    /* counters (ring 0): a = heap bytes, b = nursery bytes in use, c = live
     * bytes the last major found */
    LULL_TL_COUNTERS,
    /* counter (ring 0): a = the heap goal (gc/pacer.h), b = the memory limit (0: none) */
    LULL_TL_GOAL,
    LULL_TL_NKINDS
};

extern atomic_bool lull_timeline_on;

/* lull_init, after the workers started: open `path` (truncated) and start
 * the writer. 0, or -errno with one line printed naming the file. */
int  lull_timeline_start(const char *path, unsigned workers);
/* lull_shutdown, and the atexit handler: drain, close the document, join
 * the writer. Idempotent. */
void lull_timeline_stop(void);
/* fork() child: trace nothing; the file stays the parent's. */
void lull_timeline_after_fork_child(void);

/* The calling thread's ring: 0 (the default) or 1 + worker index, set by
 * each worker thread when it starts. */
void lull_timeline_set_worker(unsigned index);

void lull_timeline_record(enum lull_tl_kind kind, uint64_t start_ns, uint64_t dur_ns, uint64_t a, uint64_t b,
                          uint64_t c, const char *s);

/* The pause record's listener (events.h): the pause and its phases, and
 * the heap's counters at its end, into ring 0. */
void lull_timeline_pause_listener(const lull_pause_record *r, void *data);

/* Record only when tracing (one relaxed load otherwise). */
#define LULL_TL(kind, start, dur, a, b, c, s)                                            \
    do {                                                                                 \
        if (__builtin_expect(atomic_load_explicit(&lull_timeline_on, memory_order_relaxed), 0)) \
            lull_timeline_record((kind), (start), (dur), (a), (b), (c), (s));            \
    } while (0)

#endif
