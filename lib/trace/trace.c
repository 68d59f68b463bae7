/* trace.c — the walks over slots and objects, the conservative loop, and
 * the tracers' worklist with its two shared pools (trace.h). */
#include "trace/trace.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "space/nursery.h"
#include "base/os.h"
#include "base/util.h"

/* ------------------------------------------------------------------------ */
/* Slots and objects                                                        */
/* ------------------------------------------------------------------------ */

bool lull_trace_slots_in(uintptr_t obj, uintptr_t lo, uintptr_t hi, lull_visit_fn fn, void *ctx)
{
    uintptr_t *w = (uintptr_t *)obj;
    const lull_type *t = lull_header_type(__atomic_load_n(&w[0], __ATOMIC_RELAXED));   /* lull_trace_slots */
    if (t->trace)
        return false;
    for (uint64_t r = t->refs; r; r &= r - 1) {
        uintptr_t *s = &w[__builtin_ctzll(r)];
        if ((uintptr_t)s >= lo && (uintptr_t)s < hi)
            fn((void **)s, ctx);
    }
    if (t->elem_size && t->elem_refs) {
        /* The elements overlapping [lo, hi), by arithmetic: a card of a
         * large array costs its own slots, not the whole array. */
        uintptr_t es = obj + t->size;
        size_t n = w[1], k0 = 0, k1 = n;
        if (lo > es)
            k0 = (lo - es) / t->elem_size;
        if (hi > es) {
            size_t k = (hi - es + t->elem_size - 1) / t->elem_size;
            if (k < k1)
                k1 = k;
        } else {
            k1 = 0;
        }
        char *e = (char *)es + k0 * t->elem_size;
        /* Every slot of an element that overlaps the range is visited. */
        for (size_t k = k0; k < k1; k++, e += t->elem_size)
            for (uint64_t r = t->elem_refs; r; r &= r - 1)
                fn((void **)e + __builtin_ctzll(r), ctx);
    }
    return true;
}

void lull_trace_block_objects(uint32_t bi, bool marked_only, lull_object_fn fn, void *ctx)
{
    const lull_block *b = &lull_heap_g.blocks[bi];
    LULL_ASSERT(b->state == LULL_BLOCK_SMALL);
    if (b->sweep_pending)
        marked_only = true;      /* the unmarked objects are dead, not yet swept */
    uint32_t sz = lull_class_size[b->size_class], n = lull_class_slots[b->size_class];
    uintptr_t base = lull_block_addr(bi);
    for (uint32_t s = 0; s < n; s++) {
        uintptr_t obj = base + (uintptr_t)s * sz;
        if (*(uintptr_t *)obj && (!marked_only || lull_is_marked(obj)))
            fn(obj, ctx);
    }
}

void lull_trace_old_objects(bool refs_only, bool marked_only, lull_object_fn fn, void *ctx)
{
    lull_trace_old_objects_in(0, lull_frontier(), refs_only, marked_only, fn, ctx);
}

void lull_trace_old_objects_in(uint32_t lo, uint32_t hi, bool refs_only, bool marked_only, lull_object_fn fn,
                               void *ctx)
{
    for (uint32_t i = lo; i < hi; i++) {
        const lull_block *b = &lull_heap_g.blocks[i];
        unsigned state = lull_block_state_acquire(b);   /* a reserve may be carved meanwhile (heap.h) */
        if (state == LULL_BLOCK_SMALL) {
            if (b->has_refs || !refs_only)
                lull_trace_block_objects(i, marked_only, fn, ctx);
        } else if (state == LULL_BLOCK_LARGE_HEAD) {
            uintptr_t obj = lull_block_addr(i);
            if ((!marked_only || lull_is_marked(obj)) &&
                (!refs_only || lull_type_has_refs(lull_header_type(*(uintptr_t *)obj))))
                fn(obj, ctx);
        }
    }
}

typedef struct each_marked_ctx {
    lull_object_fn fn;
    void *ctx;
    bool refs_only;
} each_marked_ctx;

static void each_marked_nursery(uintptr_t obj, void *ctx)
{
    const each_marked_ctx *c = ctx;
    if (lull_is_marked(obj) && (!c->refs_only || lull_type_has_refs(lull_header_type(*(uintptr_t *)obj))))
        c->fn(obj, c->ctx);
}

