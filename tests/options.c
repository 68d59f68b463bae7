/*
 * options — every option changes something this test observes (bad_input
 * checks that each one parses; this checks that it does what doc/options.md says):
 *
 *  - nursery-size: a minor runs each time the nursery is full, so a fixed
 *    volume of garbage costs about volume / nursery-size minors (256k, 1m,
 *    4m, and 16m with max-heap-size=32m, which halves it to 4m);
 *  - max-heap-size: an array over the limit, and filling the heap, give
 *    NULL with ENOMEM; the same array without the limit is allocated;
 *  - suspend-signal / restart-signal: lull's handlers sit on the chosen
 *    signals while it is initialised and the program's own handlers on
 *    the defaults (SIGPWR, SIGXCPU) stay, never called, while pauses stop
 *    another attached thread; lull_shutdown gives the signals back;
 *  - mark-workers: its effect (N-1 lull-mark threads, parallel marking)
 *    is observed by tests/workers.c;
 *  - major: concurrent majors take two pauses each (the log names the
 *    initial one), are not synchronous and honour the switch; with stw one
 *    pause each, all synchronous, the switch refused;
 *  - allow-synchronous-major (and the switch): marks stretched by
 *    mark-delay under heavy allocation are finished with the world
 *    stopped when allowed, never when not;
 *  - concurrent-sweep, finalizers: doc/options.md says they take effect with
 *    background sweep and finalizers; until then they change nothing,
 *    which is checked (with major=stw) so that the test fails (and must be
 *    extended) when one starts to matter;
 *  - LULL_GC_DEBUG=log: one line per collection, kind and reason;
 *    collect-every=N: exactly one collection per N allocations, every
 *    fourth a major; mark-stack-limit=N: the major's log line reports the
 *    overflow, and nothing is lost; fail-mmap=1: heap growth fails with
 *    ENOMEM while the nursery still allocates.
 */
#include "check.h"

#include <signal.h>
#include <stdatomic.h>

#define MB ((size_t)1 << 20)

static void init_or_die(const char *params)
{
    int rc = lull_init(params);
    CHECK(rc == 0, "lull_init(\"%s\") returned %d", params ? params : "NULL", rc);
}

/* ---------------------------------------------------------------------- */
/* nursery-size                                                            */
/* ---------------------------------------------------------------------- */

#define GARBAGE (64 * MB)

static NOINLINE void make_garbage(size_t bytes)
{
    for (size_t done = 0; done < bytes; done += sizeof(struct tnode))
        CHECK(lull_alloc(&tnode_type) != NULL, "lull_alloc failed");
}

/* Minors caused by allocating GARBAGE bytes of short-lived nodes. The
 * pause target is set as far as it goes, so that the nursery keeps the
 * size asked for (a sanitizer's slow minors on a loaded machine made
 * the adaptive nursery shrink). */
static uint64_t minors_for_garbage(const char *params)
{
    char with_target[256];
    snprintf(with_target, sizeof with_target, "%s,pause-target=10s", params);
    init_or_die(with_target);
    lull_stats a = get_stats();
    make_garbage(GARBAGE);
    lull_stats b = get_stats();
    lull_shutdown();
    return b.collections_minor - a.collections_minor;
}

static void check_minors(const char *params, size_t nursery)
{
    uint64_t n = minors_for_garbage(params);
    uint64_t expect = GARBAGE / nursery;
    /* The last nursery's worth needs no minor, TLAB tails cost a little;
     * a nursery half or twice the size asked would be far outside. */
    CHECK(n + 1 + expect / 8 >= expect && n <= expect + expect / 8,
          "%s: %zu MiB of garbage caused %" PRIu64 " minors, expected about %" PRIu64
          " (one per %zu KiB nursery)", params, GARBAGE / MB, n, expect, nursery >> 10);
    printf("options: %-38s %4" PRIu64 " minors for %zu MiB (expected ~%" PRIu64 ")\n", params, n,
           GARBAGE / MB, expect);
}

