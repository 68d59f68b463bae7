/* Blocks prepared for promotion that the background job could not link.
 * The job takes a batch of blocks from the block space under the gc lock,
 * faults them in without it, and links them onto the empty list under it
 * again; asked to stop before it has the lock again, it leaves the batch
 * on a stash (major.c: prepare_batch). Those blocks are in use for the
 * block space and on no list: a pause's sweep, a release of every empty
 * block (what a failed allocation does before it retries at the heap's
 * limit) and a refill could not see them until the job's next batch
 * linked them. unit_evac_full saw it under AddressSanitizer, 1 run in 3:
 * a batch of 8 blocks linked after the test had set the heap's limit gave
 * its evacuation 8 blocks of room instead of 2.
 *
 * Here a test hook (lull_major_test_prepared) holds the job between the
 * fault-in and the relock until this thread, holding the gc lock, stops
 * the job: the batch is stashed, every time. The next pause must link it
 * (lull_major_link_unlinked), before anything in the pause or after it
 * looks at the empty list: the pause hook, which runs before the pausing
 * thread lets go of the gc lock (so before the job can take a batch
 * again), finds the stash empty and the stash's blocks counted as linked
 * (lull_major_prepared_blocks). The empty list itself may be a block
 * shorter by then: the pause's minor promotes what a stale stack word
 * pinned in the one before, which takes an empty block. */
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>
#include <errno.h>
#include <inttypes.h>

#include "gc/collect.h"
#include "space/heap.h"
#include "lull.h"
#include "unit.h"
#include "trace/workers.h"

#define N 40000          /* 48-byte objects: about 2 MiB promoted, a reserve of about 4 MiB */

struct item {
    lull_header h;
    struct item *next;
    uint64_t a, b;
};
static const lull_type item_type = {
    .name = "item", .size = sizeof(struct item), .refs = LULL_REF(struct item, next),
};

static void *root[1];
static atomic_int armed;
static sem_t in_flight;
static size_t stash_before_pause, empty_before_pause, stash_in_pause, empty_in_pause;
static uint64_t prepared_before_pause, prepared_in_pause;
static atomic_int pauses_seen;

/* The background job, between faulting a batch in and linking it. */
static void hold_batch(void)
{
    if (!atomic_exchange(&armed, 0))
        return;
    sem_post(&in_flight);
    while (!lull_workers_background_stopping())
        sched_yield();
}

static void on_pause(const lull_pause_event *ev, void *data)
{
    (void)ev;
    (void)data;
    if (atomic_fetch_add(&pauses_seen, 1) == 0) {
        stash_in_pause = lull_major_unlinked_blocks();
        empty_in_pause = lull_major_empty_bytes();
        prepared_in_pause = lull_major_prepared_blocks();
    }
}

static __attribute__((noinline)) void promote(void)
{
    struct item *head = NULL;
    for (size_t i = 0; i < N; i++) {
        struct item *it = lull_alloc(&item_type);
        UCHECK(it != NULL, "alloc item %zu", i);
        lull_store(it, &it->next, head);
        head = it;
    }
    root[0] = head;
}

int main(void)
{
    lull_major_test_prepared = hold_batch;     /* before any background job runs */
    UCHECK(lull_init("major=stw,mark-workers=2,finalizers=manual,nursery-size=4m,pause-target=10s") == 0,
           "lull_init");
    UCHECK(lull_root_add_refs(root, 1) == 0, "root");
    UCHECK(sem_init(&in_flight, 0, 0) == 0, "sem_init");
    /* lull_init posted a job that prepares the first minor's blocks: stop
     * it, so that the batch held below is the one after the minor. */
    lull_gc_lock();
    lull_workers_stop_background();
    lull_gc_unlock();

    /* A minor that promotes about 2 MiB sets the reserve (twice what minors
     * promote) above what is prepared: the sweep job starts after the
     * pause and prepares batches. The first is held. */
    promote();
    atomic_store(&armed, 1);
    lull_collect(LULL_GEN_NURSERY);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    int r;
    while ((r = sem_timedwait(&in_flight, &until)) != 0 && errno == EINTR)
        ;
    UCHECK(r == 0, "the background job prepared no batch in 30 s after a minor that promoted %d objects", N);

    /* Stop the job while it holds the batch: it cannot have the lock
     * again, so the batch goes to the stash. */
    lull_gc_lock();
    lull_workers_stop_background();
    stash_before_pause = lull_major_unlinked_blocks();
    empty_before_pause = lull_major_empty_bytes();
    prepared_before_pause = lull_major_prepared_blocks();
    lull_gc_unlock();
    UCHECK(stash_before_pause > 0, "the stopped job left no block on the stash");

    /* The next pause links the stash before anything else. */
    lull_set_pause_hook(on_pause, NULL);
    lull_collect(LULL_GEN_NURSERY);
    lull_set_pause_hook(NULL, NULL);
    lull_gc_lock();
    lull_workers_stop_background();         /* no job reads the hook while it changes */
    lull_major_test_prepared = NULL;
    lull_gc_unlock();
    printf("unit_prepare_stash: %zu blocks stashed; in the next pause %zu stashed and %zu KiB empty, "
           "against %zu KiB before\n", stash_before_pause, stash_in_pause, empty_in_pause >> 10,
           empty_before_pause >> 10);
    UCHECK(stash_in_pause == 0, "the pause left %zu of %zu stashed blocks unlinked", stash_in_pause,
           stash_before_pause);
    UCHECK(prepared_in_pause == prepared_before_pause + stash_before_pause,
           "%" PRIu64 " blocks linked by the pause, the stash held %zu", prepared_in_pause - prepared_before_pause,
           stash_before_pause);
    UCHECK(empty_in_pause + LULL_BLOCK_SIZE >= empty_before_pause + stash_before_pause * LULL_BLOCK_SIZE,
           "empty list %zu KiB in the pause, expected %zu + %zu blocks (one fewer at most)", empty_in_pause >> 10,
           empty_before_pause >> 10, stash_before_pause);

    /* The chain survived both minors. */
    size_t n = 0;
    for (struct item *it = root[0]; it; it = it->next)
        n++;
    UCHECK(n == N, "%zu of %d items reachable", n, N);
    lull_shutdown();
    return 0;
}
