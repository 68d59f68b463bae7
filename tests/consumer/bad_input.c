/*
 * bad_input — what an outside program can rely on when it gets things wrong
 * or runs out of memory, written only against the public API (doc/api.md):
 *
 *  - every malformed option (in `params` or in LULL_GC_PARAMS) makes
 *    lull_init return -EINVAL after one stderr line naming the key, and a
 *    later good lull_init succeeds; lull_init while initialised is -EBUSY;
 *  - overflowing lull_alloc_array lengths and sizes over max-heap-size
 *    return NULL with errno = ENOMEM;
 *  - with max-heap-size=32m a list is built until allocation fails; every
 *    node is intact; after dropping half of it, allocation works again and
 *    nothing is lost; the same for large arrays.
 *
 * Exits 0 on success, 1 with a message naming the failed check otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <lull.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MB ((size_t)1 << 20)

const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_stack_use_after_return=0"; }

#define EXPECT(cond, ...)                                                       \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fflush(stdout);                                                     \
            fprintf(stderr, "bad_input: FAIL (line %d): ", __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

struct node {
    lull_header  h;
    struct node *next;
    uint64_t     id;
    uint64_t     check;
};
static const lull_type node_type = {
    .name = "node", .size = sizeof(struct node), .refs = LULL_REF(struct node, next),
};

struct bytes { lull_array_header a; unsigned char b[]; };
static const lull_type bytes_type = {
    .name = "bytes", .size = sizeof(struct bytes), .elem_size = 1,
};

struct refs { lull_array_header a; void *item[]; };
static const lull_type refs_type = {
    .name = "refs", .size = sizeof(struct refs), .elem_size = sizeof(void *), .elem_refs = 1,
};

static uint64_t check_of(uint64_t id) { return id * 0x9e3779b97f4a7c15ull ^ 0xfeedfacecafebeefull; }

/* ---------------------------------------------------------------------- */
/* Options                                                                 */
/* ---------------------------------------------------------------------- */

static char err_text[8192];

/* Call lull_init(params) with stderr captured into err_text. */
static int init_captured(const char *params)
{
    fflush(stderr);
    FILE *f = tmpfile();
    EXPECT(f != NULL, "tmpfile failed");
    int saved = dup(2);
    dup2(fileno(f), 2);
    int rc = lull_init(params);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(err_text, 1, sizeof err_text - 1, f);
    err_text[n] = 0;
    fclose(f);
    return rc;
}

/* Does `text` name `key` as a whole word (not inside a longer option name:
 * "major" must not match "allow-synchronous-major")? */
static int names_key(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        char before = p == text ? ' ' : p[-1], after = p[n];
        if (!isalnum((unsigned char)before) && before != '-' && before != '_' &&
            !isalnum((unsigned char)after) && after != '-' && after != '_')
            return 1;
    }
    return 0;
}

static void rejected(const char *params, const char *env, const char *key)
{
    if (env)
        setenv("LULL_GC_PARAMS", env, 1);
    int rc = init_captured(params);
    if (env)
        unsetenv("LULL_GC_PARAMS");
    if (rc == 0)
        lull_shutdown();
    EXPECT(rc == -EINVAL, "lull_init(\"%s\") with LULL_GC_PARAMS=\"%s\" returned %d, expected -EINVAL",
           params ? params : "NULL", env ? env : "", rc);
    int lines = 0;
    for (const char *s = err_text; *s; s++)
        lines += (*s == '\n');
    EXPECT(lines == 1 && names_key(err_text, key),
           "lull_init(\"%s\") with LULL_GC_PARAMS=\"%s\": expected one stderr line naming \"%s\", got: \"%s\"",
           params ? params : "NULL", env ? env : "", key, err_text);
}

