/* blocks.c — the block space: hands out runs of 16 KiB blocks from the
 * reserved range and takes them back.
 *
 * Free runs carry boundary tags (the first block of a run has state FREE
 * and run_len, the last one state FREE and run_head), so a freed run
 * merges with free neighbours of its kind in constant time. A run is
 * dirty (its memory committed, resident and holding old bytes: a freed
 * run stays so) or clean (reads as zero: never touched, or given back to
 * the OS); the two kinds never merge. Each kind is binned by length
 * (exact bins up to 32 blocks, then one per power of two), and allocation
 * takes the best fit among the dirty runs first, then the lowest clean run
 * that fits, then grows the frontier: memory that is already resident is
 * reused before any page is touched afresh. The dirty runs are also on the age list,
 * oldest first, where lull_space_release_dirty finds what has stayed free
 * long enough to go back to the OS; that is the only madvise, done
 * without the gc lock by the background thread (gc/background.c) or
 * lull_release_memory, never in a pause.
 *
 * Invariants (gc lock held for every call but the lock-free readers):
 *   in_use = blocks below the frontier that are neither FREE nor RELEASING;
 *   dirty = blocks in dirty runs; the age list is sorted by freed_ns;
 *   in_use * BLOCK_SIZE <= limit (when max-heap-size is set). */
#include <stdatomic.h>
#include <string.h>

#include "space/heap.h"
#include "base/config.h"
#include "base/gclock.h"
#include "space/nursery.h"
#include "base/os.h"
#include "base/probes.h"
#include "base/util.h"

lull_heap lull_heap_g;

#define COMMIT_CHUNK 64u   /* blocks committed at once when the frontier grows */
#define EXACT_BINS 32u     /* runs of 1..32 blocks: one bin per length */
#define NBINS 64u

/* The block space's bookkeeping: one instance, written with the gc lock
 * held (allocation, the sweep; a parallel minor's promotion refills also
 * hold the nursery's promotion lock); the atomics are also read without
 * it. */
static struct {
    uint32_t bins[2][NBINS];       /* FREE run heads by length; [0] clean, [1] dirty */
    uint64_t nonempty[2];          /* bit b set: bins[k][b] holds a run */
    uint32_t age_head, age_tail;   /* dirty runs, oldest first */
    uint32_t inflight;             /* RELEASING runs a releaser is giving back (next/prev) */
    uint32_t pending;              /* RELEASING runs queued by a pause, newest first */
    _Atomic uint32_t in_use;
    _Atomic uint32_t dirty;        /* blocks in dirty free runs */
    _Atomic uint64_t oldest_dirty_ns;
    _Atomic uint64_t released_bytes, release_calls;
    _Atomic uint64_t cold_blocks;  /* handed out from clean runs or the frontier */
    _Atomic uint64_t warmed_bytes; /* touched ahead by lull_space_warm */
    uint32_t committed;            /* blocks mprotect'ed RW */
    size_t   limit_blocks;         /* 0: no limit */
} space_g;

static void space_reset(void)
{
    for (unsigned k = 0; k < 2; k++) {
        for (unsigned b = 0; b < NBINS; b++)
            space_g.bins[k][b] = LULL_NO_BLOCK;
        space_g.nonempty[k] = 0;
    }
    space_g.age_head = space_g.age_tail = LULL_NO_BLOCK;
    space_g.inflight = space_g.pending = LULL_NO_BLOCK;
    atomic_store(&space_g.in_use, 0);
    atomic_store(&space_g.dirty, 0);
    atomic_store(&space_g.oldest_dirty_ns, 0);
    atomic_store(&space_g.released_bytes, 0);
    atomic_store(&space_g.release_calls, 0);
    atomic_store(&space_g.cold_blocks, 0);
    atomic_store(&space_g.warmed_bytes, 0);
    space_g.committed = 0;
}

/* Stored and read atomically where it is read without the gc lock
 * (lull_space_headroom_bytes, from the memory thread). */
void lull_space_set_limit(size_t bytes)
{
    __atomic_store_n(&space_g.limit_blocks, bytes >> LULL_BLOCK_SHIFT, __ATOMIC_RELAXED);
}