static void test_nursery_size(void)
{
    check_minors("nursery-size=256k", 256 << 10);
    check_minors("nursery-size=1m", 1 * MB);
    check_minors("nursery-size=4m", 4 * MB);
    /* doc/options.md: halved until at most an eighth of max-heap-size. */
    check_minors("nursery-size=16m,max-heap-size=32m", 4 * MB);
    check_minors("nursery-size=16m", 16 * MB);
}

/* ---------------------------------------------------------------------- */
/* max-heap-size                                                           */
/* ---------------------------------------------------------------------- */

static NOINLINE size_t fill_until_enomem(void)
{
    static void *keep[256];
    CHECK(lull_root_add(keep, sizeof keep) == 0, "lull_root_add failed");
    size_t n = 0;
    for (; n < 256; n++) {
        errno = 0;
        keep[n] = lull_alloc_array(&bytes_type, MB);
        if (!keep[n]) {
            CHECK(errno == ENOMEM, "allocation failed with errno %d, expected ENOMEM", errno);
            break;
        }
    }
    memset(keep, 0, sizeof keep);
    lull_root_remove(keep);
    return n;
}

static void test_max_heap_size(void)
{
    init_or_die("max-heap-size=16m");
    errno = 0;
    void *p = lull_alloc_array(&bytes_type, 20 * MB);
    CHECK(p == NULL && errno == ENOMEM, "max-heap-size=16m: a 20 MiB array gave %p (errno %d)", p, errno);
    size_t n = fill_until_enomem();
    CHECK(n >= 4 && n <= 16, "max-heap-size=16m: %zu one-MiB arrays fit before ENOMEM", n);
    lull_shutdown();

    init_or_die(NULL);
    struct bytes *volatile b = lull_alloc_array(&bytes_type, 20 * MB);
    CHECK(b != NULL, "without max-heap-size a 20 MiB array failed: %s", strerror(errno));
    n = fill_until_enomem();
    CHECK(n == 256, "without max-heap-size only %zu one-MiB arrays fit", n);
    b = NULL;
    lull_shutdown();
    printf("options: max-heap-size=16m: ENOMEM as promised\n");
}

/* ---------------------------------------------------------------------- */
/* suspend-signal, restart-signal                                          */
/* ---------------------------------------------------------------------- */

static volatile sig_atomic_t app_hits[65];
static void app_handler(int sig)
{
    app_hits[sig]++;
}

static void install_app_handler(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = app_handler;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(sig, &sa, NULL) == 0, "sigaction(%d) failed", sig);
}

static bool handler_is_app(int sig)
{
    struct sigaction cur;
    CHECK(sigaction(sig, NULL, &cur) == 0, "sigaction(%d) query failed", sig);
    return !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == app_handler;
}

static atomic_int other_stop, other_ready;

static void *other_thread(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach failed");
    atomic_store(&other_ready, 1);
    while (!atomic_load(&other_stop)) {
        struct tnode *volatile n = tnode_new(9);
        (void)n;
        sleep_ms(1);
    }
    lull_thread_detach();
    return NULL;
}

