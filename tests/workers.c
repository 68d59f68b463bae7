/*
 * workers — the mark worker threads and parallel marking (mark-workers=N).
 *
 * - mark-workers=N starts N-1 threads named lull-mark/1.. (the thread that
 *   stops the world is the Nth marker), with every signal blocked, and
 *   lull_shutdown joins them; mark-workers=1 starts none.
 * - A graph marked by several markers survives intact, with
 *   LULL_GC_DEBUG=verify-parallel comparing every parallel mark against a
 *   serial re-mark; the worker does part of the marking (LULL_GC_DEBUG=log
 *   counts the objects it scanned).
 * - verify-parallel catches a lost object: LULL_GC_DEBUG=plant-mark-fault
 *   makes each parallel mark skip one reference, and the child must abort
 *   with verify-parallel's message (the same program without the fault
 *   exits cleanly).
 * - The minor copies in parallel: nodes reachable only from dirty cards,
 *   each from many slots that different tracers scan, are copied once and
 *   every slot names that copy; the worker copies part of them (log).
 * - fork(): the child has its own workers and marks with them.
 */
#include "check.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

/* test_fork's child starts its own mark worker, after a fork in a
 * multi-threaded process: ThreadSanitizer kills such a child unless told
 * otherwise (see stress/fork.c for why this child is safe). */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WORKERS_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(WORKERS_TSAN)
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}
#endif

/* Under AddressSanitizer a fork child does not restart the workers
 * (lib/workers.c says why). */
#if defined(__SANITIZE_ADDRESS__)
#define WORKERS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WORKERS_ASAN 1
#endif
#endif
#ifndef WORKERS_ASAN
#define WORKERS_ASAN 0
#endif

#define GRAPH_NODES 200000u
#define FANOUT      4

struct gnode {
    lull_header   h;
    struct gnode *edge[FANOUT];
    uint64_t      id;
};
static const lull_type gnode_type = {
    .name = "gnode", .size = sizeof(struct gnode),
    .refs = LULL_REF(struct gnode, edge[0]) | LULL_REF(struct gnode, edge[1]) |
            LULL_REF(struct gnode, edge[2]) | LULL_REF(struct gnode, edge[3]),
};

static void *graph_root[1];

/* ---- /proc helpers ------------------------------------------------------ */

struct worker_info {
    unsigned count;
    bool all_blocked;          /* suspend and restart signals blocked in each */
};

static bool read_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
    return true;
}

static struct worker_info workers_now(void)
{
    struct worker_info wi = { 0, true };
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL, "opendir /proc/self/task: %s", strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[320], buf[4096];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if (!read_file(path, buf, sizeof buf) || strncmp(buf, "lull-mark/", 10) != 0)
            continue;
        wi.count++;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        CHECK(read_file(path, buf, sizeof buf), "read %s", path);
        const char *blk = strstr(buf, "SigBlk:");
        CHECK(blk, "no SigBlk in %s", path);
        unsigned long long mask = strtoull(blk + 7, NULL, 16);
        if (!(mask & (1ull << (SIGPWR - 1))) || !(mask & (1ull << (SIGXCPU - 1))))
            wi.all_blocked = false;
    }
    closedir(d);
    return wi;
}

/* ---- the graph ------------------------------------------------------------ */

/* Node i points to node i-1 (so all are reachable from the last) and to
 * three earlier nodes picked by a fixed generator: wide enough that the
 * grey stack fills and is shared. */
static NOINLINE void graph_build(void)
{
    struct gnode **all = calloc(GRAPH_NODES, sizeof *all);   /* precise roots: NULL or valid */
    CHECK(all != NULL, "calloc");
    CHECK(lull_root_add_refs((void **)all, GRAPH_NODES) == 0, "root_add_refs");
    uint64_t r = 12345;
    for (unsigned i = 0; i < GRAPH_NODES; i++) {
        struct gnode *n = lull_alloc(&gnode_type);
        CHECK(n != NULL, "alloc gnode %u", i);
        n->id = i;
        all[i] = n;
        if (i) {
            LULL_SET(n, edge[0], all[i - 1]);
            for (int k = 1; k < FANOUT; k++) {
                r = mix64(r);
                LULL_SET(n, edge[k], all[r % i]);
            }
        }
    }
    graph_root[0] = all[GRAPH_NODES - 1];
    lull_root_remove(all);
    memset(all, 0, GRAPH_NODES * sizeof *all);
    free(all);
}

