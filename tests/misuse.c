/*
 * misuse — misuse that would corrupt the heap is reported with one stderr
 * line naming the function, then abort(): never silent corruption, never
 * a crash of another kind. Each case runs in a forked child (which calls
 * lull_init itself where needed); the parent checks that the child died of
 * SIGABRT and that its stderr is exactly the one line lull prints:
 * "lull: FUNCTION: message", FUNCTION the very function called (so
 * lull_alloc_array's message must not say lull_alloc), the message
 * compared in full (%p in the expected text stands for any pointer).
 *
 *  - every allocation function before lull_init, after lull_shutdown and
 *    from a thread that is not attached;
 *  - NULL and malformed types (refs bit 0, a refs bit beyond size, an
 *    elem_refs bit beyond elem_size, an array without elements) for
 *    lull_alloc, lull_alloc_array and lull_alloc_pinned;
 *  - lull_store into a slot outside the heap (stack, malloc'd memory),
 *    before lull_init and after lull_shutdown;
 *  - lull_type_of and lull_array_length on NULL, non-heap memory, a
 *    non-array, before lull_init and after lull_shutdown;
 *  - lull_collect with an unknown generation (7, -1), before lull_init
 *    and after lull_shutdown; lull_set_allow_synchronous_major before
 *    lull_init;
 *    lull_set_pause_hook before lull_init and
 *    after lull_shutdown; lull_get_stats(NULL); lull_shutdown with another
 *    thread attached;
 *  - handles: a freed handle read, set and freed again, 0 and a made-up
 *    value, an unknown kind, an interior pointer and malloc'd memory as a
 *    target, lull_handle_new before lull_init and from an unattached
 *    thread; lull_run_finalizers before lull_init and unattached.
 *
 * Bad input that is reported with an error code (roots, attach, init,
 * every call returning int before lull_init: -EPERM,
 * finalizer registration, allocation sizes, the calls after lull_shutdown that are no misuse) is
 * checked in error_codes(), with a list built before it that must come out
 * intact.
 */
#include "check.h"

#include <ctype.h>
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
static void allow_sync_before_init(void) { (void)lull_set_allow_synchronous_major(false); }

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

static void stats_null(void) { lull_get_stats((lull_stats *)NULL); }

/* More malformed types. */
static const lull_type refs_beyond_size = {          /* 3 words, bit 3 set */
    .name = "refs-beyond-size", .size = 3 * sizeof(void *), .refs = (uint64_t)1 << 3,
};
static const lull_type array_refs_beyond_size = {    /* 2-word fixed part, bit 2 set */
    .name = "array-refs-beyond-size", .size = sizeof(struct refs), .refs = (uint64_t)1 << 2,
    .elem_size = sizeof(void *), .elem_refs = 1,
};
static const lull_type elem_refs_beyond = {          /* 1-word elements, bit 1 set */
    .name = "elem-refs-beyond", .size = sizeof(struct refs), .elem_size = sizeof(void *),
    .elem_refs = 2,
};
static const lull_type elem_refs_odd_size = {        /* references in 12-byte elements */
    .name = "elem-refs-odd-size", .size = sizeof(struct refs), .elem_size = 12, .elem_refs = 1,
};
static const lull_type too_small = { .name = "too-small", .size = 4 };

static void init_child(void) { CHECK(lull_init(NULL) == 0, "lull_init failed in child"); }

