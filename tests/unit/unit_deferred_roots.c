/* The initial pause of a concurrent mark copies the registered roots'
 * values for the background job to grey (mark.c: deferred_root) instead
 * of greying each in the pause: a program that registered 1 Mi references
 * to old objects had initial pauses of 24 ms, 4-6 ms after (the loaded
 * 2-core VM). The final pause scans every root again, so a value the
 * program overwrote meanwhile costs nothing but floating garbage.
 *
 * Here 65,536 registered references to old objects: the initial pause of
 * lull_collect_start must leave all of their values to the markers
 * (without the deferral, none), and after the mark, and after another
 * one in which half the roots are dropped and the rest overwritten with
 * new objects while it runs, every object the roots hold must be intact.
 * ctest runs it with LULL_GC_DEBUG=verify-concurrent too: the final pause
 * then checks that the concurrent mark left nothing reachable unmarked. */
#include "base/gclock.h"
#include "lull.h"
#include "trace/mark.h"
#include "unit.h"

#define N 65536u

typedef struct obj {
    lull_header h;
    uint64_t id, check;
} obj;
static const lull_type obj_type = { .name = "obj", .size = sizeof(obj) };

static void *roots[N];

static obj *make(uint64_t id)
{
    obj *o = lull_alloc(&obj_type);
    UCHECK(o, "allocation");
    o->id = id;
    o->check = id * 2654435761u;
    return o;
}

static void check_all(const char *when)
{
    for (unsigned i = 0; i < N; i++) {
        const obj *o = roots[i];
        if (!o)
            continue;
        UCHECK(o->check == o->id * 2654435761u && o->id % N == i, "%s: root %u holds a damaged object", when, i);
    }
}

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "init");
    UCHECK(lull_root_add_refs(roots, N) == 0, "root");
    for (unsigned i = 0; i < N; i++)
        roots[i] = make(i);
    lull_collect(LULL_GEN_MAJOR);               /* old now */
    UCHECK(lull_collect_start() == 0, "lull_collect_start");
    lull_gc_lock();
    size_t deferred = lull_mark_deferred_roots();
    lull_gc_unlock();
    printf("unit_deferred_roots: the initial pause left %zu of %u root values to the markers\n", deferred, N);
    UCHECK(deferred >= N, "the initial pause left %zu of %u root values to the markers", deferred, N);
    lull_collect(LULL_GEN_MAJOR);
    check_all("after the first mark");

    UCHECK(lull_collect_start() == 0, "lull_collect_start");
    for (unsigned i = 0; i < N; i++)
        roots[i] = i % 2 ? NULL : make(i + N);
    lull_collect(LULL_GEN_MAJOR);
    check_all("after the second mark");
    lull_collect(LULL_GEN_MAJOR);
    check_all("after a synchronous major");
    lull_shutdown();
    return 0;
}
