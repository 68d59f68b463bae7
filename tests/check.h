/*
 * check.h — the small helper every test in tests/ includes.
 *
 * CHECK(cond, fmt, ...) prints file:line, the failed condition and a message,
 * then exits with status 1 (with _exit: a failing check in one thread must not
 * run atexit handlers while other threads still use the heap).
 *
 * The rest are helpers the tests share: a checksummed list node, a byte
 * array type, a stack clobber that removes stale pointers before a test
 * asserts that something was collected, and /proc/self/statm reading.
 */
#ifndef LULL_TEST_CHECK_H
#define LULL_TEST_CHECK_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <lull.h>

#define NOINLINE __attribute__((noinline))
#define UNUSED   __attribute__((unused))

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fflush(stdout);                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__,    \
                    #cond);                                                     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            fflush(stderr);                                                     \
            _exit(1);                                                           \
        }                                                                       \
    } while (0)

/* SANITIZED: 1 in an AddressSanitizer or ThreadSanitizer build (gcc or
 * clang), for tests that scale their work or skip a timing bound there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif
/* TSANITIZED: 1 in a ThreadSanitizer build (its shadow memory takes page
 * faults of its own, which drown the counts some tests make). */
#if defined(__SANITIZE_THREAD__)
#define TSANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSANITIZED 1
#endif
#endif
#ifndef TSANITIZED
#define TSANITIZED 0
#endif

/* Conservative stack scanning cannot see AddressSanitizer's fake stacks. */
const char *__asan_default_options(void);
UNUSED const char *__asan_default_options(void)
{
    return "detect_stack_use_after_return=0";
}

static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep until a deadline, in relative slices of at most 10 ms: a single
 * relative nanosleep restarted after each stop-the-world signal would not
 * count the time spent stopped, and an absolute clock_nanosleep is a call
 * in which ThreadSanitizer never delivers the (deferred) suspend signal,
 * so an attached thread sleeping in it would hold up every pause. */
static inline void sleep_ms(unsigned ms)
{
    uint64_t end = now_ns() + (uint64_t)ms * 1000000ull;
    for (uint64_t t; (t = now_ns()) < end;) {
        uint64_t left = end - t, slice = left < 10000000ull ? left : 10000000ull;
        struct timespec ts = { 0, (long)slice };
        nanosleep(&ts, NULL);
    }
}

/* Resident set size of this process, from /proc/self/statm. */
static inline size_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    CHECK(f != NULL, "cannot open /proc/self/statm: %s", strerror(errno));
    CHECK(fscanf(f, "%lu %lu", &size, &resident) == 2, "cannot parse /proc/self/statm");
    fclose(f);
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * Overwrite 64 KiB of the stack below the caller with zeros, so pointers that
 * earlier (deeper) calls left behind are not found by the conservative scan.
 * Used before asserting that something has been collected.
 *
 * On x86-64 the stack pointer is moved down by 64 KiB and everything from
 * there up to the return address into the caller is zeroed: every word
 * below the caller's frame but the return address. A C array would leave
 * the top of this function's own frame (between the array and the return
 * address) as it was, and under AddressSanitizer that gap is the array's
 * right redzone, a few hundred bytes no store ever reaches: a pointer a
 * previous callee spilled there survived every clobber and kept the data
 * tests/stats.c had dropped alive (its check was compiled out under ASan
 * for that reason until issue 13).
 */
#if defined(__x86_64__)
static NOINLINE UNUSED void clobber_stack(void)
{
    __asm__ __volatile__(
        "mov  %%rsp, %%rdx\n\t"
        "sub  $65536, %%rsp\n\t"       /* below the new sp first: a signal   */
        "mov  %%rsp, %%rdi\n\t"        /* handler runs further down, and no  */
        "mov  $8192, %%ecx\n\t"        /* store is below the stack pointer   */
        "xor  %%eax, %%eax\n\t"
        "rep stosq\n\t"                /* [sp - 64 KiB, sp): up to the return address */
        "mov  %%rdx, %%rsp\n\t"
        : : : "rax", "rcx", "rdx", "rdi", "memory", "cc");
}
#else
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address))
#endif
static NOINLINE UNUSED void clobber_stack(void)
{
    volatile uintptr_t buf[8192];
    for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
        buf[i] = 0;
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}
#endif

