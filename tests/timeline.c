/*
 * timeline — trace-file=PATH writes a Chrome trace-event JSON file:
 *
 *  - while two threads allocate (minors, concurrent majors, forced majors)
 *    with two mark workers, the file is written; after lull_shutdown it is
 *    valid JSON (checked by a strict parser here) of the trace-event form;
 *  - every pause the pause hook saw (as many as lull_stats counts) is in it
 *    exactly once, as a complete event with the same start and duration
 *    (to the nanosecond: timestamps are microseconds with three decimals),
 *    and the same collection number and kind;
 *  - what the last cycle's lazy sweep left is swept before a mark's pause,
 *    never inside it (with concurrent-sweep=no, ctest timeline_sweep, there
 *    is such a sweep to see);
 *  - the workers' work is on their own tracks: on the thread named
 *    lull-mark/1, its share of the pauses' parallel work, with concurrent
 *    majors its concurrent mark runs and preclean passes, and unless
 *    concurrent-sweep=no its background sweep runs; none of these on the
 *    track of the thread that collects; with concurrent majors both kinds
 *    of a concurrent major's pauses are there;
 *  - lull_init after lull_shutdown traces again, into a complete file;
 *  - a child forked while tracing collects and exits: the parent's file is
 *    not touched by it;
 *  - a program that calls exit() without lull_shutdown still leaves a
 *    complete file (the atexit handler);
 *  - a path that cannot be opened makes lull_init fail (-ENOENT) with one
 *    line, and lull_init works afterwards.
 *
 * Runs with concurrent majors (ctest timeline) and stw majors
 * (timeline_stw, LULL_GC_PARAMS=major=stw).
 */
#include "check.h"

#include <ctype.h>
#include <stdatomic.h>
#include <sys/wait.h>

/* The forked child restarts lull's workers: ThreadSanitizer must allow
 * threads after a fork (as stress_fork and the workers test do). */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TIMELINE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(TIMELINE_TSAN)
const char *__tsan_default_options(void);
const char *__tsan_default_options(void)
{
    return "die_after_fork=0";
}
#endif

#define MAX_PAUSES 100000

static struct pause_rec {
    uint64_t start, dur, collection;
    int generation, phase;
} pauses[MAX_PAUSES];
static atomic_uint npauses;

static void on_pause(const lull_pause_event *e, void *data)
{
    (void)data;
    unsigned i = atomic_fetch_add(&npauses, 1);
    if (i < MAX_PAUSES)
        pauses[i] = (struct pause_rec){ e->start_ns, e->duration_ns, e->collection, e->generation, e->phase };
}

/* ---- a strict JSON parser (RFC 8259), enough to say valid or not ---- */

