/*
 * stress/churn.c — threads come and go while the world is stopped.
 *
 *   stress_churn [--seconds N] [--seed S] [--default-seconds N] [--live N] [--expect-idle] [-v]
 *
 * Seconds: --seconds, else LULL_STRESS_SECONDS, else --default-seconds (10).
 *
 * Short-lived worker threads attach, build chains of checksummed objects
 * on their stack, verify them, publish some into a shared table (a heap
 * array behind a precise root, written with lull_store, read with acquire
 * loads), read and verify what others published, and exit. The kinds rotate:
 * joinable or detached pthreads; detaching before returning, or returning
 * (or calling pthread_exit) still attached so lull detaches them from a
 * pthread_key destructor; some detach and attach again halfway; a few never
 * attach and only call lull_collect, lull_idle and lull_get_stats; workers
 * also hand lull_idle 1-100 ms between their rounds now and then (it
 * never sleeps; the range is wide enough that a minor's predicted pause
 * fits under the sanitizers too), so that
 * minors run in idle time among attaches, detaches and the other
 * collections (its count is printed and must not pass the minors; with
 * --expect-idle, for a nursery small enough that they happen, it must not
 * be 0). A spawner keeps
 * --live workers (6) running (a reaper thread joins the joinable ones); a
 * burst thread wakes a helper that calls
 * lull_collect and right away starts a burst of workers, so threads are
 * created and attach while the world is being stopped; a collector thread
 * forces collections at random, and now and then sets a pause target
 * between 100 us and 12.8 ms (lull_set_pause_target), so that with a
 * nursery-size above the 256 KiB floor the nursery shrinks and grows
 * while the workers allocate (a growth hands out the new room at once). The main thread verifies the whole table
 * every 100 ms.
 *
 * What is checked. Every published chain is immutable: its objects carry
 * (worker, index) ids, checksums and payload, and each links to the
 * previous one down to index 0. Whoever replaces a table entry verifies
 * the chain it retires; at the end every remaining entry is verified, and
 * the number of chains published must equal the number retired-and-verified
 * plus the number still in the table: nothing published goes unverified.
 * lull_shutdown at the end aborts if any exited thread was left attached.
 */
#include "stress_common.h"

#include <pthread.h>
#include <semaphore.h>

/* id = tag:8 | worker:32 | index:16 | kind:8 */
#define ID_TAG 0xc4ull
enum { K_CHAIN = 1, K_AUX = 2 };
static uint64_t make_id(uint64_t worker, unsigned index, unsigned kind)
{
    return ID_TAG << 56 | (worker & 0xffffffffu) << 24 | (uint64_t)(index & 0xffff) << 8 | kind;
}
static unsigned id_index(uint64_t id) { return (unsigned)(id >> 8) & 0xffff; }
static uint64_t id_worker(uint64_t id) { return (id >> 24) & 0xffffffffu; }

#define TABLE_SLOTS 1024
#define MAX_CHAIN 160

struct refs {
    lull_array_header a;
    void *item[];
};
static const lull_type refs_type = {
    .name = "churn.refs", .size = sizeof(struct refs), .elem_size = sizeof(void *), .elem_refs = 1,
};

/* The table: a heap array, reachable only from this precise root. Slot i is
 * written with slot_lock[i] held, together with table_expect[i]. */
static struct refs *table;
static uint64_t table_expect[TABLE_SLOTS];
static int slot_lock[TABLE_SLOTS];
static uint64_t tickets;                       /* atomic */

static unsigned max_live = 6;
static int stop;                               /* atomic */

/* Counters (atomic). */
static uint64_t published, retired_verified, chains_read, objects_made;
static uint64_t spawned, finished, live_workers, kind_count[5], reattached, exit_attached;
static uint64_t pthread_exits, burst_workers, attached_during_collect, bursts;
static uint64_t forced_collections, helper_collections, targets_set;
static int helper_collecting;                  /* atomic: helper is inside lull_collect */

