/*
 * stress_handles — GC handles and finalizers from four threads while
 * collections, concurrent marks among them, run by themselves.
 *
 * Each mutator owns HANDLES handles of every kind in turn, and a holder
 * (a heap array reached from a precise root) with one slot per handle in
 * which it may also keep the handle's object strongly. Each round it takes
 * one handle and checks what it reads:
 *   - NORMAL and PINNED: always its object, intact; PINNED at the address
 *     it had when the handle was made;
 *   - WEAK and WEAK_TRACK: NULL or its very object, intact; never NULL
 *     while the holder keeps the object;
 * then it may make a weakly read object strong again (store it into the
 * holder: the case a weak read during a concurrent mark must survive),
 * drop the strong reference, re-target a NORMAL handle, or free the handle
 * and make a new one (with a new object, sometimes finalizable).
 * Mutators allocate garbage, small and large, so that minors and majors
 * start by themselves; LULL_GC_DEBUG=mark-delay=N stretches the marks so
 * that weak reads race them.
 *
 * Finalizers: every finalizable object is finalized at most once (a
 * bitmap by registration number), intact; at the end, with every handle
 * freed and every holder cleared, a few majors must finalize all of them.
 *
 * Weak handles to old objects: at the end, a thread makes OLD_WEAK objects
 * old (a minor, with a holder keeping them), takes a WEAK or WEAK_TRACK
 * handle to each, drops the holder and exits; after three majors every one
 * of those handles must read NULL. Only a major can clear them (a minor
 * leaves old objects alone), so this is what fails if majors stop clearing
 * weak handles.
 *
 * The run must show what it tests happened: weak handles were cleared,
 * objects were finalized while the mutators ran, and, with concurrent
 * majors, marks ended (the pause hook's phases).
 */
#include "stress_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define THREADS 4
#define HANDLES 96
#define MAX_FIN (1u << 20)
#define BALLAST 4096   /* old objects per mutator: marks take long enough for minors inside */

struct holder {
    lull_array_header a;
    struct sobj *slot[];
};

static const lull_type holder_type = {
    .name = "stress.holder", .size = sizeof(struct holder),
    .elem_size = sizeof(void *), .elem_refs = 1,
};

struct mutator {
    int index;
    struct holder *holder;              /* a precise root */
    struct holder *ballast;             /* a precise root: BALLAST objects, checked at the end */
    lull_handle h[HANDLES];
    uint64_t id[HANDLES];
    uintptr_t pinned_at[HANDLES];
    uint64_t next_id;
    uint64_t rounds, weak_nulls, revived, sets, frees;
};

static struct mutator mutators[THREADS];
static double stop_at;
static _Atomic uint8_t fin_seen[MAX_FIN];
static atomic_uint fin_registered, fin_run, fin_run_during;
static atomic_bool mutators_done;

static void finalizer(void *obj, void *data)
{
    uintptr_t n = (uintptr_t)data;
    const struct sobj *o = obj;
    if (n >= MAX_FIN)
        stress_fail("finalizer: registration number %zu out of range", (size_t)n);
    stress_sobj_check(o, o->id, "finalizer");
    if (atomic_exchange(&fin_seen[n], 1))
        stress_fail("finalizer: object 0x%" PRIx64 " (registration %zu) finalized twice", o->id, (size_t)n);
    atomic_fetch_add(&fin_run, 1);
    if (!atomic_load(&mutators_done))
        atomic_fetch_add(&fin_run_during, 1);
}

static uint64_t obj_id(int thread, uint64_t n)
{
    return ((uint64_t)(thread + 1) << 48) | n;
}

/* A new handle k of mutator m on a new object; kept strongly half the time. */
static void renew(struct mutator *m, stress_rng *r, int k)
{
    uint64_t id = obj_id(m->index, ++m->next_id);
    struct sobj *o = stress_sobj_new(id, stress_range(r, 0, 12));
    if (!o)
        stress_fail("allocation failed: %s", strerror(errno));
    enum lull_handle_kind kind = (enum lull_handle_kind)stress_below(r, 4);
    lull_store(m->holder, &m->holder->slot[k], stress_chance(r, 50) ? o : NULL);
    if (stress_chance(r, 5)) {
        unsigned n = atomic_fetch_add(&fin_registered, 1);
        if (n < MAX_FIN) {
            int rc = lull_register_finalizer(o, finalizer, (void *)(uintptr_t)n);
            if (rc)
                stress_fail("lull_register_finalizer: %s", strerror(-rc));
        } else {
            atomic_fetch_sub(&fin_registered, 1);
        }
    }
    m->h[k] = lull_handle_new(o, kind);
    if (!m->h[k])
        stress_fail("lull_handle_new: %s", strerror(errno));
    m->id[k] = id;
    m->pinned_at[k] = kind == LULL_HANDLE_PINNED ? (uintptr_t)o : 0;
}

