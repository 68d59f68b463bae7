/*
 * gcbench.c — the classic binary-tree GC benchmark (John Ellis and Pete
 * Kovac's GCBench, as adapted to C by Hans Boehm), written against gcshim.h
 * so the same code runs on lull and on Boehm GC.
 *
 * It builds a temporary "stretch" tree of depth 18, a long-lived tree of
 * depth 16 and a long-lived pointer-free array of 500000 doubles, then for
 * depths 4, 6, ..., 16 builds 2 * TreeSize(18) / TreeSize(depth) trees top
 * down (allocate a node, then populate its children) and as many bottom up
 * (children first), dropping each tree at once.
 *
 *   gcbench_lull [-v] [--threads N]      (gcbench_boehm: same)
 *
 * With --threads N every thread runs the depth loop on its own trees while
 * the long-lived data stays shared.
 *
 * The long-lived tree's nodes are numbered in preorder (i) with their
 * height (j) once it is built. After the timed run (not part of time_ms)
 * the whole tree is walked: every node must carry its preorder number and
 * height, inner nodes two children, leaves none, TreeSize(16) nodes in
 * all; and every element of the array must hold what was written (1/(i+1)
 * in the first half, 0 in the second). A failure prints a message on
 * stderr and exits 1 without a RESULT line. Prints the RESULT line (see
 * gcshim.h) with checksum= over the tree's numbers and the array's bits,
 * then the PAUSES line.
 */
#include "gcshim.h"

#include <pthread.h>
#include <string.h>

typedef struct Node {
    gcshim_header h;
    struct Node *left, *right;
    int i, j;
} Node;
GCSHIM_TYPE(node_type, Node, GCSHIM_REF(Node, left) | GCSHIM_REF(Node, right));

typedef struct DoubleArray {
    gcshim_array_header a;
    double d[];
} DoubleArray;
GCSHIM_ARRAY_TYPE(doubles_type, DoubleArray, sizeof(double), 0);

enum {
    kStretchTreeDepth = 18,
    kLongLivedTreeDepth = 16,
    kArraySize = 500000,
    kMinTreeDepth = 4,
    kMaxTreeDepth = 16,
};

static int verbose;

/* Nodes in a complete binary tree of depth i. */
static int TreeSize(int i) { return (1 << (i + 1)) - 1; }

/* Trees to build at depth i: as many nodes as two stretch trees. */
static int NumIters(int i) { return 2 * TreeSize(kStretchTreeDepth) / TreeSize(i); }

static Node *NewNode(Node *l, Node *r)
{
    Node *n = gcshim_alloc(&node_type);
    if (l)
        GCSHIM_SET(n, left, l);
    if (r)
        GCSHIM_SET(n, right, r);
    return n;
}

/* Top down: the parent exists before its children. */
static void Populate(int depth, Node *n)
{
    if (depth <= 0)
        return;
    depth--;
    GCSHIM_SET(n, left, NewNode(NULL, NULL));
    GCSHIM_SET(n, right, NewNode(NULL, NULL));
    Populate(depth, n->left);
    Populate(depth, n->right);
}

/* Bottom up: children first. */
static Node *MakeTree(int depth)
{
    if (depth <= 0)
        return NewNode(NULL, NULL);
    Node *l = MakeTree(depth - 1);
    Node *r = MakeTree(depth - 1);
    return NewNode(l, r);
}

/* Number the long-lived tree: i = preorder number, j = height. */
static void Number(Node *n, int depth, int *next)
{
    n->i = (*next)++;
    n->j = depth;
    if (depth > 0) {
        Number(n->left, depth - 1, next);
        Number(n->right, depth - 1, next);
    }
}

static void fail(const char *what, long a, long b)
{
    fprintf(stderr, "gcbench: FAILED: %s (%ld, %ld): long-lived data lost or damaged\n", what, a, b);
    exit(1);
}