enum kind {
    W_JOIN_DETACH,          /* joinable; detaches before it returns */
    W_JOIN_EXIT_ATTACHED,   /* joinable; returns attached */
    W_DETACHED_DETACH,      /* detached pthread; detaches */
    W_DETACHED_EXIT_ATTACHED, /* detached pthread; exits attached */
    W_NEVER_ATTACHED,       /* only lull_collect and lull_get_stats */
};
static const char *const kind_names[] = { "joinable+detach", "joinable+exit-attached",
                                          "detached+detach", "detached+exit-attached", "unattached" };

struct worker {
    uint64_t serial;
    enum kind kind;
    int burst;
    int rounds;             /* 2: detach and attach again halfway */
    int use_pthread_exit;
    unsigned dtor_round;
    pthread_t thread;
    int done;               /* atomic: past lull's key destructor */
    struct worker *next;    /* the reaper's list */
};

/* ------------------------------------------------------------------------ */
/* Chains                                                                   */
/* ------------------------------------------------------------------------ */

/* Verify the chain that starts at `head`, which should be object `expect`:
 * indexes count down to 0, all of one worker, each linked to the next. */
static void check_chain(const struct sobj *head, uint64_t expect, const char *where)
{
    unsigned n = 0;
    uint64_t id = expect;
#define CHAIN_WHERE "%s: chain 0x%" PRIx64 " element %u"
    for (const struct sobj *o = head;; n++) {
        if (n > MAX_CHAIN)
            stress_fail(CHAIN_WHERE ": longer than %d objects (a cycle?)", where, expect, n, MAX_CHAIN);
        STRESS_CHECK(o, id, CHAIN_WHERE, where, expect, n);
        const struct sobj *next = stress_load_ref((void *)&o->ref[0]);
        if (id_index(id) == 0) {
            if (next)
                stress_fail(CHAIN_WHERE ": index 0 links to %p", where, expect, n, (const void *)next);
            return;
        }
        uint64_t want = make_id(id_worker(id), id_index(id) - 1, K_CHAIN);
        if (stress_load_u64(&o->expect[0]) != want)
            stress_fail(CHAIN_WHERE ": links to id 0x%" PRIx64 ", expected 0x%" PRIx64, where, expect, n,
                        o->expect[0], want);
        o = next;
        id = want;
    }
}

/* Swap `head` (id `id`, or NULL/0) into a table slot; verify what it
 * replaces. Returns the slot. */
static size_t table_put(size_t slot, struct sobj *head, uint64_t id)
{
    stress_lock(&slot_lock[slot]);
    struct sobj *old = stress_load_ref(&table->item[slot]);
    uint64_t old_id = stress_load_u64(&table_expect[slot]);
    lull_store(table, &table->item[slot], head);
    stress_store_u64(&table_expect[slot], id);
    stress_unlock(&slot_lock[slot]);
    if ((old == NULL) != (old_id == 0))
        stress_fail("table slot %zu: holds %p, expected id 0x%" PRIx64, slot, (void *)old, old_id);
    if (old) {
        char w[64];
        snprintf(w, sizeof w, "retiring table slot %zu", slot);
        check_chain(old, old_id, w);
        stress_add_u64(&retired_verified, 1);
    }
    if (head)
        stress_add_u64(&published, 1);
    __asm__ __volatile__("" : : "r"(old) : "memory");
    return slot;
}

/* Read and verify one slot. Returns 1 if it held a chain. */
static int table_check(size_t slot, const char *who)
{
    stress_lock(&slot_lock[slot]);
    struct sobj *o = stress_load_ref(&table->item[slot]);
    uint64_t id = stress_load_u64(&table_expect[slot]);
    stress_unlock(&slot_lock[slot]);
    if ((o == NULL) != (id == 0))
        stress_fail("%s: table slot %zu holds %p, expected id 0x%" PRIx64, who, slot, (void *)o, id);
    if (!o)
        return 0;
    char w[96];
    snprintf(w, sizeof w, "%s: table slot %zu", who, slot);
    check_chain(o, id, w);
    __asm__ __volatile__("" : : "r"(o) : "memory");
    return 1;
}

