/*
 * no_gc_region — lull_no_gc_region_begin/_end:
 *
 *  - inside a region lull_idle and lull_collect_step run no pause, and an
 *    explicit lull_collect ends it (end returns 1);
 *  - errors: -EPERM before lull_init; -EINVAL for 0 bytes;
 *    -EBUSY while one is open (from another thread too); end outside a
 *    region -EINVAL; -ENOMEM for more than max-heap-size can take, while
 *    a region it can take opens;
 *  - 4 threads, ROUNDS regions: in each, the threads together allocate
 *    exactly what the region promised (small objects in the nursery, a
 *    3 KiB one straight into the major heap, stores into old objects), then the
 *    region ends; between regions they allocate enough to make minors and
 *    majors run, and every 50th round a concurrent major is started, so
 *    marks run across regions. The pause hook sees no pause while a region
 *    is open, every end returns 0, lull_stats counts ROUNDS regions and
 *    none overrun, and collections did run between them;
 *  - a region larger than the nursery holds too (small objects go to the
 *    major heap once it is full);
 *  - a region the program allocates far past ends with a collection:
 *    end returns 1, regions_overrun counts it.
 *
 *   test_no_gc_region [rounds]   (1000; 250 under sanitizers)
 */
#include "check.h"

#include <stdatomic.h>

#define THREADS     4
#define RING        512                /* nodes each thread keeps */
#define PER_THREAD  ((size_t)48 << 10)  /* promised per thread per region */
#define BETWEEN     ((size_t)96 << 10)  /* allocated per thread between regions */


static atomic_int in_region;           /* set after begin returned 0, cleared before end */
static atomic_ulong pauses_inside, pauses_all;
/* A barrier the collector's stop signal can interrupt: the threads wait
 * in short sleeps (under ThreadSanitizer a thread blocked in
 * pthread_barrier_wait would not take the signal while another thread's
 * collection waits for it to stop). */
