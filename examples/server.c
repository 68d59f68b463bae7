/*
 * server.c — a request-serving program on lull: a starting point for a
 * server that links the library.
 *
 * Worker threads take requests from a shared counter. Each request
 * arrives on a connection and names a key (a skewed choice among KEYS):
 *
 *   - the result for the key is looked up in a shared cache that holds
 *     results through WEAK handles: an entry stays while something keeps
 *     its result alive, and vanishes once a collection finds the result
 *     unreachable (the cache never keeps memory the program does not use);
 *     no lock: the handles themselves are lock-free.
 *     Each worker keeps its last RECENT results strongly, so the hot keys
 *     survive minors and live in the old generation until a major needs
 *     their memory;
 *   - on a miss the request is "parsed" into a per-request object graph (a
 *     document of 20-60 linked tokens, each with a value buffer), the
 *     result is computed from it and stored in the cache; the graph is
 *     garbage afterwards;
 *   - every cached result is checked (key and checksum) on each hit.
 *
 * Connections are heap objects that own an external resource (here a slot
 * in a table of open connections, standing for a socket). A worker uses a
 * connection for up to KEEPALIVE requests and then just drops it: a
 * finalizer registered on the connection releases the resource once the
 * collector finds it unreachable. At the end the program waits for the
 * finalizers to close every connection. Each connection also owns a
 * receive buffer of CONN_BUFFER bytes outside the heap (malloc), which its
 * finalizer frees: the buffers are memory pressure
 * (lull_add_memory_pressure when allocated, lull_remove_memory_pressure
 * when freed), so that majors, which find dropped connections, come as
 * often as the buffers' memory asks, not only the heap's.
 *
 * Between connections (when a worker drops one) it gives lull a moment of
 * idle time (lull_idle), where a minor or a major's pause may run between
 * requests rather than in one. The heap is capped (max-heap-size=1g).
 *
 * Synchronous (stop-the-world) majors are switched off with
 * lull_set_allow_synchronous_major(false): majors mark concurrently, and
 * requests see only the short pauses.
 *
 *   server [--seconds S] [--threads N]       (defaults: 3 s, 4 threads)
 *
 * Prints a progress line every second, then requests per second, request
 * latency percentiles, cache and connection figures and lull's pauses.
 * Exits 1 if a cached result is wrong, a connection is never closed, or
 * the cache's weak entries still hold their results after the workers
 * are gone and a major has run.
 */
#include <lull.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEYS        50000
#define RECENT      256          /* results each worker keeps strongly */
#define KEEPALIVE   64           /* requests per connection */
#define MAX_THREADS 64
#define MAX_CONNS   (1u << 16)   /* the "socket" table */
#define LAT_CAP     (1u << 22)   /* latency samples kept per worker */
#define CONN_BUFFER (16u << 10)  /* a connection's receive buffer, outside the heap */
#define IDLE_NS     100000u      /* idle time given between connections */

/* ---- heap objects ---- */

struct token {                   /* a parsed token: a linked list */
    lull_header h;
    struct token *next;
    struct bytes *value;
    uint64_t kind;
};
struct bytes {                   /* pointer-free */
    lull_array_header a;
    unsigned char d[];
};
struct result {                  /* what the cache holds */
    lull_header h;
    struct bytes *digest;
    uint64_t key, checksum, tokens;
};
struct conn {                    /* a connection owning a "socket" */
    lull_header h;
    uint64_t slot;               /* in conn_open[] */
    uint64_t requests;
};

static const lull_type token_type = {
    .name = "token", .size = sizeof(struct token),
    .refs = LULL_REF(struct token, next) | LULL_REF(struct token, value),
};
static const lull_type bytes_type = { .name = "bytes", .size = sizeof(struct bytes), .elem_size = 1 };
static const lull_type result_type = {
    .name = "result", .size = sizeof(struct result), .refs = LULL_REF(struct result, digest),
};
static const lull_type conn_type = { .name = "conn", .size = sizeof(struct conn) };

/* A worker's recent results: a heap array held by a precise root. */
struct recent {
    lull_array_header a;
    struct result *r[];
};
static const lull_type recent_type = {
    .name = "recent", .size = sizeof(struct recent), .elem_size = sizeof(void *), .elem_refs = 1,
};

