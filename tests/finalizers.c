/*
 * finalizers — lull_register_finalizer and lull_run_finalizers (lull.h):
 *
 *  - -EPERM before lull_init; -EINVAL for NULL, a stack address and an
 *    interior pointer;
 *  - 10,000 dropped finalizable objects, each holding a list of 3 nodes
 *    only it references, are all finalized exactly once with the object
 *    and its list intact, while 100 still-reachable ones are not; the
 *    dropped ones die young (found by a minor) in one round and old (found
 *    by a major) in another;
 *  - registering again replaces the finalizer; fn = NULL removes it;
 *  - a finalizer that stores its object in a root resurrects it: the
 *    object stays intact through later collections and is not finalized
 *    again;
 *  - finalizers=auto: the finalizer thread runs them (a thread named
 *    lull-finalizer, not the test's); with finalizers=manual, only
 *    lull_run_finalizers does, on the calling thread;
 *  - a cycle of two finalizable objects dropped together: the WEAK
 *    handle of each reads NULL from the collection that finds them dead,
 *    both finalizers run once, each sees its peer intact (the order is
 *    free: the second may see the first already finalized, never freed),
 *    and once they ran the next major reclaims both (their WEAK_TRACK
 *    handles read NULL);
 *  - finalizers=auto: waiting for work, the finalizer thread is never
 *    signalled: its context switches do not move while 20 collections
 *    stop the world;
 *  - lull_stats counts them queued and run;
 *  - lull_shutdown runs the finalizers already queued (auto) before it
 *    returns, and the finalizer thread is gone afterwards (joined); with
 *    finalizers=manual it drops them: they never run.
 *
 * ctest runs it with auto and manual finalizers, and with major=stw.
 */
#include "check.h"

#include <dirent.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct fobj {
    lull_header h;
    struct tnode *list;
    uint64_t id, check;
} fobj;
static const lull_type fobj_type = { .name = "finalizable", .size = sizeof(fobj), .refs = LULL_REF(fobj, list) };

#define DROPPED 10000u
#define KEPT    100u

static bool manual;
static pthread_t main_thread;
static uint8_t seen[DROPPED + KEPT];
static atomic_uint finalized, wrong_thread;
static void *kept[KEPT];

static atomic_int finalizer_tid;    /* the thread that ran the last finalizer (auto) */
static atomic_uint misnamed;

/* With finalizers=auto: the finalizer thread is named lull-finalizer. */
static void note_thread(void)
{
    if (manual)
        return;
    char name[32] = "";
    pthread_getname_np(pthread_self(), name, sizeof name);
    if (strcmp(name, "lull-finalizer"))
        atomic_fetch_add(&misnamed, 1);
    atomic_store(&finalizer_tid, (int)syscall(SYS_gettid));
}

static void fin(void *obj, void *data)
{
    note_thread();
    fobj *f = obj;
    CHECK(data == &seen, "finalizer data is %p", data);
    CHECK(f->id < DROPPED + KEPT && f->check == mix64(f->id), "a finalized object is corrupt (id %llu)",
          (unsigned long long)f->id);
    CHECK(f->id < DROPPED, "reachable object %llu was finalized", (unsigned long long)f->id);
    list_verify(f->list, f->id * 3, 3, "the list a finalized object holds");
    CHECK(seen[f->id]++ == 0, "object %llu finalized twice", (unsigned long long)f->id);
    if (pthread_equal(pthread_self(), main_thread) != manual)
        atomic_fetch_add(&wrong_thread, 1);
    atomic_fetch_add(&finalized, 1);
}

static fobj *fobj_new(uint64_t id)
{
    fobj *f = lull_alloc(&fobj_type);
    CHECK(f, "lull_alloc");
    f->id = id;
    f->check = mix64(id);
    LULL_SET(f, list, list_build(id * 3, 3));
    CHECK(lull_register_finalizer(f, fin, &seen) == 0, "lull_register_finalizer");
    return f;
}

static uint64_t round_first;
static NOINLINE void make_round(void)
{
    for (uint32_t i = 0; i < DROPPED / 2; i++)
        (void)fobj_new(round_first + i);
}

static fobj *hold[DROPPED / 2];
static NOINLINE void make_held(void)
{
    for (uint32_t i = 0; i < DROPPED / 2; i++)
        hold[i] = fobj_new(round_first + i);
}

/* Wait for `want` finalizations: run them here (manual) or give the
 * thread time (auto). */
