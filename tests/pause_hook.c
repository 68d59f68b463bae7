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
 *    lull_shutdown and a new lull_init;
 *  - replaced while two threads collect in a loop (hook A, hook B, NULL,
 *    200 times over), each hook only ever gets its own data pointer, no
 *    collection is reported twice (a concurrent major's initial and final
 *    pauses, LULL_PHASE_INITIAL and _FINAL, share its number and count
 *    once), and the collections no hook saw form
 *    at most one run per stretch with NULL installed: a hook that missed
 *    pauses while installed would leave more gaps.
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>

struct record {
    uint64_t calls, total_ns, last_collection, last_start, last_end;
    int bad_generation, bad_order, last_phase;
    uint64_t initial, final;
};

static void hook(const lull_pause_event *e, void *data)
{
    struct record *r = data;
    r->calls++;
    r->total_ns += e->duration_ns;
    if (e->generation != LULL_GEN_NURSERY && e->generation != LULL_GEN_MAJOR)
        r->bad_generation = 1;
    /* Strictly increasing, but for a concurrent major's final pause, which
     * carries its initial pause's number (and explicit collections run no
     * minor between the two). */
    bool same_major = e->phase == LULL_PHASE_FINAL && r->last_phase == LULL_PHASE_INITIAL;
    if ((same_major ? e->collection != r->last_collection : e->collection <= r->last_collection) ||
        e->start_ns < r->last_end)
        r->bad_order = 1;
    if ((e->phase == LULL_PHASE_INITIAL || e->phase == LULL_PHASE_FINAL) && e->generation != LULL_GEN_MAJOR)
        r->bad_generation = 1;
    r->initial += e->phase == LULL_PHASE_INITIAL;
    r->final += e->phase == LULL_PHASE_FINAL;
    r->last_phase = e->phase;
    r->last_collection = e->collection;
    r->last_start = e->start_ns;
    r->last_end = e->start_ns + e->duration_ns;
}

/* ---- replacing the hook while collections run ---- */

/* Hooks run with the gc lock held, one at a time: plain counters do. */
struct swap_record {
    uint64_t calls;
    uint64_t foreign;              /* calls that got another hook's data */
};
static struct swap_record rec_a, rec_b;
#define MAX_SEEN (1u << 20)
static uint8_t seen[MAX_SEEN];     /* by collection number: times reported */

static void swap_note(struct swap_record *mine, const lull_pause_event *e, void *data)
{
    if (data != mine)
        mine->foreign++;
    if (e->phase == LULL_PHASE_INITIAL)
        return;       /* a concurrent major is counted once, at its final pause */
    mine->calls++;
    if (e->collection < MAX_SEEN && seen[e->collection] < 255)
        seen[e->collection]++;
}
static void hook_a(const lull_pause_event *e, void *data) { swap_note(&rec_a, e, data); }
static void hook_b(const lull_pause_event *e, void *data) { swap_note(&rec_b, e, data); }

static atomic_int swap_stop;

static void *swap_collector(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    for (int i = 0; !atomic_load(&swap_stop); i++) {
        struct tnode *volatile n = tnode_new((uint64_t)i);
        (void)n;
        lull_collect(i % 4 == 0 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
    }
    lull_thread_detach();
    return NULL;
}

static void test_replace_while_collecting(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init");
    pthread_t t[2];
    atomic_store(&swap_stop, 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, swap_collector, NULL) == 0, "pthread_create");
    for (int i = 0; i < 600; i++) {
        switch (i % 3) {
        case 0: lull_set_pause_hook(hook_a, &rec_a); break;
        case 1: lull_set_pause_hook(hook_b, &rec_b); break;
        case 2: lull_set_pause_hook(NULL, NULL); break;
        }
        sleep_ms(1);
    }
    lull_set_pause_hook(NULL, NULL);
    atomic_store(&swap_stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    lull_stats b = get_stats();
    lull_shutdown();

    uint64_t ca = rec_a.calls, cb = rec_b.calls, colls = b.collections_minor + b.collections_major;
    /* One pause per collection, two for a concurrent major. */
    CHECK(b.pauses >= colls && b.pauses <= colls + b.collections_major && colls < MAX_SEEN,
          "%" PRIu64 " pauses for %" PRIu64 " collections (%" PRIu64 " majors)", b.pauses, colls,
          b.collections_major);
    CHECK(rec_a.foreign == 0 && rec_b.foreign == 0,
          "a replaced hook got another hook's data: %" PRIu64 " times (A), %" PRIu64 " times (B)",
          rec_a.foreign, rec_b.foreign);
    CHECK(ca > 0 && cb > 0, "while collections ran, hook A was called %" PRIu64 " times, B %" PRIu64, ca, cb);
    uint64_t unseen = 0, gaps = 0;
    for (uint64_t c = 1; c <= colls; c++) {
        CHECK(seen[c] <= 1, "collection %" PRIu64 " was reported %d times", c, seen[c]);
        if (!seen[c]) {
            unseen++;
            gaps += c == 1 || seen[c - 1];
        }
    }
    CHECK(ca + cb + unseen == colls, "hooks saw %" PRIu64 " + %" PRIu64 " of %" PRIu64 " collections, "
          "%" PRIu64 " unseen", ca, cb, colls, unseen);
    /* NULL was installed at the start, 200 times in between, and at the end. */
    CHECK(gaps <= 201, "the %" PRIu64 " collections no hook saw form %" PRIu64 " gaps, more than the 201 "
          "stretches with no hook installed: an installed hook missed pauses", unseen, gaps);
    uint64_t pauses = b.pauses;
    printf("pause_hook: hook replaced 600 times during %" PRIu64 " pauses: A saw %" PRIu64 ", B %" PRIu64
           ", each with its own data\n", pauses, ca, cb);
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
    /* major=concurrent (the default): each of the 3 forced majors is an
     * initial and a final pause. */
    CHECK(r.initial == 3 && r.final == 3, "3 concurrent majors: %" PRIu64 " initial and %" PRIu64
          " final pauses reported", r.initial, r.final);

    /* Collections triggered by allocation in other threads (320 MiB in all). */
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

    /* Removed by shutdown. (A forced major is one pause, or two for a
     * concurrent one, or three when it first finishes a running mark.) */
    lull_set_pause_hook(hook, &r);
    lull_get_stats(&a);
    lull_collect(LULL_GEN_MAJOR);
    lull_get_stats(&b);
    CHECK(b.pauses > a.pauses && r.calls == calls + (b.pauses - a.pauses), "hook not called after reinstalling");
    calls = r.calls;
    lull_shutdown();
    CHECK(lull_init(NULL) == 0, "lull_init again");
    lull_collect(LULL_GEN_MAJOR);
    CHECK(r.calls == calls, "hook survived lull_shutdown");
    lull_shutdown();
    test_replace_while_collecting();
    printf("pause_hook: ok (%" PRIu64 " pauses reported)\n", r.calls);
    return 0;
}
