/* alloc.c — the allocation entry points.
 *
 * Small objects (up to LULL__TLAB_MAX_OBJECT bytes) are bump-allocated in
 * the nursery from the thread's TLAB by the inline fast path in lull.h.
 * lull__alloc_slow checks the type (and caches it for the fast path),
 * allocates from the TLAB, and refills it from the nursery's fragments
 * under the nursery lock alone (space/nursery.h), zeroing it outside any
 * lock; the gc lock only when the nursery is exhausted (a minor
 * collection, a major one when the major heap's allowance is used up) and
 * every few refills, if free, to ask the policy.
 *
 * Bigger objects and lull_alloc_pinned go to the major heap: pop a slot
 * from the thread's free list for (pointer-free?, size class), zero it,
 * write the header, inside a critical region (base/registry.h) so the world is
 * never stopped between taking the slot and writing the header; no lock.
 * An empty list is refilled in a batch with the gc lock held (collect if
 * the allowance is used up; on failure collect, release empty blocks and
 * try once more), and popped after it is released. A large object takes
 * the gc lock for its run of blocks and zeroes a reused run after
 * releasing it, inside a critical region. lull_stats counts what took a global
 * lock, the gc lock or the nursery lock (alloc_locked). */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "gc/background.h"
#include "gc/collect.h"
#include "gc/control.h"
#include "gc/policy.h"
#include "trace/mark.h"
#include "space/meter.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "gc/threads.h"
#include "base/probes.h"
#include "base/util.h"

__thread lull__tlab_t lull__tlab = { NULL, NULL, LULL__NO_TYPE, LULL__NO_TYPE, UINT32_MAX, LULL__MARK_STORE_BATCH };

/* LULL_GC_DEBUG=collect-every: allocations counted by every thread (an
 * atomic; the only state of this file). */
static atomic_ulong debug_alloc_count;

static lull_thread *attached_self(const char *fn)
{
    lull_thread *t = lull_thread_self;
    if (LULL_UNLIKELY(!t)) {
        if (!lull_is_initialised())
            lull_fatal(fn, "lull is not initialised (call lull_init first)");
        lull_fatal(fn, "the calling thread is not attached (call lull_thread_attach first)");
    }
    return t;
}

/* Report a malformed type (cold path of check_type). */
__attribute__((noinline, cold, noreturn))
static void bad_type(const char *fn, const lull_type *t, bool array)
{
    if (!t)
        lull_fatal(fn, "type is NULL");
    if (array || t->elem_size)
        lull_fatal(fn, "type '%s' is not a valid type (size %zu, refs %#llx, elem_size %zu, "
                   "elem_refs %#llx: word 0 is the header, an array needs size >= 16 and "
                   "elem_size > 0, reference bits must lie inside size and elem_size)",
                   t->name ? t->name : "?", t->size, (unsigned long long)t->refs, t->elem_size,
                   (unsigned long long)t->elem_refs);
    lull_fatal(fn, "type '%s' is malformed (size %zu, refs %#llx: word 0 is the header, "
               "reference bits must lie inside size)", t->name ? t->name : "?", t->size,
               (unsigned long long)t->refs);
}

/* Cheap checks that catch a malformed type before it corrupts the heap. */
static inline void check_type(const char *fn, const lull_type *t, bool array)
{
    if (LULL_UNLIKELY(!t))
        bad_type(fn, t, array);
    size_t words = t->size / sizeof(void *);
    if (LULL_UNLIKELY(t->size < sizeof(lull_header) || (t->refs & 1) ||
                      (words < 64 && (t->refs >> words) != 0)))
        bad_type(fn, t, array);
    if (t->elem_size || array) {
        size_t ewords = t->elem_size / sizeof(void *);
        if (LULL_UNLIKELY(!t->elem_size || t->size < sizeof(lull_array_header) ||
                          (t->refs & 2) ||
                          (t->elem_refs && (t->elem_size % sizeof(void *) || t->size % sizeof(void *))) ||
                          (ewords < 64 && (t->elem_refs >> ewords) != 0)))
            bad_type(fn, t, array);
    }
}

/* Ask the policy at one of allocation's decision points; run what it
 * says (gc lock held). True if a collection ran. */
static bool collect_if(lull_policy_event ev, unsigned long arg)
{
    const char *reason = "";
    int gen = lull_policy_decide(ev, arg, &reason);
    if (gen >= 0)
        lull_collect_locked(gen, reason);
    return gen >= 0;
}

