/* mark.c — the major's mark (mark.h): greying and blackening with the
 * tracer, work sharing between markers and termination, evacuation, the
 * concurrent mark's background job (its drains, the preclean of the union
 * cards through trace/cards.h, slices of large objects) and its final
 * pause's roots, and the verify-parallel/-concurrent shadows.
 *
 * Callers: gc/collect.c's pauses (world stopped, gc lock held); the
 * minor (trace/minor.c) for what it greys while a mark runs; the
 * background job on the worker threads (world running; what it touches is
 * said at mark_g and at background_job).
 *
 * Invariants: outside a collection every mark bit is clear; while a
 * concurrent mark runs the nursery and the young large objects are not
 * marked through (they are roots of the final pause), every object that
 * enters the major heap is allocated black, and every store marks its
 * union card. */
#include "trace/mark.h"
#include "space/meter.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/gclock.h"
#include "base/os.h"
#include "base/probes.h"
#include "base/timeline.h"
#include "base/util.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "trace/cards.h"
#include "trace/roots.h"
#include "trace/workers.h"

/* The initial pause of a concurrent mark copies the registered roots'
 * values (a root array of the program may hold tens of thousands) for the
 * background job to grey, instead of greying each with a cache miss in
 * the pause: the initial pause's roots only hasten the mark, the final
 * pause scans every root again (lull_mark_finish), and what they pointed
 * to stays allocated until the mark ends (nothing is swept while a mark
 * runs; a young large object a minor drops is kept until the final
 * pause's sweep, heap.h), so a stale value is at worst floating garbage.
 * Past ROOT_BUF_MAX values, the rest are greyed in the pause. */
#define ROOT_BUF_MAX ((size_t)1 << 22)

/* The state of the current mark, shared by its markers. Written by the
 * stopping thread between drains (world stopped, no worker running), and
 * during a drain only through atomics. */
static struct {
    atomic_int active;          /* markers that may still produce grey objects */
    unsigned long overflows;    /* recoveries in the last drain (stopper only) */
    atomic_uint_fast64_t scanned;        /* objects blackened in the last drain */
    uint64_t scanned_by_stopper;
    uint64_t *shadow_roots, *shadow_parallel;   /* verify-parallel bitmaps */
    size_t shadow_words;        /* words saved in shadow_roots (the frontier then) */
    bool plant;                 /* plant-mark-fault: this drain loses an object */
    atomic_bool planted;        /* ...and has done so */
    size_t shadow_bytes;
    /* The concurrent mark (mark.h). Written in pauses, with the background
     * job stopped; while it runs, `held` and the participants' counts are
     * under bg_lock (the background job, below, says who touches what). */
    bool ignore_nursery;        /* the nursery is the minors' until the final pause */
    bool atomic_marks;          /* a concurrent mark runs: marks are fetch-ors */
    bool plant_ok;              /* this drain is checked by verify-parallel */
    lull_grey_section *held;    /* its grey objects between runs of the job */
    /* The registered roots' values at the initial pause (deferred_root),
     * greyed by the job's leader (grey_deferred_roots): root_next only by
     * it, or by a pause with the job stopped. */
    uintptr_t *root_buf;
    size_t root_n, root_next;
    pthread_mutex_t bg_lock;
    unsigned bg_inside;         /* workers inside the job */
    unsigned bg_busy;           /* helpers (not worker 0) that may hold grey objects */
    unsigned bg_width;          /* workers the job is posted to (pauses only) */
    atomic_int bg_waiting;      /* participants parked for want of work */
    atomic_bool bg_kicked;      /* woken since the last of them looked (offer_work) */
    atomic_bool bg_done;        /* the job found nothing left to do */
    _Atomic uint64_t bg_done_ns;    /* ... since then (lull_now_ns), 0 before */
    atomic_uint_fast64_t bg_scanned[LULL_MAX_WORKERS + 1];   /* what each worker blackened, by tracer id */
    uint64_t cycle;             /* concurrent marks begun */
    uint64_t final_cards;       /* union cards the last final pause rescanned */
    uint64_t final_nursery_objects;   /* ... and nursery and young large objects it visited */
    bool final_in_drain;        /* the final pause: each marker takes part in its root work */
    atomic_size_t next_block;   /* ... its dirty cards, claimed in chunks through this */
    atomic_size_t cards_found;  /* ... and counted here */
    atomic_size_t next_range;   /* ... the nursery's logged ranges, claimed through this */
    atomic_size_t nursery_objects;       /* ... and the objects in them */
    atomic_uint_fast64_t nursery_bytes;  /* ... and their bytes (young large objects' too) */
    uintptr_t young[LULL_LOS_MAX_YOUNG]; /* ... the young large objects */
    size_t nyoung;
    atomic_size_t next_young;   /* ... claimed one at a time through this */
    /* Pacing (mark.h: lull_mark_wait_progress): the program waits on
     * progress_seq, which the job bumps at each step it completes; while
     * want_quiet is set, stores wait too (the passes do not converge).
     * final_budget: dirty cards a final pause may rescan (the policy sets
     * it from the pause target). */
    _Atomic unsigned progress_seq;
    atomic_int progress_waiters;
    _Atomic uint64_t progress_goal;     /* the least scanned count a waiter wants (UINT64_MAX: none) */
    atomic_bool want_quiet;
    atomic_size_t final_budget;
    atomic_uint_fast64_t paced_waits, paced_ns;
    uint64_t work_estimate;     /* objects the last concurrent mark scanned in all; 0: none yet */
    unsigned passes;            /* complete preclean passes of the running mark (the job only) */
    size_t last_found;          /* ... and what the last one found */
    size_t prev_found;          /* ... and the one before it */
    uint64_t deferred_young;    /* bytes of young large objects the initial pause left to the job */
    /* lull_mark_step: the job runs on the calling thread (gc lock held,
     * the background job stopped) until this time (lull_now_ns); 0: the
     * job runs on the workers. Written by the stepping thread only. */
    uint64_t step_deadline;
    uint32_t pass_block;        /* the running pass: the next block it looks at */
    size_t pass_found;          /* ... and the dirty cards it found so far */
    bool pass_running;          /* ... (false: the next pass begins at block 0) */
    atomic_uint_fast64_t precleaned;     /* ... and the job rescanned meanwhile */
    /* Evacuation (a synchronous major; mark.h). `evac` and the plan's
     * figures are written by the stopping thread between drains; each
     * marker counts its copies in its own entry (by tracer id), summed
     * after the drains; `evac_kept` is set by any marker. */
    enum { EVAC_OFF, EVAC_COPY, EVAC_CHECK } evac;
    unsigned evac_classes;
    uint32_t evac_blocks;
    uint64_t evac_objects[LULL_MAX_WORKERS + 1], evac_bytes[LULL_MAX_WORKERS + 1];
    atomic_bool evac_kept;      /* an object stayed for want of a slot (PINNED in its header) */
    atomic_bool evac_planted;   /* plant-evac-fault: a slot was left at an old copy */
} mark_g = { .bg_lock = PTHREAD_MUTEX_INITIALIZER };

/* A concurrent mark begins or ends (a pause, or lull_mark_init, which
 * lull_init calls once the nursery exists, and lull_shutdown): while one
 * runs the write barrier marks the store's card in the union table as well
 * (lull.h), for every store. The minors' cards stay filtered: only stores
 * of young references (or every store, with card-filter=no) mark those, so
 * the minors during a mark scan no more cards than the others. Written
 * with the world stopped, or before any thread stores. */
static void lull_mark_set_marking(bool on)
{
    __atomic_store_n(&lull__barrier.marking, (uintptr_t)on, __ATOMIC_RELAXED);
    bool all = lull_cfg.card_every_store;
    __atomic_store_n(&lull__barrier.young_start, all ? 0 : lull_nursery_start, __ATOMIC_RELAXED);
    __atomic_store_n(&lull__barrier.young_size, all ? UINTPTR_MAX : lull_nursery_end - lull_nursery_start,
                     __ATOMIC_RELAXED);
}

void lull_mark_init(unsigned long stack_limit_entries)
{
    lull_trace_init(stack_limit_entries);
    if (!mark_g.root_buf)
        mark_g.root_buf = lull_os_table(ROOT_BUF_MAX * sizeof(uintptr_t));   /* NULL: greyed in the pause */
    mark_g.root_n = mark_g.root_next = 0;
    mark_g.overflows = 0;
    mark_g.shadow_roots = mark_g.shadow_parallel = NULL;
    mark_g.shadow_bytes = 0;
    mark_g.held = NULL;
    mark_g.ignore_nursery = mark_g.atomic_marks = false;
    lull_mark_set_marking(false);
    if (lull_cfg.verify_parallel || lull_cfg.verify_concurrent || lull_cfg.check_mod_union) {
        /* Reserved, committed by the kernel as touched: only the bitmap
         * words below the frontier are ever copied. */
        mark_g.shadow_bytes = lull_heap_g.mark_bytes;
        mark_g.shadow_roots = lull_os_reserve_rw(mark_g.shadow_bytes);
        mark_g.shadow_parallel = lull_os_reserve_rw(mark_g.shadow_bytes);
        if (!mark_g.shadow_roots || !mark_g.shadow_parallel)
            lull_fatal("lull_init", "verify-parallel/verify-concurrent: cannot reserve %zu MiB for shadow mark bitmaps",
                       mark_g.shadow_bytes >> 20);
    }
}

