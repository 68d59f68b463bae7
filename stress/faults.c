/*
 * stress/faults.c — fault injection: the OS refuses memory every Nth time.
 *
 *   stress_faults [--seconds N] [--seed S] [--default-seconds N]
 *                 [--fail-every N] [--no-verify] [-v]
 *
 * Seconds: --seconds, else LULL_STRESS_SECONDS, else --default-seconds (10).
 *
 * The run is split into phases, one per N in 1, 3, 7, 11 (or just
 * --fail-every N). Each phase sets LULL_GC_DEBUG=<anything already there>,
 * verify,poison,fail-mmap=N (no verify,poison with --no-verify) before
 * lull_init, so every Nth request for memory from the OS (heap growth,
 * grey-stack sections) fails, and ends with lull_shutdown: the phases also
 * exercise a re-initialised collector.
 *
 * N >= 2: two mutator threads keep checksummed structures in a table behind
 * a precise root: linked lists (up to 1500 nodes), wide arrays of up to
 * 20000 references to small objects (the grey stack must grow while marking
 * them, so its sections are requested, and refused), and large objects with
 * a small one hanging off them. They build, extend, replace elements of,
 * check and drop structures, while a collector thread forces collections
 * every few milliseconds. The table's usable slots and the arrays' maximum
 * width grow through the phase, so the heap's high-water mark and the grey
 * stack keep growing and requests keep being made (lull asks the OS only
 * for growth: a heap at its high-water mark requests nothing). An
 * allocation may return NULL: errno must be ENOMEM, the half-built structure
 * is dropped, and every structure the thread holds is checked at once. At
 * the end of a phase everything is checked, collected, checked again.
 *
 * N = 1 (a short phase): every request fails, so the heap never grows past
 * the nursery it committed at lull_init. From two threads: every object
 * too big for the nursery must return NULL with errno ENOMEM; small
 * objects come from the nursery, and a chain of them kept alive must end
 * in ENOMEM before it outgrows the nursery (the minor collections cannot
 * promote, so survivors stay in place), intact; dropped, its room is
 * reused. Collections keep running throughout.
 *
 * What it proves: injected OS failures surface only as ENOMEM from
 * allocation, never as a crash, a lost or corrupted object or a heap that
 * the verifier (LULL_GC_DEBUG=verify, every collection) rejects.
 *
 * What it found: with N >= 2 no allocation ever fails. The heap retries a
 * refused commit at once with the bare minimum (blocks.c), which is the
 * next request and so is granted, and the allocator then collects and
 * retries again; grey-stack sections fall back to rescanning. So N >= 2
 * exercises the retry and overflow paths, and ENOMEM comes only with N = 1.
 *
 * Every phase must see lull refuse at least one request: with fail-mmap
 * set, lull writes one line per refusal ("lull: fail-mmap: refused request
 * K to the OS") straight to file descriptor 2. A phase points descriptor 2
 * at a temporary file (this program's own stdio stderr, and lull's
 * warnings, which go through stdio, keep the real one), counts the lines,
 * and runs on past its time, up to four times as long, until one refusal
 * was seen. A phase makes only 35 to 70 requests in a release build and
 * about 15 under ThreadSanitizer, since the heap requests only growth: the
 * last phase used to be fail-mmap=50 and refused nothing in 6 runs of 6.
 */
#include "stress_common.h"

#include <pthread.h>

#define MUTATORS 2
#define SLOTS 32
#define LIST_MAX 1500
#define APPEND_MAX 1000
#define WIDE_MAX 20000

struct refs {
    lull_array_header a;
    void *item[];
};
static const lull_type refs_type = {
    .name = "faults.refs", .size = sizeof(struct refs), .elem_size = sizeof(void *), .elem_refs = 1,
};

/* A wide array: e[i] is a small object with id `id + 1 + i`. */
struct wide {
    lull_array_header a;
    uint64_t id;
    uint64_t sum;                    /* stress_sum(id, length) */
    struct sobj *e[];
};
static const lull_type wide_type = {
    .name = "faults.wide", .size = sizeof(struct wide), .elem_size = sizeof(void *), .elem_refs = 1,
};

