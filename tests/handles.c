/*
 * handles — GC handles (lull.h), each kind through minors and majors:
 *
 *  - WEAK: a handle to a dropped nursery object reads NULL after the next
 *    minor; to a nursery object kept by a precise root, the object's new
 *    address (it moved) with its contents; to a dropped old object, the
 *    object until a major, NULL after it;
 *  - NORMAL: the only reference to a list keeps it through minors and
 *    majors, following it as it moves out of the nursery; lull_handle_set
 *    re-targets it (the old list then dies: a weak handle on it clears);
 *  - PINNED: the only reference to a nursery object keeps it at its
 *    address through minors and majors;
 *  - WEAK_TRACK and WEAK around a finalizable object (finalizers=manual):
 *    after the collection that finds it dead the WEAK handle is NULL and
 *    the WEAK_TRACK handle still leads to it, intact; once its finalizer
 *    ran and a collection found it dead again, NULL too;
 *  - the table: 200,000 handles (several buckets) are distinct and read
 *    back, freeing half and allocating again reuses their slots (the
 *    table does not grow), and a freed handle's value comes back with a
 *    new generation;
 *  - 300 threads in turn make and free one handle each: the table does not
 *    grow with the threads ever seen (regions are reused);
 *  - one thread makes 300,000 handles that another frees: the maker comes
 *    back to the freed slots (the table does not grow);
 *  - four threads create, read, set and free handles at once, while
 *    another collects: every handle reads its own object.
 *
 * Runs under both major collectors (ctest handles, handles_stw).
 */
#include "check.h"

#include <stdatomic.h>
#include <time.h>

static lull_handle hw, hn, hp, hw2, htr;

/* Collections run from a fresh thread while this one is detached: no stale
 * word in this thread's registers or stack is a root then (the scan is
 * conservative: such a word would keep alive, or pin, what it names), so
 * that what a check expects to die or move does. */
static int detached_gen;
static NOINLINE void collect_now(void) { lull_collect(detached_gen); }
static void collect_detached(int gen)
{
    detached_gen = gen;
    run_in_fresh_thread(collect_now);
}
static uintptr_t pinned_at;
static volatile uintptr_t hidden;   /* an address kept off the stack, complemented */
static void *root[2];

static NOINLINE void make_weak_young(void)
{
    hw = lull_handle_new(tnode_new(11), LULL_HANDLE_WEAK);
    CHECK(hw, "lull_handle_new(WEAK) failed");
    root[0] = tnode_new(12);
    hw2 = lull_handle_new(root[0], LULL_HANDLE_WEAK);
    CHECK(tnode_ok(lull_handle_get(hw), 11), "a fresh weak handle does not read its object");
}

static void weak_handles(void)
{
    run_in_fresh_thread(make_weak_young);
    hidden = ~(uintptr_t)lull_handle_get(hw2);   /* not on the stack: it would pin the object */
    collect_detached(LULL_GEN_NURSERY);
    CHECK(lull_handle_get(hw) == NULL, "a weak handle to a dropped nursery object reads %p after a minor",
          lull_handle_get(hw));
    void *after = lull_handle_get(hw2);
    CHECK(after == root[0], "a weak handle to a rooted nursery object reads %p, the root holds %p", after, root[0]);
    CHECK((uintptr_t)after != ~hidden, "the rooted object did not move (the test needs it to)");
    CHECK(tnode_ok(after, 12), "the object a weak handle followed is corrupt");
    lull_handle_free(hw);
}

/* Now old: a minor does not clear it, a major does once it is dropped. */
static void weak_old(void)
{
    root[0] = NULL;
    collect_detached(LULL_GEN_NURSERY);
    CHECK(tnode_ok(lull_handle_get(hw2), 12), "a minor cleared a weak handle to an old object");
    collect_detached(LULL_GEN_MAJOR);
    CHECK(lull_handle_get(hw2) == NULL, "a weak handle to a dropped old object reads %p after a major",
          lull_handle_get(hw2));
    lull_handle_free(hw2);
    printf("weak: cleared by the minor (young) and the major (old), followed when moved\n");
}

static NOINLINE void make_normal_and_pinned(void)
{
    hn = lull_handle_new(list_build(100, 500), LULL_HANDLE_NORMAL);
    struct tnode *p = tnode_new(7);
    pinned_at = (uintptr_t)p;
    hp = lull_handle_new(p, LULL_HANDLE_PINNED);
    hw = lull_handle_new(lull_handle_get(hn), LULL_HANDLE_WEAK);
    CHECK(hn && hp && hw, "lull_handle_new failed");
}

static NOINLINE void retarget(void)
{
    lull_handle_set(hn, list_build(1000, 50));
}

