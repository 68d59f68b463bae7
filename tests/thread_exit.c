/*
 * thread_exit — many short-lived threads attach, allocate and verify, and
 * most of them exit WITHOUT lull_thread_detach (some joinable, some
 * detached pthreads), while another thread forces collections in a loop.
 * A thread that exits attached must be detached for it: otherwise a later
 * stop-the-world waits forever for it (caught by a watchdog thread) or signals a
 * dead thread (crash). Also exercises double attach (returns 0) and double
 * detach (no-op). Data held by the main thread survives throughout.
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>

#define BATCHES 50
#define PER_BATCH 12
#define DETACHED_EVERY 4      /* every 4th thread is a detached pthread */

/* ThreadSanitizer (clang 14) can deadlock in its own runtime when a
 * signal handler runs while pthread_join frees the joined thread's TLS
 * (google/sanitizers#1540: the handler waits for a lock the interrupted
 * free holds). A suspend signal landing there is never answered and the
 * collection waits for ever (seen here about one run in 80). Under TSan
 * the main thread therefore leaves lull for each join, its list held by a
 * registered root meanwhile (which a minor may move: main reads it back
 * from the root); elsewhere it joins attached, its list held by its stack
 * only. */
#if defined(__SANITIZE_THREAD__)
#define JOIN_DETACHED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define JOIN_DETACHED 1
#endif
#endif
#ifndef JOIN_DETACHED
#define JOIN_DETACHED 0
#endif

static void join(pthread_t t)
{
    if (JOIN_DETACHED)
        lull_thread_detach();
    pthread_join(t, NULL);
    if (JOIN_DETACHED)
        CHECK(lull_thread_attach() == 0, "re-attaching the main thread failed");
}

static atomic_int stop;
static atomic_int detached_done;
static atomic_ulong forced;

/* Progress of the main thread; a watchdog thread (not attached, so never
 * stopped) fails the test when it stalls: a stop-the-world waiting for a
 * thread that exited never finishes. */
static atomic_ulong progress;
static atomic_int finished;

static void *watchdog(void *arg)
{
    (void)arg;
    unsigned long last = atomic_load(&progress);
    uint64_t since = now_ns();
    while (!atomic_load(&finished)) {
        sleep_ms(100);
        unsigned long p = atomic_load(&progress);
        if (p != last) {
            last = p;
            since = now_ns();
        } else if (now_ns() - since > 60ull * 1000000000ull) {
            fprintf(stderr, "thread_exit: FAIL: watchdog: the main thread made no progress for 60 s "
                    "(step %lu; a stop-the-world waiting for an exited thread?)\n", p);
            _exit(2);
        }
    }
    return NULL;
}

/* A detached worker is counted from the second round of pthread_key
 * destructors: lull detaches a thread that exits attached from its own key
 * destructor, in the first round, so once this one has run twice the
 * thread is detached from lull and lull_shutdown may follow (the pattern
 * of stress/churn.c). */
static pthread_key_t done_key;

static void done_destructor(void *p)
{
    if (p == (void *)1) {
        pthread_setspecific(done_key, (void *)2);   /* once more, after every first-round destructor */
        return;
    }
    atomic_fetch_add(&detached_done, 1);
}

static void *worker(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    if (i % DETACHED_EVERY == 1)
        CHECK(pthread_setspecific(done_key, (void *)1) == 0, "pthread_setspecific failed");
    CHECK(lull_thread_attach() == 0, "thread %lu: lull_thread_attach failed", (unsigned long)i);
    if (i % 5 == 0)
        CHECK(lull_thread_attach() == 0, "thread %lu: second lull_thread_attach did not return 0",
              (unsigned long)i);
    uint64_t first = (uint64_t)(i + 1) << 32;
    struct tnode *volatile l = list_build(first, 200 + i % 100);
    if (i % 7 == 0)
        lull_collect(LULL_GEN_NURSERY);
    list_verify(l, first, 200 + i % 100, "list of a short-lived thread");
    if (i % 3 == 0) {
        lull_thread_detach();
        if (i % 6 == 0)
            lull_thread_detach();     /* not attached any more: no-op */
    }
    /* the others exit attached */
    return NULL;
}

static void *collector(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach failed");
    for (unsigned long i = 0; !atomic_load(&stop); i++) {
        lull_collect(i % 3 == 0 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
        atomic_fetch_add(&forced, 1);
        sleep_ms(1);
    }
    lull_thread_detach();
    return NULL;
}

int main(void)
{
    pthread_t wd;
    CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0, "pthread_create failed");
    CHECK(pthread_key_create(&done_key, done_destructor) == 0, "pthread_key_create failed");
    CHECK(lull_init(NULL) == 0, "lull_init failed");
    struct tnode *volatile mine = list_build(1, 5000);
    static void *mine_root[1];
    if (JOIN_DETACHED) {
        mine_root[0] = mine;
        CHECK(lull_root_add_refs(mine_root, 1) == 0, "lull_root_add_refs failed");
    }

    pthread_t tc;
    CHECK(pthread_create(&tc, NULL, collector, NULL) == 0, "pthread_create failed");

    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    int expected_detached = 0;
    uintptr_t n = 0;
    for (int b = 0; b < BATCHES; b++) {
        pthread_t t[PER_BATCH];
        int joinable[PER_BATCH];
        for (int j = 0; j < PER_BATCH; j++, n++) {
            joinable[j] = (n % DETACHED_EVERY != 1);
            int rc = pthread_create(&t[j], joinable[j] ? NULL : &detached, worker, (void *)n);
            CHECK(rc == 0, "pthread_create failed: %s", strerror(rc));
            if (!joinable[j])
                expected_detached++;
        }
        for (int j = 0; j < PER_BATCH; j++)
            if (joinable[j])
                join(t[j]);
        if (JOIN_DETACHED)
            mine = mine_root[0];      /* a minor may have moved it while main was detached */
        list_verify(mine, 1, 5000, "main thread's list during thread churn");
        atomic_fetch_add(&progress, 1);
    }
    /* Every detached pthread is past lull's destructor (joinable ones were
     * joined): none is attached any more. */
    while (atomic_load(&detached_done) < expected_detached)
        sleep_ms(1);
    atomic_fetch_add(&progress, 1);

    atomic_store(&stop, 1);
    join(tc);
    if (JOIN_DETACHED)
        mine = mine_root[0];
    atomic_fetch_add(&progress, 1);

    /* Every thread but this one is gone: these must neither hang nor crash. */
    for (int i = 0; i < 3; i++) {
        lull_collect(LULL_GEN_MAJOR);
        lull_collect(LULL_GEN_NURSERY);
        atomic_fetch_add(&progress, 1);
    }
    list_verify(mine, 1, 5000, "main thread's list after thread churn");
    printf("thread_exit: ok: %lu threads (%d detached pthreads), %lu forced collections\n",
           (unsigned long)n, expected_detached, atomic_load(&forced));
    lull_shutdown();
    atomic_store(&finished, 1);
    pthread_join(wd, NULL);
    return 0;
}
