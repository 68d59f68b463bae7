/*
 * misuse — misuse that would corrupt the heap is reported with one stderr
 * line naming the function, then abort(): never silent corruption, never
 * a crash of another kind. Each case runs in a forked child (which calls
 * lull_init itself where needed); the parent checks that the child died of
 * SIGABRT and that its stderr is one line containing the function's name.
 *
 *  - lull_alloc / lull_alloc_array before lull_init;
 *  - lull_alloc / lull_alloc_array from a thread that is not attached;
 *  - lull_store into a slot outside the heap (stack, malloc'd memory);
 *  - an invalid lull_type (refs bit 0 set: word 0 is the header).
 */
#include "check.h"
#include <stdatomic.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

static const lull_type bad_refs0_type = {
    .name = "bad-refs0", .size = sizeof(struct tnode), .refs = 1 | LULL_REF(struct tnode, next),
};
static const lull_type bad_refs0_array = {
    .name = "bad-refs0-array", .size = sizeof(struct refs), .refs = 1,
    .elem_size = sizeof(void *), .elem_refs = 1,
};

/* ---- the cases, each run in a child ---- */

static void alloc_before_init(void)   { (void)lull_alloc(&tnode_type); }
static void array_before_init(void)   { (void)lull_alloc_array(&refs_type, 4); }

static void *unattached_alloc(void *arg) { (void)arg; (void)lull_alloc(&tnode_type); return NULL; }
static void *unattached_array(void *arg) { (void)arg; (void)lull_alloc_array(&bytes_type, 100); return NULL; }

static void run_in_thread(void *(*fn)(void *))
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fn, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
}
static void alloc_unattached(void) { run_in_thread(unattached_alloc); }
static void array_unattached(void) { run_in_thread(unattached_array); }

static void *volatile outside_stack_slot;
static void store_outside_stack(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    struct tnode *n = tnode_new(1);
    void *local[2] = { 0, 0 };
    lull_store(n, &local[0], n);
    outside_stack_slot = local[0];
}

static void store_outside_malloc(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    struct tnode *n = tnode_new(1);
    void **m = malloc(64);
    CHECK(m != NULL, "malloc failed");
    lull_store(n, &m[1], n);
    outside_stack_slot = m[1];
}

static void invalid_type(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    (void)lull_alloc(&bad_refs0_type);
}

static void invalid_array_type(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    (void)lull_alloc_array(&bad_refs0_array, 3);
}

static void pinned_before_init(void)  { (void)lull_alloc_pinned(&tnode_type); }
static void *unattached_pinned(void *arg) { (void)arg; (void)lull_alloc_pinned(&tnode_type); return NULL; }
static void pinned_unattached(void)   { run_in_thread(unattached_pinned); }

static void alloc_null_type(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    (void)lull_alloc(NULL);
}

static void alloc_after_shutdown(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    lull_shutdown();
    (void)lull_alloc(&tnode_type);
}

static void store_before_init(void)
{
    static void *slots[2];
    lull_store(slots, &slots[1], NULL);
}

static void store_after_shutdown(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    struct tnode *n = tnode_new(1);
    lull_shutdown();
    lull_store(n, &n->next, NULL);
}

static void type_of_before_init(void)
{
    static lull_header h;
    (void)lull_type_of(&h);
}

static void type_of_non_heap(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    static lull_header h;
    (void)lull_type_of(&h);
}

static void length_of_non_array(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    (void)lull_array_length(tnode_new(1));
}

static void length_of_malloc(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    lull_array_header *h = calloc(1, sizeof *h);
    CHECK(h != NULL, "calloc failed");
    (void)lull_array_length(h);
}

static void collect_before_init(void) { lull_collect(LULL_GEN_MAJOR); }
static void pause_hook_before_init(void) { lull_set_pause_hook(NULL, NULL); }

static void collect_bad_generation(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    lull_collect(7);
}

static void *attach_and_park(void *arg)
{
    CHECK(lull_thread_attach() == 0, "attach failed");
    atomic_store((atomic_int *)arg, 1);
    for (;;)
        pause();
    return NULL;
}

static void shutdown_with_attached_thread(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed in child");
    static atomic_int ready;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, attach_and_park, &ready) == 0, "pthread_create failed");
    while (!atomic_load(&ready))
        sleep_ms(1);
    lull_shutdown();
}

static void stats_null(void) { lull_get_stats(NULL); }