/* A new object of the major heap exists for the collector from here on:
 * header last, with release, so that a marker that reaches it through a
 * reference (an acquire load: lull_store releases) sees the zeroed body.
 * While a concurrent mark runs it is allocated black (mark.h): marked
 * after the header is out. Its slots are all NULL, so it has no child to
 * grey; what the program stores into it marks a card the mark rescans.
 * A young large object is the nursery's instead (heap.h): marked when a
 * minor makes it old. tag: header bits the object carries for life
 * (LULL_HDR_NOMOVE, heap.h). */
static inline void publish_major(uintptr_t *p, const lull_type *type, uintptr_t tag, bool young)
{
    __atomic_store_n(&p[0], (uintptr_t)type | tag, __ATOMIC_RELEASE);
    if (!young)
        lull_mark_allocated((uintptr_t)p);
}

/* Pacing (trace/mark.h): while a concurrent mark runs, a slow path whose
 * program is ahead of the markers waits for the mark's next step, at most
 * PACE_WAIT_NS, outside the gc lock: the markers get the time the program
 * would have spent outrunning them. Ahead: it used its whole allowance, or
 * past PACE_FROM of the runway a larger share of it than the drain got
 * through of the last mark's work (PACE_SLACK allowed), so that the
 * drain ends about when the runway does. Stores wait the same way once
 * the preclean stops converging (lull__mark_stores_slow). */
#define PACE_WAIT_NS 1000000u
#define PACE_FROM    0.5
#define PACE_SLACK   0.1
static bool ahead_of_markers(double *want)
{
    *want = -1;         /* nothing the drain alone gets through: the mark's next step */
    if (!lull_marking() || lull_mark_ready() || lull_control_region_blocking())
        return false;
    double used = lull_meter_runway_used(), done;
    if (used >= 1.0)
        return true;
    if (used > PACE_FROM && (done = lull_mark_progress()) >= 0 && done + PACE_SLACK < used) {
        *want = used - PACE_SLACK;
        return true;
    }
    return false;
}

static void pace_allocation(void)
{
    double want;
    if (LULL_LIKELY(!lull_marking()) || !ahead_of_markers(&want))
        return;
    uint64_t t0 = lull_now_ns(), now = t0;
    do
        lull_mark_wait_progress(PACE_WAIT_NS - (now - t0), want);
    while (ahead_of_markers(&want) && (now = lull_now_ns()) - t0 < PACE_WAIT_NS);
    lull_mark_note_paced(lull_now_ns() - t0);
}

static void *fail_enomem(void)
{
    errno = ENOMEM;
    return NULL;
}

/* Pop a slot of `bytes` from the thread's free list for (has_refs, cls)
 * and make it an object (zeroed, header last), inside a critical region;
 * NULL when the list is empty. No lock: the list is the thread's own. */
static inline uintptr_t *cache_pop(lull_thread *t, lull_alloc_cache *c, const lull_type *type, size_t bytes,
                                   size_t length, uintptr_t tag)
{
    lull_enter_critical(t);
    uintptr_t *p = c->head;
    if (LULL_LIKELY(p)) {
        c->head = (void *)p[1];
        c->count--;
        memset(p, 0, lull_align_up(bytes, sizeof(uintptr_t)));
        if (length)
            p[1] = length;
        publish_major(p, type, tag, false);
        t->last_alloc = (uintptr_t)p;
    }
    lull_exit_critical(t);
    return p;
}

/* A medium class's refill (objects over the TLAB limit) takes blocks until
 * the free list holds REFILL_BYTES or REFILL_BLOCKS blocks were taken, so
 * that the gc lock is taken once per batch of objects, not per one or two
 * (an 8 KiB class has two slots per block). Smaller classes take one
 * block: it holds many slots already. Gc lock held; false if not even one
 * block could be had. */
#define REFILL_BYTES  (64u << 10)
#define REFILL_BLOCKS 8u
static bool refill_batch(lull_alloc_cache *c, bool has_refs, unsigned cls)
{
    if (!c->head && !lull_major_refill(c, has_refs, cls, true))
        return false;
    if (lull_class_size[cls] <= LULL__TLAB_MAX_OBJECT)
        return true;
    for (unsigned n = 1; n < REFILL_BLOCKS && (uint64_t)c->count * lull_class_size[cls] < REFILL_BYTES; n++) {
        lull_alloc_cache more = { NULL, 0 };
        if (!lull_major_refill(&more, has_refs, cls, true))
            break;
        uintptr_t *tail = more.head;      /* a block's list ends in NULL: append ours */
        while (tail[1])
            tail = (uintptr_t *)tail[1];
        tail[1] = (uintptr_t)c->head;
        c->head = more.head;
        c->count += more.count;
    }
    return true;
}

