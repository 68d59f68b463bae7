/*
 * server.c — a request-serving loop: throughput and per-request latency
 * with several threads allocating at once and a shared cache of results.
 *
 * T threads (--threads, default 4) share R requests (R = 200,000 x --scale,
 * at least 100 per thread). A request:
 *
 *   1. "parses": builds a Request with 16-48 Fields (40 bytes, two
 *      references each) in a linked list, each with a pointer-free value
 *      buffer of 8-56 bytes, a 16-slot index (an array of references into
 *      the fields, stored with GCSHIM_STORE) and 1-4 body Parts, each with
 *      a pointer-free buffer of 64-2048 bytes: about 70 objects, 5 KiB;
 *   2. computes a checksum over the whole graph and compares it with the
 *      one the generator computed while filling it in;
 *   3. keeps 1 in 20 results: a Result referencing a 32-byte digest and
 *      the last 4 fields of the request (the rest of it becomes garbage),
 *      stored into a random slot of a shared cache of 50,000 references
 *      (GCSHIM_STORE under a mutex); thread t writes only the slots
 *      s with s % T == t, so that what the cache holds at the end does not
 *      depend on how the threads interleave;
 *   4. looks up one random cache slot and verifies that entry's checksum.
 *
 * Each request is timed with gcshim_now_ns. The cache is filled before the
 * clock starts, so the live set (about 25 MiB) is the same at any --scale;
 * at the end every cache entry is verified. A checksum mismatch means lost
 * or corrupted data: the program says so on stderr and exits 1. Each
 * thread's content comes from its own fixed-seed generator, so both
 * collectors do the same work and end with the same cache (only which
 * entries a lookup happens to find depends on the interleaving).
 *
 *   server_lull [-v] [--scale F] [--threads N]      (server_boehm: same)
 *
 * Prints one RESULT line (bench=server, or server_t<N> for N != 4 threads;
 * time_ms = the timed phase; checksum= over every cache entry's slot, id
 * and contents, walked at the end) with the extra keys threads=T requests=R
 * rps=... req_p50_us=... req_p99_us=... req_max_us=... kept=<results stored
 * during the run> cached=<entries verified at the end>, then the PAUSES line.
 */
#include "gcshim.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

enum {
    CACHE_SLOTS = 50000,
    KEEP_ONE_IN = 20,
    INDEX_SLOTS = 16,          /* a power of two */
    RESULT_FIELDS = 4,
    DIGEST_BYTES = 32,
    MAX_THREADS = 256,
};

/* A pointer-free byte buffer; its length is a multiple of 8. */
typedef struct Bytes {
    gcshim_array_header a;
    uint8_t d[];
} Bytes;
GCSHIM_ARRAY_TYPE(bytes_type, Bytes, 1, 0);

typedef struct Field {
    gcshim_header h;
    struct Field *next;
    Bytes *value;
    uint64_t key;
    uint64_t pad;
} Field;
GCSHIM_TYPE(field_type, Field, GCSHIM_REF(Field, next) | GCSHIM_REF(Field, value));

typedef struct Part {
    gcshim_header h;
    struct Part *next;
    Bytes *data;
    uint64_t seq;
} Part;
GCSHIM_TYPE(part_type, Part, GCSHIM_REF(Part, next) | GCSHIM_REF(Part, data));

typedef struct Index {
    gcshim_array_header a;
    Field *slot[];
} Index;
GCSHIM_ARRAY_TYPE(index_type, Index, sizeof(Field *), 1);

typedef struct Request {
    gcshim_header h;
    Field *fields;
    Part *parts;
    Index *index;
    uint64_t id;
} Request;
GCSHIM_TYPE(request_type, Request,
            GCSHIM_REF(Request, fields) | GCSHIM_REF(Request, parts) | GCSHIM_REF(Request, index));

typedef struct Result {
    gcshim_header h;
    Field *fields;             /* RESULT_FIELDS fields */
    Bytes *digest;             /* DIGEST_BYTES */
    uint64_t id;
    uint64_t sum;              /* result_sum() of the above */
} Result;
GCSHIM_TYPE(result_type, Result, GCSHIM_REF(Result, fields) | GCSHIM_REF(Result, digest));

typedef struct Cache {
    gcshim_array_header a;
    Result *slot[];
} Cache;
GCSHIM_ARRAY_TYPE(cache_type, Cache, sizeof(Result *), 1);