/* Every node reachable once, with its id and its edges as built. */
static NOINLINE void graph_check(void)
{
    struct gnode *n = graph_root[0];
    uint64_t r = 12345;
    struct gnode **seen = calloc(GRAPH_NODES, sizeof *seen);
    CHECK(seen != NULL, "calloc");
    /* Walk the chain from the last node down, recording each node. */
    for (unsigned i = GRAPH_NODES; i-- > 0;) {
        CHECK(n != NULL && n->id == i, "graph node %u lost or corrupt (found %p)", i, (void *)n);
        seen[i] = n;
        n = n->edge[0];
    }
    CHECK(n == NULL, "graph chain does not end at node 0");
    for (unsigned i = 1; i < GRAPH_NODES; i++)
        for (int k = 1; k < FANOUT; k++) {
            r = mix64(r);
            CHECK(seen[i]->edge[k] == seen[r % i], "graph node %u edge %d wrong", i, k);
        }
    free(seen);
}

static void majors(int n)
{
    for (int i = 0; i < n; i++)
        lull_collect(LULL_GEN_MAJOR);
}

/* ---- tests -------------------------------------------------------------- */

static void test_lifecycle(void)
{
    CHECK(lull_init("mark-workers=3") == 0, "lull_init mark-workers=3");
    struct worker_info wi = workers_now();
    CHECK(wi.count == 2, "mark-workers=3: %u lull-mark threads, expected 2", wi.count);
    CHECK(wi.all_blocked, "a lull-mark thread does not block the suspend/restart signals");
    lull_shutdown();
    wi = workers_now();
    CHECK(wi.count == 0, "after lull_shutdown: %u lull-mark threads left", wi.count);

    /* One marker in pauses; concurrent majors still need a thread of
     * their own to mark while the world runs, stop-the-world ones do not. */
    CHECK(lull_init("mark-workers=1") == 0, "lull_init mark-workers=1");
    wi = workers_now();
    CHECK(wi.count == 1, "mark-workers=1 (major=concurrent): %u lull-mark threads, expected 1", wi.count);
    lull_shutdown();
    CHECK(lull_init("mark-workers=1,major=stw") == 0, "lull_init mark-workers=1,major=stw");
    wi = workers_now();
    CHECK(wi.count == 0, "mark-workers=1,major=stw: %u lull-mark threads, expected none", wi.count);
    lull_shutdown();
}

static void test_parallel_mark(void)
{
    CHECK(setenv("LULL_GC_DEBUG", "verify-parallel,verify,log", 1) == 0, "setenv");
    CHECK(lull_init("mark-workers=2") == 0, "lull_init mark-workers=2");
    CHECK(lull_root_add_refs(graph_root, 1) == 0, "root");
    graph_build();
    clobber_stack();
    struct worker_info wi = workers_now();
    CHECK(wi.count == 1, "mark-workers=2: %u lull-mark threads", wi.count);
    /* LULL_GC_DEBUG=log says how many objects each major's workers
     * scanned: repeat until one did (a worker that is not scheduled in
     * time leaves the stopper to mark alone, which is correct but shows
     * nothing). */
    int rounds = 0;
    unsigned long long by_workers = 0;
    do {
        capture_begin();
        majors(2);
        const char *log = capture_end();
        for (const char *p = log; (p = strstr(p, " objects (")) != NULL; p++) {
            unsigned long long n = 0;
            if (sscanf(p, " objects (%llu by workers)", &n) == 1)
                by_workers += n;
        }
        CHECK(strstr(log, "by workers)") != NULL, "LULL_GC_DEBUG=log printed no major line: %s", log);
        graph_check();
        rounds++;
    } while (by_workers == 0 && rounds < 200);
    CHECK(by_workers > 0, "the mark worker scanned no object in %d rounds of two majors", rounds);
    lull_root_remove(graph_root);
    graph_root[0] = NULL;
    lull_shutdown();
    unsetenv("LULL_GC_DEBUG");
    printf("workers: parallel mark: graph intact; the worker scanned %llu objects in %d round(s)\n", by_workers,
           rounds);
}