void lull_mark_fini(void)
{
    lull_trace_fini();
    lull_os_free_table(mark_g.root_buf, ROOT_BUF_MAX * sizeof(uintptr_t));
    mark_g.root_buf = NULL;
    if (mark_g.shadow_roots) {
        lull_os_unreserve(mark_g.shadow_roots, mark_g.shadow_bytes);
        lull_os_unreserve(mark_g.shadow_parallel, mark_g.shadow_bytes);
        mark_g.shadow_roots = mark_g.shadow_parallel = NULL;
    }
}

/* ------------------------------------------------------------------------ */
/* Greying                                                                  */
/* ------------------------------------------------------------------------ */

static inline bool mark_set(const lull_tracer *tr, uintptr_t obj)
{
    return tr->share || mark_g.atomic_marks ? lull_mark_set(obj) : lull_mark_set_single(obj);
}

static uintptr_t evacuate(lull_tracer *tr, uintptr_t v, const lull_block *b);

/* Grey `v` if it is a reference to an unmarked object, and return where it
 * lives now: v itself, unless an evacuating major moved it (evacuate).
 * References point to object starts (API contract); the heap verifier
 * checks that. */
static inline uintptr_t mark_ref(lull_tracer *tr, uintptr_t v)
{
    /* The mark bit first: most references a card rescan visits lead to
     * marked objects, and this spares each of them the read of a block
     * descriptor, a second cache miss. (A marked object of an evacuated
     * block was marked in place: it stays; a moved one's original is
     * never marked.) */
    if (!lull_in_committed(v) || lull_is_marked(v))
        return v;
    lull_block *b = lull_block_of(v);
    if (b->state == LULL_BLOCK_SMALL) {
        if (LULL_UNLIKELY(b->evacuating))
            return evacuate(tr, v, b);
        if (mark_set(tr, v) && b->has_refs)
            lull_tracer_push(tr, v);
    } else if ((b->state == LULL_BLOCK_LARGE_HEAD && (v & (LULL_BLOCK_SIZE - 1)) == 0 &&
                !__atomic_load_n(&b->young, __ATOMIC_RELAXED)) ||
               (b->state == LULL_BLOCK_NURSERY && !mark_g.ignore_nursery)) {
        /* A large object, or a survivor of the minor that began this major
         * (pinned in the nursery; a typeless word there is free space). A
         * young large object is the minors' as the nursery is (heap.h):
         * one the next minor does not reach, it frees. */
        const lull_type *t = lull_header_type(*(uintptr_t *)v);
        if (t && mark_set(tr, v) && lull_type_has_refs(t))
            lull_tracer_push(tr, v);
    }
    return v;
}

/* A reference slot of a heap object, read atomically (acquire: a marker
 * running beside mutators must see the target's initialised contents). An
 * old slot that points into the nursery gets its card marked: the
 * remembered set is rebuilt by every major (cemented objects' cards were
 * cleared). A slot whose target this mark moved gets the copy's address:
 * only the marker that scans the slot's object writes it (two that rescan
 * one object after an overflow write the same value), with the world
 * stopped. A copy's own slots are visited like any object's (the copy is
 * scanned, never its original), so their cards are marked here too.
 * LULL_GC_DEBUG=plant-evac-fault=slot leaves the first slot to update at
 * the old copy, so that verify and verify-parallel have a stale slot to
 * catch (=root: the first root's slot, lull_mark_precise_slot). */
static void visit(void **slotp, void *ctx)
{
    uintptr_t *slot = (uintptr_t *)slotp;
    uintptr_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (lull_in_nursery(v) && !lull_in_nursery((uintptr_t)slot))
        lull_card_set_young(&lull_heap_g.cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT]);
    uintptr_t now = mark_ref(ctx, v);
    if (LULL_UNLIKELY(now != v)) {
        if (LULL_UNLIKELY(lull_cfg.plant_evac_fault == LULL_PLANT_SLOT) && !atomic_exchange(&mark_g.evac_planted, true))
            return;
        __atomic_store_n(slot, now, __ATOMIC_RELAXED);
    }
}

/* A root's slot (world stopped, the stopping thread only). */
void lull_mark_precise_slot(void **slot, void *ctx)
{
    uintptr_t v = (uintptr_t)*slot, now = mark_ref(ctx, v);
    if (now == v ||
        (LULL_UNLIKELY(lull_cfg.plant_evac_fault == LULL_PLANT_ROOT) && !atomic_exchange(&mark_g.evac_planted, true)))
        return;
    *slot = (void *)now;
}

/* ------------------------------------------------------------------------ */
/* Evacuation                                                               */
/* ------------------------------------------------------------------------ */

/* v is in a block this synchronous major evacuates (b). The first marker
 * to reach it copies it into another block of its class (never one being
 * evacuated: lull_major_evac_alloc) and installs the
 * forwarding header (copy | FORWARDED) with a compare-and-swap on the
 * original's header; a marker that loses the race gives its slot back and
 * takes the winner's copy. The copy is whole (header and body) before the
 * swap publishes it, and is marked and greyed by the winner; the original
 * stays unmarked, garbage for the sweep. Objects that must not move are
 * marked in place: those a conservative root reached (marked before any
 * copy: the roots are scanned conservatively first, collect.c), those of
 * lull_alloc_pinned (NOMOVE), and any for which no slot can be had (the
 * heap cannot grow): such a one is claimed in place with the same swap
 * (PINNED), so that no other marker copies it meanwhile; the tag is
 * removed after the mark (lull_mark_end_evacuation). */
