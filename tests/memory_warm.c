/*
 * memory_warm — free heap memory is kept resident for reuse and goes back
 * to the OS only after release-delay, from the background memory thread,
 * or at once on lull_release_memory (issue 36 item 2, issue 35 item 5).
 *
 *  reuse   (release-delay=3600s) a dead large object's run is reused by the
 *          next large object of its size: allocating and filling it takes
 *          under a quarter of a page fault per page (median of 8 rounds,
 *          faults of this thread, getrusage RUSAGE_THREAD), it reads as
 *          zero, and nothing was released to the OS. Given back at once,
 *          every page would fault again. Skipped (77) under ThreadSanitizer,
 *          whose shadow memory faults of its own.
 *  decay   (release-delay=1s) 48 MiB of large objects die: while less than
 *          the delay has passed since the collection began, at least 3/4 of
 *          their pages are still resident (mincore) and free_resident_bytes
 *          holds them; within 6 s they are gone (under 1/4 resident) and
 *          bytes_released and release_calls rose. Skipped (77) when the
 *          machine took the whole delay to collect (nothing can be shown).
 *  zero    (release-delay=0) the same memory goes back soon, unasked.
 *  trim    (release-delay=3600s) lull_release_memory, from a thread that is
 *          not attached, returns everything free at once: bytes_released
 *          jumps by the dead objects, free_resident_bytes falls to 0, the
 *          RSS falls; before lull_init and after lull_shutdown it is -EPERM.
 *  options bad release-delay values are refused with -EINVAL.
 *  ahead   (release-delay=10s) a program keeps allocating 128 KiB large
 *          objects and keeping them, 4 ms apart: fresh memory each time.
 *          The background thread touches memory ahead of it, so filling
 *          a new object takes under a quarter of a fault per page (median
 *          of the last 150 of 200 rounds, and bytes_touched_ahead rose);
 *          without it, one fault a page. Skipped (77) under
 *          ThreadSanitizer.
 */
#include "check.h"

#include <sys/mman.h>
#include <sys/resource.h>

#define MB ((size_t)1 << 20)
#define NOBJ 48
#define OBJ_BYTES (MB - 64)

static void *table[NOBJ];                  /* a conservative root */
static uintptr_t addr[NOBJ];               /* hidden from the scan */

static long thread_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_minflt + ru.ru_majflt;
}

/* Resident share of the dead objects' pages, 0..1 (mincore). */
static double resident_share(void)
{
    size_t pages = 0, in = 0;
    long ps = sysconf(_SC_PAGESIZE);
    unsigned char vec[(OBJ_BYTES + 65536) / 4096 + 1];
    for (int i = 0; i < NOBJ; i++) {
        size_t len = (OBJ_BYTES / (size_t)ps) * (size_t)ps;
        CHECK(mincore((void *)addr[i], len, vec) == 0, "mincore: %s", strerror(errno));
        for (size_t p = 0; p < len / (size_t)ps; p++, pages++)
            in += vec[p] & 1;
    }
    return (double)in / (double)pages;
}

static NOINLINE void fill_and_drop(void)
{
    for (int i = 0; i < NOBJ; i++) {
        table[i] = bytes_new(OBJ_BYTES, (uint64_t)i);
        addr[i] = (uintptr_t)table[i];
    }
    for (int i = 0; i < NOBJ; i++)
        table[i] = NULL;
}

static NOINLINE void collect_twice(void)
{
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
}