static void await(unsigned want, const char *what)
{
    if (manual)
        lull_run_finalizers();
    for (int i = 0; i < 10000 && atomic_load(&finalized) < want; i++)
        sleep_ms(1);
    CHECK(atomic_load(&finalized) == want, "%s: %u finalized, expected %u", what, atomic_load(&finalized), want);
}

static void rounds(void)
{
    CHECK(lull_root_add_refs(kept, KEPT) == 0, "root");
    for (uint32_t i = 0; i < KEPT; i++)
        kept[i] = fobj_new(DROPPED + i);
    lull_collect(LULL_GEN_MAJOR);          /* the kept ones are old now */

    /* Young: dropped before any collection saw them. */
    round_first = 0;
    run_in_fresh_thread(make_round);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    /* Queued objects are roots until their finalizer runs: collections in
     * between (with finalizers=manual, certainly before) move and keep them. */
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_MAJOR);
    if (manual)
        CHECK(atomic_load(&finalized) == 0, "finalizers=manual: %u ran outside lull_run_finalizers",
              atomic_load(&finalized));
    await(DROPPED / 2, "objects that died young");

    /* Old: promoted while referenced, then dropped. */
    round_first = DROPPED / 2;
    CHECK(lull_root_add_refs((void **)hold, DROPPED / 2) == 0, "root");
    run_in_fresh_thread(make_held);
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_NURSERY);
    memset(hold, 0, sizeof hold);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    CHECK(atomic_load(&finalized) == DROPPED / 2, "a minor finalized old objects");
    lull_collect(LULL_GEN_MAJOR);
    await(DROPPED, "objects that died old");
    lull_root_remove(hold);

    for (uint32_t i = 0; i < KEPT; i++)
        CHECK(((fobj *)kept[i])->check == mix64(DROPPED + i), "kept object %u corrupt", i);
    CHECK(!atomic_load(&wrong_thread), "%u finalizers ran on the wrong thread (finalizers=%s)",
          atomic_load(&wrong_thread), manual ? "manual" : "auto");
    CHECK(!atomic_load(&misnamed), "%u finalizers ran on a thread not named lull-finalizer",
          atomic_load(&misnamed));
    printf("%u dropped objects finalized once each (half young, half old), %u reachable ones not\n", DROPPED,
           KEPT);
}

/* ---- replace, remove, resurrect ---- */

static atomic_int first_calls, second_calls, resurrections;
static void *revived;
static void first(void *obj, void *data) { (void)obj; (void)data; atomic_fetch_add(&first_calls, 1); }
static void second(void *obj, void *data) { (void)obj; (void)data; atomic_fetch_add(&second_calls, 1); }
static void resurrect(void *obj, void *data)
{
    (void)data;
    CHECK(tnode_ok(obj, 99), "the object to resurrect is corrupt");
    revived = obj;
    atomic_fetch_add(&resurrections, 1);
}

static NOINLINE void make_misc(void)
{
    struct tnode *a = tnode_new(1), *b = tnode_new(2), *c = tnode_new(99);
    CHECK(lull_register_finalizer(a, first, NULL) == 0, "register");
    CHECK(lull_register_finalizer(a, second, NULL) == 0, "register again");
    CHECK(lull_register_finalizer(b, first, NULL) == 0, "register");
    CHECK(lull_register_finalizer(b, NULL, NULL) == 0, "remove");
    CHECK(lull_register_finalizer(c, resurrect, NULL) == 0, "register");
}

static void wait_calls(atomic_int *c, int want, int ms)
{
    if (manual)
        lull_run_finalizers();
    for (int i = 0; i < ms && atomic_load(c) < want; i++)
        sleep_ms(1);
}

