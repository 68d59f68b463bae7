/*
 * alloc.c — the cost of one small allocation, against malloc as a baseline.
 *
 * Four timed loops of N iterations each (N = 20,000,000 x --scale):
 *
 *   ns_per_alloc         allocate a 32-byte object with one reference field
 *   ns_per_alloc_atomic  allocate a 32-byte pointer-free object
 *   ns_per_malloc_free   malloc(32) then free() at once (baseline)
 *   ns_per_malloc_ring   malloc(32), free the block allocated 64 iterations
 *                        earlier (baseline with the same trickle as below)
 *
 * In the two collector loops every new object replaces the oldest entry of
 * a 64-slot ring (a collector-allocated array of references held by a
 * local, stored into with GCSHIM_STORE), so the compiler cannot drop the
 * allocation and a realistic trickle of objects survives until the next
 * collection; the figure therefore includes one array store (lull: its
 * write barrier). The malloc ring loop keeps a plain 64-slot array the same
 * way. Every loop checks the entry it drops (its sequence number must be
 * the one stored 64 iterations earlier) and the rings are checked at the
 * end; a mismatch means a live object was lost or reused, and the program
 * exits 1. Each loop runs N/10 warm-up iterations first.
 *
 * Then scaling: for small (the 32-byte Cell), medium (pointer-free arrays
 * of 2-8 KiB) and large (16-256 KiB) objects, one attached thread and then
 * two each make the same number of allocations (small N/4, medium N/100,
 * large N/2000) through a ring of their own, writing and checking the
 * first and last words of each (a mismatch exits 1); the figure is
 * allocations per second over the wall time of all threads, and the
 * 2-thread figure over the 1-thread one (2.0: perfect scaling).
 *
 *   alloc_lull [-v] [--scale F]      (alloc_boehm: same)
 *
 * Prints one RESULT line (bench=alloc, time_ms = the whole run including
 * warm-ups; checksum= over the sequence numbers and tags left in the two
 * collector rings) with the extra keys allocs=N ns_per_alloc=... ns_per_alloc_atomic=...
 * ns_per_malloc_free=... ns_per_malloc_ring=... and, per size
 * (small, medium, large), <size>_t1_kps= <size>_t2_kps= (thousands of
 * allocations per second) and <size>_scaling= (t2 / t1), then the PAUSES
 * line.
 */
#include "gcshim.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

enum { RING = 64 };                  /* a power of two */

/* 32 bytes with one reference field. */
typedef struct Cell {
    gcshim_header h;
    struct Cell *link;
    uint64_t seq, tag;
} Cell;
GCSHIM_TYPE(cell_type, Cell, GCSHIM_REF(Cell, link));

/* 32 bytes, pointer-free. */
typedef struct Atom {
    gcshim_header h;
    uint64_t seq, tag, pad;
} Atom;
GCSHIM_TYPE(atom_type, Atom, 0);

/* The ring of the last RING objects: an array of references. */
typedef struct Ring {
    gcshim_array_header a;
    void *slot[];
} Ring;
GCSHIM_ARRAY_TYPE(ring_type, Ring, sizeof(void *), 1);

/* The malloc baseline's 32-byte block. */
typedef struct Plain {
    uint64_t seq, tag, pad[2];
} Plain;

_Static_assert(sizeof(Cell) == 32 && sizeof(Atom) == 32 && sizeof(Plain) == 32, "32-byte objects");
_Static_assert(offsetof(Cell, tag) == offsetof(Cell, seq) + 8 && offsetof(Atom, tag) == offsetof(Atom, seq) + 8 &&
               offsetof(Plain, tag) == offsetof(Plain, seq) + 8, "check_ring reads the tag after seq");

static int verbose;

/* A tag that depends on the sequence number, to tell a live object from a
 * reused slot that happens to hold a plausible sequence number. */
static inline uint64_t tag_of(uint64_t seq) { return seq * 0x9E3779B97F4A7C15u ^ 0xA110Cu; }

/* Make `p` visible to the compiler as used, so an allocation and its free
 * cannot be elided. */
static inline void escape(void *p) { __asm__ __volatile__("" : : "r"(p) : "memory"); }

__attribute__((noinline, cold, noreturn))
static void lost(const char *what, uint64_t seq, uint64_t found_seq, uint64_t found_tag)
{
    fprintf(stderr, "alloc: FAILED: %s: the object of sequence number %llu reads seq %llu tag %#llx "
            "(expected tag %#llx): live data lost\n", what, (unsigned long long)seq,
            (unsigned long long)found_seq, (unsigned long long)found_tag, (unsigned long long)tag_of(seq));
    exit(1);
}

/* Sequence numbers i in [from, to): object i goes into ring slot i % RING,
 * replacing object i - RING (if i >= RING). */