void lull_heap_each_marked(bool refs_only, lull_object_fn fn, void *ctx)
{
    lull_trace_old_objects(refs_only, true, fn, ctx);
    each_marked_ctx c = { fn, ctx, refs_only };
    lull_nursery_each_object(each_marked_nursery, &c);
}

LULL_NO_SANITIZE_SCAN
void lull_trace_conservative(uintptr_t lo, uintptr_t hi, lull_word_fn fn, void *ctx)
{
    lo = (lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    for (const uintptr_t *p = (const uintptr_t *)lo; (uintptr_t)(p + 1) <= hi; p++) {
        uintptr_t v = *p;
        if (lull_in_committed(v))
            fn(v, ctx);
    }
}

/* ------------------------------------------------------------------------ */
/* The worklist                                                             */
/* ------------------------------------------------------------------------ */

#define SECTION_BYTES ((size_t)64 << 10)
#define SECTION_CAP   ((SECTION_BYTES - sizeof(lull_grey_section)) / sizeof(uintptr_t))
/* A tracer splits its section for an idle one only if it keeps this many.
 * Small, because a depth-first trace keeps a shallow grey stack (a tree:
 * about its depth, a graph: a few dozen entries): a larger minimum leaves
 * idle workers nothing to take (tests/unit/unit_grey_split.c). */
#define SPLIT_MIN     2u

/* A pool of sections: a LIFO under a mutex. A section is 64 KiB of work,
 * so a pool is touched once per thousands of objects and the lock is
 * uncontended in practice. (ck_stack's MPMC pop reads the `next` field of
 * an entry another thread may be re-pushing, a race by design that its
 * generation counter makes harmless but that ThreadSanitizer rightly
 * reports as one: the pools are plain locked lists instead.) `head` is
 * written under the lock and read without it only as a hint
 * (lull_trace_shared_nonempty). */
typedef struct {
    pthread_mutex_t lock;
    lull_grey_section *_Atomic head;
} section_pool;

/* The shared worklist state: one instance, touched by every tracer through
 * the pools and atomics only; init/fini run with no tracer. */
static struct {
    section_pool free_pool;         /* empty sections */
    section_pool grey_pool;         /* grey sections to steal */
    atomic_ulong sections_live;     /* sections taken from the OS */
    unsigned long sections_limit;   /* 0: none (LULL_GC_DEBUG mark-stack-limit) */
    atomic_bool overflow;           /* an object was marked but not pushed */
    atomic_int idle;                /* tracers looking for work */
    _Atomic unsigned work_seq;      /* bumped when grey work is shared or a tracer goes idle */
} lull_trace_g = { .free_pool = { .lock = PTHREAD_MUTEX_INITIALIZER },
                   .grey_pool = { .lock = PTHREAD_MUTEX_INITIALIZER } };

size_t lull_trace_section_cap = SECTION_CAP;

static void pool_push(section_pool *pool, lull_grey_section *s)
{
    pthread_mutex_lock(&pool->lock);
    s->pool_next = atomic_load_explicit(&pool->head, memory_order_relaxed);
    atomic_store_explicit(&pool->head, s, memory_order_relaxed);
    pthread_mutex_unlock(&pool->lock);
}

/* Wake the tracers waiting in lull_tracer_drain_shared, if any: grey work
 * was shared, or one more tracer went idle (the drain may be over). */
static void wake_idle(void)
{
    atomic_fetch_add_explicit(&lull_trace_g.work_seq, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&lull_trace_g.idle, memory_order_seq_cst))
        lull_futex_wake(&lull_trace_g.work_seq, INT_MAX);
}

static void share_grey(lull_grey_section *s)
{
    pool_push(&lull_trace_g.grey_pool, s);
    wake_idle();
}

static lull_grey_section *pool_pop(section_pool *pool)
{
    if (!atomic_load_explicit(&pool->head, memory_order_relaxed))
        return NULL;
    pthread_mutex_lock(&pool->lock);
    lull_grey_section *s = atomic_load_explicit(&pool->head, memory_order_relaxed);
    if (s)
        atomic_store_explicit(&pool->head, s->pool_next, memory_order_relaxed);
    pthread_mutex_unlock(&pool->lock);
    return s;
}

