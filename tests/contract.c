/*
 * contract — the contract calls of lull.h (issue 37):
 *
 *  - version: LULL_VERSION_* and lull_version() agree, and the shared
 *    library's soname follows the 0.x promise (liblull.so.0.MINOR; the
 *    build passes the soname CMake gave it as LULL_TEST_SONAME);
 *  - ABI: lull_get_stats through an older, smaller struct (the first 12
 *    fields: the struct of the first published API) writes exactly those
 *    bytes, with guard bytes after it intact, and the values match the
 *    full struct's; a struct larger than the library's gets zeros past
 *    it; the function symbol fills LULL_STATS_SIZE_0_1 bytes;
 *  - lull_get_params: the options in force, run-time changes included,
 *    a string lull_init accepts and that reads back the same; snprintf's
 *    return convention on short buffers;
 *  - environment=no / debug-only: LULL_GC_PARAMS (and LULL_GC_DEBUG) from
 *    the environment ignored, with one warning; environment= refused in
 *    LULL_GC_PARAMS itself;
 *  - the message handler: warnings go to it, not to stderr (unless it
 *    returns nonzero); a misuse report goes to it and lull then aborts,
 *    or the handler ends the process its own way (here: _exit(42)); a
 *    handler replaced while another thread reports gets its own data.
 */
#include "check.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

/* ---- version ---- */

static void version(void)
{
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", LULL_VERSION_MAJOR, LULL_VERSION_MINOR, LULL_VERSION_PATCH);
    CHECK(!strcmp(lull_version(), want), "lull_version() %s, header %s", lull_version(), want);
    CHECK(!strcmp(LULL_VERSION_STRING, want), "LULL_VERSION_STRING %s", LULL_VERSION_STRING);
#ifdef LULL_TEST_SONAME
    char soname[64];
    if (LULL_VERSION_MAJOR == 0)
        snprintf(soname, sizeof soname, "liblull.so.0.%d", LULL_VERSION_MINOR);
    else
        snprintf(soname, sizeof soname, "liblull.so.%d", LULL_VERSION_MAJOR);
    CHECK(!strcmp(LULL_TEST_SONAME, soname), "soname %s, the promise says %s", LULL_TEST_SONAME, soname);
#endif
}

/* ---- sized statistics ---- */

/* lull_stats as the first published API fixed it: a program built against that header. */
struct old_stats {
    uint64_t collections_minor, collections_major, collections_major_sync, pauses;
    uint64_t pause_total_ns, pause_max_ns, pause_p50_ns, pause_p95_ns, pause_p99_ns;
    uint64_t bytes_allocated, heap_bytes, live_bytes_after_major;
};

#define GUARD 0xa5

