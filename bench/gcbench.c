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
 * the long-lived data stays shared. Prints one line:
 *   RESULT gc=lull bench=gcbench time_ms=... peak_rss_kb=... collections=...
 *          pause_max_us=... pause_p99_us=... pause_p50_us=...
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

    if (longLivedTree == NULL || array->d[999] != 1.0 / 1000) {
        fprintf(stderr, "gcbench: FAILED: long-lived data lost\n");
        return 1;
    }
    uint64_t t1 = gcshim_now_ns();

    char bench[32];
    if (threads == 1)
        snprintf(bench, sizeof bench, "gcbench");
    else
        snprintf(bench, sizeof bench, "gcbench_t%d", threads);
    gcshim_report(bench, t1 - t0, "");
    gcshim_shutdown();
    return 0;
}
