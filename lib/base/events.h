/* events.h — the pause record: what one stop-the-world pause did, and who
 * is told.
 *
 * Owns: the record's layout, its steps (each stamps the clock and fires
 * the step's USDT probes, probes.h), the listener table, and the
 * LULL_GC_DEBUG=log listener (the "lull: collection N (...)" lines).
 * Callers: the gc tier's pause scripts (gc/collect.c) fill one record per
 * pause, call lull_pause_step at each step in order, and lull_pause_emit
 * once the world runs again; gc/collect.c registers the listeners at
 * lull_init (lull_events_listen), in the order they are told.
 * Lock: all of it with the gc lock held (base/gclock.h); the listeners
 * run with it held and the world running, on the thread that collected.
 * Invariants: a record goes through the steps in enum order, skipping
 * those its kind has no part in (a minor has no mark); a listener reads
 * the record only, never the collector's state, so that every listener
 * sees the same pause. */
#ifndef LULL_EVENTS_H
#define LULL_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"

/* The four pause scripts. */
enum lull_pause_kind {
    LULL_PAUSE_MINOR,       /* a minor alone */
    LULL_PAUSE_MAJOR,       /* a synchronous major: a minor, then the whole mark and the sweep */
    LULL_PAUSE_INITIAL,     /* a concurrent major's initial pause: the mark begins */
    LULL_PAUSE_FINAL,       /* its final pause: the mark ends, the sweep */
};

/* The steps of a pause, in order; lull_pause_step stamps at[step]. */
enum lull_pause_step {
    LULL_STEP_STOP,         /* the background job is stopped; the world is about to be */
    LULL_STEP_STOPPED,      /* every other attached thread is suspended */
    LULL_STEP_NURSERY,      /* the nursery's part is done (a minor, or the TLABs synced) */
    LULL_STEP_MARK_BEGUN,   /* initial pause: the roots are grey, the background mark may run */
    LULL_STEP_MARKED,       /* marking, weak references and finalizers done */
    LULL_STEP_SWEEP_BEGIN,        /* the sweep in the pause begins */
    LULL_STEP_SWEPT,        /* ... and is done */
    LULL_STEP_RESTART,      /* the background job is posted; the world is about to run again */
    LULL_STEP_RESTARTED,    /* every stopped thread may run */
    LULL_STEP_END,          /* parked threads finished: the pause is over (sets pause_ns) */
    LULL_NSTEPS
};

typedef struct lull_pause_record {
    /* What ran, and why. */
    enum lull_pause_kind kind;
    const char *reason;           /* a string literal */
    uint64_t collection;          /* the collection's number (an initial pause: of the major it begins) */
    uint64_t completed;           /* collections completed once this pause is over */
    uint64_t cycle;               /* concurrent pauses: the mark cycle begun or ended */
    bool synchronous;             /* major, or a final pause that finished the mark stopped */
    bool mark_done;               /* final pause: the background mark had finished when it stopped */
    bool marking;                 /* minor: a concurrent mark was running */
    bool minor;                   /* a minor ran in the pause (minor, synchronous major) */
    /* When (lull_now_ns). */
    uint64_t t0;                  /* the pause began (before the background job was stopped) */
    uint64_t at[LULL_NSTEPS];
    uint64_t pause_ns;            /* t0 to the end: what lull_stats and the pause hook count */
    uint64_t stop_bg_ns;          /* stopping the background job */
    uint64_t stop_bg_cpu_ns;      /* the CPU time its threads took to stop (trace/workers.h) */
    uint64_t sweep_rest_t, sweep_rest_ns;   /* the last cycle's sweep finished in the pause (0: none) */
    unsigned threads;             /* attached threads when the world stopped */
    /* The minor. */
    uint64_t handed, promoted, promoted_by_workers, aged, large_freed;
    uint64_t cards_scanned, cards_young, trace_ns;
    bool aging_paused;            /* promotion-age=auto and the next minor ages nothing */
    size_t nursery_before, nursery_after;    /* the nursery's size before and after the policy resized it */
    double predicted_minor_ns, card_ns;
    double minor_margin;            /* the nursery's margin for the model's error (policy.c) */
    uint32_t card_budget, card_grant;   /* policy.h */
    uint64_t alloc_outside_tlab, alloc_locked;   /* lull_stats' counts, at the pause */
    /* The major. */
    uint64_t live;                /* live bytes the sweep found */
    uint64_t overflows;           /* mark stack overflows (at the mark's end) */
    bool overflowed;              /* ... and as the log reports them, after the pause */
    uint64_t marked, marked_by_stopper;
    unsigned evac_classes;
    uint32_t evac_blocks;
    uint64_t evac_objects, evac_bytes;
    uint64_t trigger, allowance;  /* pacing of the next major */
    char pacer[224];              /* the heap goal's state (gc/pacer.h: lull_pacer_describe) and the
                                     program's paced waits so far; majors only */
    uint64_t deferred_young;      /* initial pause: young large bytes left to the markers */
    uint64_t deferred_roots;      /* initial pause: registered roots' values left to the markers */
    /* A final pause: the concurrent mark's work. */
    unsigned mark_workers;
    uint64_t by_worker[LULL_MAX_WORKERS];
    uint64_t precleaned, rescanned_cards, final_young;
    /* The heap. */
    uint64_t heap_at_end;         /* bytes held when the pause ended (the timeline's counter) */
    uint64_t last_live;           /* live bytes the last major found */
    uint64_t heap_goal;           /* the heap goal in force at the end (gc/pacer.h) */
    uint64_t memory_limit;        /* the soft memory limit (0: none) */
    uint64_t heap_after;          /* bytes held once the released memory went back (the log) */
    uint64_t free_resident;       /* free memory kept resident for reuse (space/blocks.c) */
    uint64_t released, release_calls;   /* given back to the OS since lull_init, and madvise calls */
} lull_pause_record;

typedef void (*lull_pause_listener)(const lull_pause_record *r, void *data);

/* Start a record of `kind` for `reason`: zeroed, t0 stamped. */
void lull_pause_open(lull_pause_record *r, enum lull_pause_kind kind, const char *reason);
/* The step `s` of r: stamp at[s] and fire its probes, which read the
 * fields of r the step names (probes.h). */
void lull_pause_step(lull_pause_record *r, enum lull_pause_step s);
/* Tell every listener, in the order they were registered. */
void lull_pause_emit(const lull_pause_record *r);

/* Forget every listener (lull_init, before registering them). */
void lull_events_reset(void);
/* Add a listener (lull_init; at most LULL_MAX_LISTENERS). */
#define LULL_MAX_LISTENERS 8
void lull_events_listen(lull_pause_listener fn, void *data);

/* LULL_GC_DEBUG=log: one line on stderr per pause (nothing without log). */
void lull_events_log_listener(const lull_pause_record *r, void *data);

#endif
