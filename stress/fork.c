/*
 * stress_fork — fork() in a multi-threaded program while collections run.
 *
 *   stress_fork [--seconds N] [--seed S] [--default-seconds N] [--min-forks-per-second R]
 *
 * Seconds: --seconds, else LULL_STRESS_SECONDS, else --default-seconds (10).
 * The run fails if it forked fewer than R times a second (default 3, or
 * 0.5 with LULL_GC_DEBUG=verify...; a release build forks about 80 times a
 * second, ThreadSanitizer about 14, and 2 with the heap verified).
 *
 * Three mutator threads build checksummed lists and publish them into a
 * precise root table (one slot range each, lull_store with release, readers
 * load with acquire), a fourth thread forces collections, and the main
 * thread forks over and over. Each child (single-threaded: the only thread
 * that exists there is the one that forked) verifies every published list
 * it inherited (and that it inherited some once the parent had published
 * any), allocates and collects, verifies again, checks that its own
 * collections moved the counters it inherited, and exits. The
 * parent waits for it with a deadline: a child that hangs (a collector
 * lock copied while another thread held it) or reports an inconsistency
 * fails the run. The parent's mutators verify their own lists throughout.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include "lull.h"

/* lull restarts its mark workers in the child (the parent's threads do not
 * exist there), and ThreadSanitizer by default kills a child that starts a
 * thread after a multi-threaded fork (its runtime cannot vouch for its own
 * state there). The child here only runs code that was quiescent at the
 * fork (lull holds its locks across it), so allow it; TSAN_OPTIONS from the
 * environment still apply on top of this default. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STRESS_FORK_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(STRESS_FORK_TSAN)
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}
#endif

struct node {
    lull_header h;
    struct node *next;
    uint64_t id;
    uint64_t check;    /* mix(id) */
};
static const lull_type node_type = {
    .name = "fork_node", .size = sizeof(struct node), .refs = LULL_REF(struct node, next),
};

#define MUTATORS 3
#define SLOTS_PER 16
#define SLOTS (MUTATORS * SLOTS_PER)
#define MAXLEN 400

