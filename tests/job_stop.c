/*
 * job_stop — a pause waits at most about 0.1 ms for the background job to
 * stop (issue 35 item 5).
 *
 * A concurrent mark with much work (a 16 MiB array of references to 2
 * million nodes, scanned in slices, and the nodes; synchronous majors off,
 * one thread asking for majors back to back) is interrupted by 200
 * minors. Every pause stops the job first; lull_stats.job_stop_cpu_max_ns
 * is the most CPU time the job's threads took from the stop request to
 * their return: the job's own stop latency, whatever the scheduler adds on
 * a loaded machine (that, with the wall-clock wait, is printed:
 * job_stop_wait_max_ns, job_stop_waits_slow). It must stay under 0.15 ms
 * (0.1 ms aimed at, with room for interrupts and page faults the thread's
 * CPU clock also counts); with 64 KiB slices and a look at the stop flag
 * every 64 objects it was 0.24-0.29 ms. Under a sanitizer the bound is
 * not checked (77): instrumentation makes every step several times
 * slower; the run still exercises the stopping.
 */
#include "check.h"

#include <stdatomic.h>


#define NODES 2000000u
#define BOUND_NS 150000u

static struct refs *volatile old;      /* a precise root */
static atomic_int done;

static void *majors(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "lull_thread_attach");
    while (!atomic_load(&done))
        lull_collect(LULL_GEN_MAJOR);
    lull_thread_detach();
    return NULL;
}

/* One run: a mark with much work, interrupted by 200 minors. */
static lull_stats run(lull_stats *before)
{
    atomic_store(&done, 0);
    CHECK(lull_init("mark-workers=2") == 0, "lull_init");
    CHECK(lull_root_add_refs((void **)&old, 1) == 0, "lull_root_add_refs");
    old = lull_alloc_array(&refs_type, NODES);
    CHECK(old, "lull_alloc_array");
    for (uint32_t i = 0; i < NODES; i++)
        lull_store(old, &old->item[i], tnode_new(i));
    CHECK(lull_set_allow_synchronous_major(false), "lull_set_allow_synchronous_major");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, majors, NULL) == 0, "pthread_create");
    sleep_ms(50);
    lull_stats s0 = get_stats();
    for (int r = 0; r < 200; r++) {
        for (int k = 0; k < 2000; k++)
            tnode_new((uint64_t)k);
        lull_collect(LULL_GEN_NURSERY);
        sleep_ms(1);
    }
    lull_stats s = get_stats();
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    for (uint32_t i = 0; i < NODES; i += 9973)
        CHECK(tnode_ok((const struct tnode *)old->item[i], i), "node %u corrupt", i);
    printf("job_stop: %" PRIu64 " pauses, %" PRIu64 " majors; the job took at most %.3f ms of CPU to stop; "
           "the wall-clock wait at most %.3f ms, over 0.1 ms in %" PRIu64 " pauses\n",
           s.pauses - s0.pauses, s.collections_major - s0.collections_major, s.job_stop_cpu_max_ns / 1e6,
           s.job_stop_wait_max_ns / 1e6, s.job_stop_waits_slow - s0.job_stop_waits_slow);
    lull_root_remove((void *)&old);
    old = NULL;
    lull_shutdown();
    *before = s0;
    return s;
}

/* The CPU clock of the job's threads also counts what interrupts and page
 * faults take from them: one such stop in a run (seen once beside another
 * test: 0.7 ms) says nothing of how often the job looks at its flag. The
 * bound must hold in one of up to three runs; the slices and polls it
 * checks miss it in every run. */
int main(void)
{
    for (int round = 0;; round++) {
        lull_stats s0, s = run(&s0);
        if (SANITIZED) {
            puts("job_stop: bound not checked under a sanitizer");
            return 77;
        }
        CHECK(s.collections_major > s0.collections_major, "no major ran beside the minors: no job was stopped");
        if (s.job_stop_cpu_max_ns <= BOUND_NS)
            return 0;
        CHECK(round < 2, "the background job took %.3f ms of CPU to stop (bound %.3f ms), in three runs",
              s.job_stop_cpu_max_ns / 1e6, BOUND_NS / 1e6);
    }
}
