/* minor.c — the minor collection (minor.h): pinning, forwarding, promotion
 * and aging of copies, the scan of the minor's cards, the parallel copying
 * job, the weak/finalize pass, and the debug checks of the nursery.
 *
 * Callers: gc/collect.c (world stopped, gc lock held); lull_minor_init and
 * _fini at lull_init and lull_shutdown; lull_minor_set_aging from the
 * policy (gc lock held).
 *
 * Invariants: between minors no nursery header carries FORWARDED or
 * PINNED; during the copying phase the tracers touch only their own
 * minor_tracer, the grey array and the pins through atomic indices, the
 * cement table and the card work list through atomics, and the block
 * space and the aging space under promo_lock. Everything else is the
 * stopping thread's, before and after that phase. */
#include "trace/minor.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/os.h"
#include "base/probes.h"
#include "base/registry.h"
#include "base/timeline.h"
#include "base/util.h"
#include "space/heap.h"
#include "space/meter.h"
#include "space/nursery.h"
#include "trace/cards.h"
#include "trace/cement.h"
#include "trace/finalize.h"
#include "trace/handles.h"
#include "trace/mark.h"
#include "trace/roots.h"
#include "trace/trace.h"
#include "trace/workers.h"

/* A young large object on a grey stack carries this bit (objects are
 * granule-aligned): scan_grey tells it from a copy without reading its
 * block descriptor. */
#define YOUNG_LARGE ((uintptr_t)1)

/* What one tracer of a minor owns: where its survivors go (a promotion
 * cache per size class, refilled under promo_lock when several tracers
 * copy, and a to-space chunk) and what it did. Its grey objects are in
 * its lull_tracer. */
typedef struct minor_tracer {
    lull_tracer *tr;
    lull_alloc_caches promo;
    uint64_t promoted;
    uint64_t aged;              /* bytes it copied into the aging space */
    uintptr_t age_start, age_next, age_end;   /* its to-space chunk: [start, next) holds copies */
    lull_tracer mark_tr;        /* while a concurrent mark runs: what this tracer greys for it */
    lull_card_count cards;      /* the dirty cards it scanned */
} minor_tracer;

/* The minor's state: one instance. */
static struct {
    bool may_age;                 /* this minor's: young large objects it reaches may stay young */
    bool aging_allowed;           /* the policy's (lull_minor_set_aging) */
    bool aging;                   /* this minor ages */
    atomic_bool aging_full;       /* this minor's to-space ran out: the rest is promoted */

    /* Grey objects no tracer's stack took (push_grey): spilled when no
     * grey-stack section could be had, and objects pinned because their
     * copy could not be made. Every nursery object is greyed at most once
     * per minor, so nursery_size / 16 entries (and the young large
     * objects) suffice. */
    uintptr_t *grey;
    size_t grey_n, grey_cap;

    /* Conservative candidates, then the pinned objects (sorted). */
    uintptr_t *pins;
    size_t npins, pins_cap;
    bool pins_overflowed;

    lull_card_work_list work;     /* the blocks whose dirty cards the copying phase scans */

    minor_tracer mt[LULL_MAX_WORKERS + 1];   /* by tracer id */
    atomic_int active;            /* tracers that may still push (trace.c) */
    pthread_mutex_t promo_lock;   /* lull_major_refill and the aging space while tracers copy */
    bool parallel;                /* this minor's copying runs on several tracers */
} minor_g = { .promo_lock = PTHREAD_MUTEX_INITIALIZER };

int lull_minor_init(void)
{
    size_t size = lull_nursery_end - lull_nursery_start;
    minor_g.grey_cap = size / LULL_GRANULE + LULL_LOS_MAX_YOUNG;
    minor_g.pins_cap = (size_t)1 << 20;
    minor_g.grey = lull_os_table(minor_g.grey_cap * sizeof *minor_g.grey);
    minor_g.pins = lull_os_table(minor_g.pins_cap * sizeof *minor_g.pins);
    int cement = lull_cement_init();
    int work = lull_card_work_init(&minor_g.work);
    memset(minor_g.mt, 0, sizeof minor_g.mt);
    if (!minor_g.grey || !minor_g.pins || cement || work) {
        lull_minor_fini();
        return -ENOMEM;
    }
    return 0;
}

