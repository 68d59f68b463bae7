/*
 * roots — every kind of root keeps its objects alive, and a removed root
 * stops doing so.
 *
 *  - a local variable that lives only on the stack (the collecting thread's
 *    own stack, and the stack of another, stopped, thread);
 *  - a value held only in a register (best effort: the compiler is asked to
 *    keep it in a callee-saved register across the collection, and another
 *    thread spins with it in a register while the world is stopped);
 *  - a conservative range (lull_root_add) on a malloc'd table and on a global
 *    array, holding start and interior pointers;
 *  - precise roots (lull_root_add_refs);
 *  - after lull_root_remove the objects are collected (live_bytes_after_major
 *    and heap_bytes fall) even though the table still holds their addresses;
 *  - the collecting thread's own frames are not roots: what the minor at
 *    the start of a major touched does not survive the major.
 *
 * Survival is checked by checksums after several collections interleaved
 * with allocation of the same size (LULL_GC_DEBUG=poison is set when the
 * environment does not choose debug options), so an object freed by mistake
 * is reused or poisoned and fails its checksum.
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>

struct blob {
    lull_header h;
    uint64_t    seed;
    uint64_t    w[30];
};

static const lull_type blob_type = {
    .name = "blob",
    .size = sizeof(struct blob),
};

static void blob_fill(struct blob *b, uint64_t seed)
{
    b->seed = seed;
    for (int i = 0; i < 30; i++)
        b->w[i] = mix64(seed * 31 + (uint64_t)i);
}

static bool blob_ok(const struct blob *b, uint64_t seed)
{
    if (b->seed != seed)
        return false;
    for (int i = 0; i < 30; i++)
        if (b->w[i] != mix64(seed * 31 + (uint64_t)i))
            return false;
    return true;
}

#define BLOB_CHECK(b, sd, what)                                                     \
    CHECK(blob_ok((b), (sd)), "%s: object %p with seed %llu did not survive "       \
          "(seed field now %llu)", (what), (const void *)(b),                        \
          (unsigned long long)(sd), (unsigned long long)(b)->seed)

static NOINLINE struct blob *blob_new(uint64_t seed)
{
    struct blob *b = lull_alloc(&blob_type);
    CHECK(b != NULL, "lull_alloc(blob) failed: %s", strerror(errno));
    blob_fill(b, seed);
    return b;
}

/* Allocate a lot of garbage of the same size class with a foreign pattern:
 * a wrongly freed blob gets reused and overwritten. */
static NOINLINE void churn(void)
{
    for (int i = 0; i < 20000; i++) {
        struct blob *b = lull_alloc(&blob_type);
        CHECK(b != NULL, "lull_alloc(blob) failed in churn: %s", strerror(errno));
        blob_fill(b, 0xdead0000u + (uint64_t)i);
    }
}

static NOINLINE void collect_hard(void)
{
    clobber_stack();
    for (int i = 0; i < 3; i++) {
        lull_collect(LULL_GEN_MAJOR);
        churn();
        clobber_stack();
    }
    lull_collect(LULL_GEN_NURSERY);
    churn();
    lull_collect(LULL_GEN_MAJOR);
}

/* ---------------------------------------------------------------------- */

static NOINLINE void test_stack_local(void)
{
    struct blob *volatile p = blob_new(101);
    struct blob *volatile q = blob_new(102);
    collect_hard();
    BLOB_CHECK(p, 101, "stack local");
    BLOB_CHECK(q, 102, "stack local");
}

#if defined(__x86_64__) || defined(__aarch64__)
#  if defined(__x86_64__)
#    define CALLEE_SAVED "r12"
#  else
#    define CALLEE_SAVED "x20"
#  endif
/* Best effort: keep the only copy in a callee-saved register across the
 * collection (lull_collect's own frame may save it on the stack, which is
 * scanned too; either way the object must survive). */
static NOINLINE void test_register_self(void)
{
    register uintptr_t r __asm__(CALLEE_SAVED) = (uintptr_t)blob_new(201);
    __asm__ __volatile__("" : "+r"(r));
    collect_hard();
    __asm__ __volatile__("" : "+r"(r));
    BLOB_CHECK((struct blob *)r, 201, "callee-saved register");
}
#else
static NOINLINE void test_register_self(void)
{
    struct blob *p = blob_new(201);
    __asm__ __volatile__("" : "+r"(p));
    collect_hard();
    __asm__ __volatile__("" : "+r"(p));
    BLOB_CHECK(p, 201, "register");
}
#endif

/* Another attached thread keeps a pointer in a register (spin loop with no
 * calls) or in a volatile stack slot while the main thread collects: the
 * stopped thread's registers and stack are roots. */
static atomic_int other_phase;   /* 0 starting, 1 holding, 2 main done, 3 verified */

struct other_result { int reg_ok, stack_ok; };

