/* A grey stack limited to a few entries (LULL_GC_DEBUG=mark-stack-limit)
 * overflows on a wide tree and a long list; the rescan must still find
 * every object. With poison and verify on, a lost object is caught. */
#include <stdlib.h>

#include "lull.h"
#include "trace/mark.h"
#include "unit.h"

struct node { lull_header h; struct node *a, *b, *c, *d; long id; };
static const lull_type node_type = {
    .name = "node", .size = sizeof(struct node),
    .refs = LULL_REF(struct node, a) | LULL_REF(struct node, b) | LULL_REF(struct node, c) | LULL_REF(struct node, d),
};

static long next_id;

static struct node *tree(int depth)
{
    struct node *n = lull_alloc(&node_type);
    n->id = next_id++;
    if (depth) {
        LULL_SET(n, a, tree(depth - 1));
        LULL_SET(n, b, tree(depth - 1));
        LULL_SET(n, c, tree(depth - 1));
        LULL_SET(n, d, tree(depth - 1));
    }
    return n;
}

static long count(struct node *n)
{
    if (!n)
        return 0;
    return 1 + count(n->a) + count(n->b) + count(n->c) + count(n->d);
}

static void *roots[2];

int main(void)
{
    setenv("LULL_GC_DEBUG", "verify,poison,mark-stack-limit=16", 1);
    UCHECK(lull_init(NULL) == 0, "init");
    UCHECK(lull_root_add_refs(roots, 2) == 0, "root");
    roots[0] = tree(7);                       /* 21845 nodes, 4-wide */
    long expect_tree = next_id;
    struct node *list = NULL;
    for (int i = 0; i < 50000; i++) {
        struct node *n = lull_alloc(&node_type);
        n->id = i;
        LULL_SET(n, a, list);
        list = n;
    }
    roots[1] = list;
    list = NULL;
    for (int i = 0; i < 3; i++)
        lull_collect(LULL_GEN_MAJOR);
    UCHECK(lull_mark_overflows() > 0, "the grey stack never overflowed: the test tests nothing");
    UCHECK(count(roots[0]) == expect_tree, "tree lost nodes");
    long n = 0;
    for (struct node *p = roots[1]; p; p = p->a, n++)
        UCHECK(p->id == 49999 - n, "list node %ld has id %ld", n, p->id);
    UCHECK(n == 50000, "list has %ld nodes", n);
    lull_shutdown();
    puts("unit_mark_overflow: ok");
    return 0;
}