int lull_space_init(size_t reserve)
{
    return lull_space_init_aligned(reserve, LULL_BLOCK_SIZE);
}

int lull_space_init_aligned(size_t reserve, size_t align)
{
    lull_heap *h = &lull_heap_g;
    memset(h, 0, sizeof *h);
    void *base = NULL;
    /* Ask for `reserve`, settle for less on systems that refuse it. */
    while (reserve >= ((size_t)256 << 20)) {
        base = lull_os_reserve(reserve, align < LULL_BLOCK_SIZE ? LULL_BLOCK_SIZE : align);
        if (base)
            break;
        reserve /= 2;
    }
    if (!base)
        return -1;
    h->start = (uintptr_t)base;
    h->reserve = reserve;
    h->nblocks = (uint32_t)(reserve >> LULL_BLOCK_SHIFT);
    h->blocks_bytes = lull_align_up((size_t)h->nblocks * sizeof(lull_block), LULL_PAGE_SIZE);
    h->mark_bytes = lull_align_up(reserve >> (LULL_GRANULE_SHIFT + 3), LULL_PAGE_SIZE);
    h->cards_bytes = lull_align_up(reserve >> LULL_CARD_SHIFT, LULL_PAGE_SIZE);
    h->blocks = lull_os_reserve_rw(h->blocks_bytes);
    h->mark_bits = lull_os_reserve_rw(h->mark_bytes);
    h->cards = lull_os_reserve_rw(h->cards_bytes);
    h->union_cards = lull_os_reserve_rw(h->cards_bytes);
    if (!h->blocks || !h->mark_bits || !h->cards || !h->union_cards) {
        lull_space_fini();
        return -1;
    }
    space_reset();
    return 0;
}

void lull_space_fini(void)
{
    lull_heap *h = &lull_heap_g;
    lull_os_unreserve(h->blocks, h->blocks_bytes);
    lull_os_unreserve(h->mark_bits, h->mark_bytes);
    lull_os_unreserve(h->cards, h->cards_bytes);
    lull_os_unreserve(h->union_cards, h->cards_bytes);
    lull_os_unreserve((void *)h->start, h->reserve);
    memset(h, 0, sizeof *h);
    space_reset();
    space_g.limit_blocks = 0;
}

static lull_block *B(uint32_t i) { return &lull_heap_g.blocks[i]; }

static unsigned bin_of(uint32_t len)
{
    if (len <= EXACT_BINS)
        return len - 1;
    unsigned b = EXACT_BINS + (unsigned)(31 - __builtin_clz(len)) - 5;
    return b < NBINS ? b : NBINS - 1;
}

static void bin_push(uint32_t r)
{
    lull_block *b = B(r);
    unsigned k = b->dirty, bin = bin_of(b->run_len);
    b->prev = LULL_NO_BLOCK;
    b->next = space_g.bins[k][bin];
    if (b->next != LULL_NO_BLOCK)
        B(b->next)->prev = r;
    space_g.bins[k][bin] = r;
    space_g.nonempty[k] |= (uint64_t)1 << bin;
}

static void bin_remove(uint32_t r)
{
    lull_block *b = B(r);
    unsigned k = b->dirty, bin = bin_of(b->run_len);
    if (b->prev != LULL_NO_BLOCK) B(b->prev)->next = b->next;
    else space_g.bins[k][bin] = b->next;
    if (b->next != LULL_NO_BLOCK) B(b->next)->prev = b->prev;
    if (space_g.bins[k][bin] == LULL_NO_BLOCK)
        space_g.nonempty[k] &= ~((uint64_t)1 << bin);
}

/* The age list's head moved: publish when it was freed. */
static void age_publish(void)
{
    uint32_t h = space_g.age_head;
    atomic_store(&space_g.oldest_dirty_ns, h == LULL_NO_BLOCK ? 0 : B(h)->freed_ns);
}

static void age_append(uint32_t r)
{
    lull_block *b = B(r);
    b->age_next = LULL_NO_BLOCK;
    b->age_prev = space_g.age_tail;
    if (space_g.age_tail != LULL_NO_BLOCK) B(space_g.age_tail)->age_next = r;
    else space_g.age_head = r;
    space_g.age_tail = r;
}