static void cell_loop(Ring *ring, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        Cell *c = gcshim_alloc(&cell_type);
        c->seq = i;
        c->tag = tag_of(i);
        Cell *old = ring->slot[i % RING];
        if (__builtin_expect(i >= RING && (old->seq != i - RING || old->tag != tag_of(i - RING)), 0))
            lost("refs ring", i - RING, old->seq, old->tag);
        GCSHIM_STORE(ring, &ring->slot[i % RING], c);
    }
}

static void atom_loop(Ring *ring, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        Atom *a = gcshim_alloc(&atom_type);
        a->seq = i;
        a->tag = tag_of(i);
        Atom *old = ring->slot[i % RING];
        if (__builtin_expect(i >= RING && (old->seq != i - RING || old->tag != tag_of(i - RING)), 0))
            lost("pointer-free ring", i - RING, old->seq, old->tag);
        GCSHIM_STORE(ring, &ring->slot[i % RING], a);
    }
}

static void malloc_free_loop(uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        Plain *p = gcshim_check(malloc(sizeof(Plain)), "malloc");
        p->seq = i;
        escape(p);
        free(p);
    }
}

static void malloc_ring_loop(Plain **ring, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        Plain *p = gcshim_check(malloc(sizeof(Plain)), "malloc");
        p->seq = i;
        p->tag = tag_of(i);
        Plain *old = ring[i % RING];
        if (i >= RING) {
            if (__builtin_expect(old->seq != i - RING || old->tag != tag_of(i - RING), 0))
                lost("malloc ring", i - RING, old->seq, old->tag);
            free(old);
        }
        ring[i % RING] = p;
    }
}

/* The objects left in a ring after sequence numbers [0, end) went through
 * it; `seq_offset` is the offset of their seq field (the tag follows it). */
static uint64_t check_ring(const char *what, void *const *slot, uint64_t end, size_t seq_offset, uint64_t sum)
{
    for (uint64_t i = end - RING; i < end; i++) {
        const uint64_t *f = (const uint64_t *)((const char *)slot[i % RING] + seq_offset);
        if (f[0] != i || f[1] != tag_of(i))
            lost(what, i, f[0], f[1]);
        sum = gcshim_fold(gcshim_fold(sum, f[0]), f[1]);
    }
    return sum;
}

/* Scaling: one size's loop, run by each of T threads at once. */
typedef struct Scale {
    pthread_t tid;
    unsigned kind;             /* 0 small, 1 medium, 2 large */
    uint64_t count, seed, sum;
    pthread_barrier_t *start;
} Scale;

typedef struct Bytes {
    gcshim_array_header a;
    uint64_t w[];
} Bytes;
GCSHIM_ARRAY_TYPE(bytes_type, Bytes, 1, 0);

static const char *const kind_name[3] = { "small", "medium", "large" };

static size_t kind_bytes(unsigned kind, uint64_t r)
{
    if (kind == 1)
        return 2048 + 8 * (r % ((8192 - 2048 - sizeof(Bytes)) / 8));
    return 16384 + 8 * (r % ((262144 - 16384) / 8));
}

static void *scale_thread(void *arg)
{
    Scale *s = arg;
    gcshim_thread_attach();
    Ring *ring = gcshim_alloc_array(&ring_type, RING);
    uint64_t rng = s->seed, seq[RING] = { 0 };
    pthread_barrier_wait(s->start);
    for (uint64_t i = 0; i < s->count; i++) {
        uint64_t *w, words;
        void *obj;
        if (s->kind == 0) {
            Cell *c = gcshim_alloc(&cell_type);
            obj = c;
            w = &c->seq;
            words = 2;
        } else {
            rng = gcshim_mix64(rng);
            size_t len = kind_bytes(s->kind, rng);
            Bytes *b = gcshim_alloc_array(&bytes_type, len);
            obj = b;
            w = b->w;
            words = len / 8;
        }
        w[0] = i;
        w[words - 1] = tag_of(i);
        void *old = ring->slot[i % RING];
        if (old) {
            const uint64_t *o = s->kind == 0 ? &((Cell *)old)->seq : ((Bytes *)old)->w;
            size_t ow = s->kind == 0 ? 2 : ((Bytes *)old)->a.length / 8;
            if (__builtin_expect(o[0] != seq[i % RING] || o[ow - 1] != tag_of(seq[i % RING]), 0))
                lost("scaling ring", seq[i % RING], o[0], o[ow - 1]);
        }
        seq[i % RING] = i;
        GCSHIM_STORE(ring, &ring->slot[i % RING], obj);
    }
    uint64_t sum = 0;
    for (unsigned k = 0; k < RING; k++)
        sum = gcshim_fold(sum, seq[k]);
    s->sum = sum;
    gcshim_thread_detach();
    return NULL;
}

/* Allocations per second (thousands) of `threads` threads of `kind`,
 * `count` allocations each; *sum folds their rings' contents. */
