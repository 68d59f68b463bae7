/*
 * graph.c — pause times with a large, randomly connected live heap, in the
 * spirit of Mono's graph4 benchmark, written against gcshim.h so the same
 * code runs on lull and on Boehm GC.
 *
 * It builds a live graph of 4,000,000 nodes, each with 4 edges to random
 * nodes of the graph and a 64-bit tag (its id and a hash of it), held by one
 * array of references (32 MB: a large object). Then, for 30 rounds, it
 * builds a garbage graph of 500,000 nodes with random edges among
 * themselves (held by its own array while it is built), drops it, and
 * rewires 20,000 random edges of the live graph to other random live nodes.
 * Every collection has to trace the whole live graph, whose edges point all
 * over the heap, so the collector's pauses (the PAUSES line) are the point;
 * the total time shows what they cost in throughput.
 *
 * At the end every live node is checked: its tag is intact, it sits at its
 * id's index of the array, and every edge points to a node of the live
 * graph; a checksum over (edge slot, target id), kept up to date by the
 * rewiring, must match. A failure prints a message on stderr and exits 1
 * without a RESULT line. The check is not part of the timed run.
 *
 *   graph_lull [-v] [--scale F]      (graph_boehm: same)
 *
 * --scale F (0 < F <= 10, default 1) multiplies the node counts, the rounds
 * (at least 3) and the rewired edges. -v reports progress on stderr.
 * Prints the RESULT line with checksum= (the node count and the edge sum
 * as walked by the check), nodes=<live nodes> rounds=<rounds>, then the
 * PAUSES line.
 */
#include "gcshim.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    kLiveNodes = 4000000,
    kGarbageNodes = 500000,
    kRounds = 30,
    kMinRounds = 3,
    kRewires = 20000,
    kEdges = 4,
};

typedef struct GNode {
    gcshim_header h;
    struct GNode *e[kEdges];
    uint64_t tag; /* low 32 bits: id; high 32 bits: hash of id and graph */
} GNode;
GCSHIM_TYPE(gnode_type, GNode,
            GCSHIM_REF(GNode, e[0]) | GCSHIM_REF(GNode, e[1]) | GCSHIM_REF(GNode, e[2]) |
                GCSHIM_REF(GNode, e[3]));

typedef struct NodeArray {
    gcshim_array_header a;
    GNode *n[];
} NodeArray;
GCSHIM_ARRAY_TYPE(nodearray_type, NodeArray, sizeof(GNode *), 1);

static int verbose;

/* ------------------------------------------------------------------------ */
/* Deterministic randomness: both collectors do exactly the same work.      */
/* ------------------------------------------------------------------------ */

/* gcshim.h: gcshim_mix64, gcshim_rng_seed/next/below. */

/* ------------------------------------------------------------------------ */

#define LIVE_SALT 0x4c49u    /* "LI" */
#define GARBAGE_SALT 0x4741u /* "GA" */

static uint64_t make_tag(uint32_t id, uint64_t salt)
{
    return id | (gcshim_mix64(((uint64_t)id << 16) ^ salt) & 0xffffffff00000000u);
}

/* One edge's contribution to the live graph's checksum. */
static uint64_t edge_hash(uint64_t slot, uint32_t target) { return gcshim_mix64((slot << 32) ^ target ^ 0x45u); }

static void fail(const char *what, uint64_t a, uint64_t b)
{
    fprintf(stderr, "graph: FAILED: %s (%llu, %llu)\n", what, (unsigned long long)a, (unsigned long long)b);
    exit(1);
}

/* Allocate `n` nodes tagged with `salt` into a new array; no edges yet. */
static NodeArray *alloc_nodes(uint32_t n, uint64_t salt)
{
    NodeArray *arr = gcshim_alloc_array(&nodearray_type, n);
    for (uint32_t i = 0; i < n; i++) {
        GNode *node = gcshim_alloc(&gnode_type);
        node->tag = make_tag(i, salt);
        GCSHIM_STORE(arr, &arr->n[i], node);
    }
    return arr;
}

/* The live graph: nodes, then 4 random edges each. Returns the array and
 * the edge checksum in *sum. */
static NodeArray *build_live(uint32_t n, uint64_t *sum)
{
    NodeArray *live = alloc_nodes(n, LIVE_SALT);
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++) {
        GNode *node = live->n[i];
        if (node->tag != make_tag(i, LIVE_SALT))
            fail("live node damaged while building", i, node->tag);
        for (int k = 0; k < kEdges; k++) {
            uint32_t t = gcshim_rng_below(n);
            GCSHIM_SET(node, e[k], live->n[t]);
            s += edge_hash((uint64_t)i * kEdges + (uint64_t)k, t);
        }
    }
    *sum = s;
    return live;
}