void lull_trace_init(unsigned long stack_limit_entries)
{
    /* A debug limit smaller than a section shrinks the section too, so the
     * overflow path can be exercised with a handful of entries. */
    lull_trace_section_cap = SECTION_CAP;
    if (stack_limit_entries && stack_limit_entries < SECTION_CAP)
        lull_trace_section_cap = stack_limit_entries;
    lull_trace_g.sections_limit =
        stack_limit_entries ? (stack_limit_entries + lull_trace_section_cap - 1) / lull_trace_section_cap : 0;
    atomic_store(&lull_trace_g.overflow, false);
    atomic_store(&lull_trace_g.idle, 0);
    /* One section from the start, outside fault injection: a heap whose
     * growth the OS refuses still marks depth-first without falling back to
     * rescans (a long chain would take one rescan per link). */
    lull_grey_section *first = lull_os_reserve_rw(SECTION_BYTES);
    if (first) {
        atomic_fetch_add(&lull_trace_g.sections_live, 1);
        pool_push(&lull_trace_g.free_pool, first);
    }
}

void lull_trace_fini(void)
{
    lull_grey_section *s;
    LULL_ASSERT(!lull_trace_shared_nonempty());
    while ((s = pool_pop(&lull_trace_g.free_pool)) != NULL) {
        lull_os_free(s, SECTION_BYTES);
        atomic_fetch_sub(&lull_trace_g.sections_live, 1);
    }
}

static lull_grey_section *section_get(void)
{
    lull_grey_section *s = pool_pop(&lull_trace_g.free_pool);
    if (s)
        return s;
    unsigned long lim = lull_trace_g.sections_limit;
    if (lim && atomic_fetch_add(&lull_trace_g.sections_live, 1) >= lim) {
        atomic_fetch_sub(&lull_trace_g.sections_live, 1);
        return NULL;
    }
    s = lull_os_alloc(SECTION_BYTES);
    if (!s) {
        if (lim)
            atomic_fetch_sub(&lull_trace_g.sections_live, 1);
        return NULL;
    }
    if (!lim)
        atomic_fetch_add(&lull_trace_g.sections_live, 1);
    return s;
}

static void section_put(lull_grey_section *s)
{
    pool_push(&lull_trace_g.free_pool, s);
}

void lull_tracer_push_slow(lull_tracer *tr, uintptr_t obj)
{
    lull_grey_section *s = tr->cur;
    if (s && tr->share) {
        /* Full: hand it to the shared pool rather than growing a private
         * chain other tracers cannot reach. */
        tr->cur = s->prev;
        s->prev = NULL;
        share_grey(s);
    }
    lull_grey_section *n = section_get();
    if (!n) {
        if (tr->spill) {
            tr->spill(tr, obj);
            return;
        }
        /* obj stays marked; the overflow rescan finds it. */
        atomic_store_explicit(&lull_trace_g.overflow, true, memory_order_relaxed);
        return;
    }
    n->prev = tr->cur;
    n->top = 0;
    tr->cur = n;
    n->item[n->top++] = obj;
}

/* Another tracer is idle: give it the older half of the current section. */
static void maybe_split(lull_tracer *tr)
{
    lull_grey_section *s = tr->cur;
    if (s->top < 2 * SPLIT_MIN || atomic_load_explicit(&lull_trace_g.idle, memory_order_relaxed) <= 0)
        return;
    lull_grey_section *n = section_get();
    if (!n)
        return;
    size_t half = s->top / 2;
    memcpy(n->item, s->item, half * sizeof(uintptr_t));
    memmove(s->item, s->item + half, (s->top - half) * sizeof(uintptr_t));
    n->top = half;
    n->prev = NULL;
    s->top -= half;
    share_grey(n);
}