static struct sobj *alloc_obj(uint64_t id, stress_rng *r)
{
    size_t len = stress_chance(r, 2) ? stress_range(r, STRESS_SMALL_MAX_LEN + 1, 2 * STRESS_SMALL_MAX_LEN)
                                     : stress_range(r, 0, 24);
    struct sobj *o = stress_sobj_new(id, len);
    if (!o)
        stress_fail("worker: allocating object 0x%" PRIx64 " (length %zu): %s", id, len, strerror(errno));
    stress_add_u64(&objects_made, 1);
    return o;
}

/* One attached stretch of a worker: build a chain held only by this stack,
 * verify it, publish some of its prefixes, verify others' chains. */
static void work(struct worker *w, stress_rng *r, unsigned part)
{
    uint64_t wid = w->serial * 2 + part;         /* a chain id space per stretch */
    unsigned n = (unsigned)stress_range(r, 1, MAX_CHAIN);
    struct sobj *head = NULL;
    struct sobj *keep[4] = { 0 };
    unsigned nkeep = 0;
    for (unsigned i = 0; i < n; i++) {
        struct sobj *o = alloc_obj(make_id(wid, i, K_CHAIN), r);
        stress_sobj_set(o, 0, head);
        if (stress_chance(r, 20))
            stress_sobj_set(o, 1, alloc_obj(make_id(wid, i, K_AUX), r));
        head = o;
        if (nkeep < 4 && stress_chance(r, 3))
            keep[nkeep++] = o;               /* prefixes published below */
        if (stress_chance(r, 2))
            sched_yield();
    }
    check_chain(head, make_id(wid, n - 1, K_CHAIN), "worker, its own chain");
    if (stress_chance(r, 70)) {
        size_t slot = (size_t)(stress_add_u64(&tickets, 1) % TABLE_SLOTS);
        table_put(slot, head, head->id);
    }
    for (unsigned i = 0; i < nkeep; i++) {
        size_t slot = (size_t)(stress_add_u64(&tickets, 1) % TABLE_SLOTS);
        table_put(slot, keep[i], keep[i]->id);
    }
    for (unsigned i = (unsigned)stress_below(r, 4); i; i--)
        stress_add_u64(&chains_read, (uint64_t)table_check(stress_below(r, TABLE_SLOTS), "worker"));
    if (stress_chance(r, 5))
        lull_collect(LULL_GEN_NURSERY);
    else if (stress_chance(r, 30) && lull_idle((uint64_t)stress_range(r, 1, 100) * 1000000u) < 0)
        stress_fail("lull_idle failed");
    __asm__ __volatile__("" : : "r"(head), "r"(keep) : "memory");
}

/* ------------------------------------------------------------------------ */
/* Workers and their end                                                    */
/* ------------------------------------------------------------------------ */

/* A worker's end is counted from the second round of pthread_key
 * destructors: lull detaches a thread that exits attached in the first
 * round, so by then it is detached, and lull_shutdown may follow. */
static pthread_key_t done_key;

