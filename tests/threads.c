/*
 * threads — several attached threads allocate, build, rewire (reverse) and
 * verify checksummed lists while another thread forces collections in a
 * loop. Lists are held only in the mutators' stack frames, so every
 * collection must scan the stopped threads' stacks; finished lists are also
 * handed between threads through a shared reference array (release store,
 * acquire load). Mutators sometimes request collections themselves, so
 * collection requests from different threads race.
 *
 * Usage: test_threads [seconds]   (default 3)
 */
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>

#define NMUT    4
#define NLISTS  8
#define NEXCH   16
#define EXCHLEN 100

static atomic_int stop;
static struct refs *exch;          /* conservative root: &exch */
static atomic_ulong collections_forced;

struct mut {
    int           idx;
    uint64_t      rng;
    unsigned long ops, nodes, reversals, published, received;
};

static uint64_t rnd(struct mut *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

static void verify_dir(struct mut *m, const struct tnode *head, uint64_t first, size_t len,
                       int reversed, int k)
{
    size_t i = 0;
    for (const struct tnode *n = head; n; n = n->next, i++) {
        uint64_t want = reversed ? first + len - 1 - i : first + i;
        CHECK(i < len, "thread %d list %d: longer than %zu", m->idx, k, len);
        CHECK(tnode_ok(n, want), "thread %d list %d (%s, %zu nodes): node %zu at %p corrupt: "
              "id %" PRIu64 ", expected %" PRIu64, m->idx, k, reversed ? "reversed" : "forward",
              len, i, (const void *)n, n->id, want);
    }
    CHECK(i == len, "thread %d list %d: %zu nodes, expected %zu", m->idx, k, i, len);
}

static void *mutator(void *arg)
{
    struct mut *m = arg;
    CHECK(lull_thread_attach() == 0, "lull_thread_attach failed");

    struct tnode *lists[NLISTS] = { 0 };
    uint64_t first[NLISTS] = { 0 };
    size_t   len[NLISTS] = { 0 };
    int      reversed[NLISTS] = { 0 };
    uint64_t next_id = ((uint64_t)(m->idx + 1) << 40);

    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        int k = (int)(rnd(m) % NLISTS);
        unsigned op = (unsigned)(rnd(m) % 100);
        if (op < 50 || lists[k] == NULL) {
            size_t n = 50 + (size_t)(rnd(m) % 1500);
            lists[k] = list_build(next_id, n);
            first[k] = next_id;
            len[k] = n;
            reversed[k] = 0;
            next_id += n;
            m->nodes += n;
        } else if (op < 75) {
            lists[k] = list_reverse(lists[k]);
            reversed[k] = !reversed[k];
            m->reversals++;
        } else if (op < 85) {
            /* publish a fresh, never again modified list */
            struct tnode *l = list_build(next_id, EXCHLEN);
            next_id += EXCHLEN;
            m->nodes += EXCHLEN;
            lull_store(exch, &exch->item[rnd(m) % NEXCH], l);
            m->published++;
        } else {
            struct tnode *l = __atomic_load_n((struct tnode **)&exch->item[rnd(m) % NEXCH],
                                              __ATOMIC_ACQUIRE);
            if (l) {
                list_verify(l, l->id, EXCHLEN, "list received from another thread");
                m->received++;
            }
        }
        verify_dir(m, lists[k], first[k], len[k], reversed[k], k);
        if (++m->ops % 16 == 0)
            for (int j = 0; j < NLISTS; j++)
                if (lists[j])
                    verify_dir(m, lists[j], first[j], len[j], reversed[j], j);
        if (m->ops % 200 == 0)
            lull_collect(LULL_GEN_NURSERY);
    }
    for (int j = 0; j < NLISTS; j++)
        if (lists[j])
            verify_dir(m, lists[j], first[j], len[j], reversed[j], j);
    lull_thread_detach();
    return NULL;
}

static void *collector(void *arg)
{
    (void)arg;
    CHECK(lull_thread_attach() == 0, "lull_thread_attach failed");
    for (unsigned long i = 0; !atomic_load(&stop); i++) {
        lull_collect(i % 4 == 0 ? LULL_GEN_MAJOR : LULL_GEN_NURSERY);
        atomic_fetch_add(&collections_forced, 1);
        sleep_ms(1);
    }
    lull_thread_detach();
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 3.0;
    CHECK(lull_init(NULL) == 0, "lull_init failed");
    CHECK(lull_root_add(&exch, sizeof exch) == 0, "lull_root_add failed");
    exch = lull_alloc_array(&refs_type, NEXCH);
    CHECK(exch != NULL, "alloc exch failed");

    lull_stats s0 = get_stats();
    struct mut muts[NMUT];
    pthread_t tm[NMUT], tc;
    for (int i = 0; i < NMUT; i++) {
        memset(&muts[i], 0, sizeof muts[i]);
        muts[i].idx = i;
        muts[i].rng = mix64((uint64_t)i + 1) | 1;
        CHECK(pthread_create(&tm[i], NULL, mutator, &muts[i]) == 0, "pthread_create failed");
    }
    CHECK(pthread_create(&tc, NULL, collector, NULL) == 0, "pthread_create failed");
    sleep_ms((unsigned)(seconds * 1000));
    /* Slow builds (sanitizers): run on until 10 collections were forced. */
    uint64_t give_up = now_ns() + 60ull * 1000000000ull;
    while (atomic_load(&collections_forced) < 10 && now_ns() < give_up)
        sleep_ms(10);
    atomic_store(&stop, 1);
    for (int i = 0; i < NMUT; i++)
        pthread_join(tm[i], NULL);
    pthread_join(tc, NULL);

    lull_collect(LULL_GEN_MAJOR);
    int exchanged = 0;
    for (int i = 0; i < NEXCH; i++) {
        struct tnode *l = exch->item[i];
        if (l) {
            list_verify(l, l->id, EXCHLEN, "exchanged list after the run");
            exchanged++;
        }
    }
    lull_stats s1 = get_stats();
    unsigned long ops = 0, nodes = 0, rev = 0, pub = 0, recv = 0;
    for (int i = 0; i < NMUT; i++) {
        CHECK(muts[i].ops > 0, "mutator %d made no progress", i);
        ops += muts[i].ops;
        nodes += muts[i].nodes;
        rev += muts[i].reversals;
        pub += muts[i].published;
        recv += muts[i].received;
    }
    unsigned long forced = atomic_load(&collections_forced);
    uint64_t colls = (s1.collections_minor + s1.collections_major) -
                     (s0.collections_minor + s0.collections_major);
    CHECK(forced >= 10, "the collector thread forced only %lu collections in %.0f s + 60 s",
          forced, seconds);
    /* Every lull_collect call runs a collection of its own (the mutators'
     * lull_collect and full nurseries add more): none is lost. */
    CHECK(colls >= forced, "lull_stats counts %" PRIu64 " collections, but %lu were forced",
          colls, forced);
    CHECK(pub > 0 && recv > 0 && exchanged > 0, "no exchange between threads: %lu lists published, "
          "%lu received, %d in the table at the end", pub, recv, exchanged);
    printf("threads: ok: %lu ops, %lu nodes, %lu reversals, %lu published, %lu received, "
           "%lu forced collections, %" PRIu64 " collections, %" PRIu64 " pauses, max pause %" PRIu64 " us\n",
           ops, nodes, rev, pub, recv, forced, colls, s1.pauses, s1.pause_max_ns / 1000);

    lull_root_remove(&exch);
    lull_shutdown();
    return 0;
}
