/* An evacuating major that runs out of memory for its copies. The heap's
 * limit is set (lull_space_set_limit, what max-heap-size sets) to what it
 * holds plus two blocks, with no empty block kept, so that the copies of a
 * sparse size class fill two fresh blocks and every other survivor must
 * stay where it is: claimed in place (PINNED in its header, against the
 * other marker, which may be copying it), marked, and untagged after the
 * mark. LULL_GC_DEBUG=verify checks the heap after that mark (a tag left in
 * a header is "corrupt"); here every survivor must be intact, its ring of
 * references whole, some moved and some not, and no header tagged. With
 * the limit lifted, the next major evacuates the rest, but not the two
 * blocks the first evacuation filled: they are not sparse (the rule is per
 * block, and a block's occupancy is what the last major marked there). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gc/collect.h"
#include "space/heap.h"
#include "lull.h"
#include "space/nursery.h"
#include "unit.h"
#include "trace/workers.h"

#define N     30000
#define KEEP  10

struct item {
    lull_header h;
    struct item *next;
    uint64_t id, sum, pad;
};
static const lull_type item_type = {
    .name = "item", .size = sizeof(struct item), .refs = LULL_REF(struct item, next),
};
struct refs {
    lull_array_header a;
    void *item[];
};
static const lull_type refs_type = {
    .name = "refs", .size = sizeof(struct refs), .elem_size = sizeof(void *), .elem_refs = 1,
};

static void *root[1];
static uintptr_t before[N];
static bool moved_before[N];   /* moved by the last major checked */

static uint64_t sum_of(uint64_t id)
{
    return id * 0x9e3779b97f4a7c15ull ^ 0x5bd1e995;
}

static __attribute__((noinline)) void build(void)
{
    struct refs *h = lull_alloc_array(&refs_type, N);
    UCHECK(h != NULL, "alloc holder");
    root[0] = h;
    for (size_t i = 0; i < N; i++) {
        struct item *it = lull_alloc(&item_type);
        UCHECK(it != NULL, "alloc item");
        it->id = i;
        it->sum = sum_of(i);
        lull_store(h, &h->item[i], it);
    }
    lull_collect(LULL_GEN_NURSERY);   /* all promoted: they die in the major heap */
    for (size_t i = 0; i < N; i++)
        if (i % KEEP) {
            lull_store(h, &h->item[i], NULL);
        } else {
            struct item *it = h->item[i];
            lull_store(it, &it->next, h->item[(i + KEEP) % N]);
        }
}

/* Survivors intact, the ring whole, no header tagged; returns how many
 * moved since `before` was recorded (and records again), and how many of
 * them had moved in the major before too (*again). */
static __attribute__((noinline)) size_t check(const char *when, size_t *again)
{
    struct refs *h = root[0];
    size_t moved = 0;
    *again = 0;
    for (size_t i = 0; i < N; i += KEEP) {
        struct item *it = h->item[i];
        UCHECK(it && it->id == i && it->sum == sum_of(i), "%s: item %zu corrupt", when, i);
        UCHECK(it->next == h->item[(i + KEEP) % N], "%s: item %zu's next is stale", when, i);
        UCHECK(*(uintptr_t *)it == (uintptr_t)&item_type, "%s: item %zu's header %#lx is tagged", when, i,
               (unsigned long)*(uintptr_t *)it);
        bool m = (uintptr_t)it != before[i];
        moved += m;
        *again += m && moved_before[i];
        moved_before[i] = m;
        before[i] = (uintptr_t)it;
    }
    return moved;
}

static __attribute__((noinline)) void clobber(void)
{
    volatile char buf[32768];
    memset((char *)buf, 0, sizeof buf);
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "verify", 0);   /* unless the caller asks for more (log) */
    UCHECK(lull_init("major=stw,mark-workers=2,finalizers=manual") == 0, "lull_init");
    UCHECK(lull_root_add_refs(root, 1) == 0, "root");
    build();
    clobber();
    lull_collect(LULL_GEN_MAJOR);   /* measures the class: a tenth live */
    size_t again;
    check("after the first major", &again);

    /* No empty block to copy into, and room for two more. The background
     * job stops first: a batch of blocks it was preparing for promotion
     * (major.c: prepare_batch) would otherwise be linked as empty after
     * the limit is set, 8 blocks of room more (seen under ASan; the
     * stopped job's stash is linked here, as a pause does). */
    lull_gc_lock();
    lull_workers_stop_background();
    lull_major_link_unlinked();
    lull_major_sweep_all();
    lull_major_release_empty(0);
    lull_space_release_pending();
    lull_space_set_limit(lull_space_in_use_bytes() + 2 * LULL_BLOCK_SIZE);
    lull_gc_unlock();
    lull_stats s0, s1, s2;
    lull_get_stats(&s0);
    clobber();
    lull_collect(LULL_GEN_MAJOR);
    lull_get_stats(&s1);
    size_t moved = check("after the major that ran out of blocks", &again);
    uint64_t evacuated = s1.objects_evacuated - s0.objects_evacuated;
    printf("unit_evac_full: %zu of %d survivors moved into the two blocks there was room for "
           "(%llu evacuated)\n", moved, N / KEEP, (unsigned long long)evacuated);
    UCHECK(moved > 0 && moved < (size_t)(N / KEEP) / 2 && evacuated == moved,
           "%zu moved, %llu counted: expected the two blocks' worth", moved, (unsigned long long)evacuated);

    lull_gc_lock();
    lull_space_set_limit(0);
    lull_gc_unlock();
    clobber();
    lull_collect(LULL_GEN_MAJOR);
    lull_get_stats(&s2);
    size_t first = moved;
    moved = check("with the limit lifted", &again);
    printf("unit_evac_full: then %zu more moved, %zu of them again\n", moved, again);
    UCHECK(moved + first == (size_t)(N / KEEP) && again == 0, "%zu moved once there was room, %zu of them again "
           "(out of a block the last evacuation filled)", moved, again);
    lull_root_remove(root);
    lull_shutdown();
    return 0;
}