static void age_remove(uint32_t r)
{
    lull_block *b = B(r);
    if (b->age_prev != LULL_NO_BLOCK) B(b->age_prev)->age_next = b->age_next;
    else space_g.age_head = b->age_next;
    if (b->age_next != LULL_NO_BLOCK) B(b->age_next)->age_prev = b->age_prev;
    else space_g.age_tail = b->age_prev;
}

/* Make [i, i+n) one free run of its kind (boundary tags set, binned; a
 * dirty one freed now, the newest on the age list). */
static void make_run(uint32_t i, uint32_t n, bool dirty)
{
    for (uint32_t k = 0; k < n; k++) {
        B(i + k)->dirty = dirty;
        lull_block_set_state(B(i + k), LULL_BLOCK_FREE);
    }
    B(i)->run_len = n;
    B(i + n - 1)->run_head = i;
    bin_push(i);
    if (dirty) {
        B(i)->freed_ns = lull_now_ns();   /* under the lock: the age list stays sorted */
        age_append(i);
        atomic_fetch_add(&space_g.dirty, n);
    }
}

/* Take the free run r off every list. */
static void unlink_run(uint32_t r)
{
    bin_remove(r);
    if (B(r)->dirty) {
        age_remove(r);
        atomic_fetch_sub(&space_g.dirty, B(r)->run_len);
    }
}

/* Free [idx, idx+n) as a run of the given kind, merged with the free runs
 * of that kind on either side. */
static void free_run(uint32_t idx, uint32_t n, bool dirty)
{
    /* The states of neighbours are read atomically: one may be the edge
     * of a thread's large-object reserve, which its owner carves without
     * the gc lock (los.c). */
    if (idx > 0 && lull_block_state_acquire(B(idx - 1)) == LULL_BLOCK_FREE) {
        uint32_t head = B(idx - 1)->run_head;
        if (B(head)->dirty == dirty) {
            n += B(head)->run_len;
            unlink_run(head);
            idx = head;
        }
    }
    uint32_t right = idx + n;
    if (right < lull_frontier() && lull_block_state_acquire(B(right)) == LULL_BLOCK_FREE && B(right)->dirty == dirty) {
        n += B(right)->run_len;
        unlink_run(right);
    }
    make_run(idx, n, dirty);
}

/* The free run of kind k that best fits n blocks, or LULL_NO_BLOCK: the
 * exact bin's first run; in a power-of-two bin, the shortest of its first
 * few runs that fit; else the first run of the next bin that has one. */
static uint32_t find_fit(unsigned k, uint32_t n)
{
    unsigned bin = bin_of(n);
    if (n <= EXACT_BINS) {
        if (space_g.bins[k][bin] != LULL_NO_BLOCK)
            return space_g.bins[k][bin];
    } else {
        uint32_t best = LULL_NO_BLOCK, seen = 0;
        for (uint32_t r = space_g.bins[k][bin]; r != LULL_NO_BLOCK && seen++ < 16; r = B(r)->next) {
            uint32_t len = B(r)->run_len;
            if (len >= n && (best == LULL_NO_BLOCK || len < B(best)->run_len))
                best = r;
            if (len == n)
                break;
        }
        if (best != LULL_NO_BLOCK)
            return best;
    }
    uint64_t above = bin + 1 < NBINS ? space_g.nonempty[k] & (~(uint64_t)0 << (bin + 1)) : 0;
    return above ? space_g.bins[k][__builtin_ctzll(above)] : LULL_NO_BLOCK;
}

/* The run at `to` (just split off the front of `from`) takes from's place
 * on the age list. */
static void age_replace(uint32_t from, uint32_t to)
{
    uint32_t prev = B(from)->age_prev, next = B(from)->age_next;
    B(to)->age_prev = prev;
    B(to)->age_next = next;
    if (prev != LULL_NO_BLOCK) B(prev)->age_next = to;
    else space_g.age_head = to;
    if (next != LULL_NO_BLOCK) B(next)->age_prev = to;
    else space_g.age_tail = to;
}