static uintptr_t evacuate(lull_tracer *tr, uintptr_t v, const lull_block *b)
{
    uintptr_t *hp = (uintptr_t *)v;
    uintptr_t h = __atomic_load_n(hp, __ATOMIC_ACQUIRE);
    for (;;) {
        if (h & LULL_HDR_FORWARDED) {
            uintptr_t copy = h & ~LULL_HDR_TAG_MASK;
            if (LULL_UNLIKELY(mark_g.evac == EVAC_CHECK))
                lull_fatal("verify-parallel", "a reference to %p was left pointing at the old place of an "
                           "object the parallel mark moved to %p: the program would read freed memory",
                           (void *)v, (void *)copy);
            return copy;
        }
        /* A typeless word is a free slot a dangling reference led to: marked
         * in place as before evacuation, so that verify names it. */
        if (!h || (h & (LULL_HDR_PINNED | LULL_HDR_NOMOVE)) || mark_g.evac != EVAC_COPY || lull_is_marked(v)) {
            if (mark_set(tr, v) && b->has_refs)
                lull_tracer_push(tr, v);
            return v;
        }
        uintptr_t c = lull_major_evac_alloc(tr->id, b->has_refs, b->size_class);
        if (!c) {
            if (__atomic_compare_exchange_n(hp, &h, h | LULL_HDR_PINNED, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                atomic_store_explicit(&mark_g.evac_kept, true, memory_order_relaxed);
            h = __atomic_load_n(hp, __ATOMIC_ACQUIRE);
            continue;
        }
        size_t size = lull_object_size(v, lull_header_type(h));
        /* Word by word, each read atomic: a marker that claimed v in place
         * meanwhile (no slot for it: PINNED, below) may already scan it and
         * update its slots, and this copy is then given back. The last word
         * may run past the object, never past its slot. */
        const uintptr_t *from = (const uintptr_t *)v;
        uintptr_t *to = (uintptr_t *)c;
        for (size_t w = 1, n = (size + sizeof(uintptr_t) - 1) / sizeof(uintptr_t); w < n; w++)
            to[w] = __atomic_load_n(&from[w], __ATOMIC_RELAXED);
        __atomic_store_n((uintptr_t *)c, h, __ATOMIC_RELAXED);
        if (!__atomic_compare_exchange_n(hp, &h, c | LULL_HDR_FORWARDED, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            lull_major_evac_undo(tr->id, b->has_refs, b->size_class, c);
            continue;
        }
        if (lull_mark_set(c) && b->has_refs)
            lull_tracer_push(tr, c);
        mark_g.evac_objects[tr->id]++;
        mark_g.evac_bytes[tr->id] += lull_class_size[b->size_class];
        LULL_PROBE4(object_evacuated, v, c, size, LULL_PROBE_TYPE_NAME(lull_header_type(h)));
        return c;
    }
}

uintptr_t lull_mark_forwarded(uintptr_t obj)
{
    if (!lull_in_committed(obj))
        return obj;
    const lull_block *b = lull_block_of(obj);
    if (b->state != LULL_BLOCK_SMALL || !b->evacuating)
        return obj;
    uintptr_t h = __atomic_load_n((uintptr_t *)obj, __ATOMIC_RELAXED);
    return h & LULL_HDR_FORWARDED ? h & ~LULL_HDR_TAG_MASK : obj;
}

void lull_mark_begin_evacuation(void)
{
    mark_g.evac_classes = lull_major_plan_evacuation(lull_cfg.evacuation_threshold, &mark_g.evac_blocks);
    mark_g.evac = mark_g.evac_classes ? EVAC_COPY : EVAC_OFF;
    memset(mark_g.evac_objects, 0, sizeof mark_g.evac_objects);
    memset(mark_g.evac_bytes, 0, sizeof mark_g.evac_bytes);
    atomic_store(&mark_g.evac_kept, false);
    atomic_store(&mark_g.evac_planted, false);
}

/* The objects claimed in place for want of a slot lose their PINNED tag. */
static void unpin_kept(uintptr_t obj, void *ctx)
{
    (void)ctx;
    uintptr_t *h = (uintptr_t *)obj;
    *h &= ~LULL_HDR_PINNED;
}

void lull_mark_end_evacuation(void)
{
    if (mark_g.evac == EVAC_OFF) {
        /* This major moved nothing (or was not synchronous). */
        mark_g.evac_classes = 0;
        mark_g.evac_objects[0] = mark_g.evac_bytes[0] = 0;
        return;
    }
    mark_g.evac = EVAC_OFF;
    lull_major_evac_end();
    if (atomic_load(&mark_g.evac_kept)) {
        uint32_t frontier = lull_frontier();
        for (uint32_t i = 0; i < frontier; i++)
            if (lull_heap_g.blocks[i].state == LULL_BLOCK_SMALL && lull_heap_g.blocks[i].evacuating)
                lull_trace_block_objects(i, true, unpin_kept, NULL);
    }
    uint64_t objects = 0, bytes = 0;
    for (unsigned i = 0; i <= LULL_MAX_WORKERS; i++)
        objects += mark_g.evac_objects[i], bytes += mark_g.evac_bytes[i];
    mark_g.evac_objects[0] = objects;
    mark_g.evac_bytes[0] = bytes;
    for (unsigned i = 1; i <= LULL_MAX_WORKERS; i++)
        mark_g.evac_objects[i] = mark_g.evac_bytes[i] = 0;
}

void lull_mark_evacuated(unsigned *classes, uint32_t *blocks, uint64_t *objects, uint64_t *bytes)
{
    *classes = mark_g.evac_classes;
    *blocks = mark_g.evac_classes ? mark_g.evac_blocks : 0;
    *objects = mark_g.evac_objects[0];
    *bytes = mark_g.evac_bytes[0];
}

void lull_mark_grey_from_minor(lull_tracer *tr, uintptr_t v)
{
    mark_ref(tr, v);
}

void lull_mark_grey_made_old(lull_tracer *tr, uintptr_t obj)
{
    lull_tracer_push(tr, obj);
}

void lull_mark_adopt_from_minor(lull_tracer *tr)
{
    lull_grey_section *chain = lull_tracer_take(tr);
    if (!chain)
        return;
    lull_tracer held = { .cur = mark_g.held };
    lull_tracer_adopt(&held, chain);
    mark_g.held = lull_tracer_take(&held);
    /* If the job had said it was done, the final pause drains these. */
}

/* LULL_GC_DEBUG=plant-mark-fault, to show that verify-parallel catches a
 * lost object: the first slot of the drain that points to an unmarked small
 * object is skipped, so that object (and whatever only it reaches) stays
 * white. */
static void visit_planted(void **slotp, void *ctx)
{
    uintptr_t v = __atomic_load_n((uintptr_t *)slotp, __ATOMIC_ACQUIRE);
    if (lull_in_committed(v) && lull_block_of(v)->state == LULL_BLOCK_SMALL && !lull_is_marked(v) &&
        !atomic_exchange(&mark_g.planted, true))
        return;
    visit(slotp, ctx);
}

/* Make a grey object black: grey its children. (A free slot a dangling
 * reference led to has no type and so no slots: lull_trace_slots; then
 * LULL_GC_DEBUG=verify names the object that holds the reference.) */
static inline void scan_object(lull_tracer *tr, uintptr_t obj)
{
    if (LULL_UNLIKELY(mark_g.plant))
        lull_trace_slots(obj, visit_planted, tr);
    else
        lull_trace_slots(obj, visit, tr);
}

static void mark_word(uintptr_t v, void *ctx)
{
    lull_tracer *tr = ctx;
    /* Conservative roots pin what they reach: all of them are greyed
     * before an evacuating mark copies anything (collect.c). */
    LULL_ASSERT(mark_g.evac != EVAC_COPY);
    /* Before the lookup: between minors the nursery's log is not sorted
     * for lookups (nursery.h), and an ignored nursery needs none. */
    if (mark_g.ignore_nursery && lull_in_nursery(v))
        return;
    uintptr_t obj = lull_find_object(v, true);
    if (!obj || !mark_set(tr, obj))
        return;
    lull_block *b = lull_block_of(obj);
    if (b->state == LULL_BLOCK_SMALL ? b->has_refs : lull_type_has_refs(lull_header_type(*(uintptr_t *)obj)))
        lull_tracer_push(tr, obj);
}

void lull_mark_conservative(uintptr_t lo, uintptr_t hi, void *ctx)
{
    lull_trace_conservative(lo, hi, mark_word, ctx);
}

/* ------------------------------------------------------------------------ */
/* Draining                                                                 */
/* ------------------------------------------------------------------------ */

/* A grey entry with this bit set is no object but a place inside a large
 * object: scan it from there to its end. The concurrent mark scans a large
 * object a slice at a time and keeps what is left as such an entry
 * (scan_slice), so that the entry says all there is to know: any worker
 * may pop it, after any number of pauses, under objects a minor pushed
 * on top (the final pause's drain scans the rest at once). Objects are
 * granule-aligned, and a place is slot-aligned. */
#define GREY_RESUME ((uintptr_t)1)

static inline uintptr_t resume_object(uintptr_t place)
{
    return lull_block_addr(lull_large_head(lull_block_index(place), lull_block_of(place)->state));
}

/* The rest of a large object, from a resume entry. Only objects described
 * by refs/elem_refs are scanned in slices, so their slots can be asked for
 * by range. */
static void scan_rest(lull_tracer *tr, uintptr_t entry)
{
    uintptr_t from = entry & ~GREY_RESUME, obj = resume_object(from);
    bool ranged = lull_trace_slots_in(obj, from, obj + lull_block_of(obj)->large_size, visit, tr);
    LULL_ASSERT(ranged);
    (void)ranged;
}

/* Prefetching. Scanning a grey object begins with a cache miss on its
 * header, so a drain pops PREFETCH_DEPTH objects ahead of the one it scans
 * and asks for each one's first line as it pops it: the misses of the ring
 * overlap instead of following one another (the FIFO of Cher, Hosking and
 * Nguyen, "Effective prefetch for mark-sweep garbage collection", 2004).
 * Entries in the ring are still grey: every drain scans or pushes back all
 * of them before it returns. */
#define PREFETCH_DEPTH 8

typedef struct {
    uintptr_t e[PREFETCH_DEPTH];
    unsigned head, n;
} prefetch_ring;

static inline void ring_put(prefetch_ring *r, uintptr_t e)
{
    __builtin_prefetch((const void *)(e & ~GREY_RESUME));
    r->e[(r->head + r->n++) % PREFETCH_DEPTH] = e;
}

static inline uintptr_t ring_take(prefetch_ring *r)
{
    uintptr_t e = r->e[r->head];
    r->head = (r->head + 1) % PREFETCH_DEPTH;
    r->n--;
    return e;
}

/* The next grey entry to scan, with the ring kept full from tr's stack;
 * false when both are empty. */
static inline bool ring_next(lull_tracer *tr, prefetch_ring *r, uintptr_t *e)
{
    uintptr_t p;
    while (r->n < PREFETCH_DEPTH && lull_tracer_pop(tr, &p))
        ring_put(r, p);
    if (!r->n)
        return false;
    *e = ring_take(r);
    return true;
}

/* Give the ring's entries back to tr's stack (a drain asked to stop). */
static void ring_return(lull_tracer *tr, prefetch_ring *r)
{
    while (r->n)
        lull_tracer_push(tr, ring_take(r));
}

static void drain_local(lull_tracer *tr)
{
    prefetch_ring r = {.n = 0};
    uintptr_t obj;
    while (ring_next(tr, &r, &obj)) {
        if (LULL_UNLIKELY(obj & GREY_RESUME)) {
            scan_rest(tr, obj);     /* counted when its first slice was */
            continue;
        }
        tr->scanned++;
        scan_object(tr, obj);
    }
}

static void drain_local_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    drain_local(tr);
}

static void final_roots_part(lull_tracer *tr);

static void mark_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    uint64_t before = tr->scanned;
    tr->share = true;
    if (mark_g.final_in_drain)
        final_roots_part(tr);
    lull_tracer_drain_shared(tr, &mark_g.active, drain_local_job, NULL);
    tr->share = false;
    LULL_ASSERT(lull_tracer_empty(tr));
    atomic_fetch_add(&mark_g.scanned, tr->scanned - before);
}

/* Drain with every marker. The stopper's private chain goes to the shared
 * pool but for its top section, so the workers start at once. */
static void drain_round(lull_tracer *tr)
{
    unsigned markers = lull_workers_count() + 1;
    if (markers == 1) {
        uint64_t before = tr->scanned;
        drain_local(tr);
        atomic_fetch_add(&mark_g.scanned, tr->scanned - before);
        mark_g.scanned_by_stopper += tr->scanned - before;
        return;
    }
    if (tr->cur)
        lull_tracer_share_older(tr);
    atomic_store(&mark_g.active, 1);        /* the workers that join add themselves */
    uint64_t before = tr->scanned;
    lull_workers_run(mark_job, NULL, tr, &mark_g.active);
    mark_g.scanned_by_stopper += tr->scanned - before;
    LULL_ASSERT(!lull_trace_shared_nonempty() && atomic_load(&mark_g.active) == 0);
}

/* Overflow recovery: every marked object may have unscanned children. */
static void rescan_one(uintptr_t obj, void *ctx)
{
    lull_tracer *tr = ctx;
    scan_object(tr, obj);
    drain_local(tr);
}

static void drain(lull_tracer *tr, bool parallel)
{
    if (parallel) {
        drain_round(tr);
    } else {
        tr->share = false;
        drain_local(tr);
    }
    /* Serial and rare: rescan from every marked object, as often as a
     * section could not be had. */
    while (lull_trace_take_overflow()) {
        mark_g.overflows++;
        lull_heap_each_marked(true, rescan_one, tr);
    }
}

void lull_mark_drain(lull_tracer *tr)
{
    mark_g.plant_ok = true;
    /* Planted only where verify-parallel checks (several markers). */
    mark_g.plant = lull_cfg.plant_mark_fault && lull_workers_count() && mark_g.plant_ok;
    atomic_store(&mark_g.planted, false);
    mark_g.overflows = 0;
    mark_g.scanned_by_stopper = 0;
    atomic_store(&mark_g.scanned, 0);
    drain(tr, true);
}

void lull_mark_drain_more(lull_tracer *tr)
{
    mark_g.plant = false;
    drain(tr, true);
}

unsigned long lull_mark_overflows(void)
{
    return mark_g.overflows;
}

void lull_mark_last_work(uint64_t *total, uint64_t *by_stopper)
{
    *total = atomic_load(&mark_g.scanned);
    *by_stopper = mark_g.scanned_by_stopper;
}

/* ------------------------------------------------------------------------ */
/* The concurrent mark                                                      */
/* ------------------------------------------------------------------------ */

#define POLL_EVERY        16u    /* objects the job scans between looks at its stop flag */

/* Workers are parked in bg_wait and grey sections wait in the shared pool:
 * wake them, once until one of them has looked again (bg_kicked: the
 * busy ones call this every POLL_EVERY objects). */
static inline void offer_work(void)
{
    if (atomic_load_explicit(&mark_g.bg_waiting, memory_order_relaxed) > 0 && lull_trace_shared_nonempty() &&
        !atomic_exchange_explicit(&mark_g.bg_kicked, true, memory_order_relaxed))
        lull_workers_background_kick();
}

/* The mark's card scanner (trace/cards.h): a marked object on a dirty
 * union card is rescanned whole (a small one) or for the card's part of it
 * (a large one whose slots can be asked for by range; else whole).
 * Unmarked objects are left alone: a white object is scanned whole once
 * it is reached, and a free slot may be being allocated right now. */
static void rescan_small(uintptr_t obj, void *ctx)
{
    scan_object(ctx, obj);
}

static void rescan_large(uintptr_t obj, uintptr_t lo, uintptr_t hi, void *ctx)
{
    if (!lull_trace_slots_in(obj, lo, hi, visit, ctx))
        lull_trace_slots(obj, visit, ctx);
}

static const lull_card_scanner final_scanner = {
    .kind = LULL_CARDS_FINAL, .small = rescan_small, .large = rescan_large,
};
static const lull_card_scanner preclean_scanner = {
    .kind = LULL_CARDS_PRECLEAN, .small = rescan_small, .large = rescan_large,
};

/* The final pause's cards, on every marker (mark_job) or on the stopper
 * alone, claimed FINAL_CHUNK blocks at a time: each card dirty in the union
 * table is cleared and rescanned once (world stopped). */
#define FINAL_CHUNK 64u
static void final_cards_part(lull_tracer *tr)
{
    uint8_t *u = lull_heap_g.union_cards;
    size_t found = 0, b0, b1, frontier = lull_frontier();
    lull_card_pipe p = { .n = 0 };
    while (lull_claim(&mark_g.next_block, frontier, FINAL_CHUNK, &b0, &b1)) {
        for (uint32_t bi = (uint32_t)b0; bi < b1; bi++) {
            uint8_t *uc = u + (size_t)bi * LULL_CARDS_PER_BLOCK;
            if (lull_cards_clean(uc, false))
                continue;
            if (lull_in_nursery(lull_block_addr(bi)))
                memset(uc, LULL_CARD_CLEAN, LULL_CARDS_PER_BLOCK);  /* its objects are roots here (final_young_part) */
            else
                found += lull_cards_take_block(&p, &final_scanner, tr, NULL, uc, bi);
        }
    }
    lull_card_pipe_flush(&p, &final_scanner, tr, NULL);
    atomic_fetch_add_explicit(&mark_g.cards_found, found, memory_order_relaxed);
}

static bool defer_young_large(lull_tracer *tr, uintptr_t obj);

/* The final pause's roots beyond stacks and registered roots, shared by
 * every marker like the cards: the nursery and the young large objects
 * are a root set (mark.h), every reference slot of every object in them
 * visited; then the dirty cards. The initial pause visits the same roots
 * (`initial`), but there they only hasten the mark, so a young large
 * object worth slicing is left to the background markers (below). */
/* A nursery object, a root of the final pause: its slots are visited. */
static void scan_young_root(uintptr_t obj, void *ctx)
{
    lull_trace_slots(obj, visit, ctx);
}

static void final_young_part(lull_tracer *tr, bool initial)
{
    uint64_t bytes = 0;
    size_t objects = lull_nursery_each_object_part(&mark_g.next_range, scan_young_root, tr, &bytes);
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&mark_g.next_young, 1, memory_order_relaxed);
        if (i >= mark_g.nyoung)
            break;
        if (!initial || !defer_young_large(tr, mark_g.young[i]))
            lull_trace_slots(mark_g.young[i], visit, tr);
        bytes += lull_object_footprint(mark_g.young[i]);
        objects++;
    }
    atomic_fetch_add_explicit(&mark_g.nursery_objects, objects, memory_order_relaxed);
    atomic_fetch_add_explicit(&mark_g.nursery_bytes, bytes, memory_order_relaxed);
}

