/*
 * large_objects — the large-object space.
 *
 *  - ~200 MB of large arrays are allocated and touched; all but a few are
 *    dropped; after a major collection the resident set size falls by most
 *    of the dropped amount and heap_bytes falls; the survivors are intact.
 *  - Repeating the cycle does not grow the RSS: dead large objects' memory
 *    is released or reused.
 *  - Allocating 1 GiB of large garbage without ever calling lull_collect
 *    keeps the RSS bounded: the collector collects on its own.
 *  - Edges between spaces: a large reference array pointing to many small
 *    nodes; a small node pointing to a large array; a large fixed-size
 *    (non-array) object.
 *  - Objects that never move: a large object and a lull_alloc_pinned object
 *    held only by precise roots keep their addresses (the collector may
 *    update precise roots, so this would show a move).
 */
#include "check.h"

#define MB ((size_t)1 << 20)

#define NTAB 256
static void **table;              /* conservative root range */

static size_t obj_len(int i) { return MB + (size_t)(i % 7) * 65536 + 17 * (size_t)i; }

/* Fill table[0..n) with large arrays; return the bytes allocated. */
static NOINLINE size_t fill(int n, uint64_t seed)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        table[i] = bytes_new(obj_len(i), seed + (uint64_t)i);
        total += obj_len(i);
    }
    return total;
}

static NOINLINE void drop_all_but_survivors(int n)
{
    for (int i = 0; i < n; i++)
        if (i % 20 != 0)
            table[i] = NULL;
}

static NOINLINE void verify_survivors(int n, uint64_t seed, const char *what)
{
    for (int i = 0; i < n; i += 20)
        bytes_verify(table[i], seed + (uint64_t)i, obj_len(i), what);
}

static NOINLINE void collect_clean(void)
{
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
}

/* Wait up to 5 s (background sweep) for the RSS to fall to `limit`. */
static size_t wait_rss_below(size_t limit)
{
    uint64_t deadline = now_ns() + 5000000000ull;
    size_t rss = rss_bytes();
    while (rss > limit && now_ns() < deadline) {
        sleep_ms(10);
        rss = rss_bytes();
    }
    return rss;
}

static uint64_t wait_heap_below(uint64_t limit)
{
    uint64_t deadline = now_ns() + 5000000000ull;
    uint64_t h = get_stats().heap_bytes;
    while (h > limit && now_ns() < deadline) {
        sleep_ms(10);
        h = get_stats().heap_bytes;
    }
    return h;
}

#define NOBJ 170   /* ~200 MB */

static void test_rss_falls(void)
{
    size_t rss0 = rss_bytes();
    size_t total = fill(NOBJ, 1000);
    size_t rss1 = rss_bytes();
    lull_stats s1 = get_stats();
    CHECK(rss1 >= rss0 + total * 9 / 10,
          "allocating and touching %zu MB of large arrays raised the RSS only from %zu MB to %zu MB",
          total / MB, rss0 / MB, rss1 / MB);
    CHECK(s1.heap_bytes >= total, "heap_bytes = %" PRIu64 " MB with %zu MB of large objects live",
          s1.heap_bytes / MB, total / MB);

    size_t kept = 0;
    for (int i = 0; i < NOBJ; i += 20)
        kept += obj_len(i);
    size_t dropped = total - kept;
    drop_all_but_survivors(NOBJ);
    collect_clean();
    /* Allow 20 MB of slack (stale words, metadata, allocator caches). */
    size_t rss2 = wait_rss_below(rss1 - dropped + 20 * MB);
    CHECK(rss2 <= rss1 - dropped + 20 * MB,
          "%zu MB of large objects died, but the RSS only went from %zu MB to %zu MB",
          dropped / MB, rss1 / MB, rss2 / MB);
    uint64_t h2 = wait_heap_below(s1.heap_bytes - dropped + 20 * MB);
    CHECK(h2 <= s1.heap_bytes - dropped + 20 * MB,
          "%zu MB of large objects died, but heap_bytes only went from %" PRIu64 " MB to %" PRIu64 " MB",
          dropped / MB, s1.heap_bytes / MB, h2 / MB);
    lull_stats s2 = get_stats();
    CHECK(s2.live_bytes_after_major >= kept,
          "live_bytes_after_major = %" PRIu64 " MB but %zu MB of large objects are reachable",
          s2.live_bytes_after_major / MB, kept / MB);
    CHECK(s2.live_bytes_after_major <= kept + 40 * MB,
          "live_bytes_after_major = %" PRIu64 " MB with only %zu MB reachable",
          s2.live_bytes_after_major / MB, kept / MB);
    verify_survivors(NOBJ, 1000, "surviving large object");
    printf("large_objects: rss %zu MB -> %zu MB (%zu MB allocated) -> %zu MB after dropping %zu MB\n",
           rss0 / MB, rss1 / MB, total / MB, rss2 / MB, dropped / MB);

    /* Again, three times: the RSS must not accumulate. */
    for (int round = 0; round < 3; round++) {
        uint64_t seed = 5000 + (uint64_t)round * 1000;
        for (int i = 0; i < NOBJ; i++)
            if (i % 20 != 0)
                table[i] = bytes_new(obj_len(i), seed + (uint64_t)i);
        size_t rss_peak = rss_bytes();
        CHECK(rss_peak <= rss1 + 64 * MB,
              "round %d: with the same live data as before, the RSS is %zu MB (first round: %zu MB)",
              round, rss_peak / MB, rss1 / MB);
        for (int i = 0; i < NOBJ; i++)
            if (i % 20 != 0)
                bytes_verify(table[i], seed + (uint64_t)i, obj_len(i), "large object, later round");
        drop_all_but_survivors(NOBJ);
        collect_clean();
        size_t rss = wait_rss_below(rss2 + 20 * MB);
        CHECK(rss <= rss2 + 20 * MB, "round %d: the RSS stays at %zu MB after dropping "
              "(first round: %zu MB)", round, rss / MB, rss2 / MB);
        verify_survivors(NOBJ, 1000, "surviving large object, later round");
    }
}