static int verbose;
static atomic_int failed;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------------ */
/* Generator and hashing                                                    */
/* ------------------------------------------------------------------------ */

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* Hash of a buffer as written: words fold in order. */
static uint64_t bytes_hash(uint64_t h, const Bytes *b)
{
    size_t len = b->a.length;
    for (size_t i = 0; i < len; i += 8)
        h = gcshim_hash(h, load64(b->d + i));
    return gcshim_hash(h, len);
}

/* A new buffer of len bytes (a multiple of 8) filled from the generator;
 * *h gets the hash bytes_hash(*h, buffer) computed from the generated words,
 * not from memory. */
static Bytes *new_bytes(uint64_t *rng, size_t len, uint64_t *h)
{
    Bytes *b = gcshim_alloc_array(&bytes_type, len);
    uint64_t x = *h;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = gcshim_splitmix(rng);
        memcpy(b->d + i, &w, sizeof w);
        x = gcshim_hash(x, w);
    }
    *h = gcshim_hash(x, len);
    return b;
}

/* A field's contribution to a checksum. Sums of these are order-free. */
static uint64_t field_hash(const Field *f) { return bytes_hash(gcshim_hash(0xF1E1D, f->key), f->value); }

/* ------------------------------------------------------------------------ */
/* Requests                                                                 */
/* ------------------------------------------------------------------------ */

/* Prepend `count` fields to *head (which a caller keeps reachable); if index
 * is not NULL, each field also goes into index slot key % INDEX_SLOTS.
 * Returns the sum of their field_hash()es, computed while generating. */
static uint64_t add_fields(uint64_t *rng, Field **head, Index *index, unsigned count, uint64_t *last_key)
{
    uint64_t sum = 0;
    for (unsigned n = 0; n < count; n++) {
        Field *f = gcshim_alloc(&field_type);
        f->key = gcshim_splitmix(rng);
        GCSHIM_SET(f, next, *head);
        *head = f;
        uint64_t h = gcshim_hash(0xF1E1D, f->key);
        Bytes *value = new_bytes(rng, 8 * (1 + gcshim_split_below(rng, 7)), &h);
        GCSHIM_SET(f, value, value);
        sum += h;
        if (index) {
            unsigned s = f->key % INDEX_SLOTS;
            GCSHIM_STORE(index, &index->slot[s], f);
            last_key[s] = f->key;
        }
    }
    return sum;
}

static uint64_t index_hash(unsigned slot, uint64_t key) { return gcshim_hash(0x1DE7 + slot, key); }

/* Build a request from the generator; *expect gets its checksum. The
 * request (held by the caller) keeps everything reachable. A new object is
 * allocated into a local before GCSHIM_SET stores it, so that no slot
 * address is computed before an allocation that might collect. */
static Request *parse(uint64_t *rng, uint64_t id, uint64_t *expect)
{
    Request *q = gcshim_alloc(&request_type);
    q->id = id;
    Index *index = gcshim_alloc_array(&index_type, INDEX_SLOTS);
    GCSHIM_SET(q, index, index);

    uint64_t last_key[INDEX_SLOTS] = { 0 }, sum = gcshim_hash(0x5E0, id);
    /* add_fields builds the list in a local first: q->fields is set once. */
    Field *fields = NULL;
    sum += add_fields(rng, &fields, q->index, 16 + (unsigned)gcshim_split_below(rng, 33), last_key);
    GCSHIM_SET(q, fields, fields);
    for (unsigned s = 0; s < INDEX_SLOTS; s++)
        if (q->index->slot[s])
            sum += index_hash(s, last_key[s]);

    unsigned parts = 1 + (unsigned)gcshim_split_below(rng, 4);
    for (unsigned n = 0; n < parts; n++) {
        Part *p = gcshim_alloc(&part_type);
        p->seq = n;
        GCSHIM_SET(p, next, q->parts);
        GCSHIM_SET(q, parts, p);
        uint64_t h = gcshim_hash(0xB0D7, n);
        Bytes *data = new_bytes(rng, 64 + 8 * gcshim_split_below(rng, (2048 - 64) / 8 + 1), &h);
        GCSHIM_SET(p, data, data);
        sum += h;
    }
    *expect = sum;
    return q;
}