static void final_roots_part(lull_tracer *tr)
{
    final_young_part(tr, false);
    final_cards_part(tr);
}

/* Set up final_roots_part (world stopped). */
static void final_roots_begin(void)
{
    lull_nursery_sync_tlabs();
    atomic_store(&mark_g.next_range, 0);
    atomic_store(&mark_g.nursery_objects, 0);
    atomic_store(&mark_g.nursery_bytes, 0);
    mark_g.nyoung = lull_los_young_list(mark_g.young, LULL_LOS_MAX_YOUNG);
    atomic_store(&mark_g.next_young, 0);
    atomic_store(&mark_g.next_block, 0);
    atomic_store(&mark_g.cards_found, 0);
}

/* The preclean, while the world runs: a pass visits the blocks in address
 * order and rescans the marked objects on each card that is dirty in the
 * union table, the byte cleared first with an atomic exchange: a store
 * after it marks the card again (lull_store stores the slot, then the
 * card; the exchange is a full barrier on x86-64, so a slot read that
 * misses the store implies a card store that follows the exchange).
 * Unmarked objects are not read: one may be a free slot being allocated
 * right now.
 *
 * No lock is taken: the block descriptors the rescans read are published
 * with release and read with acquire (heap.h), and while the job runs they
 * only go from unformatted to formatted (a minor frees a dead young large
 * object's run with the job stopped; a pass reads the descriptors again
 * after it). Asked to stop, the job finishes
 * the few cards in its prefetch pipe and returns; a block's dirty cards
 * are claimed and pushed together, so none is left claimed but not
 * rescanned.
 *
 * Throttle: once the program has used THROTTLE_FROM of the mark's runway
 * (lull_meter_runway_used: the allocation from the mark's start to the
 * allowance), the preclean takes the gc lock for each THROTTLE_CARDS cards
 * it rescans, so that a thread that needs the lock (a TLAB refill) waits
 * for a batch and the mark gets the time the runway has left. The lock is
 * only tried, never waited for (the thread that holds it may be stopping
 * the job). The nursery's cards are never looked at: the mark ignores the
 * nursery, and its final pause takes every nursery object as a root.
 *
 * A pass goes on where it stopped when a pause stopped the job
 * (pass_block), so that passes end however often minors come. */
#define PRECLEAN_OFFER  1024u   /* cards rescanned between offers of what they greyed */
#define PRECLEAN_POLL   256u    /* blocks looked at between looks at the stop flag */
#define THROTTLE_FROM   0.5     /* share of the runway used from which the preclean throttles */
#define THROTTLE_CARDS  1024u   /* cards rescanned per hold of the gc lock then */
#define THROTTLE_EVERY  4u      /* dirty blocks between looks at the runway */

/* The job is asked to stop: a pause (or fork, shutdown) stops the
 * workers' run; a step's run ends at its deadline. */
static bool job_stopping(void)
{
    if (mark_g.step_deadline)
        return lull_now_ns() >= mark_g.step_deadline;
    return lull_workers_background_stopping();
}

/* Throttling: take the gc lock, trying (false: asked to stop meanwhile). */
static bool throttle_lock(void)
{
    return lull_gc_lock_background(20);
}

static bool preclean_step(lull_tracer *tr)
{
    uint8_t *u = lull_heap_g.union_cards;
    uint32_t nursery_lo = lull_block_index(lull_nursery_start), nursery_hi = lull_block_index(lull_nursery_end);
    uint32_t frontier = lull_frontier(), bi = mark_g.pass_block, polled = 0, dirty_blocks = 0;
    size_t since_offer = 0, held_cards = 0;
    lull_card_pipe p = { .n = 0 };
    bool stopped = false, held = false;
    for (; bi < frontier; bi++) {
        if (++polled % PRECLEAN_POLL == 0 && job_stopping()) {
            stopped = true;
            break;
        }
        if (bi >= nursery_lo && bi < nursery_hi)
            continue;
        uint8_t *uc = u + (size_t)bi * LULL_CARDS_PER_BLOCK;
        if (lull_cards_clean(uc, true))
            continue;
        if (!held && !mark_g.step_deadline && dirty_blocks++ % THROTTLE_EVERY == 0 &&
            lull_meter_runway_used() >= THROTTLE_FROM) {
            lull_card_pipe_flush(&p, &preclean_scanner, tr, NULL);   /* what was claimed before the lock is rescanned before it */
            if (!throttle_lock()) {
                stopped = true;
                break;
            }
            held = true;
            held_cards = 0;
        }
        size_t n = lull_cards_take_block(&p, &preclean_scanner, tr, NULL, uc, bi);
        mark_g.pass_found += n;
        since_offer += n;
        if (held && (held_cards += n) >= THROTTLE_CARDS) {
            lull_card_pipe_flush(&p, &preclean_scanner, tr, NULL);
            lull_gc_unlock();
            held = false;
        }
        if (since_offer >= PRECLEAN_OFFER) {
            since_offer = 0;
            offer_work();           /* full sections of what the rescans greyed */
        }
        if (job_stopping()) {
            bi++;
            stopped = true;
            break;
        }
    }
    lull_card_pipe_flush(&p, &preclean_scanner, tr, NULL);
    if (held)
        lull_gc_unlock();
    offer_work();
    mark_g.pass_block = bi;
    return !stopped;
}