/* Out of memory under the gc lock: collect, give back empty blocks (those
 * a sweep empties can go back for a large object). */
static void reclaim_for_retry(void)
{
    collect_if(LULL_POLICY_OUT_OF_MEMORY, 0);
    lull_major_sweep_all();
    lull_major_release_empty(0);
    lull_space_release_pending();
    lull_memory_kick();
}

/* A small-heap object whose free list is empty: refill it in a batch under
 * the gc lock, then pop outside it (zeroing is no work for the lock). A
 * pause between the two may empty the list again: then once more. */
static void *alloc_small_slow(lull_thread *t, const lull_type *type, size_t bytes, size_t length, uintptr_t tag)
{
    bool has_refs = lull_type_has_refs(type);
    unsigned cls = lull_size_class(bytes);
    lull_alloc_cache *c = &t->caches.c[has_refs][cls];
    for (int round = 0; round < 3; round++) {
        pace_allocation();
        lull_gc_lock();
        lull_thread_count(&t->alloc_locked);
        collect_if(LULL_POLICY_SLOW_ALLOC, 0);
        bool ok = refill_batch(c, has_refs, cls);
        if (!ok) {
            reclaim_for_retry();
            ok = refill_batch(c, has_refs, cls);
        }
        lull_memory_kick();   /* blocks it took cold: the memory thread touches the next ones ahead */
        lull_gc_unlock();
        if (!ok)
            return fail_enomem();
        uintptr_t *p = cache_pop(t, c, type, bytes, length, tag);
        if (p) {
            LULL_PROBE2(alloc_major, LULL_PROBE_TYPE_NAME(type), bytes);
            lull_thread_count_alloc(t, bytes);
            return p;
        }
    }
    return fail_enomem();
}

/* Write a large object's header (its run zeroed first when it was
 * reused), inside the critical region its run was taken in, and leave it. */
static void *publish_large(lull_thread *t, uintptr_t *p, bool dirty, const lull_type *type, size_t bytes,
                           size_t length, uintptr_t tag, bool young)
{
    if (dirty)
        memset(p, 0, lull_align_up(bytes, sizeof(uintptr_t)));
    LULL_PROBE2(alloc_large, LULL_PROBE_TYPE_NAME(type), bytes);
    /* Header last: the object exists for the collector from here on. */
    if (length)
        p[1] = length;
    publish_major(p, type, tag, young);
    t->last_alloc = (uintptr_t)p;
    lull_los_published();
    lull_exit_critical(t);
    lull_thread_count_alloc(t, bytes);
    return p;
}

/* A large object carved from the thread's reserve (heap.h), refilled
 * under the gc lock at most twice (a minor between the refill and the
 * carve takes the reserve back); NULL: allocate it alone. */
static void *alloc_carved(lull_thread *t, const lull_type *type, size_t bytes, size_t length, uintptr_t tag)
{
    for (int round = 0; round < 3; round++) {
        bool dirty = false;
        lull_enter_critical(t);
        uintptr_t *p = lull_los_carve(&t->los, bytes, &dirty);
        if (p)
            return publish_large(t, p, dirty, type, bytes, length, tag, true);
        lull_exit_critical(t);
        if (round == 2)
            break;
        pace_allocation();
        lull_gc_lock();
        lull_thread_count(&t->alloc_locked);
        collect_if(LULL_POLICY_SLOW_ALLOC, 0);
        bool ok = lull_los_refill(&t->los, bytes);
        if (!ok) {
            reclaim_for_retry();
            ok = lull_los_refill(&t->los, bytes);
        }
        lull_memory_kick();
        lull_gc_unlock();
        if (!ok)
            break;
    }
    return NULL;
}

/* A large object: from the thread's reserve, or a run of blocks of its
 * own with the gc lock held only to take the run. A reused run is zeroed
 * after the lock is released, inside a critical region entered before it
 * (heap.h: lull_los_alloc), so that no pause sees the object before its
 * header and no other thread waits for the memset; a clean run reads as
 * zero. */
