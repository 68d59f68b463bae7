/*
 * hello.c — the smallest complete lull program.
 *
 * It describes two types (a tree node with two references, an array of
 * references), builds a binary tree and a list, keeps the tree alive through a
 * global registered as a precise root, drops the list, collects, and prints the
 * collector's statistics.
 *
 *   cc hello.c $(pkg-config --cflags --libs lull) -o hello && ./hello
 */
#include <lull.h>

#include <stdio.h>
#include <stdlib.h>

/* A node: the lull_header comes first; `left` and `right` are references. */
struct node {
    lull_header h;
    struct node *left, *right;
    long value;
};

static const lull_type node_type = {
    .name = "node",
    .size = sizeof(struct node),
    .refs = LULL_REF(struct node, left) | LULL_REF(struct node, right),
};

/* An array of references: every element is one reference word. */
struct refs {
    lull_array_header a;
    void *item[];
};

static const lull_type refs_type = {
    .name = "refs",
    .size = sizeof(struct refs),
    .elem_size = sizeof(void *),
    .elem_refs = 1,
};

/* A global that holds a reference: registered as a precise root below. */
static struct refs *forest;

static struct node *make_tree(int depth, long *next_value)
{
    struct node *n = lull_alloc(&node_type);
    if (!n) {
        perror("lull_alloc");
        exit(1);
    }
    n->value = (*next_value)++;           /* plain data: a plain store */
    if (depth > 0) {
        /* References stored into a heap object go through the write barrier. */
        LULL_SET(n, left, make_tree(depth - 1, next_value));
        LULL_SET(n, right, make_tree(depth - 1, next_value));
    }
    return n;
}

static long tree_sum(const struct node *n)
{
    return n ? n->value + tree_sum(n->left) + tree_sum(n->right) : 0;
}

int main(void)
{
    if (lull_init(NULL) != 0) {           /* also attaches this thread */
        fprintf(stderr, "hello: lull_init failed\n");
        return 1;
    }

    /* A precise root: the collector reads (and may update) this one word. */
    lull_root_add_refs((void **)&forest, 1);

    forest = lull_alloc_array(&refs_type, 4);
    long next = 0;
    for (size_t i = 0; i < lull_array_length(forest); i++)
        lull_store(forest, &forest->item[i], make_tree(12, &next));

    /* A list that nothing keeps alive once the loop is over: garbage. */
    struct node *list = NULL;
    for (int i = 0; i < 100000; i++) {
        struct node *n = lull_alloc(&node_type);
        n->value = i;
        LULL_SET(n, right, list);
        list = n;
    }
    list = NULL;

    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_MAJOR);

    long sum = 0;
    for (size_t i = 0; i < lull_array_length(forest); i++)
        sum += tree_sum(forest->item[i]);
    long expect = (next - 1) * next / 2;  /* 0 + 1 + ... + (next-1) */

    lull_stats st;
    lull_get_stats(&st);
    printf("hello: %ld tree nodes, sum %ld (%s)\n", next, sum, sum == expect ? "ok" : "WRONG");
    printf("collections: %llu minor, %llu major (%llu synchronous)\n",
           (unsigned long long)st.collections_minor, (unsigned long long)st.collections_major,
           (unsigned long long)st.collections_major_sync);
    printf("pauses: %llu, total %.3f ms, p50 %.1f us, p99 %.1f us, max %.1f us\n",
           (unsigned long long)st.pauses, st.pause_total_ns / 1e6, st.pause_p50_ns / 1e3,
           st.pause_p99_ns / 1e3, st.pause_max_ns / 1e3);
    printf("allocated: %.1f KiB, heap now: %.1f KiB\n",
           st.bytes_allocated / 1024.0, st.heap_bytes / 1024.0);

    lull_root_remove((void **)&forest);
    lull_shutdown();
    return sum == expect ? 0 : 1;
}
