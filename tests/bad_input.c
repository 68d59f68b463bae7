/*
 * bad_input — what lull must reject, and how it fails when memory runs out.
 *
 *  - Every malformed option (unknown key, bad/overflowing/non-power-of-two
 *    sizes, bad enum values, mark-workers out of range, garbage), given in
 *    `params` or in LULL_GC_PARAMS, makes lull_init return -EINVAL after
 *    exactly one stderr line naming the key, and leaves lull uninitialised
 *    (lull_thread_attach/lull_root_add say -EPERM, stats are zero); a later
 *    good lull_init succeeds. Every valid form is accepted.
 *  - lull_init while initialised returns -EBUSY and changes nothing.
 *  - LULL_GC_PARAMS is applied on top of `params`.
 *  - Overflowing lull_alloc_array lengths and impossible sizes return NULL
 *    with errno = ENOMEM.
 *  - With max-heap-size=32m: an over-limit array fails cleanly; a list built
 *    until allocation fails (NULL, ENOMEM) is intact node by node; heap_bytes
 *    respects the limit; after dropping every other node allocation succeeds
 *    again; the same for large objects; and after dropping everything the
 *    whole heap is usable again.
 */
#include "check.h"

#include <pthread.h>

#define MB ((size_t)1 << 20)

/* ---------------------------------------------------------------------- */
/* stderr capture                                                          */
/* ---------------------------------------------------------------------- */


static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += (*s == '\n');
    return n;
}

static void check_uninitialised(const char *after)
{
    int rc = lull_thread_attach();
    CHECK(rc == -EPERM, "after %s: lull_thread_attach returned %d, expected -EPERM "
          "(lull must be left uninitialised)", after, rc);
    static void *word;
    rc = lull_root_add(&word, sizeof word);
    CHECK(rc == -EPERM, "after %s: lull_root_add returned %d, expected -EPERM", after, rc);
    lull_stats s = get_stats();
    static const lull_stats zero;
    CHECK(memcmp(&s, &zero, sizeof s) == 0, "after %s: lull_get_stats is not all zero", after);
}

/* lull_init(params) must fail with -EINVAL and one stderr line from
 * lull_init naming where the option came from (`params` or LULL_GC_PARAMS)
 * and the key, quoted (so "major" does not match
 * "allow-synchronous-major"); `key` with a space in it is a phrase the
 * line must contain instead. */
static void expect_rejected(const char *params, const char *env, const char *key)
{
    char what[512];
    snprintf(what, sizeof what, "lull_init(\"%s\")%s%s", params ? params : "NULL",
             env ? " with LULL_GC_PARAMS=" : "", env ? env : "");
    if (env)
        setenv("LULL_GC_PARAMS", env, 1);
    capture_begin();
    int rc = lull_init(params);
    const char *err = capture_end();
    if (env)
        unsetenv("LULL_GC_PARAMS");
    if (rc == 0)
        lull_shutdown();
    CHECK(rc == -EINVAL, "%s returned %d, expected -EINVAL", what, rc);
    CHECK(count_lines(err) == 1, "%s: expected exactly one line on stderr, got %d: \"%s\"",
          what, count_lines(err), err);
    const char *source = env ? "LULL_GC_PARAMS" : "lull_init params";
    char prefix[128], quoted[128];
    snprintf(prefix, sizeof prefix, "lull: lull_init: %s: ", source);
    snprintf(quoted, sizeof quoted, strchr(key, ' ') ? "%s" : "'%s'", key);
    if (strchr(key, ' '))
        snprintf(prefix, sizeof prefix, "lull: lull_init: ");
    CHECK(strncmp(err, prefix, strlen(prefix)) == 0, "%s: the stderr line does not begin with \"%s\": \"%s\"",
          what, prefix, err);
    CHECK(strstr(err, quoted) != NULL, "%s: the stderr line does not name the key %s: \"%s\"",
          what, quoted, err);
    check_uninitialised(what);
}

static void expect_accepted(const char *params)
{
    int rc = lull_init(params);
    CHECK(rc == 0, "lull_init(\"%s\") returned %d, expected 0", params, rc);
    struct tnode *volatile l = list_build(1, 1000);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 1, 1000, params);
    lull_shutdown();
}

