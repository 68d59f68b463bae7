/*
 * concurrent_mark — a concurrent mark ends, whatever the pauses do to it.
 *
 * The background mark scans a large object 64 KiB at a time and, stopped
 * by a pause in the middle of one, pushes it back on its grey stack with
 * the place to go on from. A minor during the mark pushes grey objects of
 * its own on top of that stack (its copies are black, their old children
 * greyed: allocate black). The mark took such an object for the one it
 * had stopped in, gave up at once, and did so after every later pause:
 * it never ended, and lull_collect(LULL_GEN_MAJOR), which waits for it,
 * never returned (the game-loop example hung at its first loading screen).
 *
 * Here: a 4 MiB array (64 slices) with an old node in every 64th slot
 * (the slices are most of a mark's work), marks stretched by
 * mark-delay (ctest sets LULL_GC_DEBUG; the delay also applies between
 * slices), a small nursery, and a mutator whose new nodes point to old
 * ones, stored into the array, so that every minor greys for the mark.
 * Explicit majors must keep ending; an alarm turns a stall into a failure.
 */
#include "check.h"

#include <signal.h>

#define SLOTS (512u << 10)    /* 4 MiB of references: a large object of 64 slices */
#define STRIDE 64u
#define MAJORS 6

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "concurrent_mark: a concurrent major did not end within 100 s "
                              "(the background mark stalled)\n";
    ssize_t r = write(2, msg, sizeof msg - 1);
    (void)r;
    _exit(1);
}

static struct refs *volatile big;
int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(100);
    CHECK(lull_init("nursery-size=256k,pause-target=10s,allow-synchronous-major=no") == 0, "lull_init");
    CHECK(lull_root_add_refs((void **)&big, 1) == 0, "lull_root_add_refs");
    big = lull_alloc_array(&refs_type, SLOTS);
    CHECK(big, "lull_alloc_array(%u refs)", SLOTS);
    /* A node in every STRIDE-th slot: the mark's time goes to the
     * array's slices, and a node in a slice it has not reached yet is
     * white. */
    for (uint32_t i = 0; i < SLOTS; i += STRIDE)
        lull_store(big, &big->item[i], tnode_new(i));
    lull_collect(LULL_GEN_NURSERY);      /* the nodes are old now */

    /* Each round: major-heap allocation (4 KiB objects, dropped) until the
     * policy starts a mark, whose background job begins on the array's
     * slices; then new nodes pointing to old ones (white: in slices not
     * scanned yet) stored into the array, whose minors stop the job in
     * the middle of the array and grey those old nodes for the mark (the
     * copies are black); then an explicit major, which waits for that
     * mark with nothing else running: the job must finish it alone. */
    static const lull_type blob4k = { .name = "blob4k", .size = 4096 };
    uint64_t rounds = 0;
    for (int m = 0; m < MAJORS; m++) {
        lull_stats s0;
        lull_get_stats(&s0);
        for (lull_stats s = s0; s.pauses_major == s0.pauses_major; lull_get_stats(&s))
            CHECK(lull_alloc_pinned(&blob4k), "lull_alloc_pinned(4 KiB)");
        for (int k = 0; k < 20000; k++, rounds++) {
            uint32_t i = (uint32_t)(mix64(rounds) % (SLOTS / STRIDE)) * STRIDE;
            struct tnode *n = tnode_new(SLOTS + rounds);
            LULL_SET(n, next, big->item[(i + STRIDE) % SLOTS]);
            lull_store(big, &big->item[i], n);
        }
        lull_collect(LULL_GEN_MAJOR);
    }
    for (uint32_t i = 0; i < SLOTS; i += STRIDE)
        CHECK(big->item[i] != NULL, "slot %u of the array lost its node", i);
    lull_root_remove((void *)&big);
    lull_shutdown();
    printf("concurrent_mark: %d majors ended while %" PRIu64 " nodes were stored\n", MAJORS, rounds);
    return 0;
}
