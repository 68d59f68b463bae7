/*
 * heap_full — a program that fills a heap bounded by max-heap-size gets
 * ENOMEM in a bounded number of collections, also after half of what it
 * built was dropped (a fragmented heap: a synchronous, evacuating major).
 *
 * The bug this reproduces: a minor right after such a major found every
 * block of the heap pending its lazy sweep and the heap at its limit, so
 * it could copy nothing and pinned the whole nursery; every allocation
 * after that ran another minor (15 ms each, pinning the same objects
 * again) and the program took hours to reach ENOMEM. Now a minor sweeps
 * the blocks its copies may need before it traces, and after a minor that
 * could not copy, allocation goes to the major heap until a major has
 * freed room (nursery.h: lull_nursery_promotion_failed).
 *
 * The check: the minors run while filling are few against the nodes
 * allocated: at most 16 and one per 4,096 nodes (a 4 MiB nursery holds
 * 131,072 of them; with the fix about 8 minors fill the heap, without it
 * over 500).
 */
#include "check.h"

struct small {
    lull_header   h;
    struct small *next;
    uint64_t      id;
    uint64_t      check;
};

static const lull_type small_type = {
    .name = "heap-full-node",
    .size = sizeof(struct small),
    .refs = LULL_REF(struct small, next),
};

static uint64_t minors(void)
{
    lull_stats s;
    lull_get_stats(&s);
    return s.collections_minor;
}

/* Append nodes until ENOMEM; return how many. */
static NOINLINE size_t fill(struct small *volatile *head, uint64_t first)
{
    struct small *h = NULL, *tail = NULL;
    size_t n = 0;
    uint64_t m0 = minors();
    for (;;) {
        errno = 0;
        struct small *x = lull_alloc(&small_type);
        if (!x) {
            CHECK(errno == ENOMEM, "lull_alloc failed with errno %d, expected ENOMEM", errno);
            break;
        }
        x->id = first + n;
        x->check = mix64(x->id);
        if (tail)
            LULL_SET(tail, next, x);
        else
            h = x;
        tail = x;
        n++;
        if (n % 4096 == 0) {
            uint64_t m = minors() - m0;
            CHECK(m <= 16 + n / 4096, "%" PRIu64 " minors for %zu nodes: the collector runs one per "
                  "allocation once the heap is full", m, n);
        }
        CHECK(n < (size_t)1 << 24, "no ENOMEM under max-heap-size=32m after %zu nodes", n);
    }
    *head = h;
    return n;
}

static NOINLINE void verify(const struct small *n, uint64_t first, uint64_t stride, size_t count)
{
    size_t i = 0;
    for (; n; n = n->next, i++)
        CHECK(n->id == first + i * stride && n->check == mix64(n->id), "node %zu of a list is wrong", i);
    CHECK(i == count, "a list has %zu nodes, expected %zu", i, count);
}

static NOINLINE void drop_half(struct small *head)
{
    for (struct small *n = head; n && n->next; n = n->next)
        LULL_SET(n, next, n->next->next);
}

static NOINLINE void scrub(void)
{
    volatile uintptr_t buf[8192];
    for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
        buf[i] = 0;
}

static struct small *volatile a, *volatile b;

int main(int argc, char **argv)
{
    char params[128];
    snprintf(params, sizeof params, "max-heap-size=32m%s%s", argc > 1 ? "," : "", argc > 1 ? argv[1] : "");
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add_refs((void **)&a, 1) == 0 && lull_root_add_refs((void **)&b, 1) == 0, "roots");
    size_t n1 = fill(&a, 1);
    verify(a, 1, 1, n1);
    drop_half(a);
    scrub();
    size_t n2 = fill(&b, (uint64_t)1 << 40);
    CHECK(n2 >= n1 / 4, "after dropping half of %zu nodes only %zu fit again", n1, n2);
    verify(a, 1, 2, (n1 + 1) / 2);
    verify(b, (uint64_t)1 << 40, 1, n2);
    lull_stats s;
    lull_get_stats(&s);
    printf("heap_full (%s): %zu nodes, then %zu after dropping half; %" PRIu64 " minors, %" PRIu64
           " majors (%" PRIu64 " synchronous)\n", params, n1, n2, s.collections_minor, s.collections_major,
           s.collections_major_sync);
    CHECK(s.heap_bytes <= 32u << 20, "heap_bytes %" PRIu64 " over max-heap-size", s.heap_bytes);
    lull_root_remove((void *)&a);
    lull_root_remove((void *)&b);
    lull_shutdown();
    return 0;
}
