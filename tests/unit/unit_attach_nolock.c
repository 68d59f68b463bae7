/*
 * unit_attach_nolock — attaching and detaching a thread do not wait for
 * the gc lock.
 *
 * Three threads attach, allocate a list of 10,000 nodes each and check it.
 * Then a helper holds the gc lock for up to 2 s (as a long collection, a
 * sweep under the lock or a stalled slow path would). Meanwhile: the
 * three threads detach (their records are parked, TLABs and free lists
 * waiting for the gc lock), then three new threads attach and detach
 * (without allocating: a TLAB refill takes the gc lock). Every attach and
 * every detach must return within 50 ms while the lock is still held.
 * Once the lock is free, a collection hands the parked records back: the
 * registry holds the main thread alone, bytes_allocated still counts the
 * detached threads' lists, and the program allocates on.
 */
#include "unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include <lull.h>
#include "base/gclock.h"
#include "base/registry.h"
#include "base/util.h"

enum { NODES = 10000, LIMIT_NS = 50000000 };

static atomic_int held, release_lock, ready, go_detach, done;

static void *holder(void *arg)
{
    (void)arg;
    lull_gc_lock();
    atomic_store(&held, 1);
    uint64_t t0 = lull_now_ns();
    while (!atomic_load(&release_lock) && lull_now_ns() - t0 < 2000000000u)
        usleep(1000);
    atomic_store(&held, 2);
    lull_gc_unlock();
    return NULL;
}

typedef struct node { lull_header h; struct node *next; uint64_t v; } node;
static const lull_type node_type = { .name = "node", .size = sizeof(node), .refs = 1u << 1 };

static bool registered(lull_thread *me)
{
    lull_registry_lock();
    bool found = false;
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        found |= t == me && !t->parked;
    lull_registry_unlock();
    return found;
}

/* Attach, allocate and check a list, then detach when told (timed). */
static void *allocator(void *arg)
{
    uint64_t *took = arg;
    UCHECK(lull_thread_attach() == 0, "attach");
    node *head = NULL;
    for (uint64_t i = 0; i < NODES; i++) {
        node *n = lull_alloc(&node_type);
        n->v = i;
        lull_store(n, &n->next, head);
        head = n;
    }
    uint64_t i = NODES;
    for (node *n = head; n; n = n->next)
        UCHECK(n->v == --i, "list intact");
    atomic_fetch_add(&ready, 1);
    while (!atomic_load(&go_detach))
        usleep(100);
    uint64_t t0 = lull_now_ns();
    lull_thread_detach();
    *took = lull_now_ns() - t0;
    atomic_fetch_add(&done, 1);
    return NULL;
}

/* Attach and detach (both timed), checking the record is in the registry. */
static void *visitor(void *arg)
{
    uint64_t *took = arg;
    uint64_t t0 = lull_now_ns();
    UCHECK(lull_thread_attach() == 0, "attach");
    took[0] = lull_now_ns() - t0;
    UCHECK(registered(lull_thread_self), "an attached thread is in the registry");
    t0 = lull_now_ns();
    lull_thread_detach();
    took[1] = lull_now_ns() - t0;
    atomic_fetch_add(&done, 1);
    return NULL;
}

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "lull_init");
    pthread_t a[3], v[3], h;
    uint64_t detach_ns[3], visit_ns[3][2];
    for (int i = 0; i < 3; i++)
        UCHECK(pthread_create(&a[i], NULL, allocator, &detach_ns[i]) == 0, "pthread_create");
    while (atomic_load(&ready) < 3)
        usleep(100);
    lull_stats s0;
    lull_get_stats(&s0);
    UCHECK(pthread_create(&h, NULL, holder, NULL) == 0, "pthread_create");
    while (!atomic_load(&held))
        usleep(100);
    atomic_store(&go_detach, 1);
    for (int i = 0; i < 3; i++)
        UCHECK(pthread_create(&v[i], NULL, visitor, visit_ns[i]) == 0, "pthread_create");
    while (atomic_load(&done) < 6 && atomic_load(&held) == 1)
        usleep(100);
    UCHECK(atomic_load(&held) == 1, "attach and detach did not return while the gc lock was held (%d of 6)",
           atomic_load(&done));
    for (int i = 0; i < 3; i++) {
        pthread_join(a[i], NULL);
        pthread_join(v[i], NULL);
        UCHECK(detach_ns[i] < LIMIT_NS, "detach %d took %.1f ms", i, detach_ns[i] / 1e6);
        UCHECK(visit_ns[i][0] < LIMIT_NS && visit_ns[i][1] < LIMIT_NS, "attach/detach %d took %.1f/%.1f ms", i,
               visit_ns[i][0] / 1e6, visit_ns[i][1] / 1e6);
    }
    atomic_store(&release_lock, 1);
    pthread_join(h, NULL);

    lull_collect(0);      /* its pause's end hands the parked records back */
    lull_registry_lock();
    unsigned n = lull_threads_count();
    lull_registry_unlock();
    UCHECK(n == 1, "%u records in the registry after the collection (want the main thread's alone)", n);
    lull_stats s1;
    lull_get_stats(&s1);
    UCHECK(s1.bytes_allocated >= 3 * NODES * sizeof(node),   /* less TLAB tails handed back */
           "bytes_allocated %llu then %llu", (unsigned long long)s0.bytes_allocated,
           (unsigned long long)s1.bytes_allocated);
    for (int i = 0; i < 100000; i++)
        UCHECK(lull_alloc(&node_type), "allocation after the detaches");
    lull_collect(1);
    lull_shutdown();
    printf("detach %.1f %.1f %.1f us; attach+detach %.1f+%.1f us; gc lock held elsewhere\n", detach_ns[0] / 1e3,
           detach_ns[1] / 1e3, detach_ns[2] / 1e3, visit_ns[0][0] / 1e3, visit_ns[0][1] / 1e3);
    return 0;
}