static void array_null_type(void)   { init_child(); (void)lull_alloc_array(NULL, 3); }
static void pinned_null_type(void)  { init_child(); (void)lull_alloc_pinned(NULL); }
static void pinned_refs0(void)      { init_child(); (void)lull_alloc_pinned(&bad_refs0_type); }
static void alloc_refs_beyond(void) { init_child(); (void)lull_alloc(&refs_beyond_size); }
static void pinned_refs_beyond(void) { init_child(); (void)lull_alloc_pinned(&refs_beyond_size); }
static void alloc_too_small(void)   { init_child(); (void)lull_alloc(&too_small); }
static void array_refs_beyond(void) { init_child(); (void)lull_alloc_array(&array_refs_beyond_size, 4); }
static void array_elem_refs_beyond(void) { init_child(); (void)lull_alloc_array(&elem_refs_beyond, 4); }
static void array_elem_refs_odd(void) { init_child(); (void)lull_alloc_array(&elem_refs_odd_size, 4); }
static void array_of_non_array(void) { init_child(); (void)lull_alloc_array(&tnode_type, 4); }
static void alloc_of_bad_array(void) { init_child(); (void)lull_alloc(&elem_refs_beyond); }

static void array_after_shutdown(void)
{
    init_child();
    lull_shutdown();
    (void)lull_alloc_array(&refs_type, 4);
}

static void pinned_after_shutdown(void)
{
    init_child();
    lull_shutdown();
    (void)lull_alloc_pinned(&tnode_type);
}

static void type_of_null(void)      { init_child(); (void)lull_type_of(NULL); }

/* Interior pointers: into a young node (its id field, and its next field
 * holding a heap address), into an old pinned node, into an array. */
static void *interior_target;
static void type_of_interior_young(void)
{
    init_child();
    struct tnode *n = tnode_new(0x48);
    LULL_SET(n, next, tnode_new(2));
    interior_target = &n->next;
    (void)lull_type_of(interior_target);
}
static void type_of_interior_young_id(void)
{
    init_child();
    struct tnode *n = tnode_new(0x48);
    interior_target = (char *)n + 16;
    (void)lull_type_of(interior_target);
}
static void type_of_interior_old(void)
{
    init_child();
    struct tnode *n = lull_alloc_pinned(&tnode_type);
    CHECK(n != NULL, "lull_alloc_pinned");
    tnode_fill(n, 7);
    interior_target = (char *)n + 16;
    (void)lull_type_of(interior_target);
}
static void length_of_interior(void)
{
    init_child();
    struct refs *r = lull_alloc_array(&refs_type, 4000);   /* large: its own blocks */
    CHECK(r != NULL, "lull_alloc_array");
    interior_target = &r->a.length;
    (void)lull_array_length(interior_target);
}
static void length_of_null(void)    { init_child(); (void)lull_array_length(NULL); }
/* A precise root holding an interior nursery pointer (to a NULL field) at
 * a minor: the message names the slot. */
static void *interior_root[1];
static void minor_interior_root(void)
{
    init_child();
    struct tnode *n = tnode_new(0x48);
    interior_root[0] = &n->next;
    CHECK(lull_root_add_refs(interior_root, 1) == 0, "lull_root_add_refs");
    lull_collect(LULL_GEN_NURSERY);
}

static void type_of_after_shutdown(void)
{
    init_child();
    struct tnode *n = tnode_new(1);
    lull_shutdown();
    (void)lull_type_of(n);
}

static void length_after_shutdown(void)
{
    init_child();
    struct refs *r = lull_alloc_array(&refs_type, 3);
    lull_shutdown();
    (void)lull_array_length(r);
}

static void collect_negative_generation(void) { init_child(); lull_collect(-1); }

static void collect_after_shutdown(void)
{
    init_child();
    lull_shutdown();
    lull_collect(LULL_GEN_NURSERY);
}

static void pause_hook_after_shutdown(void)
{
    init_child();
    lull_shutdown();
    lull_set_pause_hook(NULL, NULL);
}