/* A large object is scanned SLICE_BYTES at a time while the world runs,
 * the stop flag read between slices, so that a pause waits for one slice
 * at most. scan_slice scans the slice at `from` and then pushes what is
 * left as a resume entry (GREY_RESUME), on top of the objects the slice
 * greyed: a worker stopped between slices has nothing to remember (the
 * entry is on its stack, which goes to `held`), and the whole object is
 * scanned before what it leads to, in its own order, as a synchronous mark
 * scans it. false: obj is not scanned in slices (a small object, or one of
 * a type with a trace function, which can only be visited whole). */
#define SLICE_BYTES ((uintptr_t)16 << 10)   /* 2,048 slots: tens of us */
static bool scan_slice(lull_tracer *tr, uintptr_t obj, uintptr_t from)
{
    const lull_block *b = lull_block_of(obj);
    if (b->state != LULL_BLOCK_LARGE_HEAD || b->large_size <= SLICE_BYTES ||
        (from == obj && lull_header_type(*(uintptr_t *)obj)->trace))
        return false;
    uintptr_t end = obj + b->large_size, hi = end - from > SLICE_BYTES ? from + SLICE_BYTES : end;
    lull_trace_slots_in(obj, from, hi, visit, tr);
    if (hi < end)
        lull_tracer_push(tr, hi | GREY_RESUME);
    return true;
}

/* A registered root's slot at the initial pause (world stopped). */
static void deferred_root(void **slot, void *ctx)
{
    uintptr_t v = (uintptr_t)*slot;
    if (!lull_in_committed(v))
        return;
    /* A young large object is the minors' (heap.h): greyed it is skipped,
     * or found marked once a minor made it old, and a minor may free it
     * before the leader gets to it, and reuse its run: not kept. */
    if (lull_young_large_at(v))
        return;
    if (mark_g.root_buf && mark_g.root_n < ROOT_BUF_MAX)
        mark_g.root_buf[mark_g.root_n++] = v;
    else
        lull_mark_precise_slot(slot, ctx);
}

/* The leader's first work: grey the initial pause's root values, a batch
 * at a time; false if asked to stop (it goes on from root_next). */
#define ROOT_BATCH 1024u
static bool grey_deferred_roots(lull_tracer *tr)
{
    while (mark_g.root_next < mark_g.root_n) {
        if (job_stopping())
            return false;
        size_t end = mark_g.root_next + ROOT_BATCH < mark_g.root_n ? mark_g.root_next + ROOT_BATCH : mark_g.root_n;
        for (size_t i = mark_g.root_next; i < end; i++)
            mark_ref(tr, mark_g.root_buf[i]);
        mark_g.root_next = end;
        if (tr->share && tr->cur)
            offer_work();
    }
    return true;
}

/* The initial pause (world stopped): instead of visiting the slots of
 * young large object obj, push it as a resume entry from its start, for
 * the background markers to scan a slice at a time without marking it,
 * so that the initial pause does not grow with young large objects.
 * Nothing is lost by the delay: the visit only hastens the mark, as the
 * final pause takes every object still young as a root again, and one a
 * minor makes old meanwhile is marked and scanned like any object
 * allocated black. The entry stays valid to the end of the mark: the
 * object is flagged mark_holds, and no minor frees a young large object
 * so flagged (an unreached one is made old, its slots cleared, for the
 * final pause's sweep; heap.h), and the workers are stopped while a
 * minor writes its slots. false: obj is
 * not scanned in slices (too small to matter, or a trace function). */
static bool defer_young_large(lull_tracer *tr, uintptr_t obj)
{
    lull_block *b = lull_block_of(obj);
    if (b->large_size <= SLICE_BYTES || lull_header_type(*(uintptr_t *)obj)->trace)
        return false;
    lull_tracer_push(tr, obj | GREY_RESUME);
    b->mark_holds = 1;     /* world stopped; one tracer per young object */
    mark_g.deferred_young += b->large_size;
    return true;
}

/* Drain while the world runs, sharing with the other workers of the job
 * (when there are any: tr->share); false: asked to stop (the grey objects
 * left stay on tr's stack). LULL_GC_DEBUG=mark-delay=N sleeps N us after
 * every 64 objects and every slice of a large object, to stretch a
 * mark over many minors. */
static void bump_progress(void);

static bool drain_background(lull_tracer *tr)
{
    uintptr_t e;
    unsigned n = 0;
    uint64_t before = tr->scanned, published = tr->scanned;
    bool go = true;
    prefetch_ring r = {.n = 0};
    while (ring_next(tr, &r, &e)) {
        bool sliced;
        if (e & GREY_RESUME) {
            uintptr_t from = e & ~GREY_RESUME;
            sliced = scan_slice(tr, resume_object(from), from);
            LULL_ASSERT(sliced);
        } else {
            tr->scanned++;
            sliced = scan_slice(tr, e, e);
            if (!sliced)
                scan_object(tr, e);
        }
        if (sliced || ++n % POLL_EVERY == 0) {
            if (job_stopping()) {
                ring_return(tr, &r);
                go = false;
                break;
            }
            if (lull_cfg.mark_delay_us && (sliced || n % 64 == 0))   /* mark-delay's cadence: 64 objects */
                usleep((useconds_t)lull_cfg.mark_delay_us);
            offer_work();
            /* The drain's progress, for lull_mark_progress; a paced thread
             * is woken once it reaches what the thread waits for. */
            uint64_t total = atomic_fetch_add(&mark_g.scanned, tr->scanned - published) + (tr->scanned - published);
            published = tr->scanned;
            if (atomic_load_explicit(&mark_g.progress_waiters, memory_order_relaxed) &&
                total >= atomic_load_explicit(&mark_g.progress_goal, memory_order_relaxed))
                bump_progress();
        }
    }
    uint64_t k = tr->scanned - before;
    atomic_fetch_add(&mark_g.scanned, tr->scanned - published);
    atomic_fetch_add_explicit(&mark_g.bg_scanned[tr->id], k, memory_order_relaxed);
    return go && !job_stopping();
}

/* The background job runs on every worker thread at once (the workers of
 * mark-workers, or the one started for it). Worker 0 leads: it alone
 * precleans (passes resume across runs, and each batch takes the gc lock)
 * and decides when the mark is done; the others help drain. All of them
 * drain with sharing (trace.h): full sections, and halves for idle ones,
 * go to the shared pool, from which the idle steal.
 *
 * Who holds grey objects while it runs: each participant's private stack,
 * and the shared pool. bg_lock protects `held`, bg_inside and bg_busy.
 * `bg_busy` counts the helpers that may hold grey objects or publish them:
 * a helper leaves it only with an empty stack, and enters it again (only
 * under bg_lock) on seeing the pool non-empty, before it steals. Only a
 * busy helper or the leader pushes to the pool. So when the leader, its
 * own stack empty, finds under bg_lock bg_busy == 0 and the pool empty,
 * no grey object is left anywhere and none can appear but by its own
 * preclean: the drain phase is over (quiet). (Every push happened before
 * its pusher's release of bg_lock on leaving bg_busy, so the leader's
 * read of the pool, after taking the lock, sees it.) The leader then
 * precleans: what a pass greys is shared as any drain's is (full
 * sections during the pass, halves once the leader drains them), and
 * the helpers are woken for it (offer_work). The mark is done once a
 * drain is quiet after a pass that said so (background_lead): bg_done is
 * set only then, with every participant idle and nothing shared.
 *
 * Stopping (every pause, fork, shutdown): each participant returns within
 * POLL_EVERY objects or one slice, putting its private stack into `held`;
 * the last one out (bg_inside back to 0) moves the shared pool's sections
 * into `held` too, so that a pause, whose jobs (a minor's copying, a
 * drain) use the shared pool, finds it empty. A worker that had taken the
 * job but enters it only after that sees the stop at once and moves
 * nothing but the empty pool. The first participant in adopts `held`. */
enum { BG_WORK, BG_QUIET, BG_EXIT };

/* A participant whose stack is empty waits for shared work, parked (the
 * world runs: no spinning on two cores). BG_WORK: the pool has sections
 * (a helper is counted busy again); BG_QUIET (the leader only): nothing
 * grey anywhere; BG_EXIT: stop, or the mark is done. */
