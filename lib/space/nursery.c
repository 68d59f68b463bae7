/* nursery.c — TLABs, fragments, pinning, the copying minor collection and
 * cementing (nursery.h describes the design). */
#include "space/nursery.h"
#include "space/meter.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/gclock.h"
#include "trace/finalize.h"
#include "trace/handles.h"
#include "trace/mark.h"
#include "gc/policy.h"
#include "base/os.h"
#include "trace/roots.h"
#include "base/registry.h"
#include "trace/trace.h"
#include "base/probes.h"
#include "base/timeline.h"
#include "base/util.h"
#include "trace/workers.h"

#define LULL_BLOCK_NURSERY_CARDS (LULL_BLOCK_SIZE >> LULL_CARD_SHIFT)
/* Free space smaller than this between pinned objects is not worth a
 * fragment; it is zeroed (so walks skip it) and waits for the next minor. */
#define MIN_FRAGMENT ((uintptr_t)512)
/* Every fragment ends a granule before what follows it (a pinned object, a
 * TLAB's tail, the end of the nursery), and every TLAB a granule before
 * the end of the space handed out for it, in gaps never allocated. A
 * thread keeps its TLAB's end, and the refill the fragment's, in registers
 * and on its stack for a while; were such an end the first byte of an
 * object (the next TLAB's first, the pinned object a fragment stops at,
 * the first object of the block after the nursery), a conservative scan of
 * that thread would keep that object alive: tests/heap_shot.c saw dropped
 * objects kept by each of the last two. rebuild() keeps a TLAB's gap with
 * its tail. */
#define TLAB_GAP     ((uintptr_t)LULL_GRANULE)
#define POISON_BYTE  0xdb
#define NO_LOG       UINT32_MAX
#define CEMENT_SLOTS 4096u
/* Aging (promotion-age=2 or auto): to-space is handed to tracers in chunks of at
 * most AGE_CHUNK_MAX bytes, aligned to AGE_CHUNK, whose map entry records
 * the minor that took it (to_space). */
#define AGE_CHUNK_SHIFT 9
#define AGE_CHUNK       ((uintptr_t)1 << AGE_CHUNK_SHIFT)
#define AGE_CHUNK_MAX   ((uintptr_t)LULL_TLAB_SIZE)

uintptr_t lull_nursery_start, lull_nursery_end;

typedef struct range {
    uintptr_t start, end;
} range;

typedef struct excl {
    uintptr_t start, end;
    bool      tail;      /* a thread's TLAB tail and gap (else a pinned object or a gap) */
    bool      gap;       /* the gap after a used-up TLAB: neither fragment nor logged */
} excl;

/* Cementing: open addressing on the object address. `count` is per minor.
 * Tracers that copy in parallel insert and count with atomics. */
typedef struct cement_slot {
    _Atomic uintptr_t obj;
    atomic_uint       count;
    atomic_uint       cemented;
} cement_slot;

/* A block of the copying phase's work list: a SMALL block with references
 * (its size class) or one block of a large object with references (the
 * object's address). */
typedef struct card_work {
    uint32_t  block;
    uint32_t  size_class;     /* SMALL; UINT32_MAX for a large object */
    uintptr_t large;
} card_work;

/* What one tracer of a minor owns: where its survivors go (a promotion
 * cache per size class, refilled under promo_lock when several tracers
 * copy) and what it promoted. Its grey objects are in its lull_tracer. */
typedef struct minor_tracer {
    lull_tracer *tr;
    lull_alloc_caches promo;
    uint64_t promoted;
    uint64_t aged;              /* bytes it copied into the aging space */
    uintptr_t age_start, age_next, age_end;   /* its to-space chunk: [start, next) holds copies */
    lull_tracer mark_tr;        /* while a concurrent mark runs: what this tracer greys for it */
    uint64_t cards;             /* dirty cards it scanned */
    uint64_t cards_young;       /* of those, the ones a slot of which held a young reference */
    bool saw_young;             /* forward_old_slot met a young reference (since scan_card cleared it) */
} minor_tracer;

/* The nursery's state: one instance (nursery_g), written by the thread
 * that holds the gc lock (refills, and the minor with the world stopped).
 * While a minor's tracers copy (copy_job), they touch only: their own
 * mt[id]; gray/gray_n, pins/npins and pins_overflowed through atomic
 * indices; the cement table and ncemented, next_card and active through
 * atomics; the block space through promo_lock. Everything else is the
 * stopping thread's, before and after that phase. */
static struct {
    uint32_t first_block, nblocks;

    /* The part of the nursery TLABs are cut from: [lull_nursery_start,
     * limit), sized by the pause target (policy.c) without remapping
     * anything. Pinned objects beyond it stay where they are. */
    uintptr_t limit;
    /* What the size means: the room TLABs are cut from below the limit,
     * which the objects the last minor left pinned there do not take
     * (lull_nursery_resize). limit - start - pinned below it. */
    size_t room;
    /* Measured for the policy: bytes handed out in TLABs since the last
     * minor, and the last minor's copying phase (roots forwarded, cards
     * scanned, copies drained) in ns. */
    uint64_t handed, trace_ns;
    uint64_t large_freed;         /* young large objects the last minor freed, bytes */
    bool may_age;                 /* this minor's: young large objects it reaches may stay young */
    uint64_t cards;               /* dirty cards the last minor scanned */
    uint64_t cards_young;         /* of those, the ones that held a young reference (the log) */
    uint64_t kept;                /* bytes the last minor left in place, pinned */
    /* Degraded (lull_nursery_degrade): bytes allocations may still take
     * from the major heap, without a minor, because the last minor left
     * the nursery no room; 0: not degraded. */
    uint64_t degraded_left;

    /* Aging (promotion-age=2 or auto, nursery.h). The nursery's range is twice
     * `ceiling`; TLABs are cut below `limit` (at most `ceiling`), and the
     * free space the last rebuild found at or above it, `age_lo`, is the
     * aging space: afrags, ascending. A minor that may age copies an
     * object below age_lo into a chunk of it (its to-space, listed in
     * `aged` as the chunks' used parts, which rebuild logs) and promotes
     * one at or above age_lo, which survived a minor already (or was
     * allocated in a TLAB beyond a shrunk limit: promoted a minor early,
     * no harm). chunk_epoch, per AGE_CHUNK of the range: the minor that
     * took that chunk (to_space). With promotion-age=1, afrags is the
     * spare space beyond the limit instead, which a growing nursery takes
     * at once (lull_nursery_resize). */
    bool aging;                   /* this minor ages */
    atomic_bool aging_full;       /* this minor's to-space ran out: the rest is promoted */
    uintptr_t ceiling, age_lo;
    range *afrags;
    size_t nafrags, afrag_cur, afrags_cap;
    range *aged;
    atomic_size_t naged;
    size_t aged_cap;
    _Atomic uint32_t *chunk_epoch;
    uint64_t aged_bytes;          /* what the last minor copied into the aging space */
    /* A copy could not be made since the last major: the heap is full, and
     * until a major frees some, another minor would only pin again. */
    atomic_bool promotion_failed;

    /* Logged ranges (walkable: objects or zero). Appended by refills,
     * sorted by start when a minor begins (log_sorted says whether it is).
     * Bounded by nursery_size / 16: ranges are disjoint and at least one
     * granule long, or empty TLAB tails (one per thread). */
    range *log_;
    size_t log_n, log_cap;
    bool log_sorted;

    /* Fragments, ascending; frag_cur is the one TLABs are cut from. */
    range *frags;
    size_t nfrags, frag_cur, frags_cap;

    /* Grey objects no tracer's stack took (push_gray): spilled when no
     * grey-stack section could be had, and objects pinned because their
     * copy could not be made. Every nursery object is greyed at most once,
     * so nursery_size / 16 entries suffice. */
    uintptr_t *gray;
    size_t gray_n, gray_cap;

    /* rebuild()'s exclusions (pinned objects and TLAB tails). */
    excl *excls;
    size_t excls_cap;
    size_t nexcls;                /* the last rebuild's, sorted: lull_nursery_resize reads them */

    /* Conservative candidates, then the pinned objects (sorted). */
    uintptr_t *pins;
    size_t npins, pins_cap;
    bool pins_overflowed;

    cement_slot *cement, *cement_spare;   /* the table, and the one lull_cement_new_cycle rebuilds into */
    atomic_uint ncemented;

    /* The copying phase's work list: the blocks with marked cards whose
     * objects may hold references, listed before any copy is made (a
     * tracer never reads the state of a block another one may be
     * formatting for its copies). Claimed in chunks through `next_card`. */
    card_work *cwork;
    size_t ncwork, cwork_cap;
    atomic_size_t next_card;

    minor_tracer mt[LULL_MAX_WORKERS + 1];   /* by tracer id */
    uint64_t promoted_by_workers; /* the last minor's, for LULL_GC_DEBUG=log */
    atomic_int active;            /* tracers that may still push (trace.c) */
    pthread_mutex_t promo_lock;   /* lull_major_refill while tracers copy */
    bool parallel;                /* this minor's copying runs on several tracers */
    uint32_t epoch;               /* this minor's number (never 0): block minor_seen */
} nursery_g = { .promo_lock = PTHREAD_MUTEX_INITIALIZER };

/* Side tables like the heap's own: reserved at init, committed by the
 * kernel as they are touched, not subject to fail-mmap. */
static void *reserve_array(size_t bytes)
{
    return lull_os_reserve_rw(lull_align_up(bytes, LULL_PAGE_SIZE));
}