void lull_minor_fini(void)
{
    lull_os_free_table(minor_g.grey, minor_g.grey_cap * sizeof *minor_g.grey);
    lull_os_free_table(minor_g.pins, minor_g.pins_cap * sizeof *minor_g.pins);
    minor_g.grey = minor_g.pins = NULL;
    lull_cement_fini();
    lull_card_work_fini(&minor_g.work);
}

void lull_minor_set_aging(bool on)
{
    minor_g.aging_allowed = on;
}

/* ------------------------------------------------------------------------ */
/* Cementing and cards                                                      */
/* ------------------------------------------------------------------------ */

static void set_card(uintptr_t *slot)
{
    lull_card_set_young(&lull_heap_g.cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT]);
}

/* An old slot (major heap or large object) still points to nursery object
 * `obj`, which stays where it is: the slot's card stays dirty unless obj
 * is, or now becomes, cemented. A cemented object's card stays clean, and
 * the next major must find the slot: a full mark re-marks its card
 * (mark.c: visit); a concurrent one may have visited the slot already, so
 * its union card makes it visit the slot again (mark.h). */
static void old_slot_to_young(uintptr_t *slot, uintptr_t obj)
{
    if (lull_cement_note(obj)) {
        if (lull_marking())
            __atomic_store_n(&lull_heap_g.union_cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT], 1,
                             __ATOMIC_RELAXED);
        return;
    }
    set_card(slot);
}

/* ------------------------------------------------------------------------ */
/* Pinning                                                                  */
/* ------------------------------------------------------------------------ */

/* Any tracer: obj goes to the grey array, scanned by one thread after the
 * tracers are done. */
static void push_grey(uintptr_t obj)
{
    size_t i = __atomic_fetch_add(&minor_g.grey_n, 1, __ATOMIC_RELAXED);
    if (i >= minor_g.grey_cap)
        lull_fatal("lull_collect", "minor collection: grey stack full (%zu entries)", minor_g.grey_cap);
    __atomic_store_n(&minor_g.grey[i], obj, __ATOMIC_RELAXED);
}

/* A tracer's spill (trace.h): no grey-stack section could be had. */
static void spill_grey(lull_tracer *tr, uintptr_t obj)
{
    (void)tr;
    push_grey(obj);
}

/* Any tracer: obj is pinned (its copy could not be made). */
static void add_pin(uintptr_t obj)
{
    size_t i = __atomic_fetch_add(&minor_g.npins, 1, __ATOMIC_RELAXED);
    if (i < minor_g.pins_cap)
        minor_g.pins[i] = obj;
    else
        __atomic_store_n(&minor_g.pins_overflowed, true, __ATOMIC_RELAXED);
}

/* The pinning phase (one thread): obj stays where it is, and is grey. */
static void pin(lull_tracer *tr, uintptr_t obj)
{
    uintptr_t *h = (uintptr_t *)obj;
    if (*h & LULL_HDR_PINNED)
        return;
    *h |= LULL_HDR_PINNED;
    LULL_PROBE4(object_pinned, obj, lull_object_size(obj, lull_header_type(*h)),
                LULL_PROBE_TYPE_NAME(lull_header_type(*h)), LULL_GEN_NURSERY);
    if (lull_type_has_refs(lull_header_type(*h)))
        lull_tracer_push(tr, obj);
}

/* Young large object obj (heap.h), if any, is reached: it survives, and is
 * scanned once (scan_young_large) by the tracer that pops it. */
static void reach_large(lull_tracer *tr, uintptr_t obj)
{
    if (obj && lull_los_reach(obj) && lull_type_has_refs(lull_header_type(*(uintptr_t *)obj)))
        lull_tracer_push(tr, obj | YOUNG_LARGE);
}

/* A conservative word v (ctx: the tracer): a candidate for pinning, or a
 * young large object reached. */
static void pin_candidate(uintptr_t v, void *ctx)
{
    if (!lull_in_nursery(v)) {
        reach_large(ctx, lull_young_large_at(v));
        return;
    }
    if (minor_g.npins < minor_g.pins_cap) {
        minor_g.pins[minor_g.npins++] = v;
    } else {
        /* Queue full: resolve this one at once (slower, same result). */
        minor_g.pins_overflowed = true;
        uintptr_t obj = lull_nursery_find(v, true);
        if (obj)
            pin(ctx, obj);
    }
}

