/* A pause's wait for the background job to stop does not sleep when the
 * job leaves at once (issue 35: "a pause waits at most 0.1 ms for a
 * background job to stop"). A thread asleep on a condition variable takes
 * longer than that to wake on a virtual machine whose idle CPU halted
 * (0.4-0.8 ms measured in gcbench's pauses), so the stopper polls the
 * count of the job's threads first (trace/workers.c: spin_until_zero).
 *
 * Here the job spins on lull_workers_background_stopping() and returns as
 * soon as it reads true; the stop must then end in the poll, not asleep
 * (lull_workers_waits_slept unchanged), in at least one of ATTEMPTS tries
 * (one try may meet a descheduled worker). Without the poll every stop
 * sleeps. On one CPU the poll is off (it would take the worker's CPU):
 * skipped (77). */
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "base/gclock.h"
#include "trace/workers.h"
#include "unit.h"

#define ATTEMPTS 20

static atomic_bool entered;

static void spin_job(lull_tracer *tr, void *arg)
{
    (void)tr;
    (void)arg;
    atomic_store(&entered, true);
    while (!lull_workers_background_stopping())
        ;
}

int main(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) < 2) {
        printf("unit_stop_spin: one CPU: the poll is off, skipped\n");
        return 77;
    }
    UCHECK(lull_init("mark-workers=2,concurrent-sweep=no") == 0, "lull_init");
    unsigned quick = 0;
    for (int a = 0; a < ATTEMPTS; a++) {
        lull_gc_lock();
        lull_workers_stop_background();     /* whatever the collector left running */
        atomic_store(&entered, false);
        lull_workers_start_background(spin_job, NULL, 1);
        lull_gc_unlock();                   /* posts the job */
        while (!atomic_load(&entered))
            sched_yield();
        usleep(1000);                       /* the worker is in the job's loop, on its CPU */
        uint64_t slept = lull_workers_waits_slept();
        lull_gc_lock();
        lull_workers_stop_background();
        lull_gc_unlock();
        if (lull_workers_waits_slept() == slept)
            quick++;
    }
    printf("unit_stop_spin: %u of %d stops ended without sleeping\n", quick, ATTEMPTS);
    UCHECK(quick > 0, "every one of %d stops of a job that leaves at once slept on the condition variable", ATTEMPTS);
    lull_shutdown();
    printf("unit_stop_spin: ok\n");
    return 0;
}