/* Handles (issue 11). */
static lull_handle freed_handle(void)
{
    init_child();
    lull_handle h = lull_handle_new(tnode_new(1), LULL_HANDLE_NORMAL);
    CHECK(h, "lull_handle_new failed");
    lull_handle_free(h);
    return h;
}
static void handle_get_freed(void)    { (void)lull_handle_get(freed_handle()); }
static void handle_set_freed(void)    { lull_handle_set(freed_handle(), NULL); }
static void handle_double_free(void)  { lull_handle_free(freed_handle()); }
static void handle_get_zero(void)     { init_child(); (void)lull_handle_get(0); }
static void handle_get_made_up(void)  { init_child(); (void)lull_handle_get(0x12345u << 7 | 1u); }
static void handle_new_bad_kind(void) { init_child(); (void)lull_handle_new(NULL, (enum lull_handle_kind)7); }
static void handle_new_interior(void)
{
    init_child();
    struct tnode *n = tnode_new(3);
    (void)lull_handle_new(&n->id, LULL_HANDLE_WEAK);
}
static void handle_set_malloc(void)
{
    init_child();
    lull_handle h = lull_handle_new(NULL, LULL_HANDLE_PINNED);
    CHECK(h, "lull_handle_new(NULL) failed");
    lull_handle_set(h, malloc(64));
}
static void handle_new_before_init(void) { (void)lull_handle_new(NULL, LULL_HANDLE_NORMAL); }
static void *unattached_handle(void *arg) { (void)arg; (void)lull_handle_new(NULL, LULL_HANDLE_WEAK); return NULL; }
static void handle_new_unattached(void) { run_in_thread(unattached_handle); }
static void *unattached_run_finalizers(void *arg) { (void)arg; lull_run_finalizers(); return NULL; }
static void run_finalizers_unattached(void) { run_in_thread(unattached_run_finalizers); }
static void run_finalizers_before_init(void) { lull_run_finalizers(); }

static void noop_finalizer(void *obj, void *data) { (void)obj, (void)data; }

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
    CHECK(lull_idle(1000000) == -EPERM, "lull_idle before lull_init");
    CHECK(lull_set_pause_target(5000000) == -EPERM, "lull_set_pause_target before lull_init");
    CHECK(lull_set_heap_growth(100) == -EPERM, "lull_set_heap_growth before lull_init");
    CHECK(lull_set_memory_limit(0) == -EPERM, "lull_set_memory_limit before lull_init");
    CHECK(lull_heap_shot(NULL, NULL) == -EPERM, "lull_heap_shot before lull_init");
    CHECK(lull_get_params(NULL, 0) == -EPERM, "lull_get_params before lull_init");
    CHECK(lull_register_finalizer(range, noop_finalizer, NULL) == -EPERM, "lull_register_finalizer before lull_init");

    CHECK(lull_init(NULL) == 0, "lull_init failed");
    struct tnode *volatile l = list_build(1, 2000);    /* must come out intact */
    CHECK(lull_register_finalizer(NULL, noop_finalizer, NULL) == -EINVAL, "lull_register_finalizer(NULL)");
    CHECK(lull_register_finalizer(range, noop_finalizer, NULL) == -EINVAL, "lull_register_finalizer(non-heap)");
    CHECK(lull_register_finalizer(&l->id, noop_finalizer, NULL) == -EINVAL, "lull_register_finalizer(interior)");
    CHECK(lull_register_finalizer(l, NULL, NULL) == 0, "removing a finalizer never registered");
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
    errno = 0;
    CHECK(lull_alloc_array(&bytes_type, SIZE_MAX) == NULL && errno == ENOMEM, "SIZE_MAX byte array");
    CHECK(lull_init(NULL) == -EBUSY, "lull_init while initialised");
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 1, 2000, "list after the rejected calls");
    lull_shutdown();

    /* After lull_shutdown: the calls that are no misuse. */
    CHECK(lull_root_add(range, sizeof range) == -EPERM, "lull_root_add after lull_shutdown");
    CHECK(lull_root_add_refs(refs, 4) == -EPERM, "lull_root_add_refs after lull_shutdown");
    lull_root_remove(range);                        /* no-op */
    CHECK(lull_thread_attach() == -EPERM, "lull_thread_attach after lull_shutdown");
    lull_thread_detach();                           /* no-op */
    CHECK(lull_idle(1000000) == -EPERM, "lull_idle after lull_shutdown");
    CHECK(lull_set_pause_target(5000000) == -EPERM, "lull_set_pause_target after lull_shutdown");
    lull_shutdown();                                /* twice: no-op */
    /* The heap is gone. (The counters of the run that ended stay readable
     * until the next lull_init; lull.h promises zeros only before the
     * first one, so they are not checked here.) */
    lull_stats st;
    memset(&st, 0xa5, sizeof st);
    lull_get_stats(&st);
    CHECK(st.heap_bytes == 0, "heap_bytes after lull_shutdown is %" PRIu64, st.heap_bytes);
    /* and lull starts again */
    CHECK(lull_init(NULL) == 0, "lull_init after lull_shutdown failed");
    l = list_build(5, 100);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 5, 100, "list after a new lull_init");
    lull_shutdown();
    printf("misuse: error codes: ok\n");
}