/* Bad input that is reported with an error code, not an abort. */
static void error_codes(void)
{
    static void *refs[4];
    static char range[64];
    CHECK(lull_root_add(range, sizeof range) == -EPERM, "lull_root_add before lull_init");
    CHECK(lull_root_add_refs(refs, 4) == -EPERM, "lull_root_add_refs before lull_init");
    lull_root_remove(range);                        /* no-op */
    CHECK(lull_thread_attach() == -EPERM, "lull_thread_attach before lull_init");
    lull_thread_detach();                           /* no-op */
    lull_shutdown();                                /* no-op */
    CHECK(!lull_set_allow_synchronous_major(false), "set_allow_synchronous_major before lull_init");

    CHECK(lull_init(NULL) == 0, "lull_init failed");
    CHECK(lull_root_add(NULL, 8) == -EINVAL, "lull_root_add(NULL)");
    CHECK(lull_root_add(range, 0) == -EINVAL, "lull_root_add size 0");
    CHECK(lull_root_add((void *)(UINTPTR_MAX - 8), 64) == -EINVAL, "lull_root_add wrapping range");
    CHECK(lull_root_add_refs((void **)(range + 1), 2) == -EINVAL, "lull_root_add_refs misaligned");
    CHECK(lull_root_add_refs(refs, SIZE_MAX / 4) == -EINVAL, "lull_root_add_refs overflowing count");
    CHECK(lull_root_add(range, sizeof range) == 0, "lull_root_add");
    CHECK(lull_root_add(range, 8) == -EEXIST, "lull_root_add twice");
    lull_root_remove(range);
    lull_root_remove(range);                        /* removing again: no-op */
    lull_root_remove(refs);                         /* never added: no-op */
    CHECK(lull_root_add(range, sizeof range) == 0, "lull_root_add after remove");
    CHECK(lull_thread_attach() == 0, "attaching twice returns 0");
    errno = 0;
    CHECK(lull_alloc_array(&refs_type, SIZE_MAX) == NULL && errno == ENOMEM, "SIZE_MAX array");
    lull_shutdown();

    CHECK(lull_root_add(range, sizeof range) == -EPERM, "lull_root_add after lull_shutdown");
    CHECK(lull_thread_attach() == -EPERM, "lull_thread_attach after lull_shutdown");
    lull_shutdown();                                /* twice: no-op */
    lull_stats st;
    lull_get_stats(&st);
    CHECK(st.collections_major == 0 && st.heap_bytes == 0, "stats after lull_shutdown are not zero");
    printf("misuse: error codes: ok\n");
}

/* ---- harness ---- */

static int cases_run;

static void expect_abort(const char *what, void (*fn)(void), const char *func)
{
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe failed");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork failed: %s", strerror(errno));
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        close(fds[1]);
        alarm(30);                 /* a hang shows up as SIGALRM */
        fn();
        _exit(0);                  /* survived the misuse: that is the failure */
    }
    close(fds[1]);
    static char buf[16384];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fds[0], buf + len, sizeof buf - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
        if (len == sizeof buf - 1)
            break;
    }
    buf[len] = 0;
    close(fds[0]);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");

    CHECK(!WIFEXITED(status), "%s: the child returned normally (exit status %d) instead of "
          "aborting; stderr: \"%s\"", what, WEXITSTATUS(status), buf);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
          "%s: the child died of signal %d (%s), expected SIGABRT; stderr: \"%s\"", what,
          WTERMSIG(status), strsignal(WTERMSIG(status)), buf);
    CHECK(strstr(buf, func) != NULL, "%s: stderr does not name %s: \"%s\"", what, func, buf);
    int lines = 0;
    for (const char *s = buf; *s; s++)
        lines += (*s == '\n');
    CHECK(lines == 1, "%s: expected one line on stderr, got %d: \"%s\"", what, lines, buf);
    printf("misuse: %-45s aborted: %s", what, buf);
    cases_run++;
}

int main(void)
{
    expect_abort("lull_alloc before lull_init", alloc_before_init, "lull_alloc");
    expect_abort("lull_alloc_array before lull_init", array_before_init, "lull_alloc");
    expect_abort("lull_alloc from an unattached thread", alloc_unattached, "lull_alloc");
    expect_abort("lull_alloc_array from an unattached thread", array_unattached, "lull_alloc");
    expect_abort("lull_store into a stack slot", store_outside_stack, "lull_store");
    expect_abort("lull_store into a malloc'd slot", store_outside_malloc, "lull_store");
    expect_abort("lull_alloc with refs bit 0 set", invalid_type, "lull_alloc");
    expect_abort("lull_alloc_array with refs bit 0 set", invalid_array_type, "lull_alloc");
    expect_abort("lull_alloc_pinned before lull_init", pinned_before_init, "lull_alloc_pinned");
    expect_abort("lull_alloc_pinned from an unattached thread", pinned_unattached, "lull_alloc_pinned");
    expect_abort("lull_alloc(NULL)", alloc_null_type, "lull_alloc");
    expect_abort("lull_alloc after lull_shutdown", alloc_after_shutdown, "lull_alloc");
    expect_abort("lull_store before lull_init", store_before_init, "lull_store");
    expect_abort("lull_store after lull_shutdown", store_after_shutdown, "lull_store");
    expect_abort("lull_type_of before lull_init", type_of_before_init, "lull_type_of");
    expect_abort("lull_type_of on a non-heap pointer", type_of_non_heap, "lull_type_of");
    expect_abort("lull_array_length on a non-array", length_of_non_array, "lull_array_length");
    expect_abort("lull_array_length on malloc'd memory", length_of_malloc, "lull_array_length");
    expect_abort("lull_collect before lull_init", collect_before_init, "lull_collect");
    expect_abort("lull_set_pause_hook before lull_init", pause_hook_before_init, "lull_set_pause_hook");
    expect_abort("lull_collect(7)", collect_bad_generation, "lull_collect");
    expect_abort("lull_shutdown with a thread attached", shutdown_with_attached_thread, "lull_shutdown");
    expect_abort("lull_get_stats(NULL)", stats_null, "lull_get_stats");
    error_codes();

    /* The parent never initialised lull: a normal run still works. */
    CHECK(lull_init(NULL) == 0, "lull_init in the parent failed");
    struct tnode *volatile l = list_build(1, 100);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 1, 100, "parent's list");
    lull_shutdown();
    printf("misuse: ok: %d cases\n", cases_run);
    return 0;
}