/* 1 GiB of large garbage with no explicit collection. */
static NOINLINE void garbage_loop(void)
{
    for (int i = 0; i < 64; i++) {
        struct bytes *b = lull_alloc_array(&bytes_type, 16 * MB);
        CHECK(b != NULL, "lull_alloc_array(16 MB) #%d failed: %s", i, strerror(errno));
        memset(b->b, i + 1, 16 * MB);
    }
}

static void test_automatic_collection(void)
{
    size_t rss0 = rss_bytes();
    garbage_loop();
    size_t rss1 = rss_bytes();
    CHECK(rss1 <= rss0 + 512 * MB,
          "1 GiB of large garbage allocated without lull_collect: RSS grew from %zu MB to %zu MB "
          "(the collector does not reclaim on its own)", rss0 / MB, rss1 / MB);
    verify_survivors(NOBJ, 1000, "surviving large object after automatic collections");
}

/* ---------------------------------------------------------------------- */

struct big {
    lull_header   h;
    struct tnode *node;
    uint64_t      w[8190];
};

static const lull_type big_type = {
    .name = "big", .size = sizeof(struct big), .refs = LULL_REF(struct big, node),
};

struct holder {
    lull_header   h;
    struct bytes *payload;
};

static const lull_type holder_type = {
    .name = "holder", .size = sizeof(struct holder), .refs = LULL_REF(struct holder, payload),
};

#define BIGREFS 200000

static NOINLINE void build_edges(void)
{
    struct refs *r = lull_alloc_array(&refs_type, BIGREFS);
    CHECK(r != NULL, "lull_alloc_array(refs, %d) failed", BIGREFS);
    for (size_t i = 0; i < BIGREFS; i++)
        if (i % 3 != 1)
            lull_store(r, &r->item[i], tnode_new(i));
    table[NTAB - 1] = r;

    struct holder *h = lull_alloc(&holder_type);
    CHECK(h != NULL, "alloc holder failed");
    LULL_SET(h, payload, bytes_new(3 * MB + 5, 31337));
    table[NTAB - 2] = h;

    struct big *b = lull_alloc(&big_type);
    CHECK(b != NULL, "lull_alloc(big, %zu bytes) failed", sizeof(struct big));
    CHECK(lull_type_of(b) == &big_type, "lull_type_of(big) wrong");
    for (size_t i = 0; i < 8190; i++) {
        CHECK(b->w[i] == 0, "large object not zeroed");
        b->w[i] = mix64(i);
    }
    LULL_SET(b, node, tnode_new(424242));
    table[NTAB - 3] = b;
}