/* ---- the cache: key -> WEAK handle, with no lock ----
 *
 * A key's handle is made once (the first thread to install it with a
 * compare-and-swap wins; a loser frees its own) and never freed while the
 * workers run: a handle read from the array is always valid. Reading it,
 * and re-targeting it after a miss, are lull's own lock-free calls (two
 * workers re-targeting one key at once: the last one stays, either is
 * right). No mutex is held around lull calls, which also keeps the program
 * right under ThreadSanitizer: a thread blocked in pthread_mutex_lock on a
 * lock held by a thread a pause stopped would never stop itself there
 * (README, Behaviour worth knowing). */
static _Atomic lull_handle cache[KEYS];  /* 0: never filled */

/* ---- connections: the external resource ---- */

static atomic_uchar conn_open[MAX_CONNS];
static _Atomic(void *) conn_buffer[MAX_CONNS];   /* owned by the open connection in the slot */
static atomic_uint conn_next;
static atomic_long conns_open, conns_opened, conns_closed, conns_open_max;

static void conn_finalize(void *obj, void *data)
{
    (void)data;
    struct conn *c = obj;
    /* A real server would close(c->fd) here. The buffer goes first: once
     * the slot is closed, another connection may take it. */
    free(atomic_exchange(&conn_buffer[c->slot], NULL));
    lull_remove_memory_pressure(CONN_BUFFER);
    if (!atomic_exchange(&conn_open[c->slot], 0)) {
        fprintf(stderr, "server: FAIL: connection %" PRIu64 " closed twice\n", c->slot);
        exit(1);
    }
    atomic_fetch_sub(&conns_open, 1);
    atomic_fetch_add(&conns_closed, 1);
}

static struct conn *conn_accept(void)
{
    for (unsigned tries = 0;; tries++) {
        if (tries == MAX_CONNS) {
            fprintf(stderr, "server: FAIL: %u connections open: finalizers are not closing them\n", MAX_CONNS);
            exit(1);
        }
        unsigned s = atomic_fetch_add(&conn_next, 1) % MAX_CONNS;
        unsigned char closed = 0;
        if (!atomic_compare_exchange_strong(&conn_open[s], &closed, 1))
            continue;            /* still open: the next slot */
        struct conn *c = lull_alloc(&conn_type);
        if (!c) {
            fprintf(stderr, "server: FAIL: out of memory\n");
            exit(1);
        }
        c->slot = s;
        void *buf = malloc(CONN_BUFFER);
        if (!buf) {
            fprintf(stderr, "server: FAIL: out of memory\n");
            exit(1);
        }
        memset(buf, 0, CONN_BUFFER);     /* touched, as a socket's buffer is */
        atomic_store(&conn_buffer[s], buf);
        lull_add_memory_pressure(CONN_BUFFER);
        if (lull_register_finalizer(c, conn_finalize, NULL) != 0) {
            fprintf(stderr, "server: FAIL: lull_register_finalizer\n");
            exit(1);
        }
        long open = atomic_fetch_add(&conns_open, 1) + 1;
        atomic_fetch_add(&conns_opened, 1);
        for (long m = atomic_load(&conns_open_max); open > m && !atomic_compare_exchange_weak(&conns_open_max, &m, open);)
            ;
        return c;
    }
}

/* ---- requests ---- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A skewed key: half the requests go to 2% of the keys. */
static uint64_t key_of(uint64_t request)
{
    uint64_t r = mix64(request);
    return (r & 1) ? (r >> 1) % (KEYS / 50) : (r >> 1) % KEYS;
}

/* The answer for a key, computed without the heap: what a hit must match. */
static uint64_t expected_checksum(uint64_t key, uint64_t *ntokens)
{
    uint64_t n = 20 + mix64(key) % 41, sum = key;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = 8 + mix64(key * 64 + i) % 56;
        for (uint64_t j = 0; j < len; j++)
            sum = sum * 31 + (unsigned char)mix64(key ^ (i << 20) ^ j);
    }
    *ntokens = n;
    return sum;
}

