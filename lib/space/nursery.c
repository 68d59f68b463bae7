/* nursery.c — the nursery space (nursery.h): TLABs and their refill,
 * degraded mode, the nursery log and its walks and lookups, fragments and
 * their rebuild at the end of a minor, the aging space's chunks, resizing.
 *
 * Callers: TLAB refills (the nursery lock, below, inside a critical
 * region), the allocation paths and the policy (gc lock held), the pauses
 * and the minor's tracers (world stopped). Uses only the block space and
 * base: the minor that copies out of the nursery is trace/minor.c.
 *
 * The nursery lock: a mutex of this space alone, taken by a TLAB refill
 * to cut its range and log it, by the gc lock's holder to read or change
 * the fragments (lull_nursery_room, lull_nursery_resize), and by a
 * minor's beginning and end. It is taken only inside a critical region
 * (base/registry.h) or with the gc lock held, held for bookkeeping only
 * (never around a TLAB's memset, a wait or another lock), so no thread is
 * ever stopped holding it and a pause's stopper may take it with the
 * world stopped. Order: gc lock, registry lock, nursery lock.
 *
 * Invariants: the log's ranges are disjoint, inside the nursery and
 * walkable (objects or zero); it is sorted whenever the world is stopped
 * after lull_nursery_minor_begin; every fragment and every TLAB ends
 * TLAB_GAP before what follows it; fragments and aging-space ranges are
 * ascending. */
#include "space/nursery.h"
#include "space/meter.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/os.h"
#include "base/probes.h"
#include "base/registry.h"
#include "base/util.h"

/* Free space smaller than this between pinned objects is not worth a
 * fragment; it is zeroed (so walks skip it) and waits for the next minor. */
#define MIN_FRAGMENT ((uintptr_t)512)
/* Every fragment ends a granule before what follows it (a pinned object, a
 * TLAB's tail, the end of the nursery), and every TLAB a granule before
 * the end of the space handed out for it, in gaps never allocated: a
 * thread keeps such an end in registers and on its stack for a while, and
 * a conservative scan of that thread must not take it for the first byte
 * of the object that follows. The rebuild keeps a TLAB's gap with its
 * tail. */
#define TLAB_GAP     ((uintptr_t)LULL_GRANULE)
#define POISON_BYTE  0xdb
#define NO_LOG       UINT32_MAX
/* Aging: to-space is handed out in chunks of at most AGE_CHUNK_MAX bytes,
 * aligned to AGE_CHUNK, whose map entry records the minor that took it. */
#define AGE_CHUNK       ((uintptr_t)1 << LULL_AGE_CHUNK_SHIFT)
#define AGE_CHUNK_MAX   ((uintptr_t)LULL_TLAB_SIZE)
/* Logged ranges a caller of lull_nursery_each_object_part claims at once. */
#define LOG_CLAIM       8u

uintptr_t lull_nursery_start, lull_nursery_end;
lull_nursery_cycle lull_nursery_cycle_g;

typedef struct range {
    uintptr_t start, end;
} range;

typedef struct excl {
    uintptr_t start, end;
    bool      tail;      /* a thread's TLAB tail and gap (else a pinned object or aged chunk) */
    bool      gap;       /* the gap after a used-up TLAB: neither fragment nor logged */
} excl;

/* The nursery's state: one instance. The fragments, the log's length and
 * order, and `handed` are written with the nursery lock held (refills,
 * resizes, a minor's end); a logged range's end by its TLAB's thread (a
 * retire) or with the world stopped; the rest by the gc lock's holder or
 * with the world stopped. While a minor's tracers copy they touch only
 * the aged list (an atomic index), the aging space under their promotion
 * lock (lull_nursery_age_chunk) and promotion_failed. */
static struct {
    pthread_mutex_t lock;         /* the nursery lock (above) */
    uint32_t first_block, nblocks;