/* Collections stop another attached thread; return how many ran. */
static uint64_t collect_with_other_thread(void)
{
    atomic_store(&other_stop, 0);
    atomic_store(&other_ready, 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0, "pthread_create failed");
    while (!atomic_load(&other_ready))
        sleep_ms(1);
    lull_stats a = get_stats();
    for (int i = 0; i < 10; i++)
        lull_collect(i % 2 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
    lull_stats b = get_stats();
    atomic_store(&other_stop, 1);
    pthread_join(t, NULL);
    return b.pauses - a.pauses;
}

static void check_signals(const char *params, int suspend, int restart)
{
    static const int all[] = { SIGPWR, SIGXCPU, SIGUSR1, SIGUSR2 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        install_app_handler(all[i]);
        app_hits[all[i]] = 0;
    }
    init_or_die(params);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int s = all[i];
        bool lulls = s == suspend || s == restart;
        CHECK(handler_is_app(s) == !lulls, "%s: signal %d (%s) %s", params ? params : "defaults", s,
              strsignal(s), lulls ? "still has the program's handler, not lull's"
                                  : "lost the program's handler to lull");
    }
    uint64_t pauses = collect_with_other_thread();
    CHECK(pauses >= 10, "%s: 10 collections with a second thread made %" PRIu64 " pauses",
          params ? params : "defaults", pauses);
    lull_shutdown();
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int s = all[i];
        CHECK(handler_is_app(s), "%s: after lull_shutdown signal %d (%s) did not get the program's "
              "handler back", params ? params : "defaults", s, strsignal(s));
        CHECK(app_hits[s] == 0, "%s: the program's handler of signal %d (%s) ran %d times: lull "
              "signalled it", params ? params : "defaults", s, strsignal(s), (int)app_hits[s]);
        signal(s, SIG_DFL);
    }
    printf("options: %-38s handlers on %d and %d, the program's elsewhere\n",
           params ? params : "defaults", suspend, restart);
}

static void test_signals(void)
{
    check_signals(NULL, SIGPWR, SIGXCPU);
    check_signals("suspend-signal=10,restart-signal=12", SIGUSR1, SIGUSR2);
    check_signals("suspend-signal=12", SIGUSR2, SIGXCPU);
    check_signals("restart-signal=10", SIGPWR, SIGUSR1);
}

/* ---------------------------------------------------------------------- */
/* Options that take effect with later issues                              */
/* ---------------------------------------------------------------------- */

static void check_not_yet(const char *params)
{
    init_or_die(params);
    struct tnode *volatile l = list_build(1, 5000);
    lull_stats a = get_stats();
    for (int i = 0; i < 3; i++)
        lull_collect(LULL_GEN_MAJOR);
    bool honoured = lull_set_allow_synchronous_major(false);
    lull_collect(LULL_GEN_MAJOR);
    bool honoured2 = lull_set_allow_synchronous_major(true);
    lull_stats b = get_stats();
    list_verify(l, 1, 5000, params);
    lull_shutdown();
    CHECK(!honoured && !honoured2, "%s: lull_set_allow_synchronous_major returned true: concurrent "
          "majors exist now, so this option has an effect to test", params);
    CHECK(b.collections_major - a.collections_major == 4 &&
          b.collections_major_sync - a.collections_major_sync == 4,
          "%s: 4 majors, %" PRIu64 " counted as synchronous: majors are no longer all synchronous, "
          "so this option has an effect to test", params,
          b.collections_major_sync - a.collections_major_sync);
}