/* Collect several times with the stack wiped in between, allocating
 * garbage with `churn` so that freed slots are reused (and poisoned data
 * would be seen). */
/* Run fn in a new attached thread while the calling thread is detached:
 * nothing left on the caller's stack is a root meanwhile, so a stale word
 * there cannot keep dropped objects alive or pin one a test expects to move
 * (the scan is conservative). The caller must be attached. */
static void *fresh_thread_main_(void *fn)
{
    CHECK(lull_thread_attach() == 0, "lull_thread_attach in a fresh thread failed");
    clobber_stack();
    ((void (*)(void))fn)();
    lull_thread_detach();
    return NULL;
}

static UNUSED void run_in_fresh_thread(void (*fn)(void))
{
    lull_thread_detach();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fresh_thread_main_, (void *)fn) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    CHECK(lull_thread_attach() == 0, "re-attaching after a fresh thread failed");
}

static NOINLINE UNUSED void collect_hard_with(void (*churn)(void))
{
    for (int i = 0; i < 3; i++) {
        clobber_stack();
        lull_collect(LULL_GEN_MAJOR);
        churn();
    }
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_MAJOR);
}

static inline lull_stats get_stats(void)
{
    lull_stats s;
    memset(&s, 0xa5, sizeof s);
    lull_get_stats(&s);
    return s;
}

/* ---------------------------------------------------------------------- */
/* A checksummed list node.                                                */
/* ---------------------------------------------------------------------- */

struct tnode {
    lull_header   h;
    struct tnode *next;
    uint64_t      id;
    uint64_t      data[4];
    uint64_t      sum;
};

static const lull_type tnode_type UNUSED = {
    .name = "test-node",
    .size = sizeof(struct tnode),
    .refs = LULL_REF(struct tnode, next),
};

static inline uint64_t tnode_sum(const struct tnode *n)
{
    uint64_t s = mix64(n->id ^ 0x5eed);
    for (int i = 0; i < 4; i++)
        s = mix64(s ^ n->data[i]);
    return s;
}

static inline void tnode_fill(struct tnode *n, uint64_t id)
{
    n->id = id;
    for (int i = 0; i < 4; i++)
        n->data[i] = mix64(id * 4 + (uint64_t)i);
    n->sum = tnode_sum(n);
}

static inline bool tnode_ok(const struct tnode *n, uint64_t id)
{
    if (n == NULL || n->id != id || n->sum != tnode_sum(n))
        return false;
    for (int i = 0; i < 4; i++)
        if (n->data[i] != mix64(id * 4 + (uint64_t)i))
            return false;
    return true;
}

static inline struct tnode *tnode_new(uint64_t id)
{
    struct tnode *n = lull_alloc(&tnode_type);
    CHECK(n != NULL, "lull_alloc(tnode) failed: %s", strerror(errno));
    CHECK(n->next == NULL && n->id == 0 && n->data[0] == 0 && n->sum == 0,
          "lull_alloc returned non-zeroed memory at %p: next %p id %" PRIu64 " data[0] %#" PRIx64
          " sum %#" PRIx64, (void *)n, (void *)n->next, n->id, n->data[0], n->sum);
    CHECK(lull_type_of(n) == &tnode_type, "lull_type_of(new node) is %p, not %p",
          (const void *)lull_type_of(n), (const void *)&tnode_type);
    tnode_fill(n, id);
    return n;
}

/* Build a list of `count` nodes with ids first, first+1, ... in list order. */
static inline struct tnode *list_build(uint64_t first, size_t count)
{
    struct tnode *head = NULL, *tail = NULL;
    for (size_t i = 0; i < count; i++) {
        struct tnode *n = tnode_new(first + i);
        if (tail)
            LULL_SET(tail, next, n);
        else
            head = n;
        tail = n;
    }
    return head;
}

/* Abort the test unless the list has exactly `count` intact nodes with ids
 * first, first+1, ... */
/* Reverse a list in place with barriered stores; returns the new head. */
static inline UNUSED struct tnode *list_reverse(struct tnode *head)
{
    struct tnode *prev = NULL;
    while (head) {
        struct tnode *next = head->next;
        LULL_SET(head, next, prev);
        prev = head;
        head = next;
    }
    return prev;
}

