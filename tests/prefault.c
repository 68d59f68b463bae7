/*
 * prefault — a minor's promotion does not take the first-touch page faults
 * of fresh blocks in its pause (issue 10).
 *
 * Each round keeps 40,000 new nodes (about 2.5 MiB, 640 pages of blocks
 * for the copies), waits a little, then runs a minor and counts the page
 * faults the calling thread took during it (getrusage RUSAGE_THREAD). With
 * mark-workers=1 that thread alone copies in a minor, so the count is the
 * pause's own and not the background job's, which may start preparing
 * blocks again before lull_collect returns. The background job keeps EMPTY
 * blocks ready for the next promotion, their pages touched, twice what
 * minors promote on average (major.c: prepare_batch). After five rounds of
 * warming up, the median minor must take under an eighth of the faults its
 * promotion would take on fresh memory (without the job: one a page), and
 * the first under a quarter (lull_init makes a nursery's worth ready
 * before it returns; the first minor also touches the grey stack's
 * sections and such for the first time).
 *
 * `prefault marking` does the same while a concurrent mark runs, started
 * before the first round and stretched by mark-delay past the last: the
 * mark has the background then, and its job's leader prepares the blocks
 * (mark.c: background_job). Without that, one fault a page.
 *
 * `prefault sweeping` first keeps 3 million old nodes (about 12,000
 * blocks) and runs a major: their blocks wait for the background sweep.
 * Each round waits until the empty blocks cover its promotion
 * (lull_stats.heap_empty_bytes) instead of a fixed time: how soon the job
 * gets there depends on the machine and the sanitizer. When blocks are
 * pending sweep as the wait begins, the job must get there within 2 s
 * (it prepares the blocks before it sweeps, major.c: sweep_job: one that
 * swept first would get there only once the sweep was done, if at all), and
 * each such round's minor must take under a quarter of its promotion's
 * faults. Skipped (77) when
 * the sweep ended before three rounds: nothing would be shown.
 *
 * `prefault first` allocates at once after lull_init, with no wait for
 * the background job: lull_init itself has made the first minor's room
 * ready (the heap's empty blocks cover the promotion as it returns), and
 * that first minor, run as soon as the nodes are kept, must take under
 * half of its promotion's faults (it also touches its grey stack's
 * sections for the first time: the array's cards grey every node before
 * any is scanned, some 80 pages, more under AddressSanitizer). Left to the
 * background job, the room is not there yet when lull_init returns, and
 * the minor meets the job halfway.
 *
 * Not under ThreadSanitizer (exit 77, which ctest reports as skipped):
 * its shadow memory takes about 8,000 faults per minor of its own, and
 * they drown the count.
 */
#include "check.h"

#include <sys/resource.h>

/* Internal (the major heap): blocks the last major left for the sweep remain.
 * Read without the gc lock; a stale answer only moves a round in or out. */
bool lull_major_sweep_pending(void);

#define ROUNDS 20
#define PER_ROUND 40000u
#define SLOTS (1u << 20)

static struct refs *volatile keep;       /* a precise root */
static struct refs *volatile old;        /* sweeping: the old nodes */
#define OLD_NODES 3000000u

static long faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_minflt;
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

static int first_minor(void)
{
    static struct refs *volatile few;    /* a precise root */
    uint64_t promoted_bytes = (uint64_t)PER_ROUND * sizeof(struct tnode), promoted_pages = promoted_bytes / 4096;
    CHECK(lull_init("nursery-size=4m,pause-target=10s,mark-workers=1") == 0, "lull_init");
    lull_stats s;
    lull_get_stats(&s);
    printf("prefault (first minor): %" PRIu64 " KiB of empty blocks as lull_init returns, the first minor "
           "promotes %" PRIu64 " KiB\n", (uint64_t)s.heap_empty_bytes >> 10, promoted_bytes >> 10);
    CHECK(s.heap_empty_bytes >= promoted_bytes, "lull_init returned with %" PRIu64 " KiB of blocks ready, short of "
          "the first minor's %" PRIu64 " KiB: it left them to the background job", (uint64_t)s.heap_empty_bytes >> 10,
          promoted_bytes >> 10);
    CHECK(lull_root_add_refs((void **)&few, 1) == 0, "lull_root_add_refs");
    few = lull_alloc_array(&refs_type, PER_ROUND);
    CHECK(few, "lull_alloc_array");
    for (uint32_t i = 0; i < PER_ROUND; i++)
        lull_store(few, &few->item[i], tnode_new(i));
    long f0 = faults();
    lull_collect(LULL_GEN_NURSERY);
    long f = faults() - f0;
    printf("prefault (first minor): %ld page faults promoting %" PRIu64 " pages' worth\n", f, promoted_pages);
    CHECK((uint64_t)f * 2 < promoted_pages, "the first minor took %ld page faults promoting %" PRIu64 " pages' "
          "worth: its blocks were not ready", f, promoted_pages);
    for (uint32_t i = 0; i < PER_ROUND; i++)
        CHECK(tnode_ok(few->item[i], i), "node %u is wrong", i);
    lull_root_remove((void *)&few);
    lull_shutdown();
    return 0;
}