static void pin_candidates(uintptr_t lo, uintptr_t hi, void *ctx)
{
    lull_trace_conservative(lo, hi, pin_candidate, ctx);
}

/* A cemented object is a candidate like any conservative word. */
static void pin_cemented(uintptr_t obj, void *ctx)
{
    (void)ctx;
    if (minor_g.npins < minor_g.pins_cap)
        minor_g.pins[minor_g.npins++] = obj;
    else
        minor_g.pins_overflowed = true;   /* fatal later, rather than a cemented object unpinned */
}

LULL_DEFINE_HEAPSORT(sort_addrs, uintptr_t, )

/* Step 1 (one thread): collect the candidates, resolve them to objects and
 * pin those; afterwards pins[0, npins) are the pinned objects in address
 * order. */
static void pin_roots(lull_tracer *tr)
{
    uint64_t t_pin = lull_now_ns();
    lull_roots_scan_threads(pin_candidates, tr);
    lull_roots_scan(pin_candidates, NULL, tr);
    lull_cement_each(pin_cemented, NULL);
    sort_addrs(minor_g.pins, minor_g.npins);
    minor_g.npins = lull_nursery_objects_at(minor_g.pins, minor_g.npins);
    for (size_t i = 0; i < minor_g.npins; i++)
        pin(tr, minor_g.pins[i]);
    if (lull_cfg.check_cards)
        lull_minor_check_cards();
    LULL_TL(LULL_TL_MINOR_PIN, t_pin, lull_now_ns() - t_pin, minor_g.npins, 0, 0, NULL);
}

/* ------------------------------------------------------------------------ */
/* Copying                                                                  */
/* ------------------------------------------------------------------------ */

/* A free slot of size class `cls` for a copy, from this tracer's cache; 0
 * if the major heap has none. */
static uintptr_t promote_alloc(minor_tracer *mt, size_t size, bool has_refs)
{
    unsigned cls = lull_size_class(size);
    lull_alloc_cache *c = &mt->promo.c[has_refs][cls];
    if (!c->head) {
        if (minor_g.parallel)
            pthread_mutex_lock(&minor_g.promo_lock);
        bool ok = lull_major_refill(c, has_refs, cls, false);
        if (minor_g.parallel)
            pthread_mutex_unlock(&minor_g.promo_lock);
        if (!ok)
            return 0;
    }
    uintptr_t *p = c->head;
    c->head = (void *)p[1];
    c->count--;
    return (uintptr_t)p;
}

/* Another tracer forwarded the object first: the slot goes back to the
 * cache it came from (word 0 was never written: still a free slot). */
static void promote_undo(minor_tracer *mt, uintptr_t p, size_t size, bool has_refs)
{
    lull_alloc_cache *c = &mt->promo.c[has_refs][lull_size_class(size)];
    ((uintptr_t *)p)[1] = (uintptr_t)c->head;
    c->head = (void *)p;
    c->count++;
}

/* The used part of tracer mt's to-space chunk is kept (the rebuild logs
 * it). */
static void age_retire(minor_tracer *mt)
{
    if (mt->age_next > mt->age_start)
        lull_nursery_age_keep(mt->age_start, mt->age_next);
    mt->age_start = mt->age_next = mt->age_end = 0;
}

/* A new to-space chunk of at least `size` bytes for tracer mt; false (and
 * aging_full set): the aging space is full. */
static bool age_refill(minor_tracer *mt, size_t size)
{
    age_retire(mt);
    if (minor_g.parallel)
        pthread_mutex_lock(&minor_g.promo_lock);
    bool ok = lull_nursery_age_chunk(size, &mt->age_start, &mt->age_end);
    if (ok)
        mt->age_next = mt->age_start;
    else
        atomic_store_explicit(&minor_g.aging_full, true, memory_order_relaxed);
    if (minor_g.parallel)
        pthread_mutex_unlock(&minor_g.promo_lock);
    return ok;
}

/* Room for a copy of `size` bytes in mt's to-space chunk, or 0. */
static uintptr_t age_alloc(minor_tracer *mt, size_t size)
{
    if (mt->age_end - mt->age_next < size &&
        (atomic_load_explicit(&minor_g.aging_full, memory_order_relaxed) || !age_refill(mt, size)))
        return 0;
    uintptr_t c = mt->age_next;
    mt->age_next += size;
    return c;
}

