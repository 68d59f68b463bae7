/*
 * collect_start — lull_collect_start and lull_major_due:
 *
 *  - before lull_init lull_major_due, lull_collect_start and lull_collect_step return -EPERM;
 *  - with 48 MiB live, lull_collect_start returns 0 after the initial
 *    pause alone (one major pause, no major completed), long before the
 *    mark could be done (a synchronous mark of the heap takes longer than
 *    the call); a second call while the mark runs returns 1 and pauses
 *    nothing;
 *  - while the mark runs and nothing is allocated, lull_major_due turns to
 *    LULL_MAJOR_FINAL_DUE once the background work is done, and still no
 *    final pause has run (a query never collects); the next allocations
 *    run it, and the major completes with the live data intact;
 *  - a program that only allocates sees LULL_MAJOR_SOON before the next
 *    major's first pause, with allocation left before it;
 *  - major=stw: lull_collect_start runs a whole major and returns 0;
 *    lull_major_due says LULL_MAJOR_SYNC with SOON.
 */
#include "check.h"

static struct tnode *live;

static NOINLINE void build_live(size_t bytes)
{
    live = list_build(1, bytes / sizeof(struct tnode));
}

static NOINLINE void check_live(size_t bytes)
{
    const struct tnode *n = live;
    for (uint64_t id = 1; id <= bytes / sizeof(struct tnode); id++, n = n->next)
        CHECK(tnode_ok(n, id), "live node %" PRIu64 " broken", id);
}

static void concurrent(void)
{
    CHECK(lull_init("heap-growth=100") == 0, "init");
    lull_root_add_refs((void **)&live, 1);
    size_t bytes = (size_t)48 << 20;
    build_live(bytes);
    lull_collect(LULL_GEN_MAJOR);       /* everything old, the heap swept */
    lull_stats s0 = get_stats();
    uint64_t t0 = now_ns();
    CHECK(lull_collect_start() == 0, "start");
    uint64_t took = now_ns() - t0;
    CHECK(lull_collect_start() == 1, "start while a mark runs");
    lull_stats s1 = get_stats();
    printf("lull_collect_start: %.3f ms, %" PRIu64 " pause(s)\n", took / 1e6, s1.pauses - s0.pauses);
    CHECK(s1.pauses_major == s0.pauses_major + 1, "start ran %" PRIu64 " major pauses", s1.pauses_major - s0.pauses_major);
    CHECK(s1.collections_major == s0.collections_major, "start waited for the major");
    int due = 0;
    for (int i = 0; i < 20000 && !(due & LULL_MAJOR_FINAL_DUE); i++) {
        due = lull_major_due();
        sleep_ms(1);
    }
    CHECK(due & LULL_MAJOR_FINAL_DUE, "the mark never said its final pause is due (%d)", due);
    lull_stats s2 = get_stats();
    CHECK(s2.pauses == s1.pauses, "a pause ran while nothing allocated");
    for (int i = 0; i < 100000 && get_stats().collections_major == s0.collections_major; i++)
        CHECK(major_blob(3088) != NULL, "blob");
    lull_stats s3 = get_stats();
    CHECK(s3.collections_major == s0.collections_major + 1, "the final pause did not run");
    CHECK(!(lull_major_due() & LULL_MAJOR_FINAL_DUE), "final still due after the major");
    check_live(bytes);

    /* SOON before the next major's first pause. */
    uint64_t soon_at = 0, done = 0;
    lull_stats s4 = get_stats();
    while (get_stats().pauses_major == s4.pauses_major) {
        CHECK(major_blob(3088) != NULL, "blob");
        done += 3088;
        if (!soon_at && (lull_major_due() & LULL_MAJOR_SOON))
            soon_at = done;
        CHECK(done < ((uint64_t)1 << 32), "no major");
    }
    printf("SOON after %.1f MiB, the major's first pause after %.1f MiB\n", soon_at / 1048576.0, done / 1048576.0);
    CHECK(soon_at && soon_at < done, "SOON never came before the major's pause");
    check_live(bytes);
    lull_root_remove(&live);
    live = NULL;
    lull_shutdown();
}

static void stw(void)
{
    CHECK(lull_init("major=stw") == 0, "init");
    lull_stats s0 = get_stats();
    CHECK(lull_collect_start() == 0, "start, major=stw");
    lull_stats s1 = get_stats();
    CHECK(s1.collections_major_sync == s0.collections_major_sync + 1, "major=stw: no synchronous major");
    int due = 0;
    for (int i = 0; i < 10000000 && !(due & LULL_MAJOR_SOON); i++) {
        CHECK(major_blob(3088) != NULL, "blob");
        due = lull_major_due();
    }
    CHECK((due & (LULL_MAJOR_SOON | LULL_MAJOR_SYNC)) == (LULL_MAJOR_SOON | LULL_MAJOR_SYNC),
          "major=stw: due %d", due);
    lull_shutdown();
}

int main(void)
{
    CHECK(lull_major_due() == -EPERM, "lull_major_due before lull_init");
    CHECK(lull_collect_start() == -EPERM, "lull_collect_start before lull_init");
    CHECK(lull_collect_step(1000000) == -EPERM, "lull_collect_step before lull_init");
    concurrent();
    stw();
    printf("ok\n");
    return 0;
}
