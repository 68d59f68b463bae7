/* A background job that a pause posts starts only when the gc lock is
 * released (workers.h): its threads are woken by the releasing thread
 * (lull_gc_defer). Woken inside the pause, a mark worker took the CPU from
 * the thread that still had to restart the world, and every thread that
 * needed the lock waited for the scheduler meanwhile: a request server's
 * initial pauses took 3-7 ms, almost all of it that wait.
 *
 * Here a concurrent mark is started with the gc lock held, and the lock is
 * kept 50 ms: no worker may have taken the mark's job by then, and one
 * must take it once the lock is released; the mark then ends and keeps
 * every node. */
#include <time.h>

#include "base/gclock.h"
#include "gc/collect.h"
#include "lull.h"
#include "space/heap.h"
#include "trace/workers.h"
#include "unit.h"

#define N 100000u

typedef struct node {
    lull_header h;
    struct node *next;
    uint64_t id;
} node;
static const lull_type node_type = { .name = "node", .size = sizeof(node), .refs = LULL_REF(node, next) };

static node *head;


static void sleep_ms(long ms)
{
    struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&d, NULL);
}

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "init");
    UCHECK(lull_root_add_refs((void **)&head, 1) == 0, "root");
    for (unsigned i = 0; i < N; i++) {
        node *n = lull_alloc(&node_type);
        UCHECK(n, "allocation");
        n->id = i;
        lull_store(n, &n->next, head);
        head = n;
    }
    lull_collect(LULL_GEN_MAJOR);               /* old now */

    lull_gc_lock();
    lull_workers_stop_background();             /* the last major's sweep: not counted */
    uint64_t before = lull_workers_background_taken();
    lull_collect_locked(LULL_COLLECT_MAJOR_START, "unit_bg_wake");
    UCHECK(lull_marking(), "no concurrent mark began");
    sleep_ms(50);
    uint64_t held = lull_workers_background_taken() - before;
    lull_gc_unlock();
    uint64_t after = 0;
    for (int i = 0; i < 2000 && !(after = lull_workers_background_taken() - before); i++)
        sleep_ms(1);
    printf("unit_bg_wake: the job was taken %llu times while the lock was held, %llu after its release\n",
           (unsigned long long)held, (unsigned long long)after);
    UCHECK(held == 0, "a worker took the mark's job %llu times before the gc lock was released",
           (unsigned long long)held);
    UCHECK(after > 0, "no worker took the mark's job after the gc lock was released");

    lull_collect(LULL_GEN_MAJOR);
    uint64_t count = 0;
    for (node *n = head; n; n = n->next, count++)
        UCHECK(n->id == N - 1 - count, "node %llu holds id %llu", (unsigned long long)count,
               (unsigned long long)n->id);
    UCHECK(count == N, "the list holds %llu of %u nodes", (unsigned long long)count, N);
    lull_shutdown();
    return 0;
}