/* The clean run for n blocks: in the lowest bin that has a run that
 * fits, the one at the lowest address (among its first 256 runs), or
 * LULL_NO_BLOCK. Fresh memory is handed out low first and big runs are
 * not cut for small requests, so a heap that shrinks and grows again
 * touches the same range (fewer page-table, side-table and sanitizer
 * shadow pages). */
static uint32_t find_lowest_clean(uint32_t n)
{
    uint64_t bins = space_g.nonempty[0] & (~(uint64_t)0 << bin_of(n));
    while (bins) {
        unsigned b = (unsigned)__builtin_ctzll(bins), seen = 0;
        bins &= bins - 1;
        uint32_t best = LULL_NO_BLOCK;
        for (uint32_t r = space_g.bins[0][b]; r != LULL_NO_BLOCK && seen++ < 256; r = B(r)->next)
            if (B(r)->run_len >= n && r < best)
                best = r;
        if (best != LULL_NO_BLOCK)
            return best;
    }
    return LULL_NO_BLOCK;
}

/* Take n blocks off the front of free run r, or the whole run: the
 * lowest addresses go first, so a heap that shrinks and grows again
 * reuses the same range. The rest keeps r's age and age-list place. */
static uint32_t take_from(uint32_t r, uint32_t n)
{
    uint32_t len = B(r)->run_len, h = r + n;
    if (len == n) {
        unlink_run(r);
        return r;
    }
    bin_remove(r);
    B(h)->run_len = len - n;
    B(r + len - 1)->run_head = h;
    if (B(r)->dirty) {
        B(h)->freed_ns = B(r)->freed_ns;
        age_replace(r, h);
        atomic_fetch_sub(&space_g.dirty, n);
    }
    bin_push(h);
    return r;
}

/* Grow the frontier by n blocks, committing ahead in chunks. */
static uint32_t grow(uint32_t n)
{
    lull_heap *h = &lull_heap_g;
    if ((uint64_t)lull_frontier() + n > h->nblocks)
        return LULL_NO_BLOCK;
    uint32_t idx = lull_frontier(), end = idx + n;
    if (end > space_g.committed) {
        uint32_t want = (end + COMMIT_CHUNK - 1) / COMMIT_CHUNK * COMMIT_CHUNK;
        if (want > h->nblocks)
            want = h->nblocks;
        if (!lull_os_commit((void *)lull_block_addr(space_g.committed), (size_t)(want - space_g.committed) << LULL_BLOCK_SHIFT)) {
            /* Retry the bare minimum before giving up. */
            want = end;
            if (!lull_os_commit((void *)lull_block_addr(space_g.committed), (size_t)(want - space_g.committed) << LULL_BLOCK_SHIFT))
                return LULL_NO_BLOCK;
        }
        LULL_PROBE2(heap_grown, (uint64_t)(want - space_g.committed) << LULL_BLOCK_SHIFT,
                    (uint64_t)want << LULL_BLOCK_SHIFT);
        space_g.committed = want;
    }
    __atomic_store_n(&h->frontier, end, __ATOMIC_RELAXED);
    return idx;
}

uint32_t lull_space_alloc_any(uint32_t n, bool *dirty)
{
    uint32_t got;
    bool warm;
    uint32_t idx = n ? lull_space_alloc_upto(n, n, false, &got, &warm) : LULL_NO_BLOCK;
    if (idx == LULL_NO_BLOCK)
        return LULL_NO_BLOCK;
    if (!warm)
        lull_space_count_cold(n);
    if (dirty)
        *dirty = warm;
    return idx;
}

uint32_t lull_space_alloc_upto(uint32_t n, uint32_t want, bool dirty_only, uint32_t *got, bool *dirty)
{
    if (want < n)
        want = n;
    if (space_g.limit_blocks) {
        if ((size_t)space_g.in_use + n > space_g.limit_blocks)
            return LULL_NO_BLOCK;
        if ((size_t)space_g.in_use + want > space_g.limit_blocks)
            want = (uint32_t)(space_g.limit_blocks - space_g.in_use);
    }
    /* Resident memory first, as much of `want` as one run has; then the
     * lowest clean run or the frontier, for all of it if it can. */
    uint32_t r = find_fit(1, want), len = 0, idx = LULL_NO_BLOCK;
    if (r == LULL_NO_BLOCK && want > n)
        r = find_fit(1, n);
    bool warm = r != LULL_NO_BLOCK;
    if (!warm && dirty_only)
        return LULL_NO_BLOCK;
    if (!warm && (r = find_lowest_clean(want)) == LULL_NO_BLOCK && want > n)
        r = find_lowest_clean(n);
    if (r != LULL_NO_BLOCK) {
        len = B(r)->run_len < want ? B(r)->run_len : want;
        idx = take_from(r, len);
        age_publish();
    } else {
        len = want;
        if ((idx = grow(len)) == LULL_NO_BLOCK && (want == n || (idx = grow(len = n)) == LULL_NO_BLOCK))
            return LULL_NO_BLOCK;
    }
    space_g.in_use += len;
    *got = len;
    *dirty = warm;
    return idx;
}