static void stats_abi(void)
{
    CHECK(lull_init("mark-workers=1") == 0, "lull_init failed");
    struct tnode *volatile l = list_build(1, 50000);
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 1, 50000, "list");

    struct { struct old_stats s; unsigned char guard[512]; } old;
    memset(&old, GUARD, sizeof old);
    size_t n = lull_get_stats_sized((lull_stats *)&old.s, sizeof old.s);
    CHECK(n == sizeof old.s, "filled %zu bytes of an old struct of %zu", n, sizeof old.s);
    for (size_t i = 0; i < sizeof old.guard; i++)
        CHECK(old.guard[i] == GUARD, "guard byte %zu after the old struct was written (0x%02x)", i, old.guard[i]);
    lull_stats full;
    lull_get_stats(&full);
    CHECK(old.s.collections_minor == full.collections_minor && old.s.collections_major == full.collections_major &&
          old.s.pauses == full.pauses && old.s.live_bytes_after_major == full.live_bytes_after_major,
          "the old struct's fields differ from the full struct's");
    CHECK(old.s.collections_major >= 1 && old.s.pauses >= 2 && old.s.bytes_allocated > 0,
          "the old struct was not filled (majors %" PRIu64 ", pauses %" PRIu64 ")", old.s.collections_major,
          old.s.pauses);

    /* A newer, larger struct: the library's fields, then zeros. */
    struct { lull_stats s; uint64_t newer[8]; unsigned char guard[64]; } big;
    memset(&big, GUARD, sizeof big);
    n = lull_get_stats_sized(&big.s, sizeof big.s + sizeof big.newer);
    CHECK(n == sizeof(lull_stats), "filled %zu of a larger struct, library's is %zu", n, sizeof(lull_stats));
    for (int i = 0; i < 8; i++)
        CHECK(big.newer[i] == 0, "field %d past the library's struct is not 0", i);
    for (size_t i = 0; i < sizeof big.guard; i++)
        CHECK(big.guard[i] == GUARD, "guard byte %zu after the larger struct was written", i);

    /* The real function: the 0.1 struct, nothing after it. */
    unsigned char raw[sizeof(lull_stats) + 64];
    memset(raw, GUARD, sizeof raw);
    void (*fn)(lull_stats *) = lull_get_stats;
    fn((lull_stats *)raw);
    for (size_t i = LULL_STATS_SIZE_0_1; i < sizeof raw; i++)
        CHECK(raw[i] == GUARD, "the function lull_get_stats wrote byte %zu, past LULL_STATS_SIZE_0_1 (%zu)", i,
              (size_t)LULL_STATS_SIZE_0_1);
    uint64_t minors;
    memcpy(&minors, raw, sizeof minors);
    CHECK(minors == full.collections_minor, "the function lull_get_stats did not fill collections_minor");
    lull_shutdown();
}

/* ---- options in force ---- */

static void params(void)
{
    char buf[2048], again[2048];
    CHECK(lull_get_params(buf, sizeof buf) == -EPERM, "lull_get_params before lull_init");
    unsetenv("LULL_GC_PARAMS");
    CHECK(lull_init("nursery-size=8m,mark-workers=2,major=concurrent,pause-target=3ms,promotion-age=auto") == 0,
          "lull_init failed");
    int n = lull_get_params(buf, sizeof buf);
    CHECK(n > 0 && (size_t)n == strlen(buf), "lull_get_params returned %d for '%s'", n, buf);
    printf("in force: %s\n", buf);
    const char *want[] = { "nursery-size=8m", "max-heap-size=0", "heap-growth=100", "memory-limit=0",
                           "major=concurrent", "mark-workers=2", "concurrent-sweep=yes", "card-filter=yes",
                           "allow-synchronous-major=yes", "pause-target=3ms", "promotion-age=auto",
                           "finalizers=auto", "evacuation-threshold=66", "environment=yes" };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK(strstr(buf, want[i]), "'%s' not in '%s'", want[i], buf);

    /* Run-time changes are what is in force. */
    CHECK(lull_set_pause_target(2500000) == 0, "lull_set_pause_target");
    CHECK(lull_set_heap_growth(50) == 0, "lull_set_heap_growth");
    CHECK(lull_set_memory_limit(64u << 20) == 0, "lull_set_memory_limit");
    CHECK(lull_set_allow_synchronous_major(false), "lull_set_allow_synchronous_major");
    n = lull_get_params(buf, sizeof buf);
    const char *now[] = { "pause-target=2500us", "heap-growth=50", "memory-limit=64m", "allow-synchronous-major=no" };
    for (size_t i = 0; i < sizeof now / sizeof now[0]; i++)
        CHECK(strstr(buf, now[i]), "'%s' not in '%s' after the setters", now[i], buf);

    /* snprintf's convention: the length it needs, truncated and terminated. */
    char small[10];
    memset(small, 'x', sizeof small);
    CHECK(lull_get_params(small, sizeof small) == n, "short buffer: not the full length");
    CHECK(small[9] == 0 && !strncmp(small, buf, 9), "short buffer: '%.10s'", small);
    CHECK(lull_get_params(NULL, 0) == n, "NULL, 0: not the full length");
    lull_shutdown();

    /* The string is accepted by lull_init and reads back the same. */
    CHECK(lull_init(buf) == 0, "lull_init('%s') failed", buf);
    CHECK(lull_get_params(again, sizeof again) == n && !strcmp(buf, again), "read back '%s', not '%s'", again, buf);
    lull_shutdown();
}