static void misc(void)
{
    run_in_fresh_thread(make_misc);
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    wait_calls(&resurrections, 1, 10000);
    wait_calls(&second_calls, 1, 10000);
    CHECK(atomic_load(&second_calls) == 1 && atomic_load(&first_calls) == 0,
          "replaced/removed finalizers: first ran %d times, second %d (expected 0 and 1)", atomic_load(&first_calls),
          atomic_load(&second_calls));
    CHECK(atomic_load(&resurrections) == 1, "the resurrecting finalizer ran %d times", atomic_load(&resurrections));
    for (int i = 0; i < 3; i++) {
        clobber_stack();
        lull_collect(i == 1 ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
        CHECK(tnode_ok(revived, 99), "a resurrected object is corrupt after a collection");
    }
    revived = NULL;
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    wait_calls(&resurrections, 2, 300);   /* must not come: a short wait */
    CHECK(atomic_load(&resurrections) == 1, "a resurrected object was finalized again");
    printf("replace, remove and resurrect: ok\n");
}

/* ---- a cycle ---- */

typedef struct cyc { lull_header h; struct cyc *peer; uint64_t id, check; } cyc;
static const lull_type cyc_type = { .name = "finalizable-cycle", .size = sizeof(cyc), .refs = LULL_REF(cyc, peer) };
static atomic_int cycle_calls;
static atomic_uint cycle_bad;
static lull_handle cyc_weak[2], cyc_track[2];

static void cyc_fin(void *obj, void *data)
{
    (void)data;
    note_thread();
    cyc *c = obj;
    /* Both members and their fields are intact, whichever runs first. */
    if (c->id > 1 || c->check != mix64(c->id + 77) || !c->peer || c->peer->id != 1 - c->id ||
        c->peer->check != mix64(c->peer->id + 77) || c->peer->peer != c)
        atomic_fetch_add(&cycle_bad, 1);
    atomic_fetch_add(&cycle_calls, 1);
}

static NOINLINE void make_cycle(void)
{
    cyc *a = lull_alloc(&cyc_type), *b = lull_alloc(&cyc_type);
    CHECK(a && b, "alloc");
    a->id = 0, b->id = 1;
    a->check = mix64(77), b->check = mix64(78);
    LULL_SET(a, peer, b);
    LULL_SET(b, peer, a);
    cyc *m[2] = { a, b };
    for (int i = 0; i < 2; i++) {
        CHECK(lull_register_finalizer(m[i], cyc_fin, NULL) == 0, "register");
        cyc_weak[i] = lull_handle_new(m[i], LULL_HANDLE_WEAK);
        cyc_track[i] = lull_handle_new(m[i], LULL_HANDLE_WEAK_TRACK);
        CHECK(cyc_weak[i] && cyc_track[i], "lull_handle_new");
    }
}

static NOINLINE void collect_from_fresh(void) { lull_collect(LULL_GEN_MAJOR); }

static void cycle(void)
{
    run_in_fresh_thread(make_cycle);
    /* The collections run from fresh threads: no stale word of this one
     * keeps a member alive. */
    run_in_fresh_thread(collect_from_fresh);
    CHECK(!lull_handle_get(cyc_weak[0]) && !lull_handle_get(cyc_weak[1]),
          "a WEAK handle of the dropped cycle was not cleared by the collection that found it dead");
    wait_calls(&cycle_calls, 2, 10000);
    CHECK(atomic_load(&cycle_calls) == 2, "the cycle's finalizers ran %d times, expected 2", atomic_load(&cycle_calls));
    CHECK(!atomic_load(&cycle_bad), "a cycle member's finalizer found itself or its peer corrupt");
    for (int i = 0; i < 3 && (lull_handle_get(cyc_track[0]) || lull_handle_get(cyc_track[1])); i++)
        run_in_fresh_thread(collect_from_fresh);
    CHECK(!lull_handle_get(cyc_track[0]) && !lull_handle_get(cyc_track[1]),
          "the finalized cycle was not reclaimed (its WEAK_TRACK handles still read it)");
    CHECK(atomic_load(&cycle_calls) == 2, "a cycle member was finalized again");
    for (int i = 0; i < 2; i++) {
        lull_handle_free(cyc_weak[i]);
        lull_handle_free(cyc_track[i]);
    }
    printf("a dropped cycle: both finalized once, each seeing its peer intact, then reclaimed\n");
}

/* ---- the idle finalizer thread is never signalled ---- */

static unsigned long ctx_switches(int tid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s", path);
    unsigned long n = 0, v;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "voluntary_ctxt_switches: %lu", &v) == 1 ||
            sscanf(line, "nonvoluntary_ctxt_switches: %lu", &v) == 1)
            n += v;
    fclose(f);
    return n;
}

