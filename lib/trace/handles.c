/* handles.c — GC handles: one lock-free table per kind (the design of
 * Mono 4.4's handles, in our words).
 *
 * A table is up to NBUCKETS buckets, bucket b holding BUCKET0 << b slots,
 * so slot i lives at a fixed place for ever: buckets are installed with a
 * compare-and-swap on the bucket pointer (a thread that loses unmaps the
 * bucket it made), never moved or freed before lull_shutdown.
 *
 * A slot is one 64-bit word:
 *
 *   bit 0       OCCUPIED: the handle is allocated
 *   bits 4..57  the target's address (objects are 16-byte aligned; 0: NULL)
 *   bits 58..62 the slot's generation, advanced by every free
 *
 * A handle is a 32-bit value: kind (2 bits), the generation of the slot
 * when it was handed out (5 bits), index + 1 (25 bits; so 0 is never a
 * handle). Using a handle whose generation no longer matches, or whose
 * slot is free, is detected as misuse.
 *
 * new  claims the first slot at or after the thread's hint (where_to_look) whose OCCUPIED
 *      bit is clear, with a CAS from the free word it read (a failed CAS
 *      tries the next slot), after raising `high` over it; past the last
 *      installed bucket it installs the next one.
 * set  CAS from the word read to the same word with the new target.
 * free CAS to a free word of the next generation.
 * get  one acquire load, masked, in a critical region (base/registry.h): a
 *      thread is never stopped holding only the tagged word.
 *
 * The collector (world stopped) visits only slots that may be occupied.
 * Slots come in chunks of CHUNK (a bucket holds a whole number of them),
 * each with a count of its claimed slots on a cache line of its own (after
 * the bucket's slots), and chunks in groups of GROUP, each with a flag
 * "some chunk of mine may be in use". Invariants, whenever the world is
 * stopped:
 *
 *   a chunk's count >= the occupied slots in it: new adds 1 before its CAS
 *     (and takes it back when the CAS fails), free takes 1 after its CAS;
 *   a group's flag is set if any of its chunks has a count > 0: new sets
 *     it after raising the count and before its CAS (a store only when it
 *     reads it clear, so threads do not write a shared line on every new),
 *     and only the collector clears it, with the world stopped, once it
 *     found every count of the group 0.
 *
 * So a pass reads one flag per GROUP slots up to `high` (one past the
 * highest slot ever claimed), one count per CHUNK slots of a flagged group,
 * and the slots of chunks with a claimed slot: a table that once held a
 * million weak handles and now holds three reads 64 flags, 64 counts and
 * 256 slots per pass, not a million slots; a table with none, 64 flags.
 * Memory orders: claiming and setting are release (a get that reads the
 * target with acquire sees its initialised contents); the bucket pointer
 * is published with release and read with acquire; the counts and flags
 * are relaxed (the collector reads them after the stop handshake, which
 * orders every stopped thread's earlier stores before its reads). */
#include "trace/handles.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/config.h"
#include "base/gclock.h"
#include "space/heap.h"
#include "base/os.h"
#include "base/probes.h"
#include "base/registry.h"
#include "base/util.h"

#define BUCKET0_SHIFT 10u
#define BUCKET0       ((uint32_t)1 << BUCKET0_SHIFT)
#define NBUCKETS      16u        /* BUCKET0 * (2^16 - 1) slots > LULL_HANDLE_MAX */

#define CHUNK_SHIFT   8u
#define CHUNK         ((uint32_t)1 << CHUNK_SHIFT)    /* slots per counted chunk (a bucket holds >= 4) */
#define COUNT_STRIDE  64u                            /* bytes per chunk count: a cache line each */
#define GROUP_SHIFT   6u
#define GROUP         ((uint32_t)1 << GROUP_SHIFT)    /* chunks per flag */
#define NGROUPS       ((((BUCKET0 << NBUCKETS) - BUCKET0) >> CHUNK_SHIFT >> GROUP_SHIFT) + 1)
_Static_assert(BUCKET0 % CHUNK == 0, "a bucket holds whole chunks");