static const struct { const char *params, *key; } rejected[] = {
    { "bogus-option=1", "bogus-option" },
    { "nursery-size=3m", "nursery-size" },
    { "nursery-size=3000k", "nursery-size" },
    { "nursery-size=12345", "nursery-size" },
    { "nursery-size=0", "nursery-size" },
    { "nursery-size=abc", "nursery-size" },
    { "nursery-size=", "nursery-size" },
    { "nursery-size=-4m", "nursery-size" },
    { "nursery-size=4x", "nursery-size" },
    { "nursery-size=4mm", "nursery-size" },
    { "nursery-size=4 m", "nursery-size" },
    { "nursery-size=99999999999999999999999", "nursery-size" },
    { "nursery-size=17179869184g", "nursery-size" },         /* 2^64: overflows */
    { "nursery-size", "nursery-size" },
    { "max-heap-size=lots", "max-heap-size" },
    { "max-heap-size=", "max-heap-size" },
    { "max-heap-size=-1", "max-heap-size" },
    { "max-heap-size=12q", "max-heap-size" },
    { "max-heap-size=99999999999999999999999", "max-heap-size" },
    { "max-heap-size=18446744073709551616", "max-heap-size" },  /* 2^64 */
    { "major=sometimes", "major" },
    { "major=", "major" },
    { "major=stw2", "major" },
    { "mark-workers=0", "mark-workers" },
    { "mark-workers=-1", "mark-workers" },
    { "mark-workers=two", "mark-workers" },
    { "mark-workers=1000000", "mark-workers" },
    { "mark-workers=4294967297", "mark-workers" },
    { "mark-workers=", "mark-workers" },
    { "mark-workers=2x", "mark-workers" },
    { "concurrent-sweep=maybe", "concurrent-sweep" },
    { "background-mark=maybe", "background-mark" },
    { "background-mark=", "background-mark" },
    { "card-filter=sometimes", "card-filter" },
    { "card-filter=", "card-filter" },
    { "concurrent-sweep=", "concurrent-sweep" },
    { "allow-synchronous-major=perhaps", "allow-synchronous-major" },
    { "finalizers=never", "finalizers" },
    { "finalizers=", "finalizers" },
    { "pause-target=2", "pause-target" },
    { "pause-target=0ms", "pause-target" },
    { "pause-target=99us", "pause-target" },
    { "pause-target=11s", "pause-target" },
    { "pause-target=2 ms", "pause-target" },
    { "pause-target=1.5ms", "pause-target" },
    { "pause-target=ms", "pause-target" },
    { "pause-target=", "pause-target" },
    { "pause-target=99999999999999999999s", "pause-target" },
    { "garbage", "garbage" },
    { "major=stw,bogus-option=1", "bogus-option" },
    { "bogus-option=1,major=stw", "bogus-option" },
    { "major=stw,nursery-size=5m", "nursery-size" },
    { "max-heap-size=1023k", "max-heap-size" },                 /* below 1m */
    { "max-heap-size=65t", "max-heap-size" },
    { "allow-synchronous-major=", "allow-synchronous-major" },
    { "nursery-size=2g", "nursery-size" },                      /* above 1g */
    { "nursery-size=32k", "nursery-size" },                     /* below 64k */
    /* The signals doc/options.md names as refused (fault-reporting or uncatchable),
     * out of range, not numbers, and the two signals equal. */
    { "suspend-signal=9", "suspend-signal" },     /* SIGKILL */
    { "suspend-signal=19", "suspend-signal" },    /* SIGSTOP */
    { "suspend-signal=11", "suspend-signal" },    /* SIGSEGV */
    { "suspend-signal=7", "suspend-signal" },     /* SIGBUS */
    { "suspend-signal=4", "suspend-signal" },     /* SIGILL */
    { "suspend-signal=8", "suspend-signal" },     /* SIGFPE */
    { "suspend-signal=6", "suspend-signal" },     /* SIGABRT */
    { "suspend-signal=5", "suspend-signal" },     /* SIGTRAP */
    { "restart-signal=9", "restart-signal" },
    { "restart-signal=19", "restart-signal" },
    { "restart-signal=11", "restart-signal" },
    { "restart-signal=7", "restart-signal" },
    { "restart-signal=4", "restart-signal" },
    { "restart-signal=8", "restart-signal" },
    { "restart-signal=6", "restart-signal" },
    { "restart-signal=5", "restart-signal" },
    { "suspend-signal=0", "suspend-signal" },
    { "suspend-signal=65", "suspend-signal" },
    { "restart-signal=-1", "restart-signal" },
    { "suspend-signal=SIGUSR1", "suspend-signal" },
    { "restart-signal=", "restart-signal" },
    { "suspend-signal=10,restart-signal=10", "suspend-signal and restart-signal must differ" },
    { "suspend-signal=24", "suspend-signal and restart-signal must differ" },   /* the default restart */
    { "restart-signal=30", "suspend-signal and restart-signal must differ" },   /* the default suspend */
};