static void done_destructor(void *p)
{
    struct worker *w = p;
    if (w->dtor_round++ == 0) {
        pthread_setspecific(done_key, w);    /* once more, after every first-round destructor */
        return;
    }
    int detached = w->kind == W_DETACHED_DETACH || w->kind == W_DETACHED_EXIT_ATTACHED;
    stress_add_u64(&finished, 1);
    if (detached)
        free(w);
    else
        __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    __atomic_sub_fetch(&live_workers, 1, __ATOMIC_RELEASE);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_setspecific(done_key, w);
    stress_rng r = stress_rng_for(1000 + w->serial);
    if (w->kind == W_NEVER_ATTACHED) {
        lull_stats s;
        lull_get_stats(&s);
        lull_collect(stress_chance(&r, 50) ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
        if (lull_idle(1000000000) < 0)
            stress_fail("lull_idle from an unattached thread failed");
        return NULL;
    }
    if (__atomic_load_n(&helper_collecting, __ATOMIC_RELAXED))
        stress_add_u64(&attached_during_collect, 1);
    if (lull_thread_attach() != 0)
        stress_fail("worker %" PRIu64 ": lull_thread_attach failed", w->serial);
    if (stress_chance(&r, 10) && lull_thread_attach() != 0)
        stress_fail("worker %" PRIu64 ": a second lull_thread_attach did not return 0", w->serial);
    for (int part = 0; part < w->rounds; part++) {
        if (part) {
            /* Nothing of ours is held only by this stack across the gap:
             * it is not a root while detached. */
            lull_thread_detach();
            sched_yield();
            if (lull_thread_attach() != 0)
                stress_fail("worker %" PRIu64 ": attaching again failed", w->serial);
            stress_add_u64(&reattached, 1);
        }
        work(w, &r, (unsigned)part);
    }
    if (w->kind == W_JOIN_DETACH || w->kind == W_DETACHED_DETACH) {
        lull_thread_detach();
    } else {
        stress_add_u64(&exit_attached, 1);
    }
    if (w->use_pthread_exit) {
        stress_add_u64(&pthread_exits, 1);
        pthread_exit(NULL);
    }
    return NULL;
}

/* Start one worker. Joinable ones are returned for the caller to join. */
static struct worker *spawn(stress_rng *r, int burst)
{
    struct worker *w = calloc(1, sizeof *w);
    if (!w)
        stress_fail("out of memory (malloc)");
    w->serial = stress_add_u64(&spawned, 1);
    unsigned k = (unsigned)stress_below(r, 100);
    w->kind = k < 25 ? W_JOIN_DETACH : k < 50 ? W_JOIN_EXIT_ATTACHED : k < 72 ? W_DETACHED_DETACH
            : k < 95 ? W_DETACHED_EXIT_ATTACHED : W_NEVER_ATTACHED;
    w->burst = burst;
    w->rounds = stress_chance(r, 20) ? 2 : 1;
    w->use_pthread_exit = stress_chance(r, 30);
    stress_add_u64(&kind_count[w->kind], 1);
    if (burst)
        stress_add_u64(&burst_workers, 1);
    int detached = w->kind == W_DETACHED_DETACH || w->kind == W_DETACHED_EXIT_ATTACHED;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, detached ? PTHREAD_CREATE_DETACHED : PTHREAD_CREATE_JOINABLE);
    __atomic_add_fetch(&live_workers, 1, __ATOMIC_RELAXED);
    int rc = pthread_create(&w->thread, &attr, worker_main, w);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        stress_fail("pthread_create (worker %" PRIu64 "): %s", w->serial, strerror(rc));
    return detached ? NULL : w;
}

/* Joinable workers wait in a list for the reaper, which joins each once it
 * is past its destructors.
 *
 * The reaper is attached, except under ThreadSanitizer. There, pthread_join
 * is a blocking call in which signals are delivered at once, so an attached
 * joiner can be stopped inside glibc while it holds the lock of glibc's
 * stack cache (freeing the joined thread's stack); an attached thread in
 * pthread_create, waiting for that lock inside a call TSan does not treat
 * as blocking, then never receives its stop signal and the pause hangs.
 * Unattached, the reaper is never stopped and always lets the lock go. */
static struct worker *reap_list;       /* reap_lock */
static int reap_lock;
static int spawning_done;              /* atomic: no more joinable workers will come */
static uint64_t joined;

static void add_joinable(struct worker *w)
{
    if (!w)
        return;
    stress_lock(&reap_lock);
    w->next = reap_list;
    reap_list = w;
    stress_unlock(&reap_lock);
}