/* ---- refusing the environment ---- */

static char captured[4096];
static int captured_kinds;
static int capture(int kind, const char *function, const char *message, void *data)
{
    size_t len = strlen(captured);
    snprintf(captured + len, sizeof captured - len, "%d %s: %s\n", kind, function, message);
    captured_kinds |= kind;
    return data != NULL;   /* data non-NULL: also on stderr */
}

static void environment(void)
{
    char buf[2048];
    setenv("LULL_GC_PARAMS", "nursery-size=1m,no-such-key=1", 1);
    setenv("LULL_GC_DEBUG", "no-such-debug-key", 1);
    CHECK(lull_init(NULL) == -EINVAL, "the stray variables were not applied (the test's premise)");

    lull_set_message_handler(capture, NULL);
    captured[0] = 0;
    CHECK(lull_init("environment=no,nursery-size=2m") == 0, "environment=no did not ignore the variables");
    CHECK(lull_get_params(buf, sizeof buf) > 0 && strstr(buf, "nursery-size=2m") && strstr(buf, "environment=no"),
          "in force: %s", buf);
    CHECK(strstr(captured, "LULL_GC_PARAMS ignored") && strstr(captured, "LULL_GC_DEBUG ignored"),
          "no warning for the ignored variables: '%s'", captured);
    lull_shutdown();

    /* debug-only: LULL_GC_PARAMS ignored, LULL_GC_DEBUG applied. */
    CHECK(lull_init("environment=debug-only") == -EINVAL, "debug-only did not apply LULL_GC_DEBUG");
    setenv("LULL_GC_DEBUG", "verify", 1);
    CHECK(lull_init("environment=debug-only") == 0, "debug-only did not ignore LULL_GC_PARAMS");
    CHECK(lull_get_params(buf, sizeof buf) > 0 && strstr(buf, "nursery-size=4m"), "in force: %s", buf);
    lull_shutdown();

    /* Only lull_init's params may say it. */
    setenv("LULL_GC_PARAMS", "environment=no", 1);
    captured[0] = 0;
    CHECK(lull_init(NULL) == -EINVAL, "environment= accepted from LULL_GC_PARAMS");
    CHECK(strstr(captured, "only lull_init's params may refuse the environment"), "message: '%s'", captured);
    CHECK(lull_init("environment=maybe") == -EINVAL, "environment=maybe accepted");
    unsetenv("LULL_GC_PARAMS");
    unsetenv("LULL_GC_DEBUG");
    lull_set_message_handler(NULL, NULL);
}

/* ---- the message handler ---- */