static const char *accepted[] = {
    "",
    "nursery-size=4m",
    "nursery-size=1m",
    "nursery-size=8192k",
    "nursery-size=16m,max-heap-size=1g",
    "max-heap-size=256m",
    "max-heap-size=1073741824",
    "major=stw",
    "major=concurrent",
    "mark-workers=1",
    "mark-workers=2",
    "concurrent-sweep=no",
    "concurrent-sweep=yes",
    "card-filter=no",
    "card-filter=yes",
    "allow-synchronous-major=no",
    "allow-synchronous-major=yes",
    "finalizers=manual",
    "finalizers=auto",
    "pause-target=2ms",
    "pause-target=100us",
    "pause-target=10s",
    "pause-target=1500000ns",
    ("nursery-size=2m,max-heap-size=512m,major=stw,mark-workers=1,concurrent-sweep=no,"
     "allow-synchronous-major=no,finalizers=manual"),
};

static void test_options(void)
{
    /* This test controls LULL_GC_PARAMS itself; remember the user's. */
    char *saved = getenv("LULL_GC_PARAMS") ? strdup(getenv("LULL_GC_PARAMS")) : NULL;
    unsetenv("LULL_GC_PARAMS");

    check_uninitialised("start-up");
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++)
        expect_rejected(rejected[i].params, NULL, rejected[i].key);
    expect_rejected(NULL, "nursery-size=7m", "nursery-size");
    expect_rejected("major=stw", "bogus-env-key=1", "bogus-env-key");
    expect_rejected("", "mark-workers=0", "mark-workers");
    expect_rejected("nursery-size=4m", "major=often", "major");
    expect_rejected(NULL, "suspend-signal=9", "suspend-signal");
    expect_rejected("suspend-signal=10", "restart-signal=10", "suspend-signal and restart-signal must differ");

    for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        expect_accepted(accepted[i]);
    CHECK(lull_init(NULL) == 0, "lull_init(NULL) after all the rejections failed");
    lull_shutdown();

    /* LULL_GC_PARAMS is applied on top of params. */
    setenv("LULL_GC_PARAMS", "max-heap-size=16m", 1);
    CHECK(lull_init("max-heap-size=1g") == 0, "lull_init with LULL_GC_PARAMS=max-heap-size=16m failed");
    unsetenv("LULL_GC_PARAMS");
    errno = 0;
    void *p = lull_alloc_array(&bytes_type, 32 * MB);
    CHECK(p == NULL && errno == ENOMEM, "LULL_GC_PARAMS=max-heap-size=16m was not applied on top of "
          "params max-heap-size=1g: a 32 MB array gave %p (errno %d)", p, errno);
    lull_shutdown();

    if (saved) {
        setenv("LULL_GC_PARAMS", saved, 1);
        free(saved);
    }
}

/* ---------------------------------------------------------------------- */

static void test_busy(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init failed");
    struct tnode *volatile l = list_build(100, 2000);
    int rc = lull_init(NULL);
    CHECK(rc == -EBUSY, "second lull_init returned %d, expected -EBUSY", rc);
    rc = lull_init("major=stw");
    CHECK(rc == -EBUSY, "lull_init(\"major=stw\") while initialised returned %d, expected -EBUSY", rc);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 100, 2000, "list after a refused second lull_init");
    lull_shutdown();
}

/* ---------------------------------------------------------------------- */

struct pair_elem { void *a; uint64_t x; void *b; };
static const lull_type pairs_type = {
    .name = "pairs", .size = sizeof(lull_array_header),
    .elem_size = sizeof(struct pair_elem), .elem_refs = 5,
};

static void expect_enomem(const lull_type *t, size_t length, const char *what)
{
    errno = 0;
    void *p = lull_alloc_array(t, length);
    int e = errno;
    CHECK(p == NULL, "lull_alloc_array(%s, %zu) returned %p, expected NULL", what, length, p);
    CHECK(e == ENOMEM, "lull_alloc_array(%s, %zu): errno %d (%s), expected ENOMEM", what, length,
          e, strerror(e));
}