static void check_one(struct mutator *m, stress_rng *r, int k)
{
    char where[96];
    unsigned kind = m->h[k] & 3u;
    snprintf(where, sizeof where, "thread %d handle %d (kind %u)", m->index, k, kind);
    struct sobj *o = lull_handle_get(m->h[k]);
    struct sobj *strong = stress_load_ref((void *)&m->holder->slot[k]);
    if (kind == LULL_HANDLE_WEAK || kind == LULL_HANDLE_WEAK_TRACK) {
        if (!o) {
            if (strong)
                stress_fail("%s: a weak handle reads NULL while its object 0x%" PRIx64 " is held strongly", where,
                            m->id[k]);
            m->weak_nulls++;
        } else {
            stress_sobj_check(o, m->id[k], where);
            if (!strong && stress_chance(r, 30)) {
                /* Read weakly, kept strongly: it must not be freed now. */
                lull_store(m->holder, &m->holder->slot[k], o);
                m->revived++;
            }
        }
    } else {
        stress_sobj_check(o, m->id[k], where);
        if (kind == LULL_HANDLE_PINNED && (uintptr_t)o != m->pinned_at[k])
            stress_fail("%s: a pinned handle's object moved from %p to %p", where, (void *)m->pinned_at[k],
                        (void *)o);
        if (kind == LULL_HANDLE_NORMAL && stress_chance(r, 10)) {
            uint64_t id = obj_id(m->index, ++m->next_id);
            struct sobj *n = stress_sobj_new(id, stress_range(r, 0, 12));
            if (!n)
                stress_fail("allocation failed: %s", strerror(errno));
            lull_handle_set(m->h[k], n);
            m->id[k] = id;
            lull_store(m->holder, &m->holder->slot[k], NULL);
            m->sets++;
            return;
        }
    }
    if (stress_chance(r, 20))
        lull_store(m->holder, &m->holder->slot[k], NULL);
    if (stress_chance(r, 10)) {
        lull_handle_free(m->h[k]);
        m->frees++;
        renew(m, r, k);
    }
}

static void *mutator_main(void *arg)
{
    struct mutator *m = arg;
    if (lull_thread_attach())
        stress_fail("lull_thread_attach failed");
    stress_rng r = stress_rng_for((uint64_t)m->index);
    m->holder = lull_alloc_array(&holder_type, HANDLES);
    if (!m->holder)
        stress_fail("holder allocation failed");
    m->ballast = lull_alloc_array(&holder_type, BALLAST);
    if (!m->ballast)
        stress_fail("ballast allocation failed");
    for (int i = 0; i < BALLAST; i++) {
        struct sobj *b = stress_sobj_new(obj_id(m->index, (uint64_t)1 << 40 | (uint64_t)i), 4);
        if (!b)
            stress_fail("ballast allocation failed");
        lull_store(m->ballast, &m->ballast->slot[i], b);
    }
    for (int k = 0; k < HANDLES; k++)
        renew(m, &r, k);
    while (stress_keep_going(stop_at)) {
        for (int i = 0; i < 64; i++, m->rounds++)
            check_one(m, &r, (int)stress_below(&r, HANDLES));
        for (int i = 0; i < 16; i++)
            (void)stress_sobj_new(0, stress_range(&r, 0, 40));        /* garbage: minors */
        if (stress_chance(&r, 2))
            (void)stress_sobj_new(0, stress_range(&r, 4096, 40000)); /* large garbage: majors */
    }
    for (int i = 0; i < BALLAST; i++)
        stress_sobj_check(stress_load_ref((void *)&m->ballast->slot[i]), obj_id(m->index, (uint64_t)1 << 40 | (uint64_t)i),
                          "ballast");
    for (int k = 0; k < HANDLES; k++) {
        lull_handle_free(m->h[k]);
        lull_store(m->holder, &m->holder->slot[k], NULL);
    }
    lull_thread_detach();
    return NULL;
}

/* The end's weak handles to old objects (see the top). */
#define OLD_WEAK 256
static struct holder *old_holder;      /* a precise root while they are made old */
static lull_handle old_weak[OLD_WEAK];