static atomic_uint bar_count, bar_gen;
static void barrier(void)
{
    unsigned gen = atomic_load(&bar_gen);
    if (atomic_fetch_add(&bar_count, 1) + 1 == THREADS) {
        atomic_store(&bar_count, 0);
        atomic_fetch_add(&bar_gen, 1);
        return;
    }
    while (atomic_load(&bar_gen) == gen) {
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
}
static struct tnode *rings[THREADS][RING];
/* Under a sanitizer a quarter of the rounds: the same paths, in time. */
static unsigned rounds = SANITIZED ? 250 : 1000;

static void hook(const lull_pause_event *ev, void *data)
{
    (void)ev;
    (void)data;
    atomic_fetch_add(&pauses_all, 1);
    if (atomic_load(&in_region))
        atomic_fetch_add(&pauses_inside, 1);
}

/* Allocate `bytes` (counted as lull counts: object sizes, multiples of
 * 16 here) of nodes kept in the ring and linked from older ones, and a
 * 3 KiB blob straight into the major heap. */
static NOINLINE void allocate(int id, size_t bytes, uint64_t *seq)
{
    size_t blob = 3072;
    size_t done = 0;
    if (bytes >= 2 * blob) {
        char *b = major_blob(blob);
        CHECK(b != NULL, "blob");
        done += blob;
    }
    while (done + sizeof(struct tnode) <= bytes) {
        struct tnode *n = tnode_new(*seq);
        size_t slot = (size_t)(*seq % RING);
        struct tnode *old = rings[id][(slot + 1) % RING];
        if (old)
            lull_store(old, &old->next, n);      /* old to young: a card */
        rings[id][slot] = n;
        ++*seq;
        done += sizeof(struct tnode);
    }
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    uint64_t seq = 1;
    for (unsigned r = 0; r < rounds; r++) {
        barrier();     /* everyone's allocation between regions is done */
        if (id == 0) {
            if (r % 50 == 25)
                lull_collect_start();
            int rc = lull_no_gc_region_begin(THREADS * PER_THREAD);
            CHECK(rc == 0, "round %u: begin returned %d", r, rc);
            atomic_store(&in_region, 1);
        }
        barrier();
        allocate(id, PER_THREAD, &seq);
        barrier();
        if (id == 0) {
            atomic_store(&in_region, 0);
            int rc = lull_no_gc_region_end();
            CHECK(rc == 0, "round %u: end returned %d (a collection ran inside the region)", r, rc);
        }
        barrier();
        allocate(id, BETWEEN, &seq);
    }
    for (size_t i = 0; i < RING; i++)
        CHECK(rings[id][i] == NULL || tnode_ok(rings[id][i], rings[id][i]->id), "ring node %zu broken", i);
    lull_thread_detach();
    return NULL;
}

static void *try_begin(void *arg)
{
    (void)arg;
    *(int *)arg = lull_no_gc_region_begin(4096);   /* not attached: allowed */
    return NULL;
}

static void errors(void)
{
    CHECK(lull_no_gc_region_begin(0) == -EINVAL, "begin(0)");
    CHECK(lull_no_gc_region_end() == -EINVAL, "end outside a region");
    CHECK(lull_no_gc_region_begin(1 << 20) == 0, "begin");
    CHECK(lull_no_gc_region_begin(1 << 20) == -EBUSY, "begin inside a region");
    int rc = 0;
    pthread_t th;
    pthread_create(&th, NULL, try_begin, &rc);
    pthread_join(th, NULL);
    CHECK(rc == -EBUSY, "begin from another thread inside a region: %d", rc);
    CHECK(lull_no_gc_region_end() == 0, "end");
    CHECK(lull_no_gc_region_end() == -EINVAL, "end twice");

    /* Inside a region lull_idle and lull_collect_step run no pause; an
     * explicit lull_collect runs, and ends the region there. */
    lull_stats s0 = get_stats();
    CHECK(lull_no_gc_region_begin(1 << 20) == 0, "begin");
    lull_stats s1 = get_stats();
    CHECK(lull_idle(1000000000) == 0, "lull_idle collected inside a region");
    int did = lull_collect_step(10000000);
    CHECK(did >= 0 && !(did & LULL_STEP_PAUSE), "lull_collect_step paused inside a region (%d)", did);
    CHECK(get_stats().pauses == s1.pauses, "a pause inside the region");
    CHECK(lull_no_gc_region_end() == 0, "end after idle and step");
    CHECK(lull_no_gc_region_begin(1 << 20) == 0, "begin");
    lull_collect(LULL_GEN_NURSERY);
    CHECK(lull_no_gc_region_end() == 1, "end after an explicit collection");
    lull_stats s2 = get_stats();
    CHECK(s2.regions == s0.regions + 2 && s2.regions_overrun == s0.regions_overrun + 1, "regions counted");
}

static void many_regions(void)
{
    lull_set_pause_hook(hook, NULL);
    lull_stats s0 = get_stats();
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    lull_stats s = get_stats();
    printf("%u regions: %lu pauses in all, %lu inside regions; %" PRIu64 " minors, %" PRIu64 " majors\n", rounds,
           atomic_load(&pauses_all), atomic_load(&pauses_inside), s.collections_minor - s0.collections_minor,
           s.collections_major - s0.collections_major);
    CHECK(atomic_load(&pauses_inside) == 0, "%lu pauses inside regions", atomic_load(&pauses_inside));
    CHECK(s.regions - s0.regions == rounds, "regions %" PRIu64, s.regions - s0.regions);
    CHECK(s.regions_overrun == s0.regions_overrun, "regions overrun");
    CHECK(rounds < 100 || s.collections_minor - s0.collections_minor >= 10, "too few minors between regions");
    CHECK(rounds < 100 || s.collections_major > s0.collections_major, "no major between regions");
    lull_set_pause_hook(NULL, NULL);
}

/* 24 MiB in a region, past the nursery's 4 MiB: no pause, end returns 0. */
static void large_region(void)
{
    lull_set_pause_hook(hook, NULL);
    atomic_store(&pauses_all, 0);
    size_t bytes = (size_t)24 << 20;
    CHECK(lull_no_gc_region_begin(bytes) == 0, "begin 24 MiB");
    unsigned long before = atomic_load(&pauses_all);
    uint64_t seq = 1;
    allocate(0, bytes, &seq);
    CHECK(atomic_load(&pauses_all) == before, "a pause in a region larger than the nursery");
    CHECK(lull_no_gc_region_end() == 0, "end of the 24 MiB region");
    lull_set_pause_hook(NULL, NULL);
}

/* A done mark's final pause is not run by stores inside a region (the
 * barrier's slow path would run it for a program that only stores). */
static const lull_type ref_array_type = { .name = "ref-array", .size = 16, .elem_size = sizeof(void *), .elem_refs = 1 };
static void *refs_root;
static void stores_in_region(void)
{
    lull_root_add_refs(&refs_root, 1);
    void **a = lull_alloc_array(&ref_array_type, 1024);
    refs_root = a;
    for (int i = 0; i < RING; i++)           /* something to mark: 32 KiB lists */
        rings[0][i] = list_build((uint64_t)i << 20, 512);
    lull_collect(LULL_GEN_MAJOR);            /* old now, and no mark runs */
    a = refs_root;
    /* The mark runs when the region opens, and its background work ends
     * inside it (begin would have ended a done mark first: then again). */
    for (int tries = 0;; tries++) {
        CHECK(tries < 20, "every mark ended before the region began");
        uint64_t majors = get_stats().collections_major;
        CHECK(lull_collect_start() == 0, "start");
        CHECK(lull_no_gc_region_begin(1 << 20) == 0, "begin");
        if (get_stats().collections_major == majors)
            break;
        CHECK(lull_no_gc_region_end() == 0, "end");
    }
    for (int i = 0; i < 20000 && !(lull_major_due() & LULL_MAJOR_FINAL_DUE); i++)
        sleep_ms(1);
    CHECK(lull_major_due() & LULL_MAJOR_FINAL_DUE, "the mark never finished its background work");
    lull_stats s1 = get_stats();
    for (int r = 0; r < 200; r++)
        for (size_t i = 1; i < 1024; i++)
            lull_store(a, &a[2 + i % 1022], a);
    lull_stats s2 = get_stats();
    CHECK(s2.pauses == s1.pauses, "a pause ran for stores inside the region");
    CHECK(lull_no_gc_region_end() == 0, "end after the stores");
    lull_root_remove(&refs_root);
    refs_root = NULL;
}

/* Promise 64 KiB, allocate 64 MiB: a collection ends the region. */
static void overrun(void)
{
    lull_stats s0 = get_stats();
    CHECK(lull_no_gc_region_begin(64 << 10) == 0, "begin");
    uint64_t seq = 1;
    allocate(0, (size_t)64 << 20, &seq);
    lull_stats s1 = get_stats();
    CHECK(s1.pauses > s0.pauses, "no collection past the region's bytes");
    CHECK(lull_no_gc_region_end() == 1, "end after an overrun");
    lull_stats s = get_stats();
    CHECK(s.regions_overrun == s0.regions_overrun + 1, "regions_overrun");
}

/* max-heap-size 64 MiB: 1 GiB cannot be promised, 8 MiB can. */
static void too_big(void)
{
    CHECK(lull_init("max-heap-size=64m") == 0, "init");
    CHECK(lull_no_gc_region_begin((size_t)1 << 30) == -ENOMEM, "1 GiB under max-heap-size=64m");
    CHECK(lull_no_gc_region_begin((size_t)60 << 20) == -ENOMEM, "60 MiB under max-heap-size=64m");
    CHECK(lull_no_gc_region_begin((size_t)8 << 20) == 0, "8 MiB under max-heap-size=64m");
    uint64_t seq = 1;
    memset(rings, 0, sizeof rings);
    allocate(0, (size_t)8 << 20, &seq);
    CHECK(lull_no_gc_region_end() == 0, "8 MiB held under max-heap-size=64m");
    memset(rings, 0, sizeof rings);
    lull_shutdown();
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = (unsigned)atoi(argv[1]);
    CHECK(lull_no_gc_region_begin(4096) == -EPERM, "begin before lull_init");
    CHECK(lull_no_gc_region_end() == -EPERM, "end before lull_init");
    CHECK(lull_init(NULL) == 0, "init");
    lull_root_add_refs((void **)rings, sizeof rings / sizeof(void *));
    errors();
    many_regions();
    large_region();
    stores_in_region();
    overrun();
    lull_root_remove(rings);
    memset(rings, 0, sizeof rings);
    lull_shutdown();
    too_big();
    printf("ok\n");
    return 0;
}