bool lull_tracer_pop_slow(lull_tracer *tr, uintptr_t *obj)
{
    for (;;) {
        lull_grey_section *s = tr->cur;
        if (s && s->top) {
            if (tr->share)
                maybe_split(tr);
            *obj = s->item[--s->top];
            return true;
        }
        if (s) {
            tr->cur = s->prev;
            section_put(s);
            continue;
        }
        if (!tr->share)
            return false;
        lull_grey_section *g = pool_pop(&lull_trace_g.grey_pool);
        if (!g)
            return false;
        g->prev = NULL;
        tr->cur = g;
        tr->stolen++;
    }
}

void lull_tracer_share_older(lull_tracer *tr)
{
    lull_grey_section *s = tr->cur->prev;
    tr->cur->prev = NULL;
    while (s) {
        lull_grey_section *prev = s->prev;
        s->prev = NULL;
        share_grey(s);
        s = prev;
    }
}

void lull_tracer_release(lull_tracer *tr)
{
    while (tr->cur) {
        lull_grey_section *s = tr->cur;
        tr->cur = s->prev;
        section_put(s);
    }
}

lull_grey_section *lull_tracer_take(lull_tracer *tr)
{
    lull_grey_section *s = tr->cur;
    tr->cur = NULL;
    return s;
}

void lull_tracer_adopt(lull_tracer *tr, lull_grey_section *chain)
{
    if (!chain)
        return;
    lull_grey_section *bottom = chain;
    while (bottom->prev)
        bottom = bottom->prev;
    bottom->prev = tr->cur;
    tr->cur = chain;
}

void lull_trace_release_chain(lull_grey_section *chain)
{
    lull_tracer t = { .cur = chain };
    lull_tracer_release(&t);
}

lull_grey_section *lull_trace_take_shared(void)
{
    pthread_mutex_lock(&lull_trace_g.grey_pool.lock);
    lull_grey_section *s = atomic_load_explicit(&lull_trace_g.grey_pool.head, memory_order_relaxed), *chain = NULL;
    atomic_store_explicit(&lull_trace_g.grey_pool.head, NULL, memory_order_relaxed);
    pthread_mutex_unlock(&lull_trace_g.grey_pool.lock);
    while (s) {
        lull_grey_section *next = s->pool_next;
        s->prev = chain;
        chain = s;
        s = next;
    }
    return chain;
}

bool lull_trace_shared_nonempty(void)
{
    return atomic_load_explicit(&lull_trace_g.grey_pool.head, memory_order_relaxed) != NULL;
}

bool lull_trace_take_overflow(void)
{
    return atomic_exchange(&lull_trace_g.overflow, false);
}

bool lull_trace_overflow_pending(void)
{
    return atomic_load(&lull_trace_g.overflow);
}

void lull_trace_note_idle(int delta)
{
    atomic_fetch_add(&lull_trace_g.idle, delta);
}

/* Termination: `active` counts tracers that may still push. A tracer with
 * nothing to pop leaves `active` and waits; it rejoins (active first, then
 * steal) whenever the shared pool is non-empty. Only an active tracer
 * publishes, so once a waiting tracer sees active == 0 and then an empty
 * pool, nothing can ever be published again: every grey object has been
 * blackened. A tracer may see that while another one that has just
 * rejoined still works; that one ends the same way, and the drain is over
 * when the last tracer returns (lull_workers_run waits for all). */
#define DRAIN_WAIT_NS 200000L
void lull_tracer_drain_shared(lull_tracer *tr, atomic_int *active,
                              void (*drain_local)(lull_tracer *tr, void *arg), void *arg)
{
    for (;;) {
        drain_local(tr, arg);
        lull_trace_note_idle(1);
        atomic_fetch_sub(active, 1);
        wake_idle();
        for (unsigned spins = 0;; spins++) {
            unsigned seen = atomic_load_explicit(&lull_trace_g.work_seq, memory_order_seq_cst);
            if (lull_trace_shared_nonempty()) {
                atomic_fetch_add(active, 1);
                lull_trace_note_idle(-1);
                break;
            }
            if (atomic_load(active) == 0 && !lull_trace_shared_nonempty()) {
                lull_trace_note_idle(-1);
                return;
            }
            if (spins < 64)
                lull_cpu_relax();
            else    /* until work is shared or a tracer goes idle; bounded in case a wake is missed */
                lull_futex_wait(&lull_trace_g.work_seq, seen, DRAIN_WAIT_NS);
        }
    }
}