static void test_not_yet(void)
{
    /* major=stw: every major synchronous whatever these say. */
    static const char *const params[] = {
        "major=stw,concurrent-sweep=no", "major=stw,concurrent-sweep=yes",
        "major=stw,finalizers=manual", "major=stw,finalizers=auto",
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        check_not_yet(params[i]);
    printf("options: concurrent-sweep, finalizers: no effect yet, as doc/options.md says\n");
}

/* major: concurrent majors are two pauses with the mark between them (the
 * log says "major start"), honour the switch, and are not counted as
 * synchronous; major=stw majors are one pause each, all synchronous. */
static void check_major(const char *params, bool concurrent)
{
    CHECK(setenv("LULL_GC_DEBUG", "log", 1) == 0, "setenv");
    init_or_die(params);
    unsetenv("LULL_GC_DEBUG");
    struct tnode *volatile l = list_build(1, 20000);
    lull_stats a = get_stats();
    capture_begin();
    for (int i = 0; i < 3; i++)
        lull_collect(LULL_GEN_MAJOR);
    const char *buf = capture_end();
    bool honoured = lull_set_allow_synchronous_major(true);
    lull_stats b = get_stats();
    list_verify(l, 1, 20000, params);
    lull_shutdown();
    unsigned starts = 0;
    for (const char *q = buf; (q = strstr(q, "(major start, explicit)")); q++)
        starts++;
    uint64_t majors = b.collections_major - a.collections_major, sync = b.collections_major_sync - a.collections_major_sync;
    uint64_t pauses = b.pauses_major - a.pauses_major;
    CHECK(majors == 3, "%s: 3 forced majors counted as %" PRIu64, params, majors);
    CHECK(honoured == concurrent, "%s: lull_set_allow_synchronous_major returned %d", params, honoured);
    if (concurrent)
        CHECK(sync == 0 && pauses == 6 && starts == 3, "%s: 3 concurrent majors: %" PRIu64 " synchronous, %" PRIu64
              " major pauses, %u initial pauses logged", params, sync, pauses, starts);
    else
        CHECK(sync == 3 && pauses == 3 && starts == 0, "%s: 3 stop-the-world majors: %" PRIu64 " synchronous, %"
              PRIu64 " major pauses, %u initial pauses logged", params, sync, pauses, starts);
}

/* allow-synchronous-major and lull_set_allow_synchronous_major: marks
 * that cannot keep up (mark-delay: 20 ms every 64 objects) while 64 KiB
 * objects, all kept (a dead one is freed by the next minor, and is no
 * allocation into the major heap), take the program far past its
 * allowance, waiting in pacing for at most a ms each. Allowed, the
 * collector finishes such a mark with the world stopped once the program
 * is an allowance (and four nurseries) past it (counted in
 * collections_major_sync); not allowed, never (the heap grows instead). */
static void *blobs[1024];
static uint64_t sync_majors_under_pressure(const char *params, bool switch_off)
{
    CHECK(setenv("LULL_GC_DEBUG", "mark-delay=20000", 1) == 0, "setenv");
    init_or_die(params);
    unsetenv("LULL_GC_DEBUG");
    if (switch_off)
        CHECK(lull_set_allow_synchronous_major(false), "%s: the switch was not honoured", params);
    struct tnode *volatile l = list_build(1, 60000);
    /* Promoted: the mark has the list to trace (a concurrent major's pauses
     * run no minor, and a list left in the nursery is a root of the final
     * pause instead, lib/mark.h). */
    lull_collect(LULL_GEN_NURSERY);
    static const lull_type blob = { .name = "blob64k", .size = 65536 };
    CHECK(lull_root_add_refs(blobs, 1024) == 0, "%s: lull_root_add_refs", params);
    for (int i = 0; i < 1024; i++)
        CHECK((blobs[i] = lull_alloc(&blob)), "%s: alloc", params);
    lull_stats st = get_stats();
    list_verify(l, 1, 60000, params);
    lull_shutdown();
    memset(blobs, 0, sizeof blobs);
    /* Started: a refused mark may still run when the loop ends. */
    CHECK(st.pauses_major > 0, "%s: 64 MiB of 64 KiB objects started no major", params);
    return st.collections_major_sync;
}

static void test_major(void)
{
    check_major("major=concurrent", true);
    check_major("major=stw", false);
    uint64_t allowed = sync_majors_under_pressure("allow-synchronous-major=yes", false);
    uint64_t refused = sync_majors_under_pressure("allow-synchronous-major=no", false);
    uint64_t switched = sync_majors_under_pressure("allow-synchronous-major=yes", true);
    CHECK(allowed > 0, "allow-synchronous-major=yes: stretched marks were never finished synchronously");
    CHECK(refused == 0 && switched == 0, "synchronous majors not allowed, yet %" PRIu64 " (option) and %" PRIu64
          " (switch) ran", refused, switched);
    printf("options: major=concurrent and =stw observed; with stretched marks %" PRIu64 " synchronous majors "
           "when allowed, none when the option or the switch refuses them\n", allowed);
}


/* ---------------------------------------------------------------------- */
/* LULL_GC_DEBUG options with an effect outside debug_checks               */
/* ---------------------------------------------------------------------- */


static void test_log(void)
{
    setenv("LULL_GC_DEBUG", "log", 1);
    init_or_die(NULL);
    unsetenv("LULL_GC_DEBUG");
    capture_begin();
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_MAJOR);
    const char *out = capture_end();
    lull_shutdown();
    /* An explicit major begins with a minor (collect.c); a concurrent
     * major logs its initial pause and, with the whole major's figures,
     * its final pause. */
    const char *want[] = { "lull: collection 1 (minor, explicit): pause ",
                           "lull: collection 2 (minor, explicit): pause ",
                           "lull: collection 3 (major start, explicit): pause ",
                           "lull: collection 3 (major, explicit): pause " };
    const char *line = out;
    for (int i = 0; i < 4; i++) {
        CHECK(line && !strncmp(line, want[i], strlen(want[i])),
              "LULL_GC_DEBUG=log: line %d should begin \"%s\": got \"%s\"", i + 1, want[i], out);
        line = strchr(line, '\n');
        CHECK(line, "LULL_GC_DEBUG=log: line %d unterminated: \"%s\"", i + 1, out);
        line++;
    }
    CHECK(!*line, "LULL_GC_DEBUG=log: more than four lines: \"%s\"", out);
    const char *last = strstr(out, want[3]);
    CHECK(strstr(last, ", live ") && strstr(last, " MiB, heap ") && strstr(last, "concurrent mark done"),
          "LULL_GC_DEBUG=log: the major's line has no live and heap size, or no word of its mark: \"%s\"", out);
    CHECK(strstr(last, "; pacer: goal ") && strstr(last, "(growth 100%, limit none)") && strstr(last, " paced waits "),
          "LULL_GC_DEBUG=log: the major's line does not give the pacer's state: \"%s\"", out);
    printf("options: LULL_GC_DEBUG=log: one line per collection\n");
}