/* ---- harness ---- */

static int cases_run;

/* Does `text` match `pat` in full? "%p" in pat matches a pointer as
 * printf prints it (0x and hex digits, or "(nil)"); everything else must
 * be equal. */
static bool matches(const char *pat, const char *text)
{
    while (*pat) {
        if (pat[0] == '%' && pat[1] == 'p') {
            pat += 2;
            if (!strncmp(text, "(nil)", 5)) {
                text += 5;
                continue;
            }
            if (text[0] != '0' || text[1] != 'x' || !isxdigit((unsigned char)text[2]))
                return false;
            text += 2;
            while (isxdigit((unsigned char)*text))
                text++;
            continue;
        }
        if (*pat++ != *text++)
            return false;
    }
    return *text == 0;
}

/* Run fn in a child; it must die of SIGABRT with exactly the stderr line
 * "lull: <func>: <message>\n" (message may use %p). */
static void expect_abort(const char *what, void (*fn)(void), const char *func, const char *message)
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
    char want[512];
    snprintf(want, sizeof want, "lull: %s: %s\n", func, message);
    CHECK(matches(want, buf), "%s: stderr is\n  \"%s\"\nexpected exactly one line\n  \"%s\"",
          what, buf, want);
    printf("misuse: %-45s aborted: %s", what, buf);
    cases_run++;
}

