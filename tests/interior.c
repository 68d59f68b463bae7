/*
 * interior — a pointer into the middle of an object, or to its last byte,
 * held only on a stack (the collecting thread's or another stopped
 * thread's), keeps the whole object alive: small objects, small arrays
 * (and what they reference), and large objects.
 *
 * The start of each object is nowhere in memory: the allocating function
 * returns only the interior address and the stack is clobbered. A wrongly
 * freed small object is reused by same-size garbage (or poisoned); a wrongly
 * freed large object loses its pages. Either fails the checksum.
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>

struct blob {
    lull_header h;
    uint64_t    seed;
    uint64_t    w[14];
};

static const lull_type blob_type = {
    .name = "blob128",
    .size = sizeof(struct blob),
};

static bool blob_ok(const struct blob *b, uint64_t seed)
{
    if (b->seed != seed)
        return false;
    for (int i = 0; i < 14; i++)
        if (b->w[i] != mix64(seed + (uint64_t)i))
            return false;
    return true;
}

static NOINLINE struct blob *blob_new(uint64_t seed)
{
    struct blob *b = lull_alloc(&blob_type);
    CHECK(b != NULL, "lull_alloc failed: %s", strerror(errno));
    b->seed = seed;
    for (int i = 0; i < 14; i++)
        b->w[i] = mix64(seed + (uint64_t)i);
    return b;
}

static NOINLINE void churn(void)
{
    for (int i = 0; i < 40000; i++)
        (void)blob_new(0xbad00000u + (uint64_t)i);
    for (int i = 0; i < 2000; i++) {
        struct refs *r = lull_alloc_array(&refs_type, 10);
        CHECK(r != NULL, "lull_alloc_array failed");
        for (int j = 0; j < 10; j++)
            r->item[j] = (void *)(uintptr_t)0x51;   /* non-zero junk in reused slots */
    }
}

static void collect_hard(void)
{
    collect_hard_with(churn);
}

/* Only the interior address leaves this function. */
static NOINLINE char *blob_interior(uint64_t seed, size_t offset)
{
    return (char *)blob_new(seed) + offset;
}

static NOINLINE void test_small(size_t offset, const char *what)
{
    char *volatile p = blob_interior(11 + offset, offset);
    collect_hard();
    struct blob *b = (struct blob *)(p - offset);
    CHECK(blob_ok(b, 11 + offset), "%s (offset %zu of %zu): object did not survive",
          what, offset, sizeof(struct blob));
}

/* A small ref array reached only through a pointer to one of its elements;
 * the nodes it references must survive too. */
#define SMALL_ARRAY 12
static NOINLINE void **array_interior(void)
{
    struct refs *r = lull_alloc_array(&refs_type, SMALL_ARRAY);
    CHECK(r != NULL, "lull_alloc_array failed");
    for (int i = 0; i < SMALL_ARRAY; i++)
        lull_store(r, &r->item[i], tnode_new(500 + (uint64_t)i));
    return &r->item[SMALL_ARRAY / 2];
}

static NOINLINE void test_array(void)
{
    void **volatile p = array_interior();
    collect_hard();
    struct refs *r = (struct refs *)((char *)(p - SMALL_ARRAY / 2) - offsetof(struct refs, item));
    CHECK(lull_array_length(r) == SMALL_ARRAY, "array length %zu, expected %d",
          lull_array_length(r), SMALL_ARRAY);
    CHECK(lull_type_of(r) == &refs_type, "lull_type_of(array) is wrong");
    for (int i = 0; i < SMALL_ARRAY; i++)
        CHECK(tnode_ok(r->item[i], 500 + (uint64_t)i),
              "node %d of an array held by an interior pointer did not survive", i);
}

/* A large object held by a pointer to its last byte / its middle. */
#define LARGE_LEN ((size_t)2 << 20)
static NOINLINE char *large_interior(uint64_t seed, size_t offset)
{
    return (char *)bytes_new(LARGE_LEN, seed) + offset;
}

static NOINLINE void test_large(size_t offset, const char *what)
{
    char *volatile p = large_interior(77 + offset, offset);
    collect_hard();
    bytes_verify((struct bytes *)(p - offset), 77 + offset, LARGE_LEN, what);
}

/* Another thread holds only an interior pointer while it is stopped. */
static atomic_int phase;
static int other_ok;

static NOINLINE void *other(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "attach failed");
    char *volatile p = blob_interior(999, sizeof(struct blob) - 1);
    clobber_stack();
    atomic_store(&phase, 1);
    while (atomic_load(&phase) != 2)
        sleep_ms(1);
    other_ok = blob_ok((struct blob *)(p - (sizeof(struct blob) - 1)), 999);
    lull_thread_detach();
    return NULL;
}

static NOINLINE void test_other_thread(void)
{
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other, NULL) == 0, "pthread_create failed");
    while (atomic_load(&phase) != 1)
        sleep_ms(1);
    collect_hard();
    atomic_store(&phase, 2);
    pthread_join(t, NULL);
    CHECK(other_ok, "object held by another thread only through a pointer to its last byte "
          "did not survive");
}

int main(void)
{
    want_poison();
    CHECK(lull_init(NULL) == 0, "lull_init failed");

    test_small(sizeof(struct blob) / 2, "pointer to the middle of a small object");
    test_small(sizeof(struct blob) - 1, "pointer to the last byte of a small object");
    test_small(sizeof(lull_header), "pointer just past the header of a small object");
    test_array();
    test_large(LARGE_LEN / 2 + 3, "pointer to the middle of a large object");
    test_large(sizeof(struct bytes) + LARGE_LEN - 1, "pointer to the last byte of a large object");
    test_other_thread();

    lull_shutdown();
    printf("interior: ok\n");
    return 0;
}
