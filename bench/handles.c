/*
 * handles.c — weak references from several threads at once: the cost of
 * the handle table under contention.
 *
 * T threads (--threads, default 4) share R rounds (R = 4,000,000 x
 * --scale). A round:
 *
 *   1. allocates a 32-byte object and makes a weak reference to it;
 *   2. reads the new reference back (it must yield the object, which a
 *      local still holds);
 *   3. takes the reference made RING rounds earlier by this thread, reads
 *      it (NULL, or its very object with the sequence number it was made
 *      with), and releases it.
 *
 * So one new, two reads and one free per round, from every thread at once,
 * with collections clearing weak references as they go.
 *
 *   lull:        lull_handle_new(obj, LULL_HANDLE_WEAK), lull_handle_get,
 *                lull_handle_free: the lock-free table (lib/handles.c).
 *   lull-mutex:  the same calls, each made holding one process-wide
 *                pthread_mutex_t (GCSHIM_HANDLES_MUTEX=1 in the environment):
 *                the same table behind a lock, as handle tables were in
 *                Mono before its lock-free ones.
 *   Boehm GC:    its weak reference, a disappearing link: a slot holding the
 *                hidden pointer, GC_general_register_disappearing_link,
 *                read under GC_call_with_alloc_lock (the documented safe
 *                read: the collector may be clearing it), and
 *                GC_unregister_disappearing_link.
 *
 *   handles_lull [-v] [--scale F] [--threads N]      (handles_boehm: same)
 *
 * Prints one RESULT line (bench=handles, or handles_t<N> for N != 4;
 * time_ms = the timed phase; checksum= over every sequence number made,
 * which does not depend on what the collector cleared) with the extra keys
 * threads=T rounds=R ns_per_round=<wall time / R> weak_cleared=<old
 * references found cleared>, then the PAUSES line. A reference that yields
 * another object, or a new one that does not yield its own, exits 1.
 */
#include "gcshim.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

enum { RING = 256, MAX_THREADS = 64 };

typedef struct Obj {
    gcshim_header h;
    uint64_t seq, tag, pad;
} Obj;
GCSHIM_TYPE(obj_type, Obj, 0);

static inline uint64_t tag_of(uint64_t seq) { return seq * 0x9E3779B97F4A7C15u ^ 0x4A4D1Eu; }

#ifndef USE_BOEHM
typedef lull_handle weak_ref;
static int use_mutex;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void weak_make(weak_ref *r, Obj *o)
{
    if (use_mutex)
        pthread_mutex_lock(&table_lock);
    *r = lull_handle_new(o, LULL_HANDLE_WEAK);
    if (use_mutex)
        pthread_mutex_unlock(&table_lock);
    if (!*r) {
        fprintf(stderr, "handles: lull_handle_new failed\n");
        exit(1);
    }
}
static inline Obj *weak_read(weak_ref *r)
{
    if (use_mutex)
        pthread_mutex_lock(&table_lock);
    Obj *o = lull_handle_get(*r);
    if (use_mutex)
        pthread_mutex_unlock(&table_lock);
    return o;
}
static inline void weak_release(weak_ref *r)
{
    if (use_mutex)
        pthread_mutex_lock(&table_lock);
    lull_handle_free(*r);
    if (use_mutex)
        pthread_mutex_unlock(&table_lock);
}
static const char *variant(void) { return use_mutex ? "lull-mutex" : "lull"; }
#else
/* The slot holds the hidden pointer; the collector sets it to 0 when the
 * object dies. Slots live in malloc'd memory (never scanned). */
typedef GC_hidden_pointer weak_ref;

static inline void weak_make(weak_ref *r, Obj *o)
{
    *r = GC_HIDE_POINTER(o);
    if (GC_general_register_disappearing_link((void **)r, o) != GC_SUCCESS) {
        fprintf(stderr, "handles: GC_general_register_disappearing_link failed\n");
        exit(1);
    }
}
static void *read_locked(void *slot)
{
    weak_ref v = *(weak_ref *)slot;
    return v ? GC_REVEAL_POINTER(v) : NULL;
}
static inline Obj *weak_read(weak_ref *r) { return GC_call_with_alloc_lock(read_locked, r); }
static inline void weak_release(weak_ref *r)
{
    (void)GC_unregister_disappearing_link((void **)r);
}
static const char *variant(void) { return "boehm"; }
#endif

typedef struct Worker {
    int index;
    uint64_t rounds, first_seq;
    uint64_t cleared;
    weak_ref *ref;          /* RING slots, malloc'd */
    uint64_t *seq;
} Worker;

static int verbose;