    /* TLABs are cut from [lull_nursery_start, limit), sized by the pause
     * target without remapping anything; pinned objects beyond it stay
     * where they are. `room` is what the size means: limit - start less
     * what the last minor left pinned below the limit. */
    uintptr_t limit;
    size_t room;
    uint64_t handed;              /* bytes handed out in TLABs since the last minor (atomic: read unlocked) */
    uint64_t kept;                /* bytes the last minor left in place, pinned */
    lull_nursery_minor_stats last;   /* the last minor's figures (lull_nursery_note_minor) */
    /* Degraded mode: bytes allocations may still take from the major heap
     * without a minor; 0: not degraded. */
    uint64_t degraded_left;
    /* A copy could not be made since the last major. */
    atomic_bool promotion_failed;

    /* Aging: the range is twice `ceiling`; the free space the last rebuild
     * found at or above the limit (lull_nursery_cycle_g.age_lo) is the
     * aging space, afrags, ascending. With promotion-age=1 afrags is the
     * spare space beyond the limit instead, which a growing nursery takes
     * at once (lull_nursery_resize). `aged`: the used parts of this
     * minor's to-space chunks. */
    uintptr_t ceiling;
    range *afrags;
    size_t nafrags, afrag_cur, afrags_cap;
    range *aged;
    atomic_size_t naged;
    size_t aged_cap;

    /* Logged ranges (walkable: objects or zero), appended by refills, sorted
     * by start when a minor begins (log_sorted says whether they are).
     * Bounded by nursery_size / 16: ranges are disjoint and at least one
     * granule long, or empty TLAB tails (one per thread). */
    range *log_;
    size_t log_n, log_cap;
    bool log_sorted;

    /* Fragments, ascending; frag_cur is the one TLABs are cut from. */
    range *frags;
    size_t nfrags, frag_cur, frags_cap;

    /* The rebuild's exclusions (pinned objects, aged chunks, TLAB tails);
     * the last rebuild's stay sorted for lull_nursery_resize. */
    excl *excls;
    size_t excls_cap, nexcls;
} nursery_g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void nursery_lock(void)
{
    pthread_mutex_lock(&nursery_g.lock);
}

static void nursery_unlock(void)
{
    pthread_mutex_unlock(&nursery_g.lock);
}

void lull_nursery_lock_for_fork(void)
{
    nursery_lock();
}

void lull_nursery_unlock_after_fork(void)
{
    nursery_unlock();
}

static size_t chunk_map_bytes(void)
{
    return ((size_t)(lull_nursery_end - lull_nursery_start) >> LULL_AGE_CHUNK_SHIFT) *
           sizeof *lull_nursery_cycle_g.chunk_epoch;
}

/* The whole nursery is one fragment, and what lies beyond the ceiling one
 * range of the aging space; block-space runs read as zero. */
static void nursery_empty(void)
{
    nursery_g.log_n = 0;
    nursery_g.log_sorted = true;
    nursery_g.nexcls = 0;
    nursery_g.frags[0] = (range){ lull_nursery_start, nursery_g.ceiling - TLAB_GAP };
    nursery_g.nfrags = 1;
    nursery_g.frag_cur = 0;
    lull_nursery_cycle_g.age_lo = nursery_g.ceiling;
    nursery_g.nafrags = nursery_g.afrag_cur = 0;
    if (nursery_g.ceiling < lull_nursery_end)
        nursery_g.afrags[nursery_g.nafrags++] = (range){ nursery_g.ceiling, lull_nursery_end - TLAB_GAP };
    nursery_g.last.aged = 0;
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
    __atomic_store_n(&nursery_g.handed, 0, __ATOMIC_RELAXED);
    nursery_g.degraded_left = 0;
    for (uint32_t i = 0; i < n; i++)
        lull_heap_g.blocks[idx + i].state = LULL_BLOCK_NURSERY;
    nursery_g.log_cap = size / LULL_GRANULE + 1024;
    nursery_g.frags_cap = size / LULL_GRANULE + 1024;
    nursery_g.excls_cap = size / LULL_GRANULE;
    nursery_g.afrags_cap = size / LULL_GRANULE + 1024;
    nursery_g.aged_cap = (size >> LULL_AGE_CHUNK_SHIFT) + LULL_MAX_WORKERS + 1;
    nursery_g.log_ = lull_os_table(nursery_g.log_cap * sizeof *nursery_g.log_);
    nursery_g.frags = lull_os_table(nursery_g.frags_cap * sizeof *nursery_g.frags);
    nursery_g.excls = lull_os_table(nursery_g.excls_cap * sizeof *nursery_g.excls);
    nursery_g.afrags = lull_os_table(nursery_g.afrags_cap * sizeof *nursery_g.afrags);
    nursery_g.aged = lull_os_table(nursery_g.aged_cap * sizeof *nursery_g.aged);
    lull_nursery_cycle_g.chunk_epoch = lull_os_table(chunk_map_bytes());
    lull_nursery_cycle_g.epoch = 0;
    if (!nursery_g.afrags || !nursery_g.aged || !lull_nursery_cycle_g.chunk_epoch || !nursery_g.log_ ||
        !nursery_g.frags || !nursery_g.excls) {
        lull_nursery_fini();
        return -ENOMEM;
    }
    nursery_empty();
    return 0;
}