static void test_overflow(const char *params)
{
    CHECK(lull_init(params) == 0, "lull_init(%s) failed", params);
    expect_enomem(&refs_type, SIZE_MAX, "refs");
    expect_enomem(&refs_type, SIZE_MAX / sizeof(void *), "refs");
    expect_enomem(&refs_type, SIZE_MAX / sizeof(void *) + 1, "refs");
    expect_enomem(&refs_type, (SIZE_MAX - sizeof(struct refs)) / sizeof(void *) + 1, "refs");
    expect_enomem(&refs_type, (SIZE_MAX - sizeof(struct refs)) / sizeof(void *), "refs");
    expect_enomem(&bytes_type, SIZE_MAX, "bytes");
    expect_enomem(&bytes_type, SIZE_MAX - sizeof(struct bytes) + 1, "bytes");   /* sum = 2^64 */
    expect_enomem(&bytes_type, SIZE_MAX - sizeof(struct bytes), "bytes");       /* sum = 2^64-1 */
    expect_enomem(&bytes_type, (size_t)1 << 62, "bytes");
    expect_enomem(&pairs_type, SIZE_MAX / sizeof(struct pair_elem) + 1, "pairs");
    expect_enomem(&pairs_type, SIZE_MAX / sizeof(struct pair_elem), "pairs");
    expect_enomem(&pairs_type, SIZE_MAX / 3, "pairs");
    /* still usable */
    struct tnode *volatile l = list_build(7, 1000);
    struct bytes *volatile b = bytes_new(3 * MB, 5);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 7, 1000, "list after overflowing requests");
    bytes_verify(b, 5, 3 * MB, "large array after overflowing requests");
    lull_shutdown();
}

/* ---------------------------------------------------------------------- */
/* Heap exhaustion under max-heap-size=32m.                                */
/* ---------------------------------------------------------------------- */

#define LIMIT (32 * MB)

static void verify_stride(const struct tnode *head, uint64_t first, size_t count, size_t stride,
                          const char *what)
{
    size_t i = 0;
    for (const struct tnode *n = head; n; n = n->next, i++) {
        CHECK(i < count, "%s: more than %zu nodes", what, count);
        CHECK(tnode_ok(n, first + i * stride), "%s: node %zu of %zu (at %p) corrupt: id %" PRIu64
              ", expected %" PRIu64, what, i, count, (const void *)n, n->id, first + i * stride);
    }
    CHECK(i == count, "%s: %zu nodes, expected %zu", what, i, count);
}

/* Append nodes until allocation fails; return the count; *head set. */
static NOINLINE size_t build_until_full(struct tnode *volatile *head, uint64_t first)
{
    struct tnode *h = NULL, *tail = NULL;
    size_t n = 0;
    for (;;) {
        errno = 0;
        struct tnode *x = lull_alloc(&tnode_type);
        if (x == NULL) {
            CHECK(errno == ENOMEM, "lull_alloc returned NULL with errno %d (%s), expected ENOMEM",
                  errno, strerror(errno));
            break;
        }
        tnode_fill(x, first + n);
        if (tail)
            LULL_SET(tail, next, x);
        else
            h = x;
        tail = x;
        n++;
        CHECK(n < 64 * LIMIT / sizeof(struct tnode),
              "allocated %zu nodes (%zu MB) under max-heap-size=32m without failing", n,
              n * sizeof(struct tnode) / MB);
    }
    *head = h;
    return n;
}

static NOINLINE void drop_every_other(struct tnode *head)
{
    for (struct tnode *n = head; n && n->next; n = n->next)
        LULL_SET(n, next, n->next->next);
}

/* exhaust_small passes its lists by address: had it loaded a list head
 * into a callee-saved register to pass it by value, that stale copy would
 * keep the list alive after the test drops it (seen under ASan). */
static NOINLINE void verify_at(struct tnode *volatile *p, uint64_t first, size_t n, size_t stride,
                               const char *what)
{
    verify_stride(*p, first, n, stride, what);
}

static NOINLINE void drop_every_other_at(struct tnode *volatile *p)
{
    drop_every_other(*p);
}

static size_t small_n1, small_n3;

static NOINLINE void exhaust_small_refill(void)
{
    struct tnode *volatile list = NULL;
    size_t n3 = build_until_full(&list, 1u << 31);
    CHECK(n3 >= small_n1 * 3 / 4, "after dropping everything only %zu nodes fit (first time: %zu)", n3, small_n1);
    verify_at(&list, 1u << 31, n3, 1, "list built after dropping everything");
    small_n3 = n3;
}

