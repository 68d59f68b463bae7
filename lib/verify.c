#include "verify.h"

#include "heap.h"
#include "trace.h"
#include "util.h"


/* ctx: the object whose references are checked. */
static void check_ref(void **slot, void *ctx)
{
    uintptr_t checking = (uintptr_t)ctx;
    uintptr_t v = (uintptr_t)*slot;
    if (!v)
        return;
    const char *name = lull_header_type(*(uintptr_t *)checking)->name;
    size_t off = (uintptr_t)slot - checking;
    uintptr_t obj = lull_find_object(v, false);
    if (!obj)
        lull_fatal("verify", "object %p (type %s): reference at offset %zu holds %p, "
                   "which is not the start of a heap object", (void *)checking,
                   name ? name : "?", off, (void *)v);
    if (!lull_is_marked(obj))
        lull_fatal("verify", "object %p (type %s): reference at offset %zu points to %p, "
                   "which is unmarked: a reachable object would be freed", (void *)checking,
                   name ? name : "?", off, (void *)v);
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
    lull_trace_slots(obj, check_ref, (void *)obj);
}

void lull_verify_marked(void)
{
    first_free_marked = 0;
    lull_heap_each_marked(false, verify_object, NULL);
    if (first_free_marked)
        lull_fatal("verify", "free slot %p was reached by the marker: a root holds a reference to a freed "
                   "object", (void *)first_free_marked);
}