static inline void list_verify(const struct tnode *head, uint64_t first, size_t count,
                               const char *what)
{
    size_t i = 0;
    for (const struct tnode *n = head; n != NULL; n = n->next, i++) {
        CHECK(i < count, "%s: list longer than %zu nodes", what, count);
        CHECK(tnode_ok(n, first + i),
              "%s: node %zu of %zu (at %p) is corrupt: id %" PRIu64 " (expected %" PRIu64
              "), sum %s", what, i, count, (const void *)n, n->id, first + i,
              n->sum == tnode_sum(n) ? "matches" : "does not match");
    }
    CHECK(i == count, "%s: list has %zu nodes, expected %zu", what, i, count);
}

/* ---------------------------------------------------------------------- */
/* Pointer-free byte arrays and reference arrays.                          */
/* ---------------------------------------------------------------------- */

struct bytes {
    lull_array_header a;
    unsigned char     b[];
};

static const lull_type bytes_type UNUSED = {
    .name = "test-bytes",
    .size = sizeof(struct bytes),
    .elem_size = 1,
};

/* A pointer-free object of `bytes` straight into the major heap
 * (lull_alloc_pinned; lull_alloc puts objects of up to 8 KiB in the
 * nursery): garbage that counts against the major heap's allowance at
 * once, as promoted objects do. Sizes from 64 bytes to 8 KiB, in steps
 * of 64 (one type per step). */
#define MAJOR_BLOB_STEP 64u
#define MAJOR_BLOB_MAX  8192u
static lull_type major_blob_types[MAJOR_BLOB_MAX / MAJOR_BLOB_STEP];
static pthread_once_t major_blob_once = PTHREAD_ONCE_INIT;

static void major_blob_init(void)
{
    for (size_t i = 0; i < MAJOR_BLOB_MAX / MAJOR_BLOB_STEP; i++)
        major_blob_types[i] = (lull_type){ .name = "test-major-blob", .size = (i + 1) * MAJOR_BLOB_STEP };
}

/* The types are made once for every thread that calls (pthread_once): a
 * type written while another thread allocates with it would be a data
 * race (ThreadSanitizer saw two threads make the same one at once). */
static UNUSED void *major_blob(size_t bytes)
{
    pthread_once(&major_blob_once, major_blob_init);
    size_t i = (bytes + MAJOR_BLOB_STEP - 1) / MAJOR_BLOB_STEP;
    i = i < 1 ? 1 : i > MAJOR_BLOB_MAX / MAJOR_BLOB_STEP ? MAJOR_BLOB_MAX / MAJOR_BLOB_STEP : i;
    return lull_alloc_pinned(&major_blob_types[i - 1]);
}

struct refs {
    lull_array_header a;
    void             *item[];
};

static const lull_type refs_type UNUSED = {
    .name = "test-refs",
    .size = sizeof(struct refs),
    .elem_size = sizeof(void *),
    .elem_refs = 1,
};

/* Fill a byte array with a pattern derived from `seed` (touches every page). */
static inline void bytes_fill(struct bytes *b, uint64_t seed)
{
    size_t n = b->a.length;
    size_t words = n / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w = mix64(seed + i);
        memcpy(b->b + i * 8, &w, 8);
    }
    for (size_t i = words * 8; i < n; i++)
        b->b[i] = (unsigned char)mix64(seed ^ (i << 20));
}

/* Index of the first byte that differs from the pattern, or SIZE_MAX. */
static inline size_t bytes_bad(const struct bytes *b, uint64_t seed, size_t length)
{
    if (b->a.length != length)
        return 0;
    size_t words = length / 8;
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, b->b + i * 8, 8);
        if (w != mix64(seed + i))
            return i * 8;
    }
    for (size_t i = words * 8; i < length; i++)
        if (b->b[i] != (unsigned char)mix64(seed ^ (i << 20)))
            return i;
    return SIZE_MAX;
}

static inline struct bytes *bytes_new(size_t length, uint64_t seed)
{
    struct bytes *b = lull_alloc_array(&bytes_type, length);
    CHECK(b != NULL, "lull_alloc_array(bytes, %zu) failed: %s", length, strerror(errno));
    CHECK(lull_array_length(b) == length, "lull_array_length = %zu, expected %zu",
          lull_array_length(b), length);
    bytes_fill(b, seed);
    return b;
}