static void *alloc_or_die(const lull_type *t, size_t n, bool array)
{
    void *p = array ? lull_alloc_array(t, n) : lull_alloc(t);
    if (!p) {
        fprintf(stderr, "server: FAIL: out of memory\n");
        exit(1);
    }
    return p;
}

/* Parse the request into a graph, then compute the result from the graph. */
static struct result *handle_miss(uint64_t key)
{
    uint64_t n = 20 + mix64(key) % 41;
    struct token *head = NULL;
    for (uint64_t i = n; i-- > 0;) {            /* built back to front */
        struct token *t = alloc_or_die(&token_type, 0, false);
        uint64_t len = 8 + mix64(key * 64 + i) % 56;
        struct bytes *v = alloc_or_die(&bytes_type, len, true);
        for (uint64_t j = 0; j < len; j++)
            v->d[j] = (unsigned char)mix64(key ^ (i << 20) ^ j);
        t->kind = i;
        LULL_SET(t, value, v);
        LULL_SET(t, next, head);
        head = t;
    }
    struct result *r = alloc_or_die(&result_type, 0, false);
    r->key = key;
    uint64_t sum = key;
    for (const struct token *t = head; t; t = t->next, r->tokens++)
        for (size_t j = 0; j < lull_array_length(t->value); j++)
            sum = sum * 31 + t->value->d[j];
    r->checksum = sum;
    struct bytes *d = alloc_or_die(&bytes_type, 32, true);
    for (int j = 0; j < 32; j++)
        d->d[j] = (unsigned char)(sum >> (j % 8 * 8));
    LULL_SET(r, digest, d);
    return r;
}

/* Every hit: the key and the digest agree with the stored checksum; with
 * `full`, the checksum is recomputed for the key too. */
static void check_result(const struct result *r, uint64_t key, bool full)
{
    uint64_t tokens = r->tokens, sum = r->checksum;
    if (full)
        sum = expected_checksum(key, &tokens);
    bool digest_ok = lull_array_length(r->digest) == 32;
    for (int j = 0; digest_ok && j < 32; j++)
        digest_ok = r->digest->d[j] == (unsigned char)(r->checksum >> (j % 8 * 8));
    if (r->key != key || r->checksum != sum || r->tokens != tokens || !digest_ok) {
        fprintf(stderr, "server: FAIL: the cached result for key %" PRIu64 " is wrong (key %" PRIu64
                ", checksum %#" PRIx64 ", expected %#" PRIx64 ")\n", key, r->key, r->checksum, sum);
        exit(1);
    }
}

/* ---- workers ---- */

struct worker {
    pthread_t th;
    struct recent *recent;       /* a precise root */
    uint64_t *lat_ns;            /* latency samples */
    atomic_uint_fast64_t served, hits;   /* written by the worker, read by the progress line */
    uint64_t misses, cleared;
};