/* The request's checksum, read back from memory. */
static uint64_t checksum(const Request *q)
{
    uint64_t sum = gcshim_hash(0x5E0, q->id);
    for (const Field *f = q->fields; f; f = f->next)
        sum += field_hash(f);
    for (unsigned s = 0; s < INDEX_SLOTS; s++) {
        const Field *f = q->index->slot[s];
        if (f)
            sum += index_hash(s, f->key % INDEX_SLOTS == s ? f->key : ~f->key);
    }
    for (const Part *p = q->parts; p; p = p->next)
        sum += bytes_hash(gcshim_hash(0xB0D7, p->seq), p->data);
    return sum;
}

static uint64_t result_sum(const Result *r)
{
    uint64_t sum = bytes_hash(gcshim_hash(0xD16E, r->id), r->digest);
    unsigned n = 0;
    for (const Field *f = r->fields; f; f = f->next, n++)
        sum += field_hash(f);
    return n == RESULT_FIELDS ? sum : ~sum;
}

/* A result for request `id` with checksum `sum`, keeping `fields`. */
static Result *make_result(uint64_t id, uint64_t sum, Field *fields)
{
    Result *r = gcshim_alloc(&result_type);
    r->id = id;
    GCSHIM_SET(r, fields, fields);
    Bytes *d = gcshim_alloc_array(&bytes_type, DIGEST_BYTES);
    for (unsigned i = 0; i < DIGEST_BYTES; i += 8) {
        uint64_t w = gcshim_hash(sum, i);
        memcpy(d->d + i, &w, sizeof w);
    }
    GCSHIM_SET(r, digest, d);
    r->sum = result_sum(r);
    return r;
}

static void cache_put(Cache *c, size_t slot, Result *r)
{
    pthread_mutex_lock(&cache_lock);
    GCSHIM_STORE(c, &c->slot[slot], r);
    pthread_mutex_unlock(&cache_lock);
}

static Result *cache_get(Cache *c, size_t slot)
{
    pthread_mutex_lock(&cache_lock);
    Result *r = c->slot[slot];
    pthread_mutex_unlock(&cache_lock);
    return r;
}

/* Ids: thread << 40 | request number; results filled before the clock
 * starts have 1 << 63 | cache slot. */
static void fail(const char *what, uint64_t id)
{
    fprintf(stderr, "server: FAILED: %s (id %#llx): live data lost or corrupted\n", what, (unsigned long long)id);
    atomic_store(&failed, 1);
}

/* Handle one request for thread `me` of `threads`; false after a failed
 * check. *kept counts the results stored into the cache. */