static void *reaper_main(void *arg)
{
    (void)arg;
    int attach = !STRESS_TSAN;
    if (attach && lull_thread_attach() != 0)
        stress_fail("reaper: lull_thread_attach failed");
    struct worker *pending = NULL;
    for (;;) {
        int last = __atomic_load_n(&spawning_done, __ATOMIC_ACQUIRE);
        stress_lock(&reap_lock);
        struct worker *l = reap_list;
        reap_list = NULL;
        stress_unlock(&reap_lock);
        while (l) {
            struct worker *w = l;
            l = l->next;
            w->next = pending;
            pending = w;
        }
        for (struct worker **pp = &pending; *pp;) {
            struct worker *w = *pp;
            if (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) {
                pp = &w->next;
                continue;
            }
            int rc = pthread_join(w->thread, NULL);
            if (rc != 0)
                stress_fail("pthread_join (worker %" PRIu64 "): %s", w->serial, strerror(rc));
            *pp = w->next;
            free(w);
            joined++;
        }
        if (last && !pending)
            break;
        stress_sleep_ns(200000);
    }
    if (attach)
        lull_thread_detach();
    return NULL;
}

/* Keeps max_live workers running. Attached: it is stopped too, in the
 * middle of pthread_create as often as not. */
static void *spawner_main(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("spawner: lull_thread_attach failed");
    stress_rng r = stress_rng_for(3);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        if (__atomic_load_n(&live_workers, __ATOMIC_RELAXED) < max_live)
            add_joinable(spawn(&r, 0));
        else
            stress_sleep_ns(100000);
    }
    lull_thread_detach();
    return NULL;
}

/* The helper waits on a semaphore and collects as soon as it is posted; the
 * burst thread posts it and immediately starts a burst of workers. */
static sem_t helper_go;

static void *helper_main(void *arg)
{
    (void)arg;
    stress_rng r = stress_rng_for(4);
    for (;;) {
        while (sem_wait(&helper_go) != 0) {
            if (errno != EINTR)
                stress_fail("sem_wait: %s", strerror(errno));
        }
        if (__atomic_load_n(&stop, __ATOMIC_RELAXED))
            break;
        /* Half of the time from an attached thread. */
        int attach = stress_chance(&r, 50);
        if (attach && lull_thread_attach() != 0)
            stress_fail("helper: lull_thread_attach failed");
        __atomic_store_n(&helper_collecting, 1, __ATOMIC_RELAXED);
        lull_collect(stress_chance(&r, 50) ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
        __atomic_store_n(&helper_collecting, 0, __ATOMIC_RELAXED);
        stress_add_u64(&helper_collections, 1);
        if (attach)
            lull_thread_detach();
    }
    return NULL;
}

static void *burst_main(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("burst thread: lull_thread_attach failed");
    stress_rng r = stress_rng_for(5);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        stress_sleep_ns(stress_range(&r, 2, 30) * 1000000ull);
        if (__atomic_load_n(&live_workers, __ATOMIC_RELAXED) > 4 * max_live)
            continue;
        sem_post(&helper_go);
        for (unsigned i = (unsigned)stress_range(&r, 3, 8); i; i--)
            add_joinable(spawn(&r, 1));
        stress_add_u64(&bursts, 1);
    }
    lull_thread_detach();
    return NULL;
}

static void *collector_main(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("collector: lull_thread_attach failed");
    stress_rng r = stress_rng_for(6);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        stress_sleep_ns(stress_range(&r, 0, 10000) * 1000ull);
        if (stress_chance(&r, 25)) {
            uint64_t ns = (uint64_t)100000 << stress_below(&r, 8);     /* 100 us .. 12.8 ms */
            if (lull_set_pause_target(ns) != 0)
                stress_fail("collector: lull_set_pause_target(%" PRIu64 ") failed", ns);
            stress_add_u64(&targets_set, 1);
            continue;
        }
        lull_collect(stress_chance(&r, 50) ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
        stress_add_u64(&forced_collections, 1);
    }
    lull_thread_detach();
    return NULL;
}

static size_t check_table(const char *who)
{
    size_t n = 0;
    for (size_t i = 0; i < TABLE_SLOTS; i++)
        n += (size_t)table_check(i, who);
    return n;
}

static int expect_idle;