/* A garbage graph of `n` nodes with random edges among themselves, dropped
 * on return. noinline keeps its references in a frame of its own, which the
 * next round's call overwrites. */
__attribute__((noinline)) static void build_garbage(uint32_t n)
{
    NodeArray *g = alloc_nodes(n, GARBAGE_SALT);
    for (uint32_t i = 0; i < n; i++) {
        GNode *node = g->n[i];
        if (node->tag != make_tag(i, GARBAGE_SALT))
            fail("garbage-graph node damaged while building", i, node->tag);
        for (int k = 0; k < kEdges; k++)
            GCSHIM_SET(node, e[k], g->n[gcshim_rng_below(n)]);
    }
}

/* Point `count` random edges of the live graph at other random live nodes,
 * keeping the checksum up to date. */
static void rewire(NodeArray *live, uint32_t n, uint32_t count, uint64_t *sum)
{
    for (uint32_t r = 0; r < count; r++) {
        uint32_t i = gcshim_rng_below(n), k = gcshim_rng_below(kEdges), t = gcshim_rng_below(n);
        GNode *node = live->n[i];
        uint64_t old = node->e[k]->tag;
        uint32_t old_id = (uint32_t)old;
        if (old_id >= n || old != make_tag(old_id, LIVE_SALT))
            fail("edge of the live graph points to a damaged node", i, old);
        uint64_t slot = (uint64_t)i * kEdges + (uint64_t)k;
        *sum += edge_hash(slot, t) - edge_hash(slot, old_id);
        GCSHIM_SET(node, e[k], live->n[t]);
    }
}

/* Every node intact and in place, every edge into the live graph, the
 * checksum as expected; returns the checksum of the final live data (the
 * node count and the edge sum, walked). */
static uint64_t verify(NodeArray *live, uint32_t n, uint64_t sum)
{
    if (live->a.length != n)
        fail("live array length changed", live->a.length, n);
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++) {
        GNode *node = live->n[i];
        if (!node)
            fail("live node lost", i, 0);
        if (node->tag != make_tag(i, LIVE_SALT))
            fail("live node tag damaged", i, node->tag);
        for (int k = 0; k < kEdges; k++) {
            GNode *t = node->e[k];
            if (!t)
                fail("edge lost", i, (uint64_t)k);
            uint32_t id = (uint32_t)t->tag;
            if (id >= n || live->n[id] != t)
                fail("edge points outside the live graph", i, t->tag);
            s += edge_hash((uint64_t)i * kEdges + (uint64_t)k, id);
        }
    }
    if (s != sum)
        fail("edge checksum mismatch", s, sum);
    return gcshim_fold(gcshim_fold(0, n), s);
}

static uint32_t scaled(double base, double scale, uint32_t min)
{
    double v = floor(base * scale + 0.5);
    return v < min ? min : (uint32_t)v;
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    for (int i = 1; i < argc; i++)
        if (!gcshim_common_option(argc, argv, &i, &scale, &verbose, gcshim_usage))
            gcshim_usage(argv[0]);
    const uint32_t live_n = scaled(kLiveNodes, scale, 16);
    const uint32_t garbage_n = scaled(kGarbageNodes, scale, 16);
    const uint32_t rounds = scaled(kRounds, scale, kMinRounds);
    const uint32_t rewires = scaled(kRewires, scale, 1);

    gcshim_init();
    gcshim_rng_seed(4);
    uint64_t t0 = gcshim_now_ns();

    uint64_t sum;
    NodeArray *volatile live = build_live(live_n, &sum);
    uint64_t t1 = gcshim_now_ns();
    if (verbose)
        fprintf(stderr, "graph: %u live nodes built in %.0f ms\n", live_n, (t1 - t0) / 1e6);

    for (uint32_t r = 0; r < rounds; r++) {
        uint64_t r0 = gcshim_now_ns();
        build_garbage(garbage_n);
        rewire(live, live_n, rewires, &sum);
        if (verbose)
            fprintf(stderr, "graph: round %u/%u: %u garbage nodes, %u edges rewired, %.0f ms\n", r + 1, rounds,
                    garbage_n, rewires, (gcshim_now_ns() - r0) / 1e6);
    }
    uint64_t t2 = gcshim_now_ns();

    uint64_t checksum = verify(live, live_n, sum);
    if (verbose)
        fprintf(stderr, "graph: verified %u nodes, %u edges in %.0f ms\n", live_n, live_n * kEdges,
                (gcshim_now_ns() - t2) / 1e6);

    char extra[64];
    snprintf(extra, sizeof extra, "nodes=%u rounds=%u", live_n, rounds);
    gcshim_report("graph", t2 - t0, checksum, extra);
    gcshim_shutdown();
    return 0;
}