int main(void)
{
    static const char *const not_init = "lull is not initialised (call lull_init first)";
    static const char *const not_attached = "the calling thread is not attached (call lull_thread_attach first)";
    expect_abort("lull_alloc before lull_init", alloc_before_init, "lull_alloc", not_init);
    expect_abort("lull_alloc_array before lull_init", array_before_init, "lull_alloc_array", not_init);
    expect_abort("lull_alloc_pinned before lull_init", pinned_before_init, "lull_alloc_pinned", not_init);
    expect_abort("lull_alloc from an unattached thread", alloc_unattached, "lull_alloc", not_attached);
    expect_abort("lull_alloc_array from an unattached thread", array_unattached, "lull_alloc_array",
                 not_attached);
    expect_abort("lull_alloc_pinned from an unattached thread", pinned_unattached, "lull_alloc_pinned",
                 not_attached);
    expect_abort("lull_alloc after lull_shutdown", alloc_after_shutdown, "lull_alloc", not_init);
    expect_abort("lull_alloc_array after lull_shutdown", array_after_shutdown, "lull_alloc_array", not_init);
    expect_abort("lull_alloc_pinned after lull_shutdown", pinned_after_shutdown, "lull_alloc_pinned",
                 not_init);

    expect_abort("lull_alloc(NULL)", alloc_null_type, "lull_alloc", "type is NULL");
    expect_abort("lull_alloc_array(NULL)", array_null_type, "lull_alloc_array", "type is NULL");
    expect_abort("lull_alloc_pinned(NULL)", pinned_null_type, "lull_alloc_pinned", "type is NULL");
    static const char *const malformed =
        "type '%s' is malformed (size %zu, refs %#llx: word 0 is the header, reference bits must lie "
        "inside size)";
    static const char *const bad_array =
        "type '%s' is not a valid type (size %zu, refs %#llx, elem_size %zu, elem_refs %#llx: word 0 "
        "is the header, an array needs size >= 16 and elem_size > 0, reference bits must lie inside "
        "size and elem_size)";
    char m[512];
#define MALFORMED(t) (snprintf(m, sizeof m, malformed, (t)->name, (t)->size, (unsigned long long)(t)->refs), m)
#define BAD_ARRAY(t) (snprintf(m, sizeof m, bad_array, (t)->name, (t)->size, (unsigned long long)(t)->refs, \
                               (t)->elem_size, (unsigned long long)(t)->elem_refs), m)
    expect_abort("lull_alloc with refs bit 0 set", invalid_type, "lull_alloc", MALFORMED(&bad_refs0_type));
    expect_abort("lull_alloc_pinned with refs bit 0 set", pinned_refs0, "lull_alloc_pinned",
                 MALFORMED(&bad_refs0_type));
    expect_abort("lull_alloc with a refs bit beyond size", alloc_refs_beyond, "lull_alloc",
                 MALFORMED(&refs_beyond_size));
    expect_abort("lull_alloc_pinned with a refs bit beyond size", pinned_refs_beyond, "lull_alloc_pinned",
                 MALFORMED(&refs_beyond_size));
    expect_abort("lull_alloc with size 4", alloc_too_small, "lull_alloc", MALFORMED(&too_small));
    expect_abort("lull_alloc_array with refs bit 0 set", invalid_array_type, "lull_alloc_array",
                 BAD_ARRAY(&bad_refs0_array));
    expect_abort("lull_alloc_array with a refs bit beyond size", array_refs_beyond, "lull_alloc_array",
                 BAD_ARRAY(&array_refs_beyond_size));
    expect_abort("lull_alloc_array with an elem_refs bit beyond elem_size", array_elem_refs_beyond,
                 "lull_alloc_array", BAD_ARRAY(&elem_refs_beyond));
    expect_abort("lull_alloc_array with references in 12-byte elements", array_elem_refs_odd,
                 "lull_alloc_array", BAD_ARRAY(&elem_refs_odd_size));
    expect_abort("lull_alloc_array of a type without elements", array_of_non_array, "lull_alloc_array",
                 BAD_ARRAY(&tnode_type));
    expect_abort("lull_alloc of an array type with a bad elem_refs", alloc_of_bad_array, "lull_alloc",
                 BAD_ARRAY(&elem_refs_beyond));