/* The minor's log line counts the dirty cards it scanned and, of those,
 * the ones that still held a young reference: old objects of 128 bytes
 * or more (so each one's reference is on a card of its own) are given a
 * young object each, then some of them lose it again before the minor. */
#define HOLDERS 40
#define HOLDERS_CLEARED 15
struct holder {
    lull_header h;
    void *ref;
    char pad[128 - sizeof(lull_header) - sizeof(void *)];
};
static const lull_type holder_type = {
    .name = "card-holder",
    .size = sizeof(struct holder),
    .refs = LULL_REF(struct holder, ref),
};
static struct holder *holders[HOLDERS];

/* In a thread of its own (run_in_fresh_thread), so that no word on a
 * stack pins a holder in the nursery: they are precise roots only. */
static void alloc_holders(void)
{
    for (int i = 0; i < HOLDERS; i++)
        CHECK((holders[i] = lull_alloc(&holder_type)) != NULL, "lull_alloc failed");
}

static void test_log_cards(void)
{
    setenv("LULL_GC_DEBUG", "log", 1);
    init_or_die(NULL);
    unsetenv("LULL_GC_DEBUG");
    CHECK(lull_root_add_refs((void **)holders, HOLDERS) == 0, "lull_root_add_refs failed");
    run_in_fresh_thread(alloc_holders);
    clobber_stack();
    /* Where each one was, disguised: a word on the stack would pin it. */
    uintptr_t before[HOLDERS];
    for (int i = 0; i < HOLDERS; i++)
        before[i] = ~(uintptr_t)holders[i];
    capture_begin();
    lull_collect(LULL_GEN_NURSERY);
    /* The holders the minor moved are old now. One a stale word still
     * pinned stays in the nursery (clang's build left one so), and its
     * card is none a minor scans: it is left out of the count. */
    int old = 0, young = 0;
    for (int i = 0; i < HOLDERS; i++) {
        bool moved = ~(uintptr_t)holders[i] != before[i];
        lull_store(holders[i], &holders[i]->ref, lull_alloc(&tnode_type));
        if (i < HOLDERS_CLEARED)
            lull_store(holders[i], &holders[i]->ref, NULL);
        old += moved;
        young += moved && i >= HOLDERS_CLEARED;
    }
    lull_collect(LULL_GEN_NURSERY);
    const char *out = capture_end();
    for (int i = HOLDERS_CLEARED; i < HOLDERS; i++)
        CHECK(holders[i]->ref && lull_type_of(holders[i]->ref) == &tnode_type,
              "holder %d lost its young object", i);
    lull_shutdown();
    CHECK(old >= HOLDERS - 4 && young >= HOLDERS - HOLDERS_CLEARED - 4,
          "only %d of %d holders left the nursery (%d of them kept a young object): the test says nothing", old,
          HOLDERS, young);
    char want[96];
    snprintf(want, sizeof want, ", %d dirty cards (%d holding young references), ", old, young);
    const char *second = strstr(out, "lull: collection 2 (minor, explicit)");
    CHECK(second && strstr(second, want), "LULL_GC_DEBUG=log: the second minor's line should say \"%s\": \"%s\"",
          want, out);
    printf("options: LULL_GC_DEBUG=log: %d dirty cards, %d of them holding young references (%d holders "
           "pinned)\n", old, young, HOLDERS - old);
}