/* The parallel minor: young nodes reachable only from an old array's
 * dirty cards, each from 16 slots spread over 30 of the array's 62 blocks,
 * so tracers that scan different cards race to copy the same node. After
 * each minor every slot of a node must name the one copy (the
 * compare-and-swap on the header let exactly one tracer win), with its id
 * and its chain intact; verify-nursery checks that nothing points into the
 * evacuated nursery.
 *
 * The array is groups of 16 slots; node j sits in slot k of group
 * j + k * MINOR_SPREAD. A node's first slot is thus as far into the array
 * as its number: whatever part of the card list the worker claims when it
 * joins, some of its nodes are nodes no tracer has reached yet (had every
 * node a slot near the start, the stopping thread would copy them all
 * before a worker woken late claimed any card). Repeated until the log
 * says the worker copied something. */
#define MINOR_NODES  4096u
#define MINOR_SPREAD 256u                                   /* groups: 4096 slots, two blocks */
#define MINOR_GROUPS (MINOR_NODES + 15u * MINOR_SPREAD)
#define MINOR_SLOTS  (MINOR_GROUPS * 16u)                   /* 992 KiB: a large object */

static void *minor_root[1];

/* The node slot i names, or MINOR_NODES if none. */
static unsigned minor_node_at(unsigned i)
{
    unsigned g = i / 16u, k = i % 16u;
    return g >= k * MINOR_SPREAD && g - k * MINOR_SPREAD < MINOR_NODES ? g - k * MINOR_SPREAD : MINOR_NODES;
}

static NOINLINE void minor_round(struct refs *old, uint64_t base)
{
    struct gnode **nodes = calloc(MINOR_NODES, sizeof *nodes);   /* malloc'ed: not a root */
    CHECK(nodes != NULL, "calloc");
    for (unsigned j = 0; j < MINOR_NODES; j++) {
        nodes[j] = lull_alloc(&gnode_type);
        CHECK(nodes[j] != NULL, "alloc");
        nodes[j]->id = base + j;
        if (j)
            LULL_SET(nodes[j], edge[0], nodes[j - 1]);
    }
    for (unsigned i = 0; i < MINOR_SLOTS; i++) {
        unsigned j = minor_node_at(i);
        lull_store(old, &old->item[i], j < MINOR_NODES ? nodes[j] : NULL);
    }
    memset(nodes, 0, MINOR_NODES * sizeof *nodes);
    free(nodes);
}

static NOINLINE void minor_check(struct refs *old, uint64_t base)
{
    for (unsigned i = 0; i < MINOR_SLOTS; i++) {
        unsigned j = minor_node_at(i);
        struct gnode *n = old->item[i];
        if (j == MINOR_NODES) {
            CHECK(n == NULL, "slot %u names no node and now holds %p", i, (void *)n);
            continue;
        }
        struct gnode *first = old->item[16u * j];   /* slot 0 of group j */
        CHECK(n == first, "slot %u and slot %u named node %u and now differ (%p, %p): two copies", i, 16u * j, j,
              (void *)n, (void *)first);
        CHECK(n->id == base + j, "node %u: id %llu", j, (unsigned long long)n->id);
        CHECK(j ? n->edge[0] == old->item[16u * (j - 1)] : n->edge[0] == NULL, "node %u: chain broken", j);
    }
}