static void strong_handles(void)
{
    run_in_fresh_thread(make_normal_and_pinned);
    hidden = ~(uintptr_t)lull_handle_get(hn);
    for (int i = 0; i < 3; i++) {
        collect_detached(i == 1 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
        list_verify(lull_handle_get(hn), 100, 500, "the list held by a normal handle");
        CHECK((uintptr_t)lull_handle_get(hp) == pinned_at, "a pinned handle's object moved from %p to %p",
              (void *)pinned_at, lull_handle_get(hp));
        CHECK(tnode_ok(lull_handle_get(hp), 7), "a pinned handle's object is corrupt");
    }
    CHECK((uintptr_t)lull_handle_get(hn) != ~hidden, "the normal handle's list never moved (the test needs it to)");
    CHECK(lull_handle_get(hw) == lull_handle_get(hn), "the weak handle on the list lost it while a normal "
          "handle held it");
}

static void strong_retarget(void)
{
    run_in_fresh_thread(retarget);
    collect_detached(LULL_GEN_MAJOR);
    list_verify(lull_handle_get(hn), 1000, 50, "the list a normal handle was set to");
    CHECK(lull_handle_get(hw) == NULL, "the list a normal handle no longer holds is still alive");
    lull_handle_set(hn, NULL);
    CHECK(lull_handle_get(hn) == NULL, "a handle set to NULL reads %p", lull_handle_get(hn));
    lull_handle_free(hn);
    lull_handle_free(hp);
    lull_handle_free(hw);
    printf("normal and pinned: kept through 2 minors and a major; moved / stayed at %p; set re-targets\n",
           (void *)pinned_at);
}

/* ---- WEAK and WEAK_TRACK around a finalizable object ---- */

static atomic_int finalized;
static void fin(void *obj, void *data)
{
    CHECK(data == (void *)&finalized, "finalizer data %p", data);
    CHECK(tnode_ok(obj, 77), "the object being finalized is corrupt");
    CHECK(lull_handle_get(htr) == obj, "during its finalizer, the WEAK_TRACK handle reads %p, not %p",
          lull_handle_get(htr), obj);
    atomic_fetch_add(&finalized, 1);
}

static NOINLINE void make_finalizable(void)
{
    struct tnode *n = tnode_new(77);
    CHECK(lull_register_finalizer(n, fin, &finalized) == 0, "lull_register_finalizer failed");
    hw = lull_handle_new(n, LULL_HANDLE_WEAK);
    htr = lull_handle_new(n, LULL_HANDLE_WEAK_TRACK);
}

/* The checks after each collection run in fresh threads: the main thread
 * that collects must never hold the object in a register (a value left in
 * a scratch register by a call would keep it alive, as clang's code does). */
static volatile int track_survived;

static NOINLINE void track_after_first(void)
{
    CHECK(lull_handle_get(hw) == NULL, "WEAK: not cleared when its finalizable target died");
    CHECK(tnode_ok(lull_handle_get(htr), 77), "WEAK_TRACK: lost its target while it awaits its finalizer");
    CHECK(atomic_load(&finalized) == 0, "finalizers=manual: a finalizer ran before lull_run_finalizers");
    lull_run_finalizers();
    CHECK(atomic_load(&finalized) == 1, "the finalizer ran %d times", atomic_load(&finalized));
}

static NOINLINE void track_kept(void)
{
    track_survived = lull_handle_get(htr) != NULL;
}

static NOINLINE void track_after_second(void)
{
    CHECK(lull_handle_get(htr) == NULL, "WEAK_TRACK: not cleared once its finalized target died");
    CHECK(atomic_load(&finalized) == 1, "the finalizer ran %d times", atomic_load(&finalized));
    lull_handle_free(hw);
    lull_handle_free(htr);
}

static void track(int gen)
{
    atomic_store(&finalized, 0);
    run_in_fresh_thread(make_finalizable);
    if (gen == LULL_GEN_MAJOR)
        collect_detached(LULL_GEN_NURSERY);      /* old first */
    collect_detached(gen);
    run_in_fresh_thread(track_after_first);
    collect_detached(gen);
    if (gen == LULL_GEN_NURSERY) {
        run_in_fresh_thread(track_kept);
        if (track_survived)
            collect_detached(LULL_GEN_MAJOR);    /* kept past its minor: it was promoted */
    }
    run_in_fresh_thread(track_after_second);
    printf("weak/weak-track around a finalizer (%s): cleared before / after finalization\n",
           gen == LULL_GEN_MAJOR ? "major" : "minor");
}

static void track_minor(void) { track(LULL_GEN_NURSERY); }
static void track_major(void) { track(LULL_GEN_MAJOR); }

/* ---- the table ---- */

#define MANY 200000u
static lull_handle many[MANY];

static void table(void)
{
    struct tnode *n = tnode_new(5);
    /* Filling the table costs time linear in the handles made: the first
     * fifth and the other four fifths take about 1:4 of this thread's CPU
     * time. A new that walked the whole used part of the table each time
     * (103d89f did, when nothing behind the frontier was free) makes it
     * 1:24 and made this test time out under ThreadSanitizer. */
    double part[2];
    for (uint32_t i = 0, p = 0; p < 2; p++) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        for (; i < (p ? MANY : MANY / 5); i++) {
            many[i] = lull_handle_new(i % 3 ? n : NULL, LULL_HANDLE_NORMAL);
            CHECK(many[i], "lull_handle_new %u failed", i);
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        part[p] = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    }
    CHECK(part[1] < 12 * part[0] + 0.005, "filling the table is not linear: %u handles took %.4f s, the next %u took %.4f s",
          MANY / 5, part[0], MANY - MANY / 5, part[1]);
    printf("table: %u handles in %.4f s, the next %u in %.4f s (ratio %.1f; 4 is linear)\n", MANY / 5, part[0],
           MANY - MANY / 5, part[1], part[1] / part[0]);
    for (uint32_t i = 0; i < MANY; i++)
        CHECK(lull_handle_get(many[i]) == (i % 3 ? (void *)n : NULL), "handle %u reads %p", i,
              lull_handle_get(many[i]));
    lull_collect(LULL_GEN_NURSERY);
    n = lull_handle_get(many[1]);
    CHECK(tnode_ok(n, 5), "the object 133,333 normal handles hold is corrupt");
    for (uint32_t i = 0; i < MANY; i++)
        CHECK(lull_handle_get(many[i]) == (i % 3 ? (void *)n : NULL), "handle %u did not follow the move", i);
    lull_handle old = many[0];
    uint32_t top = 0;                  /* the highest slot the table used */
    for (uint32_t i = 0; i < MANY; i++)
        if ((many[i] >> 7) - 1 > top)
            top = (many[i] >> 7) - 1;
    for (uint32_t i = 0; i < MANY; i += 2)
        lull_handle_free(many[i]);
    uint32_t max_index = 0;
    for (uint32_t i = 0; i < MANY; i += 2) {
        many[i] = lull_handle_new(n, LULL_HANDLE_NORMAL);
        uint32_t idx = (many[i] >> 7) - 1;
        if (idx > max_index)
            max_index = idx;
    }
    CHECK(max_index <= top, "after freeing half of %u handles (slots up to %u), new ones went up to slot %u: "
          "freed slots are not reused", MANY, top, max_index);
    bool reused = false;
    for (uint32_t i = 0; i < MANY; i += 2)
        reused |= (many[i] >> 7) == (old >> 7);
    CHECK(reused, "the first handle's slot was not reused");
    for (uint32_t i = 0; i < MANY; i += 2)
        CHECK(many[i] != old, "a freed handle's value came back unchanged (no new generation)");
    for (uint32_t i = 0; i < MANY; i++)
        lull_handle_free(many[i]);
    printf("table: %u handles, half freed and reused below slot %u\n", MANY, top + 1);
}

/* ---- threads ---- */

#define THREADS 4
#define ROUNDS  20000
static atomic_bool stop_collector;

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    lull_handle mine[16] = { 0 };
    struct tnode *obj[16] = { 0 };
    for (uint32_t r = 0; r < ROUNDS; r++) {
        uint32_t k = r % 16;
        if (mine[k]) {
            void *got = lull_handle_get(mine[k]);
            uint64_t want = id * 1000000 + r - 16;
            /* WEAK ones may be cleared; strong ones never. */
            if (got || (mine[k] & 3) != LULL_HANDLE_WEAK)
                CHECK(tnode_ok(got, want), "thread %lu: handle kind %u reads %p, expected node %llu",
                      (unsigned long)id, mine[k] & 3, got, (unsigned long long)want);
            if ((mine[k] & 3) == LULL_HANDLE_PINNED)
                CHECK(got == obj[k], "a pinned handle's object moved");
            lull_handle_free(mine[k]);
        }
        struct tnode *n = tnode_new(id * 1000000 + r);
        enum lull_handle_kind kind = (enum lull_handle_kind)((r / 16 + id) % 4);
        if (kind == LULL_HANDLE_WEAK_TRACK)
            kind = LULL_HANDLE_NORMAL;
        mine[k] = lull_handle_new(kind == LULL_HANDLE_NORMAL ? NULL : n, kind);
        if (kind == LULL_HANDLE_NORMAL)
            lull_handle_set(mine[k], n);
        obj[k] = kind == LULL_HANDLE_PINNED ? n : NULL;
    }
    for (int k = 0; k < 16; k++)
        if (mine[k])
            lull_handle_free(mine[k]);
    lull_thread_detach();
    return NULL;
}