/* Where a slot that holds a non-object nursery address is, for the
 * message: a precise root, or the block of the object it lies in. */
static void where_slot(const uintptr_t *slot, char *buf, size_t n)
{
    uintptr_t a = (uintptr_t)slot;
    if (lull_in_nursery(a)) {
        snprintf(buf, n, "at %p, in a pinned nursery object", (const void *)slot);
    } else if (lull_in_committed(a)) {
        const lull_block *b = lull_block_of(a);
        snprintf(buf, n, "at %p, in block %u (state %u, size class %u, sweep pending %u, %s)", (const void *)slot,
                 (unsigned)lull_block_index(a), (unsigned)b->state, (unsigned)b->size_class,
                 (unsigned)b->sweep_pending, lull_marking() ? "a concurrent mark runs" : "no mark runs");
    } else {
        snprintf(buf, n, "at %p, a precise root", (const void *)slot);
    }
}

static _Noreturn void bad_reference(uintptr_t v, const uintptr_t *slot)
{
    char where[256];
    where_slot(slot, where, sizeof where);
    lull_fatal("lull_collect", "minor collection: a reference holds %p, inside the nursery but not "
               "the start of an object (references must point to object starts); the slot is %s",
               (void *)v, where);
}

/* The copy of v (header h) could not be made: v stays, pinned, unless
 * another tracer forwarded or pinned it first (false: h is reloaded). Its
 * slots are forwarded in the grey array's pass, once every tracer is
 * done: another tracer that read its header before the pin may still be
 * copying its body, to discard the copy when its compare-and-swap fails. */
