/* A large object that dies young is freed by the next minor, also while
 * a concurrent mark runs (space/heap.h). Held until the mark's final
 * sweep instead, a server's dead request bodies (most of its large
 * objects) filled the major heap during every mark and were counted as
 * the program's allocation into it: majors every few tens of
 * milliseconds, and paced waits for the marker.
 *
 * The exception: one that the mark's initial pause left to the background
 * markers to scan in slices (mark.c: defer_young_large) stays until the
 * mark ends, dead or not, since a marker may still be scanning it.
 *
 * Nor may the mark keep the address of one it has not flagged: the
 * initial pause copies the registered roots' values for the background
 * markers to grey later (mark.c: deferred_root), and a minor may free a
 * young large object a copied value points to, and its run be reused,
 * before the copy is greyed. Such values are not copied.
 *
 * Here D (512 KiB of references, young at the initial pause, so left to
 * the markers) and E (the same, allocated after it) are dropped while the
 * mark runs (background-mark=no: it runs until this test ends it); a minor
 * must free E and keep D, and the final sweep then frees D. R (12 KiB, too
 * small to be sliced) is held by a registered root at the initial pause,
 * as D is: neither value may be copied, and the minor frees R. Each is
 * allocated by a thread of its own, which exits, and kept only by a
 * disguised address, so no conservative root reaches it. */
#include <pthread.h>

#include "base/gclock.h"
#include "lull.h"
#include "space/heap.h"
#include "trace/mark.h"
#include "unit_nodes.h"   /* refs_type */

#define N     (64u << 10)               /* references: 512 KiB */
#define MASK  ((uintptr_t)0x5a5a5a5a5a5a5a5aull)

static const lull_type blob_type = { .name = "blob12k", .size = 12u << 10 };

static struct refs *root_d;
static void *root_r;
static uintptr_t hidden_d, hidden_e, hidden_r;

static void *alloc_d(void *arg)
{
    (void)arg;
    UCHECK(lull_thread_attach() == 0, "attach");
    struct refs *d = lull_alloc_array(&refs_type, N);
    UCHECK(d, "allocation of D");
    root_d = d;
    hidden_d = (uintptr_t)d ^ MASK;
    void *r = lull_alloc(&blob_type);
    UCHECK(r, "allocation of R");
    root_r = r;
    hidden_r = (uintptr_t)r ^ MASK;
    lull_thread_detach();
    return NULL;
}

static void *alloc_e(void *arg)
{
    (void)arg;
    UCHECK(lull_thread_attach() == 0, "attach");
    struct refs *e = lull_alloc_array(&refs_type, N);
    UCHECK(e, "allocation of E");
    hidden_e = (uintptr_t)e ^ MASK;
    lull_thread_detach();
    return NULL;
}

static void in_thread(void *(*fn)(void *))
{
    pthread_t t;
    UCHECK(pthread_create(&t, NULL, fn, NULL) == 0, "pthread_create");
    UCHECK(pthread_join(t, NULL) == 0, "pthread_join");
}

/* Is the object at (disguised) address h still a large object? */
static int is_large(uintptr_t h)
{
    lull_gc_lock();
    int state = lull_block_of(h ^ MASK)->state;
    lull_gc_unlock();
    return state == LULL_BLOCK_LARGE_HEAD;
}

int main(void)
{
    UCHECK(lull_init("background-mark=no") == 0, "init");
    UCHECK(lull_root_add_refs((void **)&root_d, 1) == 0, "root");
    UCHECK(lull_root_add_refs(&root_r, 1) == 0, "root");
    in_thread(alloc_d);
    UCHECK(lull_collect_start() == 0, "no mark started");
    UCHECK(lull_marking(), "no mark runs");
    size_t copied = lull_mark_deferred_roots();
    root_d = NULL;
    root_r = NULL;
    in_thread(alloc_e);
    lull_collect(LULL_GEN_NURSERY);
    UCHECK(lull_marking(), "the mark ended before the test did");
    int d_kept = is_large(hidden_d), e_kept = is_large(hidden_e), r_kept = is_large(hidden_r);
    printf("unit_young_large_mark: root values copied for the markers: %zu; after a minor during the mark: "
           "D (left to the markers) %s, E %s, R %s\n", copied, d_kept ? "kept" : "freed",
           e_kept ? "kept" : "freed", r_kept ? "kept" : "freed");
    UCHECK(copied == 0, "the initial pause copied %zu root values that point at young large objects", copied);
    UCHECK(d_kept, "the minor freed a young large object the mark had left to its markers");
    UCHECK(!e_kept && !r_kept, "the minor kept a dead young large object while a mark ran");
    lull_collect(LULL_GEN_MAJOR);
    UCHECK(!is_large(hidden_d), "the major kept D, dead since the mark began");
    lull_shutdown();
    return 0;
}
