#include "trace/verify.h"

#include <stdio.h>

#include "trace/handles.h"
#include "space/heap.h"
#include "trace/mark.h"
#include "space/nursery.h"
#include "trace/roots.h"
#include "trace/trace.h"
#include "base/util.h"

/* The final pause of a concurrent major kept the nursery and the young
 * large objects as roots, unmarked (lull_verify_marked). */
static bool young_roots;

static bool kept_young(uintptr_t v)
{
    return young_roots && (lull_in_nursery(v) || lull_young_large_at(v) == v);
}

/* Where a checked reference lies: in object `obj`, or (obj 0) in a root
 * of kind `root`. */
typedef struct where {
    uintptr_t obj;
    const char *root;
} where;

/* ctx: a where. */
static void check_ref(void **slot, void *ctx)
{
    const where *w = ctx;
    uintptr_t v = (uintptr_t)*slot;
    if (!v || kept_young(v) || (!w->obj && !lull_in_committed(v)))
        return;     /* a root may hold what is no heap pointer: the mark ignores it too */
    char at[160];
    if (w->obj) {
        const char *name = lull_header_type(*(uintptr_t *)w->obj)->name;
        snprintf(at, sizeof at, "object %p (type %s): reference at offset %zu", (void *)w->obj,
                 name ? name : "?", (size_t)((uintptr_t)slot - w->obj));
    } else {
        snprintf(at, sizeof at, "%s", w->root);
    }
    uintptr_t obj = lull_find_object(v, false);
    if (!obj)
        lull_fatal("verify", "%s holds %p, which is not the start of a heap object", at, (void *)v);
    if (!lull_is_marked(obj) && lull_mark_forwarded(obj) != obj)
        lull_fatal("verify", "%s points to %p, the old place of an object this major moved to %p: the "
                   "reference was not updated", at, (void *)v, (void *)lull_mark_forwarded(obj));
    if (!lull_is_marked(obj))
        lull_fatal("verify", "%s points to %p, which is unmarked: a reachable object would be freed", at,
                   (void *)v);
}

static uintptr_t first_free_marked;   /* a marked slot with no type (free) */

static void verify_object(uintptr_t obj, void *ctx)
{
    (void)ctx;
    uintptr_t hdr = *(uintptr_t *)obj;
    const lull_type *t = lull_header_type(hdr);
    if (!t && !(hdr & LULL_HDR_TAG_MASK)) {
        /* A free slot the marker reached through a dangling reference: the
         * object holding it is reported when its turn comes; if none does,
         * a root holds it (below). */
        if (!first_free_marked)
            first_free_marked = obj;
        return;
    }
    size_t room = lull_object_footprint(obj);
    /* NOMOVE, of lull_alloc_pinned, is the one tag an object keeps after a
     * collection. */
    if ((uintptr_t)t % sizeof(void *) || (hdr & LULL_HDR_TAG_MASK & ~LULL_HDR_NOMOVE))
        lull_fatal("verify", "object %p: corrupt header %p", (void *)obj, (void *)hdr);
    if (t->size < sizeof(lull_header) || t->size > room)
        lull_fatal("verify", "object %p: type %p claims size %zu in a %zu-byte slot",
                   (void *)obj, (const void *)t, t->size, room);
    if (t->elem_size) {
        size_t n = ((const uintptr_t *)obj)[1];
        if (n > (room - t->size) / t->elem_size)
            lull_fatal("verify", "object %p (type %s): array length %zu does not fit its %zu bytes",
                       (void *)obj, t->name ? t->name : "?", n, room);
    }
    where w = { .obj = obj };
    lull_trace_slots(obj, check_ref, &w);
}

static void check_weak(uintptr_t target, void *ctx)
{
    void *slot = (void *)target;
    check_ref(&slot, ctx);
}

static void verify_young_root(uintptr_t obj, void *ctx)
{
    (void)ctx;
    where w = { .obj = obj };
    lull_trace_slots(obj, check_ref, &w);
}

void lull_verify_marked(bool young)
{
    static uintptr_t young_large[LULL_LOS_MAX_YOUNG];    /* world stopped */
    young_roots = young;
    first_free_marked = 0;
    lull_heap_each_marked(false, verify_object, NULL);
    if (young) {
        lull_nursery_each_object(verify_young_root, NULL);
        for (size_t i = 0, n = lull_los_young_list(young_large, LULL_LOS_MAX_YOUNG); i < n; i++)
            verify_object(young_large[i], NULL);
    }
    /* The precise roots (registered, NORMAL handles, the finalizer queue)
     * and, after the weak pass, the weak handles name marked objects too
     * (or kept young ones): a root the mark did not update after moving
     * its target would not. */
    where root = { .root = "a precise root (registered, a NORMAL handle, or a queued finalizer)" };
    lull_roots_scan(NULL, check_ref, &root);
    where weak = { .root = "a weak handle" };
    lull_handles_each_weak(check_weak, &weak);
    if (first_free_marked)
        lull_fatal("verify", "free slot %p was reached by the marker: a root holds a reference to a freed "
                   "object", (void *)first_free_marked);
}
