/*
 * attach.c — what attaching and detaching a thread costs while the
 * collector is busy.
 *
 * One attached "load" thread allocates request-like garbage all along (a
 * live list of 20,000 nodes it keeps replacing, plus 0.5-16 KiB
 * pointer-free buffers), so that minors, marks and sweeps run while T
 * short-lived threads (--threads, default 2) each do P rounds
 * (P = 5,000 x --scale, at least 50) of: attach, allocate 8 small objects
 * and one 4 KiB buffer (checked), detach. Each attach and each detach is
 * timed on its own.
 *
 *   attach_lull [-v] [--scale F] [--threads N]      (attach_boehm: same)
 *
 * Prints one RESULT line (bench=attach, time_ms = the rounds' phase;
 * checksum= over the rounds' and the load's checked contents) with the
 * extra keys rounds=... attach_p50_us= attach_p99_us= attach_max_us=
 * detach_p50_us= detach_p99_us= detach_max_us= pair_p50_us= pair_p99_us=
 * pair_max_us=, then the PAUSES line. A mismatch exits 1.
 */
#include "gcshim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

enum { LIVE = 20000, SMALL_PER_ROUND = 8, BUF_WORDS = 512, MAX_THREADS = 64 };

typedef struct Node {
    gcshim_header h;
    struct Node *next;
    uint64_t seq;
} Node;
GCSHIM_TYPE(node_type, Node, GCSHIM_REF(Node, next));

typedef struct Buf {
    gcshim_array_header a;
    uint64_t w[];
} Buf;
GCSHIM_ARRAY_TYPE(buf_type, Buf, 8, 0);

typedef struct Ring {
    gcshim_array_header a;
    Node *slot[];
} Ring;
GCSHIM_ARRAY_TYPE(ring_type, Ring, sizeof(Node *), 1);

static int verbose;
static atomic_int stop_load, failed;

static void *load(void *arg)
{
    uint64_t *sum = arg;
    gcshim_thread_attach();
    Ring *ring = gcshim_alloc_array(&ring_type, LIVE);
    uint64_t seq = 0, rng = 0x10AD;
    while (!atomic_load_explicit(&stop_load, memory_order_relaxed)) {
        for (int i = 0; i < 256; i++, seq++) {
            size_t s = seq % LIVE;
            Node *old = ring->slot[s];
            if (old && old->seq != seq - LIVE) {
                fprintf(stderr, "attach: FAILED: load ring slot %zu lost\n", s);
                atomic_store(&failed, 1);
                return NULL;
            }
            Node *n = gcshim_alloc(&node_type);
            n->seq = seq;
            GCSHIM_STORE(ring, &ring->slot[s], n);
        }
        rng = gcshim_mix64(rng);
        size_t words = 64 + rng % (2048 - 64);
        Buf *b = gcshim_alloc_array(&buf_type, words);
        b->w[words - 1] = seq;
    }
    *sum = seq;
    gcshim_thread_detach();
    return NULL;
}

typedef struct Worker {
    pthread_t tid;
    uint64_t rounds;
    uint64_t *attach_ns, *detach_ns;
    uint64_t sum;
} Worker;

static void *round_body(void *arg)
{
    Worker *w = arg;
    uint64_t sum = 0;
    for (uint64_t r = 0; r < w->rounds && !atomic_load(&failed); r++) {
        uint64_t t0 = gcshim_now_ns();
        gcshim_thread_attach();
        uint64_t t1 = gcshim_now_ns();
        Node *head = NULL;
        for (int i = 0; i < SMALL_PER_ROUND; i++) {
            Node *n = gcshim_alloc(&node_type);
            n->seq = r * SMALL_PER_ROUND + (uint64_t)i;
            GCSHIM_SET(n, next, head);
            head = n;
        }
        Buf *b = gcshim_alloc_array(&buf_type, BUF_WORDS);
        for (int i = 0; i < BUF_WORDS; i++)
            b->w[i] = r + (uint64_t)i;
        uint64_t s = 0;
        int count = 0;
        for (Node *n = head; n; n = n->next, count++)
            s += n->seq;
        if (count != SMALL_PER_ROUND || b->w[BUF_WORDS - 1] != r + BUF_WORDS - 1) {
            fprintf(stderr, "attach: FAILED: round %llu lost its objects\n", (unsigned long long)r);
            atomic_store(&failed, 1);
        }
        sum = gcshim_fold(sum, s);
        uint64_t t2 = gcshim_now_ns();
        gcshim_thread_detach();
        uint64_t t3 = gcshim_now_ns();
        w->attach_ns[r] = t1 - t0;
        w->detach_ns[r] = t3 - t2;
    }
    w->sum = sum;
    return NULL;
}

static double at_us(uint64_t *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, gcshim_cmp_u64);
    size_t i = (size_t)(p / 100.0 * (double)n + 0.999999);
    i = i ? i - 1 : 0;
    return v[i < n ? i : n - 1] / 1e3;
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    int threads = 2;
    gcshim_parse_threads_args(argc, argv, &scale, &verbose, &threads, MAX_THREADS);
    uint64_t rounds = (uint64_t)(5000.0 * scale);
    if (rounds < 50)
        rounds = 50;

    gcshim_init();
    pthread_t lt;
    uint64_t load_seq = 0;
    if (pthread_create(&lt, NULL, load, &load_seq) != 0)
        return 1;

    size_t n = rounds * (size_t)threads;
    uint64_t *att = gcshim_check(calloc(n, sizeof *att), "calloc");
    uint64_t *det = gcshim_check(calloc(n, sizeof *det), "calloc");
    uint64_t *pair = gcshim_check(calloc(n, sizeof *pair), "calloc");
    Worker w[MAX_THREADS];
    uint64_t t0 = gcshim_now_ns();
    for (int t = 0; t < threads; t++) {
        w[t].rounds = rounds;
        w[t].attach_ns = att + (size_t)t * rounds;
        w[t].detach_ns = det + (size_t)t * rounds;
        if (pthread_create(&w[t].tid, NULL, round_body, &w[t]) != 0)
            return 1;
    }
    for (int t = 0; t < threads; t++)
        pthread_join(w[t].tid, NULL);
    uint64_t t1 = gcshim_now_ns();
    atomic_store(&stop_load, 1);
    pthread_join(lt, NULL);
    if (atomic_load(&failed))
        return 1;

    uint64_t checksum = 0;
    for (int t = 0; t < threads; t++)
        checksum = gcshim_fold(checksum, w[t].sum);
    for (size_t i = 0; i < n; i++)
        pair[i] = att[i] + det[i];
    char extra[384];
    snprintf(extra, sizeof extra,
             "threads=%d rounds=%llu attach_p50_us=%.1f attach_p99_us=%.1f attach_max_us=%.1f detach_p50_us=%.1f "
             "detach_p99_us=%.1f detach_max_us=%.1f pair_p50_us=%.1f pair_p99_us=%.1f pair_max_us=%.1f load_allocs=%llu",
             threads, (unsigned long long)rounds, at_us(att, n, 50), at_us(att, n, 99), at_us(att, n, 100),
             at_us(det, n, 50), at_us(det, n, 99), at_us(det, n, 100), at_us(pair, n, 50), at_us(pair, n, 99),
             at_us(pair, n, 100), (unsigned long long)load_seq);
    if (verbose)
        fprintf(stderr, "attach: %zu rounds in %.0f ms\n", n, (t1 - t0) / 1e6);
    gcshim_report("attach", t1 - t0, checksum, extra);
    free(att);
    free(det);
    free(pair);
    gcshim_shutdown();
    return 0;
}
