/*
 * barrier.c — the cost of one reference store into a heap object (lull's
 * write barrier; a plain store under Boehm), against a plain store into
 * malloc'd memory as a baseline.
 *
 * A live table (a collector-allocated array of references) holds K objects
 * of 48 bytes with 4 reference fields each (K = 100,000 x --scale, at least
 * 1,000). Then two timed loops of M stores each (M = 50,000,000 x --scale):
 *
 *   ns_per_store      o = table[i]; GCSHIM_SET(o, f[k], table[j])
 *   ns_per_raw_store  o = rtable[i]; o->f[k] = rtable[j], with rtable a
 *                     malloc'd array of pointers into a malloc'd array of
 *                     structs of the same layout (the same loads and the
 *                     same memory footprint, no barrier)
 *
 * i, j and k come from a Weyl counter mixed by one multiplication (a few
 * cheap instructions, no loop-carried chain beyond one add), so the stores
 * land at random-looking places and both loops do identical arithmetic.
 * Each loop runs M/10 warm-up stores first.
 *
 * Then the check: both graphs must be equal; the upper half of the table is
 * cleared, so those objects live on only through the reference fields just
 * written, and garbage objects of the same size are allocated (20 x K, at
 * least 500,000) to make the collector run and reuse any slot it wrongly
 * frees. Finally every object reachable from the table is visited: its id
 * must be in range, the lower half must still sit at table[id], an id must
 * belong to one address only, and every field must be NULL or another such
 * object. A violation exits 1.
 *
 *   barrier_lull [-v] [--scale F]      (barrier_boehm: same)
 *
 * Prints one RESULT line (bench=barrier, time_ms = the whole run;
 * checksum= over every reachable object's id and its fields' ids) with the
 * extra keys stores=M objects=K ns_per_store=... ns_per_raw_store=...
 * reachable=..., then the PAUSES line.
 */
#include "gcshim.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct Obj {
    gcshim_header h;
    struct Obj *f[4];
    uint64_t id;
} Obj;
GCSHIM_TYPE(obj_type, Obj,
            GCSHIM_REF(Obj, f[0]) | GCSHIM_REF(Obj, f[1]) | GCSHIM_REF(Obj, f[2]) | GCSHIM_REF(Obj, f[3]));

typedef struct Table {
    gcshim_array_header a;
    Obj *e[];
} Table;
GCSHIM_ARRAY_TYPE(table_type, Table, sizeof(Obj *), 1);

/* The baseline's object: the same layout, in malloc'd memory. */
typedef struct RawObj {
    uintptr_t h;
    struct RawObj *f[4];
    uint64_t id;
} RawObj;

_Static_assert(sizeof(Obj) == 48 && sizeof(RawObj) == 48, "48-byte objects");

#define GARBAGE_ID UINT64_MAX

static int verbose;

/* The store positions: i, j in [0, n) and a field k in [0, 4), from the
 * Weyl counter *w. n < 2^32. */
#define NEXT_POSITIONS(w, n, i, j, k)                                  \
    do {                                                               \
        (w) += 0x9E3779B97F4A7C15u;                                    \
        uint64_t h_ = (w) * 0xD1B54A32D192ED03u;                       \
        h_ ^= h_ >> 32;                                                \
        (i) = (size_t)(((h_ >> 32) * (uint64_t)(n)) >> 32);            \
        (j) = (size_t)(((h_ & 0xffffffffu) * (uint64_t)(n)) >> 32);    \
        (k) = (size_t)(h_ & 3);                                        \
    } while (0)

static uint64_t gc_stores(Table *t, size_t n, uint64_t m, uint64_t w)
{
    for (uint64_t s = 0; s < m; s++) {
        size_t i, j, k;
        NEXT_POSITIONS(w, n, i, j, k);
        Obj *o = t->e[i];
        GCSHIM_SET(o, f[k], t->e[j]);
    }
    return w;
}

static uint64_t raw_stores(RawObj **t, size_t n, uint64_t m, uint64_t w)
{
    for (uint64_t s = 0; s < m; s++) {
        size_t i, j, k;
        NEXT_POSITIONS(w, n, i, j, k);
        RawObj *o = t[i];
        o->f[k] = t[j];
    }
    return w;
}

__attribute__((noinline, cold, noreturn))
static void corrupt(const char *what, uint64_t id, const void *obj)
{
    fprintf(stderr, "barrier: FAILED: %s (object %p, id %llu): live data lost or corrupted\n", what, obj,
            (unsigned long long)id);
    exit(1);
}

/* One reachable object's part of the checksum: its id and its fields'
 * targets' ids (GARBAGE_ID for NULL). Summed, so the visiting order does
 * not matter. */
static uint64_t object_hash(const Obj *o)
{
    uint64_t h = gcshim_fold(0, o->id);
    for (int k = 0; k < 4; k++)
        h = gcshim_fold(h, o->f[k] ? o->f[k]->id : GARBAGE_ID);
    return h;
}

/* Visit everything reachable from the table's lower half; returns the
 * number of distinct objects, and in *sum the sum of their object_hash().
 * seen[id] records the address that holds id. seen and stack are malloc'd,
 * unseen by the collector: nothing allocates while they are in use. */