static void *alloc_large(lull_thread *t, const lull_type *type, size_t bytes, size_t length, uintptr_t tag)
{
    if (lull_los_carves(bytes)) {
        void *p = alloc_carved(t, type, bytes, length, tag);
        if (p)
            return p;
    }
    pace_allocation();
    lull_gc_lock();
    lull_thread_count(&t->alloc_locked);
    collect_if(LULL_POLICY_SLOW_ALLOC, 0);
    bool dirty = false;
    uintptr_t *p = lull_los_alloc(bytes, &dirty);
    if (!p) {
        reclaim_for_retry();
        p = lull_los_alloc(bytes, &dirty);
    }
    lull_memory_kick();   /* blocks it took cold: the memory thread touches the next ones ahead */
    if (!p) {
        lull_gc_unlock();
        return fail_enomem();
    }
    bool young = lull_young_large_at((uintptr_t)p) == (uintptr_t)p;   /* the young range: gc lock */
    lull_enter_critical(t);
    lull_gc_unlock();
    return publish_large(t, p, dirty, type, bytes, length, tag, young);
}

/* LULL_GC_DEBUG=collect-every=N: a collection every N allocations, every
 * fourth of them a major. (The fast path never caches a type then, so every
 * allocation comes here.) */
static void debug_collect_every(void)
{
    unsigned long n = atomic_fetch_add_explicit(&debug_alloc_count, 1, memory_order_relaxed) + 1;
    const char *reason = "";
    int gen = lull_policy_decide(LULL_POLICY_DEBUG_TICK, n, &reason);   /* no lock needed: see policy.h */
    if (gen >= 0) {
        lull_gc_lock();
        lull_collect_locked(gen, reason);
        lull_gc_unlock();
    }
}

/* tag: header bits the object carries for life (LULL_HDR_NOMOVE, heap.h). */
static inline void *alloc_common(lull_thread *t, const lull_type *type, size_t bytes, size_t length, uintptr_t tag)
{
    lull_thread_count(&t->alloc_outside_tlab);
    if (LULL_UNLIKELY(bytes > LULL_MAX_SMALL))
        return alloc_large(t, type, bytes, length, tag);
    lull_alloc_cache *c = &t->caches.c[lull_type_has_refs(type)][lull_size_class(bytes)];
    uintptr_t *p = cache_pop(t, c, type, bytes, length, tag);
    if (LULL_LIKELY(p)) {
        lull_thread_count_alloc(t, bytes);
        return p;
    }
    return alloc_small_slow(t, type, bytes, length, tag);
}

/* A TLAB refill asks the policy (with the gc lock) only every
 * POLICY_EVERY refills of its thread, or at the next one when a done mark
 * waits for its final pause (not for a minor: policy.h) or a detached thread's record waits to be
 * handed back, and then only if the gc lock is free: its holder is
 * collecting, or will ask itself. What the policy answers at a refill
 * depends on the mark and the major heap (whose own slow paths ask every
 * time), not on the nursery, whose exhaustion is the refill's own failure
 * (below); so a refill never waits for the gc lock while the nursery has
 * room. */
#define POLICY_EVERY 16u
static void refill_asks_policy(lull_thread *t)
{
    if (++t->refills_unasked < POLICY_EVERY && !lull_threads_parked_pending() &&
        !(lull_marking() && lull_mark_ready() && !lull_policy_major_waits_for_minor()))
        return;
    if (!lull_gc_trylock())
        return;
    t->refills_unasked = 0;
    lull_threads_finish_parked();
    collect_if(LULL_POLICY_SLOW_ALLOC, 0);
    lull_gc_unlock();
}

/* Bump-allocate from the thread's TLAB, refilling it (and collecting when
 * the nursery is exhausted); a medium object (over LULL__TLAB_MAX_OBJECT,
 * which comes here every time) refills with a larger TLAB (nursery.h). A
 * refill takes the nursery lock (counted in alloc_locked), the gc lock
 * only to ask the policy now and then (above) or when the nursery has no
 * room. NULL: the nursery has no room even after a collection (everything
 * in it pinned); the caller goes to the major heap. */