void lull_space_count_cold(uint32_t n)
{
    atomic_fetch_add_explicit(&space_g.cold_blocks, n, memory_order_relaxed);
}

void lull_space_give_back(uint32_t idx, uint32_t n, bool dirty)
{
    space_g.in_use -= n;
    free_run(idx, n, dirty);
    age_publish();
}

uint32_t lull_space_alloc(uint32_t n)
{
    bool dirty;
    uint32_t idx = lull_space_alloc_any(n, &dirty);
    if (idx != LULL_NO_BLOCK && dirty)
        memset((void *)lull_block_addr(idx), 0, (size_t)n << LULL_BLOCK_SHIFT);
    return idx;
}

void lull_space_free(uint32_t idx, uint32_t n)
{
    lull_space_give_back(idx, n, true);
    LULL_PROBE2(heap_shrunk, (uint64_t)n << LULL_BLOCK_SHIFT, (uint64_t)space_g.in_use << LULL_BLOCK_SHIFT);
}

void lull_space_free_deferred(uint32_t idx, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        lull_block_set_state(B(idx + k), LULL_BLOCK_RELEASING);
    /* Sweeps walk the heap in address order: a run often continues the one
     * queued just before it. */
    if (space_g.pending != LULL_NO_BLOCK && space_g.pending + B(space_g.pending)->run_len == idx) {
        B(space_g.pending)->run_len += n;
        return;
    }
    B(idx)->run_len = n;
    B(idx)->next = space_g.pending;
    space_g.pending = idx;
}

void lull_space_release_pending(void)
{
    while (space_g.pending != LULL_NO_BLOCK) {
        uint32_t idx = space_g.pending, n = B(idx)->run_len;
        space_g.pending = B(idx)->next;
        lull_space_free(idx, n);
    }
}

static void inflight_push(uint32_t r)
{
    B(r)->prev = LULL_NO_BLOCK;
    B(r)->next = space_g.inflight;
    if (space_g.inflight != LULL_NO_BLOCK)
        B(space_g.inflight)->prev = r;
    space_g.inflight = r;
}

static void inflight_remove(uint32_t r)
{
    lull_block *b = B(r);
    if (b->prev != LULL_NO_BLOCK) B(b->prev)->next = b->next;
    else space_g.inflight = b->next;
    if (b->next != LULL_NO_BLOCK) B(b->next)->prev = b->prev;
}

/* Take dirty runs freed at or before `before_ns` off the lists (gc lock
 * held) onto the in-flight list, RELEASING; returns the caller's chain
 * (linked by age_next) and the blocks in *nblocks. */
static uint32_t take_due(uint64_t before_ns, uint32_t max_blocks, size_t keep_bytes, uint64_t *nblocks)
{
    uint32_t mine = LULL_NO_BLOCK;
    *nblocks = 0;
    while (space_g.age_head != LULL_NO_BLOCK && B(space_g.age_head)->freed_ns <= before_ns &&
           (!max_blocks || *nblocks < max_blocks) &&
           lull_space_dirty_bytes() >= keep_bytes + ((size_t)B(space_g.age_head)->run_len << LULL_BLOCK_SHIFT)) {
        uint32_t r = space_g.age_head, n = B(r)->run_len;
        unlink_run(r);
        for (uint32_t k = 0; k < n; k++)
            lull_block_set_state(B(r + k), LULL_BLOCK_RELEASING);
        B(r)->run_len = n;
        inflight_push(r);
        B(r)->age_next = mine;
        mine = r;
        *nblocks += n;
    }
    age_publish();
    return mine;
}

