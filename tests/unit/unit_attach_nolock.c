/*
 * unit_attach_nolock — attaching a thread does not wait for the gc lock.
 *
 * A helper holds the gc lock for 300 ms (as a long collection, a sweep
 * under the lock or a stalled slow path would). Meanwhile three threads
 * attach one after another: each attach must return within 50 ms, and
 * each thread is in the registry (lull_threads_count) as it returns. Once
 * the lock is free they allocate, check what they allocated and detach.
 * A pause right after (lull_collect) finds exactly the main thread.
 */
#include "unit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <lull.h>
#include "base/gclock.h"
#include "base/registry.h"
#include "base/util.h"

static atomic_int held, release_lock, attached_ok;

static void *holder(void *arg)
{
    (void)arg;
    lull_gc_lock();
    atomic_store(&held, 1);
    uint64_t t0 = lull_now_ns();
    while (!atomic_load(&release_lock) && lull_now_ns() - t0 < 300000000u)
        usleep(1000);
    lull_gc_unlock();
    return NULL;
}

typedef struct node { lull_header h; struct node *next; uint64_t v; } node;
static const lull_type node_type = { .name = "node", .size = sizeof(node), .refs = 1u << 1 };

static void *attacher(void *arg)
{
    uint64_t *took = arg;
    uint64_t t0 = lull_now_ns();
    UCHECK(lull_thread_attach() == 0, "attach");
    *took = lull_now_ns() - t0;
    lull_registry_lock();
    bool found = false;
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        found |= t == lull_thread_self;
    lull_registry_unlock();
    UCHECK(found, "an attached thread is in the registry");
    atomic_fetch_add(&attached_ok, 1);
    while (atomic_load(&held) == 1)
        usleep(1000);
    node *head = NULL;
    for (uint64_t i = 0; i < 10000; i++) {
        node *n = lull_alloc(&node_type);
        n->v = i;
        lull_store(n, &n->next, head);
        head = n;
    }
    uint64_t i = 10000;
    for (node *n = head; n; n = n->next)
        UCHECK(n->v == --i, "list intact");
    lull_thread_detach();
    return NULL;
}

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "lull_init");
    pthread_t h;
    UCHECK(pthread_create(&h, NULL, holder, NULL) == 0, "pthread_create");
    while (!atomic_load(&held))
        usleep(100);
    uint64_t took[3];
    for (int i = 0; i < 3; i++) {
        pthread_t a;
        UCHECK(pthread_create(&a, NULL, attacher, &took[i]) == 0, "pthread_create");
        while (atomic_load(&attached_ok) < i + 1 && atomic_load(&held) == 1)
            usleep(100);
        UCHECK(atomic_load(&held) == 1, "attach %d did not return while the gc lock was held", i);
        UCHECK(took[i] < 50000000u, "attach %d took %.1f ms with the gc lock held elsewhere", i, took[i] / 1e6);
        pthread_detach(a);
    }
    atomic_store(&release_lock, 1);
    pthread_join(h, NULL);
    atomic_store(&held, 2);
    while (1) {
        lull_registry_lock();
        unsigned n = lull_threads_count();
        lull_registry_unlock();
        if (n == 1)
            break;
        usleep(1000);
    }
    lull_collect(1);
    lull_shutdown();
    printf("attach took %.1f, %.1f, %.1f us with the gc lock held elsewhere\n", took[0] / 1e3, took[1] / 1e3,
           took[2] / 1e3);
    return 0;
}