static inline void bytes_verify(const struct bytes *b, uint64_t seed, size_t length,
                                const char *what)
{
    size_t bad = bytes_bad(b, seed, length);
    CHECK(bad == SIZE_MAX, "%s: byte array at %p (length %zu, header says %zu) corrupt at byte %zu",
          what, (const void *)b, length, b->a.length, bad);
}

/* Set LULL_GC_DEBUG=poison unless the environment already chose debug
 * options: freed memory is then overwritten, so a wrongly freed object is
 * detected by its checksum at once. */
static inline void want_poison(void)
{
    setenv("LULL_GC_DEBUG", "poison", 0);
}


/* ---------------------------------------------------------------------- */
/* Capturing this process's stderr (lull's warnings) around a call.        */
/* ---------------------------------------------------------------------- */

static FILE *cap_file;
static int   cap_saved = -1;
static char  cap_buf[65536];

static UNUSED void capture_begin(void)
{
    fflush(stderr);
    cap_file = tmpfile();
    CHECK(cap_file != NULL, "tmpfile failed");
    cap_saved = dup(2);
    CHECK(cap_saved >= 0 && dup2(fileno(cap_file), 2) == 2, "dup2 failed");
}

static UNUSED const char *capture_end(void)
{
    fflush(stderr);
    dup2(cap_saved, 2);
    close(cap_saved);
    rewind(cap_file);
    size_t n = fread(cap_buf, 1, sizeof cap_buf - 1, cap_file);
    cap_buf[n] = 0;
    fclose(cap_file);
    return cap_buf;
}

/* Whether a concurrent mark runs (between its initial and its final pause),
 * kept by mark_running_hook once installed with lull_set_pause_hook. */
static volatile int mark_running UNUSED;

static UNUSED void mark_running_hook(const lull_pause_event *ev, void *data)
{
    (void)data;
    if (ev->phase == LULL_PHASE_INITIAL)
        mark_running = 1;
    else if (ev->phase == LULL_PHASE_FINAL)
        mark_running = 0;
}

/* ---------------------------------------------------------------------- */
/* A fragmented heap (tests/fragmented.c, tests/idle_major.c).             */
/* ---------------------------------------------------------------------- */

struct fitem {
    lull_header   h;
    struct fitem *next;
    uint64_t      id, check;
};

static const lull_type fitem_type UNUSED = {
    .name = "test-fitem", .size = sizeof(struct fitem), .refs = LULL_REF(struct fitem, next),
};

/* n small objects promoted in allocation order, then one in `every` kept
 * in a new reference array stored in *keep (a precise root) and the rest
 * dropped: every block keeps that share of its slots. Run it in a fresh
 * thread (run_in_fresh_thread), so that no stack word keeps the rest. */
static NOINLINE UNUSED void fragment_heap(uint32_t n, uint32_t every, struct refs *volatile *keep)
{
    struct refs *all = lull_alloc_array(&refs_type, n);
    CHECK(all, "lull_alloc_array");
    for (uint32_t i = 0; i < n; i++) {
        struct fitem *it = lull_alloc(&fitem_type);
        CHECK(it, "lull_alloc");
        it->id = i;
        it->check = mix64(i);
        lull_store(all, &all->item[i], it);
    }
    lull_collect(LULL_GEN_NURSERY);       /* promoted, in allocation order */
    struct refs *k = lull_alloc_array(&refs_type, n / every);
    CHECK(k, "lull_alloc_array");
    *keep = k;
    for (uint32_t i = 0; i < n; i += every)
        lull_store(k, &k->item[i / every], all->item[i]);
}

/* What fragment_heap kept is intact. */
static UNUSED void fragment_verify(uint32_t n, uint32_t every, const struct refs *keep, const char *when)
{
    for (uint32_t i = 0; i < n / every; i++) {
        const struct fitem *it = keep->item[i];
        CHECK(it && it->id == (uint64_t)i * every && it->check == mix64((uint64_t)i * every),
              "%s: item %u is wrong", when, i * every);
    }
}

#endif /* LULL_TEST_CHECK_H */
