/* trace.h — the one tracer: how an object's reference slots are visited,
 * how the heap's objects are walked, how a conservative range is read, and
 * the tracer context every tracing thread carries (its grey worklist).
 *
 * Minor collection, major mark and the verifiers differ only in what they
 * do with a slot (forward, mark, check), never in how slots are found: each
 * passes its own visit function and context to the walks below. A `trace`
 * callback of a lull_type receives that same visit function and context, so
 * user tracing works unchanged under every client.
 *
 * The worklist. Each tracer owns a private grey stack: a chain of sections
 * of mmap'ed memory (never malloc: a stopped thread may hold malloc's
 * lock). Sections come from and go back to one pool of free sections.
 * When several tracers work at once (mark.c), a tracer hands a full
 * section, or half of its current one when another tracer is idle, to the
 * shared pool of grey sections, from which idle tracers steal. Only the
 * owner touches its private chain; the two pools are lists under a mutex
 * (trace.c says why not a lock-free stack), touched once per section.
 *
 * If no section can be had, an object is left marked but unscanned and the
 * shared overflow flag is set; the mark then rescans every marked object
 * (mark.c). Nothing is lost, only time. */
#ifndef LULL_TRACE_H
#define LULL_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "space/heap.h"
#include "base/util.h"

/* ---- visiting slots ---- */

typedef void (*lull_object_fn)(uintptr_t obj, void *ctx);
typedef void (*lull_word_fn)(uintptr_t word, void *ctx);

/* Call fn(slot, ctx) on every reference slot of obj (through the type's
 * trace function when it has one). A word without a type (a free slot, or
 * zeroed nursery space, reached through a dangling reference) has none. */
static inline void lull_trace_slots(uintptr_t obj, lull_visit_fn fn, void *ctx)
{
    uintptr_t *w = (uintptr_t *)obj;
    /* Atomic: in an evacuating major another marker may meanwhile try a
     * compare-and-swap on this header (mark.c: evacuate), which fails
     * once the object is marked but which ThreadSanitizer counts as a
     * write (stress_exhaustion_w4 under TSan, 4 markers). A plain load
     * on x86-64 all the same. */
    const lull_type *t = lull_header_type(__atomic_load_n(&w[0], __ATOMIC_RELAXED));
    if (LULL_UNLIKELY(!t))
        return;
    if (t->trace) {
        t->trace((void *)obj, fn, ctx);
        return;
    }
    for (uint64_t r = t->refs; r; r &= r - 1)
        fn((void **)&w[__builtin_ctzll(r)], ctx);
    if (t->elem_size && t->elem_refs) {
        size_t n = w[1];
        char *e = (char *)obj + t->size;
        for (size_t k = 0; k < n; k++, e += t->elem_size)
            for (uint64_t r = t->elem_refs; r; r &= r - 1)
                fn((void **)e + __builtin_ctzll(r), ctx);
    }
}

/* The reference slots of obj that lie in [lo, hi). A type with a trace
 * function cannot be asked for part of its slots: nothing is visited and
 * false is returned (the caller decides whether to visit them all). */
bool lull_trace_slots_in(uintptr_t obj, uintptr_t lo, uintptr_t hi, lull_visit_fn fn, void *ctx);

/* The slots s0..s1 of SMALL block bi (size class cls) that overlap
 * [lo, hi), a range inside the block; false: none. */
static inline bool lull_block_slots_in(uint32_t bi, unsigned cls, uintptr_t lo, uintptr_t hi, uint32_t *s0,
                                       uint32_t *s1)
{
    uint32_t sz = lull_class_size[cls], n = lull_class_slots[cls];
    uintptr_t base = lull_block_addr(bi);
    *s0 = (uint32_t)((lo - base) / sz);
    *s1 = (uint32_t)((hi - 1 - base) / sz);
    if (*s1 >= n)
        *s1 = n - 1;
    return *s0 < n;
}

/* ---- walking objects ---- */

/* Every allocated object of SMALL block bi, in address order (only the
 * marked ones when marked_only). World stopped, or the block owned by the
 * caller. */
void lull_trace_block_objects(uint32_t bi, bool marked_only, lull_object_fn fn, void *ctx);

/* Every object of the old generation (small-object blocks, then each large
 * object once), in address order; refs_only skips pointer-free blocks and
 * large objects without references. World stopped. */
void lull_trace_old_objects(bool refs_only, bool marked_only, lull_object_fn fn, void *ctx);
/* The same, for the blocks [lo, hi) only (a large object is visited by
 * the call whose range holds its first block). */
void lull_trace_old_objects_in(uint32_t lo, uint32_t hi, bool refs_only, bool marked_only, lull_object_fn fn,
                               void *ctx);