static void *collector(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    for (int i = 0; !atomic_load(&stop_collector); i++) {
        lull_collect(i % 8 == 7 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
        sleep_ms(1);
    }
    lull_thread_detach();
    return NULL;
}

/* Threads come and go, each making and freeing a handle: each starts in a
 * region of the table of its own (handles.c), but the regions are reused,
 * so the table does not grow with the number of threads ever seen. */
static uint32_t churn_max_slot;
static NOINLINE void churn_one(void)
{
    lull_handle h = lull_handle_new(NULL, LULL_HANDLE_WEAK);
    CHECK(h, "lull_handle_new failed");
    if ((h >> 7) - 1 > churn_max_slot)
        churn_max_slot = (h >> 7) - 1;
    lull_handle_free(h);
}

static void thread_churn(void)
{
    for (int i = 0; i < 300; i++)
        run_in_fresh_thread(churn_one);
    CHECK(churn_max_slot < 64 * 256, "300 threads, one handle each at a time, used slots up to %u",
          churn_max_slot);
    printf("thread churn: 300 threads, one handle each, slots below %u\n", churn_max_slot + 1);
}

/* A producer makes handles that a consumer frees: the producer's next
 * new must come back to the slots freed behind it rather than walk the
 * table on for ever (before the fix it reached slot 300,000 here). */
#define PC_HANDLES 300000u
#define PC_RING    64u
static _Atomic lull_handle pc_ring[PC_RING];
static atomic_uint pc_head, pc_tail;
static uint32_t pc_max_slot;

static void pc_wait(void)
{
    struct timespec ts = { 0, 1000 };
    nanosleep(&ts, NULL);       /* intercepted: a pause can stop this thread (doc/debugging.md, Sanitizers) */
}

static void *pc_producer(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    for (uint32_t i = 0; i < PC_HANDLES; i++) {
        lull_handle h = lull_handle_new(NULL, LULL_HANDLE_PINNED);   /* a kind table() left small */
        CHECK(h, "lull_handle_new %u failed", i);
        if ((h >> 7) - 1 > pc_max_slot)
            pc_max_slot = (h >> 7) - 1;
        unsigned head = atomic_load(&pc_head);
        while (head - atomic_load(&pc_tail) == PC_RING)
            pc_wait();
        atomic_store(&pc_ring[head % PC_RING], h);
        atomic_store(&pc_head, head + 1);
    }
    lull_thread_detach();
    return NULL;
}

static void *pc_consumer(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    for (uint32_t i = 0; i < PC_HANDLES; i++) {
        unsigned tail = atomic_load(&pc_tail);
        while (atomic_load(&pc_head) == tail)
            pc_wait();
        lull_handle_free(atomic_load(&pc_ring[tail % PC_RING]));
        atomic_store(&pc_tail, tail + 1);
    }
    lull_thread_detach();
    return NULL;
}

static void producer_consumer(void)
{
    pthread_t p, c;
    lull_thread_detach();
    CHECK(pthread_create(&p, NULL, pc_producer, NULL) == 0 && pthread_create(&c, NULL, pc_consumer, NULL) == 0,
          "pthread_create");
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    CHECK(lull_thread_attach() == 0, "attach");
    CHECK(pc_max_slot < 2 * 64 * 256, "%u handles made by one thread and freed by another, at most %u live: slots "
          "up to %u were used", PC_HANDLES, PC_RING + 1, pc_max_slot);
    printf("producer/consumer: %u handles, slots below %u\n", PC_HANDLES, pc_max_slot + 1);
}

static void threads(void)
{
    pthread_t t[THREADS], c;
    CHECK(pthread_create(&c, NULL, collector, NULL) == 0, "pthread_create");
    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)(i + 1)) == 0, "pthread_create");
    lull_thread_detach();
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    atomic_store(&stop_collector, true);
    pthread_join(c, NULL);
    CHECK(lull_thread_attach() == 0, "attach");
    printf("threads: %d threads x %d rounds of new/get/set/free beside collections\n", THREADS, ROUNDS);
}

int main(int argc, char **argv)
{
    const char *params = argc > 1 ? argv[1] : "finalizers=manual";
    want_poison();
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add_refs(root, 2) == 0, "lull_root_add_refs");
    /* Each part runs on a fresh thread, the main thread detached: words
     * lull_init left on its stack would pin objects the test moves. */
    run_in_fresh_thread(weak_handles);
    run_in_fresh_thread(weak_old);
    run_in_fresh_thread(strong_handles);
    run_in_fresh_thread(strong_retarget);
    run_in_fresh_thread(track_minor);
    run_in_fresh_thread(track_major);
    run_in_fresh_thread(table);
    thread_churn();
    producer_consumer();
    threads();
    lull_shutdown();
    printf("handles: ok (%s)\n", params);
    return 0;
}