enum kind { S_NONE, S_LIST, S_WIDE, S_BIG, NKINDS };
static const char *const kind_name[NKINDS] = { "none", "list", "wide array", "large object" };

/* What a table slot should hold. */
struct desc {
    enum kind kind;
    uint64_t id;          /* list: id of the head; wide/big: id of the structure */
    size_t len;           /* list: nodes; wide: elements; big: payload words */
    uint64_t next_id;     /* list: the id the next appended head gets (up to limit_id) */
    uint64_t limit_id;
};

struct mut {
    unsigned idx;
    pthread_t thread;
    stress_rng rng;
    struct refs *table;              /* precise root */
    struct desc desc[SLOTS];
    uint64_t serial;
    uint64_t built[NKINDS], failed_builds, failed_mutations, enomem, checked_objects, checks_after_enomem;
};

static int fail_every_fixed;         /* --fail-every */
static double phase_t0, phase_seconds;

/* 0 at the start of the phase, 1 at its end. */
static double progress(void)
{
    double p = (stress_now() - phase_t0) / phase_seconds;
    return p < 0 ? 0 : p > 1 ? 1 : p;
}
static int verify_heap = 1;
static int stop;                     /* atomic */
static unsigned phase_no;
static struct mut muts[MUTATORS];

static uint64_t make_id(unsigned owner, uint64_t serial)
{
    return (uint64_t)0xfa << 56 | (uint64_t)(phase_no & 0xf) << 52 | (uint64_t)owner << 48 | serial;
}

/* Reserve `n` consecutive ids. */
static uint64_t take_ids(struct mut *m, uint64_t n)
{
    uint64_t base = make_id(m->idx, m->serial + 1);
    m->serial += n;
    return base;
}

/* ------------------------------------------------------------------------ */
/* Checking                                                                 */
/* ------------------------------------------------------------------------ */

static uint64_t check_slot(struct mut *m, unsigned slot, const char *when)
{
    struct desc *d = &m->desc[slot];
    void *root = m->table->item[slot];
    char w[160];
    snprintf(w, sizeof w, "phase %u (fail-mmap), thread %u, %s: %s in slot %u", phase_no, m->idx, when,
             kind_name[d->kind], slot);
    if ((root == NULL) != (d->kind == S_NONE))
        stress_fail("%s: slot holds %p", w, root);
    uint64_t n = 0;
    switch (d->kind) {
    case S_NONE:
        break;
    case S_LIST: {
        uint64_t id = d->id;
        for (const struct sobj *o = root; n < d->len; n++, id--) {
            STRESS_CHECK(o, id, "%s, node %" PRIu64 " of %zu", w, n, d->len);
            o = o->ref[0];
            if ((o == NULL) != (n + 1 == d->len))
                stress_fail("%s, node %" PRIu64 ": the list has %s nodes than %zu", w, n, o ? "more" : "fewer",
                            d->len);
        }
        break;
    }
    case S_WIDE: {
        const struct wide *a = root;
        if (lull_type_of(a) != &wide_type || a->id != d->id || a->a.length != d->len ||
            a->sum != stress_sum(d->id, d->len))
            stress_fail("%s: array %p has type %p, id 0x%" PRIx64 ", length %zu, sum 0x%" PRIx64 "; expected id 0x%"
                        PRIx64 ", length %zu", w, (const void *)a, (const void *)lull_type_of(a), a->id, a->a.length,
                        a->sum, d->id, d->len);
        for (size_t i = 0; i < d->len; i++)
            STRESS_CHECK(a->e[i], d->id + 1 + i, "%s, element %zu", w, i);
        n = d->len + 1;
        break;
    }
    case S_BIG:
        stress_sobj_check_refs(root, d->id, w);
        if (((const struct sobj *)root)->a.length != d->len)
            stress_fail("%s: length %zu, expected %zu", w, ((const struct sobj *)root)->a.length, d->len);
        n = 2;
        break;
    default:
        stress_fail("%s: bad descriptor", w);
    }
    m->checked_objects += n;
    return n;
}

