/*
 * unit_alloc_slow — LULL_GC_DEBUG=alloc-slow sends every allocation
 * through the slow path (where the alloc_nursery probe fires): the inline
 * fast path's type cache (lull.h: the TLAB's type_ok/array_ok) is never
 * filled. Without the option the first allocation of a type fills it.
 */
#include <lull.h>
#include <stdlib.h>

#include "gc/threads.h"
#include "unit.h"

typedef struct node { lull_header h; struct node *next; } node;
static const lull_type node_type = { .name = "unit-node", .size = sizeof(node), .refs = LULL_REF(node, next) };

static const void *cached_after_allocating(void)
{
    for (int i = 0; i < 1000; i++)
        UCHECK(lull_alloc(&node_type) != NULL, "alloc");
    return lull_thread_self->tlab->type_ok;
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "alloc-slow", 1);
    UCHECK(lull_init(NULL) == 0, "lull_init with alloc-slow");
    UCHECK(cached_after_allocating() != &node_type, "alloc-slow: the fast path cached the type");
    lull_shutdown();

    unsetenv("LULL_GC_DEBUG");
    UCHECK(lull_init(NULL) == 0, "lull_init");
    UCHECK(cached_after_allocating() == &node_type, "without alloc-slow the fast path did not cache the type");
    lull_shutdown();
    puts("unit_alloc_slow: ok");
    return 0;
}