void lull_nursery_fini(void)
{
    lull_os_free_table(nursery_g.log_, nursery_g.log_cap * sizeof *nursery_g.log_);
    lull_os_free_table(nursery_g.frags, nursery_g.frags_cap * sizeof *nursery_g.frags);
    lull_os_free_table(nursery_g.excls, nursery_g.excls_cap * sizeof *nursery_g.excls);
    lull_os_free_table(nursery_g.afrags, nursery_g.afrags_cap * sizeof *nursery_g.afrags);
    lull_os_free_table(nursery_g.aged, nursery_g.aged_cap * sizeof *nursery_g.aged);
    lull_os_free_table((void *)lull_nursery_cycle_g.chunk_epoch, chunk_map_bytes());
    nursery_g.afrags = nursery_g.aged = NULL;
    lull_nursery_cycle_g.chunk_epoch = NULL;
    nursery_g.excls = NULL;
    nursery_g.log_ = nursery_g.frags = NULL;
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

/* Cut [*s, *s + *take) for a TLAB of at least `need` bytes and log it as
 * thread t's (nursery lock held). A medium object's TLAB is
 * LULL_TLAB_MEDIUM bytes if the fragment has them: a batch of such
 * objects per refill. */
static bool cut_tlab(lull_thread *t, size_t need, uintptr_t *s_out, size_t *take_out)
{
    size_t most = need > LULL__TLAB_MAX_OBJECT ? LULL_TLAB_MEDIUM : LULL_TLAB_SIZE;
    while (nursery_g.frag_cur < nursery_g.nfrags) {
        range *f = &nursery_g.frags[nursery_g.frag_cur];
        size_t avail = f->end - f->start;
        if (avail < need + TLAB_GAP) {
            nursery_g.frag_cur++;       /* the rest stays unused until the next minor */
            continue;
        }
        size_t take = avail < most ? avail : most;
        if (take < need + TLAB_GAP)
            take = need + TLAB_GAP;
        if (avail - take < MIN_FRAGMENT)
            take = avail;     /* no sliver left behind */
        uintptr_t s = f->start;
        f->start += take;
        if (f->start == f->end)
            nursery_g.frag_cur++;
        __atomic_store_n(&nursery_g.handed, nursery_g.handed + take, __ATOMIC_RELAXED);
        if (nursery_g.log_n == nursery_g.log_cap)
            lull_fatal("lull_alloc", "nursery log full (%zu ranges)", nursery_g.log_cap);
        nursery_g.log_[nursery_g.log_n] = (range){ s, s };
        if (nursery_g.log_n && s < nursery_g.log_[nursery_g.log_n - 1].start)
            nursery_g.log_sorted = false;
        t->tlab_log = (uint32_t)nursery_g.log_n++;
        *s_out = s;
        *take_out = take;
        return true;
    }
    return false;
}

/* The range is cut, logged and made the thread's TLAB (its allocation
 * pointer at its start) inside one critical region, with the nursery lock
 * held: a pause sees either the old TLAB or the new one, whole. It is
 * zeroed after both are left. A minor that stops the thread during the
 * memset finds an empty logged range at the TLAB's start and keeps the
 * rest as the thread's tail (nothing walks or finds anything in it, and
 * the rebuild leaves it alone); the thread's first object goes there only
 * once the memset is done. */
bool lull_nursery_refill(lull_thread *t, size_t need)
{
    uintptr_t s = 0;
    size_t take = 0;
    lull_enter_critical(t);
    nursery_lock();
    lull_nursery_retire_tlab(t);
    t->last_alloc = 0;   /* the thread has moved on to a TLAB's worth of others (threads.h) */
    bool ok = cut_tlab(t, need, &s, &take);
    if (ok) {
        t->tlab->next = (char *)s;
        t->tlab->end = (char *)(s + take - TLAB_GAP);
    }
    nursery_unlock();
    lull_exit_critical(t);
    if (!ok)
        return false;
    memset((void *)s, 0, take);
    lull_thread_count_alloc(t, take);
    LULL_PROBE2(alloc_tlab, take, need);
    return true;
}

size_t lull_nursery_room(size_t need)
{
    size_t room = 0;
    nursery_lock();
    for (size_t i = nursery_g.frag_cur; i < nursery_g.nfrags; i++) {
        size_t avail = nursery_g.frags[i].end - nursery_g.frags[i].start;
        /* A fragment's last request may not fit its tail: count that lost. */
        if (avail > need + TLAB_GAP)
            room += avail - need - TLAB_GAP;
    }
    nursery_unlock();
    return room;
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

#define START_KEY(x) ((x).start)
LULL_DEFINE_HEAPSORT(sort_ranges, range, START_KEY)
LULL_DEFINE_HEAPSORT(sort_excl, excl, START_KEY)

static void sort_log(void)
{
    if (!nursery_g.log_sorted)
        sort_ranges(nursery_g.log_, nursery_g.log_n);
    nursery_g.log_sorted = true;
}

/* The last logged range starting at or below a, if a lies in it; NULL
 * otherwise. Log sorted. */
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

/* The object of logged range r that holds a (interior) or starts at a,
 * walking from *from (r's start or the end of an object in r, at or below
 * a); *from is left at the end of the last object walked, an object
 * boundary still (never inside the zeroed memory past it). */
static uintptr_t find_in(const range *r, uintptr_t *from, uintptr_t a, bool interior)
{
    uintptr_t p = *from, obj;
    size_t size;
    while (lull_nursery_walk(&p, a < r->end ? a + 1 : r->end, &obj, &size)) {
        *from = p;
        if (a < obj + size)
            return interior || a == obj ? obj : 0;
    }
    return 0;
}

uintptr_t lull_nursery_find(uintptr_t a, bool interior)
{
    LULL_ASSERT(nursery_g.log_sorted);
    const range *r = range_of(a);
    if (!r)
        return 0;
    uintptr_t from = r->start;
    return find_in(r, &from, a, interior);
}

/* One walk per logged range however many addresses fall in it: the
 * addresses ascend, so each resumes where the last one's walk stopped. */
size_t lull_nursery_objects_at(uintptr_t *a, size_t n)
{
    size_t out = 0;
    uintptr_t last = 0, last_end = 0, from = 0;
    const range *r = NULL;
    for (size_t i = 0; i < n; i++) {
        uintptr_t v = a[i];
        if (last && v >= last && v < last_end)
            continue;                    /* same object as the previous one */
        if (!r || v < r->start || v >= r->end) {
            r = range_of(v);
            from = r ? r->start : 0;
        }
        if (!r)
            continue;
        uintptr_t obj = find_in(r, &from, v, true);
        if (!obj)
            continue;
        last = obj;
        last_end = obj + lull_nursery_object_size(obj, *(uintptr_t *)obj);
        a[out++] = obj;
    }
    return out;
}

/* fn on every object of logged range i; returns their count, adds their
 * bytes to *bytes. */
static size_t each_object_in(size_t i, void (*fn)(uintptr_t obj, void *ctx), void *ctx, uint64_t *bytes)
{
    uintptr_t p = nursery_g.log_[i].start, obj;
    size_t size, objects = 0;
    while (lull_nursery_walk(&p, nursery_g.log_[i].end, &obj, &size)) {
        fn(obj, ctx);
        objects++;
        *bytes += size;
    }
    return objects;
}

/* The log's order does not matter to a walk (only to lookups), but every
 * active TLAB's range must end where its thread's allocation does: a
 * minor sets that first, a concurrent major's pauses with
 * lull_nursery_sync_tlabs. */
void lull_nursery_each_object(void (*fn)(uintptr_t obj, void *ctx), void *ctx)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < nursery_g.log_n; i++)
        each_object_in(i, fn, ctx, &bytes);
}