static double scale_run(unsigned kind, unsigned threads, uint64_t count, uint64_t *sum)
{
    Scale s[2];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, threads + 1);
    for (unsigned t = 0; t < threads; t++) {
        s[t] = (Scale){ .kind = kind, .count = count, .seed = 0x5CA1E + t, .start = &start };
        if (pthread_create(&s[t].tid, NULL, scale_thread, &s[t]) != 0) {
            fprintf(stderr, "alloc: pthread_create failed\n");
            exit(1);
        }
    }
    pthread_barrier_wait(&start);
    uint64_t t0 = gcshim_now_ns();
    for (unsigned t = 0; t < threads; t++)
        pthread_join(s[t].tid, NULL);
    uint64_t ns = gcshim_now_ns() - t0;
    pthread_barrier_destroy(&start);
    for (unsigned t = 0; t < threads; t++)
        *sum = gcshim_fold(*sum, s[t].sum);
    return (double)count * threads / (ns / 1e9) / 1e3;
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    for (int i = 1; i < argc; i++)
        if (!gcshim_common_option(argc, argv, &i, &scale, &verbose, gcshim_usage))
            gcshim_usage(argv[0]);
    uint64_t n = (uint64_t)(20000000.0 * scale);
    if (n < 10 * RING)
        n = 10 * RING;
    uint64_t warm = n / 10;

    gcshim_init();
    uint64_t t0 = gcshim_now_ns();

    /* Held by locals (roots) until the final checks. */
    Ring *cells = gcshim_alloc_array(&ring_type, RING);
    Ring *atoms = gcshim_alloc_array(&ring_type, RING);
    Plain *plain[RING] = { 0 };

    uint64_t s, ns_cell, ns_atom, ns_mfree, ns_mring;

    cell_loop(cells, 0, warm);
    s = gcshim_now_ns();
    cell_loop(cells, warm, warm + n);
    ns_cell = gcshim_now_ns() - s;
    if (verbose)
        fprintf(stderr, "alloc: %llu objects with a reference: %.0f ms\n", (unsigned long long)n, ns_cell / 1e6);

    atom_loop(atoms, 0, warm);
    s = gcshim_now_ns();
    atom_loop(atoms, warm, warm + n);
    ns_atom = gcshim_now_ns() - s;
    if (verbose)
        fprintf(stderr, "alloc: %llu pointer-free objects: %.0f ms\n", (unsigned long long)n, ns_atom / 1e6);

    malloc_free_loop(0, warm);
    s = gcshim_now_ns();
    malloc_free_loop(warm, warm + n);
    ns_mfree = gcshim_now_ns() - s;
    if (verbose)
        fprintf(stderr, "alloc: %llu malloc+free pairs: %.0f ms\n", (unsigned long long)n, ns_mfree / 1e6);

    malloc_ring_loop(plain, 0, warm);
    s = gcshim_now_ns();
    malloc_ring_loop(plain, warm, warm + n);
    ns_mring = gcshim_now_ns() - s;
    if (verbose)
        fprintf(stderr, "alloc: %llu mallocs through a %d-slot ring: %.0f ms\n", (unsigned long long)n, RING,
                ns_mring / 1e6);

    /* The checksum covers the collectors' live data: the two rings. */
    uint64_t checksum = check_ring("refs ring", cells->slot, warm + n, offsetof(Cell, seq), 0);
    checksum = check_ring("pointer-free ring", atoms->slot, warm + n, offsetof(Atom, seq), checksum);
    check_ring("malloc ring", (void *const *)plain, warm + n, offsetof(Plain, seq), 0);
    for (int i = 0; i < RING; i++)
        free(plain[i]);

    char scaling[512] = "";
    size_t used = 0;
    const uint64_t per[3] = { n / 4, n / 100, n / 2000 };
    for (unsigned k = 0; k < 3; k++) {
        uint64_t count = per[k] < 10 * RING ? 10 * RING : per[k];
        double k1 = scale_run(k, 1, count, &checksum), k2 = scale_run(k, 2, count, &checksum);
        if (verbose)
            fprintf(stderr, "alloc: %s objects: %.0f k/s on one thread, %.0f k/s on two\n", kind_name[k], k1, k2);
        used += (size_t)snprintf(scaling + used, sizeof scaling - used, " %s_t1_kps=%.0f %s_t2_kps=%.0f %s_scaling=%.2f",
                                 kind_name[k], k1, kind_name[k], k2, kind_name[k], k2 / k1);
    }
    uint64_t t1 = gcshim_now_ns();

    char extra[768];
    snprintf(extra, sizeof extra,
             "allocs=%llu ns_per_alloc=%.2f ns_per_alloc_atomic=%.2f ns_per_malloc_free=%.2f ns_per_malloc_ring=%.2f%s",
             (unsigned long long)n, (double)ns_cell / n, (double)ns_atom / n, (double)ns_mfree / n,
             (double)ns_mring / n, scaling);
    gcshim_report("alloc", t1 - t0, checksum, extra);
    gcshim_shutdown();
    return 0;
}