static bool pin_uncopied(uintptr_t v, uintptr_t *h, bool refs)
{
    lull_nursery_note_promotion_failed();
    if (!__atomic_compare_exchange_n((uintptr_t *)v, h, *h | LULL_HDR_PINNED, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return false;
    add_pin(v);
    if (refs)
        push_grey(v);
    return true;
}

/* The copy c of v (header h, `size` bytes) is made and installed: counted,
 * allocated black if promoted while a concurrent mark runs (its children
 * in the old generation are greyed when this minor scans it), and grey. */
static uintptr_t copied(minor_tracer *mt, uintptr_t v, uintptr_t c, uintptr_t h, size_t size, bool aged, bool refs)
{
    if (aged) {
        mt->aged += size;
        LULL_PROBE4(object_aged, v, c, size, LULL_PROBE_TYPE_NAME(lull_header_type(h)));
    } else {
        lull_mark_allocated(c);
        mt->promoted += size;
        LULL_PROBE4(object_promoted, v, c, size, LULL_PROBE_TYPE_NAME(lull_header_type(h)));
    }
    if (refs)
        lull_tracer_push(mt->tr, c);
    return c;
}

/* Where the nursery object v (referenced from a precise slot) lives after
 * this minor: its copy, or v itself if it is pinned, aged already, or
 * cannot be copied. Tracers race for an object: each copies it, and the
 * one whose compare-and-swap installs the forwarding header wins; the
 * others give their copy back. One tracer alone forwards with a plain
 * store. A copy's header is stored last (release), after its body. */
static uintptr_t forward(minor_tracer *mt, uintptr_t v, const uintptr_t *slot)
{
    if (minor_g.aging && lull_nursery_to_space(v))
        return v;
    uintptr_t *hp = (uintptr_t *)v;
    uintptr_t h = __atomic_load_n(hp, __ATOMIC_ACQUIRE);
    for (;;) {
        if (h & LULL_HDR_FORWARDED)
            return h & ~LULL_HDR_TAG_MASK;
        if (h & LULL_HDR_PINNED)
            return v;
        if (LULL_UNLIKELY(!h))
            bad_reference(v, slot);
        const lull_type *t = lull_header_type(h);
        size_t size = lull_object_size(v, t);
        bool refs = lull_type_has_refs(t);
        /* Aging: a first-time survivor goes to the to-space (a copy at its
         * chunk's end, undone by moving the end back). */
        uintptr_t c = minor_g.aging && v < lull_nursery_cycle_g.age_lo ? age_alloc(mt, size) : 0;
        bool aged = c != 0;
        if (!aged)
            c = promote_alloc(mt, size, refs);
        if (!c) {
            if (pin_uncopied(v, &h, refs))
                return v;
            continue;
        }
        memcpy((void *)(c + sizeof(uintptr_t)), (void *)(v + sizeof(uintptr_t)), size - sizeof(uintptr_t));
        if (!minor_g.parallel)
            __atomic_store_n(hp, c | LULL_HDR_FORWARDED, __ATOMIC_RELAXED);
        else if (!__atomic_compare_exchange_n(hp, &h, c | LULL_HDR_FORWARDED, false, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE)) {
            if (aged)
                mt->age_next = c;
            else
                promote_undo(mt, c, size, refs);
            continue;
        }
        __atomic_store_n((uintptr_t *)c, h, __ATOMIC_RELEASE);
        return copied(mt, v, c, h, size, aged, refs);
    }
}

/* A slot outside the major heap: a precise root, or a slot of a pinned
 * object or of an aged copy. Slots are loaded with acquire and stored
 * with release while tracers copy (here and in forward_old_slot): a slot
 * may hand another tracer a to-space copy, whose chunk's map entry must
 * then be seen. */
static void forward_slot(void **slotp, void *ctx)
{
    uintptr_t *slot = (uintptr_t *)slotp, v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (lull_in_nursery(v))
        __atomic_store_n(slot, forward(ctx, v, slot), __ATOMIC_RELEASE);
    else
        reach_large(((minor_tracer *)ctx)->tr, lull_young_large_at(v));
}

/* A slot in the major heap or a large object. Two tracers may visit one
 * at once (a copy scanned both from its grey entry and from a dirty card
 * of its block); both store the same value. A concurrent mark needs no
 * record of this slot: the copy it now points to is black, and a young
 * large object is either made old and black by this minor or stays the
 * nursery's, a root of the final pause (mark.h). */
static void forward_old_slot(void **slotp, void *ctx)
{
    minor_tracer *mt = ctx;
    uintptr_t *slot = (uintptr_t *)slotp, v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!lull_in_nursery(v)) {
        uintptr_t large = lull_young_large_at(v);
        if (!large)
            return;
        mt->cards.saw_young = true;
        reach_large(mt->tr, large);
        /* The object may stay young: remember this old slot (heap.h). */
        set_card(slot);
        return;
    }
    mt->cards.saw_young = true;
    uintptr_t n = forward(mt, v, slot);
    __atomic_store_n(slot, n, __ATOMIC_RELEASE);
    if (lull_in_nursery(n))
        old_slot_to_young(slot, n);
}

/* While a concurrent mark runs, a slot of a black object this minor scans
 * whole (a copy, or a young large object it reached, which becomes black
 * when it turns old): forwarded, then what it leads to in the old
 * generation is greyed for the mark (nursery and young large objects are
 * ignored there, mark.h). */
static void forward_black_slot(void **slotp, void *ctx)
{
    minor_tracer *mt = ctx;
    forward_old_slot(slotp, ctx);
    uintptr_t v = __atomic_load_n((uintptr_t *)slotp, __ATOMIC_RELAXED);
    if (v && !lull_in_nursery(v))
        lull_mark_grey_from_minor(&mt->mark_tr, v);
}

/* ------------------------------------------------------------------------ */
/* Cards and the copying job                                                */
/* ------------------------------------------------------------------------ */

/* One dirty card of the minor's (trace/cards.h): its objects' slots are
 * forwarded. */
static void minor_card_slots(uintptr_t obj, void *ctx)
{
    lull_trace_slots(obj, forward_old_slot, ctx);
}

static void minor_card_large(uintptr_t obj, uintptr_t lo, uintptr_t hi, void *ctx)
{
    lull_card_large_slots_once(obj, lo, hi, forward_old_slot, ctx, lull_nursery_cycle_g.epoch);
}

static const lull_card_scanner minor_scanner = {
    .small = minor_card_slots,
    .large = minor_card_large,
};

/* A young large object this minor reached (heap.h): only its dirty cards
 * are scanned (trace/cards.h: lull_cards_scan_object). While a concurrent
 * mark runs, one this minor makes old (lull_los_stays_young) is handed to
 * the markers, grey, to be scanned a slice at a time as any large object
 * the mark reaches. */
static void scan_young_large(minor_tracer *mt, uintptr_t obj)
{
    lull_cards_scan_object(&minor_scanner, mt, &mt->cards, obj);
    if (lull_marking() && !lull_los_stays_young(obj, minor_g.may_age))
        lull_mark_grey_made_old(&mt->mark_tr, obj);
}

static void scan_grey(minor_tracer *mt, uintptr_t obj)
{
    if (obj & YOUNG_LARGE)
        scan_young_large(mt, obj & ~YOUNG_LARGE);
    else
        lull_trace_slots(obj,
                         lull_in_nursery(obj) ? forward_slot : lull_marking() ? forward_black_slot : forward_old_slot,
                         mt);
}

static void drain_local(lull_tracer *tr, void *arg)
{
    minor_tracer *mt = arg;
    uintptr_t obj;
    while (lull_tracer_pop(tr, &obj))
        scan_grey(mt, obj);
}

/* One tracer's part of the copying phase: cards, then the shared drain. */
static void copy_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    minor_tracer *mt = &minor_g.mt[tr->id];
    mt->tr = tr;
    void (*spill)(lull_tracer *, uintptr_t) = tr->spill;   /* a worker's tracer outlives the minor */
    tr->spill = spill_grey;
    if (minor_g.parallel) {
        tr->share = true;
        lull_cards_scan_work(&minor_g.work, &minor_scanner, mt, &mt->cards);
        lull_tracer_drain_shared(tr, &minor_g.active, drain_local, mt);
        tr->share = false;
    } else {
        lull_cards_scan_work(&minor_g.work, &minor_scanner, mt, &mt->cards);
        drain_local(tr, mt);
    }
    tr->spill = spill;
}

