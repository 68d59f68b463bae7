/*
 * disguised — the object a thread allocated last survives a collection
 * even when no register or stack word points at it.
 *
 * The bug this reproduces: stress_hide lost objects, about one run in 40
 * under load. Its garbage loop fills each new object with
 *
 *     for (i = 0; i < len; i++) o->payload[i] = stress_payload(id, i);
 *
 * and gcc (-O2 and -O3) compiled the loop's store as 0x38(%rsi,%rcx,8) with
 * rsi = o - 248 * id and rcx = 31 * id + 1 + i: no register held an
 * address inside the object. A thread stopped in that loop left the object
 * unpinned: the minor freed it, another thread's TLAB was cut from its
 * memory, and the stopped thread, once restarted, wrote the rest of its
 * payload over that thread's new objects. A conservative collector cannot
 * see through such arithmetic in general; it can see that the object a
 * thread allocated last is the one such a loop is most likely filling.
 * So each thread's last allocation is a root (threads.h): in its TLAB
 * (the word below its allocation pointer: also a 2-8 KiB object, which
 * the slow path bumps there) and out of it (a large one).
 *
 * The check, for a nursery object, a 2-8 KiB object and a large one, with
 * a minor and with a major: a thread allocates it, fills it, keeps only a
 * WEAK handle and its address XORed with a key, scrubs its stack and
 * spins; the main thread collects. The handle must still name the object,
 * unmoved, its contents intact. Without the rule each case's handle is
 * cleared: nothing else referred to the object. A thread that collects itself is inside lull, and its
 * last allocations are no roots then (threads.h: in_gc_lock).
 *
 * Usage: test_disguised [LULL_GC_PARAMS]
 */
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

struct blob {
    lull_array_header a;
    uint64_t w[];
};

static const lull_type blob_type = {
    .name = "disguised-blob", .size = sizeof(struct blob), .elem_size = sizeof(uint64_t),
};

#define KEY ((uintptr_t)0x5bd1e9955bd1e995ull)

static volatile uintptr_t hidden;
static volatile lull_handle weak;

/* Allocate and fill; leave behind only the disguised address and a WEAK
 * handle (a handle's slot holds no address the conservative scan sees). */
static NOINLINE void make(size_t len, uint64_t seed)
{
    struct blob *o = lull_alloc_array(&blob_type, len);
    CHECK(o, "allocating %zu words: %s", len, strerror(errno));
    for (size_t i = 0; i < len; i++)
        o->w[i] = seed * 1000003u + i;
    weak = lull_handle_new(o, LULL_HANDLE_WEAK);
    CHECK(weak, "lull_handle_new");
    hidden = (uintptr_t)o ^ KEY;
}

static NOINLINE void scrub(void)
{
    volatile uintptr_t buf[4096];
    for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
        buf[i] = 0;
}

/* 1 if the object is still there, unmoved and intact; else says why. */
static NOINLINE int kept(const char *what, int gen, size_t len, uint64_t seed)
{
    const char *g = gen == LULL_GEN_MAJOR ? "major" : "minor";
    struct blob *o = (struct blob *)(hidden ^ KEY);
    void *now = lull_handle_get(weak);
    lull_handle_free(weak);
    if (!now) {
        fprintf(stderr, "disguised: %s after a %s: its WEAK handle was cleared: the collection freed the "
                "object its thread allocated last\n", what, g);
        return 0;
    }
    if (now != (void *)o) {
        fprintf(stderr, "disguised: %s after a %s: moved from %p to %p while its thread may still be writing "
                "it\n", what, g, (void *)o, now);
        return 0;
    }
    CHECK(o->a.length == len, "%s: length %zu, expected %zu", what, o->a.length, len);
    for (size_t i = 0; i < len; i++)
        CHECK(o->w[i] == seed * 1000003u + i, "%s: word %zu overwritten", what, i);
    return 1;
}

static const struct {
    const char *what;
    size_t len;
} kinds[] = {
    { "a nursery object (40 words)", 40 },
    { "a 2-8 KiB object (600 words)", 600 },
    { "a large object (16,000 words)", 16000 },
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* The mutator and the collecting thread take turns through `turn`: odd,
 * the mutator has made case turn/2 and spins; even, it was collected. */
static volatile int turn;
static int lost;

static void *mutator(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "lull_thread_attach");
    uint64_t seed = 1;
    for (int gen = LULL_GEN_NURSERY; gen <= LULL_GEN_MAJOR; gen++) {
        for (size_t k = 0; k < NKINDS; k++, seed++) {
            make(kinds[k].len, seed);
            scrub();
            int t = __atomic_add_fetch(&turn, 1, __ATOMIC_ACQ_REL);
            /* Stopped here, outside lull, by the collecting thread: spin
             * without a pointer to the object anywhere. */
            while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) == t)
                ;
            lost += !kept(kinds[k].what, gen, kinds[k].len, seed);
        }
    }
    lull_thread_detach();
    return NULL;
}

int main(int argc, char **argv)
{
    const char *params = argc > 1 ? argv[1] : "";
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, mutator, NULL) == 0, "pthread_create");
    int t = 0;
    for (int gen = LULL_GEN_NURSERY; gen <= LULL_GEN_MAJOR; gen++) {
        for (size_t k = 0; k < NKINDS; k++) {
            while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) == t)
                sched_yield();
            lull_collect(gen);
            t = __atomic_add_fetch(&turn, 1, __ATOMIC_ACQ_REL);
        }
    }
    pthread_join(th, NULL);
    lull_shutdown();
    CHECK(!lost, "%d of %zu objects lost (%s)", lost, 2 * NKINDS, params[0] ? params : "defaults");
    printf("disguised: ok (%s)\n", params[0] ? params : "defaults");
    return 0;
}
