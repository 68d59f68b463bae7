/* los.c — the large-object space: objects bigger than the largest size
 * class get a run of whole blocks of their own, and the list of the young
 * ones (heap.h). They never move. A dead large object's run goes back to
 * the block space, which keeps it resident for the next large object or
 * block (blocks.c); the decay gives it back to the OS later.
 *
 * Callers: allocation (gc lock held), the major's sweep and the end of a
 * minor (world stopped); lull_young_large_at and the barrier read the
 * young range without the lock. A thread's reserve (registry.h) is
 * refilled under the gc lock and carved by its owner without it, inside
 * a critical region: the carve writes only its reserve's descriptors, and
 * pushes onto the young list and counts with atomics. The young range
 * covers every reserve, so a carved object is inside it from birth: a
 * minor adds the reserves back after it rebuilds the range. A major's
 * first pause takes them back, so that none outlives a cycle (a run
 * given back is free from then on, for the decay as for allocation).
 *
 * Invariants: the head block's descriptor holds the object's size and
 * each tail block points to the head (lull_large_head), so an interior
 * pointer anywhere in the run finds the object; every young large object
 * lies in [lull_los_young_lo, lull_los_young_hi). */
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "base/config.h"
#include "base/gclock.h"
#include "base/util.h"
#include "space/heap.h"
#include "space/meter.h"
#include "space/nursery.h"

/* The young large objects (heap.h), linked through their head
 * descriptors' `next`: pushed with compare-and-swap by allocation (gc
 * lock) and carving (no lock); emptied and rebuilt only by a minor, with
 * the world stopped, so a reader that loads the head with acquire may
 * walk the links. nyoung is claimed before a push (young_claim), so the
 * list never holds more than LULL_LOS_MAX_YOUNG. */
static struct {
    uint32_t young_head;
    uint32_t nyoung;
    uint64_t young_new_bytes;   /* of those allocated since the last minor */
    uint64_t survived;          /* bytes of the pointer-free ones the last minor reached */
} los_g = { .young_head = LULL_NO_BLOCK };

/* Set by fork's prepare handler while it waits for the large objects
 * being published (lull_los_wait_published): a carve that sees it takes
 * the locked path, whose gc lock the handler holds. */
static atomic_bool carving_blocked;

/* A thread's reserve: its first refill takes RESERVE_FIRST blocks, each
 * refill before the next minor asks for twice the last, at most
 * RESERVE_MAX, in up to LULL_LOS_RUNS runs; objects of up to CARVE_MAX
 * blocks are carved from it. */
#define RESERVE_FIRST 4u
#define RESERVE_MAX   32u
#define CARVE_MAX     16u

/* The address range the young large objects lie in ([lo, hi), empty when
 * there is none): a minor's slot test against it spares most slots a
 * descriptor lookup. Written under the gc lock, read by a minor's tracers. */
uintptr_t lull_los_young_lo, lull_los_young_hi;

/* Large objects handed out whose header is not written yet (heap.h:
 * lull_los_published): raised under the gc lock, lowered by their
 * threads without it. */
static atomic_uint unpublished;

/* The same range for the write barrier (lull.h), which reads it without
 * the lock. Between minors it only grows (a minor rebuilds it with the
 * world stopped): its start is lowered or its end raised, a store each,
 * so a barrier that reads one bound old and one new still gets a range
 * that holds every young large object but the newest; and the thread that
 * stores the newest got its address from the one that allocated it, which
 * wrote both bounds first (x86-64 keeps stores in order). From empty
 * (0, 0) a half-read range is [lo, 0) (unsigned: every address) or
 * [0, hi): more cards, never fewer. */
static void publish_young(void)
{
    __atomic_store_n(&lull__barrier.large_start, lull_los_young_lo, __ATOMIC_RELAXED);
    __atomic_store_n(&lull__barrier.large_end, lull_los_young_hi, __ATOMIC_RELAXED);
}

/* No young large object (the range is empty; not yet published). World
 * stopped, or lull_init. */
static void young_clear(void)
{
    __atomic_store_n(&los_g.young_head, LULL_NO_BLOCK, __ATOMIC_RELAXED);
    __atomic_store_n(&los_g.nyoung, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&los_g.young_new_bytes, 0, __ATOMIC_RELAXED);
    lull_los_young_lo = lull_los_young_hi = 0;
}

