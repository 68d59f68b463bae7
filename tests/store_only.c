/*
 * store_only — a program that stores without allocating still gets its
 * concurrent marks finished, with synchronous majors off.
 *
 * 200,000 old nodes hang off a precise root. The program allocates until a
 * concurrent mark begins (the pause hook sees its initial pause), then for
 * up to 20 s only rewires the nodes' `next` fields among themselves (old
 * to old: no young card, no allocation, no slow path of the allocator).
 * The mark's background work ends in milliseconds; its final pause must
 * come from the stores' own slow path (lull__mark_stores_slow, every
 * LULL__MARK_STORE_BATCH stores during a mark). The test fails if no final
 * pause came within 10 s of stores, and checks every node afterwards.
 *
 * Arguments: LULL_GC_PARAMS-style options appended to the defaults.
 */
#include "check.h"

#define NODES 200000u

static struct refs *volatile nodes;

int main(int argc, char **argv)
{
    char params[256];
    snprintf(params, sizeof params, "allow-synchronous-major=no%s%s", argc > 1 ? "," : "", argc > 1 ? argv[1] : "");
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add_refs((void **)&nodes, 1) == 0, "lull_root_add_refs");
    nodes = lull_alloc_array(&refs_type, NODES);
    CHECK(nodes, "lull_alloc_array");
    for (uint32_t i = 0; i < NODES; i++)
        lull_store(nodes, &nodes->item[i], tnode_new(i));
    lull_collect(LULL_GEN_NURSERY);   /* old from here on */

    lull_set_pause_hook(mark_running_hook, NULL);
    uint64_t t0 = now_ns();
    while (!mark_running) {
        CHECK(now_ns() - t0 < 20000000000ull, "no concurrent mark began in 20 s of allocation");
        for (int i = 0; i < 64; i++)
            CHECK(major_blob(4000), "garbage");
    }

    /* Only stores from here: node i's next becomes node (i * 7919 + k) mod N. */
    uint64_t stores = 0, t1 = now_ns();
    uint32_t k = 1;
    while (mark_running && now_ns() - t1 < 10000000000ull) {
        for (uint32_t i = 0; i < NODES; i++) {
            struct tnode *a = nodes->item[i];
            struct tnode *b = nodes->item[(uint32_t)(((uint64_t)i * 7919u + k) % NODES)];
            lull_store(a, &a->next, b);
        }
        stores += NODES;
        k++;
    }
    double ms = (double)(now_ns() - t1) / 1e6;
    lull_stats s = get_stats();
    printf("store_only: %" PRIu64 " stores in %.1f ms after the mark began; the mark %s; %" PRIu64
           " synchronous majors\n", stores, ms, mark_running ? "is still running" : "ended",
           s.collections_major_sync);
    CHECK(!mark_running, "the concurrent mark did not end in 10 s of stores without allocation");
    CHECK(s.collections_major_sync == 0, "%" PRIu64 " synchronous majors with them forbidden",
          s.collections_major_sync);
    lull_set_pause_hook(NULL, NULL);
    lull_collect(LULL_GEN_MAJOR);
    for (uint32_t i = 0; i < NODES; i++)
        CHECK(tnode_ok(nodes->item[i], i), "node %u is wrong", i);
    lull_root_remove((void *)&nodes);
    lull_shutdown();
    return 0;
}