static size_t verify(Table *t, size_t n, const Obj **seen, const Obj **stack, uint64_t *sum)
{
    size_t reachable = 0, sp = 0;
    uint64_t s = 0;
    for (size_t i = 0; i < n / 2; i++) {
        const Obj *o = t->e[i];
        if (!o || o->id != i)
            corrupt("table entry does not hold its object", i, o);
        if (seen[i])
            continue;
        seen[i] = o;
        reachable++;
        stack[sp++] = o;
        while (sp) {
            const Obj *p = stack[--sp];
            s += object_hash(p);
            for (int k = 0; k < 4; k++) {
                const Obj *q = p->f[k];
                if (!q)
                    continue;
                uint64_t id = q->id;
                if (id >= n)
                    corrupt(id == GARBAGE_ID ? "a field points to a garbage object" : "id out of range", id, q);
                if (id < n / 2 && t->e[id] != q)
                    corrupt("a field points to a copy of a table object", id, q);
                if (seen[id]) {
                    if (seen[id] != q)
                        corrupt("two objects claim one id", id, q);
                    continue;
                }
                seen[id] = q;
                reachable++;
                stack[sp++] = q;   /* each object is pushed once: sp <= n */
            }
        }
    }
    *sum = gcshim_fold(s, reachable);
    return reachable;
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    for (int i = 1; i < argc; i++)
        if (!gcshim_common_option(argc, argv, &i, &scale, &verbose, gcshim_usage))
            gcshim_usage(argv[0]);
    double kd = 100000.0 * scale, md = 50000000.0 * scale;
    size_t n = kd < 1000 ? 1000 : kd > 1e9 ? 1000000000 : (size_t)kd;
    uint64_t m = md < 1000 ? 1000 : (uint64_t)md;
    uint64_t warm = m / 10;

    gcshim_init();
    uint64_t t0 = gcshim_now_ns();

    /* The live objects, held by the table, held by a local. */
    Table *table = gcshim_alloc_array(&table_type, n);
    for (size_t i = 0; i < n; i++) {
        Obj *o = gcshim_alloc(&obj_type);
        o->id = i;
        GCSHIM_STORE(table, &table->e[i], o);
    }

    /* The baseline's objects and table, outside the collector's heap. */
    RawObj *raw = gcshim_check(calloc(n, sizeof *raw), "calloc");
    RawObj **rtable = gcshim_check(malloc(n * sizeof *rtable), "malloc");
    for (size_t i = 0; i < n; i++) {
        raw[i].id = i;
        rtable[i] = &raw[i];
    }

    uint64_t w = 0x5EED, s, ns_gc, ns_raw;

    w = gc_stores(table, n, warm, w);
    s = gcshim_now_ns();
    w = gc_stores(table, n, m, w);
    ns_gc = gcshim_now_ns() - s;
    if (verbose)
        fprintf(stderr, "barrier: %llu GCSHIM_SET stores: %.0f ms\n", (unsigned long long)m, ns_gc / 1e6);

    uint64_t wr = 0x5EED;
    wr = raw_stores(rtable, n, warm, wr);
    s = gcshim_now_ns();
    wr = raw_stores(rtable, n, m, wr);
    ns_raw = gcshim_now_ns() - s;
    if (verbose)
        fprintf(stderr, "barrier: %llu raw stores: %.0f ms\n", (unsigned long long)m, ns_raw / 1e6);

    /* Both loops stored the same sequence: the graphs must be equal. */
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++) {
            const Obj *g = table->e[i]->f[k];
            const RawObj *r = raw[i].f[k];
            if ((g ? g->id : GARBAGE_ID) != (r ? r->id : GARBAGE_ID))
                corrupt("a field differs from the baseline's", i, table->e[i]);
        }
    free(rtable);
    free(raw);

    /* Drop the upper half from the table; make the collector run. */
    for (size_t i = n / 2; i < n; i++)
        GCSHIM_STORE(table, &table->e[i], NULL);
    uint64_t garbage = 20 * (uint64_t)n < 500000 ? 500000 : 20 * (uint64_t)n;
    for (uint64_t g = 0; g < garbage; g++) {
        Obj *o = gcshim_alloc(&obj_type);
        o->id = GARBAGE_ID;
        __asm__ __volatile__("" : : "r"(o) : "memory");
    }

    const Obj **seen = gcshim_check(calloc(n, sizeof *seen), "calloc");
    const Obj **stack = gcshim_check(malloc(n * sizeof *stack), "malloc");
    uint64_t checksum;
    size_t reachable = verify(table, n, seen, stack, &checksum);
    free(stack);
    free(seen);
    if (verbose)
        fprintf(stderr, "barrier: %zu of %zu objects reachable after dropping half the table\n", reachable, n);
    uint64_t t1 = gcshim_now_ns();

    char extra[256];
    snprintf(extra, sizeof extra, "stores=%llu objects=%zu ns_per_store=%.3f ns_per_raw_store=%.3f reachable=%zu",
             (unsigned long long)m, n, (double)ns_gc / m, (double)ns_raw / m, reachable);
    gcshim_report("barrier", t1 - t0, checksum, extra);
    gcshim_shutdown();
    return 0;
}
