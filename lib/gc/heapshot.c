/* heapshot.c — heap-shots: lull_heap_shot (the next synchronous major's
 * mark, by type, to a callback) and LULL_GC_DEBUG=heap-shot=FILE (every
 * major's mark, appended to FILE).
 *
 * Callers: the pause scripts (collect.c) after a major's mark, world
 * stopped, and after its pause, world running; the program through
 * lull_heap_shot. Everything runs with the gc lock held. The tables are
 * mapped outside the pause where possible (a stopped thread may hold
 * malloc's lock) and kept for the life of the process. */
#include "gc/heapshot.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/os.h"
#include "base/util.h"
#include "gc/collect.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "trace/mark.h"
#include "trace/trace.h"
#include "trace/workers.h"

/* The counts of one heap-shot: open addressing on the type pointer, in
 * memory mapped before the pause (a stopped thread may hold malloc's
 * lock), then compacted into `usage` for the callback. */
#define SHOT_SLOTS ((size_t)1 << 16)
typedef struct heap_shot {
    lull_type_usage slot[SHOT_SLOTS];
    size_t used;
    bool full;
} heap_shot;

/* The shots asked for: gc lock held. */
static struct {
    heap_shot *shot;        /* lull_heap_shot: count the next synchronous mark */
    heap_shot *debug_shot;  /* heap-shot=FILE: count every major's mark */
} heapshot_g;

/* Type t's entry in h, claimed if new; NULL when the table is full. */
static lull_type_usage *shot_entry(heap_shot *h, const lull_type *t)
{
    size_t i = (size_t)(((uintptr_t)t >> 3) * 0x9e3779b97f4a7c15ull >> 48) & (SHOT_SLOTS - 1);
    for (size_t probe = 0; probe < SHOT_SLOTS; probe++, i = (i + 1) & (SHOT_SLOTS - 1)) {
        lull_type_usage *u = &h->slot[i];
        if (!u->type) {
            if (h->used == SHOT_SLOTS - 1)
                break;
            u->type = t;
            h->used++;
        }
        if (u->type == t)
            return u;
    }
    h->full = true;
    return NULL;
}

static void shot_count(uintptr_t obj, void *ctx)
{
    lull_type_usage *u = shot_entry(ctx, lull_header_type(*(uintptr_t *)obj));
    if (u) {
        u->objects++;
        u->bytes += lull_object_footprint(obj);
    }
}

static void shot_count_marked(uintptr_t obj, void *ctx)
{
    if (lull_is_marked(obj))
        shot_count(obj, ctx);
}

/* A heap-shot is counted by the mark's threads (the one that stopped the
 * world and the lull-mark/N workers, lull_workers_run), each into a table
 * of its own (shot_g.part[tracer id]: no shared counter, no lock),
 * claiming SHOT_CHUNK blocks at a time of the marked heap; then the
 * stopper adds the tables up into the shot, clearing them for the next,
 * and counts the nursery's marked objects itself (a few MiB at most).
 * The tables are mapped once, before the pause where it can be
 * (lull_heap_shot), and kept for the life of the process. */
#define SHOT_CHUNK 64u
static struct {
    heap_shot *part[LULL_MAX_WORKERS + 1];   /* by tracer id; gc lock held */
    atomic_size_t next_block;
    uint32_t frontier;
} shot_g;

/* Map the tables the mark's threads count into (gc lock held; plain
 * mmap, so also in a pause). false: no memory for one. */
static bool shot_parts_ready(void)
{
    for (unsigned i = 0; i <= lull_workers_count(); i++)
        if (!shot_g.part[i] && !(shot_g.part[i] = lull_os_reserve_rw(sizeof(heap_shot))))
            return false;
    return true;
}

static void shot_job(lull_tracer *tr, void *arg)
{
    (void)arg;
    heap_shot *h = shot_g.part[tr->id];
    size_t b0, b1;
    while (lull_claim(&shot_g.next_block, shot_g.frontier, SHOT_CHUNK, &b0, &b1))
        lull_trace_old_objects_in((uint32_t)b0, (uint32_t)b1, false, true, shot_count, h);
}

/* Add `from` (cleared as it is read) into `into`. */
static void shot_add(heap_shot *into, heap_shot *from)
{
    into->full |= from->full;
    for (size_t k = 0; k < SHOT_SLOTS && from->used; k++) {
        lull_type_usage *f = &from->slot[k];
        if (!f->type)
            continue;
        lull_type_usage *u = shot_entry(into, f->type);
        if (u) {
            u->objects += f->objects;
            u->bytes += f->bytes;
        }
        *f = (lull_type_usage){ 0 };
        from->used--;
    }
    from->used = 0;
    from->full = false;
}

/* The marked objects into h, after a mark (world stopped, gc lock held;
 * tr: the stopper's tracer). */