uint64_t lull_space_release_dirty(uint64_t before_ns, uint32_t max_blocks, size_t keep_bytes)
{
    uint64_t nblocks;
    lull_gc_lock();
    uint32_t mine = take_due(before_ns, max_blocks, keep_bytes, &nblocks);
    lull_gc_unlock();
    if (mine == LULL_NO_BLOCK)
        return 0;
    /* Without the lock: these runs are on no list anyone allocates from,
     * and only this thread reads their run_len and age_next. */
    uint64_t calls = 0;
    for (uint32_t r = mine; r != LULL_NO_BLOCK; r = B(r)->age_next, calls++)
        lull_os_release((void *)lull_block_addr(r), (size_t)B(r)->run_len << LULL_BLOCK_SHIFT);
    lull_gc_lock();
    for (uint32_t r = mine; r != LULL_NO_BLOCK;) {
        uint32_t next = B(r)->age_next, n = B(r)->run_len;
        inflight_remove(r);
        free_run(r, n, false);
        r = next;
    }
    lull_gc_unlock();
    atomic_fetch_add(&space_g.released_bytes, nblocks << LULL_BLOCK_SHIFT);
    atomic_fetch_add(&space_g.release_calls, calls);
    return nblocks;
}

/* Take up to `want` cold blocks (a clean run's end, else the frontier)
 * onto the in-flight list for warming, chained by age_next; 0 when the
 * heap cannot grow. gc lock held. */
static uint32_t take_cold(uint32_t want, uint32_t *mine)
{
    uint32_t r = find_lowest_clean(want), idx;
    if (r == LULL_NO_BLOCK && space_g.nonempty[0]) {
        /* No clean run that long: the longest there is, whole. */
        r = space_g.bins[0][63 - __builtin_clzll(space_g.nonempty[0])];
        want = B(r)->run_len;
    }
    if (r != LULL_NO_BLOCK)
        idx = take_from(r, want);
    else if ((idx = grow(want)) == LULL_NO_BLOCK)
        return 0;
    for (uint32_t k = 0; k < want; k++)
        lull_block_set_state(B(idx + k), LULL_BLOCK_RELEASING);
    B(idx)->run_len = want;
    inflight_push(idx);
    B(idx)->age_next = *mine;
    *mine = idx;
    return want;
}

uint64_t lull_space_warm(size_t target_bytes, uint32_t max_blocks)
{
    uint32_t mine = LULL_NO_BLOCK;
    uint64_t nblocks = 0;
    lull_gc_lock();
    size_t have = lull_space_dirty_bytes(), room = lull_space_headroom_bytes() / 4;
    if (target_bytes > room)
        target_bytes = room;
    while (have + (nblocks << LULL_BLOCK_SHIFT) < target_bytes && nblocks < max_blocks) {
        uint64_t need = (target_bytes - have - (nblocks << LULL_BLOCK_SHIFT) + LULL_BLOCK_SIZE - 1) >> LULL_BLOCK_SHIFT;
        uint32_t got = take_cold((uint32_t)(need < 64 ? need : 64), &mine);
        if (!got)
            break;
        nblocks += got;
    }
    lull_gc_unlock();
    if (mine == LULL_NO_BLOCK)
        return 0;
    for (uint32_t r = mine; r != LULL_NO_BLOCK; r = B(r)->age_next)
        lull_os_populate((void *)lull_block_addr(r), (size_t)B(r)->run_len << LULL_BLOCK_SHIFT);
    lull_gc_lock();
    for (uint32_t r = mine; r != LULL_NO_BLOCK;) {
        uint32_t next = B(r)->age_next, n = B(r)->run_len;
        inflight_remove(r);
        free_run(r, n, true);
        r = next;
    }
    age_publish();
    lull_gc_unlock();
    atomic_fetch_add(&space_g.warmed_bytes, nblocks << LULL_BLOCK_SHIFT);
    return nblocks;
}

uint64_t lull_space_cold_blocks(void)
{
    return atomic_load_explicit(&space_g.cold_blocks, memory_order_relaxed);
}

