/*
 * stress_hide — the classic way a concurrent marker loses an object, done
 * on purpose, many times a second, while marks are stretched over minors.
 *
 * Each mutator owns holders (arrays of reference slots, registered through
 * a precise root) and tokens (stress.sobj objects, each in exactly one slot
 * of its owner's holders). Its main move: read a token from one slot, store
 * it into another slot, then clear the first. The marker scans holders in
 * some order; whenever the source holder has not been scanned yet and the
 * destination already has, the token is now reachable only from an object
 * the marker believes finished. Only the write barrier's card, the union
 * card table (when a minor clears that card) and the final pause's rescan
 * keep it alive. Mutators also replace tokens with new ones (old-to-young
 * references), allocate 2-8 KiB tokens (bumped into the TLAB out of
 * line) and large garbage, so that majors start by themselves (promoted
 * tokens and large objects use up the allowance) and minors run inside
 * marks (small and 2-8 KiB garbage fills the nursery).
 *
 * Every token is checked where its owner expects it (id, type, length,
 * sum, payload: stress_common.h): a token the collector freed, poisoned or
 * let be reused is reported with the slot that held it.
 *
 * The run must show that what it tests happened: with major=concurrent, at
 * least two concurrent majors ended and at least one minor ran while a
 * mark was under way (the pause hook's phases). LULL_GC_DEBUG=mark-delay=N
 * stretches marks; verify-concurrent and check-mod-union check each final
 * pause.
 */
#include "stress_common.h"

#include <pthread.h>

#define THREADS 3
#define HOLDERS 48       /* per thread */
#define SLOTS   64       /* per holder */
#define TOKENS  (HOLDERS * SLOTS / 4)

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
    struct holder *holders[HOLDERS];       /* a precise root */
    uint64_t expect[HOLDERS][SLOTS];       /* the token id each slot should hold (0: none) */
    uint64_t moves, replaced, big, checks;
};

static struct mutator mutators[THREADS];
static double stop_at;

static uint64_t token_id(int thread, uint64_t n)
{
    return ((uint64_t)(thread + 1) << 48) | n;
}

/* Tokens: mostly under 200 bytes, one in eight 2-8 KiB (out of line). */
static struct sobj *token_new(stress_rng *r, uint64_t id)
{
    size_t len = stress_chance(r, 12) ? stress_range(r, 300, STRESS_SMALL_MAX_LEN) : stress_range(r, 0, 24);
    struct sobj *o = stress_sobj_new(id, len);
    struct sobj *child = stress_sobj_new(id | ((uint64_t)1 << 47), stress_range(r, 0, 8));
    if (!o || !child)
        stress_fail("token 0x%" PRIx64 " (length %zu): allocation failed: %s", id, len, strerror(errno));
    stress_sobj_set(o, 0, child);     /* reachable only through the token */
    return o;
}

static void check_slot(struct mutator *m, int h, int s, const char *what)
{
    uint64_t want = m->expect[h][s];
    struct sobj *o = stress_load_ref(&m->holders[h]->slot[s]);
    char where[160];
    snprintf(where, sizeof where, "thread %d %s: holder %d slot %d", m->index, what, h, s);
    if (!want) {
        if (o)
            stress_fail("%s: expected NULL, found %p", where, (void *)o);
        return;
    }
    STRESS_CHECK(o, want, "%s", where);
}

static void check_holder(struct mutator *m, int h, const char *what)
{
    struct holder *hd = m->holders[h];
    if (lull_type_of(hd) != &holder_type || lull_array_length(hd) != SLOTS)
        stress_fail("thread %d %s: holder %d (%p) is not a holder of %d slots", m->index, what, h, (void *)hd, SLOTS);
    for (int s = 0; s < SLOTS; s++)
        check_slot(m, h, s, what);
}