/* Drain the stopping thread's grey stack and the grey array, to the end
 * (one thread: the other tracers are done). */
static void drain_rest(minor_tracer *self)
{
    for (;;) {
        drain_local(self->tr, self);
        if (!minor_g.grey_n)
            break;
        scan_grey(self, minor_g.grey[--minor_g.grey_n]);
    }
}

/* Step 2: copy from precise roots (this thread), then cards, pinned
 * objects and the copies (every tracer of the `ntracers`: copy_job), then
 * what no grey-stack section could hold (this thread, to the end). */
static void copy_all(lull_tracer *tr, unsigned ntracers)
{
    minor_tracer *self = &minor_g.mt[0];
    lull_roots_scan(NULL, forward_slot, self);
    lull_cards_list_minor(&minor_g.work, ntracers);
    if (minor_g.parallel) {
        if (tr->cur)
            lull_tracer_share_older(tr);
        atomic_store(&minor_g.active, 1);      /* the workers that join add themselves */
        lull_workers_run(copy_job, NULL, tr, &minor_g.active);
    } else {
        copy_job(tr, NULL);
    }
    drain_rest(self);
}

/* ------------------------------------------------------------------------ */
/* The minor collection                                                     */
/* ------------------------------------------------------------------------ */

/* After the copying (handles.h): where a young object is now, or 0 if it
 * died. A nursery object survived if it was forwarded or pinned; a young
 * large object if the minor reached it (one it did not reach is garbage
 * even if a mark marked it: lull_los_end_minor keeps it, emptied, for
 * that mark's sake). Anything else is not this minor's to judge. */
static uintptr_t minor_fate(uintptr_t v, void *ctx)
{
    (void)ctx;
    if (lull_in_nursery(v)) {
        if (minor_g.aging && lull_nursery_to_space(v))
            return v;       /* already the copy (a slot updated before this pass) */
        uintptr_t h = __atomic_load_n((uintptr_t *)v, __ATOMIC_RELAXED);
        if (h & LULL_HDR_FORWARDED)
            return h & ~LULL_HDR_TAG_MASK;
        return h & LULL_HDR_PINNED ? v : 0;
    }
    if (lull_young_large_at(v) == v && !(__atomic_load_n(&lull_block_of(v)->young, __ATOMIC_RELAXED) & LULL_LARGE_REACHED))
        return 0;
    return v;
}

/* Weak references and finalizers (handles.h, finalize.h): WEAK handles to
 * what died are cleared; dead finalizable objects are kept (copied like
 * any survivor, with all they reach) and queued; WEAK_TRACK handles then
 * follow them, and are cleared only for what stays dead. */