#define SLOT_OCCUPIED ((uint64_t)1)
#define SLOT_GEN_SHIFT 58u
#define SLOT_GEN_MASK  ((uint64_t)31 << SLOT_GEN_SHIFT)
#define SLOT_PTR_MASK  ((((uint64_t)1 << SLOT_GEN_SHIFT) - 1) & ~(uint64_t)15)

#define H_KIND_BITS 2u
#define H_GEN_BITS  5u
#define H_IDX_SHIFT (H_KIND_BITS + H_GEN_BITS)

typedef struct table {
    _Atomic(_Atomic uint64_t *) bucket[NBUCKETS];
    atomic_uint high;            /* one past the highest slot ever claimed */
    atomic_uint regions;         /* regions handed to threads so far (where_to_look) */
    atomic_uchar used[NGROUPS];  /* per group of chunks: may hold a claimed slot */
    uint64_t slots_read;         /* by the collector's walks (world stopped), for tests and the log */
} table;

/* The four tables (global): memory of buckets installed by any thread,
 * released at lull_shutdown. */
static table handles_g[4];

static const char *const kind_names[4] = { "WEAK", "WEAK_TRACK", "NORMAL", "PINNED" };

static inline uint32_t bucket_of(uint32_t idx, uint32_t *off)
{
    uint32_t j = idx + BUCKET0;
    uint32_t b = 31u - (uint32_t)__builtin_clz(j) - BUCKET0_SHIFT;
    *off = j - (BUCKET0 << b);
    return b;
}

/* A bucket's memory: its slots, then one count per chunk of them. */
static inline size_t bucket_bytes(uint32_t b)
{
    size_t n = (size_t)BUCKET0 << b;
    return n * sizeof(uint64_t) + (n >> CHUNK_SHIFT) * COUNT_STRIDE;
}

/* The count of the chunk that slot `off` of bucket bk (bucket b) lies in. */
static inline atomic_uint *chunk_count(_Atomic uint64_t *bk, uint32_t b, uint32_t off)
{
    char *counts = (char *)(bk + ((size_t)BUCKET0 << b));
    return (atomic_uint *)(counts + (size_t)(off >> CHUNK_SHIFT) * COUNT_STRIDE);
}

void lull_handles_init(void)
{
    for (unsigned k = 0; k < 4; k++) {
        for (unsigned b = 0; b < NBUCKETS; b++)
            atomic_store_explicit(&handles_g[k].bucket[b], NULL, memory_order_relaxed);
        atomic_store_explicit(&handles_g[k].high, 0, memory_order_relaxed);
        atomic_store_explicit(&handles_g[k].regions, 0, memory_order_relaxed);
        for (unsigned g = 0; g < NGROUPS; g++)
            atomic_store_explicit(&handles_g[k].used[g], 0, memory_order_relaxed);
        handles_g[k].slots_read = 0;
    }
}

void lull_handles_fini(void)
{
    for (unsigned k = 0; k < 4; k++)
        for (unsigned b = 0; b < NBUCKETS; b++) {
            _Atomic uint64_t *p = atomic_load_explicit(&handles_g[k].bucket[b], memory_order_acquire);
            if (p)
                lull_os_unreserve((void *)p, bucket_bytes(b));
            atomic_store_explicit(&handles_g[k].bucket[b], NULL, memory_order_relaxed);
        }
}