/* Call fn(word, ctx) for every aligned word of [lo, hi) whose value lies in
 * the heap's committed range: the one conservative scanning loop (stacks,
 * registers, conservative roots). The reads are not instrumented by the
 * sanitizers (util.h: LULL_NO_SANITIZE_SCAN). */
void lull_trace_conservative(uintptr_t lo, uintptr_t hi, lull_word_fn fn, void *ctx);

/* ---- the tracer context and its worklist ---- */

typedef struct lull_grey_section lull_grey_section;

typedef struct lull_tracer {
    lull_grey_section *cur;     /* top of the private grey stack (owner only) */
    unsigned id;                /* 0: the thread that stopped the world; 1..: workers */
    bool     share;             /* several tracers run: hand work to the idle */
    unsigned pops;              /* pops since the last look for idle tracers */
    uint64_t scanned;           /* objects this tracer blackened (statistics) */
    uint64_t stolen;            /* sections it took from the shared pool */
    /* No section to be had: spill(tr, obj) keeps obj elsewhere (the minor's
     * fixed array); NULL: obj is dropped and the overflow flag set (the
     * mark's rescan finds it). */
    void (*spill)(struct lull_tracer *tr, uintptr_t obj);
} lull_tracer;

/* The state the tracers share: the two pools, the overflow flag and the
 * count of tracers looking for work. One instance (lull_trace_g); written
 * by tracers only through atomics and the pools' locks. */
void lull_trace_init(unsigned long stack_limit_entries);
void lull_trace_fini(void);

/* Slow paths of push and pop (trace.c). */
void lull_tracer_push_slow(lull_tracer *tr, uintptr_t obj);
bool lull_tracer_pop_slow(lull_tracer *tr, uintptr_t *obj);

struct lull_grey_section {
    lull_grey_section *pool_next;       /* while in one of the pools */
    lull_grey_section *prev;            /* next-older section of the private stack */
    size_t             top;             /* entries used */
    uintptr_t          item[];
};

extern size_t lull_trace_section_cap;   /* entries per section; set at init */

/* Push a grey object (owner thread only). */
static inline void lull_tracer_push(lull_tracer *tr, uintptr_t obj)
{
    lull_grey_section *s = tr->cur;
    if (__builtin_expect(s && s->top < lull_trace_section_cap, 1)) {
        s->item[s->top++] = obj;
        return;
    }
    lull_tracer_push_slow(tr, obj);
}

/* Pop a grey object: the private stack first, then (sharing) the shared
 * pool. false: nothing this tracer can find right now. */
static inline bool lull_tracer_pop(lull_tracer *tr, uintptr_t *obj)
{
    lull_grey_section *s = tr->cur;
    if (__builtin_expect(s && s->top && (!tr->share || ++tr->pops & 63), 1)) {
        *obj = s->item[--s->top];
        return true;
    }
    return lull_tracer_pop_slow(tr, obj);
}

/* Does the private stack hold anything? */
static inline bool lull_tracer_empty(const lull_tracer *tr)
{
    for (const lull_grey_section *s = tr->cur; s; s = s->prev)
        if (s->top)
            return false;
    return true;
}

/* Hand every private section but the top one to the shared pool (tr->cur
 * not NULL), so other tracers can start on them. */
void lull_tracer_share_older(lull_tracer *tr);

/* Give every private section back (an aborted or finished trace). */
void lull_tracer_release(lull_tracer *tr);

/* Take the whole private stack out of the tracer (NULL: it held none),
 * and put such a chain back on top of a tracer's own: the concurrent mark
 * keeps its grey objects across pauses this way (mark.c). */
lull_grey_section *lull_tracer_take(lull_tracer *tr);
void lull_tracer_adopt(lull_tracer *tr, lull_grey_section *chain);
/* Take every section of the shared pool, as one chain (NULL: it was
 * empty): the concurrent mark, stopped, keeps what it shared this way. */
lull_grey_section *lull_trace_take_shared(void);
/* Give a taken chain's sections back. */
void lull_trace_release_chain(lull_grey_section *chain);

/* One tracer's part of a parallel drain, for every tracer of a job:
 * drain_local(tr, arg) empties tr's private stack (popping with sharing
 * on); this returns once no tracer holds a grey object and the shared pool
 * is empty. *active starts at the number of tracers taking part. */
void lull_tracer_drain_shared(lull_tracer *tr, atomic_int *active,
                              void (*drain_local)(lull_tracer *tr, void *arg), void *arg);

/* Shared state between tracers (trace.c). */
bool lull_trace_shared_nonempty(void);      /* grey sections wait in the shared pool */
bool lull_trace_take_overflow(void);        /* read and clear the overflow flag */
bool lull_trace_overflow_pending(void);     /* read it only */
void lull_trace_note_idle(int delta);       /* a tracer starts/stops looking for work */

#endif