static void start(const char *params)
{
    int r = lull_init(params);
    CHECK(r == 0, "lull_init(%s) = %d", params, r);
    lull_root_add(table, sizeof table);
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static NOINLINE long reuse_round(size_t bytes, uint64_t seed)
{
    table[0] = bytes_new(bytes, seed);
    table[0] = NULL;
    collect_twice();
    long f0 = thread_faults();
    struct bytes *b = lull_alloc_array(&bytes_type, bytes);
    CHECK(b != NULL, "allocation failed");
    for (size_t i = 0; i < bytes; i++)
        CHECK(b->b[i] == 0, "a reused large object reads %#x at byte %zu", b->b[i], i);
    bytes_fill(b, seed + 1);
    long f = thread_faults() - f0;
    bytes_verify(b, seed + 1, bytes, "reused large object");
    return f;
}

static int test_reuse(void)
{
#if TSANITIZED
    puts("memory_warm reuse: skipped under ThreadSanitizer (its shadow memory faults)");
    return 77;
#endif
    start("release-delay=3600s,mark-workers=1");
    const size_t bytes = 512 * 1024;
    long faults[8];
    for (int r = 0; r < 8; r++)
        faults[r] = reuse_round(bytes, 100u * (uint64_t)r);
    qsort(faults, 8, sizeof faults[0], cmp_long);
    long pages = (long)(bytes / 4096);
    lull_stats s = get_stats();
    printf("memory_warm reuse: median %ld faults for %ld pages (max %ld), %" PRIu64 " bytes released\n",
           faults[4], pages, faults[7], s.bytes_released);
    CHECK(faults[4] < pages / 4, "a reused large object took %ld faults for %ld pages (median)", faults[4], pages);
    CHECK(s.bytes_released == 0 && s.release_calls == 0,
          "%" PRIu64 " bytes released in %" PRIu64 " calls with release-delay=3600s",
          s.bytes_released, s.release_calls);
    lull_shutdown();
    return 0;
}

static int test_decay(uint64_t delay_ns)
{
    char params[64];
    snprintf(params, sizeof params, "release-delay=%" PRIu64 "ms", delay_ns / 1000000);
    start(params);
    fill_and_drop();
    lull_stats s0 = get_stats();
    uint64_t t0 = now_ns();
    collect_twice();
    double early = resident_share();
    lull_stats s1 = get_stats();
    uint64_t early_at = now_ns() - t0;
    if (delay_ns && early_at < delay_ns) {
        printf("memory_warm decay: %.2f resident %.0f ms after the collection began, %zu MiB free resident\n",
               early, (double)early_at / 1e6, (size_t)(s1.free_resident_bytes / MB));
        CHECK(early >= 0.75, "only %.2f of the dead objects' pages resident %.0f ms into a %.0f ms delay",
              early, (double)early_at / 1e6, (double)delay_ns / 1e6);
        CHECK(s1.free_resident_bytes >= (uint64_t)NOBJ * MB * 3 / 4,
              "free_resident_bytes = %" PRIu64 " MiB with %d MiB dead", s1.free_resident_bytes / MB, NOBJ);
    }
    /* The pages go first, the counters once the runs are back on the lists. */
    double late = early;
    lull_stats s2 = get_stats();
    uint64_t deadline = now_ns() + delay_ns + 6000000000ull;
    while ((late >= 0.25 || s2.bytes_released - s0.bytes_released < (uint64_t)NOBJ * MB * 3 / 4) &&
           now_ns() < deadline) {
        sleep_ms(20);
        late = resident_share();
        s2 = get_stats();
    }
    printf("memory_warm decay: %.2f resident %.0f ms after the collection began; %" PRIu64 " MiB released in %" PRIu64
           " calls\n", late, (double)(now_ns() - t0) / 1e6, (s2.bytes_released - s0.bytes_released) / MB,
           s2.release_calls - s0.release_calls);
    CHECK(late < 0.25, "%.2f of the dead objects' pages still resident after the delay", late);
    CHECK(s2.bytes_released - s0.bytes_released >= (uint64_t)NOBJ * MB * 3 / 4 && s2.release_calls > s0.release_calls,
          "bytes_released rose by %" PRIu64 " MiB", (s2.bytes_released - s0.bytes_released) / MB);
    lull_shutdown();
    if (delay_ns && early_at >= delay_ns) {
        printf("memory_warm decay: skipped, the collection took %.0f ms of a %.0f ms delay\n",
               (double)early_at / 1e6, (double)delay_ns / 1e6);
        return 77;
    }
    return 0;
}

#define AHEAD_ROUNDS 200
#define AHEAD_BYTES ((size_t)128 * 1024)
static struct refs *volatile kept;   /* a precise root */

static int test_ahead(void)
{
#if TSANITIZED
    puts("memory_warm ahead: skipped under ThreadSanitizer (its shadow memory faults)");
    return 77;
#endif
    start("release-delay=10s,mark-workers=1");
    CHECK(lull_root_add_refs((void **)&kept, 1) == 0, "lull_root_add_refs");
    kept = lull_alloc_array(&refs_type, AHEAD_ROUNDS);
    CHECK(kept, "lull_alloc_array");
    long faults[AHEAD_ROUNDS];
    for (int r = 0; r < AHEAD_ROUNDS; r++) {
        sleep_ms(4);
        long f0 = thread_faults();
        struct bytes *b = lull_alloc_array(&bytes_type, AHEAD_BYTES);
        CHECK(b != NULL, "allocation failed");
        bytes_fill(b, (uint64_t)r);
        faults[r] = thread_faults() - f0;
        lull_store(kept, &kept->item[r], b);
    }
    lull_stats s = get_stats();
    long pages = (long)(AHEAD_BYTES / 4096);
    qsort(faults + 50, AHEAD_ROUNDS - 50, sizeof faults[0], cmp_long);
    long median = faults[50 + (AHEAD_ROUNDS - 50) / 2];
    printf("memory_warm ahead: median %ld faults for %ld pages, %" PRIu64 " KiB touched ahead for %zu KiB allocated, %" PRIu64 " KiB free resident, %" PRIu64 " minors\n",
           median, pages, s.bytes_touched_ahead >> 10, (size_t)AHEAD_ROUNDS * AHEAD_BYTES >> 10, s.free_resident_bytes >> 10, s.collections_minor);
    for (int r = 0; r < AHEAD_ROUNDS; r++)
        bytes_verify((struct bytes *)kept->item[r], (uint64_t)r, AHEAD_BYTES, "kept large object");
    CHECK(median < pages / 4, "a new large object took %ld faults for %ld pages (median)", median, pages);
    CHECK(s.bytes_touched_ahead > 0, "bytes_touched_ahead = 0");
    lull_shutdown();
    return 0;
}

static int trim_result;
static void *trim_thread(void *arg)
{
    (void)arg;
    trim_result = lull_release_memory();
    return NULL;
}

static int test_trim(void)
{
    CHECK(lull_release_memory() == -EPERM, "lull_release_memory before lull_init");
    start("release-delay=3600s");
    fill_and_drop();
    collect_twice();
    sleep_ms(200);
    lull_stats s1 = get_stats();
    size_t rss1 = rss_bytes();
    double before = resident_share();
    CHECK(before >= 0.75, "only %.2f of the dead objects' pages resident before the trim", before);
    CHECK(s1.free_resident_bytes >= (uint64_t)NOBJ * MB * 3 / 4, "free_resident_bytes = %" PRIu64 " MiB",
          s1.free_resident_bytes / MB);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, trim_thread, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(trim_result == 0, "lull_release_memory = %d", trim_result);
    lull_stats s2 = get_stats();
    size_t rss2 = rss_bytes();
    double after = resident_share();
    printf("memory_warm trim: %" PRIu64 " MiB released in %" PRIu64 " calls, rss %zu -> %zu MiB, resident %.2f -> %.2f\n",
           (s2.bytes_released - s1.bytes_released) / MB, s2.release_calls - s1.release_calls, rss1 / MB, rss2 / MB,
           before, after);
    CHECK(s2.bytes_released - s1.bytes_released >= s1.free_resident_bytes, "released %" PRIu64 " of %" PRIu64 " MiB",
          (s2.bytes_released - s1.bytes_released) / MB, s1.free_resident_bytes / MB);
    CHECK(s2.free_resident_bytes == 0, "free_resident_bytes = %" PRIu64 " after the trim", s2.free_resident_bytes);
    CHECK(after < 0.05, "%.2f of the dead objects' pages resident after the trim", after);
    CHECK(rss2 + (size_t)NOBJ * MB / 2 <= rss1, "the RSS went from %zu to %zu MiB", rss1 / MB, rss2 / MB);
    CHECK(lull_release_memory() == 0, "a second lull_release_memory");
    lull_shutdown();
    CHECK(lull_release_memory() == -EPERM, "lull_release_memory after lull_shutdown");
    return 0;
}

static int test_options(void)
{
    const char *bad[] = { "release-delay=abc", "release-delay=5", "release-delay=-1s", "release-delay=3601s",
                          "release-delay=", "release-delay=1h", "release-delay=99999999999999999999s" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(lull_init(bad[i]) == -EINVAL, "lull_init(%s) accepted", bad[i]);
    const char *good[] = { "release-delay=0", "release-delay=250ms", "release-delay=3600s", "release-delay=0ns" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK(lull_init(good[i]) == 0, "lull_init(%s) refused", good[i]);
        lull_shutdown();
    }
    puts("memory_warm options: ok");
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "trim";
    if (!strcmp(mode, "reuse"))
        return test_reuse();
    if (!strcmp(mode, "decay"))
        return test_decay(1000000000ull);
    if (!strcmp(mode, "zero"))
        return test_decay(0);
    if (!strcmp(mode, "trim"))
        return test_trim();
    if (!strcmp(mode, "options"))
        return test_options();
    if (!strcmp(mode, "ahead"))
        return test_ahead();
    fprintf(stderr, "usage: test_memory_warm reuse|decay|zero|trim|options|ahead\n");
    return 2;
}