#undef MALFORMED
#undef BAD_ARRAY

    expect_abort("lull_store into a stack slot", store_outside_stack, "lull_store",
                 "slot %p (object %p) is not inside the lull heap");
    expect_abort("lull_store into a malloc'd slot", store_outside_malloc, "lull_store",
                 "slot %p (object %p) is not inside the lull heap");
    expect_abort("lull_store before lull_init", store_before_init, "lull_store", not_init);
    expect_abort("lull_store after lull_shutdown", store_after_shutdown, "lull_store", not_init);

    expect_abort("lull_type_of before lull_init", type_of_before_init, "lull_type_of", not_init);
    expect_abort("lull_type_of after lull_shutdown", type_of_after_shutdown, "lull_type_of", not_init);
    expect_abort("lull_type_of(NULL)", type_of_null, "lull_type_of", "(nil) is not a heap object");
    expect_abort("lull_type_of on a non-heap pointer", type_of_non_heap, "lull_type_of",
                 "%p is not a heap object");
    expect_abort("lull_type_of(young interior: next)", type_of_interior_young, "lull_type_of",
                 "%p is not the start of a heap object (an interior pointer?)");
    expect_abort("lull_type_of(young interior: id)", type_of_interior_young_id, "lull_type_of",
                 "%p is not the start of a heap object (an interior pointer?)");
    expect_abort("lull_type_of(old interior)", type_of_interior_old, "lull_type_of",
                 "%p is not the start of a heap object (an interior pointer?)");
    expect_abort("lull_array_length(interior)", length_of_interior, "lull_array_length",
                 "%p is not the start of a heap object (an interior pointer?)");
    expect_abort("minor with an interior root", minor_interior_root, "lull_collect",
                 "minor collection: a reference holds %p, inside the nursery but not the start of an object "
                 "(references must point to object starts); the slot is at %p, a precise root");
    expect_abort("lull_array_length(NULL)", length_of_null, "lull_array_length",
                 "(nil) is not a heap object");
    expect_abort("lull_array_length on a non-array", length_of_non_array, "lull_array_length",
                 "%p is not an array (type 'test-node')");
    expect_abort("lull_array_length on malloc'd memory", length_of_malloc, "lull_array_length",
                 "%p is not a heap object");
    expect_abort("lull_array_length after lull_shutdown", length_after_shutdown, "lull_array_length",
                 not_init);

    expect_abort("lull_collect before lull_init", collect_before_init, "lull_collect", not_init);
    expect_abort("lull_set_allow_synchronous_major before lull_init", allow_sync_before_init,
                 "lull_set_allow_synchronous_major", not_init);
    expect_abort("lull_collect after lull_shutdown", collect_after_shutdown, "lull_collect", not_init);
    expect_abort("lull_collect(7)", collect_bad_generation, "lull_collect",
                 "unknown generation 7 (LULL_GEN_NURSERY or LULL_GEN_MAJOR)");
    expect_abort("lull_collect(-1)", collect_negative_generation, "lull_collect",
                 "unknown generation -1 (LULL_GEN_NURSERY or LULL_GEN_MAJOR)");
    expect_abort("lull_set_pause_hook before lull_init", pause_hook_before_init, "lull_set_pause_hook",
                 not_init);
    expect_abort("lull_set_pause_hook after lull_shutdown", pause_hook_after_shutdown, "lull_set_pause_hook",
                 not_init);
    expect_abort("lull_shutdown with a thread attached", shutdown_with_attached_thread, "lull_shutdown",
                 "1 other thread(s) are still attached; detach them first");
    expect_abort("lull_get_stats(NULL)", stats_null, "lull_get_stats", "stats is NULL");
    expect_abort("lull_handle_get of a freed handle", handle_get_freed, "lull_handle_get",
                 "handle 0x82 (NORMAL, slot 0) was freed (or is a made-up value)");
    expect_abort("lull_handle_set of a freed handle", handle_set_freed, "lull_handle_set",
                 "handle 0x82 (NORMAL, slot 0) was freed (or is a made-up value)");
    expect_abort("lull_handle_free twice", handle_double_free, "lull_handle_free",
                 "handle 0x82 (NORMAL, slot 0) was freed (or is a made-up value)");
    expect_abort("lull_handle_get(0)", handle_get_zero, "lull_handle_get",
                 "0 is not a handle (lull_handle_new never returned it)");
    expect_abort("lull_handle_get of a made-up value", handle_get_made_up, "lull_handle_get",
                 "0x91a281 is not a handle (lull_handle_new never returned it)");
    expect_abort("lull_handle_new with kind 7", handle_new_bad_kind, "lull_handle_new", "unknown handle kind 7");
    expect_abort("lull_handle_new on an interior pointer", handle_new_interior, "lull_handle_new",
                 "%p is not the start of a heap object");
    expect_abort("lull_handle_set to malloc'd memory", handle_set_malloc, "lull_handle_set",
                 "%p is not the start of a heap object");
    expect_abort("lull_handle_new before lull_init", handle_new_before_init, "lull_handle_new", not_init);
    expect_abort("lull_handle_new from an unattached thread", handle_new_unattached, "lull_handle_new",
                 not_attached);
    expect_abort("lull_run_finalizers before lull_init", run_finalizers_before_init, "lull_run_finalizers",
                 not_init);
    expect_abort("lull_run_finalizers from an unattached thread", run_finalizers_unattached,
                 "lull_run_finalizers", not_attached);
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