/* Walk the long-lived tree as Number left it; fold each node into *sum. */
static void VerifyTree(const Node *n, int depth, int *next, uint64_t *sum)
{
    if (!n)
        fail("node missing at height", depth, *next);
    if (n->i != *next || n->j != depth)
        fail("node out of place (preorder number, height)", n->i, n->j);
    (*next)++;
    *sum = gcshim_fold(*sum, ((uint64_t)(uint32_t)n->i << 32) | (uint32_t)n->j);
    if (depth > 0) {
        if (!n->left || !n->right || n->left == n->right)
            fail("inner node without two children", n->i, depth);
        VerifyTree(n->left, depth - 1, next, sum);
        VerifyTree(n->right, depth - 1, next, sum);
    } else if (n->left || n->right) {
        fail("leaf with a child", n->i, depth);
    }
}

static uint64_t VerifyLongLived(const Node *tree, const DoubleArray *array)
{
    uint64_t sum = 0;
    int next = 0;
    VerifyTree(tree, kLongLivedTreeDepth, &next, &sum);
    if (next != TreeSize(kLongLivedTreeDepth))
        fail("long-lived tree has the wrong node count", next, TreeSize(kLongLivedTreeDepth));
    if (array->a.length != kArraySize)
        fail("array length changed", (long)array->a.length, kArraySize);
    for (int i = 0; i < kArraySize; i++) {
        double want = i < kArraySize / 2 ? 1.0 / (i + 1) : 0.0;
        if (array->d[i] != want)
            fail("array element changed", i, 0);
        uint64_t bits;
        memcpy(&bits, &array->d[i], sizeof bits);
        sum = gcshim_fold(sum, bits);
    }
    return sum;
}

static void TimeConstruction(int depth)
{
    int iters = NumIters(depth);
    uint64_t t0 = gcshim_now_ns();
    for (int i = 0; i < iters; i++) {
        Node *temp = NewNode(NULL, NULL);
        Populate(depth, temp);
    }
    uint64_t t1 = gcshim_now_ns();
    for (int i = 0; i < iters; i++) {
        Node *temp = MakeTree(depth);
        (void)temp;
    }
    uint64_t t2 = gcshim_now_ns();
    if (verbose)
        fprintf(stderr, "  %d trees of depth %d: top down %.0f ms, bottom up %.0f ms\n", iters, depth,
                (t1 - t0) / 1e6, (t2 - t1) / 1e6);
}

static void *depth_loop(void *arg)
{
    int attach = arg != NULL;
    if (attach)
        gcshim_thread_attach();
    for (int d = kMinTreeDepth; d <= kMaxTreeDepth; d += 2)
        TimeConstruction(d);
    if (attach)
        gcshim_thread_detach();
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [-v] [--threads N]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "gcbench: bad thread count\n");
        return 2;
    }

    gcshim_init();
    uint64_t t0 = gcshim_now_ns();

    /* Stretch the heap with a temporary tree. */
    {
        Node *temp = MakeTree(kStretchTreeDepth);
        (void)temp;
    }

    /* Long-lived data, live until the end. */
    Node *volatile longLivedTree = NewNode(NULL, NULL);
    Populate(kLongLivedTreeDepth, longLivedTree);
    int numbered = 0;
    Number(longLivedTree, kLongLivedTreeDepth, &numbered);
    DoubleArray *volatile array = gcshim_alloc_array(&doubles_type, kArraySize);
    for (int i = 0; i < kArraySize / 2; i++)
        array->d[i] = 1.0 / (i + 1);

    if (threads == 1) {
        depth_loop(NULL);
    } else {
        pthread_t tid[256];
        for (int t = 0; t < threads; t++)
            if (pthread_create(&tid[t], NULL, depth_loop, (void *)1) != 0) {
                fprintf(stderr, "gcbench: pthread_create failed\n");
                return 1;
            }
        for (int t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
    }

    uint64_t t1 = gcshim_now_ns();
    uint64_t checksum = VerifyLongLived(longLivedTree, array);

    char bench[32];
    if (threads == 1)
        snprintf(bench, sizeof bench, "gcbench");
    else
        snprintf(bench, sizeof bench, "gcbench_t%d", threads);
    gcshim_report(bench, t1 - t0, checksum, "");
    gcshim_shutdown();
    return 0;
}