static NOINLINE void verify_edges(void)
{
    struct refs *r = table[NTAB - 1];
    CHECK(lull_array_length(r) == BIGREFS, "large ref array length wrong");
    for (size_t i = 0; i < BIGREFS; i++) {
        if (i % 3 != 1)
            CHECK(tnode_ok(r->item[i], i), "node %zu referenced from a large ref array lost", i);
        else
            CHECK(r->item[i] == NULL, "NULL element %zu of large ref array changed", i);
    }
    struct holder *h = table[NTAB - 2];
    bytes_verify(h->payload, 31337, 3 * MB + 5, "large array referenced from a small object");
    struct big *b = table[NTAB - 3];
    for (size_t i = 0; i < 8190; i++)
        CHECK(b->w[i] == mix64(i), "large fixed-size object corrupt at word %zu", i);
    CHECK(tnode_ok(b->node, 424242), "node referenced from a large fixed-size object lost");
}

static NOINLINE void churn(void)
{
    for (int i = 0; i < 50000; i++)
        (void)tnode_new(0xdead0000ull + (uint64_t)i);
}

static void test_edges(void)
{
    build_edges();
    for (int i = 0; i < 3; i++) {
        collect_clean();
        churn();
    }
    lull_collect(LULL_GEN_NURSERY);
    verify_edges();
    table[NTAB - 1] = table[NTAB - 2] = table[NTAB - 3] = NULL;
}

/* ---------------------------------------------------------------------- */

static void *pinned_roots[2];
static uintptr_t hidden[2];     /* addresses, XOR-masked so no scan sees them */
#define MASK ((uintptr_t)0x5555555555555555ull)

static NOINLINE void make_unmovable(void)
{
    struct tnode *p = lull_alloc_pinned(&tnode_type);
    CHECK(p != NULL, "lull_alloc_pinned failed: %s", strerror(errno));
    CHECK(lull_type_of(p) == &tnode_type, "lull_type_of(pinned) wrong");
    tnode_fill(p, 888);
    pinned_roots[0] = p;
    pinned_roots[1] = bytes_new(2 * MB, 999);
    hidden[0] = (uintptr_t)pinned_roots[0] ^ MASK;
    hidden[1] = (uintptr_t)pinned_roots[1] ^ MASK;
}

static void test_no_move(void)
{
    CHECK(lull_root_add_refs(pinned_roots, 2) == 0, "lull_root_add_refs failed");
    make_unmovable();
    for (int i = 0; i < 3; i++) {
        clobber_stack();
        lull_collect(LULL_GEN_NURSERY);
        churn();
        lull_collect(LULL_GEN_MAJOR);
    }
    CHECK((uintptr_t)pinned_roots[0] == (hidden[0] ^ MASK),
          "lull_alloc_pinned object moved from %#" PRIxPTR " to %p", hidden[0] ^ MASK, pinned_roots[0]);
    CHECK((uintptr_t)pinned_roots[1] == (hidden[1] ^ MASK),
          "large object moved from %#" PRIxPTR " to %p", hidden[1] ^ MASK, pinned_roots[1]);
    CHECK(tnode_ok(pinned_roots[0], 888), "pinned object held by a precise root lost");
    bytes_verify(pinned_roots[1], 999, 2 * MB, "large object held by a precise root");
    lull_root_remove(pinned_roots);
}

/* MemAvailable from /proc/meminfo, in bytes (0 if unknown). */
static size_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (size_t)kb << 10;
}

int main(void)
{
    /* The RSS checks need the ~200 MB of live large objects, and up to
     * 512 MB more while 1 GiB of garbage is collected, to stay resident:
     * on a machine without that much free memory pages are swapped out or
     * reclaimed and the RSS says nothing of the collector. */
    size_t avail = mem_available();
    if (avail && avail < 1024 * MB) {
        printf("large_objects: skipped: %zu MB of memory available, the RSS checks need 1024 MB\n", avail / MB);
        return 77;
    }
    CHECK(lull_init(NULL) == 0, "lull_init failed");
    table = calloc(NTAB, sizeof(void *));
    CHECK(table != NULL, "calloc failed");
    CHECK(lull_root_add(table, NTAB * sizeof(void *)) == 0, "lull_root_add failed");

    test_rss_falls();
    test_automatic_collection();
    test_edges();
    test_no_move();

    lull_root_remove(table);
    free(table);
    lull_shutdown();
    printf("large_objects: ok\n");
    return 0;
}