void lull_nursery_sync_tlabs(void)
{
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        if (t->tlab_log != NO_LOG)
            nursery_g.log_[t->tlab_log].end = (uintptr_t)t->tlab->next;
}

/* The ranges are TLABs, runs of pinned objects and aged chunks, at most a
 * TLAB long each. */
size_t lull_nursery_each_object_part(atomic_size_t *next, void (*fn)(uintptr_t obj, void *ctx), void *ctx,
                                     uint64_t *bytes)
{
    size_t objects = 0, i0, i1;
    while (lull_claim(next, nursery_g.log_n, LOG_CLAIM, &i0, &i1))
        for (size_t i = i0; i < i1; i++)
            objects += each_object_in(i, fn, ctx, bytes);
    return objects;
}

void lull_nursery_verify_log(void)
{
    for (size_t i = 0; i < nursery_g.log_n; i++) {
        const range *r = &nursery_g.log_[i];
        if (r->end < r->start || r->start < lull_nursery_start || r->end > lull_nursery_end ||
            (i && r->start < nursery_g.log_[i - 1].end))
            lull_fatal("verify-nursery", "nursery log entry %zu [%p, %p) is inverted, outside the nursery "
                       "or overlaps the one before", i, (void *)r->start, (void *)r->end);
    }
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        if (t->tlab_log != NO_LOG &&
            (t->tlab_log >= nursery_g.log_n || nursery_g.log_[t->tlab_log].start != (uintptr_t)t->tlab->next))
            lull_fatal("verify-nursery", "thread %p: its TLAB at %p has no nursery log entry", (void *)t,
                       (void *)t->tlab->next);
}