__attribute__((noinline, cold, noreturn))
static void wrong(const char *what, uint64_t seq, const Obj *o)
{
    fprintf(stderr, "handles: FAILED (%s): the reference made with sequence number %llu yields %p (seq %llu, tag %s)\n",
            what, (unsigned long long)seq, (const void *)o, o ? (unsigned long long)o->seq : 0ull,
            o ? (o->tag == tag_of(o->seq) ? "ok" : "corrupt") : "-");
    exit(1);
}

static void *worker_main(void *arg)
{
    Worker *w = arg;
    gcshim_thread_attach();
    for (uint64_t r = 0; r < w->rounds; r++) {
        uint64_t seq = w->first_seq + r;
        size_t k = r % RING;
        if (r >= RING) {
            Obj *old = weak_read(&w->ref[k]);
            if (old && (old->seq != w->seq[k] || old->tag != tag_of(w->seq[k])))
                wrong("an old reference", w->seq[k], old);
            w->cleared += !old;
            weak_release(&w->ref[k]);
        }
        Obj *o = gcshim_alloc(&obj_type);
        o->seq = seq;
        o->tag = tag_of(seq);
        weak_make(&w->ref[k], o);
        w->seq[k] = seq;
        if (weak_read(&w->ref[k]) != o)
            wrong("a new reference", seq, weak_read(&w->ref[k]));
        __asm__ __volatile__("" : : "r"(o) : "memory");   /* o stays live up to here */
    }
    uint64_t left = w->rounds < RING ? w->rounds : RING;
    for (uint64_t i = 0; i < left; i++) {
        size_t k = (w->rounds - 1 - i) % RING;
        Obj *o = weak_read(&w->ref[k]);
        if (o && (o->seq != w->seq[k] || o->tag != tag_of(w->seq[k])))
            wrong("a reference at the end", w->seq[k], o);
        weak_release(&w->ref[k]);
    }
    gcshim_thread_detach();
    return NULL;
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    int threads = 4;
    gcshim_parse_threads_args(argc, argv, &scale, &verbose, &threads, MAX_THREADS);
#ifndef USE_BOEHM
    const char *m = getenv("GCSHIM_HANDLES_MUTEX");
    use_mutex = m && *m && strcmp(m, "0");
#endif
    double rd = 4000000.0 * scale;
    uint64_t total = rd < 1000.0 * threads ? 1000u * (uint64_t)threads : (uint64_t)rd;

    gcshim_init();
    static Worker ws[MAX_THREADS];
    uint64_t next = 1;
    for (int t = 0; t < threads; t++) {
        ws[t].index = t;
        ws[t].rounds = total / (uint64_t)threads + ((uint64_t)t < total % (uint64_t)threads);
        ws[t].first_seq = next;
        next += ws[t].rounds;
        ws[t].ref = calloc(RING, sizeof *ws[t].ref);
        ws[t].seq = calloc(RING, sizeof *ws[t].seq);
        if (!ws[t].ref || !ws[t].seq) {
            fprintf(stderr, "handles: out of memory\n");
            return 1;
        }
    }
    pthread_t th[MAX_THREADS];
    uint64_t t0 = gcshim_now_ns();
    for (int t = 0; t < threads; t++)
        if (pthread_create(&th[t], NULL, worker_main, &ws[t]) != 0) {
            fprintf(stderr, "handles: pthread_create failed\n");
            return 1;
        }
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    uint64_t t1 = gcshim_now_ns();

    uint64_t checksum = 0, cleared = 0;
    for (int t = 0; t < threads; t++) {
        for (uint64_t s = ws[t].first_seq; s < ws[t].first_seq + ws[t].rounds; s++)
            checksum = gcshim_fold(checksum, tag_of(s));
        cleared += ws[t].cleared;
        free(ws[t].ref);
        free(ws[t].seq);
    }
    if (verbose)
        fprintf(stderr, "handles (%s): %d threads, %llu rounds in %.0f ms, %llu old references found cleared\n",
                variant(), threads, (unsigned long long)total, (t1 - t0) / 1e6, (unsigned long long)cleared);
    char bench[32], extra[256];
    if (threads == 4)
        snprintf(bench, sizeof bench, "handles");
    else
        snprintf(bench, sizeof bench, "handles_t%d", threads);
    snprintf(extra, sizeof extra, "threads=%d rounds=%llu ns_per_round=%.1f weak_cleared=%llu", threads,
             (unsigned long long)total, (double)(t1 - t0) / (double)total, (unsigned long long)cleared);
    gcshim_report(bench, t1 - t0, checksum, extra);
    gcshim_shutdown();
    return 0;
}