static struct worker workers[MAX_THREADS];
static atomic_uint_fast64_t next_request;
static atomic_bool stopping;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void serve(struct worker *w, struct conn *c, uint64_t request)
{
    uint64_t key = key_of(request);
    lull_handle h = atomic_load_explicit(&cache[key], memory_order_acquire);
    struct result *r = h ? lull_handle_get(h) : NULL;
    uint64_t served = atomic_load_explicit(&w->served, memory_order_relaxed);
    if (r) {
        check_result(r, key, served % 64 == 0);
        atomic_store_explicit(&w->hits, atomic_load_explicit(&w->hits, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    } else {
        if (h)
            w->cleared++;        /* it was cached once: the collector took it */
        r = handle_miss(key);
        if (h) {
            lull_handle_set(h, r);
        } else {
            lull_handle mine = lull_handle_new(r, LULL_HANDLE_WEAK);
            if (!mine) {
                fprintf(stderr, "server: FAIL: lull_handle_new\n");
                exit(1);
            }
            lull_handle theirs = 0;
            if (!atomic_compare_exchange_strong_explicit(&cache[key], &theirs, mine, memory_order_acq_rel,
                                                         memory_order_acquire)) {
                lull_handle_free(mine);          /* another worker installed one first */
                lull_handle_set(theirs, r);
            }
        }
        w->misses++;
    }
    lull_store(w->recent, &w->recent->r[served % RECENT], r);
    c->requests++;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    if (lull_thread_attach() != 0) {
        fprintf(stderr, "server: FAIL: lull_thread_attach\n");
        exit(1);
    }
    w->recent = alloc_or_die(&recent_type, RECENT, true);
    struct conn *c = NULL;
    while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        uint64_t t0 = now_ns();
        if (!c || c->requests == KEEPALIVE) {
            if (c)
                lull_idle(IDLE_NS);      /* between connections: a moment for lull */
            c = conn_accept();   /* the old one is dropped: its finalizer closes it */
        }
        serve(w, c, atomic_fetch_add_explicit(&next_request, 1, memory_order_relaxed));
        uint64_t served = atomic_load_explicit(&w->served, memory_order_relaxed);
        if (served < LAT_CAP)
            w->lat_ns[served] = now_ns() - t0;
        atomic_store_explicit(&w->served, served + 1, memory_order_relaxed);
    }
    w->recent = NULL;
    lull_thread_detach();
    return NULL;
}

/* Sleep until `deadline` (CLOCK_MONOTONIC ns). In slices of at most 10 ms:
 * this thread is attached (lull_init attached it), so the collector's
 * stop signals interrupt the sleep, and a relative sleep is simply resumed
 * with what is left. */
static void sleep_until(uint64_t deadline)
{
    for (uint64_t t; (t = now_ns()) < deadline;) {
        uint64_t left = deadline - t;
        struct timespec ts = { 0, (long)(left < 10000000ull ? left : 10000000ull) };
        nanosleep(&ts, NULL);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    double seconds = 3.0;
    int threads = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: server [--seconds S] [--threads N]\n");
            return 2;
        }
    }
    if (!(seconds > 0) || threads < 1 || threads > MAX_THREADS) {
        fprintf(stderr, "server: --seconds must be > 0 and --threads 1..%d\n", MAX_THREADS);
        return 2;
    }
    int rc = lull_init("max-heap-size=1g");
    if (rc != 0) {
        fprintf(stderr, "server: lull_init failed: %s\n", strerror(-rc));
        return 1;
    }
    /* A server prefers concurrent majors: requests then see only the short
     * initial and final pauses of a mark. */
    lull_set_allow_synchronous_major(false);

    for (int t = 0; t < threads; t++) {
        workers[t].lat_ns = malloc(LAT_CAP * sizeof(uint64_t));
        if (!workers[t].lat_ns || lull_root_add_refs((void **)&workers[t].recent, 1) != 0) {
            fprintf(stderr, "server: setup failed\n");
            return 1;
        }
        if (pthread_create(&workers[t].th, NULL, worker_main, &workers[t]) != 0) {
            fprintf(stderr, "server: pthread_create failed\n");
            return 1;
        }
    }
    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), last = start, last_served = 0;
    for (int sec = 1;; sec++) {
        uint64_t until = start + (uint64_t)sec * 1000000000ull;
        if (until > end)
            until = end;
        sleep_until(until);
        uint64_t served = 0, hits = 0;
        for (int t = 0; t < threads; t++)
            served += workers[t].served, hits += workers[t].hits;
        lull_stats st;
        lull_get_stats(&st);
        uint64_t now = now_ns();
        printf("server: %2d s: %8.0f req/s, cache hits %4.1f%%, %3ld connections open, heap %" PRIu64
               " MiB, %" PRIu64 " minors, %" PRIu64 " majors\n", sec,
               (double)(served - last_served) / ((double)(now - last) / 1e9),
               served ? 100.0 * (double)hits / (double)served : 0.0, atomic_load(&conns_open),
               st.heap_bytes >> 20, st.collections_minor, st.collections_major);
        fflush(stdout);
        last = now, last_served = served;
        if (until == end)
            break;
    }
    atomic_store(&stopping, true);
    for (int t = 0; t < threads; t++)
        pthread_join(workers[t].th, NULL);
    double elapsed = (double)(now_ns() - start) / 1e9;

    /* Every dropped connection is closed by its finalizer once a
     * collection finds it unreachable. */
    for (int i = 0; i < 500 && atomic_load(&conns_open) > 0; i++) {
        if (i % 50 == 0)
            lull_collect(LULL_GEN_MAJOR);
        sleep_until(now_ns() + 10000000ull);
    }

    /* The workers are gone, and with them their recent results: only the
     * cache's weak handles refer to results now, so a major clears every
     * entry. A word on this thread's stack that happens to look like a
     * pointer may keep one (conservative scanning): at most 1% stay, and
     * each one that stays must still be right. */
    lull_collect(LULL_GEN_MAJOR);
    uint64_t filled = 0, kept = 0;
    for (uint64_t k = 0; k < KEYS; k++) {
        lull_handle h = atomic_load(&cache[k]);
        struct result *r = h ? lull_handle_get(h) : NULL;
        filled += h != 0;
        if (r) {
            check_result(r, k, true);
            kept++;
        }
    }

    uint64_t served = 0, hits = 0, misses = 0, cleared = 0, n = 0;
    for (int t = 0; t < threads; t++)
        served += workers[t].served, hits += workers[t].hits, misses += workers[t].misses,
            cleared += workers[t].cleared;
    uint64_t *all = malloc((served < LAT_CAP * (uint64_t)threads ? served : LAT_CAP * (uint64_t)threads) *
                           sizeof *all + 8);
    for (int t = 0; t < threads && all; t++) {
        uint64_t k = workers[t].served < LAT_CAP ? workers[t].served : LAT_CAP;
        memcpy(all + n, workers[t].lat_ns, k * sizeof *all);
        n += k;
    }
    if (all && n)
        qsort(all, n, sizeof *all, cmp_u64);