static void idle_thread_not_signalled(void)
{
    int tid = atomic_load(&finalizer_tid);
    CHECK(tid > 0, "no finalizer ran on the finalizer thread");
    /* Wait until it is back waiting for work: its switches stop moving
     * (unchanged over 20 ms), however long that takes on this machine (a
     * fixed 50 ms may not be enough beside other load or a sanitizer);
     * at most 10 s, after which the check below judges what it does. */
    unsigned long before = ctx_switches(tid);
    for (int quiet = 0, i = 0; quiet < 2 && i < 1000; i++) {
        sleep_ms(10);
        unsigned long now = ctx_switches(tid);
        quiet = now == before ? quiet + 1 : 0;
        before = now;
    }
    for (int i = 0; i < 20; i++)
        lull_collect(i % 4 == 3 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
    unsigned long after = ctx_switches(tid);
    CHECK(after == before, "the idle finalizer thread ran %lu times during 20 collections (signalled?)",
          after - before);
    printf("the idle finalizer thread was not woken by 20 collections\n");
}

/* Threads of this process named `name`. */
static int threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d, "opendir /proc/self/task");
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(comm, sizeof comm, f))
            comm[strcspn(comm, "\n")] = 0;
        fclose(f);
        n += !strcmp(comm, name);
    }
    closedir(d);
    return n;
}

static void errors(void)
{
    int local;
    struct tnode *n = tnode_new(3);
    CHECK(lull_register_finalizer(NULL, fin, NULL) == -EINVAL, "NULL object");
    CHECK(lull_register_finalizer(&local, fin, NULL) == -EINVAL, "a stack address");
    CHECK(lull_register_finalizer((char *)n + 16, fin, NULL) == -EINVAL, "an interior pointer");
    CHECK(lull_register_finalizer(n, NULL, NULL) == 0, "removing what was never registered");
}

/* ---- shutdown runs what is queued ---- */

static atomic_uint at_shutdown;
static void count_fin(void *obj, void *data)
{
    (void)data;
    CHECK(tnode_ok(obj, 4), "corrupt at shutdown");
    atomic_fetch_add(&at_shutdown, 1);
}

static NOINLINE void make_shutdown_batch(void)
{
    for (int i = 0; i < 1000; i++)
        CHECK(lull_register_finalizer(tnode_new(4), count_fin, NULL) == 0, "register");
}

static void shutdown_runs_queue(void)
{
    CHECK(lull_init("finalizers=auto") == 0, "lull_init");
    run_in_fresh_thread(make_shutdown_batch);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    lull_shutdown();
    CHECK(atomic_load(&at_shutdown) == 1000, "lull_shutdown returned with %u of 1000 queued finalizers run",
          atomic_load(&at_shutdown));
    CHECK(threads_named("lull-finalizer") == 0, "a lull-finalizer thread is left after lull_shutdown");
    printf("lull_shutdown ran the 1000 queued finalizers and joined the finalizer thread\n");
}

/* finalizers=manual: lull_shutdown drops what is queued; it never runs. */
static void shutdown_drops_queue(void)
{
    CHECK(lull_init("finalizers=manual") == 0, "lull_init");
    run_in_fresh_thread(make_shutdown_batch);
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    lull_stats st = get_stats();
    CHECK(st.finalizers_queued >= 1000, "%llu finalizers queued", (unsigned long long)st.finalizers_queued);
    lull_shutdown();
    CHECK(lull_init("finalizers=manual") == 0, "lull_init");
    lull_collect(LULL_GEN_MAJOR);
    lull_run_finalizers();
    lull_shutdown();
    CHECK(atomic_load(&at_shutdown) == 0, "finalizers=manual: %u finalizers dropped at lull_shutdown ran",
          atomic_load(&at_shutdown));
    printf("finalizers=manual: lull_shutdown dropped the 1000 queued finalizers\n");
}

int main(int argc, char **argv)
{
    const char *params = argc > 1 ? argv[1] : "finalizers=auto";
    manual = strstr(params, "finalizers=manual") != NULL;
    main_thread = pthread_self();
    int dummy;
    CHECK(lull_register_finalizer(&dummy, fin, NULL) == -EPERM, "before lull_init");
    want_poison();
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add_refs(&revived, 1) == 0, "root");
    errors();
    rounds();
    misc();
    cycle();
    if (!manual)
        idle_thread_not_signalled();
    lull_stats s = get_stats();
    CHECK(s.finalizers_queued == s.finalizers_run && s.finalizers_run >= DROPPED + 2,
          "stats: %llu queued, %llu run", (unsigned long long)s.finalizers_queued,
          (unsigned long long)s.finalizers_run);
    lull_shutdown();
    if (!manual) {
        CHECK(threads_named("lull-finalizer") == 0, "a lull-finalizer thread is left after lull_shutdown");
        shutdown_runs_queue();
    } else {
        shutdown_drops_queue();
    }
    printf("finalizers: ok (%s)\n", params);
    return 0;
}
