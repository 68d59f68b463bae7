/*
 * server_conns.c — a request server whose connection threads come and go:
 * throughput, per-request latency, the memory traffic behind them, and what
 * attaching and detaching a thread costs under load.
 *
 * R requests (R = 200,000 x --scale, at least 400) are served by
 * connections of C requests each (--per-conn, default 2,000). Four
 * connections run at a time (--threads): each is a new thread that
 * attaches to the collector, serves its C requests, detaches and exits;
 * a launcher (not attached) then starts the next one in its place. A
 * request:
 *
 *   1. builds a binary tree of 15-255 Nodes (48 bytes, two references)
 *      by inserting random keys, its checksum computed while generating;
 *   2. allocates a pointer-free body of 0.5-16 KiB (1 in 50: 64-256 KiB)
 *      and writes every word of it;
 *   3. walks the tree and checks its checksum (the body's allocation must
 *      not have disturbed it), then checks the body's first and last words;
 *   4. 1 in 10: publishes a Session (the tree's nodes down to depth 3, a
 *      48-byte pointer-free token, the id and a checksum) into a random
 *      slot of a shared cache of 50,000 references under a mutex
 *      (GCSHIM_STORE); connection k writes only the slots s with
 *      s % 4 == k % 4, so that the cache at the end does not depend on how
 *      the threads interleave (slots belong to one lane of 4).
 *
 * The cache is filled before the clock starts (about 20 MiB live). At the
 * end every cached session is checked. A mismatch means lost or corrupted
 * data: the program says so on stderr and exits 1.
 *
 * Counted over the timed phase: madvise calls (this program defines
 * madvise, counting each call before making the system call, so the
 * figure is the same for any collector linked to it) and page faults
 * (getrusage, minor + major), each per request; every attach and every
 * detach is timed.
 *
 *   server_conns_lull [-v] [--scale F] [--threads N] [--per-conn C]
 *                                              (server_conns_boehm: same)
 *
 * Prints one RESULT line (bench=server_conns; checksum= over every cache
 * slot's id and contents) with the extra keys threads=T requests=R conns=K
 * rps=... req_p50_us=... req_p999_us=... req_max_us=... madvise_per_req=...
 * faults_per_req=... attach_p50_us=... attach_max_us=... detach_p50_us=...
 * detach_max_us=... kept=..., then the PAUSES line.
 */
#include "gcshim.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
    CACHE_SLOTS = 50000,
    SESSION_ONE_IN = 10,
    BIG_BODY_ONE_IN = 50,
    SESSION_DEPTH = 3,          /* a session copies the tree's nodes of depth < 3 */
    TOKEN_BYTES = 48,
    MAX_LANES = 64,
};

/* Every madvise call of the process, the collector's included. */
static atomic_ulong madvise_calls;
int madvise(void *addr, size_t len, int advice)
{
    atomic_fetch_add_explicit(&madvise_calls, 1, memory_order_relaxed);
    return (int)syscall(SYS_madvise, addr, len, advice);
}

typedef struct Bytes {
    gcshim_array_header a;
    uint64_t w[];
} Bytes;
GCSHIM_ARRAY_TYPE(bytes_type, Bytes, 1, 0);

typedef struct Node {
    gcshim_header h;
    struct Node *left, *right;
    uint64_t key, val;
    uint64_t pad;
} Node;
GCSHIM_TYPE(node_type, Node, GCSHIM_REF(Node, left) | GCSHIM_REF(Node, right));

typedef struct Session {
    gcshim_header h;
    Node *top;                 /* a copy of the request tree's top levels */
    Bytes *token;              /* TOKEN_BYTES */
    uint64_t id;
    uint64_t sum;              /* session_sum() of the above */
} Session;
GCSHIM_TYPE(session_type, Session, GCSHIM_REF(Session, top) | GCSHIM_REF(Session, token));

typedef struct Cache {
    gcshim_array_header a;
    Session *slot[];
} Cache;
GCSHIM_ARRAY_TYPE(cache_type, Cache, sizeof(Session *), 1);

static int verbose;
static atomic_int failed;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static inline uint64_t node_hash(const Node *n) { return gcshim_hash(gcshim_hash(0x70DE, n->key), n->val); }