static void shot_take(heap_shot *h, lull_tracer *tr)
{
    unsigned n = lull_workers_count() + 1;
    if (!shot_parts_ready()) {      /* no memory for them: the stopper alone, into h */
        lull_heap_each_marked(false, shot_count, h);
        return;
    }
    shot_g.frontier = lull_frontier();
    atomic_store_explicit(&shot_g.next_block, 0, memory_order_relaxed);
    lull_workers_run(shot_job, NULL, tr, NULL);
    for (unsigned i = 0; i < n; i++)
        shot_add(h, shot_g.part[i]);
    lull_nursery_each_object(shot_count_marked, h);
}

static size_t shot_compact(heap_shot *h)
{
    size_t n = 0;
    for (size_t i = 0; i < SHOT_SLOTS; i++)
        if (h->slot[i].type)
            h->slot[n++] = h->slot[i];
    return n;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const lull_type_usage *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* LULL_GC_DEBUG=heap-shot=FILE, after a major's pause (world running, gc
 * lock held): append the counts of its mark, types by bytes, and clear
 * the table for the next major. */
static void write_debug_shot(uint64_t collection, bool synchronous)
{
    heap_shot *h = heapshot_g.debug_shot;
    size_t n = shot_compact(h);
    qsort(h->slot, n, sizeof h->slot[0], by_bytes_desc);
    uint64_t objects = 0, bytes = 0;
    for (size_t i = 0; i < n; i++)
        objects += h->slot[i].objects, bytes += h->slot[i].bytes;
    FILE *f = fopen(lull_cfg.heap_shot_file, "a");
    if (f) {
        fprintf(f, "# lull heap shot: collection %llu (%s major)%s, %zu types, %llu objects, %llu bytes\n",
                (unsigned long long)collection, synchronous ? "synchronous" : "concurrent",
                h->full ? " (table full: types missing)" : "", n, (unsigned long long)objects,
                (unsigned long long)bytes);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s %llu %llu\n", h->slot[i].type->name ? h->slot[i].type->name : "?",
                    (unsigned long long)h->slot[i].objects, (unsigned long long)h->slot[i].bytes);
        fclose(f);
    } else {
        lull_warn("lull_collect", "heap-shot: cannot append to '%s'", lull_cfg.heap_shot_file);
    }
    memset(h->slot, 0, n * sizeof h->slot[0]);
    h->used = 0;
    h->full = false;
}


/* heap-shot=FILE after a final pause: what it kept besides the marked
 * objects. */
static void shot_young(heap_shot *h)
{
    static uintptr_t young[LULL_LOS_MAX_YOUNG];     /* gc lock held */
    lull_nursery_each_object(shot_count, h);
    for (size_t i = 0, n = lull_los_young_list(young, LULL_LOS_MAX_YOUNG); i < n; i++)
        shot_count(young[i], h);
}

/* heap-shot=FILE: the table is mapped once and kept across lull_init
 * cycles (it is empty between majors). */
void lull_heapshot_init(void)
{
    static heap_shot *table;
    if (lull_cfg.heap_shot_file[0] && !table) {
        table = lull_os_reserve_rw(sizeof *table);
        if (!table)
            lull_warn("lull_init", "heap-shot: no memory for the table; no heap shots will be written");
    }
    heapshot_g.debug_shot = lull_cfg.heap_shot_file[0] ? table : NULL;
}

void lull_heapshot_after_mark(lull_tracer *tr, bool final)
{
    if (heapshot_g.shot && !final)
        shot_take(heapshot_g.shot, tr);     /* lull_heap_shot */
    if (heapshot_g.debug_shot) {
        shot_take(heapshot_g.debug_shot, tr);
        if (final)
            shot_young(heapshot_g.debug_shot);
    }
}

void lull_heapshot_after_pause(uint64_t collection, bool synchronous)
{
    if (heapshot_g.debug_shot)
        write_debug_shot(collection, synchronous);
}

int lull_heap_shot(lull_heap_shot_fn fn, void *data)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (!fn)
        return -EINVAL;
    heap_shot *h = lull_os_reserve_rw(sizeof *h);
    if (!h)
        return -ENOMEM;
    lull_gc_lock();
    if (!shot_parts_ready()) {      /* mapped now rather than in the pause */
        lull_gc_unlock();
        lull_os_unreserve(h, sizeof *h);
        return -ENOMEM;
    }
    heapshot_g.shot = h;
    lull_collect_locked(LULL_GEN_MAJOR, "heap shot");
    heapshot_g.shot = NULL;
    lull_gc_unlock();
    size_t n = shot_compact(h);
    bool full = h->full;
    if (!full)
        fn(h->slot, n, data);
    lull_os_unreserve(h, sizeof *h);
    return full ? -ENOMEM : 0;
}
