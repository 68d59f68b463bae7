/* mark.c — marking with the tracer: grey, blacken, share, terminate
 * (mark.h describes the design). */
#include "mark.h"

#include <string.h>

#include "collect.h"
#include "config.h"
#include "heap.h"
#include "nursery.h"
#include "os.h"
#include "util.h"
#include "workers.h"

/* The state of the current mark, shared by its markers. Written by the
 * stopping thread between drains (world stopped, no worker running), and
 * during a drain only through atomics. */
static struct {
    atomic_int active;          /* markers that may still produce grey objects */
    unsigned long overflows;    /* recoveries in the last drain (stopper only) */
    atomic_uint_fast64_t scanned;        /* objects blackened in the last drain */
    uint64_t scanned_by_stopper;
    uint64_t *shadow_roots, *shadow_parallel;   /* verify-parallel bitmaps */
    bool plant;                 /* plant-mark-fault: this drain loses an object */
    atomic_bool planted;        /* ...and has done so */
    size_t shadow_bytes;
} mark_g;

void lull_mark_init(unsigned long stack_limit_entries)
{
    lull_trace_init(stack_limit_entries);
    mark_g.overflows = 0;
    mark_g.shadow_roots = mark_g.shadow_parallel = NULL;
    mark_g.shadow_bytes = 0;
    if (lull_cfg.verify_parallel) {
        /* Reserved, committed by the kernel as touched: only the bitmap
         * words below the frontier are ever copied. */
        mark_g.shadow_bytes = lull_heap_g.mark_bytes;
        mark_g.shadow_roots = lull_os_reserve_rw(mark_g.shadow_bytes);
        mark_g.shadow_parallel = lull_os_reserve_rw(mark_g.shadow_bytes);
        if (!mark_g.shadow_roots || !mark_g.shadow_parallel)
            lull_fatal("lull_init", "verify-parallel: cannot reserve %zu MiB for shadow mark bitmaps",
                       mark_g.shadow_bytes >> 20);
    }
}

void lull_mark_fini(void)
{
    lull_trace_fini();
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
    return tr->share ? lull_mark_set(obj) : lull_mark_set_single(obj);
}

/* Grey `v` if it is a reference to an unmarked object. References point to
 * object starts (API contract); the heap verifier checks that. */
static inline void mark_ref(lull_tracer *tr, uintptr_t v)
{
    if (!lull_in_committed(v))
        return;
    lull_block *b = lull_block_of(v);
    if (b->state == LULL_BLOCK_SMALL) {
        if (mark_set(tr, v) && b->has_refs)
            lull_tracer_push(tr, v);
    } else if ((b->state == LULL_BLOCK_LARGE_HEAD && (v & (LULL_BLOCK_SIZE - 1)) == 0) ||
               b->state == LULL_BLOCK_NURSERY) {
        /* A large object, or a survivor of the minor that began this major
         * (pinned in the nursery; a typeless word there is free space). */
        const lull_type *t = lull_header_type(*(uintptr_t *)v);
        if (t && mark_set(tr, v) && lull_type_has_refs(t))
            lull_tracer_push(tr, v);
    }
}

/* A reference slot of a heap object, read atomically (acquire: a marker
 * running beside mutators must see the target's initialised contents). An
 * old slot that points into the nursery gets its card marked: the
 * remembered set is rebuilt by every major (cemented objects' cards were
 * cleared). */
static void visit(void **slotp, void *ctx)
{
    uintptr_t *slot = (uintptr_t *)slotp;
    uintptr_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (lull_in_nursery(v) && !lull_in_nursery((uintptr_t)slot)) {
        uint8_t *card = &lull_heap_g.cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT];
        if (!__atomic_load_n(card, __ATOMIC_RELAXED))
            __atomic_store_n(card, 1, __ATOMIC_RELAXED);
    }
    mark_ref(ctx, v);
}

void lull_mark_precise_slot(void **slot, void *ctx)
{
    mark_ref(ctx, (uintptr_t)*slot);
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

static void drain_local(lull_tracer *tr)
{
    uintptr_t obj;
    while (lull_tracer_pop(tr, &obj)) {
        tr->scanned++;
        scan_object(tr, obj);
    }
}

static void drain_local_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    drain_local(tr);
}

static void mark_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    uint64_t before = tr->scanned;
    tr->share = true;
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
    atomic_store(&mark_g.active, (int)markers);
    uint64_t before = tr->scanned;
    lull_workers_run(mark_job, NULL, tr);
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
    /* Planted only where verify-parallel checks (several markers). */
    mark_g.plant = lull_cfg.plant_mark_fault && lull_workers_count();
    atomic_store(&mark_g.planted, false);
    mark_g.overflows = 0;
    mark_g.scanned_by_stopper = 0;
    atomic_store(&mark_g.scanned, 0);
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
    memcpy(mark_g.shadow_roots, lull_heap_g.mark_bits, bitmap_words() * sizeof(uint64_t));
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
     * grey again, everything else white. */
    memcpy(bits, mark_g.shadow_roots, n * sizeof(uint64_t));
    lull_heap_each_marked(true, push_marked, tr);
    mark_g.plant = false;
    drain(tr, false);
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