static NOINLINE void exhaust_small(void)
{
    struct tnode *volatile list1 = NULL, *volatile list2 = NULL;
    size_t n1 = build_until_full(&list1, 1);
    CHECK(n1 * sizeof(struct tnode) >= LIMIT / 4,
          "only %zu nodes (%zu KB) fit under max-heap-size=32m", n1, n1 * sizeof(struct tnode) / 1024);
    verify_at(&list1, 1, n1, 1, "list built until the heap was full");
    lull_stats s = get_stats();
    CHECK(s.heap_bytes <= LIMIT, "heap_bytes = %" PRIu64 " exceeds max-heap-size=32m", s.heap_bytes);

    /* The heap stays full, but failing again is clean. */
    errno = 0;
    void *x = lull_alloc_array(&bytes_type, 2 * MB);
    CHECK(x == NULL && errno == ENOMEM, "2 MB array in a full heap: %p errno %d", x, errno);

    drop_every_other_at(&list1);
    size_t half = (n1 + 1) / 2;
    verify_at(&list1, 1, half, 2, "list after dropping every other node");
    clobber_stack();
    size_t n2 = build_until_full(&list2, 1u << 30);
    CHECK(n2 >= n1 / 4, "after freeing %zu of %zu nodes only %zu new nodes could be allocated",
          n1 - half, n1, n2);
    verify_at(&list1, 1, half, 2, "old list after refilling the heap");
    verify_at(&list2, 1u << 30, n2, 1, "new list built in the freed space");

    /* Drop everything: the whole heap is usable again (in a fresh thread,
     * this one detached: a stale word in this frame would keep a dropped
     * list alive, the scan being conservative). */
    list1 = list2 = NULL;
    small_n1 = n1;
    run_in_fresh_thread(exhaust_small_refill);
    printf("bad_input: heap exhaustion: %zu nodes until ENOMEM, %zu after dropping half, "
           "%zu after dropping all\n", n1, n2, small_n3);
}

#define NBIG 64
static void *big[NBIG];
static uint64_t big_seed[NBIG];   /* the seed each array was filled with */

static NOINLINE int fill_big(uint64_t seed)
{
    int n = 0;
    for (int i = 0; i < NBIG; i++) {
        if (big[i])
            continue;
        errno = 0;
        struct bytes *b = lull_alloc_array(&bytes_type, MB);
        if (b == NULL) {
            CHECK(errno == ENOMEM, "large allocation failed with errno %d, expected ENOMEM", errno);
            break;
        }
        bytes_fill(b, seed + (uint64_t)i);
        big[i] = b;
        big_seed[i] = seed + (uint64_t)i;
        n++;
    }
    CHECK(big[NBIG - 1] == NULL, "%d one-megabyte arrays fit under max-heap-size=32m", NBIG);
    return n;
}

/* Every array holds what it was filled with (a refill may use indices the
 * first fill did not reach: the seed is recorded per index). */
static NOINLINE void verify_big(const char *what)
{
    for (int i = 0; i < NBIG; i++)
        if (big[i])
            bytes_verify(big[i], big_seed[i], MB, what);
}

static NOINLINE void exhaust_large(void)
{
    CHECK(lull_root_add(big, sizeof big) == 0, "lull_root_add failed");
    int n1 = fill_big(100);
    CHECK(n1 >= 8, "only %d one-megabyte arrays fit under max-heap-size=32m", n1);
    verify_big("large array in a full heap");
    for (int i = 1; i < NBIG; i += 2)
        big[i] = NULL;
    clobber_stack();
    int n2 = fill_big(200);
    CHECK(n2 >= n1 / 2 - 2, "after dropping %d of %d large arrays only %d could be reallocated",
          n1 / 2, n1, n2);
    verify_big("large arrays after refilling");
    memset(big, 0, sizeof big);
    lull_root_remove(big);
}

static void *exhaustion_thread(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "lull_thread_attach failed");
    exhaust_small();
    run_in_fresh_thread(exhaust_large);
    /* and small again after the large ones */
    clobber_stack();
    struct tnode *volatile l = list_build(5, 10000);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, 5, 10000, "list after exhaustion tests");
    lull_thread_detach();
    return NULL;
}

/*
 * The exhaustion checks run on a fresh thread while the main thread is
 * detached: lull's heap addresses repeat across lull_init cycles, so stale
 * words that earlier tests left in the main thread's frames (padding slots
 * no clobbering reaches; seen at -O0) would otherwise point into this
 * heap's lists and keep them alive.
 */
static void test_exhaustion(void)
{
    CHECK(lull_init("max-heap-size=32m") == 0, "lull_init(max-heap-size=32m) failed");
    expect_enomem(&bytes_type, 33 * MB, "bytes, over max-heap-size");
    expect_enomem(&bytes_type, LIMIT, "bytes, exactly max-heap-size plus header");
    expect_enomem(&refs_type, LIMIT / sizeof(void *), "refs, over max-heap-size");
    lull_thread_detach();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, exhaustion_thread, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    CHECK(lull_thread_attach() == 0, "re-attaching the main thread failed");
    lull_shutdown();
}

int main(void)
{
    test_options();
    test_busy();
    test_overflow(NULL);
    test_overflow("max-heap-size=64m");
    test_exhaustion();
    printf("bad_input: ok\n");
    return 0;
}