static void fail(const char *what, uint64_t id)
{
    fprintf(stderr, "server_conns: FAILED: %s (id %#llx): live data lost or corrupted\n", what,
            (unsigned long long)id);
    atomic_store(&failed, 1);
}

/* Insert a node with `key` into the tree at *root (held by the caller);
 * returns its node_hash. The walk re-reads each slot after the allocation. */
static uint64_t insert(Node **root, uint64_t key, uint64_t val)
{
    Node *n = gcshim_alloc(&node_type);
    n->key = key;
    n->val = val;
    if (!*root) {
        *root = n;
        return node_hash(n);
    }
    Node *at = *root;
    for (;;) {
        Node **slot = key < at->key ? &at->left : &at->right;
        if (!*slot) {
            GCSHIM_STORE(at, slot, n);
            return node_hash(n);
        }
        at = *slot;
    }
}

/* The sum of node_hash over the tree, and its node count in *count. */
static uint64_t tree_sum(const Node *n, unsigned *count)
{
    uint64_t sum = 0;
    while (n) {
        ++*count;
        sum += node_hash(n) + tree_sum(n->left, count);
        n = n->right;
    }
    return sum;
}

/* A copy of n's nodes of depth < depth (allocated; *sum gets their hashes). */
static Node *copy_top(const Node *n, unsigned depth, uint64_t *sum)
{
    if (!n || !depth)
        return NULL;
    Node *c = gcshim_alloc(&node_type);
    c->key = n->key;
    c->val = n->val;
    *sum += node_hash(c);
    Node *l = copy_top(n->left, depth - 1, sum);
    GCSHIM_SET(c, left, l);
    Node *r = copy_top(n->right, depth - 1, sum);
    GCSHIM_SET(c, right, r);
    return c;
}

static uint64_t token_sum(const Bytes *t)
{
    uint64_t h = 0x70CE;
    for (size_t i = 0; i < TOKEN_BYTES / 8; i++)
        h = gcshim_hash(h, t->w[i]);
    return h;
}

static uint64_t session_sum(const Session *s)
{
    unsigned n = 0;
    return gcshim_hash(gcshim_hash(tree_sum(s->top, &n), token_sum(s->token)), s->id) + n;
}

/* A session for tree `root` of request `id`. */
static Session *make_session(uint64_t *rng, const Node *root, uint64_t id)
{
    Session *s = gcshim_alloc(&session_type);
    s->id = id;
    uint64_t ignored = 0;
    Node *top = copy_top(root, SESSION_DEPTH, &ignored);
    GCSHIM_SET(s, top, top);
    Bytes *t = gcshim_alloc_array(&bytes_type, TOKEN_BYTES);
    for (size_t i = 0; i < TOKEN_BYTES / 8; i++)
        t->w[i] = gcshim_splitmix(rng);
    GCSHIM_SET(s, token, t);
    s->sum = session_sum(s);
    return s;
}

static void cache_put(Cache *c, size_t slot, Session *s)
{
    pthread_mutex_lock(&cache_lock);
    GCSHIM_STORE(c, &c->slot[slot], s);
    pthread_mutex_unlock(&cache_lock);
}