static void free_array(void *p, size_t bytes)
{
    if (p)
        lull_os_unreserve(p, lull_align_up(bytes, LULL_PAGE_SIZE));
}

int lull_nursery_init(size_t size, size_t ceiling)
{
    uint32_t n = (uint32_t)(size >> LULL_BLOCK_SHIFT);
    uint32_t idx = lull_space_alloc(n);
    if (idx == LULL_NO_BLOCK)
        return -ENOMEM;
    nursery_g.first_block = idx;
    nursery_g.nblocks = n;
    lull_nursery_start = lull_block_addr(idx);
    lull_nursery_end = lull_nursery_start + size;
    nursery_g.ceiling = lull_nursery_start + ceiling;
    __atomic_store_n(&nursery_g.limit, nursery_g.ceiling, __ATOMIC_RELAXED);
    __atomic_store_n(&nursery_g.room, nursery_g.ceiling - lull_nursery_start, __ATOMIC_RELAXED);
    nursery_g.handed = 0;
    nursery_g.degraded_left = 0;
    for (uint32_t i = 0; i < n; i++)
        lull_heap_g.blocks[idx + i].state = LULL_BLOCK_NURSERY;
    nursery_g.log_cap = size / LULL_GRANULE + 1024;
    nursery_g.frags_cap = size / LULL_GRANULE + 1024;
    nursery_g.gray_cap = size / LULL_GRANULE + LULL_LOS_MAX_YOUNG;
    nursery_g.pins_cap = (size_t)1 << 20;
    nursery_g.excls_cap = size / LULL_GRANULE;
    nursery_g.log_ = reserve_array(nursery_g.log_cap * sizeof *nursery_g.log_);
    nursery_g.frags = reserve_array(nursery_g.frags_cap * sizeof *nursery_g.frags);
    nursery_g.gray = reserve_array(nursery_g.gray_cap * sizeof *nursery_g.gray);
    nursery_g.pins = reserve_array(nursery_g.pins_cap * sizeof *nursery_g.pins);
    nursery_g.cement = reserve_array(CEMENT_SLOTS * sizeof *nursery_g.cement);
    nursery_g.cement_spare = reserve_array(CEMENT_SLOTS * sizeof *nursery_g.cement_spare);
    nursery_g.excls = reserve_array(nursery_g.excls_cap * sizeof *nursery_g.excls);
    nursery_g.cwork_cap = lull_heap_g.nblocks;
    nursery_g.cwork = reserve_array(nursery_g.cwork_cap * sizeof *nursery_g.cwork);
    nursery_g.afrags_cap = size / LULL_GRANULE + 1024;
    nursery_g.aged_cap = (size >> AGE_CHUNK_SHIFT) + LULL_MAX_WORKERS + 1;
    nursery_g.afrags = reserve_array(nursery_g.afrags_cap * sizeof *nursery_g.afrags);
    nursery_g.aged = reserve_array(nursery_g.aged_cap * sizeof *nursery_g.aged);
    nursery_g.chunk_epoch = reserve_array((size >> AGE_CHUNK_SHIFT) * sizeof *nursery_g.chunk_epoch);
    if (!nursery_g.afrags || !nursery_g.aged || !nursery_g.chunk_epoch ||
        !nursery_g.log_ || !nursery_g.frags || !nursery_g.gray || !nursery_g.pins || !nursery_g.cement ||
        !nursery_g.cement_spare ||
        !nursery_g.excls || !nursery_g.cwork) {
        lull_nursery_fini();
        return -ENOMEM;
    }
    nursery_g.log_n = 0;
    nursery_g.log_sorted = true;
    nursery_g.nexcls = 0;         /* no minor yet: nothing pinned (lull_nursery_resize) */
    /* The whole nursery is one fragment, and what lies beyond the ceiling
     * another of the aging space; block-space runs read as zero. */
    nursery_g.frags[0] = (range){ lull_nursery_start, nursery_g.ceiling - TLAB_GAP };
    nursery_g.nfrags = 1;
    nursery_g.frag_cur = 0;
    nursery_g.age_lo = nursery_g.ceiling;
    nursery_g.nafrags = nursery_g.afrag_cur = 0;
    if (nursery_g.ceiling < lull_nursery_end)
        nursery_g.afrags[nursery_g.nafrags++] = (range){ nursery_g.ceiling, lull_nursery_end - TLAB_GAP };
    nursery_g.aged_bytes = 0;
    atomic_store(&nursery_g.ncemented, 0);
    memset(nursery_g.mt, 0, sizeof nursery_g.mt);
    return 0;
}

void lull_nursery_fini(void)
{
    free_array(nursery_g.log_, nursery_g.log_cap * sizeof *nursery_g.log_);
    free_array(nursery_g.frags, nursery_g.frags_cap * sizeof *nursery_g.frags);
    free_array(nursery_g.gray, nursery_g.gray_cap * sizeof *nursery_g.gray);
    free_array(nursery_g.pins, nursery_g.pins_cap * sizeof *nursery_g.pins);
    free_array(nursery_g.cement, CEMENT_SLOTS * sizeof *nursery_g.cement);
    free_array(nursery_g.cement_spare, CEMENT_SLOTS * sizeof *nursery_g.cement_spare);
    free_array(nursery_g.excls, nursery_g.excls_cap * sizeof *nursery_g.excls);
    free_array(nursery_g.cwork, nursery_g.cwork_cap * sizeof *nursery_g.cwork);
    free_array(nursery_g.afrags, nursery_g.afrags_cap * sizeof *nursery_g.afrags);
    free_array(nursery_g.aged, nursery_g.aged_cap * sizeof *nursery_g.aged);
    free_array((void *)nursery_g.chunk_epoch,
               ((size_t)(lull_nursery_end - lull_nursery_start) >> AGE_CHUNK_SHIFT) * sizeof *nursery_g.chunk_epoch);
    nursery_g.afrags = nursery_g.aged = NULL;
    nursery_g.chunk_epoch = NULL;
    nursery_g.excls = NULL;
    nursery_g.cwork = NULL;
    nursery_g.log_ = nursery_g.frags = NULL;
    nursery_g.gray = nursery_g.pins = NULL;
    nursery_g.cement = nursery_g.cement_spare = NULL;
    lull_nursery_start = lull_nursery_end = 0;
}

/* ------------------------------------------------------------------------ */
/* TLABs                                                                    */
/* ------------------------------------------------------------------------ */

void lull_nursery_retire_tlab(lull_thread *t)
{
    lull__tlab_t *tl = t->tlab;
    if (t->tlab_log != NO_LOG) {
        nursery_g.log_[t->tlab_log].end = (uintptr_t)tl->next;
        /* The unused tail was counted as allocated when handed out. */
        uint64_t unused = (uint64_t)(tl->end - tl->next) + TLAB_GAP;
        atomic_store_explicit(&t->allocated, atomic_load_explicit(&t->allocated, memory_order_relaxed) - unused,
                              memory_order_relaxed);
        t->tlab_log = NO_LOG;
    }
    tl->next = tl->end = NULL;
}

bool lull_nursery_refill(lull_thread *t, size_t need)
{
    lull_nursery_retire_tlab(t);
    t->last_alloc = 0;   /* the thread has moved on to a TLAB's worth of others (threads.h) */
    while (nursery_g.frag_cur < nursery_g.nfrags) {
        range *f = &nursery_g.frags[nursery_g.frag_cur];
        size_t avail = f->end - f->start;
        if (avail < need + TLAB_GAP) {
            nursery_g.frag_cur++;       /* the rest stays unused until the next minor */
            continue;
        }
        size_t take = avail < LULL_TLAB_SIZE ? avail : LULL_TLAB_SIZE;
        if (take < need + TLAB_GAP)
            take = need + TLAB_GAP;
        if (avail - take < MIN_FRAGMENT)
            take = avail;     /* no sliver left behind */
        uintptr_t s = f->start;
        f->start += take;
        if (f->start == f->end)
            nursery_g.frag_cur++;
        memset((void *)s, 0, take);
        nursery_g.handed += take;
        if (nursery_g.log_n == nursery_g.log_cap)
            lull_fatal("lull_alloc", "nursery log full (%zu ranges)", nursery_g.log_cap);
        nursery_g.log_[nursery_g.log_n] = (range){ s, s };
        if (nursery_g.log_n && s < nursery_g.log_[nursery_g.log_n - 1].start)
            nursery_g.log_sorted = false;
        t->tlab_log = (uint32_t)nursery_g.log_n++;
        t->tlab->next = (char *)s;
        t->tlab->end = (char *)(s + take - TLAB_GAP);
        lull_thread_count_alloc(t, take);
        LULL_PROBE2(alloc_tlab, take, need);
        return true;
    }
    return false;
}

void lull_nursery_degrade(void)
{
    nursery_g.degraded_left = lull_nursery_ceiling();
    if (lull_cfg.log)
        fprintf(stderr, "lull: the nursery has no room after a minor (%.1f KiB of it pinned): the next %zu KiB "
                "of small objects go to the major heap, without a minor\n", (double)nursery_g.kept / 1024.0,
                lull_nursery_ceiling() >> 10);
}