static void test_options(void)
{
    unsetenv("LULL_GC_PARAMS");
    static const struct { const char *params, *key; } bad[] = {
        { "no-such-option=1", "no-such-option" },
        { "nursery-size=3m", "nursery-size" },
        { "nursery-size=100000", "nursery-size" },
        { "nursery-size=0", "nursery-size" },
        { "nursery-size=big", "nursery-size" },
        { "nursery-size=", "nursery-size" },
        { "nursery-size=4t", "nursery-size" },
        { "nursery-size=-1m", "nursery-size" },
        { "nursery-size=99999999999999999999999", "nursery-size" },
        { "max-heap-size=huge", "max-heap-size" },
        { "max-heap-size=", "max-heap-size" },
        { "max-heap-size=10z", "max-heap-size" },
        { "max-heap-size=99999999999999999999999k", "max-heap-size" },
        { "major=incremental", "major" },
        { "major=", "major" },
        { "mark-workers=0", "mark-workers" },
        { "mark-workers=100000", "mark-workers" },
        { "mark-workers=many", "mark-workers" },
        { "concurrent-sweep=sometimes", "concurrent-sweep" },
        { "allow-synchronous-major=2", "allow-synchronous-major" },
        { "nonsense", "nonsense" },
        { "major=stw,no-such-option=1", "no-such-option" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        rejected(bad[i].params, NULL, bad[i].key);
    rejected(NULL, "nursery-size=5m", "nursery-size");
    rejected("major=stw", "no-such-env-option=yes", "no-such-env-option");
    rejected("", "major=maybe", "major");

    /* Nothing was left behind: a good init works, a second one is -EBUSY. */
    int rc = lull_init("nursery-size=2m,major=stw,mark-workers=1,concurrent-sweep=no,"
                       "allow-synchronous-major=yes,max-heap-size=1g");
    EXPECT(rc == 0, "lull_init with good options after the rejected ones returned %d", rc);
    rc = lull_init(NULL);
    EXPECT(rc == -EBUSY, "lull_init while initialised returned %d, expected -EBUSY", rc);
    struct node *n = lull_alloc(&node_type);
    EXPECT(n != NULL, "lull_alloc after a refused lull_init failed");
    lull_shutdown();
    rc = lull_init(NULL);
    EXPECT(rc == 0, "lull_init after lull_shutdown returned %d", rc);
    lull_shutdown();
}

/* ---------------------------------------------------------------------- */
/* Impossible sizes                                                        */
/* ---------------------------------------------------------------------- */

static void no_memory(const lull_type *t, size_t length, const char *what)
{
    errno = 0;
    void *p = lull_alloc_array(t, length);
    int e = errno;
    EXPECT(p == NULL && e == ENOMEM, "lull_alloc_array(%s, %zu) gave %p with errno %d, "
           "expected NULL and ENOMEM", what, length, p, e);
}

static void test_sizes(void)
{
    EXPECT(lull_init("max-heap-size=32m") == 0, "lull_init(max-heap-size=32m) failed");
    no_memory(&refs_type, SIZE_MAX, "refs");
    no_memory(&refs_type, SIZE_MAX / sizeof(void *), "refs");
    no_memory(&refs_type, SIZE_MAX / sizeof(void *) + 1, "refs");
    no_memory(&bytes_type, SIZE_MAX, "bytes");
    no_memory(&bytes_type, SIZE_MAX - sizeof(struct bytes) + 1, "bytes");
    no_memory(&bytes_type, 33 * MB, "bytes over max-heap-size");
    no_memory(&bytes_type, (size_t)1 << 40, "bytes, 1 TiB");
    no_memory(&refs_type, 8 * MB, "refs, 64 MB over max-heap-size");
    struct bytes *b = lull_alloc_array(&bytes_type, 4 * MB);
    EXPECT(b != NULL && lull_array_length(b) == 4 * MB, "a 4 MB array after the refused ones failed");
    lull_shutdown();
}

/* ---------------------------------------------------------------------- */
/* Running out of heap                                                     */
/* ---------------------------------------------------------------------- */

static NOINLINE size_t fill_heap(struct node *volatile *head, uint64_t first)
{
    struct node *h = NULL, *tail = NULL;
    size_t n = 0;
    for (;;) {
        errno = 0;
        struct node *x = lull_alloc(&node_type);
        if (x == NULL) {
            EXPECT(errno == ENOMEM, "lull_alloc failed with errno %d, expected ENOMEM", errno);
            break;
        }
        EXPECT(x->next == NULL && x->id == 0, "lull_alloc returned memory that is not zeroed");
        x->id = first + n;
        x->check = check_of(x->id);
        if (tail)
            LULL_SET(tail, next, x);
        else
            h = x;
        tail = x;
        n++;
        EXPECT(n < (size_t)1 << 26, "no allocation failure under max-heap-size=32m after %zu nodes", n);
    }
    *head = h;
    return n;
}

static void verify(const struct node *head, uint64_t first, size_t count, uint64_t stride,
                   const char *what)
{
    size_t i = 0;
    for (const struct node *n = head; n; n = n->next, i++) {
        uint64_t id = first + i * stride;
        EXPECT(i < count, "%s: more than %zu nodes", what, count);
        EXPECT(n->id == id && n->check == check_of(id), "%s: node %zu of %zu is corrupt "
               "(id %" PRIu64 ", expected %" PRIu64 ")", what, i, count, n->id, id);
    }
    EXPECT(i == count, "%s: %zu nodes, expected %zu", what, i, count);
}

static NOINLINE void drop_half(struct node *head)
{
    for (struct node *n = head; n && n->next; n = n->next)
        LULL_SET(n, next, n->next->next);
}

static NOINLINE void scrub_stack(void)
{
    volatile uintptr_t buf[8192];
    for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
        buf[i] = 0;
}

#define NBIG 64
static void *big[NBIG];
static unsigned char big_tag[NBIG];   /* what each array was filled with */

static NOINLINE int fill_big(unsigned char tag)
{
    int n = 0;
    for (int i = 0; i < NBIG; i++) {
        if (big[i])
            continue;
        errno = 0;
        struct bytes *b = lull_alloc_array(&bytes_type, MB);
        if (b == NULL) {
            EXPECT(errno == ENOMEM, "large allocation failed with errno %d, expected ENOMEM", errno);
            break;
        }
        memset(b->b, tag + i, MB);
        big[i] = b;
        big_tag[i] = (unsigned char)(tag + i);
        n++;
    }
    return n;
}

/* Every array holds what it was filled with (a refill may reach indices
 * the first fill did not: the tag is recorded per index). */
static void verify_big(const char *what)
{
    for (int i = 0; i < NBIG; i++) {
        struct bytes *b = big[i];
        if (!b)
            continue;
        unsigned char want = big_tag[i];
        EXPECT(lull_array_length(b) == MB, "%s: array %d has length %zu", what, i, lull_array_length(b));
        for (size_t j = 0; j < MB; j++)
            EXPECT(b->b[j] == want, "%s: array %d corrupt at byte %zu", what, i, j);
    }
}

static size_t small_n1, small_n2;
static void *exhaustion_large(void *arg);

static void *exhaustion(void *arg)
{
    (void)arg;
    EXPECT(lull_thread_attach() == 0, "lull_thread_attach failed");
    struct node *volatile a = NULL, *volatile b = NULL;

    size_t n1 = fill_heap(&a, 1);
    EXPECT(n1 * sizeof(struct node) >= 8 * MB, "only %zu nodes fit in a 32 MB heap", n1);
    verify(a, 1, n1, 1, "list built until the heap was full");
    lull_stats s;
    lull_get_stats(&s);
    EXPECT(s.heap_bytes <= 32 * MB, "heap_bytes %" PRIu64 " over max-heap-size=32m", s.heap_bytes);

    drop_half(a);
    size_t kept = (n1 + 1) / 2;
    scrub_stack();
    size_t n2 = fill_heap(&b, (uint64_t)1 << 40);
    EXPECT(n2 >= n1 / 4, "after dropping %zu of %zu nodes only %zu could be allocated again",
           n1 - kept, n1, n2);
    verify(a, 1, kept, 2, "the kept half of the first list");
    verify(b, (uint64_t)1 << 40, n2, 1, "the second list");
    a = b = NULL;
    scrub_stack();
    small_n1 = n1;
    small_n2 = n2;
    /* The rest on a fresh thread, this one detached: a stale word left in
     * this frame (the scan is conservative) could keep the dropped lists. */
    lull_thread_detach();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, exhaustion_large, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    return NULL;
}

static void *exhaustion_large(void *arg)
{
    (void)arg;
    EXPECT(lull_thread_attach() == 0, "lull_thread_attach failed");
    scrub_stack();
    size_t n1 = small_n1, n2 = small_n2;
    struct node *volatile a = NULL;

    EXPECT(lull_root_add(big, sizeof big) == 0, "lull_root_add failed");
    int m1 = fill_big(10);
    EXPECT(m1 >= 8 && m1 < NBIG, "%d one-megabyte arrays fit in a 32 MB heap", m1);
    verify_big("large arrays in a full heap");
    for (int i = 1; i < NBIG; i += 2)
        big[i] = NULL;
    scrub_stack();
    int m2 = fill_big(100);
    EXPECT(m2 >= m1 / 2 - 2, "after dropping %d large arrays only %d could be allocated again",
           m1 / 2, m2);
    verify_big("large arrays after refilling");
    lull_root_remove(big);
    memset(big, 0, sizeof big);
    scrub_stack();

    /* everything dropped: the heap is usable again */
    size_t n3 = fill_heap(&a, (uint64_t)1 << 41);
    EXPECT(n3 >= n1 / 2, "after dropping everything only %zu nodes fit (first time %zu)", n3, n1);
    verify(a, (uint64_t)1 << 41, n3, 1, "list built after dropping everything");
    printf("bad_input: %zu nodes until ENOMEM, %zu more after dropping half, %zu after dropping all; "
           "%d large arrays, %d after dropping half\n", n1, n2, n3, m1, m2);
    lull_thread_detach();
    return NULL;
}

/* Run on a fresh thread with the main thread detached: heap addresses repeat
 * across lull_init cycles, and stale words earlier tests left on the main
 * thread's stack would be scanned and could keep these lists alive. */
static void test_exhaustion(void)
{
    EXPECT(lull_init("max-heap-size=32m") == 0, "lull_init(max-heap-size=32m) failed");
    lull_thread_detach();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, exhaustion, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    EXPECT(lull_thread_attach() == 0, "re-attaching the main thread failed");
    lull_shutdown();
}

int main(void)
{
    test_options();
    test_sizes();
    test_exhaustion();
    printf("bad_input: OK\n");
    return 0;
}
