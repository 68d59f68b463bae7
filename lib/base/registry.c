/* registry.c — the list of attached threads' records and the registry
 * lock (registry.h). Linked and unlinked with the registry lock held
 * (gc/threads.c), read with it held. */
#include "base/registry.h"

#include <semaphore.h>
#include <stddef.h>

#include "base/util.h"

/* The registry lock: a binary semaphore (like the gc lock: a detaching
 * thread that waits for it during a pause must still answer the suspend
 * signal, which ThreadSanitizer does not deliver to a thread blocked in
 * pthread_mutex_lock), with its owner, so that its holder may take it
 * again (a pause's walks of the registry); depth counts the holds. */
static struct {
    sem_t sem;
    pthread_once_t once;
    _Atomic(pthread_t) owner;      /* valid while owned */
    atomic_bool owned;
    unsigned depth;
} reglock_g = { .once = PTHREAD_ONCE_INIT };

static void reglock_init(void)
{
    if (sem_init(&reglock_g.sem, 0, 1) != 0)
        lull_fatal("lull_thread_attach", "sem_init failed");
}

void lull_registry_lock(void)
{
    if (atomic_load_explicit(&reglock_g.owned, memory_order_acquire) &&
        pthread_equal(atomic_load_explicit(&reglock_g.owner, memory_order_relaxed), pthread_self())) {
        reglock_g.depth++;        /* only the owner sees itself as the owner */
        return;
    }
    pthread_once(&reglock_g.once, reglock_init);
    while (sem_wait(&reglock_g.sem) != 0)
        ;   /* EINTR: a signal handler ran */
    atomic_store_explicit(&reglock_g.owner, pthread_self(), memory_order_relaxed);
    atomic_store_explicit(&reglock_g.owned, true, memory_order_release);
    reglock_g.depth = 1;
}

void lull_registry_unlock(void)
{
    if (--reglock_g.depth)
        return;
    atomic_store_explicit(&reglock_g.owned, false, memory_order_relaxed);
    sem_post(&reglock_g.sem);
}

void lull_registry_lock_after_fork_child(void)
{
    /* The forking thread took it in the prepare handler and is the one
     * thread of the child: it owns it under its own id there. */
    atomic_store_explicit(&reglock_g.owner, pthread_self(), memory_order_relaxed);
}

__thread lull_thread *lull_thread_self __attribute__((tls_model("initial-exec")));

static struct {
    lull_thread *first;
    unsigned count;
} registry_g;

lull_thread *lull_threads_first(void) { return registry_g.first; }
unsigned lull_threads_count(void) { return registry_g.count; }

void lull_registry_init(void)
{
    registry_g.first = NULL;
    registry_g.count = 0;
}

void lull_registry_link(lull_thread *t)
{
    t->prev = NULL;
    t->next = registry_g.first;
    if (registry_g.first)
        registry_g.first->prev = t;
    registry_g.first = t;
    registry_g.count++;
}

void lull_registry_unlink(lull_thread *t)
{
    if (t->prev) t->prev->next = t->next;
    else registry_g.first = t->next;
    if (t->next) t->next->prev = t->prev;
    registry_g.count--;
}

void lull_registry_keep_only(lull_thread *self)
{
    registry_g.first = self;
    registry_g.count = self ? 1 : 0;
    if (self)
        self->next = self->prev = NULL;
}