static void weak_pass(minor_tracer *self)
{
    lull_handles_weak_pass(LULL_HANDLE_WEAK, minor_fate, NULL);
    if (lull_finalize_collect(minor_fate, forward_slot, self, true))
        drain_rest(self);
    lull_handles_weak_pass(LULL_HANDLE_WEAK_TRACK, minor_fate, NULL);
}

/* Every slot's value of a young large object that dies unreached while a
 * mark may hold it marked is dropped (los.c). */
static void drop_ref(void **slot, void *ctx)
{
    (void)ctx;
    __atomic_store_n(slot, NULL, __ATOMIC_RELAXED);
}

static void drop_slots(uintptr_t obj)
{
    lull_trace_slots(obj, drop_ref, NULL);
}

/* The minor's state for a new minor with `ntracers` tracers, the stopping
 * thread's being tr. */
static void minor_begin(bool may_age, lull_tracer *tr, unsigned ntracers)
{
    lull_nursery_minor_begin();
    minor_g.may_age = may_age;
    minor_g.aging = may_age && minor_g.aging_allowed;
    atomic_store_explicit(&minor_g.aging_full, false, memory_order_relaxed);
    minor_g.parallel = ntracers > 1;
    for (unsigned i = 0; i < ntracers; i++) {
        minor_tracer *m = &minor_g.mt[i];
        m->promoted = m->aged = 0;
        m->cards = (lull_card_count){ 0 };
        m->age_start = m->age_next = m->age_end = 0;
    }
    minor_g.mt[0].tr = tr;
    minor_g.grey_n = minor_g.npins = 0;
    minor_g.pins_overflowed = false;
    lull_cement_new_cycle();
    /* At most what was handed out since, what the last one kept and what
     * it aged is copied: blocks for it are swept now if the heap cannot
     * grow. */
    lull_major_sweep_for_promotion(lull_nursery_handed() + lull_nursery_kept() + lull_nursery_aged());
}

/* Promotion failures pinned objects after pin_roots: sort and dedupe the
 * pins again. */
static void settle_pins(void)
{
    if (minor_g.npins > minor_g.pins_cap) {
        minor_g.npins = minor_g.pins_cap;
        minor_g.pins_overflowed = true;
    }
    sort_addrs(minor_g.pins, minor_g.npins);
    size_t u = 0;
    for (size_t i = 0; i < minor_g.npins; i++)
        if (!u || minor_g.pins[i] != minor_g.pins[u - 1])
            minor_g.pins[u++] = minor_g.pins[i];
    minor_g.npins = u;
    if (minor_g.pins_overflowed)
        lull_fatal("lull_collect", "minor collection: more than %zu pinned objects", minor_g.pins_cap);
}

/* The tracers' figures summed into s; their promotion caches dropped
 * (returns the bytes unused) and their grey objects for a running mark
 * handed to it. Returns the bytes promoted. */
static uint64_t gather(unsigned ntracers, lull_nursery_minor_stats *s, uint64_t *unused)
{
    uint64_t promoted = 0;
    *unused = 0;
    for (unsigned i = 0; i < ntracers; i++) {
        promoted += minor_g.mt[i].promoted;
        s->cards += minor_g.mt[i].cards.cards;
        s->cards_young += minor_g.mt[i].cards.young;
        *unused += lull_major_drop_caches(&minor_g.mt[i].promo);
        lull_mark_adopt_from_minor(&minor_g.mt[i].mark_tr);
    }
    s->promoted_by_workers = promoted - minor_g.mt[0].promoted;
    return promoted;
}

