/*
 * debug_checks — a list-building, rewiring workload under
 * LULL_GC_DEBUG=verify,poison,collect-every=100,check-cards,verify-nursery,clear-nursery (set before lull_init):
 * the heap verifier runs at every collection and freed memory is poisoned,
 * so any object lost or any reference left dangling fails at once. Two
 * threads run the workload. The number of collections shows that
 * collect-every was honoured.
 */
#include "check.h"

#include <pthread.h>

#define ROUNDS 40
#define NLISTS 6

struct tree {
    lull_header  h;
    struct tree *left, *right;
    uint64_t     key;
};
static const lull_type tree_type = {
    .name = "tree", .size = sizeof(struct tree),
    .refs = LULL_REF(struct tree, left) | LULL_REF(struct tree, right),
};

static struct tree *tree_build(int depth, uint64_t key)
{
    struct tree *t = lull_alloc(&tree_type);
    CHECK(t != NULL, "alloc tree failed");
    t->key = key;
    if (depth > 0) {
        struct tree *l = tree_build(depth - 1, key * 2);
        LULL_SET(t, left, l);
        struct tree *r = tree_build(depth - 1, key * 2 + 1);
        LULL_SET(t, right, r);
    }
    return t;
}

static size_t tree_check(const struct tree *t, int depth, uint64_t key)
{
    CHECK(t != NULL && t->key == key, "tree node %" PRIu64 " lost or corrupt", key);
    if (depth == 0) {
        CHECK(t->left == NULL && t->right == NULL, "tree leaf %" PRIu64 " has children", key);
        return 1;
    }
    return 1 + tree_check(t->left, depth - 1, key * 2) + tree_check(t->right, depth - 1, key * 2 + 1);
}

static void workload(uint64_t base, unsigned long *allocs)
{
    struct tnode *lists[NLISTS] = { 0 };
    size_t len[NLISTS] = { 0 };
    uint64_t first[NLISTS] = { 0 };
    struct refs *arr = lull_alloc_array(&refs_type, 64);
    CHECK(arr != NULL, "alloc failed");
    *allocs += 1;
    for (int r = 0; r < ROUNDS; r++) {
        int k = r % NLISTS;
        len[k] = 200 + (size_t)(r * 37) % 500;
        first[k] = base + (uint64_t)r * 100000;
        lists[k] = list_build(first[k], len[k]);
        *allocs += len[k];
        /* rewire: reverse twice, the list is back in order */
        lists[k] = list_reverse(list_reverse(lists[k]));
        lull_store(arr, &arr->item[r % 64], lists[(k + 1) % NLISTS]);
        struct tree *volatile t = tree_build(6, 1);
        *allocs += 127;
        CHECK(tree_check(t, 6, 1) == 127, "tree size wrong");
        for (int j = 0; j < NLISTS; j++)
            if (lists[j])
                list_verify(lists[j], first[j], len[j], "list under LULL_GC_DEBUG");
    }
    for (int i = 0; i < 64; i++)
        if (arr->item[i]) {
            const struct tnode *n = arr->item[i];
            CHECK(tnode_ok(n, n->id), "list referenced from a ref array corrupt");
        }
}

static unsigned long thread_allocs;

static void *second(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach failed");
    workload(1ull << 40, &thread_allocs);
    lull_thread_detach();
    return NULL;
}

int main(void)
{
    CHECK(setenv("LULL_GC_DEBUG", "verify,poison,collect-every=100,check-cards,verify-nursery,clear-nursery", 1) == 0, "setenv failed");
    CHECK(lull_init(NULL) == 0, "lull_init with LULL_GC_DEBUG=verify,poison,collect-every=100,check-cards,verify-nursery,clear-nursery failed");
    lull_stats s0 = get_stats();

    unsigned long allocs = 0;
    workload(1, &allocs);

    pthread_t t;
    CHECK(pthread_create(&t, NULL, second, NULL) == 0, "pthread_create failed");
    unsigned long allocs2 = 0;
    workload(1ull << 41, &allocs2);
    pthread_join(t, NULL);
    lull_collect(LULL_GEN_MAJOR);

    lull_stats s1 = get_stats();
    unsigned long total = allocs + allocs2 + thread_allocs;
    uint64_t colls = (s1.collections_minor + s1.collections_major) -
                     (s0.collections_minor + s0.collections_major);
    CHECK(colls >= total / 200, "collect-every=100: only %" PRIu64 " collections for %lu allocations",
          colls, total);
    printf("debug_checks: ok: %lu allocations, %" PRIu64 " collections\n", total, colls);
    lull_shutdown();
    return 0;
}