/* Run `fn` in a child with stderr in a pipe; its exit status and stderr. */
static int in_child(void (*fn)(void), char *err, size_t size)
{
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        fn();
        _exit(0);
    }
    close(p[1]);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < size && (r = read(p[0], err + len, size - 1 - len)) > 0)
        len += (size_t)r;
    err[len] = 0;
    close(p[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    return st;
}

static void warn_taken(void)
{
    lull_set_message_handler(capture, NULL);
    captured[0] = 0;
    CHECK(lull_init("bogus-option=1") == -EINVAL, "bogus option accepted");
    CHECK(strstr(captured, "1 lull_init: lull_init params: unknown option 'bogus-option'"), "captured '%s'",
          captured);
}

static void warn_passed_on(void)
{
    lull_set_message_handler(capture, (void *)1);
    CHECK(lull_init("bogus-option=1") == -EINVAL, "bogus option accepted");
}

/* Writes what it got to stderr in its own format; returns 0 (taken). */
static int say(int kind, const char *function, const char *message, void *data)
{
    (void)data;
    dprintf(2, "handler: %d %s: %s\n", kind, function, message);
    return 0;
}

static void misuse_aborts(void)
{
    lull_set_message_handler(say, NULL);
    (void)lull_alloc_pinned(NULL);   /* before lull_init: misuse */
}

static int exit_42(int kind, const char *function, const char *message, void *data)
{
    say(kind, function, message, data);
    _exit(42);
}

static void warn_restored(void)
{
    lull_set_message_handler(capture, NULL);
    lull_set_message_handler(NULL, NULL);
    CHECK(lull_init("bogus-option=1") == -EINVAL, "bogus option accepted");
}

static void misuse_handler_exits(void)
{
    lull_set_message_handler(exit_42, NULL);
    (void)lull_alloc_pinned(NULL);
}

static void messages(void)
{
    char err[4096];
    int st = in_child(warn_taken, err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "warn_taken: status %d", st);
    CHECK(err[0] == 0, "a warning taken by the handler reached stderr: '%s'", err);

    st = in_child(warn_passed_on, err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "warn_passed_on: status %d", st);
    CHECK(!strcmp(err, "lull: lull_init: lull_init params: unknown option 'bogus-option'\n"),
          "a handler returning 1: stderr '%s'", err);

    st = in_child(misuse_aborts, err, sizeof err);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "misuse with a handler that returns: status %d", st);
    CHECK(!strcmp(err, "handler: 2 lull_alloc_pinned: lull is not initialised (call lull_init first)\n"),
          "misuse with a handler that returns: stderr '%s'", err);

    st = in_child(misuse_handler_exits, err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42, "misuse with a handler that exits: status %d", st);
    CHECK(!strcmp(err, "handler: 2 lull_alloc_pinned: lull is not initialised (call lull_init first)\n"),
          "the handler saw '%s'", err);

    /* NULL restores stderr. */
    st = in_child(warn_restored, err, sizeof err);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "warn_restored: status %d", st);
    CHECK(!strcmp(err, "lull: lull_init: lull_init params: unknown option 'bogus-option'\n"),
          "after the handler was removed: stderr '%s'", err);
}

/* A handler changed while another thread reports: each report reaches a
 * handler with that handler's own data (lull.h), never a mix. */
static int data_a, data_b;
static atomic_int mixed, reports;
static int handler_a(int kind, const char *function, const char *message, void *data)
{
    (void)kind, (void)function, (void)message;
    if (data != &data_a)
        atomic_fetch_add(&mixed, 1);
    atomic_fetch_add(&reports, 1);
    return 0;
}
static int handler_b(int kind, const char *function, const char *message, void *data)
{
    (void)kind, (void)function, (void)message;
    if (data != &data_b)
        atomic_fetch_add(&mixed, 1);
    atomic_fetch_add(&reports, 1);
    return 0;
}
static atomic_bool reporting;
static void *switcher(void *arg)
{
    (void)arg;
    for (unsigned i = 0; atomic_load(&reporting); i++)
        lull_set_message_handler(i & 1 ? handler_a : handler_b, i & 1 ? &data_a : &data_b);
    return NULL;
}

static void handler_race(void)
{
    pthread_t t;
    atomic_store(&reporting, true);
    lull_set_message_handler(handler_a, &data_a);
    CHECK(pthread_create(&t, NULL, switcher, NULL) == 0, "pthread_create");
    for (int i = 0; i < 3000; i++)
        CHECK(lull_init("bogus-option=1") == -EINVAL, "bogus option accepted");
    atomic_store(&reporting, false);
    pthread_join(t, NULL);
    lull_set_message_handler(NULL, NULL);
    CHECK(atomic_load(&reports) == 3000, "%d reports of 3000 reached a handler", atomic_load(&reports));
    CHECK(atomic_load(&mixed) == 0, "%d reports reached a handler with another handler's data",
          atomic_load(&mixed));
}

int main(void)
{
    version();
    stats_abi();
    params();
    environment();
    messages();
    handler_race();
    printf("contract: ok\n");
    return 0;
}