static uint64_t check_all(struct mut *m, const char *when)
{
    uint64_t n = 0;
    for (unsigned s = 0; s < SLOTS; s++)
        n += check_slot(m, s, when);
    return n;
}

/* An allocation returned NULL: it must say ENOMEM, and everything held must
 * be intact. */
static void after_failure(struct mut *m, const char *what)
{
    if (errno != ENOMEM)
        stress_fail("phase %u, thread %u: allocating %s returned NULL with errno %d (%s), expected ENOMEM",
                    phase_no, m->idx, what, errno, strerror(errno));
    m->enomem++;
    check_all(m, "right after an ENOMEM");
    m->checks_after_enomem++;
}

static struct sobj *try_obj(struct mut *m, uint64_t id, size_t len, const char *what)
{
    errno = 0;
    struct sobj *o = stress_sobj_new(id, len);
    if (!o)
        after_failure(m, what);
    return o;
}

/* ------------------------------------------------------------------------ */
/* Building and changing structures                                         */
/* ------------------------------------------------------------------------ */

static void put(struct mut *m, unsigned slot, void *root, struct desc d)
{
    if (m->desc[slot].kind != S_NONE)
        check_slot(m, slot, "before replacing it");
    lull_store(m->table, &m->table->item[slot], root);
    m->desc[slot] = d;
}

static void build(struct mut *m, unsigned slot)
{
    unsigned c = (unsigned)stress_below(&m->rng, 100);
    struct desc d = { .kind = c < 45 ? S_LIST : c < 75 ? S_WIDE : S_BIG };
    if (d.kind == S_LIST) {
        d.len = stress_range(&m->rng, 1, LIST_MAX);
        uint64_t base = take_ids(m, d.len + APPEND_MAX);
        struct sobj *head = NULL;
        for (size_t i = 0; i < d.len; i++) {
            struct sobj *o = try_obj(m, base + i, stress_range(&m->rng, 0, 6), "a list node");
            if (!o) {
                m->failed_builds++;
                return;
            }
            stress_sobj_set(o, 0, head);
            head = o;
        }
        d.id = base + d.len - 1;
        d.next_id = base + d.len;
        d.limit_id = base + d.len + APPEND_MAX;
        put(m, slot, head, d);
    } else if (d.kind == S_WIDE) {
        d.len = stress_range(&m->rng, 100, 1000 + (size_t)((WIDE_MAX - 1000) * progress()));
        d.id = take_ids(m, d.len + 1);
        errno = 0;
        struct wide *a = lull_alloc_array(&wide_type, d.len);
        if (!a) {
            after_failure(m, "a wide array");
            m->failed_builds++;
            return;
        }
        a->id = d.id;
        a->sum = stress_sum(d.id, d.len);
        for (size_t i = 0; i < d.len; i++) {
            struct sobj *o = try_obj(m, d.id + 1 + i, stress_range(&m->rng, 0, 4), "a wide array's element");
            if (!o) {
                m->failed_builds++;
                return;
            }
            lull_store(a, &a->e[i], o);
        }
        put(m, slot, a, d);
    } else {
        d.len = stress_range(&m->rng, STRESS_SMALL_MAX_LEN + 1, (1u << 20) / 8);
        d.id = take_ids(m, 2);
        struct sobj *big = try_obj(m, d.id, d.len, "a large object");
        if (!big) {
            m->failed_builds++;
            return;
        }
        struct sobj *small = try_obj(m, d.id + 1, 3, "the large object's child");
        if (!small) {
            m->failed_builds++;
            return;
        }
        stress_sobj_set(big, 0, small);
        put(m, slot, big, d);
    }
    m->built[d.kind]++;
}