static int bg_wait(bool leader)
{
    lull_trace_note_idle(1);        /* the busy ones split their sections */
    atomic_fetch_add(&mark_g.bg_waiting, 1);
    int r;
    for (;;) {
        /* The kick count first, then the look: a kick after the look is
         * after this read, and wakes the wait below. */
        uint64_t seen = lull_workers_background_kicks();
        atomic_store_explicit(&mark_g.bg_kicked, false, memory_order_relaxed);
        pthread_mutex_lock(&mark_g.bg_lock);
        if (job_stopping() || atomic_load(&mark_g.bg_done)) {
            r = BG_EXIT;
        } else if (lull_trace_shared_nonempty()) {
            r = BG_WORK;
            if (!leader)
                mark_g.bg_busy++;
        } else {
            r = leader && mark_g.bg_busy == 0 ? BG_QUIET : -1;
        }
        pthread_mutex_unlock(&mark_g.bg_lock);
        if (r >= 0)
            break;
        lull_workers_background_wait(seen);
    }
    atomic_fetch_sub(&mark_g.bg_waiting, 1);
    lull_trace_note_idle(-1);
    return r;
}

/* A helper: drain, wait for shared work, drain, ... *busy: whether it is
 * counted in bg_busy when it returns. */
static void background_help(lull_tracer *tr, bool *busy)
{
    for (;;) {
        if (!drain_background(tr))
            return;
        pthread_mutex_lock(&mark_g.bg_lock);
        bool last = --mark_g.bg_busy == 0;
        pthread_mutex_unlock(&mark_g.bg_lock);
        *busy = false;
        if (last)
            lull_workers_background_kick();     /* the leader may wait for quiet */
        if (bg_wait(false) != BG_WORK)
            return;
        *busy = true;
    }
}

/* The leader (worker 0): drain until quiet; then preclean, pass after
 * pass, blackening (with the helpers) what each pass greyed, until the
 * final pause fits its budget; then, once quiet again, say so
 * (lull_mark_ready). The final pause rescans the union cards stored to
 * since each was precleaned: about as many as the program dirtied during
 * the last pass. So the mark ends after a complete pass that found at most
 * final_budget dirty cards (the policy sets it: what a final pause rescans
 * within the pause target). Once passes stop shrinking (PRECLEAN_SETTLE
 * passes done, and one found at least what the one before did: the
 * program dirties cards as fast as they are rescanned) the program pays:
 * want_quiet makes each storing thread wait for the next pass every
 * LULL__MARK_STORE_BATCH stores, so a pass finds at most about that many
 * cards a thread. PRECLEAN_MAX passes end the mark whatever they found
 * (a program whose stores never reach the slow path). The passes are
 * counted over the whole mark, not per run of the job: every pause stops
 * the job. */
#define PRECLEAN_ENOUGH 4096u   /* final_budget until the policy sets one */
#define PRECLEAN_FLOOR  512u
#define PRECLEAN_SETTLE 6u
#define PRECLEAN_MAX    64u

static size_t final_budget(void)
{
    size_t b = atomic_load_explicit(&mark_g.final_budget, memory_order_relaxed);
    return b ? b : PRECLEAN_ENOUGH;
}

/* The job completed a step the program may be waiting for. */
static void bump_progress(void)
{
    atomic_store_explicit(&mark_g.progress_goal, UINT64_MAX, memory_order_relaxed);   /* waiters set it anew */
    atomic_fetch_add_explicit(&mark_g.progress_seq, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&mark_g.progress_waiters, memory_order_seq_cst))
        lull_futex_wake(&mark_g.progress_seq, INT_MAX);
}

void lull_mark_wait_progress(uint64_t max_ns, double want)
{
    unsigned seen = atomic_load_explicit(&mark_g.progress_seq, memory_order_seq_cst);
    if (!lull_marking() || atomic_load(&mark_g.bg_done) || !lull_workers_can_background() ||
        !lull_cfg.background_mark)
        return;
    if (want >= 0 && mark_g.work_estimate) {
        uint64_t goal = (uint64_t)(want * (double)mark_g.work_estimate);
        uint64_t cur = atomic_load_explicit(&mark_g.progress_goal, memory_order_relaxed);
        while (goal < cur && !atomic_compare_exchange_weak_explicit(&mark_g.progress_goal, &cur, goal,
                                                                    memory_order_relaxed, memory_order_relaxed))
            ;
    }
    atomic_fetch_add_explicit(&mark_g.progress_waiters, 1, memory_order_seq_cst);
    lull_futex_wait(&mark_g.progress_seq, seen, (long)max_ns);
    atomic_fetch_sub_explicit(&mark_g.progress_waiters, 1, memory_order_relaxed);
}

void lull_mark_note_paced(uint64_t ns)
{
    atomic_fetch_add_explicit(&mark_g.paced_waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&mark_g.paced_ns, ns, memory_order_relaxed);
}

double lull_mark_progress(void)
{
    uint64_t w = mark_g.work_estimate;
    return w ? (double)atomic_load_explicit(&mark_g.scanned, memory_order_relaxed) / (double)w : -1.0;
}

bool lull_mark_wants_quiet(void)
{
    return atomic_load_explicit(&mark_g.want_quiet, memory_order_relaxed);
}

void lull_mark_set_final_budget(size_t cards)
{
    atomic_store_explicit(&mark_g.final_budget, cards < PRECLEAN_FLOOR ? PRECLEAN_FLOOR : cards,
                          memory_order_relaxed);
}

void lull_mark_paced(uint64_t *waits, uint64_t *ns)
{
    *waits = atomic_load_explicit(&mark_g.paced_waits, memory_order_relaxed);
    *ns = atomic_load_explicit(&mark_g.paced_ns, memory_order_relaxed);
}

/* One preclean pass, or what is left of it (it goes on where a pause
 * stopped it); false: stopped before its end. At its end last_found is
 * what it found and prev_found what the one before did. */
static bool preclean_pass(lull_tracer *tr)
{
    uint64_t t_step = lull_now_ns();
    size_t before = mark_g.pass_running ? mark_g.pass_found : 0;
    if (!mark_g.pass_running) {
        mark_g.pass_running = true;
        LULL_PROBE1(preclean_begin, mark_g.cycle);
        mark_g.pass_block = 0;
        mark_g.pass_found = 0;
    }
    bool complete = preclean_step(tr);
    LULL_TL(LULL_TL_PRECLEAN, t_step, lull_now_ns() - t_step, mark_g.pass_found - before, 0, 0, NULL);
    if (!complete)
        return false;
    size_t found = mark_g.pass_found;
    mark_g.pass_running = false;
    atomic_fetch_add(&mark_g.precleaned, found);
    LULL_PROBE1(preclean_end, found);
    mark_g.passes++;
    mark_g.prev_found = mark_g.last_found;
    mark_g.last_found = found;
    bump_progress();
    return true;
}

/* The mark is done (the policy runs the final pause at the next
 * allocation slow path), but until that pause comes the program goes on
 * storing, and every card it dirties meanwhile is the pause's to rescan.
 * So the leader alone (the helpers have left) goes on with passes,
 * draining what each greys: back to back while they find more than
 * PRECLEAN_ENOUGH cards, else after a nap that doubles from
 * TAIL_NAP_MIN_NS up to TAIL_NAP_MAX_NS while they find little. A program
 * that stores without allocating thus leaves the final pause only what it
 * dirtied since the last pass. The pause stops this as it stops any run of the job (the
 * nap is woken by the stop); what a pass greyed and did not blacken goes
 * to `held` for its drain; after a minor the job comes back to this
 * (lull_mark_resume_background). */
#define TAIL_NAP_MIN_NS 1000000u
#define TAIL_NAP_MAX_NS 64000000u
static void preclean_tail(lull_tracer *tr)
{
    uint64_t nap = mark_g.last_found > final_budget() ? 0 : TAIL_NAP_MIN_NS;
    tr->share = false;
    if (!drain_background(tr))      /* what a pause left in `held`, after a minor */
        return;
    for (;;) {
        if (nap) {
            lull_workers_background_nap(nap);
            nap = nap * 2 > TAIL_NAP_MAX_NS ? TAIL_NAP_MAX_NS : nap * 2;
        }
        if (!preclean_pass(tr) || !drain_background(tr))
            return;
        if (mark_g.last_found > final_budget())
            nap = 0;
        else if (!nap)
            nap = TAIL_NAP_MIN_NS;
    }
}

static void background_lead(lull_tracer *tr)
{
    bool done = false;
    if (!grey_deferred_roots(tr))
        return;
    for (;;) {
        if (!drain_background(tr))
            return;
        int r = bg_wait(true);
        if (r == BG_EXIT)
            return;
        if (r == BG_WORK)
            continue;
        if (done) {
            atomic_store(&mark_g.bg_done_ns, lull_now_ns());
            atomic_store(&mark_g.bg_done, true);
            atomic_store_explicit(&mark_g.want_quiet, false, memory_order_relaxed);
            bump_progress();
            lull_workers_background_kick();     /* the helpers leave */
            LULL_PROBE1(concurrent_mark_done, mark_g.cycle);
            if (!mark_g.step_deadline)
                preclean_tail(tr);      /* a step returns: the final pause is due */
            return;
        }
        if (!preclean_pass(tr))
            return;     /* stopped: the pass goes on from pass_block at the next run */
        size_t found = mark_g.last_found;
        done = found <= final_budget() || mark_g.passes >= PRECLEAN_MAX;
        if (!done && mark_g.passes >= PRECLEAN_SETTLE && found >= mark_g.prev_found)
            atomic_store_explicit(&mark_g.want_quiet, true, memory_order_relaxed);
    }
}

/* Append a chain to `held` (bg_lock held, or the job stopped). */
static void hold_chain(lull_grey_section *chain)
{
    lull_tracer held = { .cur = mark_g.held };
    lull_tracer_adopt(&held, chain);
    mark_g.held = lull_tracer_take(&held);
}