int main(int argc, char **argv)
{
#if TSANITIZED
    printf("prefault: skipped under ThreadSanitizer (its shadow memory's page faults drown the count)\n");
    return 77;
#endif
    bool marking = argc > 1 && !strcmp(argv[1], "marking");
    bool sweeping = argc > 1 && !strcmp(argv[1], "sweeping");
    if (argc > 1 && !strcmp(argv[1], "first"))
        return first_minor();
    /* 100 ms after every 16 KiB slice: the 8 MiB array of references
     * alone takes the markers 51 s. */
    if (marking)
        CHECK(setenv("LULL_GC_DEBUG", "mark-delay=100000", 1) == 0, "setenv");
    CHECK(lull_init("nursery-size=4m,pause-target=10s,mark-workers=1") == 0, "lull_init");
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
    bool during_sweep[ROUNDS] = {false};
    int ready_in_sweep = 0;   /* rounds that saw the room ready with blocks still pending sweep */
    uint64_t promoted_pages = 0, promoted_bytes = (uint64_t)PER_ROUND * sizeof(struct tnode);
    uint32_t k = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (uint32_t i = 0; i < PER_ROUND; i++, k++)
            lull_store(keep, &keep->item[k % SLOTS], tnode_new(k));
        if (sweeping) {   /* the background job's turn, however long it takes here */
            uint64_t give_up = now_ns() + 2000000000ull;
            during_sweep[r] = lull_major_sweep_pending();
            lull_stats s;
            for (lull_get_stats(&s); s.heap_empty_bytes < promoted_bytes && now_ns() < give_up;
                 lull_get_stats(&s))
                nanosleep(&(struct timespec){0, 100000}, NULL);
            /* Read after the room was seen: the room was there while blocks still were. */
            if (during_sweep[r] && s.heap_empty_bytes >= promoted_bytes && lull_major_sweep_pending())
                ready_in_sweep++;
            CHECK(!during_sweep[r] || s.heap_empty_bytes >= promoted_bytes,
                  "round %d: the background job had %" PRIu64 " KiB of blocks ready (%s), short of the %" PRIu64
                  " KiB the minor promotes: it does not prepare them before it sweeps", r,
                  (uint64_t)s.heap_empty_bytes >> 10,
                  lull_major_sweep_pending() ? "after 2 s of the sweep" : "when the sweep ended", promoted_bytes >> 10);
        } else {
            sleep_ms(100);
        }
        long f0 = faults();
        lull_collect(LULL_GEN_NURSERY);
        f[r] = faults() - f0;
        if (marking)
            CHECK(mark_running, "the concurrent mark ended before round %d of %d: the rest would show nothing", r + 1,
                  ROUNDS);
    }
    promoted_pages = promoted_bytes / 4096;
    long worst = 0;
    int nsweep = 0;
    for (int r = 1; r < ROUNDS; r++)
        if (!sweeping || during_sweep[r]) {
            worst = f[r] > worst ? f[r] : worst;
            nsweep++;
        }
    if (sweeping && nsweep < 3) {
        printf("prefault (while the sweep runs): skipped, the sweep ended after %d of %d rounds\n", nsweep, ROUNDS);
        return 77;
    }
    qsort(f + 5, ROUNDS - 5, sizeof f[0], by_value);
    long median = f[5 + (ROUNDS - 5) / 2];
    printf("prefault%s: %" PRIu64 " pages promoted per minor; page faults in a minor: median %ld (first %ld, "
           "worst after it %ld%s)\n",
           marking ? " (in a concurrent mark)" : sweeping ? " (while the sweep runs)" : "", promoted_pages, median,
           f[0], worst, sweeping ? ", over the rounds during the sweep" : "");
    if (sweeping)
        CHECK((uint64_t)worst * 4 < promoted_pages, "a minor during the background sweep took %ld page faults "
              "promoting %" PRIu64 " pages' worth: its blocks were not prepared", worst, promoted_pages);
    if (sweeping) {
        printf("prefault (while the sweep runs): %d of %d rounds ran while blocks were pending sweep, %d saw the "
               "blocks ready before the sweep ended\n", nsweep, ROUNDS - 1, ready_in_sweep);
        CHECK(ready_in_sweep > 0, "no round saw the blocks ready before the sweep ended: the job prepares them "
              "only after it sweeps");
    }
    /* The very first minor too: lull_init has the job prepare a nursery's
     * worth of blocks before anything is measured. */
    if (!marking && !sweeping)
        CHECK((uint64_t)f[0] * 4 < promoted_pages, "the first minor took %ld page faults promoting %" PRIu64
              " pages' worth: its blocks were not prepared at lull_init", f[0], promoted_pages);
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