/* ------------------------------------------------------------------------ */
/* The aging space                                                          */
/* ------------------------------------------------------------------------ */

bool lull_nursery_age_chunk(size_t size, uintptr_t *start, uintptr_t *end)
{
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
            atomic_store_explicit(&lull_nursery_cycle_g.chunk_epoch[(a - lull_nursery_start) >> LULL_AGE_CHUNK_SHIFT],
                                  lull_nursery_cycle_g.epoch, memory_order_relaxed);
        *start = s;
        *end = ce;
        return true;
    }
    return false;
}

void lull_nursery_age_keep(uintptr_t start, uintptr_t end)
{
    size_t i = atomic_fetch_add_explicit(&nursery_g.naged, 1, memory_order_relaxed);
    if (i >= nursery_g.aged_cap)
        lull_fatal("lull_collect", "minor collection: aging chunk list full (%zu)", nursery_g.aged_cap);
    nursery_g.aged[i] = (range){ start, end };
}

/* ------------------------------------------------------------------------ */
/* A minor's beginning and end                                              */
/* ------------------------------------------------------------------------ */

void lull_nursery_minor_begin(void)
{
    nursery_g.degraded_left = 0;
    atomic_store_explicit(&nursery_g.naged, 0, memory_order_relaxed);
    if (++lull_nursery_cycle_g.epoch == 0) {
        /* Wrapped (after 2^32 minors): forget every old visit, so that no
         * record can equal the new number by age alone. */
        for (uint32_t i = 0; i < lull_frontier(); i++)
            lull_heap_g.blocks[i].minor_seen = 0;
        for (size_t i = 0; i < (size_t)(lull_nursery_end - lull_nursery_start) >> LULL_AGE_CHUNK_SHIFT; i++)
            atomic_store_explicit(&lull_nursery_cycle_g.chunk_epoch[i], 0, memory_order_relaxed);
        lull_nursery_cycle_g.epoch = 1;      /* descriptors start at 0 */
    }
    /* The used part of every active TLAB is what its thread allocated. */
    nursery_lock();
    lull_nursery_sync_tlabs();
    sort_log();
    nursery_unlock();
}

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

/* The ranges that stay, sorted into excls: pinned[0, n) (their PINNED
 * tags cleared, their bytes counted as kept), each thread's TLAB tail or
 * the gap of a used-up one, and the aged chunks. Pinned objects and
 * non-empty tails are disjoint ranges of at least a granule each:
 * excls_cap entries always suffice. */
