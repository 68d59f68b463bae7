/*
 * manual_mode — lull_set_mode(LULL_MODE_MANUAL):
 *
 *  - lull_set_mode with an unknown mode is -EINVAL; before lull_init it is
 *    accepted and holds from lull_init on;
 *  - with memory-limit=64m, 40 MiB of garbage (nodes that fill the
 *    nursery many times over, and 3 KiB objects straight into the major
 *    heap) run
 *    no collection at all, minor or major, and the heap stays within the
 *    limit; what the program keeps is intact;
 *  - lull_collect still works (counted as usual, not as forced);
 *  - 400 MiB more of garbage: collections are forced past the limit, every
 *    one of them counted in collections_forced, none started otherwise
 *    (no minor), and the heap stays near the limit;
 *  - back in LULL_MODE_AUTO, a full nursery runs minors again.
 */
#include "check.h"

#define KEEP 1000
static struct tnode *kept[KEEP];

static NOINLINE void garbage(size_t bytes)
{
    size_t done = 0;
    for (uint64_t i = 0; done < bytes; i++) {
        if (i % 16 == 0) {
            CHECK(major_blob(3088) != NULL, "blob");
            done += 3088;
        } else {
            tnode_new(i);
            done += sizeof(struct tnode);
        }
    }
}

static uint64_t collections(const lull_stats *s)
{
    return s->collections_minor + s->collections_major;
}

int main(void)
{
    CHECK(lull_set_mode(2) == -EINVAL, "unknown mode");
    CHECK(lull_set_mode(-1) == -EINVAL, "unknown mode");
    CHECK(lull_set_mode(LULL_MODE_MANUAL) == 0, "manual before lull_init");
    size_t limit = (size_t)64 << 20;
    CHECK(lull_init("memory-limit=64m") == 0, "init");
    lull_root_add_refs((void **)kept, KEEP);
    for (uint64_t i = 0; i < KEEP; i++)
        kept[i] = tnode_new(1000000 + i);

    lull_stats s0 = get_stats();
    garbage((size_t)40 << 20);
    lull_stats s1 = get_stats();
    printf("manual, 40 MiB: %" PRIu64 " collections, heap %.1f MiB (limit 64), %" PRIu64 " forced\n",
           collections(&s1) - collections(&s0), s1.heap_bytes / 1048576.0, s1.collections_forced);
    CHECK(collections(&s1) == collections(&s0), "a collection ran by itself in manual mode");
    CHECK(s1.collections_forced == 0, "forced");
    CHECK(s1.heap_bytes <= limit, "heap %" PRIu64 " over the limit", s1.heap_bytes);

    lull_collect(LULL_GEN_MAJOR);
    lull_stats s2 = get_stats();
    CHECK(s2.collections_major > s1.collections_major, "lull_collect in manual mode");
    CHECK(s2.collections_forced == 0, "an explicit collection counted as forced");

    uint64_t max_heap = 0;
    for (int i = 0; i < 40; i++) {
        garbage((size_t)10 << 20);
        lull_stats s = get_stats();
        if (s.heap_bytes > max_heap)
            max_heap = s.heap_bytes;
    }
    lull_stats s3 = get_stats();
    uint64_t forced = s3.collections_forced - s2.collections_forced;
    printf("manual, 400 MiB more: %" PRIu64 " forced, %" PRIu64 " minors, %" PRIu64 " majors, heap at most %.1f MiB\n",
           forced, s3.collections_minor - s2.collections_minor, s3.collections_major - s2.collections_major,
           max_heap / 1048576.0);
    CHECK(forced >= 4, "too few forced collections past the limit: %" PRIu64, forced);
    CHECK(s3.collections_minor == s2.collections_minor, "a minor started by itself in manual mode");
    CHECK(s3.collections_major - s2.collections_major == forced, "majors not forced");
    CHECK(max_heap <= limit + limit / 4, "heap %" PRIu64 " far past the limit", max_heap);
    for (uint64_t i = 0; i < KEEP; i++)
        CHECK(tnode_ok(kept[i], 1000000 + i), "kept node %" PRIu64, i);

    CHECK(lull_set_mode(LULL_MODE_AUTO) == 0, "auto");
    garbage((size_t)40 << 20);
    lull_stats s4 = get_stats();
    CHECK(s4.collections_minor > s3.collections_minor, "no minor back in auto mode");
    CHECK(s4.collections_forced == s3.collections_forced, "forced in auto mode");
    for (uint64_t i = 0; i < KEEP; i++)
        CHECK(tnode_ok(kept[i], 1000000 + i), "kept node %" PRIu64, i);
    lull_root_remove(kept);
    lull_shutdown();
    printf("ok\n");
    return 0;
}
