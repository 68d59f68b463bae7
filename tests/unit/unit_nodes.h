/* unit_nodes.h — what the unit tests of the concurrent mark (its
 * preclean, young large objects) share: a node with four references and
 * an id, an array of references, one phase of a major run at a time
 * (collect.c), and the wait for the background mark to be done. */
#ifndef UNIT_NODES_H
#define UNIT_NODES_H

#include <stdint.h>
#include <unistd.h>

#include "gc/collect.h"
#include "lull.h"
#include "trace/mark.h"
#include "unit.h"

struct node {
    lull_header h;
    struct node *k[4];
    uint64_t id;
};
static const lull_type node_type = {
    .name = "node", .size = sizeof(struct node),
    .refs = LULL_REF(struct node, k[0]) | LULL_REF(struct node, k[1]) | LULL_REF(struct node, k[2]) |
            LULL_REF(struct node, k[3]),
};
struct refs {
    lull_array_header a;
    void *item[];
};
static const lull_type refs_type = {
    .name = "refs", .size = sizeof(struct refs), .elem_size = sizeof(void *), .elem_refs = 1,
};

/* LULL_COLLECT_MAJOR_START or _FINISH (or a generation), with the gc lock. */
static inline void pause_now(int what)
{
    lull_gc_lock();
    lull_collect_locked(what, "unit test");
    lull_gc_unlock();
}

static inline void wait_mark_ready(void)
{
    for (int i = 0; i < 120000 && !lull_mark_ready(); i++)
        usleep(1000);
    UCHECK(lull_mark_ready(), "the concurrent mark was not done within 120 s");
}

#endif