static const char *js;
static bool json_value(void);
static void ws(void)
{
    while (*js == ' ' || *js == '\n' || *js == '\r' || *js == '\t')
        js++;
}
static bool json_string(void)
{
    if (*js++ != '"')
        return false;
    while (*js != '"') {
        if ((unsigned char)*js < 0x20)
            return false;
        if (*js == '\\') {
            js++;
            if (*js == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)js[i]))
                        return false;
                js += 4;
            } else if (!strchr("\"\\/bfnrt", *js) || !*js) {
                return false;
            }
        }
        js++;
    }
    js++;
    return true;
}
static bool json_number(void)
{
    if (*js == '-')
        js++;
    if (*js == '0')
        js++;
    else if (*js >= '1' && *js <= '9')
        while (isdigit((unsigned char)*js))
            js++;
    else
        return false;
    if (*js == '.') {
        js++;
        if (!isdigit((unsigned char)*js))
            return false;
        while (isdigit((unsigned char)*js))
            js++;
    }
    if (*js == 'e' || *js == 'E') {
        js++;
        if (*js == '+' || *js == '-')
            js++;
        if (!isdigit((unsigned char)*js))
            return false;
        while (isdigit((unsigned char)*js))
            js++;
    }
    return true;
}
static bool json_list(char close, bool object)
{
    js++;
    ws();
    if (*js == close) {
        js++;
        return true;
    }
    for (;;) {
        ws();
        if (object) {
            if (!json_string())
                return false;
            ws();
            if (*js++ != ':')
                return false;
        }
        if (!json_value())
            return false;
        ws();
        if (*js == close) {
            js++;
            return true;
        }
        if (*js++ != ',')
            return false;
    }
}
static bool json_value(void)
{
    ws();
    switch (*js) {
    case '{': return json_list('}', true);
    case '[': return json_list(']', false);
    case '"': return json_string();
    case 't': return !strncmp(js, "true", 4) ? (js += 4, true) : false;
    case 'f': return !strncmp(js, "false", 5) ? (js += 5, true) : false;
    case 'n': return !strncmp(js, "null", 4) ? (js += 4, true) : false;
    default: return json_number();
    }
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f, "trace file %s was not written", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    CHECK(buf && fread(buf, 1, (size_t)n, f) == (size_t)n, "reading %s failed", path);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static char *valid_trace(const char *path)
{
    char *text = read_file(path);
    js = text;
    bool ok = json_value();
    ws();
    CHECK(ok && *js == 0, "%s is not valid JSON (at byte %ld: \"%.40s\")", path, (long)(js - text), js);
    CHECK(!strncmp(text, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 38), "%s does not start as a trace", path);
    return text;
}

/* ---- reading our own events (one per line) ---- */

static uint64_t field_us(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    CHECK(p, "event without %s: %.120s", key, line);
    unsigned long long us, frac;
    CHECK(sscanf(p + strlen(key), "%llu.%3llu", &us, &frac) == 2, "%s is not us.nnn: %.120s", key, line);
    return us * 1000 + frac;
}

static uint64_t field_u64(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    CHECK(p, "event without %s: %.120s", key, line);
    return strtoull(p + strlen(key), NULL, 10);
}

struct seen_pause {
    uint64_t ts, dur, collection;
    int phase, generation;
    bool matched;
};

static void check_pauses(char *text, unsigned want)
{
    static struct seen_pause ev[MAX_PAUSES];
    unsigned n = 0;
    unsigned worker_tid = 0, worker_events = 0, concurrent_marks = 0, precleans = 0, bg_sweeps = 0, nsweeps = 0;
    unsigned elsewhere = 0, initial_pauses = 0, final_pauses = 0;
    static uint64_t sweeps[MAX_PAUSES][2];
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "\"name\":\"thread_name\"") && strstr(line, "\"lull-mark/1\""))
            worker_tid = (unsigned)field_u64(line, "\"tid\":");
        if (!strstr(line, "\"ph\":\"X\""))
            continue;
        bool background = strstr(line, "\"cat\":\"background\"") != NULL;
        if (worker_tid && field_u64(line, "\"tid\":") == worker_tid) {
            worker_events++;
            concurrent_marks += strstr(line, "\"name\":\"concurrent mark\"") != NULL;
            precleans += strstr(line, "\"name\":\"preclean\"") != NULL;
            bg_sweeps += strstr(line, "\"name\":\"background sweep\"") != NULL;
        } else if (background || strstr(line, "\"cat\":\"worker\"")) {
            elsewhere++;     /* worker 0 is lull-mark/1, the only one with background jobs */
        }
        initial_pauses += strstr(line, "\"name\":\"major: initial pause\"") != NULL;
        final_pauses += strstr(line, "\"name\":\"major: final pause\"") != NULL;
        if (strstr(line, "\"name\":\"finish the last sweep\"") && nsweeps < MAX_PAUSES) {
            sweeps[nsweeps][0] = field_us(line, "\"ts\":");
            sweeps[nsweeps][1] = sweeps[nsweeps][0] + field_us(line, "\"dur\":");
            nsweeps++;
        }
        if (!strstr(line, "\"cat\":\"pause\""))
            continue;
        CHECK(n < MAX_PAUSES, "too many pause events");
        struct seen_pause *p = &ev[n++];
        p->ts = field_us(line, "\"ts\":");
        p->dur = field_us(line, "\"dur\":");
        p->collection = field_u64(line, "\"collection\":");
        p->phase = strstr(line, "initial pause") ? LULL_PHASE_INITIAL : strstr(line, "final pause") ? LULL_PHASE_FINAL
                                                                                                  : LULL_PHASE_WHOLE;
        p->generation = strstr(line, "\"name\":\"minor collection\"") ? LULL_GEN_NURSERY : LULL_GEN_MAJOR;
    }
    CHECK(n == want, "the trace has %u pause events, the pause hook saw %u pauses", n, want);
    for (unsigned i = 0; i < want; i++) {
        const struct pause_rec *r = &pauses[i];
        bool found = false;
        for (unsigned j = 0; j < n && !found; j++) {
            struct seen_pause *p = &ev[j];
            if (p->matched || p->ts != r->start)
                continue;
            CHECK(p->dur == r->dur, "pause at %" PRIu64 " ns: %" PRIu64 " ns in the trace, %" PRIu64 " ns for the hook",
                  r->start, p->dur, r->dur);
            CHECK(p->collection == r->collection && p->phase == r->phase && p->generation == r->generation,
                  "pause at %" PRIu64 " ns: collection %" PRIu64 " phase %d generation %d in the trace, %" PRIu64
                  " %d %d for the hook", r->start, p->collection, p->phase, p->generation, r->collection, r->phase,
                  r->generation);
            p->matched = found = true;
        }
        CHECK(found, "pause %u (collection %" PRIu64 ", start %" PRIu64 " ns) is not in the trace", i, r->collection,
              r->start);
    }
    /* The sweep a mark needs runs before its pause, with the world running
     * (collect.c, sweep_before_mark): never inside one. */
    unsigned inside = 0;
    for (unsigned k = 0; k < nsweeps; k++)
        for (unsigned j = 0; j < n; j++)
            if (sweeps[k][0] >= ev[j].ts && sweeps[k][1] <= ev[j].ts + ev[j].dur)
                inside++;
    CHECK(!inside, "%u of %u 'finish the last sweep' phases ran inside a pause", inside, nsweeps);
    const char *env = getenv("LULL_GC_PARAMS");
    if (env && strstr(env, "concurrent-sweep=no"))
        CHECK(nsweeps, "concurrent-sweep=no: no sweep before a mark in the trace");
    CHECK(worker_tid && worker_events, "no events on a lull-mark/1 track (tid %u, %u events)", worker_tid,
          worker_events);
    const char *params = getenv("LULL_GC_PARAMS");
    bool stw = params && strstr(params, "major=stw");
    if (!stw) {
        CHECK(concurrent_marks && precleans, "%u concurrent mark runs and %u preclean passes on the lull-mark/1 "
              "track", concurrent_marks, precleans);
        CHECK(initial_pauses && final_pauses, "%u initial and %u final pauses in the trace", initial_pauses,
              final_pauses);
    }
    if (!(params && strstr(params, "concurrent-sweep=no")))
        CHECK(bg_sweeps, "no background sweep on the lull-mark/1 track");
    CHECK(!elsewhere, "%u worker or background events on a track other than lull-mark/1 (the only worker)",
          elsewhere);
    printf("timeline: %u pauses in the trace, each matching the pause hook to the ns (%u initial, %u final); %u "
           "events on lull-mark/1 (%u concurrent mark runs, %u preclean passes, %u background sweeps); %u sweeps "
           "before a mark, none inside a pause\n", n, initial_pauses, final_pauses, worker_events, concurrent_marks,
           precleans, bg_sweeps, nsweeps);
}