static size_t list_exclusions(const uintptr_t *pinned, size_t np)
{
    excl *ex = nursery_g.excls;
    size_t n = 0;
    nursery_g.kept = 0;
    for (size_t i = 0; i < np; i++) {
        uintptr_t *h = (uintptr_t *)pinned[i];
        *h &= ~LULL_HDR_PINNED;
        size_t size = lull_object_size(pinned[i], lull_header_type(*h));
        nursery_g.kept += size;
        ex[n++] = (excl){ pinned[i], pinned[i] + size, false, false };
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
    /* Aged chunks are logged like pinned objects (a chunk is at most a TLAB
     * long, so that lookups walk no further). */
    size_t na = atomic_load_explicit(&nursery_g.naged, memory_order_relaxed);
    for (size_t k = 0; k < na; k++)
        ex[n++] = (excl){ nursery_g.aged[k].start, nursery_g.aged[k].end, false, false };
    sort_excl(ex, n);
    return n;
}

/* Exclusion i is a TLAB tail: an empty logged range at its start is that
 * thread's TLAB. */
static void log_tail(const excl *x)
{
    log_add(x->start, x->start);
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        if (t->tlab_log != NO_LOG && (uintptr_t)t->tlab->next == x->start)
            t->tlab_log = (uint32_t)(nursery_g.log_n - 1);
}

/* The fragments and the log from the sorted exclusions ex[0, n): the free
 * space between them becomes fragments; pinned objects and aged chunks
 * close together share one logged range (zeroed between them), up to a
 * TLAB's size so that a lookup never walks further. */
static void rebuild(const excl *ex, size_t n)
{
    nursery_g.nfrags = nursery_g.frag_cur = 0;
    nursery_g.nafrags = nursery_g.afrag_cur = 0;
    lull_nursery_cycle_g.age_lo = nursery_g.limit;
    nursery_g.log_n = 0;
    uintptr_t cursor = lull_nursery_start;
    size_t i = 0;
    while (i < n) {
        add_fragment(cursor, ex[i].start);
        if (ex[i].gap || ex[i].tail) {
            /* A gap was never allocated, so nothing pinned lies in it;
             * nothing else starts inside a tail. */
            LULL_ASSERT(ex[i].tail || ex[i].start >= cursor);
            if (ex[i].tail)
                log_tail(&ex[i]);
            cursor = ex[i].end;
            i++;
            continue;
        }
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

void lull_nursery_minor_end(const uintptr_t *pinned, size_t n)
{
    nursery_lock();
    nursery_g.nexcls = list_exclusions(pinned, n);
    rebuild(nursery_g.excls, nursery_g.nexcls);
    __atomic_store_n(&nursery_g.handed, 0, __ATOMIC_RELAXED);
    nursery_unlock();
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

uint64_t lull_nursery_sweep(bool marked)
{
    uint64_t live = 0;
    atomic_store_explicit(&nursery_g.promotion_failed, false, memory_order_relaxed);
    if (marked) {
        lull_nursery_each_object(clear_if_dead, &live);
        lull_mark_clear_blocks(nursery_g.first_block, nursery_g.nblocks);
    }
    return live;
}

/* ------------------------------------------------------------------------ */
/* Figures                                                                  */
/* ------------------------------------------------------------------------ */

void lull_nursery_note_minor(const lull_nursery_minor_stats *s)
{
    nursery_g.last = *s;
}

void lull_nursery_note_promotion_failed(void)
{
    atomic_store_explicit(&nursery_g.promotion_failed, true, memory_order_relaxed);
}

bool lull_nursery_promotion_failed(void)
{
    return atomic_load_explicit(&nursery_g.promotion_failed, memory_order_relaxed);
}

uint64_t lull_nursery_promoted_by_workers(void) { return nursery_g.last.promoted_by_workers; }
uint64_t lull_nursery_large_freed(void) { return nursery_g.last.large_freed; }
uint64_t lull_nursery_cards_scanned(void) { return nursery_g.last.cards; }
uint64_t lull_nursery_cards_young(void) { return nursery_g.last.cards_young; }
uint64_t lull_nursery_trace_ns(void) { return nursery_g.last.trace_ns; }
uint64_t lull_nursery_aged(void) { return nursery_g.last.aged; }
uint64_t lull_nursery_handed(void) { return __atomic_load_n(&nursery_g.handed, __ATOMIC_RELAXED); }
uint64_t lull_nursery_kept(void) { return nursery_g.kept; }

size_t lull_nursery_size(void)
{
    /* Atomic: lull_get_stats reads it without the gc lock. */
    return __atomic_load_n(&nursery_g.room, __ATOMIC_RELAXED);
}

size_t lull_nursery_ceiling(void)
{
    return nursery_g.ceiling - lull_nursery_start;
}

/* ------------------------------------------------------------------------ */
/* Resizing                                                                 */
/* ------------------------------------------------------------------------ */

/* With promotion-age=1, afrags holds the free space beyond the limit
 * (spare): the rebuild puts there what it finds beyond it, a shrink what
 * it cuts off, and a growth takes back what lies below the new limit, so
 * that the new size holds from the next TLAB on. Both lists stay
 * ascending: what a shrink cuts off lies below every spare range, what a
 * growth takes back above every fragment. With aging, afrags is the aging
 * space, and growth waits for the next rebuild: space taken from it would
 * lie at or above age_lo, and its objects would be promoted at their
 * first minor. */
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

/* The limit for a size of `bytes`: as far past it as the objects the last
 * minor left pinned below the limit take (the last rebuild's exclusions,
 * sorted: their ranges stay taken until the next minor, even where a
 * major has zeroed a dead one), up to the ceiling; *pinned gets their
 * bytes below it. TLAB tails and gaps are not counted. */
static uintptr_t limit_for(size_t bytes, size_t *pinned)
{
    uintptr_t end = lull_nursery_start + bytes, ceiling = lull_nursery_start + lull_nursery_ceiling();
    *pinned = 0;
    for (size_t i = 0; i < nursery_g.nexcls && nursery_g.excls[i].start < end && end < ceiling; i++) {
        const excl *x = &nursery_g.excls[i];
        if (x->tail || x->gap)
            continue;
        /* end lies past every excluded range that starts below it. */
        *pinned += x->end - x->start;
        end += x->end - x->start;
    }
    if (end >= ceiling) {
        /* What lies beyond the ceiling is not below the limit. */
        end = ceiling;
        *pinned = 0;
        for (size_t i = 0; i < nursery_g.nexcls && nursery_g.excls[i].start < end; i++)
            if (!nursery_g.excls[i].tail && !nursery_g.excls[i].gap)
                *pinned += (nursery_g.excls[i].end < end ? nursery_g.excls[i].end : end) - nursery_g.excls[i].start;
    }
    return end;
}

/* Shrink to `limit` now: the fragments beyond it are dropped (their memory
 * is not logged, so nothing walks it), or kept as spare. */
static void shrink_to(uintptr_t limit, bool spare)
{
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
}

/* Pinned objects count against the limit, not the size: a nursery the
 * target made small and pinned objects filled would otherwise leave no
 * room at all, and every allocation would run a minor that frees nothing. */
void lull_nursery_resize(size_t bytes)
{
    bytes &= ~(LULL_TLAB_SIZE - 1);
    if (bytes < LULL_TLAB_SIZE)
        bytes = LULL_TLAB_SIZE;
    if (bytes > lull_nursery_ceiling())
        bytes = lull_nursery_ceiling();
    size_t pinned;
    nursery_lock();
    uintptr_t limit = limit_for(bytes, &pinned);
    size_t extent = limit - lull_nursery_start;
    __atomic_store_n(&nursery_g.room, pinned < extent ? extent - pinned : 0, __ATOMIC_RELAXED);
    bool spare = lull_cfg.promotion_age == 1;
    if (limit < nursery_g.limit)
        shrink_to(limit, spare);
    else if (limit > nursery_g.limit && spare)
        spare_grow(limit);
    if (limit != nursery_g.limit)
        LULL_PROBE2(nursery_resized, nursery_g.limit - lull_nursery_start, limit - lull_nursery_start);
    /* With aging, growth takes effect when the next minor rebuilds the
     * fragments. */
    __atomic_store_n(&nursery_g.limit, limit, __ATOMIC_RELAXED);
    nursery_unlock();
}