/* Bucket b of table t, installed if absent. NULL: no memory. */
static _Atomic uint64_t *bucket_get(table *t, uint32_t b)
{
    _Atomic uint64_t *p = atomic_load_explicit(&t->bucket[b], memory_order_acquire);
    if (p)
        return p;
    _Atomic uint64_t *mine = lull_os_reserve_rw(bucket_bytes(b));   /* reads as zero: free, generation 0 */
    if (!mine)
        return NULL;
    _Atomic uint64_t *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(&t->bucket[b], &expected, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    lull_os_unreserve((void *)mine, bucket_bytes(b));   /* another thread installed it first */
    return expected;
}

/* ---- the API ---- */

static void check_caller(const char *fn)
{
    if (LULL_UNLIKELY(!lull_thread_self)) {
        if (!lull_is_initialised())
            lull_fatal(fn, "lull is not initialised (call lull_init first)");
        lull_fatal(fn, "the calling thread is not attached (call lull_thread_attach first)");
    }
}

static uint64_t target_bits(const char *fn, void *obj)
{
    uintptr_t a = (uintptr_t)obj;
    if (a && !lull_object_plausible(obj))
        lull_fatal(fn, "%p is not the start of a heap object", obj);
    return (uint64_t)a;
}

/* The slot a handle names, checked: the kind's table has it, it is
 * occupied, and its generation is the handle's. *word gets its value;
 * *count (if not NULL) the slot's chunk count. */
static _Atomic uint64_t *slot_of(const char *fn, lull_handle h, uint64_t *word, atomic_uint **count)
{
    unsigned kind = h & 3u, gen = (h >> H_KIND_BITS) & 31u;
    uint32_t idx1 = h >> H_IDX_SHIFT;
    table *t = &handles_g[kind];
    if (LULL_UNLIKELY(!idx1 || idx1 - 1 >= atomic_load_explicit(&t->high, memory_order_acquire)))
        lull_fatal(fn, "%#x is not a handle (lull_handle_new never returned it)", (unsigned)h);
    uint32_t off, b = bucket_of(idx1 - 1, &off);
    _Atomic uint64_t *bk = atomic_load_explicit(&t->bucket[b], memory_order_acquire);
    if (LULL_UNLIKELY(!bk))     /* below `high`, in a bucket nobody installed (each_target) */
        lull_fatal(fn, "%#x is not a handle (lull_handle_new never returned it)", (unsigned)h);
    _Atomic uint64_t *s = &bk[off];
    uint64_t w = atomic_load_explicit(s, memory_order_acquire);
    if (LULL_UNLIKELY(!(w & SLOT_OCCUPIED) || ((w & SLOT_GEN_MASK) >> SLOT_GEN_SHIFT) != gen))
        lull_fatal(fn, "handle %#x (%s, slot %u) was freed (or is a made-up value)", (unsigned)h,
                   kind_names[kind], idx1 - 1);
    *word = w;
    if (count)
        *count = chunk_count(bk, b, off);
    return s;
}

/* Where a thread's new starts looking: after the slot it last claimed, or
 * at the lowest slot it freed since (lull_thread.handle_hint, slot + 1; 0
 * before its first use). A thread's first use gets a region of its own,
 * the next of REGIONS regions of REGION slots in turn: threads claim and
 * free slots in cache lines of their own, so the only shared word their
 * new and free write is the slot itself (a shared hint written by every
 * call made four threads slower than one). Free slots behind a thread's
 * hint that it did not free itself are found by the threads whose
 * regions they lie in, or by a later thread handed that region again. */
#define REGION  256u
#define REGIONS 64u

static uint32_t where_to_look(table *t, lull_thread *self, unsigned kind)
{
    uint32_t h = self->handle_hint[kind];
    if (h)
        return h - 1;
    uint32_t r = atomic_fetch_add_explicit(&t->regions, 1, memory_order_relaxed) % REGIONS;
    self->handle_region[kind] = r + 1;
    return r * REGION;
}

/* Claim the first free slot of [from, to) for `target`; 0 if none (or no
 * memory for a bucket), else the handle. */
static lull_handle claim_in(table *t, lull_thread *self, unsigned kind, uint64_t target, uint32_t from, uint32_t to)
{
    if (to > LULL_HANDLE_MAX - 1)
        to = LULL_HANDLE_MAX - 1;
    uint32_t idx = from;
    while (idx < to) {
        uint32_t off, b = bucket_of(idx, &off);
        _Atomic uint64_t *bk = bucket_get(t, b);
        if (!bk)
            return 0;
        uint32_t n = BUCKET0 << b;
        for (; off < n && idx < to; off++, idx++) {
            uint64_t w = atomic_load_explicit(&bk[off], memory_order_relaxed);
            if (w & SLOT_OCCUPIED)
                continue;
            /* `high`, the chunk's count and its group's flag cover the
             * slot before it can hold the target: a collection that stops
             * this thread right after the CAS, with obj no longer in any
             * register, must still visit the slot (the file comment). */
            uint32_t hi = atomic_load_explicit(&t->high, memory_order_relaxed);
            while (hi <= idx && !atomic_compare_exchange_weak_explicit(&t->high, &hi, idx + 1, memory_order_release,
                                                                       memory_order_relaxed))
                ;
            atomic_uint *count = chunk_count(bk, b, off);
            atomic_fetch_add_explicit(count, 1, memory_order_relaxed);
            atomic_uchar *used = &t->used[idx >> CHUNK_SHIFT >> GROUP_SHIFT];
            if (!atomic_load_explicit(used, memory_order_relaxed))
                atomic_store_explicit(used, 1, memory_order_relaxed);
            if (!atomic_compare_exchange_strong_explicit(&bk[off], &w, (w & SLOT_GEN_MASK) | target | SLOT_OCCUPIED,
                                                         memory_order_release, memory_order_relaxed)) {
                atomic_fetch_sub_explicit(count, 1, memory_order_relaxed);
                continue;     /* claimed (or freed and claimed) meanwhile: the next one */
            }
            self->handle_hint[kind] = idx + 2;     /* look after this one next */
            unsigned gen = (unsigned)((w & SLOT_GEN_MASK) >> SLOT_GEN_SHIFT);
            return (lull_handle)(((idx + 1) << H_IDX_SHIFT) | (gen << H_KIND_BITS) | (unsigned)kind);
        }
    }
    return 0;
}

lull_handle lull_handle_new(void *obj, enum lull_handle_kind kind)
{
    check_caller("lull_handle_new");
    if ((unsigned)kind > LULL_HANDLE_PINNED)
        lull_fatal("lull_handle_new", "unknown handle kind %d", (int)kind);
    uint64_t target = target_bits("lull_handle_new", obj);
    table *t = &handles_g[kind];
    lull_thread *self = lull_thread_self;
    /* From the thread's hint to the end of the part of the table in use
     * (or of the thread's own region, while the hint is in it); then,
     * before the table grows past that, from the start: a thread whose
     * handles other threads free (a producer) comes back to the slots they
     * freed instead of walking on for ever. Slots past `high` were never
     * used. A look from the start that finds nothing is not repeated
     * until the used part has doubled: without that, filling a table
     * whose slots nobody frees walked all of it on every new (quadratic;
     * the handles test's table case timed out under ThreadSanitizer).
     * The walks that fail cost at most twice the table's size in all, and
     * a thread whose handles others free lets the table grow to at most
     * twice the slots in use before it looks behind its hint again. */
    uint32_t start = where_to_look(t, self, kind);
    uint32_t high = atomic_load_explicit(&t->high, memory_order_relaxed);
    uint32_t own = (self->handle_region[kind] - 1) * REGION, end = high;
    if (self->handle_region[kind] && start >= own && start < own + REGION && own + REGION > end)
        end = own + REGION;
    lull_handle h = claim_in(t, self, kind, target, start, end);
    if (!h && start && high >= self->handle_rescan[kind]) {
        h = claim_in(t, self, kind, target, 0, start);
        if (!h)
            self->handle_rescan[kind] = high > UINT32_MAX / 2 ? UINT32_MAX : 2 * high;
    }
    if (!h)
        h = claim_in(t, self, kind, target, end, LULL_HANDLE_MAX - 1);
    if (!h)
        errno = ENOMEM;
    return h;
}

void *lull_handle_get(lull_handle h)
{
    check_caller("lull_handle_get");
    /* The slot word carries the generation in its high bits: as loaded, it
     * is no address the conservative scan recognises. A thread stopped
     * between the load and the masking would hold its target only in that
     * form: a minor would move the target (the slot is updated, the
     * register is not) and a mark would leave it white, and the caller
     * would get a stale or a freed object (stress_handles found this).
     * The critical region defers a stop until the plain pointer exists;
     * the asm keeps the compiler from recomputing it from the word after
     * the region, where the thread may stop. */
    lull_thread *self = lull_thread_self;
    lull_enter_critical(self);
    uint64_t w;
    slot_of("lull_handle_get", h, &w, NULL);
    void *p = (void *)(uintptr_t)(w & SLOT_PTR_MASK);
    __asm__ __volatile__("" : "+r"(p));
    lull_exit_critical(self);
    return p;
}

void lull_handle_set(lull_handle h, void *obj)
{
    check_caller("lull_handle_set");
    uint64_t target = target_bits("lull_handle_set", obj), w;
    _Atomic uint64_t *s = slot_of("lull_handle_set", h, &w, NULL);
    /* A failed CAS: a collection moved or cleared the old target meanwhile
     * (this thread was stopped); the handle is still ours. */
    while (!atomic_compare_exchange_weak_explicit(s, &w, (w & ~SLOT_PTR_MASK) | target, memory_order_release,
                                                  memory_order_relaxed))
        if (!(w & SLOT_OCCUPIED))
            lull_fatal("lull_handle_set", "handle %#x was freed while being set", (unsigned)h);
}

void lull_handle_free(lull_handle h)
{
    check_caller("lull_handle_free");
    uint64_t w;
    atomic_uint *count;
    _Atomic uint64_t *s = slot_of("lull_handle_free", h, &w, &count);
    for (;;) {
        uint64_t next_gen = (((w & SLOT_GEN_MASK) >> SLOT_GEN_SHIFT) + 1) & 31u;
        if (atomic_compare_exchange_weak_explicit(s, &w, next_gen << SLOT_GEN_SHIFT, memory_order_release,
                                                  memory_order_relaxed))
            break;
        if (!(w & SLOT_OCCUPIED))
            lull_fatal("lull_handle_free", "handle %#x was freed twice at once", (unsigned)h);
    }
    atomic_fetch_sub_explicit(count, 1, memory_order_relaxed);   /* after the CAS (the file comment) */
    /* This thread's next new looks here first (where_to_look). */
    lull_thread *self = lull_thread_self;
    uint32_t idx = (h >> H_IDX_SHIFT) - 1, cur = self->handle_hint[h & 3u];
    if (!cur || idx + 1 < cur)
        self->handle_hint[h & 3u] = idx + 1;
}

/* ---- the collector's side (world stopped) ---- */

/* fn(slot, target, ctx) for every occupied slot of kind with a target,
 * visiting only flagged groups and chunks with a count (the file comment);
 * a group whose counts are all 0 loses its flag. World stopped. */
static void each_target(unsigned kind, void (*fn)(_Atomic uint64_t *slot, uint64_t w, void *ctx), void *ctx)
{
    table *t = &handles_g[kind];
    uint32_t high = atomic_load_explicit(&t->high, memory_order_acquire);
    uint32_t nchunks = (high + CHUNK - 1) >> CHUNK_SHIFT;
    for (uint32_t g = 0; g << GROUP_SHIFT < nchunks; g++) {
        if (!atomic_load_explicit(&t->used[g], memory_order_relaxed))
            continue;
        bool any = false;
        uint32_t last = (g + 1) << GROUP_SHIFT < nchunks ? (g + 1) << GROUP_SHIFT : nchunks;
        for (uint32_t c = g << GROUP_SHIFT; c < last; c++) {
            uint32_t off, b = bucket_of(c << CHUNK_SHIFT, &off);
            _Atomic uint64_t *bk = atomic_load_explicit(&t->bucket[b], memory_order_acquire);
            /* A bucket below `high` may not be installed yet: the thread
             * whose region lies in it has not claimed there (it is still
             * mapping it, or the mapping failed) while a thread with a
             * region further on raised `high` past it. No slot of it can
             * hold a handle. */
            if (!bk || !atomic_load_explicit(chunk_count(bk, b, off), memory_order_relaxed))
                continue;
            any = true;
            uint32_t n = high - (c << CHUNK_SHIFT) < CHUNK ? high - (c << CHUNK_SHIFT) : CHUNK;
            t->slots_read += n;
            for (uint32_t i = off; i < off + n; i++) {
                uint64_t w = atomic_load_explicit(&bk[i], memory_order_relaxed);
                if ((w & SLOT_OCCUPIED) && (w & SLOT_PTR_MASK))
                    fn(&bk[i], w, ctx);
            }
        }
        if (!any)
            atomic_store_explicit(&t->used[g], 0, memory_order_relaxed);
    }
}

uint64_t lull_handles_slots_read(enum lull_handle_kind kind)
{
    return handles_g[kind].slots_read;
}

typedef struct root_ctx {
    lull_range_fn conservative;
    lull_slot_fn precise;
    void *ctx;
} root_ctx;

static void normal_root(_Atomic uint64_t *slot, uint64_t w, void *ctx)
{
    root_ctx *r = ctx;
    void *p = (void *)(uintptr_t)(w & SLOT_PTR_MASK);
    r->precise(&p, r->ctx);
    if ((uint64_t)(uintptr_t)p != (w & SLOT_PTR_MASK))
        atomic_store_explicit(slot, (w & ~SLOT_PTR_MASK) | (uint64_t)(uintptr_t)p, memory_order_relaxed);
}

static void pinned_root(_Atomic uint64_t *slot, uint64_t w, void *ctx)
{
    (void)slot;
    root_ctx *r = ctx;
    uintptr_t word = (uintptr_t)(w & SLOT_PTR_MASK);
    r->conservative((uintptr_t)&word, (uintptr_t)(&word + 1), r->ctx);
    __asm__ __volatile__("" : : "r"(&word) : "memory");
}

void lull_handles_scan_roots(lull_range_fn conservative, lull_slot_fn precise, void *ctx)
{
    root_ctx r = { conservative, precise, ctx };
    if (precise)
        each_target(LULL_HANDLE_NORMAL, normal_root, &r);
    if (conservative)
        each_target(LULL_HANDLE_PINNED, pinned_root, &r);
}

typedef struct weak_ctx {
    lull_fate_fn fate;
    void *ctx;
    uint64_t cleared;
} weak_ctx;

static void weak_slot(_Atomic uint64_t *slot, uint64_t w, void *ctx)
{
    weak_ctx *k = ctx;
    uintptr_t old = (uintptr_t)(w & SLOT_PTR_MASK), now = k->fate(old, k->ctx);
    if (now == old)
        return;
    k->cleared += !now;
    atomic_store_explicit(slot, (w & ~SLOT_PTR_MASK) | (uint64_t)now, memory_order_relaxed);
}

uint64_t lull_handles_weak_pass(enum lull_handle_kind kind, lull_fate_fn fate, void *ctx)
{
    LULL_ASSERT(kind == LULL_HANDLE_WEAK || kind == LULL_HANDLE_WEAK_TRACK);
    weak_ctx k = { fate, ctx, 0 };
    each_target(kind, weak_slot, &k);
    if (k.cleared)
        LULL_PROBE2(weak_cleared, (int)kind, k.cleared);
    return k.cleared;
}

typedef struct each_ctx {
    void (*fn)(uintptr_t target, void *ctx);
    void *ctx;
} each_ctx;

static void each_weak(_Atomic uint64_t *slot, uint64_t w, void *ctx)
{
    (void)slot;
    each_ctx *e = ctx;
    e->fn((uintptr_t)(w & SLOT_PTR_MASK), e->ctx);
}

void lull_handles_each_weak(void (*fn)(uintptr_t target, void *ctx), void *ctx)
{
    each_ctx e = { fn, ctx };
    each_target(LULL_HANDLE_WEAK, each_weak, &e);
    each_target(LULL_HANDLE_WEAK_TRACK, each_weak, &e);
}