/* ---- the workload ---- */

static atomic_bool stop_alloc;
static void *allocator(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    struct tnode *volatile keep = NULL;
    for (unsigned i = 0; !atomic_load(&stop_alloc); i++) {
        struct tnode *n = tnode_new(i);
        if (i % 16 == 0) {
            LULL_SET(n, next, keep);
            keep = n;
        }
        if (i % 50000 == 0)
            keep = NULL;          /* old garbage: majors have work */
    }
    lull_thread_detach();
    return NULL;
}

static void child_collects(void)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        lull_collect(LULL_GEN_MAJOR);
        exit(0);                  /* atexit handlers run: the parent's file must not be touched */
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the forked child failed");
}

static void exit_without_shutdown(const char *path)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        char params[600];
        snprintf(params, sizeof params, "trace-file=%s", path);
        if (lull_init(params) != 0)
            _exit(3);
        for (int i = 0; i < 200000; i++)
            (void)tnode_new(i);
        lull_collect(LULL_GEN_MAJOR);
        exit(0);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child that exits failed");
    char *text = valid_trace(path);
    CHECK(strstr(text, "\"cat\":\"pause\""), "the exit-path trace has no pause");
    free(text);
    printf("timeline: exit() without lull_shutdown leaves a complete file\n");
}

int main(void)
{
    char path[256], exit_path[300];
    snprintf(path, sizeof path, "%s/lull-timeline-%d.json", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    snprintf(exit_path, sizeof exit_path, "%s.exit.json", path);

    /* A path that cannot be opened: lull_init fails, cleanly. */
    fflush(stderr);
    CHECK(lull_init("trace-file=/nonexistent-lull-dir/trace.json") == -ENOENT,
          "lull_init with an unwritable trace-file did not fail with -ENOENT");
    CHECK(lull_init(NULL) == 0, "lull_init after a failed lull_init");
    lull_shutdown();

    char params[600];
    snprintf(params, sizeof params, "trace-file=%s,mark-workers=2", path);
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    lull_set_pause_hook(on_pause, NULL);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, allocator, NULL) == 0, "pthread_create");
    for (int i = 0; i < 6; i++) {
        sleep_ms(60);
        lull_collect(i % 2 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
        if (i == 3)
            child_collects();
    }
    atomic_store(&stop_alloc, true);
    lull_thread_detach();
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CHECK(lull_thread_attach() == 0, "attach");
    lull_stats st;
    lull_get_stats(&st);
    lull_set_pause_hook(NULL, NULL);
    unsigned seen = atomic_load(&npauses);
    CHECK(seen == st.pauses && seen < MAX_PAUSES, "the hook saw %u pauses, lull_stats counts %" PRIu64, seen,
          st.pauses);
    CHECK(st.collections_major > 0 && st.collections_minor > 0, "no major or no minor ran");
    lull_shutdown();

    char *text = valid_trace(path);
    check_pauses(text, seen);
    free(text);
    unlink(path);

    /* Tracing again after lull_shutdown (the writer and its buffers are
     * set up anew): a second complete file. */
    CHECK(lull_init(params) == 0, "lull_init(%s) a second time", params);
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_MAJOR);
    lull_shutdown();
    text = valid_trace(path);
    CHECK(strstr(text, "\"cat\":\"pause\""), "the second trace has no pause");
    free(text);
    unlink(path);
    printf("timeline: a second lull_init traces again\n");

    exit_without_shutdown(exit_path);
    unlink(exit_path);
    printf("timeline: ok\n");
    return 0;
}