static bool serve(Cache *cache, uint64_t *rng, uint64_t id, unsigned me, unsigned threads, uint64_t *kept)
{
    uint64_t expect;
    Request *q = parse(rng, id, &expect);
    uint64_t sum = checksum(q);
    if (sum != expect) {
        fail("request checksum", id);
        return false;
    }
    if (gcshim_split_below(rng, KEEP_ONE_IN) == 0) {
        /* Keep the last RESULT_FIELDS fields of the list (a request has at
         * least 16): `keep` trails `lead` by RESULT_FIELDS nodes. */
        Field *keep = q->fields;
        const Field *lead = q->fields;
        for (unsigned i = 0; i < RESULT_FIELDS; i++)
            lead = lead->next;
        for (; lead; lead = lead->next)
            keep = keep->next;
        size_t own = (CACHE_SLOTS - me + threads - 1) / threads;     /* slots me, me + T, ... */
        cache_put(cache, me + (size_t)threads * gcshim_split_below(rng, own), make_result(id, sum, keep));
        ++*kept;
    }
    size_t slot = gcshim_split_below(rng, CACHE_SLOTS);
    Result *r = cache_get(cache, slot);
    if (r && result_sum(r) != r->sum) {
        fail("cached result checksum", r->id);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct Worker {
    pthread_t tid;
    unsigned index, threads;
    uint64_t requests;
    uint64_t kept;             /* results stored into the cache */
    uint64_t *lat_ns;          /* malloc'd, one per request */
    Cache **cache;             /* main's local, on main's (scanned) stack */
} Worker;

static void *worker(void *arg)
{
    Worker *w = arg;
    gcshim_thread_attach();
    Cache *cache = *w->cache;
    uint64_t rng = 0xC0FFEE00u + w->index;
    for (uint64_t n = 0; n < w->requests && !atomic_load_explicit(&failed, memory_order_relaxed); n++) {
        uint64_t t0 = gcshim_now_ns();
        bool ok = serve(cache, &rng, ((uint64_t)w->index << 40) | n, w->index, w->threads, &w->kept);
        w->lat_ns[n] = gcshim_now_ns() - t0;
        if (!ok)
            break;
    }
    gcshim_thread_detach();
    return NULL;
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    int threads = 4;
    gcshim_parse_threads_args(argc, argv, &scale, &verbose, &threads, MAX_THREADS);
    double rd = 200000.0 * scale;
    uint64_t total = rd < 100.0 * threads ? 100u * (uint64_t)threads : (uint64_t)rd;

    gcshim_init();

    /* Fill the cache before the clock starts. */
    Cache *cache = gcshim_alloc_array(&cache_type, CACHE_SLOTS);
    uint64_t rng = 0xCAC4E;
    for (size_t s = 0; s < CACHE_SLOTS; s++) {
        Field *fields = NULL;
        uint64_t sum = add_fields(&rng, &fields, NULL, RESULT_FIELDS, NULL);
        GCSHIM_STORE(cache, &cache->slot[s], make_result((uint64_t)1 << 63 | s, sum, fields));
    }

    Worker *w = gcshim_check(calloc((size_t)threads, sizeof *w), "calloc");
    for (int t = 0; t < threads; t++) {
        w[t].index = (unsigned)t;
        w[t].threads = (unsigned)threads;
        w[t].requests = total / (uint64_t)threads + ((uint64_t)t < total % (uint64_t)threads);
        w[t].lat_ns = gcshim_check(malloc(w[t].requests * sizeof(uint64_t)), "malloc");
        w[t].cache = &cache;
    }

    uint64_t t0 = gcshim_now_ns();
    for (int t = 0; t < threads; t++)
        if (pthread_create(&w[t].tid, NULL, worker, &w[t]) != 0) {
            fprintf(stderr, "server: pthread_create failed\n");
            return 1;
        }
    for (int t = 0; t < threads; t++)
        pthread_join(w[t].tid, NULL);
    uint64_t t1 = gcshim_now_ns();
    if (atomic_load(&failed))
        return 1;

    /* Every cache entry must still add up; the checksum covers them all. */
    size_t cached = 0;
    uint64_t checksum = 0;
    for (size_t s = 0; s < CACHE_SLOTS; s++) {
        const Result *r = cache->slot[s];
        if (!r) {
            fprintf(stderr, "server: FAILED: cache slot %zu is empty: live data lost\n", s);
            return 1;
        }
        if (result_sum(r) != r->sum) {
            fprintf(stderr, "server: FAILED: cache slot %zu (%s %#llx): checksum mismatch: live data lost "
                    "or corrupted\n", s, r->id >> 63 ? "filled before the clock, slot" : "request",
                    (unsigned long long)(r->id >> 63 ? r->id & ~(1ull << 63) : r->id));
            return 1;
        }
        checksum = gcshim_fold(gcshim_fold(gcshim_fold(checksum, s), r->id), result_sum(r));
        cached++;
    }

    uint64_t *lat = gcshim_check(malloc(total * sizeof *lat), "malloc");
    uint64_t n = 0, kept = 0;
    for (int t = 0; t < threads; t++) {
        kept += w[t].kept;
        memcpy(lat + n, w[t].lat_ns, w[t].requests * sizeof *lat);
        n += w[t].requests;
        free(w[t].lat_ns);
    }
    free(w);
    qsort(lat, n, sizeof *lat, gcshim_cmp_u64);
    double p50 = lat[gcshim_rank_index(n, 50)] / 1e3, p99 = lat[gcshim_rank_index(n, 99)] / 1e3,
           max = lat[n - 1] / 1e3;
    free(lat);
    double secs = (t1 - t0) / 1e9;
    if (verbose)
        fprintf(stderr, "server: %llu requests on %d threads in %.0f ms\n", (unsigned long long)n, threads,
                secs * 1e3);

    char bench[32], extra[256];
    if (threads == 4)
        snprintf(bench, sizeof bench, "server");
    else
        snprintf(bench, sizeof bench, "server_t%d", threads);
    snprintf(extra, sizeof extra,
             "threads=%d requests=%llu rps=%.0f req_p50_us=%.1f req_p99_us=%.1f req_max_us=%.1f kept=%llu cached=%zu",
             threads, (unsigned long long)n, n / secs, p50, p99, max, (unsigned long long)kept, cached);
    gcshim_report(bench, t1 - t0, checksum, extra);
    gcshim_shutdown();
    return 0;
}