/* Every kind of worker and every path the final checks require has run. */
static int everything_happened(void)
{
    for (int k = 0; k < 5; k++)
        if (!stress_load_u64(&kind_count[k]))
            return 0;
    uint64_t *const need[] = { &exit_attached, &pthread_exits, &reattached, &bursts, &attached_during_collect,
                               &published, &retired_verified, &chains_read };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!stress_load_u64(need[i]))
            return 0;
    lull_stats s;
    lull_get_stats(&s);
    return s.collections_minor && s.collections_major && (!expect_idle || s.minors_idle);
}

static int own_option(const char *arg, const char *val)
{
    if (!strcmp(arg, "--expect-idle")) {
        expect_idle = 1;
        return 1;
    }
    if (!strcmp(arg, "--live")) {
        double d = stress_parse_num(val, "--live");
        if (d < 1 || d > 64)
            stress_usage("[--live N (1..64)] [--expect-idle]");
        max_live = (unsigned)d;
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    stress_parse_args("stress_churn", argc, argv, 10, own_option, "[--live N] [--expect-idle]");
    printf("stress_churn: seed %" PRIu64 ", %.1f s, %u live workers, LULL_GC_PARAMS='%s' LULL_GC_DEBUG='%s'\n",
           stress_seed, stress_seconds, max_live, stress_env("LULL_GC_PARAMS"), stress_env("LULL_GC_DEBUG"));
    fflush(stdout);

    int rc = lull_init(NULL);
    if (rc != 0)
        stress_fail("lull_init: %s", strerror(-rc));
    if (pthread_key_create(&done_key, done_destructor) != 0 || sem_init(&helper_go, 0, 0) != 0)
        stress_fail("pthread_key_create/sem_init failed");
    if ((rc = lull_root_add_refs((void **)&table, 1)) != 0)
        stress_fail("lull_root_add_refs: %s", strerror(-rc));
    struct refs *t = lull_alloc_array(&refs_type, TABLE_SLOTS);
    if (!t)
        stress_fail("allocating the table: %s", strerror(errno));
    __atomic_store_n(&table, t, __ATOMIC_RELEASE);
    t = NULL;

    double t0 = stress_now();
    pthread_t spawner, helper, burster, collector, reaper;
    if (pthread_create(&reaper, NULL, reaper_main, NULL) ||
        pthread_create(&helper, NULL, helper_main, NULL) || pthread_create(&spawner, NULL, spawner_main, NULL) ||
        pthread_create(&burster, NULL, burst_main, NULL) || pthread_create(&collector, NULL, collector_main, NULL))
        stress_fail("pthread_create failed");

    uint64_t sweeps = 0;
    size_t max_occupied = 0;
    /* The run lasts its seconds, and then as long as some event the checks
     * below require has not happened yet, up to 120 s more: how many happen
     * in a few seconds depends on the machine's speed, its load and the
     * sanitizer, not on the collector. A path that never runs still fails
     * there, only later. */
    while (stress_now() - t0 < stress_seconds || (!everything_happened() && stress_now() - t0 < stress_seconds + 120)) {
        stress_sleep_ns(100000000);
        size_t n = check_table("main, periodic check");
        if (n > max_occupied)
            max_occupied = n;
        sweeps++;
        if (stress_verbose) {
            lull_stats s;
            lull_get_stats(&s);
            printf("stress_churn: %5.1f s: %" PRIu64 " threads spawned, %" PRIu64 " live, %zu chains in the "
                   "table, %" PRIu64 " pauses\n", stress_now() - t0, __atomic_load_n(&spawned, __ATOMIC_RELAXED),
                   __atomic_load_n(&live_workers, __ATOMIC_RELAXED), n, s.pauses);
            fflush(stdout);
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(spawner, NULL);
    pthread_join(burster, NULL);
    pthread_join(collector, NULL);
    sem_post(&helper_go);
    pthread_join(helper, NULL);
    __atomic_store_n(&spawning_done, 1, __ATOMIC_RELEASE);
    pthread_join(reaper, NULL);
    /* Detached workers: wait until every one is past lull's destructor. */
    double deadline = stress_now() + 60;
    while (__atomic_load_n(&live_workers, __ATOMIC_ACQUIRE) != 0) {
        if (stress_now() > deadline)
            stress_fail("%" PRIu64 " worker threads did not finish within 60 s of the end",
                        __atomic_load_n(&live_workers, __ATOMIC_RELAXED));
        stress_sleep_ns(1000000);
    }

    size_t before = check_table("main, final check");
    lull_collect(LULL_GEN_MAJOR);
    size_t after = check_table("main, final check after a collection");
    if (before != after)
        stress_fail("the table held %zu chains, %zu after a collection", before, after);
    if (published != retired_verified + after)
        stress_fail("%" PRIu64 " chains published, but %" PRIu64 " retired and verified + %zu in the table",
                    published, retired_verified, after);
    if (spawned != finished)
        stress_fail("%" PRIu64 " workers spawned, %" PRIu64 " finished", spawned, finished);
    uint64_t joinable = kind_count[W_JOIN_DETACH] + kind_count[W_JOIN_EXIT_ATTACHED] + kind_count[W_NEVER_ATTACHED];
    if (joined != joinable)
        stress_fail("%" PRIu64 " joinable workers spawned, %" PRIu64 " joined", joinable, joined);
    double elapsed = stress_now() - t0;

    lull_stats s;
    lull_get_stats(&s);
    /* The equalities above hold just as well when nothing was spawned or
     * published: every kind of worker and every path must have run. */
    for (int k = 0; k < 5; k++)
        if (kind_count[k] == 0)
            stress_fail("no %s worker was spawned (%" PRIu64 " threads in all)", kind_names[k], spawned);
    if (exit_attached == 0 || pthread_exits == 0 || reattached == 0 || bursts == 0 ||
        attached_during_collect == 0 || published == 0 || retired_verified == 0 || chains_read == 0 ||
        s.collections_minor == 0 || s.collections_major == 0)
        stress_fail("too little happened: %" PRIu64 " exited attached, %" PRIu64 " via pthread_exit, %" PRIu64
                    " re-attached, %" PRIu64 " bursts, %" PRIu64 " attached while a collection was under way, %"
                    PRIu64 " chains published, %" PRIu64 " retired and verified, %" PRIu64 " read by workers, %"
                    PRIu64 " minor and %" PRIu64 " major collections", exit_attached, pthread_exits, reattached,
                    bursts, attached_during_collect, published, retired_verified, chains_read,
                    s.collections_minor, s.collections_major);
    if (expect_idle && s.minors_idle == 0)
        stress_fail("--expect-idle: no minor ran in idle time (%" PRIu64 " minors)", s.collections_minor);
    if (s.minors_idle > s.collections_minor)
        stress_fail("%" PRIu64 " minors in idle time, more than the %" PRIu64 " minors", s.minors_idle,
                    s.collections_minor);
    printf("stress_churn: OK seed %" PRIu64 " %.1f s: threads %" PRIu64 " (", stress_seed, elapsed, spawned);
    for (int k = 0; k < 5; k++)
        printf("%s%s %" PRIu64, k ? ", " : "", kind_names[k], kind_count[k]);
    printf("; %" PRIu64 " joined, %" PRIu64 " exited attached, %" PRIu64 " via pthread_exit, %" PRIu64
           " re-attached) bursts %" PRIu64
           " (%" PRIu64 " threads, %" PRIu64 " attached while a collection was under way); chains published %"
           PRIu64 " all verified (%" PRIu64 " on retirement, %zu at the end), %" PRIu64 " read by workers, "
           "objects %" PRIu64 "; collections %" PRIu64 " (forced %" PRIu64 "+%" PRIu64 ", %" PRIu64
           " minors in idle time), pause targets set %" PRIu64 ", pauses %" PRIu64 " max %.0f us\n",
           joined, exit_attached, pthread_exits, reattached, bursts, burst_workers, attached_during_collect, published,
           retired_verified, after, chains_read, objects_made, s.collections_major + s.collections_minor,
           forced_collections, helper_collections, s.minors_idle, targets_set, s.pauses, s.pause_max_ns / 1e3);

    lull_root_remove((void **)&table);
    lull_shutdown();
    sem_destroy(&helper_go);
    return 0;
}