bool lull_nursery_degraded_take(size_t bytes)
{
    if (!nursery_g.degraded_left)
        return false;
    nursery_g.degraded_left = bytes < nursery_g.degraded_left ? nursery_g.degraded_left - bytes : 0;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Walking and finding objects                                              */
/* ------------------------------------------------------------------------ */

/* In-place heapsorts (qsort may call malloc, and a stopped thread may hold
 * malloc's lock): KEY(x) is the sort key of element x. */
#define DEFINE_HEAPSORT(name, T, KEY)                                            \
    static void name(T *a, size_t n)                                             \
    {                                                                            \
        for (size_t i = n / 2; i-- > 0;)                                         \
            name##_down(a, i, n);                                                \
        for (size_t end = n; end-- > 1;) {                                       \
            T tmp = a[0];                                                        \
            a[0] = a[end];                                                       \
            a[end] = tmp;                                                        \
            name##_down(a, 0, end);                                              \
        }                                                                        \
    }
#define DEFINE_SIFT(name, T, KEY)                                                \
    static void name##_down(T *a, size_t i, size_t n)                            \
    {                                                                            \
        for (;;) {                                                               \
            size_t c = 2 * i + 1;                                                \
            if (c >= n)                                                          \
                return;                                                          \
            if (c + 1 < n && KEY(a[c + 1]) > KEY(a[c]))                          \
                c++;                                                             \
            if (KEY(a[c]) <= KEY(a[i]))                                          \
                return;                                                          \
            T tmp = a[i];                                                        \
            a[i] = a[c];                                                         \
            a[c] = tmp;                                                          \
            i = c;                                                               \
        }                                                                        \
    }
#define ADDR_KEY(x)  (x)
#define START_KEY(x) ((x).start)
DEFINE_SIFT(sort_addrs, uintptr_t, ADDR_KEY)
DEFINE_HEAPSORT(sort_addrs, uintptr_t, ADDR_KEY)
DEFINE_SIFT(sort_ranges, range, START_KEY)
DEFINE_HEAPSORT(sort_ranges, range, START_KEY)

static void sort_log(void)
{
    if (!nursery_g.log_sorted)
        sort_ranges(nursery_g.log_, nursery_g.log_n);
    nursery_g.log_sorted = true;
}

/* The size of the object at p whose header is h (forwarded: the copy has the
 * type and the length). */
static size_t walk_size(uintptr_t p, uintptr_t h)
{
    if (h & LULL_HDR_FORWARDED) {
        uintptr_t c = h & ~LULL_HDR_TAG_MASK;
        return lull_object_size(c, lull_header_type(*(uintptr_t *)c));
    }
    return lull_object_size(p, lull_header_type(h));
}

/* The last logged range starting at or below a, or NULL. Log sorted. */
static const range *range_of(uintptr_t a)
{
    size_t lo = 0, hi = nursery_g.log_n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (nursery_g.log_[mid].start <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return NULL;
    const range *r = &nursery_g.log_[lo - 1];
    return a < r->end ? r : NULL;
}

static uintptr_t find_in(const range *r, uintptr_t a, bool interior)
{
    for (uintptr_t p = r->start; p <= a && p < r->end;) {
        uintptr_t h = *(uintptr_t *)p;
        if (!h) {
            p += LULL_GRANULE;
            continue;
        }
        uintptr_t next = p + walk_size(p, h);
        if (a < next)
            return interior || a == p ? p : 0;
        p = next;
    }
    return 0;
}

/* Pure: the log was sorted when the world stopped (lull_nursery_collect
 * sorts it before the first lookup, and only refills, outside pauses,
 * unsort it), so any number of threads may look up at once. */
uintptr_t lull_nursery_find(uintptr_t a, bool interior)
{
    LULL_ASSERT(nursery_g.log_sorted);
    const range *r = range_of(a);
    return r ? find_in(r, a, interior) : 0;
}

/* The objects of logged range i. */
static void each_object_in(size_t i, void (*fn)(uintptr_t obj, void *ctx), void *ctx)
{
    for (uintptr_t p = nursery_g.log_[i].start; p < nursery_g.log_[i].end;) {
        uintptr_t h = *(uintptr_t *)p;
        if (!h) {
            p += LULL_GRANULE;
            continue;
        }
        size_t sz = walk_size(p, h);
        fn(p, ctx);
        p += sz;
    }
}

/* The log's order does not matter to a walk (only to lookups), but every
 * active TLAB's range must end where its thread's allocation does: a
 * minor sets that first, a concurrent major's pauses with
 * lull_nursery_sync_tlabs. */
void lull_nursery_each_object(void (*fn)(uintptr_t obj, void *ctx), void *ctx)
{
    for (size_t i = 0; i < nursery_g.log_n; i++)
        each_object_in(i, fn, ctx);
}

void lull_nursery_sync_tlabs(void)
{
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        if (t->tlab_log != NO_LOG)
            nursery_g.log_[t->tlab_log].end = (uintptr_t)t->tlab->next;
}

/* A concurrent major's final pause (mark.c): the nursery is a root set.
 * Each caller claims NURSERY_CLAIM logged ranges at a time through *next
 * and visits every reference slot of every object in them. The ranges
 * are TLABs and runs of pinned objects, at most a TLAB long each. */
#define NURSERY_CLAIM 8u
size_t lull_nursery_scan_part(atomic_size_t *next, lull_visit_fn visit, void *ctx, uint64_t *bytes)
{
    size_t objects = 0, n = nursery_g.log_n;
    for (;;) {
        size_t i0 = atomic_fetch_add_explicit(next, NURSERY_CLAIM, memory_order_relaxed);
        if (i0 >= n)
            return objects;
        size_t i1 = i0 + NURSERY_CLAIM < n ? i0 + NURSERY_CLAIM : n;
        for (size_t i = i0; i < i1; i++)
            for (uintptr_t p = nursery_g.log_[i].start; p < nursery_g.log_[i].end;) {
                uintptr_t h = *(uintptr_t *)p;
                if (!h) {
                    p += LULL_GRANULE;
                    continue;
                }
                lull_trace_slots(p, visit, ctx);
                objects++;
                size_t sz = walk_size(p, h);
                *bytes += sz;
                p += sz;
            }
    }
}

/* The slots of a large object `obj` that lie in [lo, hi) (one dirty
 * card). A type with a trace function can only be visited whole: once per
 * minor, which its block descriptor records (minor_seen; a compare-and-swap,
 * so that of two tracers scanning two of its cards one visits it). Not its
 * mark bit: a concurrent mark owns those while minors run. */
static void each_slot_in(uintptr_t obj, uintptr_t lo, uintptr_t hi, lull_visit_fn fn, void *ctx)
{
    if (lull_trace_slots_in(obj, lo, hi, fn, ctx))
        return;
    uint32_t *seen = &lull_block_of(obj)->minor_seen;
    uint32_t s = __atomic_load_n(seen, __ATOMIC_RELAXED);
    if (s != nursery_g.epoch &&
        __atomic_compare_exchange_n(seen, &s, nursery_g.epoch, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        lull_trace_slots(obj, fn, ctx);
}

/* ------------------------------------------------------------------------ */
/* Cementing                                                                */
/* ------------------------------------------------------------------------ */

unsigned lull_cement_home(uintptr_t obj)
{
    return (unsigned)((obj >> LULL_GRANULE_SHIFT) * 0x9e3779b97f4a7c15ull >> 52) & (CEMENT_SLOTS - 1);
}

/* obj's entry in `table`: linear probing from its home, at most
 * CEMENT_PROBES entries. Several tracers may insert at once: a free entry
 * is claimed with a compare-and-swap of its object, and an entry never
 * changes object until the next lull_cement_new_cycle. */
#define CEMENT_PROBES 32u
static cement_slot *cement_lookup_in(cement_slot *table, uintptr_t obj, bool insert)
{
    size_t i = lull_cement_home(obj);
    for (unsigned probe = 0; probe < CEMENT_PROBES; probe++, i = (i + 1) & (CEMENT_SLOTS - 1)) {
        cement_slot *c = &table[i];
        uintptr_t o = atomic_load_explicit(&c->obj, memory_order_acquire);
        if (o == obj)
            return c;
        if (!o) {
            if (!insert)
                return NULL;
            if (atomic_compare_exchange_strong_explicit(&c->obj, &o, obj, memory_order_acq_rel,
                                                        memory_order_acquire) || o == obj)
                return c;
        }
    }
    return NULL;      /* table crowded: no cementing for this object */
}

static cement_slot *cement_lookup(uintptr_t obj, bool insert)
{
    return cement_lookup_in(nursery_g.cement, obj, insert);
}

bool lull_cement_is_cemented(uintptr_t obj)
{
    if (!atomic_load_explicit(&nursery_g.ncemented, memory_order_relaxed))
        return false;
    cement_slot *c = cement_lookup(obj, false);
    return c && atomic_load_explicit(&c->cemented, memory_order_relaxed);
}

/* Counts of the last minor go; cemented objects stay (until a major):
 * every one of them must still be found, for the cards of the slots that
 * point to it were left clean (old_slot_to_young), and only its pinning
 * keeps those slots right. The table is rebuilt from the cemented entries
 * into the spare one, so that entries of objects not cemented (pinned for
 * a minor or two, most of them long dead) do not fill it; reinsertion
 * keeps probe chains valid. But an entry can fail to find a place within
 * CEMENT_PROBES of its home there even though it had one here: linear
 * probing places entries by insertion order, and the rebuild inserts them
 * in table order, so that the entries that wrapped past the table's end
 * go first and push those near its end further (unit_cement). Until
 * 2026-11-26 such an entry was dropped: its object was no longer pinned,
 * and the next minor moved it (or reused its memory) under slots whose
 * cards were clean, a lost object. A mark stretched over hundreds of
 * minors cements thousands of objects (the consumer torture on one CPU:
 * 3,000-4,000 of the 4,096 entries, a lost object in 12-15% of runs).
 * Now, when any entry finds no place, the table stays as it is and only
 * its counts are reset: the objects of the entries not cemented stay in
 * them (an entry is never emptied while probe chains may run through it),
 * so the table fills until the next major forgets it, and an object that
 * finds no entry then is simply not cemented (its cards stay marked). */
void lull_cement_new_cycle(void)
{
    if (!atomic_load(&nursery_g.ncemented)) {
        memset(nursery_g.cement, 0, CEMENT_SLOTS * sizeof *nursery_g.cement);
        return;
    }
    cement_slot *fresh = nursery_g.cement_spare;
    memset(fresh, 0, CEMENT_SLOTS * sizeof *fresh);
    unsigned nk = 0;
    bool placed = true;
    for (unsigned i = 0; i < CEMENT_SLOTS && placed; i++) {
        cement_slot *c = &nursery_g.cement[i];
        if (!c->obj || !c->cemented)
            continue;
        cement_slot *f = cement_lookup_in(fresh, c->obj, true);
        if (f) {
            f->cemented = 1;
            nk++;
        } else {
            placed = false;
        }
    }
    if (placed) {
        nursery_g.cement_spare = nursery_g.cement;
        nursery_g.cement = fresh;
        atomic_store(&nursery_g.ncemented, nk);
        return;
    }
    for (unsigned i = 0; i < CEMENT_SLOTS; i++)
        atomic_store_explicit(&nursery_g.cement[i].count, 0, memory_order_relaxed);
}

bool lull_cement_note(uintptr_t obj)
{
    cement_slot *c = cement_lookup(obj, true);
    if (c && !atomic_load_explicit(&c->cemented, memory_order_relaxed) &&
        atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed) + 1 > LULL_CEMENT_THRESHOLD &&
        !atomic_exchange_explicit(&c->cemented, 1, memory_order_relaxed))
        atomic_fetch_add_explicit(&nursery_g.ncemented, 1, memory_order_relaxed);
    return c && atomic_load_explicit(&c->cemented, memory_order_relaxed);
}

static void set_card(uintptr_t *slot)
{
    lull_card_set_young(&lull_heap_g.cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT]);
}

/* An old slot (major heap or large object) still points to nursery object
 * `obj`, which stays where it is: the slot's card stays marked unless obj
 * is, or now becomes, cemented. */
static void old_slot_to_young(uintptr_t *slot, uintptr_t obj)
{
    if (lull_cement_note(obj)) {
        /* The card stays clean, and the cement table is forgotten at the
         * end of the next major, by which time the card must be dirty
         * again. A full mark re-marks it (mark.c: visit); a concurrent one
         * may have visited this slot already, so the union table makes it
         * visit it again (mark.h). */
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

/* The gray array: where a tracer puts a grey object when no grey-stack
 * section can be had (fail-mmap, mark-stack-limit), and an object pinned
 * because it could not be promoted; one thread scans them after the
 * tracers. Every nursery object is greyed at most once per minor, so it
 * never fills. */
static void push_gray(uintptr_t obj)
{
    size_t i = __atomic_fetch_add(&nursery_g.gray_n, 1, __ATOMIC_RELAXED);
    if (i >= nursery_g.gray_cap)
        lull_fatal("lull_collect", "minor collection: gray stack full (%zu entries)", nursery_g.gray_cap);
    __atomic_store_n(&nursery_g.gray[i], obj, __ATOMIC_RELAXED);
}

static void spill_gray(lull_tracer *tr, uintptr_t obj)
{
    (void)tr;
    push_gray(obj);
}

static void add_pin(uintptr_t obj)
{
    size_t i = __atomic_fetch_add(&nursery_g.npins, 1, __ATOMIC_RELAXED);
    if (i < nursery_g.pins_cap)
        nursery_g.pins[i] = obj;
    else
        __atomic_store_n(&nursery_g.pins_overflowed, true, __ATOMIC_RELAXED);
}

/* Pin (world stopped, one thread: the pinning phase). */
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

/* A young large object this minor reaches (heap.h): it survives, and is
 * scanned once (scan_young_large), by the tracer that pops it. It goes on
 * the grey stack with YOUNG_LARGE set: scan_gray tells it from a copy
 * without reading its block descriptor. */
#define YOUNG_LARGE ((uintptr_t)1)
static void reach_large(lull_tracer *tr, uintptr_t obj)
{
    if (obj && lull_los_reach(obj) && lull_type_has_refs(lull_header_type(*(uintptr_t *)obj)))
        lull_tracer_push(tr, obj | YOUNG_LARGE);
}

static void pin_candidate(uintptr_t v, void *ctx)
{
    if (!lull_in_nursery(v)) {
        reach_large(ctx, lull_young_large_at(v));
        return;
    }
    if (nursery_g.npins < nursery_g.pins_cap) {
        nursery_g.pins[nursery_g.npins++] = v;
    } else {
        /* Queue full: resolve this one at once (slower, same result). */
        nursery_g.pins_overflowed = true;
        uintptr_t obj = lull_nursery_find(v, true);
        if (obj)
            pin(ctx, obj);
    }
}

static void pin_candidates(uintptr_t lo, uintptr_t hi, void *ctx)
{
    lull_trace_conservative(lo, hi, pin_candidate, ctx);
}

/* Sort the candidates, resolve them to objects, pin those; afterwards
 * pins[0, npins) are the pinned objects in address order. */
static void resolve_pins(lull_tracer *tr)
{
    sort_addrs(nursery_g.pins, nursery_g.npins);
    size_t out = 0;
    uintptr_t last = 0, last_end = 0;
    const range *r = NULL;
    for (size_t i = 0; i < nursery_g.npins; i++) {
        uintptr_t a = nursery_g.pins[i];
        if (last && a >= last && a < last_end)
            continue;                    /* same object as the previous one */
        if (!r || a < r->start || a >= r->end)
            r = range_of(a);
        if (!r)
            continue;
        uintptr_t obj = find_in(r, a, true);
        if (!obj)
            continue;
        pin(tr, obj);
        last = obj;
        last_end = obj + walk_size(obj, *(uintptr_t *)obj);
        nursery_g.pins[out++] = obj;
    }
    nursery_g.npins = out;
}

/* ------------------------------------------------------------------------ */
/* Copying                                                                  */
/* ------------------------------------------------------------------------ */

/* A free slot of size class `cls` for a copy, from this tracer's cache. */
static uintptr_t promote_alloc(minor_tracer *mt, size_t size, bool has_refs)
{
    unsigned cls = lull_size_class(size);
    lull_alloc_cache *c = &mt->promo.c[has_refs][cls];
    if (!c->head) {
        if (nursery_g.parallel)
            pthread_mutex_lock(&nursery_g.promo_lock);
        bool ok = lull_major_refill(c, has_refs, cls, false);
        if (nursery_g.parallel)
            pthread_mutex_unlock(&nursery_g.promo_lock);
        if (!ok)
            return 0;
    }
    uintptr_t *p = c->head;
    c->head = (void *)p[1];
    c->count--;
    return (uintptr_t)p;
}

/* Aging (promotion-age=2 or auto). Whether v lies in a chunk of this minor's
 * to-space: a copy made by this minor (or one a tracer is making), which
 * must not be copied again when a second slot leads to it. Read before
 * the object's header, which a copy gets last. */
static inline bool to_space(uintptr_t v)
{
    return v >= nursery_g.age_lo &&
           atomic_load_explicit(&nursery_g.chunk_epoch[(v - lull_nursery_start) >> AGE_CHUNK_SHIFT],
                                memory_order_relaxed) == nursery_g.epoch;
}

/* The used part of tracer mt's chunk joins the to-space list (rebuild
 * logs it). */
static void age_retire(minor_tracer *mt)
{
    if (mt->age_next > mt->age_start) {
        size_t i = atomic_fetch_add_explicit(&nursery_g.naged, 1, memory_order_relaxed);
        if (i >= nursery_g.aged_cap)
            lull_fatal("lull_collect", "minor collection: aging chunk list full (%zu)", nursery_g.aged_cap);
        nursery_g.aged[i] = (range){ mt->age_start, mt->age_next };
    }
    mt->age_start = mt->age_next = mt->age_end = 0;
}

/* A new to-space chunk of at least `size` bytes for tracer mt, cut from
 * the aging space's fragments at AGE_CHUNK boundaries (so that a chunk's
 * map entries cover nothing else). false: the aging space is full. */
static bool age_refill(minor_tracer *mt, size_t size)
{
    age_retire(mt);
    if (nursery_g.parallel)
        pthread_mutex_lock(&nursery_g.promo_lock);
    bool ok = false;
    while (nursery_g.afrag_cur < nursery_g.nafrags) {
        range *f = &nursery_g.afrags[nursery_g.afrag_cur];
        uintptr_t s = lull_align_up(f->start, AGE_CHUNK), e = f->end & ~(AGE_CHUNK - 1);
        if (e <= s || e - s < size) {
            nursery_g.afrag_cur++;
            continue;
        }
        uintptr_t ce = s + AGE_CHUNK_MAX < e ? s + AGE_CHUNK_MAX : e;
        f->start = ce;
        if (f->start >= f->end)
            nursery_g.afrag_cur++;
        for (uintptr_t a = s; a < ce; a += AGE_CHUNK)
            atomic_store_explicit(&nursery_g.chunk_epoch[(a - lull_nursery_start) >> AGE_CHUNK_SHIFT],
                                  nursery_g.epoch, memory_order_relaxed);
        mt->age_start = mt->age_next = s;
        mt->age_end = ce;
        ok = true;
        break;
    }
    if (!ok)
        atomic_store_explicit(&nursery_g.aging_full, true, memory_order_relaxed);
    if (nursery_g.parallel)
        pthread_mutex_unlock(&nursery_g.promo_lock);
    return ok;
}

/* Room for a copy of `size` bytes in mt's to-space chunk, or 0. */
static uintptr_t age_alloc(minor_tracer *mt, size_t size)
{
    if (mt->age_end - mt->age_next < size &&
        (atomic_load_explicit(&nursery_g.aging_full, memory_order_relaxed) || !age_refill(mt, size)))
        return 0;
    uintptr_t c = mt->age_next;
    mt->age_next += size;
    return c;
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

/* Where the nursery object v (referenced from a precise slot) lives after
 * this minor: its copy, or v itself if it is pinned or cannot be copied.
 *
 * Tracers race for an object: each copies it, and the one whose
 * compare-and-swap installs the forwarding header wins; the others give
 * their copy back. A minor with one tracer (mark-workers=1, or no worker
 * thread) has no race: a plain store forwards (the lock'd instruction was
 * 7% of the game loop's copying with one tracer: per-minor fastest of 3-4
 * alternating runs at a fixed nursery, summed, 1,429-1,452 ms against
 * 1,536-1,543). A copy's header is stored last (release), after its
 * body: a tracer scanning the copy's block for dirty cards skips a slot
 * whose word 0 is still zero, so it never reads a half-made copy. */
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

static uintptr_t forward(minor_tracer *mt, uintptr_t v, const uintptr_t *slot)
{
    if (nursery_g.aging && to_space(v))
        return v;
    uintptr_t *hp = (uintptr_t *)v;
    uintptr_t h = __atomic_load_n(hp, __ATOMIC_ACQUIRE);
    for (;;) {
        if (h & LULL_HDR_FORWARDED)
            return h & ~LULL_HDR_TAG_MASK;
        if (h & LULL_HDR_PINNED)
            return v;
        if (LULL_UNLIKELY(!h)) {
            char where[256];
            where_slot(slot, where, sizeof where);
            lull_fatal("lull_collect", "minor collection: a reference holds %p, inside the nursery but not "
                       "the start of an object (references must point to object starts); the slot is %s",
                       (void *)v, where);
        }
        const lull_type *t = lull_header_type(h);
        size_t size = lull_object_size(v, t);
        bool refs = lull_type_has_refs(t);
        /* Aging: a first-time survivor goes to the to-space (a copy at its
         * chunk's end, undone by moving the end back). */
        uintptr_t c = nursery_g.aging && v < nursery_g.age_lo ? age_alloc(mt, size) : 0;
        bool aged = c != 0;
        if (!aged)
            c = promote_alloc(mt, size, refs);
        if (!c) {
            atomic_store_explicit(&nursery_g.promotion_failed, true, memory_order_relaxed);
            /* The major heap cannot grow: the object stays, pinned. Its
             * slots are forwarded in the gray array's pass, once every
             * tracer is done: another tracer that read its header before
             * the pin may still be copying its body (to discard the copy
             * when its compare-and-swap fails). */
            if (!__atomic_compare_exchange_n(hp, &h, h | LULL_HDR_PINNED, false, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE))
                continue;
            add_pin(v);
            if (refs)
                push_gray(v);
            return v;
        }
        memcpy((void *)(c + sizeof(uintptr_t)), (void *)(v + sizeof(uintptr_t)), size - sizeof(uintptr_t));
        if (!nursery_g.parallel)
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
        if (aged) {
            mt->aged += size;
            LULL_PROBE4(object_aged, v, c, size, LULL_PROBE_TYPE_NAME(lull_header_type(h)));
            if (refs)
                lull_tracer_push(mt->tr, c);
            return c;
        }
        /* Allocate black while a concurrent mark runs (mark.h): its
         * children in the old generation are greyed when this minor
         * scans it (forward_black_slot). */
        lull_mark_allocated(c);
        mt->promoted += size;
        LULL_PROBE4(object_promoted, v, c, size, LULL_PROBE_TYPE_NAME(lull_header_type(h)));
        if (refs)
            lull_tracer_push(mt->tr, c);
        return c;
    }
}

/* A slot outside the major heap: a precise root, or a slot of a pinned
 * object or of an aged copy. Slots are loaded with acquire and stored
 * with release while tracers copy (here and in forward_old_slot): a slot
 * may hand another tracer a to-space copy, whose chunk's map entry
 * (to_space) must then be seen. */
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
    uintptr_t *slot = (uintptr_t *)slotp, v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!lull_in_nursery(v)) {
        uintptr_t large = lull_young_large_at(v);
        if (!large)
            return;
        ((minor_tracer *)ctx)->saw_young = true;
        reach_large(((minor_tracer *)ctx)->tr, large);
        /* The object may stay young: remember this old slot (heap.h). */
        set_card(slot);
        return;
    }
    ((minor_tracer *)ctx)->saw_young = true;
    uintptr_t n = forward(ctx, v, slot);
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

#define CARDS_PER_BLOCK (LULL_BLOCK_SIZE >> LULL_CARD_SHIFT)
#define CARD_CHUNK      16u     /* work-list blocks a tracer claims at once */

/* No early exit: the compiler makes this a few vector ORs (128 cards). */
static bool block_cards_clean(const uint8_t *c)
{
    const uint64_t *w = (const uint64_t *)c;
    uint64_t any = 0;
    for (size_t i = 0; i < CARDS_PER_BLOCK / 8; i++)
        any |= w[i];
    return any == 0;
}

/* A young large object this minor reached (heap.h): only its marked cards
 * are scanned. It was zeroed when allocated, and every reference into the
 * young generation stored in it since marked a card (lull_store) that no
 * minor cleared (list_card_work leaves a young one's cards alone), or one
 * this scan left marked for a slot still pointing there. (bench/graph's
 * first minor at 2 ms read its fresh 32 MB node array whole for 16 KiB of
 * survivors: 9-17 ms; a minor during a mark that reached it, 6.4 ms.)
 * The same while a concurrent mark runs, and what it leads to in the old
 * generation is left to the mark. If it stays young, the final pause
 * visits it as a root, as it visits the nursery (mark.c:
 * final_young_part). If this minor makes it old (lull_los_stays_young), it
 * is marked at the end of the minor (allocate black, los.c) and goes to
 * the markers here, grey, to be scanned a slice at a time while the world
 * runs, as any large object the mark reaches; a store into it after that
 * marks its union card, rescanned as it is marked. Its union cards from
 * before are no help: the preclean clears the union cards of unmarked
 * objects without scanning them (mark.c: rescan_card), and without this
 * scan stress_graph lost objects (young_large_cards, part 3, plants the
 * case). (It used to be scanned whole here, its old children greyed: 6.4
 * ms for graph's 32 MB array.) One tracer scans the object, so its cards
 * are this tracer's alone. A slot to a cemented object keeps its card
 * clean, as an old slot does (old_slot_to_young): the next major marks it
 * again, a synchronous one because its minor makes the object old and its
 * mark visits it, a concurrent one because its final pause visits every
 * young large object (mark.c: visit), and the union card
 * old_slot_to_young marked of one made old meanwhile, before the cement
 * table is forgotten (young_large_cards). */
static void scan_young_large(minor_tracer *mt, uintptr_t obj)
{
    uint8_t *cards = lull_heap_g.cards;
    size_t size = lull_block_of(obj)->large_size;
    size_t c0 = (obj - lull_heap_g.start) >> LULL_CARD_SHIFT;
    size_t c1 = (obj + size - 1 - lull_heap_g.start) >> LULL_CARD_SHIFT;
    for (size_t c = c0; c <= c1; c++) {
        /* A block's clean cards at once (c0 starts a block; the run's
         * last block is the object's to its end). */
        if (c % CARDS_PER_BLOCK == 0 && block_cards_clean(cards + c)) {
            c += CARDS_PER_BLOCK - 1;
            continue;
        }
        if (!__atomic_load_n(&cards[c], __ATOMIC_RELAXED))
            continue;
        __atomic_store_n(&cards[c], LULL_CARD_CLEAN, __ATOMIC_RELAXED);
        mt->cards++;
        mt->saw_young = false;
        uintptr_t lo = lull_heap_g.start + (c << LULL_CARD_SHIFT);
        each_slot_in(obj, lo, lo + ((uintptr_t)1 << LULL_CARD_SHIFT), forward_old_slot, mt);
        mt->cards_young += mt->saw_young;
    }
    if (lull_marking() && !lull_los_stays_young(obj, nursery_g.may_age))
        lull_mark_grey_made_old(&mt->mark_tr, obj);
}

static void scan_gray(minor_tracer *mt, uintptr_t obj)
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
        scan_gray(mt, obj);
}

/* ------------------------------------------------------------------------ */
/* Cards                                                                    */
/* ------------------------------------------------------------------------ */

/* The live objects of SMALL block bi (size class cls) that overlap
 * [lo, hi). A slot whose word 0 is zero is free, or a copy another tracer
 * has not finished (forward): skipped. */
static void scan_small_card(minor_tracer *mt, uint32_t bi, uint32_t cls, uintptr_t lo, uintptr_t hi)
{
    uint32_t s0, s1, sz = lull_class_size[cls];
    uintptr_t base = lull_block_addr(bi);
    if (!lull_block_slots_in(bi, cls, lo, hi, &s0, &s1))
        return;
    /* A block not yet swept since the last major holds dead objects too:
     * only the marked ones are live (their dead neighbours' references may
     * lead to memory reused since). */
    bool pending = lull_heap_g.blocks[bi].sweep_pending;
    for (uint32_t s = s0; s <= s1; s++) {
        uintptr_t obj = base + (uintptr_t)s * sz;
        if (__atomic_load_n((uintptr_t *)obj, __ATOMIC_ACQUIRE) && (!pending || lull_is_marked(obj)))
            lull_trace_slots(obj, forward_old_slot, mt);
    }
}

/* Before any copy (one thread): list the blocks whose marked cards must be
 * scanned; clear the cards of every other block. (A running concurrent
 * mark has its own cards, the union table, which the barrier marks: mark.h.) */
static void list_card_work(void)
{
    uint8_t *cards = lull_heap_g.cards;
    uint32_t frontier = lull_frontier();
    size_t n = 0;
    for (uint32_t bi = 0; bi < frontier; bi++) {
        uint8_t *bc = cards + (size_t)bi * CARDS_PER_BLOCK;
        if (block_cards_clean(bc))
            continue;
        lull_block *b = &lull_heap_g.blocks[bi];
        if (b->state == LULL_BLOCK_SMALL && b->has_refs) {
            nursery_g.cwork[n++] = (card_work){ bi, b->size_class, 0 };
            continue;
        }
        if (b->state == LULL_BLOCK_LARGE_HEAD || b->state == LULL_BLOCK_LARGE_TAIL) {
            uintptr_t obj = lull_block_addr(b->state == LULL_BLOCK_LARGE_HEAD ? bi : b->run_head);
            /* A young one is no root: its cards are scanned if it is
             * reached, and kept marked until then (scan_young_large). */
            if (lull_young_large_at(obj))
                continue;
            if (lull_type_has_refs(lull_header_type(*(uintptr_t *)obj))) {
                nursery_g.cwork[n++] = (card_work){ bi, UINT32_MAX, obj };
                continue;
            }
        }
        memset(bc, 0, CARDS_PER_BLOCK);
    }
    nursery_g.ncwork = n;
    atomic_store_explicit(&nursery_g.next_card, 0, memory_order_relaxed);
}

/* One marked card of work-list entry w: clear it first (forward_old_slot
 * marks it again when a slot keeps pointing into the nursery), then scan
 * the objects on it. */
static void scan_card(minor_tracer *mt, card_work w, size_t c)
{
    uint8_t *card = lull_heap_g.cards + (size_t)w.block * CARDS_PER_BLOCK + c;
    if (!__atomic_load_n(card, __ATOMIC_RELAXED))
        return;
    mt->cards++;
    mt->saw_young = false;
    __atomic_store_n(card, LULL_CARD_CLEAN, __ATOMIC_RELAXED);
    uintptr_t lo = lull_block_addr(w.block) + (c << LULL_CARD_SHIFT), hi = lo + ((uintptr_t)1 << LULL_CARD_SHIFT);
    if (w.size_class != UINT32_MAX)
        scan_small_card(mt, w.block, w.size_class, lo, hi);
    else
        each_slot_in(w.large, lo, hi, forward_old_slot, mt);
    mt->cards_young += mt->saw_young;
}

/* Scan the marked cards of the work list's blocks. Tracers claim
 * CARD_CHUNK blocks at a time. The cards lie on objects scattered over the
 * heap, so the first read of each is a cache miss (on the game loop, four
 * fifths of this function's time went to the first object's header): the
 * scan runs PREFETCH_AHEAD cards behind a prefetch of each card, so that
 * the misses overlap. Prefetching the first header alone saved 12% of the
 * copying phase's time per nursery byte there; the whole card, 40%. */
#define PREFETCH_AHEAD 16u
static void scan_cards(minor_tracer *mt)
{
    uint8_t *cards = lull_heap_g.cards;
    struct { card_work w; uint32_t c; } q[PREFETCH_AHEAD];
    unsigned qh = 0, qn = 0;
    for (;;) {
        size_t i0 = atomic_fetch_add_explicit(&nursery_g.next_card, CARD_CHUNK, memory_order_relaxed);
        if (i0 >= nursery_g.ncwork)
            break;
        size_t i1 = i0 + CARD_CHUNK < nursery_g.ncwork ? i0 + CARD_CHUNK : nursery_g.ncwork;
        for (size_t i = i0; i < i1; i++) {
            card_work w = nursery_g.cwork[i];
            const uint8_t *bc = cards + (size_t)w.block * CARDS_PER_BLOCK;
            for (size_t c = 0; c < CARDS_PER_BLOCK; c++) {
                if (!__atomic_load_n(&bc[c], __ATOMIC_RELAXED))
                    continue;
                lull_prefetch_card(lull_block_addr(w.block), c,
                                   w.size_class != UINT32_MAX ? lull_class_size[w.size_class] : 0);
                if (qn == PREFETCH_AHEAD) {
                    scan_card(mt, q[qh].w, q[qh].c);
                    qh = (qh + 1) % PREFETCH_AHEAD;
                    qn--;
                }
                unsigned t = (qh + qn) % PREFETCH_AHEAD;
                q[t].w = w;
                q[t].c = (uint32_t)c;
                qn++;
            }
        }
    }
    for (; qn; qn--, qh = (qh + 1) % PREFETCH_AHEAD)
        scan_card(mt, q[qh].w, q[qh].c);
}

/* One tracer's part of the copying phase: cards, then the shared drain. */
static void copy_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    minor_tracer *mt = &nursery_g.mt[tr->id];
    mt->tr = tr;
    void (*spill)(lull_tracer *, uintptr_t) = tr->spill;   /* a worker's tracer outlives the minor */
    tr->spill = spill_gray;
    if (nursery_g.parallel) {
        tr->share = true;
        scan_cards(mt);
        lull_tracer_drain_shared(tr, &nursery_g.active, drain_local, mt);
        tr->share = false;
    } else {
        scan_cards(mt);
        drain_local(tr, mt);
    }
    tr->spill = spill;
}

/* ------------------------------------------------------------------------ */
/* Rebuilding the nursery                                                   */
/* ------------------------------------------------------------------------ */

DEFINE_SIFT(sort_excl, excl, START_KEY)
DEFINE_HEAPSORT(sort_excl, excl, START_KEY)

static void add_free(range *list, size_t *n, size_t cap, uintptr_t s, uintptr_t e)
{
    if (e <= s)
        return;
    if (e - s < MIN_FRAGMENT) {
        memset((void *)s, 0, e - s);
        return;
    }
    if (*n == cap)
        lull_fatal("lull_collect", "minor collection: fragment table full");
    list[(*n)++] = (range){ s, e - TLAB_GAP };
    if (lull_cfg.clear_nursery)
        memset((void *)s, POISON_BYTE, e - s);
}

/* Free space [s, e): below the limit, fragments TLABs are cut from;
 * beyond it, afrags: the aging space with promotion-age=2 or auto, else
 * the spare space a growing nursery takes at once (lull_nursery_resize). */
static void add_fragment(uintptr_t s, uintptr_t e)
{
    if (s < lull_nursery_start || e > lull_nursery_end)
        lull_fatal("lull_collect", "minor collection: fragment [%p, %p) outside the nursery", (void *)s, (void *)e);
    uintptr_t lim = nursery_g.limit;
    add_free(nursery_g.frags, &nursery_g.nfrags, nursery_g.frags_cap, s, e < lim ? e : lim);
    add_free(nursery_g.afrags, &nursery_g.nafrags, nursery_g.afrags_cap, s > lim ? s : lim, e);
}

static void log_add(uintptr_t s, uintptr_t e)
{
    if (nursery_g.log_n == nursery_g.log_cap)
        lull_fatal("lull_collect", "minor collection: nursery log full");
    nursery_g.log_[nursery_g.log_n++] = (range){ s, e };
}

/* Pinned objects and TLAB tails stay; the rest becomes fragments. Pinned
 * objects close together share one logged range (zeroed between them), up
 * to a TLAB's size so that a lookup never walks further. The
 * pins array is reused for the exclusion list (pins were sorted objects). */
static void rebuild(void)
{
    /* Pinned objects and non-empty tails are disjoint ranges of the nursery,
     * at least a granule each: excls_cap entries always suffice. */
    excl *ex = nursery_g.excls;
    size_t n = 0;
    for (size_t i = 0; i < nursery_g.npins; i++) {
        uintptr_t obj = nursery_g.pins[i];
        uintptr_t *h = (uintptr_t *)obj;
        *h &= ~LULL_HDR_PINNED;
        ex[n++] = (excl){ obj, obj + lull_object_size(obj, lull_header_type(*h)), false, false };
    }
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        if (t->tlab_log == NO_LOG)
            continue;
        if (t->tlab->next == t->tlab->end) {
            /* Used up: nothing to keep but its gap (TLAB_GAP). An empty
             * logged range there could hide a pinned object from lookups. */
            t->tlab_log = NO_LOG;
            ex[n++] = (excl){ (uintptr_t)t->tlab->end, (uintptr_t)t->tlab->end + TLAB_GAP, false, true };
            continue;
        }
        ex[n++] = (excl){ (uintptr_t)t->tlab->next, (uintptr_t)t->tlab->end + TLAB_GAP, true, false };
    }
    /* The aged copies stay too, logged like pinned objects (a chunk is at
     * most a TLAB long, so that lookups walk no further). */
    size_t na = atomic_load_explicit(&nursery_g.naged, memory_order_relaxed);
    for (size_t k = 0; k < na; k++)
        ex[n++] = (excl){ nursery_g.aged[k].start, nursery_g.aged[k].end, false, false };
    sort_excl(ex, n);
    nursery_g.nexcls = n;

    nursery_g.nfrags = nursery_g.frag_cur = 0;
    nursery_g.nafrags = nursery_g.afrag_cur = 0;
    nursery_g.age_lo = nursery_g.limit;
    nursery_g.log_n = 0;
    uintptr_t cursor = lull_nursery_start;
    size_t i = 0;
    while (i < n) {
        add_fragment(cursor, ex[i].start);
        if (ex[i].gap) {
            /* Never allocated, so nothing pinned lies in it. */
            LULL_ASSERT(ex[i].start >= cursor);
            cursor = ex[i].end;
            i++;
            continue;
        }
        if (ex[i].tail) {
            /* An empty range at the tail's start: this thread's TLAB. */
            log_add(ex[i].start, ex[i].start);
            for (lull_thread *t = lull_threads_first(); t; t = t->next)
                if (t->tlab_log != NO_LOG && (uintptr_t)t->tlab->next == ex[i].start)
                    t->tlab_log = (uint32_t)(nursery_g.log_n - 1);
            cursor = ex[i].end;   /* nothing else starts inside a tail */
            i++;
            continue;
        }
        /* A run of pinned objects with small gaps. */
        uintptr_t run_start = ex[i].start, run_end = ex[i].end;
        i++;
        while (i < n && !ex[i].tail && !ex[i].gap && ex[i].start - run_end < MIN_FRAGMENT &&
               run_end - run_start < LULL_TLAB_SIZE) {   /* lookups walk at most a run */
            memset((void *)run_end, 0, ex[i].start - run_end);
            run_end = ex[i].end;
            i++;
        }
        log_add(run_start, run_end);
        cursor = run_end;
    }
    add_fragment(cursor, lull_nursery_end);
    nursery_g.log_sorted = true;
}

/* ------------------------------------------------------------------------ */
/* The minor collection                                                     */
/* ------------------------------------------------------------------------ */

uint64_t lull_nursery_promoted_by_workers(void)
{
    return nursery_g.promoted_by_workers;
}

uint64_t lull_nursery_large_freed(void)
{
    return nursery_g.large_freed;
}

uint64_t lull_nursery_handed(void)
{
    return nursery_g.handed;
}

uint64_t lull_nursery_cards_scanned(void)
{
    return nursery_g.cards;
}

uint64_t lull_nursery_cards_young(void)
{
    return nursery_g.cards_young;
}

uint64_t lull_nursery_trace_ns(void)
{
    return nursery_g.trace_ns;
}

size_t lull_nursery_size(void)
{
    /* Atomic: lull_get_stats reads it without the gc lock. */
    return __atomic_load_n(&nursery_g.room, __ATOMIC_RELAXED);
}

size_t lull_nursery_ceiling(void)
{
    return nursery_g.ceiling - lull_nursery_start;
}

uint64_t lull_nursery_aged(void)
{
    return nursery_g.aged_bytes;
}


/* With promotion-age=1, afrags holds the free space beyond the limit
 * (spare): rebuild() puts there what it finds beyond it, a shrink what it
 * cuts off, and a growth takes back what lies below the new limit, so
 * that the new size holds from the next TLAB on, not from the next
 * minor's rebuild. (A nursery grown only there was filled at its old size
 * first, and the idle rule, reading the new size, let such a minor come
 * in the middle of the program's next unit of work: policy.c.) Both lists
 * stay ascending: what a shrink cuts off lies below every spare range,
 * what a growth takes back above every fragment. With aging, afrags is
 * the aging space, and growth waits for the next rebuild: space taken
 * from it would lie at or above age_lo, and its objects would be promoted
 * at their first minor. */
static void spare_shrink(size_t from, range tail)
{
    size_t cut = (tail.end > tail.start) + (nursery_g.nfrags - from);
    size_t keep = nursery_g.nafrags - nursery_g.afrag_cur;
    if (!cut)
        return;
    if (cut + keep > nursery_g.afrags_cap)
        lull_fatal("lull_collect", "nursery resize: fragment table full");
    memmove(&nursery_g.afrags[cut], &nursery_g.afrags[nursery_g.afrag_cur], keep * sizeof *nursery_g.afrags);
    size_t k = 0;
    if (tail.end > tail.start)
        nursery_g.afrags[k++] = tail;
    memcpy(&nursery_g.afrags[k], &nursery_g.frags[from], (nursery_g.nfrags - from) * sizeof *nursery_g.afrags);
    nursery_g.afrag_cur = 0;
    nursery_g.nafrags = cut + keep;
}

static void spare_grow(uintptr_t limit)
{
    while (nursery_g.afrag_cur < nursery_g.nafrags) {
        range *f = &nursery_g.afrags[nursery_g.afrag_cur];
        uintptr_t e = f->end + TLAB_GAP;        /* the free range's end (add_free stored e - TLAB_GAP) */
        if (f->start >= limit)
            break;
        if (e <= limit) {
            add_free(nursery_g.frags, &nursery_g.nfrags, nursery_g.frags_cap, f->start, e);
            nursery_g.afrag_cur++;
            continue;
        }
        add_free(nursery_g.frags, &nursery_g.nfrags, nursery_g.frags_cap, f->start, limit);
        f->start = limit;
        if (f->start >= f->end)
            nursery_g.afrag_cur++;
        break;
    }
}

void lull_nursery_resize(size_t bytes)
{
    bytes &= ~(LULL_TLAB_SIZE - 1);
    if (bytes < LULL_TLAB_SIZE)
        bytes = LULL_TLAB_SIZE;
    if (bytes > lull_nursery_ceiling())
        bytes = lull_nursery_ceiling();
    /* The size is the room to cut TLABs from: the limit goes as far past
     * it as the objects the last minor left pinned below the limit take
     * (the last rebuild's exclusions, sorted: their ranges stay taken until
     * the next minor, even where a major has zeroed a dead one), up to the
     * ceiling. Else a nursery the target made small and pinned objects
     * filled would leave no room at all, and every allocation would run a
     * minor that frees nothing: a thread deep in recursion, its frames
     * holding young objects, pinned 217 KiB of a 256 KiB nursery and ran
     * 4,600 minors in 10 s (stress_longjmp). TLAB tails and gaps are not
     * counted. */
    uintptr_t end = lull_nursery_start + bytes, ceiling = lull_nursery_start + lull_nursery_ceiling();
    size_t pinned = 0;
    for (size_t i = 0; i < nursery_g.nexcls && nursery_g.excls[i].start < end && end < ceiling; i++) {
        const excl *x = &nursery_g.excls[i];
        if (x->tail || x->gap)
            continue;
        /* end lies past every excluded range that starts below it. */
        pinned += x->end - x->start;
        end += x->end - x->start;
    }
    if (end >= ceiling) {
        /* What lies beyond the ceiling is not below the limit. */
        end = ceiling;
        pinned = 0;
        for (size_t i = 0; i < nursery_g.nexcls && nursery_g.excls[i].start < end; i++)
            if (!nursery_g.excls[i].tail && !nursery_g.excls[i].gap)
                pinned += (nursery_g.excls[i].end < end ? nursery_g.excls[i].end : end) - nursery_g.excls[i].start;
    }
    uintptr_t limit = end;
    size_t extent = limit - lull_nursery_start;
    __atomic_store_n(&nursery_g.room, pinned < extent ? extent - pinned : 0, __ATOMIC_RELAXED);
    bool spare = lull_cfg.promotion_age == 1;
    if (limit < nursery_g.limit) {
        /* Shrink now: the fragments beyond the limit are dropped (their
         * memory is not logged, so nothing walks it), or kept as spare. */
        size_t n = nursery_g.nfrags;
        while (n > nursery_g.frag_cur && nursery_g.frags[n - 1].start >= limit - TLAB_GAP)
            n--;
        range tail = { 0, 0 };
        if (n > nursery_g.frag_cur && nursery_g.frags[n - 1].end > limit - TLAB_GAP) {
            if (nursery_g.frags[n - 1].end > limit)
                tail = (range){ limit, nursery_g.frags[n - 1].end };
            nursery_g.frags[n - 1].end = limit - TLAB_GAP;
        }
        if (spare)
            spare_shrink(n, tail);
        nursery_g.nfrags = n;
        if (nursery_g.frag_cur < n && nursery_g.frags[nursery_g.frag_cur].start >= nursery_g.frags[nursery_g.frag_cur].end)
            nursery_g.frag_cur++;
    } else if (limit > nursery_g.limit && spare) {
        spare_grow(limit);
    }
    if (limit != nursery_g.limit)
        LULL_PROBE2(nursery_resized, nursery_g.limit - lull_nursery_start, limit - lull_nursery_start);
    /* With aging, growth takes effect when the next minor rebuilds the
     * fragments. */
    __atomic_store_n(&nursery_g.limit, limit, __ATOMIC_RELAXED);
}

/* Drain the stopping thread's grey stack and the gray array, to the end
 * (one thread: the other tracers are done). */
static void drain_rest(minor_tracer *self)
{
    for (;;) {
        drain_local(self->tr, self);
        if (!nursery_g.gray_n)
            break;
        scan_gray(self, nursery_g.gray[--nursery_g.gray_n]);
    }
}

/* After the copying (handles.h): where a young object is now, or 0 if it
 * died. A nursery object survived if it was forwarded or pinned; a young
 * large object if the minor reached it (one it did not reach is garbage
 * even if a mark marked it: lull_los_end_minor keeps it, emptied, for
 * that mark's sake). Anything else is not this minor's to judge. */
static uintptr_t minor_fate(uintptr_t v, void *ctx)
{
    (void)ctx;
    if (lull_in_nursery(v)) {
        if (nursery_g.aging && to_space(v))
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

uint64_t lull_nursery_collect(bool may_age)
{
    nursery_g.degraded_left = 0;
    nursery_g.may_age = may_age;
    nursery_g.aging = may_age && lull_policy_aging();
    atomic_store_explicit(&nursery_g.aging_full, false, memory_order_relaxed);
    atomic_store_explicit(&nursery_g.naged, 0, memory_order_relaxed);
    unsigned ntracers = lull_workers_count() + 1;
    lull_tracer tr = { .id = 0, .spill = spill_gray };
    nursery_g.parallel = ntracers > 1;
    for (unsigned i = 0; i < ntracers; i++) {
        minor_tracer *m = &nursery_g.mt[i];
        m->promoted = m->cards = m->cards_young = m->aged = 0;
        m->age_start = m->age_next = m->age_end = 0;
    }
    minor_tracer *self = &nursery_g.mt[0];
    self->tr = &tr;
    nursery_g.gray_n = nursery_g.npins = 0;
    nursery_g.pins_overflowed = false;
    if (++nursery_g.epoch == 0) {
        /* Wrapped (after 2^32 minors): forget every old visit, so that no
         * object's record can equal the new number by age alone. */
        for (uint32_t i = 0; i < lull_frontier(); i++)
            lull_heap_g.blocks[i].minor_seen = 0;
        for (size_t i = 0; i < (size_t)(lull_nursery_end - lull_nursery_start) >> AGE_CHUNK_SHIFT; i++)
            atomic_store_explicit(&nursery_g.chunk_epoch[i], 0, memory_order_relaxed);
        nursery_g.epoch = 1;      /* descriptors start at 0 */
    }

    /* The used part of every active TLAB is what its thread allocated. */
    lull_nursery_sync_tlabs();
    sort_log();
    lull_cement_new_cycle();
    /* At most what was handed out since, and what the last one kept,
     * is copied: blocks for it are swept now if the heap cannot grow. */
    lull_major_sweep_for_promotion(nursery_g.handed + nursery_g.kept + nursery_g.aged_bytes);

    /* 1. Pin (this thread): conservative roots, then the cemented objects. */
    uint64_t t_pin = lull_now_ns();
    lull_roots_scan_threads(pin_candidates, &tr);
    lull_roots_scan(pin_candidates, NULL, &tr);
    for (unsigned k = 0; k < CEMENT_SLOTS && nursery_g.ncemented; k++) {
        if (!nursery_g.cement[k].cemented)
            continue;
        if (nursery_g.npins < nursery_g.pins_cap)
            nursery_g.pins[nursery_g.npins++] = nursery_g.cement[k].obj;
        else
            nursery_g.pins_overflowed = true;   /* fatal below, rather than a cemented object unpinned */
    }
    resolve_pins(&tr);
    if (lull_cfg.check_cards)
        lull_nursery_check_cards();

    /* 2. Copy from precise roots (this thread), then cards, pinned objects
     * and the copies (every tracer: copy_job). */
    uint64_t t_trace = lull_now_ns();
    LULL_TL(LULL_TL_MINOR_PIN, t_pin, t_trace - t_pin, nursery_g.npins, 0, 0, NULL);
    lull_roots_scan(NULL, forward_slot, self);
    list_card_work();
    if (nursery_g.parallel) {
        if (tr.cur)
            lull_tracer_share_older(&tr);
        atomic_store(&nursery_g.active, (int)ntracers);
        lull_workers_run(copy_job, NULL, &tr);
    } else {
        copy_job(&tr, NULL);
    }
    /* What no grey-stack section could hold (one thread, to the end). */
    drain_rest(self);
    uint64_t t_weak = lull_now_ns();
    LULL_TL(LULL_TL_MINOR_COPY, t_trace, t_weak - t_trace, 0, 0, 0, NULL);
    /* Weak references and finalizers (handles.h, finalize.h): WEAK handles
     * to what died are cleared; dead finalizable objects are kept (copied
     * like any survivor, with all they reach) and queued; WEAK_TRACK
     * handles then follow them, and are cleared only for what stays dead. */
    lull_handles_weak_pass(LULL_HANDLE_WEAK, minor_fate, NULL);
    if (lull_finalize_collect(minor_fate, forward_slot, self, true))
        drain_rest(self);
    lull_handles_weak_pass(LULL_HANDLE_WEAK_TRACK, minor_fate, NULL);
    lull_tracer_release(&tr);
    nursery_g.aged_bytes = 0;
    for (unsigned i = 0; i < ntracers; i++) {
        age_retire(&nursery_g.mt[i]);
        nursery_g.aged_bytes += nursery_g.mt[i].aged;
    }
    uint64_t t_traced = lull_now_ns();
    LULL_TL(LULL_TL_MINOR_WEAK, t_weak, t_traced - t_weak, 0, 0, 0, NULL);
    nursery_g.trace_ns = t_traced - t_trace;
    nursery_g.large_freed = lull_los_end_minor(may_age);
    if (nursery_g.large_freed)
        LULL_PROBE1(young_large_freed, nursery_g.large_freed);

    /* 3. Promotion failures pinned objects after resolve_pins: sort again. */
    if (nursery_g.npins > nursery_g.pins_cap) {
        nursery_g.npins = nursery_g.pins_cap;
        nursery_g.pins_overflowed = true;
    }
    sort_addrs(nursery_g.pins, nursery_g.npins);
    size_t u = 0;
    for (size_t i = 0; i < nursery_g.npins; i++)
        if (!u || nursery_g.pins[i] != nursery_g.pins[u - 1])
            nursery_g.pins[u++] = nursery_g.pins[i];
    nursery_g.npins = u;
    if (nursery_g.pins_overflowed)
        lull_fatal("lull_collect", "minor collection: more than %zu pinned objects", nursery_g.pins_cap);
    nursery_g.kept = 0;
    for (size_t i = 0; i < u; i++)
        nursery_g.kept += walk_size(nursery_g.pins[i], *(uintptr_t *)nursery_g.pins[i]);

    /* 4. The nursery: pinned objects stay, the rest is free. */
    uint64_t t_rebuild = lull_now_ns();
    rebuild();
    nursery_g.aging = false;
    LULL_TL(LULL_TL_MINOR_REBUILD, t_rebuild, lull_now_ns() - t_rebuild, 0, 0, 0, NULL);
    uint64_t promoted = 0, unused = 0;
    nursery_g.cards = nursery_g.cards_young = 0;
    for (unsigned i = 0; i < ntracers; i++) {
        promoted += nursery_g.mt[i].promoted;
        nursery_g.cards += nursery_g.mt[i].cards;
        nursery_g.cards_young += nursery_g.mt[i].cards_young;
        unused += lull_major_drop_caches(&nursery_g.mt[i].promo);
        lull_mark_adopt_from_minor(&nursery_g.mt[i].mark_tr);
    }
    nursery_g.promoted_by_workers = promoted - self->promoted;
    nursery_g.handed = 0;
    lull_meter_unused(unused + nursery_g.large_freed);
    lull_finalize_end_minor();
    if (lull_cfg.verify_nursery)
        lull_nursery_verify();
    return promoted;
}

/* A survivor the major did not mark is dead (it stayed only because it was
 * cemented, or could not be promoted): what it references may just have
 * been swept. Zero it, so that no stale conservative pointer can bring it
 * back (walks and lookups skip zeroed memory); the next minor reclaims it. */
static void clear_if_dead(uintptr_t obj, void *ctx)
{
    size_t size = lull_object_size(obj, lull_header_type(*(uintptr_t *)obj));
    if (!lull_is_marked(obj))
        memset((void *)obj, 0, size);
    else
        *(uint64_t *)ctx += lull_align_up(size, LULL_GRANULE);
}

bool lull_nursery_promotion_failed(void)
{
    return atomic_load_explicit(&nursery_g.promotion_failed, memory_order_relaxed);
}

uint64_t lull_nursery_after_major(bool marked)
{
    uint64_t live = 0;
    atomic_store_explicit(&nursery_g.promotion_failed, false, memory_order_relaxed);
    if (marked) {
        lull_nursery_each_object(clear_if_dead, &live);
        lull_mark_clear_blocks(nursery_g.first_block, nursery_g.nblocks);
    }
    /* The mark re-marked the card of every old slot it found pointing into
     * the nursery (mark.c: visit), cemented objects' included. */
    memset(nursery_g.cement, 0, CEMENT_SLOTS * sizeof *nursery_g.cement);
    nursery_g.ncemented = 0;
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

void lull_nursery_check_cards(void)
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

void lull_nursery_verify(void)
{
    /* The log: sorted, disjoint, inside the nursery, and every thread's
     * TLAB entry ends at its allocation pointer. */
    for (size_t i = 0; i < nursery_g.log_n; i++) {
        const range *r = &nursery_g.log_[i];
        if (r->end < r->start || r->start < lull_nursery_start || r->end > lull_nursery_end ||
            (i && r->start < nursery_g.log_[i - 1].end))
            lull_fatal("verify-nursery", "nursery log entry %zu [%p, %p) is inverted, outside the nursery "
                       "or overlaps the one before", i, (void *)r->start, (void *)r->end);
    }
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        if (t->tlab_log != NO_LOG && (t->tlab_log >= nursery_g.log_n || nursery_g.log_[t->tlab_log].start != (uintptr_t)t->tlab->next))
            lull_fatal("verify-nursery", "thread %p: its TLAB at %p has no nursery log entry", (void *)t,
                       (void *)t->tlab->next);
    lull_trace_old_objects(true, false, verify_object, NULL);
    lull_nursery_each_object(verify_object, NULL);
    lull_roots_scan(NULL, verify_root, NULL);
    lull_handles_each_weak(verify_weak, NULL);
}