/* Widen the young range to hold [lo, hi) (gc lock held, or the world
 * stopped); publish_young makes it the barrier's. */
static void range_add(uintptr_t lo, uintptr_t hi)
{
    if (lull_los_young_lo == lull_los_young_hi) {
        lull_los_young_lo = lo;
        lull_los_young_hi = hi;
        return;
    }
    if (lo < lull_los_young_lo)
        lull_los_young_lo = lo;
    if (hi > lull_los_young_hi)
        lull_los_young_hi = hi;
}

/* A place on the young list, or false when it is full. */
static bool young_claim(void)
{
    if (__atomic_fetch_add(&los_g.nyoung, 1, __ATOMIC_RELAXED) < LULL_LOS_MAX_YOUNG)
        return true;
    __atomic_fetch_sub(&los_g.nyoung, 1, __ATOMIC_RELAXED);
    return false;
}

/* Push the head block idx (its fields set; claimed) onto the young list. */
static void young_push(uint32_t idx)
{
    lull_block *b = &lull_heap_g.blocks[idx];
    uint32_t head = __atomic_load_n(&los_g.young_head, __ATOMIC_RELAXED);
    do
        b->next = head;
    while (!__atomic_compare_exchange_n(&los_g.young_head, &head, idx, true, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

void lull_los_init(void)
{
    young_clear();
    los_g.survived = 0;
    publish_young();
}

uint64_t lull_los_young_bytes(void)
{
    return __atomic_load_n(&los_g.young_new_bytes, __ATOMIC_RELAXED);
}

uint64_t lull_los_survived_bytes(void)
{
    return los_g.survived;
}

/* Put the large object at block idx (its size set; a place claimed) on
 * the young list, having seen `seen` minors (1 when new); gc lock held or
 * the world stopped. */
static void young_add(uint32_t idx, uint32_t seen)
{
    lull_block *b = &lull_heap_g.blocks[idx];
    uintptr_t obj = lull_block_addr(idx);
    __atomic_store_n(&b->young, seen << 1, __ATOMIC_RELAXED);
    young_push(idx);
    range_add(obj, obj + b->large_size);
    publish_young();
}

/* Format blocks [idx, idx + n) as the run of a large object of `bytes`:
 * each state after the fields it gives meaning to (heap.h), the tails
 * first; young (one minor seen) or old. */
static void format_run(uint32_t idx, uint32_t n, size_t bytes, bool young)
{
    lull_block *head = &lull_heap_g.blocks[idx];
    head->run_len = n;
    head->large_size = bytes;
    for (uint32_t k = 1; k < n; k++) {
        lull_block *t = &lull_heap_g.blocks[idx + k];
        t->run_head = idx;
        lull_block_set_state(t, LULL_BLOCK_LARGE_TAIL);
    }
    head->mark_holds = 0;
    __atomic_store_n(&head->young, young ? 1u << 1 : 0, __ATOMIC_RELAXED);
    lull_block_set_state(head, LULL_BLOCK_LARGE_HEAD);
}

static uint32_t blocks_for(size_t bytes)
{
    size_t nb = (bytes + LULL_BLOCK_SIZE - 1) >> LULL_BLOCK_SHIFT;
    return nb > UINT32_MAX / 2 ? 0 : (uint32_t)nb;
}

void *lull_los_alloc(size_t bytes, bool *dirty_out)
{
    uint32_t n = blocks_for(bytes);
    if (!n)
        return NULL;
    uint32_t idx = lull_space_alloc_any(n, dirty_out);
    if (idx == LULL_NO_BLOCK)
        return NULL;
    /* A reused run holds old bytes: the caller zeroes it, outside the gc
     * lock (heap.h); a clean one reads as zero already. Born young, it
     * enters the major heap's allocation only if a minor makes it old
     * (lull_los_end_minor); born old, now. */
    bool young = young_claim();
    format_run(idx, n, bytes, young);
    if (young) {
        young_add(idx, 1);
        __atomic_fetch_add(&los_g.young_new_bytes, bytes, __ATOMIC_RELAXED);
    } else {
        lull_meter_allocated(bytes);
    }
    atomic_fetch_add_explicit(&unpublished, 1, memory_order_relaxed);
    return (void *)lull_block_addr(idx);
}

bool lull_los_carves(size_t bytes)
{
    uint32_t n = blocks_for(bytes);
    return n && n <= CARVE_MAX;
}

void *lull_los_carve(lull_los_reserve *r, size_t bytes, bool *dirty_out)
{
    uint32_t n = blocks_for(bytes), i = 0;
    while (i < r->nruns && r->end[i] - r->next[i] < n)
        i++;
    if (i == r->nruns || !young_claim())
        return NULL;
    /* Counted before the flag is read, as fork's handler sets the flag
     * before it reads the count: one of the two sees the other. */
    atomic_fetch_add_explicit(&unpublished, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&carving_blocked, memory_order_seq_cst)) {
        atomic_fetch_sub_explicit(&unpublished, 1, memory_order_release);
        __atomic_fetch_sub(&los_g.nyoung, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    uint32_t idx = r->next[i];
    r->next[i] += n;
    format_run(idx, n, bytes, true);
    young_push(idx);
    __atomic_fetch_add(&los_g.young_new_bytes, bytes, __ATOMIC_RELAXED);
    *dirty_out = (r->dirty >> i) & 1;
    if (!*dirty_out)
        lull_space_count_cold(n);   /* touched from now on (heap.h) */
    return (void *)lull_block_addr(idx);
}

/* Take a run of at least n and at most `want` blocks into the reserve as
 * its next run; false if none (dirty_only: no resident one). */
static bool reserve_take(lull_los_reserve *r, uint32_t n, uint32_t want, bool dirty_only, uint32_t *got)
{
    bool dirty = false;
    uint32_t idx = lull_space_alloc_upto(n, want, dirty_only, got, &dirty);
    if (idx == LULL_NO_BLOCK)
        return false;
    for (uint32_t k = 0; k < *got; k++)
        lull_block_set_state(&lull_heap_g.blocks[idx + k], LULL_BLOCK_RESERVED);
    r->next[r->nruns] = idx;
    r->end[r->nruns] = idx + *got;
    r->dirty |= (uint32_t)dirty << r->nruns;
    r->nruns++;
    range_add(lull_block_addr(idx), lull_block_addr(idx + *got));
    return true;
}

bool lull_los_refill(lull_los_reserve *r, size_t bytes)
{
    uint32_t n = blocks_for(bytes);
    lull_los_reserve_return(r, false);
    uint32_t want = r->last ? 2 * r->last : RESERVE_FIRST, got = 0, total;
    if (want > RESERVE_MAX)
        want = RESERVE_MAX;
    r->last = want;   /* what it asked for: short runs do not stop the doubling */
    if (!reserve_take(r, n, want, false, &got))
        return false;
    /* Resident memory comes in the runs the program freed, often shorter
     * than `want`: more of them, up to LULL_LOS_RUNS, each holding an
     * object of n blocks, so that one refill serves as many carves. */
    for (total = got; (r->dirty & 1) && total < want && r->nruns < LULL_LOS_RUNS; total += got)
        if (!reserve_take(r, n, want - total, true, &got))
            break;
    publish_young();
    return true;
}

void lull_los_reserve_return(lull_los_reserve *r, bool forget)
{
    for (uint32_t i = 0; i < r->nruns; i++)
        if (r->next[i] < r->end[i])
            lull_space_give_back(r->next[i], r->end[i] - r->next[i], (r->dirty >> i) & 1);
    r->nruns = 0;
    r->dirty = 0;
    if (forget)
        r->last = 0;
}

void lull_los_reserve_keep(lull_los_reserve *r)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < r->nruns; i++) {
        if (r->next[i] == r->end[i])
            continue;
        r->next[k] = r->next[i];
        r->end[k] = r->end[i];
        r->dirty = (r->dirty & ~(1u << k)) | (((r->dirty >> i) & 1) << k);
        range_add(lull_block_addr(r->next[k]), lull_block_addr(r->end[k]));
        k++;
    }
    r->nruns = k;
    r->dirty &= (1u << k) - 1;
    r->last = 0;
    publish_young();
}

void lull_los_published(void)
{
    atomic_fetch_sub_explicit(&unpublished, 1, memory_order_release);
}

void lull_los_wait_published(void)
{
    atomic_store_explicit(&carving_blocked, true, memory_order_seq_cst);
    while (atomic_load_explicit(&unpublished, memory_order_seq_cst))
        sched_yield();
}

void lull_los_allow_carving(void)
{
    atomic_store_explicit(&carving_blocked, false, memory_order_relaxed);
}

uint64_t lull_los_sweep(void)
{
    /* A synchronous major begins with a minor: no large object is young
     * then. A concurrent major's final pause has none (mark.h): the young
     * ones are the nursery's, roots of that mark, unmarked, kept for the
     * next minor to judge. */
    uint64_t live = 0;
    for (uint32_t i = 0; i < lull_frontier();) {
        lull_block *b = &lull_heap_g.blocks[i];
        if (b->state != LULL_BLOCK_LARGE_HEAD) {
            i++;
            continue;
        }
        uint32_t n = b->run_len;
        uintptr_t obj = lull_block_addr(i);
        if (lull_is_marked(obj)) {
            live += b->large_size;
            lull_mark_clear_blocks(i, 1);
        } else if (!__atomic_load_n(&b->young, __ATOMIC_RELAXED)) {
            lull_space_free_deferred(i, n);
        }
        i += n;
    }
    return live;
}

size_t lull_los_young_list(uintptr_t *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = __atomic_load_n(&los_g.young_head, __ATOMIC_ACQUIRE); i != LULL_NO_BLOCK && n < cap;
         i = lull_heap_g.blocks[i].next)
        out[n++] = lull_block_addr(i);
    return n;
}

bool lull_los_stays_young(uintptr_t obj, bool may_age)
{
    const lull_block *b = lull_block_of(obj);
    uint32_t seen = __atomic_load_n(&b->young, __ATOMIC_RELAXED) >> 1;
    return may_age && seen < LULL_LOS_YOUNG_MINORS && b->large_size <= lull_nursery_ceiling() &&
           !lull_is_marked(obj);
}

uint64_t lull_los_end_minor(bool may_age, void (*drop_slots)(uintptr_t obj))
{
    uint64_t freed = 0;
    uint32_t i = __atomic_load_n(&los_g.young_head, __ATOMIC_RELAXED);
    bool marking = lull_marking();
    young_clear();
    los_g.survived = 0;
    while (i != LULL_NO_BLOCK) {
        lull_block *b = &lull_heap_g.blocks[i];
        uint32_t next = b->next, y = __atomic_load_n(&b->young, __ATOMIC_RELAXED);
        uintptr_t obj = lull_block_addr(i);
        bool reached = y & LULL_LARGE_REACHED;
        bool held = lull_is_marked(obj) || (marking && b->mark_holds);   /* heap.h */
        if (reached && !lull_type_has_refs(lull_header_type(*(const uintptr_t *)obj)))
            los_g.survived += b->large_size;
        if (reached && lull_los_stays_young(obj, may_age) && young_claim()) {
            young_add(i, (y >> 1) + 1);
        } else {
            __atomic_store_n(&b->young, 0, __ATOMIC_RELAXED);
            /* Old from here on: marked while a mark runs (allocate black,
             * mark.h), and handed to the markers to scan, as the minor
             * scanned only its dirty cards (trace/minor.c). */
            if (reached)
                lull_mark_allocated(obj);
            /* Kept unreached (the mark holds it): it is garbage
             * (minor_fate said so to weak handles), kept only because the
             * mark may still scan it. This minor did not forward its
             * slots, so those into the nursery would dangle, and those to
             * young large objects this minor frees or makes old unmarked
             * would dangle after the final pause's sweep. Every slot
             * becomes NULL (drop_slots). One the mark holds unmarked (in
             * slices) becomes old unmarked, for the final pause's sweep. */
            if (!reached && held)
                drop_slots(obj);
            if (reached || held) {
                lull_meter_allocated(b->large_size);   /* the major heap's from here on */
            } else {
                freed += b->large_size;
                lull_space_free_deferred(i, b->run_len);
            }
        }
        i = next;
    }
    publish_young();    /* the empty range if none stays young */
    return freed;
}