static NOINLINE void *other_thread(void *arg)
{
    struct other_result *res = arg;
    CHECK(lull_thread_attach() == 0, "lull_thread_attach failed");
    struct blob *volatile on_stack = blob_new(301);
    uintptr_t in_reg = (uintptr_t)blob_new(302);
    clobber_stack();
    atomic_store(&other_phase, 1);
    while (atomic_load_explicit(&other_phase, memory_order_relaxed) != 2)
        __asm__ __volatile__("" : "+r"(in_reg));
    res->reg_ok = blob_ok((struct blob *)in_reg, 302);
    res->stack_ok = blob_ok(on_stack, 301);
    lull_thread_detach();
    return NULL;
}

static NOINLINE void test_other_thread(void)
{
    pthread_t t;
    struct other_result res = { 0, 0 };
    atomic_store(&other_phase, 0);
    CHECK(pthread_create(&t, NULL, other_thread, &res) == 0, "pthread_create failed");
    while (atomic_load(&other_phase) != 1)
        sleep_ms(1);
    collect_hard();
    atomic_store(&other_phase, 2);
    pthread_join(t, NULL);
    CHECK(res.stack_ok, "object held only on another thread's stack did not survive");
    CHECK(res.reg_ok, "object held only in another (spinning) thread's register did not survive");
}

/* ---------------------------------------------------------------------- */
/* Conservative ranges.                                                    */
/* ---------------------------------------------------------------------- */

#define TABLE 64
static void *global_table[TABLE];

static NOINLINE void fill_table(void **table, uint64_t seed0)
{
    for (int i = 0; i < TABLE; i++) {
        struct blob *b = blob_new(seed0 + (uint64_t)i);
        /* odd slots hold interior pointers */
        table[i] = (i & 1) ? (void *)((char *)b + 8 + (size_t)i) : (void *)b;
    }
}

static void verify_table(void **table, uint64_t seed0, const char *what)
{
    for (int i = 0; i < TABLE; i++) {
        struct blob *b = (i & 1) ? (struct blob *)((char *)table[i] - 8 - i) : table[i];
        BLOB_CHECK(b, seed0 + (uint64_t)i, what);
    }
}

static NOINLINE void test_conservative_ranges(void)
{
    void **heap_table = malloc(TABLE * sizeof(void *));
    CHECK(heap_table != NULL, "malloc failed");
    CHECK(lull_root_add(heap_table, TABLE * sizeof(void *)) == 0, "lull_root_add(malloc table) failed");
    CHECK(lull_root_add(global_table, sizeof global_table) == 0, "lull_root_add(global array) failed");
    fill_table(heap_table, 1000);
    fill_table(global_table, 2000);
    collect_hard();
    verify_table(heap_table, 1000, "malloc'd table registered with lull_root_add");
    verify_table(global_table, 2000, "global array registered with lull_root_add");

    /* Replace the contents: the range is rescanned, not snapshotted. */
    fill_table(heap_table, 3000);
    collect_hard();
    verify_table(heap_table, 3000, "malloc'd table after refill");

    lull_root_remove(heap_table);
    lull_root_remove(global_table);
    memset(global_table, 0, sizeof global_table);
    free(heap_table);
}

/* ---------------------------------------------------------------------- */
/* Precise roots.                                                          */
/* ---------------------------------------------------------------------- */

static void *precise[16];

static NOINLINE void test_precise(void)
{
    CHECK(lull_root_add_refs(precise, 16) == 0, "lull_root_add_refs failed");
    for (int i = 0; i < 16; i++)
        precise[i] = (i % 3 == 0) ? NULL : (void *)blob_new(4000 + (uint64_t)i);
    collect_hard();
    /* The collector may have moved the targets and updated the words. */
    for (int i = 0; i < 16; i++) {
        if (i % 3 == 0)
            CHECK(precise[i] == NULL, "precise root %d: NULL became %p", i, precise[i]);
        else
            BLOB_CHECK((struct blob *)precise[i], 4000 + (uint64_t)i, "precise root");
    }
    lull_root_remove(precise);
    memset(precise, 0, sizeof precise);
}

/* ---------------------------------------------------------------------- */
/* lull_root_remove: objects only a removed root points to are collected.  */
/* ---------------------------------------------------------------------- */

#define BIG_N   8
#define BIG_LEN ((size_t)4 << 20)

static NOINLINE void fill_big(void **table, uint64_t seed)
{
    for (int i = 0; i < BIG_N; i++)
        table[i] = bytes_new(BIG_LEN, seed + (uint64_t)i);
}

static NOINLINE void verify_big(void **table, uint64_t seed, const char *what)
{
    for (int i = 0; i < BIG_N; i++)
        bytes_verify(table[i], seed + (uint64_t)i, BIG_LEN, what);
}

/* Wait (up to 5 s, for background sweeping) until heap_bytes <= limit. */
static uint64_t wait_heap_below(uint64_t limit)
{
    uint64_t deadline = now_ns() + 5000000000ull;
    lull_stats s = get_stats();
    while (s.heap_bytes > limit && now_ns() < deadline) {
        sleep_ms(10);
        s = get_stats();
    }
    return s.heap_bytes;
}