#define PCT(p) (all && n ? (double)all[(size_t)((double)(n - 1) * (p))] / 1e3 : 0.0)
    lull_stats st;
    lull_get_stats(&st);
    printf("server: %d threads, %.1f s: %" PRIu64 " requests, %.0f req/s; latency p50 %.1f us, p99 %.1f us, "
           "p99.9 %.1f us, max %.1f us\n", threads, elapsed, served, (double)served / elapsed, PCT(0.50),
           PCT(0.99), PCT(0.999), all && n ? (double)all[n - 1] / 1e3 : 0.0);
    printf("server: cache: %" PRIu64 " hits, %" PRIu64 " misses (%" PRIu64 " of them entries the collector "
           "cleared), at the end %" PRIu64 " of %" PRIu64 " entries cleared; connections: %ld opened, %ld closed "
           "by finalizers, at most %ld open at once\n", hits, misses, cleared, filled - kept, filled,
           atomic_load(&conns_opened), atomic_load(&conns_closed), atomic_load(&conns_open_max));
    printf("server: lull: %" PRIu64 " minors, %" PRIu64 " majors (%" PRIu64 " synchronous), pauses p50 %.3f ms, "
           "p99 %.3f ms, max %.3f ms\n", st.collections_minor, st.collections_major, st.collections_major_sync,
           st.pause_p50_ns / 1e6, st.pause_p99_ns / 1e6, st.pause_max_ns / 1e6);
    free(all);
    int status = 0;
    if (atomic_load(&conns_open) != 0) {
        fprintf(stderr, "server: FAIL: %ld connections were never closed by their finalizers\n",
                atomic_load(&conns_open));
        status = 1;
    }
    if (!served || !hits || !filled) {
        fprintf(stderr, "server: FAIL: the run did not exercise the cache (%" PRIu64 " requests, %" PRIu64
                " hits, %" PRIu64 " entries)\n", served, hits, filled);
        status = 1;
    }
    if (kept > filled / 100) {
        fprintf(stderr, "server: FAIL: %" PRIu64 " of %" PRIu64 " cache entries outlived the last reference to "
                "their result\n", kept, filled);
        status = 1;
    }
    for (int t = 0; t < threads; t++) {
        lull_root_remove((void **)&workers[t].recent);
        free(workers[t].lat_ns);
    }
    for (int k = 0; k < KEYS; k++)
        if (atomic_load(&cache[k]))
            lull_handle_free(atomic_load(&cache[k]));
    lull_shutdown();
    return status;
}