uint64_t lull_space_warmed_bytes(void)
{
    return atomic_load_explicit(&space_g.warmed_bytes, memory_order_relaxed);
}

void lull_space_after_fork_child(void)
{
    while (space_g.inflight != LULL_NO_BLOCK) {
        uint32_t r = space_g.inflight, n = B(r)->run_len;
        inflight_remove(r);
        free_run(r, n, true);   /* perhaps released, perhaps not: dirty is the safe kind */
    }
    age_publish();
}

uint64_t lull_space_oldest_dirty_ns(void)
{
    return atomic_load(&space_g.oldest_dirty_ns);
}

size_t lull_space_dirty_bytes(void)
{
    return (size_t)atomic_load_explicit(&space_g.dirty, memory_order_relaxed) << LULL_BLOCK_SHIFT;
}

void lull_space_release_counts(uint64_t *bytes, uint64_t *calls)
{
    *bytes = atomic_load_explicit(&space_g.released_bytes, memory_order_relaxed);
    *calls = atomic_load_explicit(&space_g.release_calls, memory_order_relaxed);
}

size_t lull_space_headroom_bytes(void)
{
    size_t cap = lull_heap_g.nblocks, limit = __atomic_load_n(&space_g.limit_blocks, __ATOMIC_RELAXED);
    if (limit && limit < cap)
        cap = limit;
    size_t used = atomic_load_explicit(&space_g.in_use, memory_order_relaxed);
    return used < cap ? (cap - used) << LULL_BLOCK_SHIFT : 0;
}

size_t lull_space_in_use_bytes(void)
{
    return (size_t)atomic_load_explicit(&space_g.in_use, memory_order_relaxed) << LULL_BLOCK_SHIFT;
}

void lull_mark_clear_blocks(uint32_t idx, uint32_t n)
{
    /* A block covers 1024 granules: 16 words of the bitmap. */
    size_t words_per_block = LULL_BLOCK_SIZE >> (LULL_GRANULE_SHIFT + 6);
    memset(&lull_heap_g.mark_bits[(size_t)idx * words_per_block], 0,
           (size_t)n * words_per_block * sizeof(uint64_t));
}

size_t lull_object_footprint(uintptr_t obj)
{
    lull_block *b = lull_block_of(obj);
    if (b->state == LULL_BLOCK_SMALL)
        return lull_class_size[b->size_class];
    if (b->state == LULL_BLOCK_NURSERY)
        return lull_object_size(obj, lull_header_type(*(uintptr_t *)obj));
    return b->large_size;
}

size_t lull_heap_bytes_held(void)
{
    return lull_space_in_use_bytes();
}

/* Could `a`, whose first word is `hdr`, be the start of an object? Without
 * the gc lock (the caller holds a live object, so its block's state is
 * stable): in the major heap, `a` must be a slot boundary or a large
 * object's first byte. A type never lives in the heap, and is an aligned
 * address above the first page: that is what rejects an interior pointer
 * into the nursery (whose object starts are known only to a collection). */
bool lull_object_start_plausible(uintptr_t a, uintptr_t hdr)
{
    uintptr_t tp = hdr & ~(uintptr_t)LULL_HDR_TAG_MASK;
    if (tp < 4096 || tp % sizeof(void *) || lull_in_committed(tp))
        return false;
    const lull_block *b = lull_block_of(a);
    switch (lull_block_state_acquire(b)) {
    case LULL_BLOCK_SMALL:
        return (a & (LULL_BLOCK_SIZE - 1)) % lull_class_size[b->size_class] == 0;
    case LULL_BLOCK_LARGE_HEAD:
        return (a & (LULL_BLOCK_SIZE - 1)) == 0;
    case LULL_BLOCK_NURSERY:
        return true;
    default:
        return false;
    }
}

bool lull_object_plausible(const void *obj)
{
    uintptr_t a = (uintptr_t)obj;
    if (!lull_is_initialised() || !lull_in_committed(a) || a % LULL_GRANULE)
        return false;
    uintptr_t hdr = __atomic_load_n((const uintptr_t *)obj, __ATOMIC_RELAXED);
    return hdr && lull_object_start_plausible(a, hdr);
}