static void *mutator_main(void *arg)
{
    struct mutator *m = arg;
    if (lull_thread_attach() != 0)
        stress_fail("thread %d: lull_thread_attach failed", m->index);
    stress_rng r = stress_rng_for(stress_seed * 1000 + (uint64_t)m->index);
    /* The root first: a holder is young, and a minor another thread runs
     * while this one allocates the next holder would free (and reuse) one
     * that only an unregistered m->holders pointed to (this test failed so,
     * under load, in about 1 run of 40 with major=stw). */
    if (lull_root_add_refs((void **)m->holders, HOLDERS) != 0)
        stress_fail("thread %d: lull_root_add_refs failed", m->index);
    for (int h = 0; h < HOLDERS; h++) {
        struct holder *hd = lull_alloc_array(&holder_type, SLOTS);
        if (!hd)
            stress_fail("thread %d: holder allocation failed", m->index);
        __atomic_store_n(&m->holders[h], hd, __ATOMIC_RELEASE);
    }
    uint64_t next_id = 1;
    for (int t = 0; t < TOKENS; t++) {
        int h = (int)stress_below(&r, HOLDERS), s = (int)stress_below(&r, SLOTS);
        if (m->expect[h][s]) {
            t--;
            continue;
        }
        struct sobj *o = token_new(&r, token_id(m->index, next_id++));
        lull_store(m->holders[h], &m->holders[h]->slot[s], o);
        m->expect[h][s] = o->id;
    }

    while (stress_keep_going(stop_at)) {
        for (int i = 0; i < 256; i++) {
            /* Find a token, and an empty slot to move it to. Sources from
             * the first half of the holders, destinations from the second,
             * three times in four: the marker greys the root's holders in
             * order and pops them in reverse, so this moves tokens out of
             * holders it reaches late into holders it has scanned. */
            bool forward = stress_chance(&r, 75);
            int ha, sa, hb, sb, tries = 0;
            do {
                ha = (int)(forward ? stress_below(&r, HOLDERS / 2) : stress_below(&r, HOLDERS));
                sa = (int)stress_below(&r, SLOTS);
            } while (!m->expect[ha][sa] && ++tries < 64);
            if (!m->expect[ha][sa])
                continue;
            tries = 0;
            do {
                hb = (int)(forward ? HOLDERS / 2 + stress_below(&r, HOLDERS / 2) : stress_below(&r, HOLDERS));
                sb = (int)stress_below(&r, SLOTS);
            } while (m->expect[hb][sb] && ++tries < 64);
            if (m->expect[hb][sb])
                continue;
            struct holder *a = m->holders[ha], *b = m->holders[hb];
            struct sobj *o = stress_load_ref(&a->slot[sa]);
            lull_store(b, &b->slot[sb], o);      /* into an object the marker may have finished */
            lull_store(a, &a->slot[sa], NULL);   /* ... and gone from where it may not have looked yet */
            m->expect[hb][sb] = m->expect[ha][sa];
            m->expect[ha][sa] = 0;
            m->moves++;
            if (stress_chance(&r, 3)) {
                /* Replace it: the old token dies, a young one takes its place. */
                struct sobj *n = token_new(&r, token_id(m->index, next_id++));
                lull_store(b, &b->slot[sb], n);
                m->expect[hb][sb] = n->id;
                m->replaced++;
            }
        }
        /* Garbage: a large object now and then (it uses up the major
         * heap's allowance once a minor makes it old), 2-8 KiB objects
         * otherwise (they fill the nursery). */
        for (int g = 0; g < 32; g++)
            if (!stress_sobj_new(token_id(m->index, 0xffffffffff), stress_range(&r, 0, 120)))
                stress_fail("thread %d: garbage allocation failed: %s", m->index, strerror(errno));
        if (stress_chance(&r, 15)) {
            size_t len = stress_chance(&r, 20) ? stress_range(&r, 2048, 16384) : stress_range(&r, 300, STRESS_SMALL_MAX_LEN);
            if (!stress_sobj_new(token_id(m->index, 0xffffffffff), len))
                stress_fail("thread %d: garbage allocation failed: %s", m->index, strerror(errno));
            m->big++;
        }
        check_holder(m, (int)stress_below(&r, HOLDERS), "spot check");
        m->checks++;
        if (m->index == 0 && m->checks % 64 == 0)
            lull_collect(LULL_GEN_NURSERY);   /* a minor now and then, wherever the mark is */
    }
    for (int h = 0; h < HOLDERS; h++)
        check_holder(m, h, "final check");
    lull_collect(LULL_GEN_MAJOR);
    for (int h = 0; h < HOLDERS; h++)
        check_holder(m, h, "check after a last major");
    lull_root_remove((void *)m->holders);
    lull_thread_detach();
    return NULL;
}

int main(int argc, char **argv)
{
    stress_parse_args("stress_hide", argc, argv, 5, NULL, NULL);
    bool concurrent = stress_start(THREADS);
    stop_at = stress_now() + stress_seconds;
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        mutators[i].index = i;
        if (pthread_create(&th[i], NULL, mutator_main, &mutators[i]) != 0)
            stress_fail("pthread_create failed");
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    lull_stats st;
    lull_get_stats(&st);
    lull_set_pause_hook(NULL, NULL);
    lull_shutdown();
    uint64_t moves = 0, replaced = 0;
    for (int i = 0; i < THREADS; i++) {
        moves += mutators[i].moves;
        replaced += mutators[i].replaced;
    }
    printf("stress_hide: %" PRIu64 " moves, %" PRIu64 " replacements; %" PRIu64 " minors, %" PRIu64
           " majors (%" PRIu64 " synchronous); %" PRIu64 " concurrent marks ended, %" PRIu64
           " minors inside marks; major pause max %.3f ms\n", moves, replaced, st.collections_minor,
           st.collections_major, st.collections_major_sync, stress_marks.final, stress_marks.minors_in_mark,
           (double)st.pause_major_max_ns / 1e6);
    if (moves < 1000)
        stress_fail("only %" PRIu64 " moves: the test did not run", moves);
    if (concurrent && (stress_marks.final < 2 || stress_marks.minors_in_mark < 1))
        stress_fail("%" PRIu64 " concurrent marks ended with %" PRIu64 " minors inside them: the hiding was "
                    "never raced against a concurrent mark", stress_marks.final, stress_marks.minors_in_mark);
    printf("stress_hide: ok\n");
    return 0;
}