static void *table[SLOTS];        /* precise root: list heads */
static atomic_int stop;
static atomic_ulong parent_checks, collections;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void fail(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
#include <stdarg.h>
static void fail(const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stress_fork: FAIL (%s): ", who);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    _exit(1);
}

static void sleep_us(unsigned us)
{
    struct timespec ts = { 0, (long)us * 1000L };
    nanosleep(&ts, NULL);
}

/* A list of len nodes with ids base .. base+len-1 (len >= 1). */
static struct node *build(uint64_t base, size_t len, const char *who)
{
    struct node *head = NULL;
    for (size_t i = len; i-- > 0;) {
        struct node *n = lull_alloc(&node_type);
        if (!n)
            fail(who, "lull_alloc returned NULL (errno %d)", errno);
        n->id = base + i;
        n->check = mix(base + i);
        LULL_SET(n, next, head);
        head = n;
    }
    return head;
}

/* Verify a published list: ids consecutive from its head's id, checksums
 * right, at most MAXLEN nodes. Returns its length. */
static size_t verify(const struct node *n, const char *who, size_t slot)
{
    size_t len = 0;
    uint64_t first = n ? n->id : 0;
    for (; n; n = __atomic_load_n(&n->next, __ATOMIC_ACQUIRE), len++) {
        if (len >= MAXLEN)
            fail(who, "slot %zu: list longer than %d nodes (cycle?)", slot, MAXLEN);
        if (n->id != first + len || n->check != mix(n->id))
            fail(who, "slot %zu node %zu: id %" PRIu64 " (expected %" PRIu64 "), check %" PRIx64
                 " (expected %" PRIx64 ")", slot, len, n->id, first + len, n->check, mix(n->id));
    }
    return len;
}

static size_t verify_table(const char *who)
{
    size_t nodes = 0;
    for (size_t s = 0; s < SLOTS; s++)
        nodes += verify(__atomic_load_n((struct node **)&table[s], __ATOMIC_ACQUIRE), who, s);
    return nodes;
}

static void *mutator(void *arg)
{
    int m = (int)(intptr_t)arg;
    uint64_t seed = mix((uint64_t)m + 0x1234) | 1;
    if (lull_thread_attach() != 0)
        fail("mutator", "lull_thread_attach failed");
    uint64_t next_id = (uint64_t)(m + 1) << 40;
    while (!atomic_load(&stop)) {
        size_t slot = (size_t)m * SLOTS_PER + rnd(&seed) % SLOTS_PER;
        size_t len = 1 + rnd(&seed) % (MAXLEN - 1);
        struct node *l = build(next_id, len, "parent mutator");
        next_id += len;
        if (verify(l, "parent mutator", slot) != len)
            fail("parent mutator", "new list of %zu nodes has the wrong length", len);
        /* The list it replaces has lived through forks and collections. */
        verify(__atomic_load_n((struct node **)&table[slot], __ATOMIC_ACQUIRE), "parent mutator, replaced list",
               slot);
        __atomic_store_n((struct node **)&table[slot], l, __ATOMIC_RELEASE);
        atomic_fetch_add(&parent_checks, 1);
    }
    lull_thread_detach();
    return NULL;
}

static void *collector(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        fail("collector", "lull_thread_attach failed");
    while (!atomic_load(&stop)) {
        lull_collect(LULL_GEN_MAJOR);
        atomic_fetch_add(&collections, 1);
        sleep_us(500);
    }
    lull_thread_detach();
    return NULL;
}

/* In the child: only this thread exists. `published` is how many lists the
 * parent's mutators had published before the fork: a table slot, once set,
 * always holds a list, so with any published the inherited table cannot be
 * empty. The collection counters are inherited too: only their increase
 * here, from a reading taken first thing in the child, says that the
 * child's own collections ran. */
static void child(uint64_t seed, unsigned long published)
{
    lull_stats s0, s1;
    lull_get_stats(&s0);
    size_t before = verify_table("child, inherited heap");
    if (published > 0 && before == 0)
        fail("child", "%lu lists were published before the fork, the inherited table is empty", published);
    struct node *mine = build(1ull << 60, 1 + seed % 300, "child");
    for (int i = 0; i < 3; i++)
        lull_collect(i == 1 ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
    if (verify(mine, "child, own list", SLOTS) != 1 + seed % 300)
        fail("child", "own list has the wrong length after collecting");
    size_t after = verify_table("child, after collecting");
    if (after != before)
        fail("child", "inherited lists had %zu nodes, %zu after collecting", before, after);
    if (lull_thread_attach() != 0)
        fail("child", "lull_thread_attach in the child returned an error");
    lull_get_stats(&s1);
    if (s1.collections_major < s0.collections_major + 2 || s1.collections_minor < s0.collections_minor + 1)
        fail("child", "the child ran 2 majors and 1 minor, its counters went from %" PRIu64 " majors and %" PRIu64
             " minors (inherited) to %" PRIu64 " and %" PRIu64, s0.collections_major, s0.collections_minor,
             s1.collections_major, s1.collections_minor);
    _exit(0);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = -1, default_seconds = 10, min_forks_per_s = -1;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--seconds") && v) seconds = atof(v), i++;
        else if (!strcmp(argv[i], "--seed") && v) seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(argv[i], "--default-seconds") && v) default_seconds = atof(v), i++;
        else if (!strcmp(argv[i], "--min-forks-per-second") && v) min_forks_per_s = atof(v), i++;
        else {
            fprintf(stderr, "usage: stress_fork [--seconds N] [--seed S] [--default-seconds N] "
                            "[--min-forks-per-second R]\n");
            return 2;
        }
    }
    if (seconds < 0) {
        const char *e = getenv("LULL_STRESS_SECONDS");
        seconds = e && *e ? atof(e) : default_seconds;
    }
    /* Verifying the heap at every collection, in the parent and in each
     * child, slows forking to 2 a second under ThreadSanitizer on a loaded
     * machine (20 forks in 10 s). */
    const char *debug = getenv("LULL_GC_DEBUG");
    int verifying = debug && strstr(debug, "verify");
    if (min_forks_per_s < 0)
        min_forks_per_s = verifying ? 0.5 : 3;
    printf("stress_fork: seed %" PRIu64 ", %d mutators, %.1f s, at least %.1f forks a second, LULL_GC_DEBUG='%s'\n",
           seed, MUTATORS, seconds, min_forks_per_s, debug ? debug : "");
    fflush(stdout);
    if (lull_init(NULL) != 0)
        fail("main", "lull_init failed");
    if (lull_root_add_refs(table, SLOTS) != 0)
        fail("main", "lull_root_add_refs failed");

    pthread_t tm[MUTATORS], tc;
    for (int m = 0; m < MUTATORS; m++)
        if (pthread_create(&tm[m], NULL, mutator, (void *)(intptr_t)m) != 0)
            fail("main", "pthread_create failed");
    if (pthread_create(&tc, NULL, collector, NULL) != 0)
        fail("main", "pthread_create failed");

    uint64_t s = mix(seed) | 1;
    unsigned long forks = 0;
    double end = now_s() + seconds;
    while (now_s() < end) {
        sleep_us((unsigned)(rnd(&s) % 5000));
        uint64_t cseed = rnd(&s);
        unsigned long published = atomic_load(&parent_checks);
        pid_t pid = fork();
        if (pid < 0)
            fail("main", "fork failed: %s", strerror(errno));
        if (pid == 0)
            child(cseed, published);
        /* Wait with a deadline: a child stuck on a lock copied from another
         * thread never exits. */
        double deadline = now_s() + 30;
        int status;
        pid_t r;
        while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
            if (now_s() > deadline) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                fail("main", "child %ld (fork %lu) hung for 30 s", (long)pid, forks + 1);
            }
            sleep_us(1000);
        }
        if (r < 0)
            fail("main", "waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail("main", "child of fork %lu ended with %s %d", forks + 1,
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        forks++;
    }
    atomic_store(&stop, 1);
    for (int m = 0; m < MUTATORS; m++)
        pthread_join(tm[m], NULL);
    pthread_join(tc, NULL);
    size_t nodes = verify_table("parent, at the end");
    lull_stats st;
    lull_get_stats(&st);
    /* A run that forked a handful of times proves little: about 80 forks a
     * second in a release build and 14 under ThreadSanitizer on the 2-core
     * CI machine; 3 a second leaves room for a loaded machine. */
    unsigned long min_forks = (unsigned long)(seconds * min_forks_per_s);
    if (min_forks < 1)
        min_forks = 1;
    if (forks < min_forks)
        fail("main", "only %lu forks in %.1f s, expected at least %lu (--min-forks-per-second %.1f)", forks, seconds,
             min_forks, min_forks_per_s);
    if (atomic_load(&collections) == 0 || st.collections_major == 0 || atomic_load(&parent_checks) == 0)
        fail("main", "%lu forced collections, %" PRIu64 " majors, %lu lists published: the forks ran without load",
             atomic_load(&collections), st.collections_major, atomic_load(&parent_checks));
    printf("stress_fork: OK seed %" PRIu64 " %.1f s: %lu forks, %lu lists published, %zu nodes at the end; "
           "%lu forced collections, %" PRIu64 " majors, pause max %.2f ms\n",
           seed, seconds, forks, atomic_load(&parent_checks), nodes, atomic_load(&collections),
           st.collections_major, (double)st.pause_max_ns / 1e6);
    lull_shutdown();
    return 0;
}