static void *tlab_alloc(lull_thread *t, const lull_type *type, size_t bytes, size_t length, bool array)
{
    lull__tlab_t *tl = t->tlab;
    size_t sz = lull_align_up(bytes, LULL_GRANULE);
    bool medium = bytes > LULL__TLAB_MAX_OBJECT;   /* never inline: counted whether it refills or not */
    if (medium)
        lull_thread_count(&t->alloc_outside_tlab);
    for (int attempt = 0;; attempt++) {
        char *p = tl->next;
        if (sz <= (size_t)(tl->end - p)) {
            /* The same protocol as the inline fast path (lull.h). */
            if (array)
                ((size_t *)p)[1] = length;
            *(const lull_type **)p = type;
            __asm__ __volatile__("" : : : "memory");
            tl->next = p + sz;
            return p;
        }
        if (attempt == 2 || lull_control_nursery_closed())
            return NULL;        /* closed: collections are held (control.h) */
        pace_allocation();
        if (!medium && !attempt)
            lull_thread_count(&t->alloc_outside_tlab);   /* its first refill: one allocation, however many */
        lull_thread_count(&t->alloc_locked);
        refill_asks_policy(t);
        if (lull_nursery_refill(t, sz))
            continue;
        lull_gc_lock();
        lull_threads_finish_parked();
        collect_if(LULL_POLICY_SLOW_ALLOC, 0);
        if (!lull_nursery_refill(t, sz)) {
            /* The heap is full: a minor now would take a whole pause to
             * pin what it cannot copy and free nothing. The major heap's
             * allocator collects a major when it is out of room. Or the
             * last minor left the nursery no room (all pinned): the same
             * for a while (nursery.h, degraded mode). */
            if (lull_nursery_promotion_failed() || lull_nursery_degraded_take(sz)) {
                lull_gc_unlock();
                return NULL;
            }
            if (!collect_if(LULL_POLICY_NURSERY_FULL, 0)) {
                /* Held (a no-GC region, manual mode): the major heap
                 * takes small objects until the next pause. */
                lull_control_close_nursery();
                lull_gc_unlock();
                return NULL;
            }
            if (!lull_nursery_refill(t, sz)) {
                /* Other threads refill without the gc lock: if they took
                 * TLABs since the minor, the nursery had room, and it is
                 * not pinned full; try again (a minor, or once more). */
                bool taken = lull_nursery_handed() > 0;
                if (!taken && !lull_nursery_promotion_failed())
                    lull_nursery_degrade();
                lull_gc_unlock();
                if (taken)
                    continue;
                return NULL;
            }
        }
        lull_gc_unlock();
    }
}

void *lull__alloc_slow(const lull_type *type, size_t length, int array)
{
    const char *fn = array ? "lull_alloc_array" : "lull_alloc";
    lull_thread *t = attached_self(fn);
    check_type(fn, type, array);
    size_t bytes = type->size;
    if (array) {
        if (length > (SIZE_MAX - type->size) / type->elem_size)
            return fail_enomem();
        bytes += length * type->elem_size;
        if (bytes > lull_heap_g.reserve || (lull_cfg.max_heap_size && bytes > lull_cfg.max_heap_size))
            return fail_enomem();
    }
    if (LULL_UNLIKELY(lull_cfg.collect_every))
        debug_collect_every();
    else if (LULL_UNLIKELY(lull_cfg.alloc_slow))
        ;   /* alloc-slow: never cached, so that every allocation comes here */
    else if (type->size <= LULL__TLAB_MAX_OBJECT && (!array || type->elem_size <= LULL__TLAB_MAX_OBJECT)) {
        /* Checked: later allocations of this type take the fast path. */
        if (array)
            t->tlab->array_ok = type;
        else
            t->tlab->type_ok = type;
    }
    if (bytes <= LULL_MAX_SMALL) {
        void *p = tlab_alloc(t, type, bytes, length, array);
        if (p) {
            LULL_PROBE2(alloc_nursery, LULL_PROBE_TYPE_NAME(type), bytes);
            return p;
        }
    }
    return alloc_common(t, type, bytes, array ? length : 0, 0);
}

/* The real functions behind lull.h's macros of the same name. */
void *(lull_alloc)(const lull_type *type)
{
    return lull__alloc_inline(type, 0, 0);
}

void *(lull_alloc_array)(const lull_type *type, size_t length)
{
    return lull__alloc_inline(type, length, 1);
}

void *lull_alloc_pinned(const lull_type *type)
{
    /* Straight into the major heap, whose objects only an evacuating major
     * moves; NOMOVE in the header makes it leave this one in place. */
    lull_thread *t = attached_self("lull_alloc_pinned");
    check_type("lull_alloc_pinned", type, false);
    LULL_PROBE2(alloc_pinned, LULL_PROBE_TYPE_NAME(type), type->size);
    return alloc_common(t, type, type->size, 0, LULL_HDR_NOMOVE);
}