static void mutate(struct mut *m, unsigned slot)
{
    struct desc *d = &m->desc[slot];
    void *root = m->table->item[slot];
    switch (d->kind) {
    case S_NONE:
        break;
    case S_LIST: {
        if (d->next_id >= d->limit_id || d->len >= LIST_MAX + APPEND_MAX)
            break;
        struct sobj *o = try_obj(m, d->next_id, stress_range(&m->rng, 0, 6), "a node appended to a list");
        if (!o) {
            m->failed_mutations++;
            break;
        }
        stress_sobj_set(o, 0, root);
        lull_store(m->table, &m->table->item[slot], o);
        d->id = d->next_id++;
        d->len++;
        break;
    }
    case S_WIDE: {
        struct wide *a = root;
        size_t i = stress_below(&m->rng, d->len);
        struct sobj *o = try_obj(m, d->id + 1 + i, stress_range(&m->rng, 0, 4), "a replacement element");
        if (!o) {
            m->failed_mutations++;
            break;
        }
        lull_store(a, &a->e[i], o);
        break;
    }
    case S_BIG: {
        struct sobj *o = try_obj(m, d->id + 1, 3, "a large object's new child");
        if (!o) {
            m->failed_mutations++;
            break;
        }
        stress_sobj_set(root, 0, o);
        break;
    }
    default:
        break;
    }
}

static void *mutator_main(void *arg)
{
    struct mut *m = arg;
    if (lull_thread_attach() != 0)
        stress_fail("thread %u: lull_thread_attach failed", m->idx);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        unsigned slot = (unsigned)stress_below(&m->rng, 4 + (size_t)((SLOTS - 4) * progress()));
        unsigned c = (unsigned)stress_below(&m->rng, 100);
        if (c < 40)
            build(m, slot);
        else if (c < 75)
            mutate(m, slot);
        else if (c < 90)
            check_slot(m, slot, "a random check");
        else if (m->desc[slot].kind != S_NONE) {
            check_slot(m, slot, "before dropping it");
            lull_store(m->table, &m->table->item[slot], NULL);
            m->desc[slot].kind = S_NONE;
        }
    }
    lull_thread_detach();
    return NULL;
}

static uint64_t forced;