uint64_t lull_nursery_collect(bool may_age)
{
    unsigned ntracers = lull_workers_count() + 1;
    lull_tracer tr = { .id = 0, .spill = spill_grey };
    lull_nursery_minor_stats s = { 0 };
    minor_tracer *self = &minor_g.mt[0];
    minor_begin(may_age, &tr, ntracers);
    pin_roots(&tr);

    uint64_t t_trace = lull_now_ns();
    copy_all(&tr, ntracers);
    uint64_t t_weak = lull_now_ns();
    LULL_TL(LULL_TL_MINOR_COPY, t_trace, t_weak - t_trace, 0, 0, 0, NULL);
    weak_pass(self);
    lull_tracer_release(&tr);
    for (unsigned i = 0; i < ntracers; i++) {
        age_retire(&minor_g.mt[i]);
        s.aged += minor_g.mt[i].aged;
    }
    uint64_t t_traced = lull_now_ns();
    LULL_TL(LULL_TL_MINOR_WEAK, t_weak, t_traced - t_weak, 0, 0, 0, NULL);
    s.trace_ns = t_traced - t_trace;
    s.large_freed = lull_los_end_minor(may_age, drop_slots);
    /* The threads' large-object reserves hold no object: the young range
     * the minor rebuilt covers them again (los.c). */
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        lull_los_reserve_keep(&t->los);
    if (s.large_freed)
        LULL_PROBE1(young_large_freed, s.large_freed);

    settle_pins();
    uint64_t t_rebuild = lull_now_ns();
    lull_nursery_minor_end(minor_g.pins, minor_g.npins);
    minor_g.aging = false;
    LULL_TL(LULL_TL_MINOR_REBUILD, t_rebuild, lull_now_ns() - t_rebuild, 0, 0, 0, NULL);
    uint64_t unused, promoted = gather(ntracers, &s, &unused);
    lull_nursery_note_minor(&s);
    lull_meter_unused(unused);
    lull_finalize_end_minor();
    if (lull_cfg.verify_nursery)
        lull_minor_verify();
    return promoted;
}

uint64_t lull_nursery_after_major(bool marked)
{
    uint64_t live = lull_nursery_sweep(marked);
    lull_cement_forget();
    return live;
}

/* ------------------------------------------------------------------------ */
/* LULL_GC_DEBUG checks                                                     */
/* ------------------------------------------------------------------------ */

/* The checks' visitors get the object whose slots they check as their
 * context (0: a root). */

static void check_card_slot(void **slotp, void *ctx)
{
    uintptr_t checking = (uintptr_t)ctx;
    uintptr_t *slot = (uintptr_t *)slotp, v = *slot;
    if (!lull_in_nursery(v))
        return;
    if (lull_heap_g.cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT])
        return;
    /* A thread stopped between its store and marking the card holds the
     * value in a register: the object is pinned, the store is fine. */
    uintptr_t obj = lull_nursery_find(v, false);
    if (obj && (*(uintptr_t *)obj & LULL_HDR_PINNED))
        return;
    if (obj && lull_cement_is_cemented(obj))
        return;
    const lull_type *t = lull_header_type(*(uintptr_t *)checking);
    lull_fatal("check-cards", "object %p (type %s): the reference at offset %zu to nursery object %p "
               "was stored without marking its card (every store of a reference into a heap object "
               "must go through lull_store)", (void *)checking, t->name ? t->name : "?",
               (size_t)((uintptr_t)slot - checking), (void *)v);
}

static void check_cards_object(uintptr_t obj, void *ctx)
{
    (void)ctx;
    lull_trace_slots(obj, check_card_slot, (void *)obj);
}

void lull_minor_check_cards(void)
{
    lull_trace_old_objects(true, false, check_cards_object, NULL);
}

static void verify_slot(void **slotp, void *ctx)
{
    uintptr_t checking = (uintptr_t)ctx;
    uintptr_t *slot = (uintptr_t *)slotp, v = *slot;
    if (!lull_in_nursery(v))
        return;
    if (!lull_nursery_find(v, false)) {
        const lull_type *t = checking ? lull_header_type(*(uintptr_t *)checking) : NULL;
        lull_fatal("verify-nursery", "%s %p%s%s: slot %p points to %p in the evacuated nursery, "
                   "not to a surviving (pinned) object", checking ? "object" : "root", (void *)checking,
                   t ? " type " : "", t && t->name ? t->name : "", (void *)slot, (void *)v);
    }
}

static void verify_object(uintptr_t obj, void *ctx)
{
    (void)ctx;
    lull_trace_slots(obj, verify_slot, (void *)obj);
}

static void verify_root(void **slot, void *ctx)
{
    (void)ctx;
    verify_slot(slot, NULL);
}

static void verify_weak(uintptr_t target, void *ctx)
{
    (void)ctx;
    void *p = (void *)target;
    verify_slot(&p, NULL);
}

void lull_minor_verify(void)
{
    lull_nursery_verify_log();
    lull_trace_old_objects(true, false, verify_object, NULL);
    lull_nursery_each_object(verify_object, NULL);
    lull_roots_scan(NULL, verify_root, NULL);
    lull_handles_each_weak(verify_weak, NULL);
}