/* Serve request `id`; false after a failed check. */
static bool serve(Cache *cache, uint64_t *rng, uint64_t id, unsigned lane, unsigned lanes, uint64_t *kept)
{
    Node *root = NULL;
    unsigned nodes = 15 + (unsigned)gcshim_split_below(rng, 241);
    uint64_t expect = 0;
    for (unsigned i = 0; i < nodes; i++)
        expect += insert(&root, gcshim_splitmix(rng), i);

    size_t body_bytes = gcshim_split_below(rng, BIG_BODY_ONE_IN) == 0 ? 65536 + 8 * gcshim_split_below(rng, (262144 - 65536) / 8 + 1)
                                                         : 512 + 8 * gcshim_split_below(rng, (16384 - 512) / 8 + 1);
    Bytes *body = gcshim_alloc_array(&bytes_type, body_bytes);
    size_t words = body_bytes / 8;
    uint64_t seed = gcshim_splitmix(rng);
    for (size_t i = 0; i < words; i++)
        body->w[i] = seed + i;

    unsigned count = 0;
    if (tree_sum(root, &count) != expect || count != nodes) {
        fail("request tree checksum", id);
        return false;
    }
    if (body->a.length != body_bytes || body->w[0] != seed || body->w[words - 1] != seed + words - 1) {
        fail("request body", id);
        return false;
    }
    if (gcshim_split_below(rng, SESSION_ONE_IN) == 0) {
        size_t own = (CACHE_SLOTS - lane + lanes - 1) / lanes;     /* slots lane, lane + lanes, ... */
        cache_put(cache, lane + (size_t)lanes * gcshim_split_below(rng, own), make_session(rng, root, id));
        ++*kept;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Connections and lanes                                                    */
/* ------------------------------------------------------------------------ */

typedef struct Conn {
    unsigned lane, lanes;
    uint64_t first, requests;  /* its requests: first .. first + requests - 1 */
    uint64_t *lat_ns;          /* the run's latency array (slots first..) */
    uint64_t *attach_ns, *detach_ns;   /* this connection's slot */
    uint64_t kept;
    Cache **cache;             /* main's local, on main's (scanned) stack */
} Conn;

static void *connection(void *arg)
{
    Conn *c = arg;
    uint64_t a0 = gcshim_now_ns();
    gcshim_thread_attach();
    *c->attach_ns = gcshim_now_ns() - a0;
    Cache *cache = *c->cache;
    uint64_t rng = 0x5E55u ^ (c->first * 0x9E3779B97F4A7C15u);
    for (uint64_t n = 0; n < c->requests && !atomic_load_explicit(&failed, memory_order_relaxed); n++) {
        uint64_t t0 = gcshim_now_ns();
        bool ok = serve(cache, &rng, c->first + n, c->lane, c->lanes, &c->kept);
        c->lat_ns[c->first + n] = gcshim_now_ns() - t0;
        if (!ok)
            break;
    }
    uint64_t d0 = gcshim_now_ns();
    gcshim_thread_detach();
    *c->detach_ns = gcshim_now_ns() - d0;
    return NULL;
}

/* A lane: starts its connections one after another (never attached). */
typedef struct Lane {
    pthread_t tid;
    Conn *conns;
    size_t n;
} Lane;

static void *lane_run(void *arg)
{
    Lane *l = arg;
    for (size_t i = 0; i < l->n && !atomic_load(&failed); i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, connection, &l->conns[i]) != 0) {
            fprintf(stderr, "server_conns: pthread_create failed\n");
            atomic_store(&failed, 1);
            break;
        }
        pthread_join(t, NULL);
    }
    return NULL;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-v] [--scale F] [--threads N] [--per-conn C]\n", argv0);
    exit(2);
}

static uint64_t faults_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