static void test_parallel_minor(void)
{
    CHECK(setenv("LULL_GC_DEBUG", "verify-nursery,log", 1) == 0, "setenv");
    CHECK(lull_init("mark-workers=2") == 0, "lull_init mark-workers=2");
    CHECK(lull_root_add_refs(minor_root, 1) == 0, "root");
    minor_root[0] = lull_alloc_array(&refs_type, MINOR_SLOTS);
    CHECK(minor_root[0] != NULL, "alloc");
    /* Old before the rounds: the dirty cards of a young large object are
     * scanned by the one tracer that reaches it, those of an old one are
     * shared out. A young large object stays young for at most two
     * minors (LULL_LOS_YOUNG_MINORS). */
    for (int i = 0; i < 3; i++)
        lull_collect(LULL_GEN_NURSERY);
    int rounds = 0, minors = 0;
    double by_workers = 0;
    do {
        struct refs *old = minor_root[0];
        uint64_t base = (uint64_t)rounds * MINOR_NODES;
        /* The stores may start minors of their own (the dirty-card
         * budget): every minor of the round counts. */
        capture_begin();
        minor_round(old, base);
        clobber_stack();
        lull_collect(LULL_GEN_NURSERY);
        const char *log = capture_end();
        int seen = 0;
        for (const char *p = log; (p = strstr(p, "KiB by workers)")) != NULL; p++) {
            const char *q = p;
            while (q > log && q[-1] != '(')
                q--;
            by_workers += strtod(q, NULL);
            seen++;
        }
        CHECK(seen > 0, "LULL_GC_DEBUG=log printed no minor line: %s", log);
        minors += seen;
        minor_check(old, base);
        rounds++;
    } while (by_workers == 0 && rounds < 200);
    CHECK(by_workers > 0, "the mark worker copied nothing in %d minors (%d rounds)", minors, rounds);
    lull_root_remove(minor_root);
    minor_root[0] = NULL;
    lull_shutdown();
    unsetenv("LULL_GC_DEBUG");
    printf("workers: parallel minor: every node copied once; the worker copied %.1f KiB in %d round(s), %d minor(s)\n",
           by_workers, rounds, minors);
}

/* The child: a parallel mark with or without a planted fault. */
static void planted_child(bool plant)
{
    CHECK(setenv("LULL_GC_DEBUG", plant ? "verify-parallel,plant-mark-fault" : "verify-parallel", 1) == 0,
          "setenv");
    /* A synchronous major: its drain marks the whole graph in parallel (a
     * concurrent major's final drain has little left to mark). */
    CHECK(lull_init("mark-workers=2,major=stw") == 0, "lull_init");
    CHECK(lull_root_add_refs(graph_root, 1) == 0, "root");
    graph_build();
    clobber_stack();
    majors(1);
    graph_check();
    _exit(0);
}

static int run_child(void (*fn)(bool), bool arg, char *buf, size_t cap)
{
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fds[0], buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fds[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    return st;
}

static void test_verify_parallel_catches(void)
{
    char buf[8192];
    int st = run_child(planted_child, false, buf, sizeof buf);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "without the fault, the child failed (status %d): %s", st, buf);
    st = run_child(planted_child, true, buf, sizeof buf);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
          strstr(buf, "lull: verify-parallel: object ") && strstr(buf, "lost a reachable object"),
          "a lost object was not caught by verify-parallel (status %d, stderr: %s)", st, buf);
}

static void test_fork(void)
{
    CHECK(setenv("LULL_GC_DEBUG", "verify-parallel", 1) == 0, "setenv");
    CHECK(lull_init("mark-workers=2") == 0, "lull_init");
    CHECK(lull_root_add_refs(graph_root, 1) == 0, "root");
    graph_build();
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        struct worker_info wi = workers_now();
        CHECK(wi.count == (WORKERS_ASAN ? 0u : 1u), "fork child: %u lull-mark threads, expected %u", wi.count,
              WORKERS_ASAN ? 0u : 1u);
        majors(2);
        graph_check();
        _exit(0);
    }
    majors(1);
    graph_check();
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork child failed (status %d)", st);
    struct worker_info wi = workers_now();
    CHECK(wi.count == 1, "fork parent: %u lull-mark threads, expected 1", wi.count);
    lull_root_remove(graph_root);
    graph_root[0] = NULL;
    lull_shutdown();
    unsetenv("LULL_GC_DEBUG");
}

int main(void)
{
    test_lifecycle();
    test_verify_parallel_catches();
    test_parallel_mark();
    test_parallel_minor();
    test_fork();
    printf("workers: ok\n");
    return 0;
}