#define EVERY 50
#define ALLOCS (EVERY * 100)

static NOINLINE void allocate_n(size_t n)
{
    for (size_t i = 0; i < n; i++)
        CHECK(lull_alloc(&tnode_type) != NULL, "lull_alloc failed");
}

/* collect-every=N: a pause every N allocations, every fourth a major
 * one; with major=concurrent those alternate between a concurrent major's
 * initial and final pause (so each mark spans up to three minors), with
 * major=stw each is a whole synchronous major. */
static void check_collect_every(const char *params, bool concurrent)
{
    char debug[64];
    snprintf(debug, sizeof debug, "collect-every=%d", EVERY);
    setenv("LULL_GC_DEBUG", debug, 1);
    init_or_die(params);
    unsetenv("LULL_GC_DEBUG");
    lull_stats a = get_stats();
    allocate_n(ALLOCS);     /* 320 KiB: the nursery never fills by itself */
    lull_stats b = get_stats();
    lull_shutdown();
    uint64_t minors = b.collections_minor - a.collections_minor;
    uint64_t majors = b.collections_major - a.collections_major;
    uint64_t major_pauses = b.pauses_major - a.pauses_major;
    int ticks = ALLOCS / EVERY, major_ticks = ticks / 4;
    uint64_t want_majors = concurrent ? (uint64_t)major_ticks / 2 : (uint64_t)major_ticks;
    /* Concurrent: the policy also ends a mark once its background work is
     * done (a final pause of its own; a later tick meant to end it then
     * runs a minor), so the counts are at least, not exactly, the ticks'. */
    bool ok = concurrent ? minors + major_pauses >= (uint64_t)ticks && major_pauses >= (uint64_t)major_ticks &&
                           majors >= want_majors && minors >= (uint64_t)(ticks - major_ticks)
                         : minors == (uint64_t)(ticks - major_ticks) && majors == want_majors &&
                           major_pauses == (uint64_t)major_ticks;
    CHECK(ok,
          "LULL_GC_DEBUG=%s (%s): %d allocations caused %" PRIu64 " minors, %" PRIu64 " majors in %" PRIu64
          " major pauses; expected %d minors, %" PRIu64 " majors in %d pauses", debug, params, ALLOCS, minors,
          majors, major_pauses, ticks - major_ticks, want_majors, major_ticks);
    printf("options: LULL_GC_DEBUG=%s (%s): %" PRIu64 " minors, %" PRIu64 " majors for %d allocations\n",
           debug, params, minors, majors, ALLOCS);
}

