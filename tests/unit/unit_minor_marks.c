/* A minor leaves the mark bits alone. A large object whose type has a trace
 * function can only be visited whole, and once per minor however many of
 * its cards are dirty; the minor used to record that visit in the object's
 * mark bit and then clear the mark bits of every large object, which would
 * free a live large object during a concurrent mark (issue 9). Here the
 * object's mark bit is set before the minor and must still be set after;
 * with 128 dirty cards the trace function runs once per minor (with one
 * tracer and with two, which race for it), and every reference it holds is
 * forwarded out of the nursery, its target intact. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "space/heap.h"
#include "lull.h"
#include "space/nursery.h"
#include "unit.h"

#define SLOTS 2048   /* 16 KiB of slots: a large object, 128 cards */
#define EVERY ((1u << LULL_CARD_SHIFT) / sizeof(void *))   /* one young object per card */

struct big {
    lull_header h;
    void *slot[SLOTS];
};

struct small {
    lull_header h;
    uint64_t v[4];
};
static const lull_type small_type = { .name = "small", .size = sizeof(struct small) };

static atomic_int trace_calls;

static void big_trace(void *obj, lull_visit_fn visit, void *ctx)
{
    struct big *b = obj;
    atomic_fetch_add(&trace_calls, 1);
    for (size_t i = 0; i < SLOTS; i++)
        visit(&b->slot[i], ctx);
}
static const lull_type big_type = { .name = "big", .size = sizeof(struct big), .trace = big_trace };

static void *root[1];

static void fill_young(struct big *b, uint64_t seed)
{
    for (size_t i = 0; i < SLOTS; i += EVERY) {
        struct small *s = lull_alloc(&small_type);
        UCHECK(s != NULL, "alloc");
        for (int k = 0; k < 4; k++)
            s->v[k] = seed + i + (uint64_t)k;
        lull_store(b, &b->slot[i], s);
    }
}

/* Every target intact; most of them copied out of the nursery (a stale
 * word on this thread's stack may pin one or two in place: conservative
 * scanning, seen under AddressSanitizer). */
static void check_forwarded(struct big *b, uint64_t seed, const char *when)
{
    unsigned moved = 0, n = 0;
    for (size_t i = 0; i < SLOTS; i += EVERY, n++) {
        struct small *s = b->slot[i];
        UCHECK(s != NULL, "%s: slot %zu lost its reference", when, i);
        moved += !lull_in_nursery((uintptr_t)s);
        for (int k = 0; k < 4; k++)
            UCHECK(s->v[k] == seed + i + (uint64_t)k, "%s: slot %zu: target corrupt", when, i);
    }
    UCHECK(moved >= n / 2, "%s: only %u of %u targets were copied out of the nursery", when, moved, n);
}

static void run(const char *params)
{
    UCHECK(lull_init(params) == 0, "init %s", params);
    UCHECK(lull_root_add_refs(root, 1) == 0, "root");
    struct big *b = lull_alloc(&big_type);
    UCHECK(b != NULL, "alloc big");
    UCHECK(lull_block_of((uintptr_t)b)->state == LULL_BLOCK_LARGE_HEAD, "the test object is not a large object");
    root[0] = b;
    for (int round = 0; round < 3; round++) {
        uint64_t seed = (uint64_t)round << 32;
        fill_young(b, seed);
        UCHECK(lull_mark_set((uintptr_t)b), "%s: the mark bit was already set", params);
        atomic_store(&trace_calls, 0);
        lull_collect(LULL_GEN_NURSERY);
        UCHECK(lull_is_marked((uintptr_t)b), "%s, minor %d: the minor cleared a large object's mark bit", params,
               round);
        UCHECK(atomic_load(&trace_calls) == 1, "%s, minor %d: the trace function ran %d times (once expected)",
               params, round, atomic_load(&trace_calls));
        check_forwarded(b, seed, params);
        /* A major expects every mark bit clear when it starts. */
        lull_mark_clear_blocks(lull_block_index((uintptr_t)b), 1);
        lull_collect(LULL_GEN_MAJOR);
        check_forwarded(b, seed, params);
    }
    root[0] = NULL;
    lull_root_remove(root);
    lull_shutdown();
}

int main(void)
{
    run("mark-workers=1");
    run("mark-workers=2");
    printf("unit_minor_marks: ok\n");
    return 0;
}