static void background_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    bool leader = tr->id == 1;      /* worker 0 */
    uint64_t t_run = lull_now_ns(), scanned_before = tr->scanned;
    tr->share = mark_g.bg_width > 1;
    pthread_mutex_lock(&mark_g.bg_lock);
    mark_g.bg_inside++;
    bool tail = atomic_load(&mark_g.bg_done);   /* the leader alone: preclean_tail */
    bool busy = !leader, go = !job_stopping() && (leader || !tail);
    if (busy)
        mark_g.bg_busy++;
    if (go) {
        lull_tracer_adopt(tr, mark_g.held);
        mark_g.held = NULL;
    }
    pthread_mutex_unlock(&mark_g.bg_lock);
    if (go) {
        if (tr->share && tr->cur) {
            lull_tracer_share_older(tr);
            offer_work();
        }
        if (leader)
            lull_major_prepare_for_promotion();   /* the sweep job's part, which a mark keeps from running */
        if (leader && tail) {
            preclean_tail(tr);
        } else if (leader) {
            background_lead(tr);
        } else {
            background_help(tr, &busy);
        }
    }
    pthread_mutex_lock(&mark_g.bg_lock);
    hold_chain(lull_tracer_take(tr));
    if (busy)
        mark_g.bg_busy--;
    if (--mark_g.bg_inside == 0)
        hold_chain(lull_trace_take_shared());
    pthread_mutex_unlock(&mark_g.bg_lock);
    tr->share = false;
    LULL_TL(LULL_TL_CONCURRENT_MARK, t_run, lull_now_ns() - t_run, mark_g.cycle, tr->scanned - scanned_before, 0,
            NULL);
}

void lull_mark_begin_concurrent(void)
{
    lull_mark_assert_all_clear();
    lull_mark_set_marking(true);
    mark_g.ignore_nursery = true;
    mark_g.atomic_marks = true;
    mark_g.plant = false;
    mark_g.cycle++;
    mark_g.overflows = 0;
    mark_g.scanned_by_stopper = 0;
    atomic_store(&mark_g.scanned, 0);
    atomic_store(&mark_g.progress_goal, UINT64_MAX);
    atomic_store(&mark_g.precleaned, 0);
    atomic_store(&mark_g.bg_done, false);
    atomic_store(&mark_g.bg_done_ns, 0);
    atomic_store_explicit(&mark_g.want_quiet, false, memory_order_relaxed);
    for (unsigned i = 0; i <= LULL_MAX_WORKERS; i++)
        atomic_store_explicit(&mark_g.bg_scanned[i], 0, memory_order_relaxed);
    mark_g.bg_width = lull_workers_background_threads();
    mark_g.passes = 0;
    mark_g.last_found = mark_g.prev_found = SIZE_MAX;
    mark_g.pass_running = false;
    lull_tracer tr = { .id = 0 };
    lull_roots_scan_threads(lull_mark_conservative, &tr);
    mark_g.root_n = mark_g.root_next = 0;
    lull_roots_scan(lull_mark_conservative, deferred_root, &tr);
    /* What the nursery and the young large objects point to, as the final
     * pause will: an old structure that only a nursery object leads to
     * (a list whose head a local variable pins there) is then marked
     * concurrently, not all in the final pause. The policy starts a mark
     * soon after a minor, when the nursery holds little. */
    final_roots_begin();
    mark_g.deferred_young = 0;
    final_young_part(&tr, true);
    mark_g.held = lull_tracer_take(&tr);
}

bool lull_mark_resume_background(void)
{
    if (!lull_marking())
        return false;
    if (lull_workers_can_background() && lull_cfg.background_mark) {
        /* Once the mark is done, worker 0 alone (preclean_tail); bg_width
         * stays what the mark ran on (lull_mark_background_work). */
        bool done = atomic_load(&mark_g.bg_done);
        if (!done)
            mark_g.bg_width = lull_workers_background_threads();
        lull_workers_start_background(background_job, NULL, done ? 1 : mark_g.bg_width);
    }
    return true;
}

bool lull_mark_ready(void)
{
    return (!lull_workers_can_background() && lull_cfg.background_mark) || atomic_load(&mark_g.bg_done);
}

bool lull_mark_background_done(void)
{
    return atomic_load(&mark_g.bg_done);
}

uint64_t lull_mark_background_done_ns(void)
{
    return atomic_load(&mark_g.bg_done_ns);
}

uint64_t lull_mark_cycle(void)
{
    return mark_g.cycle;
}

static void verify_concurrent(lull_tracer *tr);
static void check_mod_union(void);

void lull_mark_finish(lull_tracer *tr)
{
    if (lull_cfg.check_mod_union)
        check_mod_union();
    /* The nursery stays ignored: no minor precedes this pause, and every
     * object in the nursery, with every young large object, is a root of
     * it (mark.h). They are not marked; the next minor judges them. */
    lull_tracer_adopt(tr, mark_g.held);
    mark_g.held = NULL;
    lull_roots_scan_threads(lull_mark_conservative, tr);
    lull_roots_scan(lull_mark_conservative, lull_mark_precise_slot, tr);
    /* The nursery, the young large objects and the dirty cards: shared by
     * every marker at the start of the drain, or done here by this thread
     * alone when there is no worker, or with verify-parallel, which checks
     * this drain as it does a synchronous one: the serial re-mark starts
     * from every object marked before the drain (the roots, what the
     * nursery and the cards greyed, and all the concurrent mark
     * blackened), whose closure must be what the parallel drain reaches. */
    final_roots_begin();
    mark_g.final_in_drain = lull_workers_count() && !lull_cfg.verify_parallel;
    if (!mark_g.final_in_drain)
        final_roots_part(tr);
    if (lull_cfg.verify_parallel)
        lull_mark_verify_parallel_save();
    uint64_t concurrent = atomic_load(&mark_g.scanned);
    lull_mark_drain(tr);
    mark_g.final_cards = atomic_load(&mark_g.cards_found);
    mark_g.final_nursery_objects = atomic_load(&mark_g.nursery_objects);
    mark_g.final_in_drain = false;
    atomic_fetch_add(&mark_g.scanned, concurrent);
    mark_g.work_estimate = atomic_load(&mark_g.scanned);
    if (lull_cfg.verify_parallel && lull_workers_count())
        lull_mark_verify_parallel_check(tr);
    if (lull_cfg.verify_concurrent)
        verify_concurrent(tr);
    lull_mark_set_marking(false);
}

size_t lull_mark_deferred_roots(void)
{
    return mark_g.root_n;
}

uint64_t lull_mark_deferred_young_bytes(void)
{
    return mark_g.deferred_young;
}

uint64_t lull_mark_final_young_bytes(void)
{
    return atomic_load(&mark_g.nursery_bytes);
}

void lull_mark_end_major(void)
{
    mark_g.ignore_nursery = mark_g.atomic_marks = false;
}

void lull_mark_abandon(void)
{
    if (!lull_marking())
        return;
    lull_workers_stop_background();
    lull_trace_release_chain(mark_g.held);
    mark_g.held = NULL;
    mark_g.ignore_nursery = mark_g.atomic_marks = false;
    lull_mark_set_marking(false);
}

unsigned lull_mark_background_work(uint64_t *by_worker, unsigned n)
{
    unsigned w = mark_g.bg_width;
    for (unsigned i = 0; i < n && i < w; i++)
        by_worker[i] = atomic_load_explicit(&mark_g.bg_scanned[i + 1], memory_order_relaxed);
    return w;
}

void lull_mark_concurrent_work(uint64_t *precleaned, uint64_t *final_cards, uint64_t *final_nursery_objects)
{
    *precleaned = atomic_load(&mark_g.precleaned);
    *final_cards = mark_g.final_cards;
    *final_nursery_objects = mark_g.final_nursery_objects;
}

static size_t bitmap_words(void)
{
    /* A block's mark bits are LULL_BLOCK_SIZE / 16 / 64 words. */
    return (size_t)lull_frontier() * (LULL_BLOCK_SIZE >> (LULL_GRANULE_SHIFT + 6));
}

void lull_mark_assert_all_clear(void)
{
#ifdef LULL_CHECKED
    const uint64_t *bits = lull_heap_g.mark_bits;
    for (size_t i = 0, n = bitmap_words(); i < n; i++)
        if (bits[i]) {
            uintptr_t a = lull_heap_g.start + ((i * 64 + (size_t)__builtin_ctzll(bits[i])) << LULL_GRANULE_SHIFT);
            lull_fatal("lull_collect", "assertion: a mark begins with the mark bit of %p (block %u, state %u) "
                       "already set: that object would never be scanned", (void *)a, lull_block_index(a),
                       (unsigned)lull_block_of(a)->state);
        }
#endif
}

/* ------------------------------------------------------------------------ */
/* verify-parallel                                                          */
/* ------------------------------------------------------------------------ */

void lull_mark_verify_parallel_save(void)
{
    mark_g.shadow_words = bitmap_words();
    memcpy(mark_g.shadow_roots, lull_heap_g.mark_bits, mark_g.shadow_words * sizeof(uint64_t));
}

static void push_marked(uintptr_t obj, void *ctx)
{
    lull_tracer_push(ctx, obj);
}