static double pct_us(uint64_t *v, size_t n, double p)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, gcshim_cmp_u64);
    double rank = ceil(p / 100.0 * (double)n);        /* nearest rank, 1-based */
    size_t i = rank < 1 ? 0 : (size_t)rank - 1;
    return v[i < n ? i : n - 1] / 1e3;
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    int lanes = 4;
    long per_conn = 2000;
    for (int i = 1; i < argc; i++) {
        if (gcshim_common_option(argc, argv, &i, &scale, &verbose, usage))
            continue;
        char *end;
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            lanes = (int)strtol(argv[++i], &end, 10);
            if (*end || lanes < 1 || lanes > MAX_LANES)
                usage(argv[0]);
        } else if (!strcmp(argv[i], "--per-conn") && i + 1 < argc) {
            per_conn = strtol(argv[++i], &end, 10);
            if (*end || per_conn < 1 || per_conn > 10000000)
                usage(argv[0]);
        } else {
            usage(argv[0]);
        }
    }
    double rd = 200000.0 * scale;
    uint64_t total = rd < 400 ? 400 : (uint64_t)rd;

    gcshim_init();
    Cache *cache = gcshim_alloc_array(&cache_type, CACHE_SLOTS);
    {
        /* Fill the cache before the clock starts: sessions of small trees. */
        uint64_t rng = 0xCAC4E;
        for (size_t s = 0; s < CACHE_SLOTS; s++) {
            Node *root = NULL;
            for (unsigned i = 0; i < 15; i++)
                insert(&root, gcshim_splitmix(&rng), i);
            GCSHIM_STORE(cache, &cache->slot[s], make_session(&rng, root, (uint64_t)1 << 63 | s));
        }
    }

    /* Connections, dealt round-robin to the lanes. */
    size_t nconns = (size_t)((total + (uint64_t)per_conn - 1) / (uint64_t)per_conn);
    uint64_t *lat = gcshim_check(calloc(total, sizeof *lat), "calloc");
    uint64_t *att = gcshim_check(calloc(nconns, sizeof *att), "calloc");
    uint64_t *det = gcshim_check(calloc(nconns, sizeof *det), "calloc");
    Lane lane[MAX_LANES];
    Conn *ordered = gcshim_check(calloc(nconns, sizeof *ordered), "calloc");
    size_t o = 0;
    for (int l = 0; l < lanes; l++) {
        lane[l].conns = ordered + o;
        lane[l].n = 0;
        for (size_t k = (size_t)l; k < nconns; k += (size_t)lanes) {
            Conn *c = &ordered[o++];
            c->lane = (unsigned)l;
            c->lanes = (unsigned)lanes;
            c->first = (uint64_t)k * (uint64_t)per_conn;
            c->requests = total - c->first < (uint64_t)per_conn ? total - c->first : (uint64_t)per_conn;
            c->lat_ns = lat;
            c->attach_ns = &att[k];
            c->detach_ns = &det[k];
            c->cache = &cache;
            lane[l].n++;
        }
    }

    uint64_t madv0 = atomic_load(&madvise_calls), f0 = faults_now();
    uint64_t t0 = gcshim_now_ns();
    for (int l = 0; l < lanes; l++)
        if (pthread_create(&lane[l].tid, NULL, lane_run, &lane[l]) != 0) {
            fprintf(stderr, "server_conns: pthread_create failed\n");
            return 1;
        }
    for (int l = 0; l < lanes; l++)
        pthread_join(lane[l].tid, NULL);
    uint64_t t1 = gcshim_now_ns();
    uint64_t madv = atomic_load(&madvise_calls) - madv0, faults = faults_now() - f0;
    if (atomic_load(&failed))
        return 1;

    /* Every cached session must still add up. */
    uint64_t checksum = 0;
    for (size_t s = 0; s < CACHE_SLOTS; s++) {
        const Session *r = cache->slot[s];
        if (!r || session_sum(r) != r->sum) {
            fprintf(stderr, "server_conns: FAILED: cache slot %zu %s: live data lost or corrupted\n", s,
                    r ? "checksum mismatch" : "is empty");
            return 1;
        }
        checksum = gcshim_fold(gcshim_fold(gcshim_fold(checksum, s), r->id), r->sum);
    }

    uint64_t kept = 0;
    for (size_t k = 0; k < nconns; k++)
        kept += ordered[k].kept;
    double secs = (t1 - t0) / 1e9;
    double p50 = pct_us(lat, total, 50), p999 = pct_us(lat, total, 99.9), max = pct_us(lat, total, 100);
    double a50 = pct_us(att, nconns, 50), amax = pct_us(att, nconns, 100);
    double d50 = pct_us(det, nconns, 50), dmax = pct_us(det, nconns, 100);
    if (verbose)
        fprintf(stderr, "server_conns: %llu requests, %zu connections on %d lanes in %.0f ms\n",
                (unsigned long long)total, nconns, lanes, secs * 1e3);
    char extra[512];
    snprintf(extra, sizeof extra,
             "threads=%d requests=%llu conns=%zu rps=%.0f req_p50_us=%.1f req_p999_us=%.1f req_max_us=%.1f "
             "madvise_per_req=%.3f faults_per_req=%.2f attach_p50_us=%.1f attach_max_us=%.1f detach_p50_us=%.1f "
             "detach_max_us=%.1f kept=%llu",
             lanes, (unsigned long long)total, nconns, total / secs, p50, p999, max, (double)madv / (double)total,
             (double)faults / (double)total, a50, amax, d50, dmax, (unsigned long long)kept);
    gcshim_report("server_conns", t1 - t0, checksum, extra);
    free(lat);
    free(att);
    free(det);
    free(ordered);
    gcshim_shutdown();
    return 0;
}