static void *make_old_weak(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("lull_thread_attach failed");
    old_holder = lull_alloc_array(&holder_type, OLD_WEAK);
    if (!old_holder)
        stress_fail("holder allocation failed");
    for (int i = 0; i < OLD_WEAK; i++)
        lull_store(old_holder, &old_holder->slot[i], stress_sobj_new(9000000 + (uint64_t)i, 4));
    lull_collect(LULL_GEN_NURSERY);
    lull_collect(LULL_GEN_NURSERY);
    for (int i = 0; i < OLD_WEAK; i++) {
        old_weak[i] = lull_handle_new(old_holder->slot[i], i % 2 ? LULL_HANDLE_WEAK : LULL_HANDLE_WEAK_TRACK);
        if (!old_weak[i] || !stress_sobj_ok(lull_handle_get(old_weak[i]), 9000000 + (uint64_t)i))
            stress_fail("weak handle %d to an old object is wrong while the object is held", i);
    }
    old_holder = NULL;
    lull_thread_detach();
    return NULL;
}

static void check_old_weak_cleared(void)
{
    if (lull_root_add_refs((void **)&old_holder, 1))
        stress_fail("lull_root_add_refs failed");
    pthread_t t;
    if (pthread_create(&t, NULL, make_old_weak, NULL) != 0)
        stress_fail("pthread_create failed");
    pthread_join(t, NULL);
    for (int i = 0; i < 3; i++)
        lull_collect(LULL_GEN_MAJOR);
    int kept = 0;
    for (int i = 0; i < OLD_WEAK; i++) {
        if (lull_handle_get(old_weak[i]))
            kept++;
        lull_handle_free(old_weak[i]);
    }
    lull_root_remove((void **)&old_holder);
    if (kept)
        stress_fail("%d of %d weak handles to dropped old objects still read their object after three majors",
                    kept, OLD_WEAK);
}

int main(int argc, char **argv)
{
    stress_parse_args("stress_handles", argc, argv, 5, NULL, NULL);
    bool concurrent = stress_start(THREADS);
    stop_at = stress_now() + stress_seconds;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        mutators[i].index = i;
        if (lull_root_add_refs((void **)&mutators[i].holder, 1) || lull_root_add_refs((void **)&mutators[i].ballast, 1))
            stress_fail("lull_root_add_refs failed");
        if (pthread_create(&th[i], NULL, mutator_main, &mutators[i]) != 0)
            stress_fail("pthread_create failed");
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&mutators_done, true);
    check_old_weak_cleared();
    /* Everything finalizable is unreachable now: a few majors find it all. */
    unsigned want = atomic_load(&fin_registered);
    for (int i = 0; i < 200 && atomic_load(&fin_run) < want; i++) {
        if (i < 4 || i % 20 == 0)
            lull_collect(LULL_GEN_MAJOR);
        lull_run_finalizers();
        stress_sleep_ns(10000000);
    }
    lull_stats st;
    lull_get_stats(&st);
    lull_set_pause_hook(NULL, NULL);
    uint64_t rounds = 0, nulls = 0, revived = 0, sets = 0, frees = 0;
    for (int i = 0; i < THREADS; i++) {
        rounds += mutators[i].rounds, nulls += mutators[i].weak_nulls, revived += mutators[i].revived;
        sets += mutators[i].sets, frees += mutators[i].frees;
    }
    printf("stress_handles: %" PRIu64 " rounds, %" PRIu64 " weak reads of NULL, %" PRIu64 " weak reads kept, %" PRIu64
           " sets, %" PRIu64 " frees; %u finalizers registered, %u run (%u while mutators ran); %" PRIu64
           " minors, %" PRIu64 " majors, %" PRIu64 " concurrent marks ended with %" PRIu64 " minors inside\n",
           rounds, nulls, revived, sets, frees, want, atomic_load(&fin_run), atomic_load(&fin_run_during),
           st.collections_minor, st.collections_major, stress_marks.final, stress_marks.minors_in_mark);
    if (atomic_load(&fin_run) != want)
        stress_fail("%u of %u finalizable objects were finalized after every reference was dropped",
                    atomic_load(&fin_run), want);
    for (int i = 0; i < THREADS; i++)
        lull_root_remove((void **)&mutators[i].holder), lull_root_remove((void **)&mutators[i].ballast);
    lull_shutdown();
    if (rounds < 10000 || !nulls || !want)
        stress_fail("the test did not run: %" PRIu64 " rounds, %" PRIu64 " weak NULL reads, %u finalizers", rounds,
                    nulls, want);
    if (concurrent && (stress_marks.final < 2 || !stress_marks.minors_in_mark))
        stress_fail("%" PRIu64 " concurrent marks ended with %" PRIu64 " minors inside: weak reads did not race "
                    "marks and minors inside them", stress_marks.final, stress_marks.minors_in_mark);
    printf("stress_handles: ok\n");
    return 0;
}
