/*
 * prefault — a minor's promotion does not take the first-touch page faults
 * of fresh blocks in its pause (issue 10).
 *
 * Each round keeps 40,000 new nodes (about 2.5 MiB, 640 pages of blocks
 * for the copies), waits a little, then runs a minor and counts the page
 * faults the process took during it (getrusage: every thread, the
 * collector's workers included). The background job keeps EMPTY blocks
 * ready for the next promotion, their pages touched, twice what minors
 * promote on average (major.c: prepare_block). After five rounds of
 * warming up, the median minor must take under an eighth of the faults its
 * promotion would take on fresh memory (without the job: about 630 per
 * minor here; with it: 1 or 2).
 *
 * `prefault marking` does the same while a concurrent mark runs, started
 * before the first round and stretched by mark-delay past the last: the
 * mark has the background then, and its job's leader prepares the blocks
 * (mark.c: background_job). Without that, about 630 faults per minor.
 *
 * `prefault sweeping` first keeps 1.5 million old nodes (about 6,000
 * blocks) and runs a major: their blocks wait for the background sweep,
 * which takes several rounds, and the rounds wait 2 ms, not 100. Every
 * round after the first must take under a quarter of its promotion's
 * faults: the job prepares the blocks before it sweeps (major.c:
 * sweep_job). When it prepared them only once the sweep was done, the
 * rounds during the sweep took 320-640 faults each.
 *
 * Not under ThreadSanitizer (exit 77, which ctest reports as skipped):
 * its shadow memory takes about 8,000 faults per minor of its own, and
 * they drown the count.
 */
#include "check.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#include <sys/resource.h>

#define ROUNDS 20
#define PER_ROUND 40000u
#define SLOTS (1u << 20)

static struct refs *volatile keep;       /* a precise root */
static struct refs *volatile old;        /* sweeping: the old nodes */
#define OLD_NODES 1500000u

static long faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
#ifdef UNDER_TSAN
    printf("prefault: skipped under ThreadSanitizer (its shadow memory's page faults drown the count)\n");
    return 77;
#endif
    bool marking = argc > 1 && !strcmp(argv[1], "marking");
    bool sweeping = argc > 1 && !strcmp(argv[1], "sweeping");
    /* 100 ms after every 64 KiB slice: the 8 MiB array of references
     * alone takes the markers 12.8 s. */
    if (marking)
        CHECK(setenv("LULL_GC_DEBUG", "mark-delay=100000", 1) == 0, "setenv");
    CHECK(lull_init("nursery-size=4m,pause-target=10s") == 0, "lull_init");
    CHECK(lull_root_add_refs((void **)&keep, 1) == 0, "lull_root_add_refs");
    keep = lull_alloc_array(&refs_type, SLOTS);
    CHECK(keep, "lull_alloc_array");
    if (marking) {
        lull_set_pause_hook(mark_running_hook, NULL);
        CHECK(lull_set_allow_synchronous_major(false), "lull_set_allow_synchronous_major");
        for (int i = 0; i < 8 && !mark_running; i++)   /* dropped 8 MiB arrays: the allowance is 4 MiB */
            CHECK(lull_alloc_array(&refs_type, SLOTS), "lull_alloc_array");
        CHECK(mark_running, "no concurrent mark began");
    }
    if (sweeping) {
        CHECK(lull_root_add_refs((void **)&old, 1) == 0, "lull_root_add_refs");
        old = lull_alloc_array(&refs_type, OLD_NODES);
        CHECK(old, "lull_alloc_array");
        for (uint32_t i = 0; i < OLD_NODES; i++)
            lull_store(old, &old->item[i], tnode_new(i));
        lull_collect(LULL_GEN_MAJOR);
    }
    long f[ROUNDS];
    uint64_t promoted_pages = 0;
    uint32_t k = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (uint32_t i = 0; i < PER_ROUND; i++, k++)
            lull_store(keep, &keep->item[k % SLOTS], tnode_new(k));
        sleep_ms(sweeping ? 2 : 100);   /* the background job's turn */
        long f0 = faults();
        lull_collect(LULL_GEN_NURSERY);
        f[r] = faults() - f0;
        if (marking)
            CHECK(mark_running, "the concurrent mark ended before round %d of %d: the rest would show nothing", r + 1,
                  ROUNDS);
    }
    promoted_pages = (uint64_t)PER_ROUND * sizeof(struct tnode) / 4096;
    long worst = 0;
    for (int r = 1; r < ROUNDS; r++)
        worst = f[r] > worst ? f[r] : worst;
    qsort(f + 5, ROUNDS - 5, sizeof f[0], by_value);
    long median = f[5 + (ROUNDS - 5) / 2];
    printf("prefault%s: %" PRIu64 " pages promoted per minor; page faults in a minor: median %ld (first %ld, "
           "worst after it %ld)\n",
           marking ? " (in a concurrent mark)" : sweeping ? " (while the sweep runs)" : "", promoted_pages, median,
           f[0], worst);
    if (sweeping)
        CHECK((uint64_t)worst * 4 < promoted_pages, "a minor during the background sweep took %ld page faults "
              "promoting %" PRIu64 " pages' worth: its blocks were not prepared", worst, promoted_pages);
    CHECK((uint64_t)median * 8 < promoted_pages, "the median minor took %ld page faults promoting %" PRIu64
          " pages' worth: its blocks were not prepared", median, promoted_pages);
    for (uint32_t i = 0; i < k; i++)     /* k < SLOTS: slot i holds node i */
        CHECK(tnode_ok(keep->item[i], i), "node %u is wrong", i);
    if (sweeping)
        for (uint32_t i = 0; i < OLD_NODES; i++)
            CHECK(tnode_ok(old->item[i], i), "old node %u is wrong", i);
    lull_root_remove((void *)&keep);
    if (sweeping)
        lull_root_remove((void *)&old);
    lull_shutdown();
    return 0;
}
