/*
 * pause_hook — lull_set_pause_hook reports every pause, and only while set:
 *
 *  - each forced collection calls the hook exactly as often as
 *    lull_stats.pauses grows, with the collection's sequence number, its
 *    generation, a start time inside the lull_collect call and durations
 *    that add up to what lull_stats.pause_total_ns gained;
 *  - collections triggered by allocation in other threads are reported too;
 *  - the hook gets the data pointer it was installed with;
 *  - after lull_set_pause_hook(NULL, NULL) it is not called again, nor after
 *    lull_shutdown and a new lull_init.
 */
#include "check.h"

#include <pthread.h>

struct record {
    uint64_t calls, total_ns, last_collection, last_start, last_end;
    int bad_generation, bad_order;
};

static void hook(const lull_pause_event *e, void *data)
{
    struct record *r = data;
    r->calls++;
    r->total_ns += e->duration_ns;
    if (e->generation != LULL_GEN_NURSERY && e->generation != LULL_GEN_MAJOR)
        r->bad_generation = 1;
    if (e->collection <= r->last_collection || e->start_ns < r->last_end)
        r->bad_order = 1;
    r->last_collection = e->collection;
    r->last_start = e->start_ns;
    r->last_end = e->start_ns + e->duration_ns;
}

static void *allocator(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    static const lull_type blob = { .name = "blob", .size = 4096 };
    for (int i = 0; i < 40000; i++)
        CHECK(lull_alloc(&blob), "alloc");
    lull_thread_detach();
    return NULL;
}

int main(void)
{
    struct record r = { 0 };
    CHECK(lull_init(NULL) == 0, "lull_init");
    lull_set_pause_hook(hook, &r);

    lull_stats a, b;
    lull_get_stats(&a);
    for (int i = 0; i < 5; i++) {
        uint64_t before = now_ns();
        uint64_t calls = r.calls;
        lull_collect(i % 2 ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
        uint64_t after = now_ns();
        CHECK(r.calls > calls, "collection %d: hook not called", i);
        CHECK(r.last_start >= before && r.last_end <= after,
              "collection %d: pause [%" PRIu64 ", %" PRIu64 "] outside the call [%" PRIu64 ", %" PRIu64 "]", i,
              r.last_start, r.last_end, before, after);
    }
    lull_get_stats(&b);
    CHECK(r.calls == b.pauses - a.pauses, "hook called %" PRIu64 " times for %" PRIu64 " pauses", r.calls,
          b.pauses - a.pauses);
    CHECK(r.total_ns == b.pause_total_ns - a.pause_total_ns,
          "hook durations add up to %" PRIu64 " ns, stats to %" PRIu64, r.total_ns,
          b.pause_total_ns - a.pause_total_ns);
    CHECK(r.last_collection == b.collections_minor + b.collections_major,
          "last event says collection %" PRIu64 ", stats count %" PRIu64, r.last_collection,
          b.collections_minor + b.collections_major);
    CHECK(!r.bad_generation && !r.bad_order, "bad generation (%d) or out of order (%d)", r.bad_generation,
          r.bad_order);

    /* Collections triggered by allocation in other threads (160 MiB in all). */
    lull_get_stats(&a);
    uint64_t calls = r.calls;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, allocator, NULL) == 0, "pthread_create");
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    lull_get_stats(&b);
    CHECK(b.pauses > a.pauses, "allocating 320 MiB caused no collection");
    CHECK(r.calls - calls == b.pauses - a.pauses, "hook saw %" PRIu64 " of %" PRIu64 " allocation pauses",
          r.calls - calls, b.pauses - a.pauses);
    CHECK(!r.bad_order, "events out of order");

    /* Removed: no more calls. */
    lull_set_pause_hook(NULL, NULL);
    calls = r.calls;
    lull_collect(LULL_GEN_MAJOR);
    CHECK(r.calls == calls, "hook called after removal");

    /* Removed by shutdown. */
    lull_set_pause_hook(hook, &r);
    lull_collect(LULL_GEN_MAJOR);
    CHECK(r.calls == calls + 1, "hook not called after reinstalling");
    lull_shutdown();
    CHECK(lull_init(NULL) == 0, "lull_init again");
    lull_collect(LULL_GEN_MAJOR);
    CHECK(r.calls == calls + 1, "hook survived lull_shutdown");
    lull_shutdown();
    printf("pause_hook: ok (%" PRIu64 " pauses reported)\n", r.calls);
    return 0;
}