static NOINLINE void test_remove(bool precise_kind)
{
    const char *what = precise_kind ? "precise root" : "conservative root";
    void **table = calloc(BIG_N, sizeof(void *));
    CHECK(table != NULL, "calloc failed");
    int rc = precise_kind ? lull_root_add_refs(table, BIG_N)
                          : lull_root_add(table, BIG_N * sizeof(void *));
    CHECK(rc == 0, "adding the %s failed: %d", what, rc);

    fill_big(table, precise_kind ? 7000 : 8000);
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
    verify_big(table, precise_kind ? 7000 : 8000, what);
    lull_stats before = get_stats();
    CHECK(before.live_bytes_after_major >= BIG_N * BIG_LEN,
          "%s: live_bytes_after_major = %" PRIu64 " while %zu bytes are reachable", what,
          before.live_bytes_after_major, (size_t)(BIG_N * BIG_LEN));

    /* The table still holds the addresses, but it is no root any more. */
    lull_root_remove(table);
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
    lull_stats after = get_stats();
    /* Every one of them dies: the stack below this frame was zeroed, and
     * the table that still holds their addresses is no root. */
    uint64_t need = (uint64_t)BIG_N * BIG_LEN;
    CHECK(after.live_bytes_after_major + need <= before.live_bytes_after_major,
          "%s removed: live_bytes_after_major went from %" PRIu64 " to %" PRIu64
          " (expected a drop of at least %" PRIu64 ")", what,
          before.live_bytes_after_major, after.live_bytes_after_major, need);
    uint64_t heap = wait_heap_below(before.heap_bytes - need);
    CHECK(heap <= before.heap_bytes - need,
          "%s removed: heap_bytes went from %" PRIu64 " to %" PRIu64
          " (expected a drop of at least %" PRIu64 " once the large objects died)", what,
          before.heap_bytes, heap, need);
    free(table);
}

/* ---------------------------------------------------------------------- */

/* The collector's own frames are not roots. A major starts with a minor,
 * and that minor scans every old object with a dirty card, reachable or
 * not (cards are its roots): its frames hold the address of such an
 * object and of what it copies for it. The collecting thread's stack was
 * scanned from deep inside the collection, over those frames' memory, and
 * a word left there kept the dead object alive (with its 512 KiB and all
 * it references). Its roots now start where it entered the collection. */
#define DEAD_REFS 65536   /* 512 KiB: a large object */

static NOINLINE void make_dead_array_with_cards(void)
{
    struct refs *a = lull_alloc_array(&refs_type, DEAD_REFS);
    CHECK(a != NULL, "allocating an array of %d references failed", DEAD_REFS);
    for (size_t i = 0; i < DEAD_REFS; i += 64) {
        struct blob *b = lull_alloc(&blob_type);
        CHECK(b != NULL, "allocation failed");
        blob_fill(b, i);
        lull_store(a, &a->item[i], b);   /* a nursery object in an old one: a dirty card */
    }
}

static NOINLINE void test_collector_frames(void)
{
    for (int round = 0; round < 8; round++) {
        clobber_stack();
        lull_collect(LULL_GEN_MAJOR);
        uint64_t base = get_stats().live_bytes_after_major;
        make_dead_array_with_cards();
        clobber_stack();
        lull_collect(LULL_GEN_MAJOR);
        uint64_t live = get_stats().live_bytes_after_major;
        CHECK(live < base + DEAD_REFS * sizeof(void *),
              "round %d: an unreachable array of %zu bytes whose cards were dirty survived a major "
              "(live_bytes_after_major %" PRIu64 " before it was allocated, %" PRIu64 " after): "
              "the collecting thread's own frames were scanned as roots", round,
              DEAD_REFS * sizeof(void *), base, live);
    }
}

/* ---------------------------------------------------------------------- */

static NOINLINE void test_root_api(void)
{
    static void *range[4];
    CHECK(lull_root_add(NULL, 64) == -EINVAL, "lull_root_add(NULL, 64) should be -EINVAL");
    CHECK(lull_root_add(range, 0) == -EINVAL, "lull_root_add(p, 0) should be -EINVAL");
    CHECK(lull_root_add(range, sizeof range) == 0, "lull_root_add failed");
    int rc = lull_root_add(range, sizeof range);
    CHECK(rc == -EEXIST, "adding the same range twice returned %d, expected -EEXIST", rc);
    lull_root_remove(range);
    lull_root_remove(range);                 /* no longer registered: no-op */
    lull_root_remove((void *)&rc);           /* never registered: no-op */
    CHECK(lull_root_add(range, sizeof range) == 0, "re-adding a removed range failed");
    lull_root_remove(range);
}

int main(void)
{
    want_poison();
    CHECK(lull_init(NULL) == 0, "lull_init failed");

    test_root_api();
    test_stack_local();
    test_register_self();
    test_other_thread();
    test_conservative_ranges();
    test_precise();
    test_remove(false);
    test_remove(true);
    test_collector_frames();

    lull_shutdown();
    printf("roots: ok\n");
    return 0;
}
