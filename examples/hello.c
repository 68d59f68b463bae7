/* hello.c: the smallest complete lull program (README.md shows it whole).
 *   cc hello.c $(pkg-config --cflags --libs lull) -o hello && ./hello */
#include <lull.h>
#include <stdio.h>

/* Every object starts with a lull_header; its type says which words are references. */
struct node { lull_header h; struct node *left, *right; long value; };
static const lull_type node_type = {
    .name = "node", .size = sizeof(struct node),
    .refs = LULL_REF(struct node, left) | LULL_REF(struct node, right),
};

static struct node *tree;   /* a global holding a reference: a root (below) */

static struct node *make_tree(int depth, long *next)
{
    struct node *n = lull_alloc(&node_type);   /* zeroed; NULL with errno ENOMEM */
    if (!n)
        return NULL;
    n->value = (*next)++;                      /* plain data: a plain store */
    if (depth > 0) {
        LULL_SET(n, left, make_tree(depth - 1, next));   /* references: the barrier */
        LULL_SET(n, right, make_tree(depth - 1, next));
    }
    return n;
}

static long sum(const struct node *n) { return n ? n->value + sum(n->left) + sum(n->right) : 0; }

int main(void)
{
    if (lull_init(NULL) != 0)                  /* also attaches this thread */
        return 1;
    lull_root_add_refs((void **)&tree, 1);     /* precise root: may be updated when tree moves */
    long next = 0;
    tree = make_tree(14, &next);
    for (int i = 0; i < 100000; i++)           /* garbage: nothing keeps these */
        (void)lull_alloc(&node_type);
    lull_collect(LULL_GEN_MAJOR);

    lull_stats st;
    lull_get_stats(&st);
    long want = (next - 1) * next / 2;
    printf("%s: %ld nodes, sum %s; %llu minors, %llu majors, pause p99 %.1f us\n", lull_version(), next,
           sum(tree) == want ? "ok" : "WRONG", (unsigned long long)st.collections_minor,
           (unsigned long long)st.collections_major, st.pause_p99_ns / 1e3);
    int ok = sum(tree) == want;
    lull_root_remove((void **)&tree);
    lull_shutdown();
    return ok ? 0 : 1;
}
