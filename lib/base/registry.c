/* registry.c — the list of attached threads' records. Linked and unlinked
 * with the gc lock held (gc/threads.c), read with it held or the world
 * stopped. */
#include "base/registry.h"

#include <stddef.h>

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