static void *collector_main(void *arg)
{
    (void)arg;
    stress_rng r = stress_rng_for(50 + phase_no);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        stress_sleep_ns(stress_range(&r, 0, 5000) * 1000ull);
        lull_collect(stress_chance(&r, 50) ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
        forced++;
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Phases                                                                   */
/* ------------------------------------------------------------------------ */

/* ---- refusals, counted from lull's lines on descriptor 2 ---------------- */

static FILE *real_stderr;     /* stdio's stderr while a phase captures */
static int capture_fd = -1;   /* descriptor 2 during a phase: a temporary file */
static int saved_fd = -1;     /* the real descriptor 2 */

static void capture_begin(void)
{
    fflush(stderr);
    FILE *tmp = tmpfile();
    saved_fd = dup(2);
    if (!tmp || saved_fd < 0)
        stress_fail("capturing stderr: %s", strerror(errno));
    capture_fd = dup(fileno(tmp));
    fclose(tmp);
    FILE *keep = fdopen(dup(saved_fd), "w");
    if (capture_fd < 0 || !keep || dup2(capture_fd, 2) != 2)
        stress_fail("capturing stderr: %s", strerror(errno));
    setvbuf(keep, NULL, _IONBF, 0);
    real_stderr = stderr;
    stderr = keep;            /* this program's messages still reach the terminal */
}

/* Refusal lines written so far in this phase. */
static uint64_t refusals_so_far(void)
{
    static char buf[1 << 20];
    ssize_t n = pread(capture_fd, buf, sizeof buf - 1, 0);
    if (n < 0)
        stress_fail("reading the captured stderr: %s", strerror(errno));
    buf[n] = 0;
    uint64_t count = 0;
    for (const char *p = buf; (p = strstr(p, "lull: fail-mmap: refused request ")) != NULL; p++)
        count++;
    return count;
}

/* Restore descriptor 2; pass on whatever else lull wrote there. */
static uint64_t capture_end(void)
{
    uint64_t count = refusals_so_far();
    FILE *keep = stderr;
    stderr = real_stderr;
    dup2(saved_fd, 2);
    close(saved_fd);
    fclose(keep);
    char line[512];
    FILE *f = fdopen(capture_fd, "r");
    if (f) {
        rewind(f);
        while (fgets(line, sizeof line, f))
            if (!strstr(line, "lull: fail-mmap: refused request "))
                fputs(line, stderr);
        fclose(f);
    }
    capture_fd = saved_fd = -1;
    return count;
}

struct phase_result {
    int n;
    uint64_t refusals;
    uint64_t enomem, failed_builds, failed_mutations, built, checked, init_retries, collections;
};

/* fail-mmap=1: the heap is the nursery and cannot grow (header comment). */
static uint64_t refused;             /* atomic */

#define NURSERY_OBJECT_MAX 8192u     /* LULL_MAX_SMALL: bigger objects never use the nursery */

static size_t sobj_bytes(size_t len)
{
    return sizeof(struct sobj) + len * sizeof(uint64_t);
}

static void refuse_all(const char *who)
{
    static const size_t lens[] = { 0, 5, 100, 255, 256, STRESS_SMALL_MAX_LEN, STRESS_SMALL_MAX_LEN + 1, 100000 };
    for (int round = 0; round < 6; round++) {
        /* Objects the nursery does not take: ENOMEM, every time. */
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            if (sobj_bytes(lens[i]) <= NURSERY_OBJECT_MAX)
                continue;
            errno = 0;
            void *p = stress_sobj_new(1, lens[i]);
            if (p || errno != ENOMEM)
                stress_fail("fail-mmap=1, %s: allocating %zu payload words %s (errno %d, %s); too big for the "
                            "nursery and the heap cannot grow, so it must return NULL with ENOMEM", who, lens[i],
                            p ? "succeeded" : "returned NULL", errno, strerror(errno));
            stress_add_u64(&refused, 1);
        }
        errno = 0;
        void *w = lull_alloc_array(&wide_type, 10000);
        if (w || errno != ENOMEM)
            stress_fail("fail-mmap=1, %s: lull_alloc_array(wide, 10000) %s, errno %d", who,
                        w ? "succeeded" : "failed", errno);
        stress_add_u64(&refused, 1);

        /* Small objects: a live chain until ENOMEM, within the nursery. */
        size_t len = lens[round % 4];
        struct sobj *volatile chain = NULL;
        uint64_t n = 0, limit = ((uint64_t)64 << 20) / sobj_bytes(len);
        for (;;) {
            errno = 0;
            struct sobj *o = stress_sobj_new(n + 1, len);
            if (!o) {
                if (errno != ENOMEM)
                    stress_fail("fail-mmap=1, %s: a small allocation failed with errno %d, not ENOMEM", who, errno);
                break;
            }
            stress_sobj_set(o, 0, chain);
            chain = o;
            if (++n > limit)
                stress_fail("fail-mmap=1, %s: %" PRIu64 " objects of %zu bytes kept alive, far more than "
                            "the nursery holds, and the heap cannot grow", who, n, sobj_bytes(len));
        }
        stress_add_u64(&refused, 1);
        uint64_t k = n;
        for (struct sobj *o = chain; o; o = o->ref[0], k--)
            stress_sobj_check(o, k, "fail-mmap=1: chain kept in the nursery");
        if (k != 0)
            stress_fail("fail-mmap=1, %s: the chain lost %" PRIu64 " of %" PRIu64 " objects", who, k, n);
        chain = NULL;
        lull_collect(round % 2 ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
    }
}

static void *refuse_thread(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("fail-mmap=1: lull_thread_attach failed");
    refuse_all("second thread");
    lull_thread_detach();
    return NULL;
}

static void run_refusal_phase(struct phase_result *res)
{
    pthread_t t;
    refused = 0;
    if (pthread_create(&t, NULL, refuse_thread, NULL) != 0)
        stress_fail("pthread_create failed");
    refuse_all("main thread");
    pthread_join(t, NULL);
    res->enomem = refused;
    lull_stats s;
    lull_get_stats(&s);
    res->collections = s.collections_major + s.collections_minor;
    if (s.heap_bytes > ((uint64_t)8 << 20))
        stress_fail("fail-mmap=1: the heap holds %" PRIu64 " bytes, more than it had at lull_init", s.heap_bytes);
}

static void run_phase(int n, double seconds, struct phase_result *res)
{
    static char debug[512];
    static char *original;
    static int have_original;
    if (!have_original) {
        const char *o = getenv("LULL_GC_DEBUG");
        original = o && *o ? strdup(o) : NULL;
        have_original = 1;
    }
    snprintf(debug, sizeof debug, "%s%s%sfail-mmap=%d", original ? original : "", original ? "," : "",
             verify_heap ? "verify,poison," : "", n);
    if (setenv("LULL_GC_DEBUG", debug, 1) != 0)
        stress_fail("setenv: %s", strerror(errno));
    memset(res, 0, sizeof *res);
    res->n = n;
    phase_no++;
    capture_begin();
    int rc;
    while ((rc = lull_init(NULL)) == -ENOMEM && res->init_retries < 100)
        res->init_retries++;
    if (rc != 0)
        stress_fail("phase %u: lull_init with LULL_GC_DEBUG=%s: %s", phase_no, debug, strerror(-rc));
    if (n == 1) {
        run_refusal_phase(res);
        lull_shutdown();
        res->refusals = capture_end();
        if (res->refusals == 0)
            stress_fail("phase %u fail-mmap=1: lull refused no request to the OS", phase_no);
        return;
    }

    for (unsigned t = 0; t < MUTATORS; t++) {
        struct mut *m = &muts[t];
        memset(m, 0, sizeof *m);
        m->idx = t;
        m->rng = stress_rng_for(phase_no * 16 + t);
        if ((rc = lull_root_add_refs((void **)&m->table, 1)) != 0)
            stress_fail("lull_root_add_refs: %s", strerror(-rc));
        /* The table itself may be refused too: retry (it is small). */
        for (int tries = 0; !m->table; tries++) {
            errno = 0;
            m->table = lull_alloc_array(&refs_type, SLOTS);
            if (!m->table && (errno != ENOMEM || tries > 100))
                stress_fail("allocating a table: errno %d (%s)", errno, strerror(errno));
        }
    }
    __atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
    forced = 0;
    pthread_t collector;
    double t0 = stress_now();
    phase_t0 = t0;
    phase_seconds = seconds;
    for (unsigned t = 0; t < MUTATORS; t++)
        if (pthread_create(&muts[t].thread, NULL, mutator_main, &muts[t]) != 0)
            stress_fail("pthread_create failed");
    if (pthread_create(&collector, NULL, collector_main, NULL) != 0)
        stress_fail("pthread_create failed");
    /* The phase's time, and on until lull has refused a request (at most
     * four times as long). */
    while (stress_now() - t0 < seconds || (refusals_so_far() == 0 && stress_now() - t0 < 4 * seconds + 1))
        stress_sleep_ns(10000000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (unsigned t = 0; t < MUTATORS; t++)
        pthread_join(muts[t].thread, NULL);
    pthread_join(collector, NULL);

    /* Quiescent: check, collect, check. */
    uint64_t before = 0, after = 0;
    for (unsigned t = 0; t < MUTATORS; t++)
        before += check_all(&muts[t], "end of phase");
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_NURSERY);
    for (unsigned t = 0; t < MUTATORS; t++)
        after += check_all(&muts[t], "end of phase, after collecting");
    if (before != after)
        stress_fail("phase %u: %" PRIu64 " objects before the final collections, %" PRIu64 " after", phase_no,
                    before, after);
    lull_stats s;
    lull_get_stats(&s);
    res->collections = s.collections_major + s.collections_minor;
    for (unsigned t = 0; t < MUTATORS; t++) {
        struct mut *m = &muts[t];
        res->enomem += m->enomem;
        res->failed_builds += m->failed_builds;
        res->failed_mutations += m->failed_mutations;
        for (int k = 0; k < NKINDS; k++)
            res->built += m->built[k];
        res->checked += m->checked_objects;
        m->table = NULL;
        lull_root_remove((void **)&m->table);
    }
    /* The checks above pass on a phase that built and collected nothing. */
    if (res->built == 0 || res->checked == 0 || s.collections_minor == 0 || s.collections_major == 0 || forced == 0)
        stress_fail("phase %u fail-mmap=%d: too little happened: %" PRIu64 " structures built, %" PRIu64
                    " objects checked, %" PRIu64 " minor and %" PRIu64 " major collections (%" PRIu64 " forced)",
                    phase_no, n, res->built, res->checked, s.collections_minor, s.collections_major, forced);
    lull_shutdown();
    res->refusals = capture_end();
    if (res->refusals == 0)
        stress_fail("phase %u fail-mmap=%d: lull refused no request to the OS in %.1f s", phase_no, n,
                    stress_now() - t0);
    if (stress_verbose)
        printf("stress_faults: phase %u fail-mmap=%d: %.1f s, ENOMEM %" PRIu64 ", builds %" PRIu64 " (+%" PRIu64
               " failed), %" PRIu64 " collections\n", phase_no, n, stress_now() - t0, res->enomem, res->built,
               res->failed_builds, res->collections);
}

static int own_option(const char *arg, const char *val)
{
    if (!strcmp(arg, "--fail-every")) {
        double d = stress_parse_num(val, "--fail-every");
        if (d < 1 || d > 1000000)
            stress_usage("[--fail-every N (1..1000000)] [--no-verify]");
        fail_every_fixed = (int)d;
        return 2;
    }
    if (!strcmp(arg, "--no-verify")) {
        verify_heap = 0;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    stress_parse_args("stress_faults", argc, argv, 10, own_option, "[--fail-every N] [--no-verify]");
    int every[4] = { 1, 3, 7, 11 };
    int nphases = 4;
    if (fail_every_fixed) {
        every[0] = fail_every_fixed;
        nphases = 1;
    }
    printf("stress_faults: seed %" PRIu64 ", %.1f s, fail-mmap=%s%s, LULL_GC_PARAMS='%s' LULL_GC_DEBUG='%s'\n",
           stress_seed, stress_seconds, nphases > 1 ? "1,3,7,11" : "", nphases > 1 ? "" : "N",
           stress_env("LULL_GC_PARAMS"), stress_env("LULL_GC_DEBUG"));
    if (nphases == 1)
        printf("stress_faults: fail-mmap=%d%s\n", every[0], verify_heap ? " with verify,poison" : "");
    fflush(stdout);
    double t0 = stress_now();
    struct phase_result res[4];
    /* The refusal phase is short; the others share the time. */
    int growing = every[0] == 1 ? nphases - 1 : nphases;
    for (int p = 0; p < nphases; p++)
        run_phase(every[p], growing ? stress_seconds / growing : 0, &res[p]);
    printf("stress_faults: OK seed %" PRIu64 " %.1f s:", stress_seed, stress_now() - t0);
    for (int p = 0; p < nphases; p++) {
        if (res[p].n == 1)
            printf("%s fail-mmap=1: %" PRIu64 " requests refused, %" PRIu64 " allocations all refused with ENOMEM, %"
                   PRIu64 " collections", p ? ";" : "", res[p].refusals, res[p].enomem, res[p].collections);
        else
            printf("%s fail-mmap=%d: %" PRIu64 " requests refused, ENOMEM %" PRIu64 " (builds failed %" PRIu64 ", changes failed %" PRIu64
                   "), structures %" PRIu64 ", objects checked %" PRIu64 ", collections %" PRIu64, p ? ";" : "",
                   res[p].n, res[p].refusals, res[p].enomem, res[p].failed_builds, res[p].failed_mutations, res[p].built,
                   res[p].checked, res[p].collections);
        if (res[p].init_retries)
            printf(" (lull_init retried %" PRIu64 " times)", res[p].init_retries);
    }
    printf("; every failure ENOMEM, everything intact%s\n", verify_heap ? ", heap verified at every collection" : "");
    return 0;
}