void lull_mark_verify_parallel_check(lull_tracer *tr)
{
    size_t n = bitmap_words();
    uint64_t *bits = lull_heap_g.mark_bits;
    memcpy(mark_g.shadow_parallel, bits, n * sizeof(uint64_t));
    /* The serial mark from the same roots: the objects the roots marked are
     * grey again, everything else white. Blocks an evacuating drain took
     * for its copies lie beyond the saved frontier: nothing of theirs was
     * marked by the roots. */
    memcpy(bits, mark_g.shadow_roots, mark_g.shadow_words * sizeof(uint64_t));
    memset(bits + mark_g.shadow_words, 0, (n - mark_g.shadow_words) * sizeof(uint64_t));
    lull_heap_each_marked(true, push_marked, tr);
    mark_g.plant = false;
    /* After an evacuating drain the re-mark follows the slots as the
     * parallel mark left them, copying nothing: a slot still at an old
     * copy is reported (evacuate). */
    int evac = mark_g.evac;
    if (evac != EVAC_OFF)
        mark_g.evac = EVAC_CHECK;
    drain(tr, false);
    mark_g.evac = evac;
    for (size_t i = 0; i < n; i++) {
        uint64_t d = bits[i] ^ mark_g.shadow_parallel[i];
        if (!d)
            continue;
        unsigned bit = (unsigned)__builtin_ctzll(d);
        uintptr_t obj = lull_heap_g.start + (((uintptr_t)i * 64 + bit) << LULL_GRANULE_SHIFT);
        bool serial = (bits[i] >> bit) & 1;
        const lull_type *t = lull_header_type(*(uintptr_t *)obj);
        lull_fatal("verify-parallel", "object %p (type %s) is %s by the serial re-mark but %s by the "
                   "parallel mark: the parallel mark %s", (void *)obj, t && t->name ? t->name : "?",
                   serial ? "marked" : "unmarked", serial ? "unmarked" : "marked",
                   serial ? "lost a reachable object" : "marked an unreachable object");
    }
}

/* ------------------------------------------------------------------------ */
/* check-mod-union                                                          */
/* ------------------------------------------------------------------------ */

static void check_mod_union_slot(void **slotp, void *ctx)
{
    uintptr_t holder = (uintptr_t)ctx, v = (uintptr_t)*slotp;
    if (!lull_in_committed(v) || lull_in_nursery(v) || lull_is_marked(v) || lull_young_large_at(v) == v)
        return;     /* the nursery and the young large objects are the final pause's roots */
    size_t card = ((uintptr_t)slotp - lull_heap_g.start) >> LULL_CARD_SHIFT;
    if (lull_heap_g.union_cards[card])
        return;
    const lull_type *t = lull_header_type(*(uintptr_t *)holder);
    /* What the target is tells a missed store or rescan (a typed object)
     * from a dangling reference (a free slot, freed by an earlier cycle). */
    uintptr_t vh = *(uintptr_t *)v;
    const lull_type *vt = lull_object_start_plausible(v, vh) ? lull_header_type(vh) : NULL;
    char what[96];
    if (vt)
        snprintf(what, sizeof what, "an object of type %s", vt->name ? vt->name : "?");
    else if (!vh)
        snprintf(what, sizeof what, "a free slot (a dangling reference)");
    else
        snprintf(what, sizeof what, "not an object start (word 0 %#lx)", (unsigned long)vh);
    lull_fatal("check-mod-union", "object %p (type %s), marked and scanned, holds at offset %zu a reference to "
               "unmarked %p on a card clean in the union table: the concurrent mark would free a reachable "
               "object (a store without lull_store, or a card cleared without its objects rescanned). "
               "The target is %s; the slot's card in the minors' table is %s",
               (void *)holder, t && t->name ? t->name : "?", (size_t)((uintptr_t)slotp - holder), (void *)v, what,
               lull_heap_g.cards[card] ? "dirty" : "clean");
}

static void check_mod_union_object(uintptr_t obj, void *ctx)
{
    (void)ctx;
    size_t g = lull_granule_of(obj);
    if ((mark_g.shadow_roots[g >> 6] >> (g & 63)) & 1)
        return;     /* grey: not scanned yet */
    lull_trace_slots(obj, check_mod_union_slot, (void *)obj);
}

static void set_shadow(uintptr_t obj, void *ctx)
{
    (void)ctx;
    size_t g = lull_granule_of(obj);
    mark_g.shadow_roots[g >> 6] |= (uint64_t)1 << (g & 63);
}

/* At the final pause, before anything is rescanned (world stopped): every
 * marked object that is not grey (held) has been scanned, so a reference it
 * holds to an unmarked object outside the nursery was stored after the
 * scan, and its card must be dirty in one of the two tables. Not checked
 * after an overflow (marked objects may be unscanned then). */
static void check_mod_union(void)
{
    if (lull_trace_overflow_pending())
        return;
    memset(mark_g.shadow_roots, 0, bitmap_words() * sizeof(uint64_t));
    for (lull_grey_section *s = mark_g.held; s; s = s->prev)
        for (size_t i = 0; i < s->top; i++) {
            uintptr_t e = s->item[i];
            set_shadow(e & GREY_RESUME ? resume_object(e & ~GREY_RESUME) : e, NULL);   /* partly scanned */
        }
    lull_heap_each_marked(true, check_mod_union_object, NULL);
}

/* ------------------------------------------------------------------------ */
/* verify-concurrent                                                        */
/* ------------------------------------------------------------------------ */

typedef struct referrer_ctx {
    uintptr_t target, found;
    size_t offset;
    uintptr_t obj;
} referrer_ctx;

static void referrer_slot(void **slot, void *ctx)
{
    referrer_ctx *r = ctx;
    if (!r->found && (uintptr_t)__atomic_load_n(slot, __ATOMIC_RELAXED) == r->target) {
        r->found = r->obj;
        r->offset = (uintptr_t)slot - r->obj;
    }
}

static void referrer_object(uintptr_t obj, void *ctx)
{
    referrer_ctx *r = ctx;
    if (r->found || obj == r->target)
        return;
    r->obj = obj;
    lull_trace_slots(obj, referrer_slot, r);
}

/* After the final drain, world stopped: mark again, serially and from the
 * roots alone, into the bitmap (the concurrent result saved aside); every
 * object this finds must be marked by the concurrent mark too (it may have
 * marked more: objects that died while it ran). Else abort with the path
 * from the first such object back to a root, through objects the re-mark
 * found (each referrer found by a walk of the heap). */
static void verify_concurrent(lull_tracer *tr)
{
    size_t n = bitmap_words();
    uint64_t *bits = lull_heap_g.mark_bits;
    memcpy(mark_g.shadow_parallel, bits, n * sizeof(uint64_t));
    memset(bits, 0, n * sizeof(uint64_t));
    lull_roots_scan_threads(lull_mark_conservative, tr);
    lull_roots_scan(lull_mark_conservative, lull_mark_precise_slot, tr);
    final_roots_begin();    /* the nursery and the young large objects are roots here too */
    final_young_part(tr, false);
    drain(tr, false);
    for (size_t i = 0; i < n; i++) {
        uint64_t d = bits[i] & ~mark_g.shadow_parallel[i];
        if (!d)
            continue;
        uintptr_t obj = lull_heap_g.start + (((uintptr_t)i * 64 + (unsigned)__builtin_ctzll(d)) << LULL_GRANULE_SHIFT);
        char path[1024];
        size_t len = 0;
        path[0] = 0;
        uintptr_t cur = obj;
        for (int depth = 0; depth < 8; depth++) {
            referrer_ctx r = { .target = cur };
            lull_heap_each_marked(true, referrer_object, &r);
            if (!r.found) {
                len += (size_t)snprintf(path + len, sizeof path - len, " <- a root");
                break;
            }
            const lull_type *rt = lull_header_type(*(uintptr_t *)r.found);
            len += (size_t)snprintf(path + len, sizeof path - len, " <- %p (type %s, %s, offset %zu)",
                                    (void *)r.found, rt && rt->name ? rt->name : "?",
                                    (mark_g.shadow_parallel[lull_granule_of(r.found) >> 6] >>
                                     (lull_granule_of(r.found) & 63)) & 1 ? "marked" : "unmarked",
                                    r.offset);
            if (len >= sizeof path)
                break;
            cur = r.found;
        }
        const lull_type *t = lull_header_type(*(uintptr_t *)obj);
        lull_fatal("verify-concurrent", "object %p (type %s) is reachable but the concurrent mark left it "
                   "unmarked: it would be freed. Path: %p%s", (void *)obj, t && t->name ? t->name : "?",
                   (void *)obj, path);
    }
    memcpy(bits, mark_g.shadow_parallel, n * sizeof(uint64_t));
}

/* The background job's work on the calling thread (mark.h). The lead's
 * loop as the job runs it, alone (no sharing), with job_stopping reading
 * the deadline; what it leaves grey goes back to `held`. */
unsigned lull_mark_step(uint64_t deadline)
{
    if (!lull_marking() || atomic_load(&mark_g.bg_done))
        return 0;
    uint64_t precleaned = atomic_load(&mark_g.precleaned), passes = mark_g.passes;
    lull_tracer tr = { .id = 0 };
    uint64_t t0 = lull_now_ns();
    mark_g.step_deadline = deadline > t0 ? deadline : t0 + 1;
    lull_tracer_adopt(&tr, mark_g.held);
    mark_g.held = NULL;
    tr.share = false;
    background_lead(&tr);
    hold_chain(lull_tracer_take(&tr));
    hold_chain(lull_trace_take_shared());
    lull_tracer_release(&tr);
    mark_g.step_deadline = 0;
    unsigned did = LULL_MARK_STEP_MARKED;
    if (mark_g.passes != passes || atomic_load(&mark_g.precleaned) != precleaned || mark_g.pass_running)
        did |= LULL_MARK_STEP_PRECLEANED;
    LULL_TL(LULL_TL_CONCURRENT_MARK, t0, lull_now_ns() - t0, mark_g.cycle, tr.scanned, 0, NULL);
    return did;
}