static uintptr_t object_header(const char *fn, const void *obj)
{
    if (!lull_is_initialised())
        lull_fatal(fn, "lull is not initialised (call lull_init first)");
    uintptr_t a = (uintptr_t)obj;
    if (!lull_in_committed(a) || a % sizeof(uintptr_t))
        lull_fatal(fn, "%p is not a heap object", obj);
    uintptr_t hdr = __atomic_load_n((const uintptr_t *)obj, __ATOMIC_RELAXED);
    if (!hdr)
        lull_fatal(fn, "%p is not an allocated heap object", obj);
    if (!lull_object_start_plausible(a, hdr))
        lull_fatal(fn, "%p is not the start of a heap object (an interior pointer?)", obj);
    return hdr;
}

const lull_type *lull_type_of(const void *obj)
{
    return lull_header_type(object_header("lull_type_of", obj));
}

size_t lull_array_length(const void *array)
{
    const lull_type *t = lull_header_type(object_header("lull_array_length", array));
    if (!t->elem_size)
        lull_fatal("lull_array_length", "%p is not an array (type '%s')", array, t->name ? t->name : "?");
    return ((const size_t *)array)[1];
}

/* The barrier's slow path: this thread used up a grant of the cards the
 * next minor may scan within the pause target (policy.h). The policy runs
 * a minor, or hands it another grant. A program that stores many young
 * references into old objects without allocating (a loop that links the
 * nursery's objects from all over the old heap) would otherwise leave the
 * next minor tens of thousands of cards. */
void lull__cards_slow(void)
{
    lull_thread *t = lull_thread_self;
    if (!t) {
        lull__tlab.cards_left = UINT32_MAX;   /* not attached: never asks */
        return;
    }
    if (t->in_critical || t->in_gc_lock) {
        lull__tlab.cards_left = 1;            /* inside lull: the next new card asks again */
        return;
    }
    uint32_t used = t->cards_granted;
    lull__tlab.cards_left = UINT32_MAX;       /* until a minor or the policy sets it */
    lull_gc_lock();
    if (lull__tlab.cards_left == UINT32_MAX &&   /* no other thread's minor since */
        !collect_if(LULL_POLICY_CARDS, used))
        lull__tlab.cards_left = t->cards_granted = lull_policy_card_grant();
    lull_gc_unlock();
}

/* The barrier's slow path while a concurrent mark runs (lull.h): the
 * minors' half of the store first (lull__store_young), then, with the store
 * fully recorded, its own work. It may run a done mark's final pause
 * (which moves nothing), never a minor. A
 * program that only stores would otherwise never reach that pause. The
 * policy decides, as at an allocation (it may wait for an idle call). The
 * gc lock is taken only when the mark is done; otherwise this costs a few
 * loads. Not while this thread is inside lull (a signal handler that
 * interrupted it): its next batch asks again. */
void lull__mark_stores_slow(void *obj, void *slot, void *value)
{
    (void)obj;
    lull__store_young(slot, value, (uintptr_t)slot - lull__barrier.heap_start);
    lull__tlab.mark_stores_left = LULL__MARK_STORE_BATCH;
    lull_thread *t = lull_thread_self;
    if (!t || t->in_critical || t->in_gc_lock || !lull_marking())
        return;
    if (lull_mark_wants_quiet() && !lull_control_region_blocking()) {
        uint64_t t0 = lull_now_ns();
        lull_mark_wait_progress(PACE_WAIT_NS, -1);
        lull_mark_note_paced(lull_now_ns() - t0);
    }
    if (!lull_mark_ready())
        return;
    lull_gc_lock();
    const char *reason = "";
    if (lull_marking() && lull_policy_decide(LULL_POLICY_SLOW_ALLOC, 0, &reason) == LULL_COLLECT_MAJOR_FINISH)
        lull_collect_locked(LULL_COLLECT_MAJOR_FINISH, reason);
    lull_gc_unlock();
}

void lull__store_outside_heap(void *obj, void *slot, void *value)
{
    (void)value;
    if (!lull_is_initialised())
        lull_fatal("lull_store", "lull is not initialised (call lull_init first)");
    lull_fatal("lull_store", "slot %p (object %p) is not inside the lull heap", slot, obj);
}