static void test_collect_every(void)
{
    check_collect_every("major=concurrent", true);
    check_collect_every("major=stw", false);
}

/* A wide graph: one array of 4096 references to nodes of a list each. */
static NOINLINE struct refs *build_wide(void)
{
    struct refs *r = lull_alloc_array(&refs_type, 4096);
    CHECK(r != NULL, "alloc failed");
    for (size_t i = 0; i < 4096; i++)
        lull_store(r, &r->item[i], list_build(i << 8, 3));
    return r;
}

static NOINLINE void verify_wide(struct refs *r)
{
    for (size_t i = 0; i < 4096; i++)
        list_verify(r->item[i], i << 8, 3, "wide graph");
}

static bool major_overflowed(const char *debug)
{
    setenv("LULL_GC_DEBUG", debug, 1);
    init_or_die(NULL);
    unsetenv("LULL_GC_DEBUG");
    struct refs *volatile r = build_wide();
    capture_begin();
    lull_collect(LULL_GEN_MAJOR);       /* promotes the graph, then marks it */
    lull_collect(LULL_GEN_MAJOR);
    const char *out = capture_end();
    verify_wide(r);
    lull_shutdown();
    CHECK(strstr(out, "(major, explicit)"), "%s: no major in the log: \"%s\"", debug, out);
    return strstr(out, " (mark stack overflowed)\n") != NULL;
}

static void test_mark_stack_limit(void)
{
    CHECK(major_overflowed("log,mark-stack-limit=16"),
          "LULL_GC_DEBUG=mark-stack-limit=16: the major over 16384 objects did not overflow the grey stack");
    CHECK(!major_overflowed("log"), "without mark-stack-limit the grey stack overflowed");
    printf("options: LULL_GC_DEBUG=mark-stack-limit=16: the grey stack overflows, nothing lost\n");
}

static void test_fail_mmap(void)
{
    setenv("LULL_GC_DEBUG", "fail-mmap=1", 1);
    init_or_die(NULL);
    unsetenv("LULL_GC_DEBUG");
    errno = 0;
    void *big = lull_alloc_array(&bytes_type, MB);
    int e1 = errno;
    errno = 0;
    void *pinned = lull_alloc_pinned(&tnode_type);
    int e2 = errno;
    struct tnode *volatile l = list_build(1, 1000);    /* the nursery was committed at lull_init */
    lull_collect(LULL_GEN_NURSERY);
    list_verify(l, 1, 1000, "fail-mmap=1: list in the nursery");
    lull_shutdown();
    CHECK(big == NULL && e1 == ENOMEM, "fail-mmap=1: a 1 MiB array gave %p (errno %d), expected ENOMEM",
          big, e1);
    CHECK(pinned == NULL && e2 == ENOMEM, "fail-mmap=1: lull_alloc_pinned gave %p (errno %d), expected ENOMEM",
          pinned, e2);

    init_or_die(NULL);
    big = lull_alloc_array(&bytes_type, MB);
    pinned = lull_alloc_pinned(&tnode_type);
    CHECK(big != NULL && pinned != NULL, "without fail-mmap the same allocations failed");
    big = pinned = NULL;
    lull_shutdown();
    printf("options: LULL_GC_DEBUG=fail-mmap=1: heap growth fails with ENOMEM\n");
}

int main(void)
{
    /* This test sets the options itself. */
    unsetenv("LULL_GC_PARAMS");
    unsetenv("LULL_GC_DEBUG");
    test_nursery_size();
    test_max_heap_size();
    test_signals();
    test_not_yet();
    test_major();
    test_log();
    test_log_cards();
    test_collect_every();
    test_mark_stack_limit();
    test_fail_mmap();
    printf("options: ok\n");
    return 0;
}
