/*
 * stress/longjmp.c — a longjmp storm while the world is stopped over and over.
 *
 *   stress_longjmp [--seconds N] [--seed S] [--default-seconds N] [--max-depth D] [-v]
 *
 * Seconds: --seconds, else LULL_STRESS_SECONDS, else --default-seconds (10).
 *
 * The "stacks and signals" scenario from SGen's history. One storm thread
 * recurses to a random depth (up to --max-depth, 3000 by default). Every
 * level allocates a checksummed object that only a local of that level
 * holds (sometimes with a second object reachable only through it, and a
 * third held in a register-allocated local), plus some garbage. Now and
 * then a level sets a catch point (sigsetjmp). At the bottom the storm
 * either returns normally through every level, which checks its objects on
 * the way up, or links a random subset of the objects of the levels it is
 * about to abandon into a chain, hands the chain to a catch point (a
 * volatile local of the frame that called sigsetjmp, or a precise root),
 * and siglongjmps there: directly, or from a SIGUSR1 handler it raises.
 * The catch point checks every object still held by the levels above it,
 * then the chain (length, order, ids, checksums, the objects hanging off
 * it), and either descends again or returns. Meanwhile a collector thread
 * calls lull_collect in a loop (attached half of the time, unattached the
 * other half), so stops land anywhere: in the allocator, in the middle of
 * a jump, in the signal handler.
 *
 * What it proves: conservative scanning of a deep, constantly cut-back
 * stack keeps exactly what the live frames hold, the stack range recorded
 * at a stop is the live one (not the one before a jump), and objects that
 * only a jumped-to frame holds survive. The first wrong object ends the run
 * with one line naming it.
 */
#include "stress_common.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

/* id = tag:8 | round:32 | depth:16 | kind:8 */
#define ID_TAG 0x5bull
enum { K_LEVEL = 1, K_AUX = 2, K_EXTRA = 3, K_GARBAGE = 4 };

static uint64_t make_id(uint64_t round, unsigned depth, unsigned kind)
{
    return ID_TAG << 56 | (round & 0xffffffffu) << 24 | (uint64_t)(depth & 0xffff) << 8 | kind;
}
static unsigned id_depth(uint64_t id) { return (unsigned)(id >> 8) & 0xffff; }
static uint64_t id_round(uint64_t id) { return (id >> 24) & 0xffffffffu; }

/* A catch point: the sigjmp_buf and what the jumping level leaves for the
 * catching frame. The fields changed between sigsetjmp and siglongjmp are
 * volatile (C11 7.13.2.1). */
struct catcher {
    sigjmp_buf env;
    struct catcher *up;              /* the next catch point above */
    unsigned depth;                  /* the level that set it; levels <= depth survive a jump here */
    volatile unsigned target;        /* the depth the current descent goes to */
    volatile unsigned descents;
    struct sobj *volatile kept;      /* the chain, when it is kept in this local */
    volatile int kept_in_root;       /* the chain is in the precise root instead */
    volatile unsigned kept_len;
    volatile uint64_t kept_hash;     /* sum of mix(id) over the chain */
    volatile unsigned from_depth;    /* the depth the jump came from */
};

/* One per level, on the C stack. `obj` is the only reference to the level's
 * object (the address of `f` escapes, so it lives in memory). */
struct frame {
    struct frame *up;
    struct sobj *obj;
    uint64_t id;
    uint64_t aux_id;                 /* 0: no aux object hangs off obj->ref[1] */
    unsigned depth;
    struct catcher *catcher;         /* the innermost catch point at or above this level */
};

static unsigned max_depth = 3000;
static int stop;                      /* atomic */
static struct sobj *root_chain;       /* precise root: a kept chain, sometimes */

/* Statistics (storm thread only, read after join). */
static struct {
    uint64_t rounds, levels, objects, deepest;
    uint64_t jumps, signal_jumps, returns, catches, redescents, waited;
    uint64_t kept_local, kept_root, kept_objects, frame_checks;
} st;
static uint64_t collections, collections_attached;   /* collector thread only */

static stress_rng storm_rng;
static uint64_t round_no;

/* The jump taken from the SIGUSR1 handler. */
static __thread struct catcher *volatile signal_target;
static __thread volatile unsigned signal_from;

static void sigusr1_jump(int sig)
{
    (void)sig;
    struct catcher *c = signal_target;
    if (!c)
        return;
    signal_target = NULL;
    siglongjmp(c->env, (int)signal_from);
}

static struct sobj *new_obj(uint64_t id, size_t len, const char *what)
{
    struct sobj *o = stress_sobj_new(id, len);
    if (!o)
        stress_fail("allocating %s (id 0x%" PRIx64 ", length %zu): %s", what, id, len, strerror(errno));
    st.objects++;
    return o;
}

static size_t random_len(void)
{
    if (stress_chance(&storm_rng, 1))
        return stress_range(&storm_rng, STRESS_SMALL_MAX_LEN + 1, 3 * STRESS_SMALL_MAX_LEN);  /* large */
    return stress_range(&storm_rng, 0, stress_chance(&storm_rng, 10) ? 200 : 12);
}

/* Every object held by level `f` and the levels above it. */
static void check_frames(const struct frame *f, const char *when)
{
    for (; f; f = f->up) {
        STRESS_CHECK(f->obj, f->id, "%s: level %u object", when, f->depth);
        if (f->aux_id != stress_load_u64(&f->obj->expect[1]))
            stress_fail("%s: level %u object 0x%" PRIx64 " expect[1] is 0x%" PRIx64 ", should be 0x%" PRIx64,
                        when, f->depth, f->id, f->obj->expect[1], f->aux_id);
        st.frame_checks++;
    }
}

static void level(struct frame *up, unsigned depth);

/* Wait up to 5 ms for a stop-the-world to happen. */
static void wait_for_a_pause(void)
{
    lull_stats s0, s1;
    lull_get_stats(&s0);
    for (int i = 0; i < 50; i++) {
        stress_sleep_ns(100000);
        lull_get_stats(&s1);
        if (s1.pauses != s0.pauses) {
            st.waited++;
            return;
        }
    }
}

/* The chain a jump handed to catch point `c`. */
static void check_kept(struct catcher *c)
{
    struct sobj *head = c->kept_in_root ? __atomic_load_n(&root_chain, __ATOMIC_ACQUIRE) : c->kept;
    unsigned len = 0, last_depth = c->depth;
    uint64_t hash = 0;
    const char *holder = c->kept_in_root ? "precise root" : "local of the sigsetjmp frame";
#define KEPT_WHERE "chain kept across a jump from level %u to level %u (%s), element %u"
    for (struct sobj *o = head; o; o = o->ref[0]) {
        if (len >= c->kept_len)
            stress_fail(KEPT_WHERE ": the chain is longer than the %u objects kept", c->from_depth, c->depth,
                        holder, len, c->kept_len);
        uint64_t id = o->id;
        unsigned d = id_depth(id);
        if (id_round(id) != (round_no & 0xffffffffu) || (id & 0xff) != K_LEVEL || d <= last_depth ||
            d > c->from_depth)
            stress_fail(KEPT_WHERE ": object %p has id 0x%" PRIx64 " (round %" PRIu64 ", level %u), not a "
                        "level object of this round from levels %u..%u after level %u", c->from_depth, c->depth,
                        holder, len, (void *)o, id, id_round(id), d, c->depth + 1, c->from_depth, last_depth);
        STRESS_CHECK(o, id, KEPT_WHERE, c->from_depth, c->depth, holder, len);
        hash += stress_mix64(id);
        last_depth = d;
        len++;
    }
    if (len != c->kept_len || hash != c->kept_hash)
        stress_fail("chain kept across a jump from level %u to level %u (%s): %u objects with id hash 0x%"
                    PRIx64 ", expected %u objects with hash 0x%" PRIx64, c->from_depth, c->depth,
                    c->kept_in_root ? "precise root" : "local of the sigsetjmp frame", len, hash,
                    c->kept_len, c->kept_hash);
    st.kept_objects += len;
    c->kept = NULL;
    if (c->kept_in_root)
        __atomic_store_n(&root_chain, NULL, __ATOMIC_RELEASE);
}

/* Set a catch point below level `f` and descend from it. */
__attribute__((noinline)) static void catch_level(struct frame *f, unsigned target)
{
    struct catcher c;
    c.up = f->catcher;
    c.depth = f->depth;
    c.target = target;
    c.descents = 0;
    c.kept = NULL;
    c.kept_in_root = 0;
    c.kept_len = 0;
    c.kept_hash = 0;
    c.from_depth = 0;
    f->catcher = &c;
    if (sigsetjmp(c.env, 1)) {
        /* Arrived by a jump: everything below this frame is gone. */
        st.catches++;
        if (stress_chance(&storm_rng, 20))
            wait_for_a_pause();
        check_frames(f, "after a jump");
        check_kept(&c);
        if (c.descents >= 3 || c.depth >= max_depth || stress_chance(&storm_rng, 50)) {
            f->catcher = c.up;
            return;
        }
        c.descents = c.descents + 1;
        c.target = (unsigned)stress_range(&storm_rng, c.depth + 1, max_depth);
        st.redescents++;
    }
    level(f, f->depth + 1);
    f->catcher = c.up;
}

/* The bottom of a descent: check everything, then jump or return. */
__attribute__((noinline)) static void bottom(struct frame *f)
{
    check_frames(f, "at the bottom");
    if (f->depth > st.deepest)
        st.deepest = f->depth;
    unsigned mode = (unsigned)stress_below(&storm_rng, 100);
    if (mode < 15) {
        st.returns++;
        return;                          /* every level checks its objects on the way up */
    }
    /* Pick a catch point: the innermost one half of the time. */
    unsigned n = 0;
    for (struct catcher *c = f->catcher; c; c = c->up)
        n++;
    unsigned k = stress_chance(&storm_rng, 50) ? 0 : (unsigned)stress_below(&storm_rng, n);
    struct catcher *c = f->catcher;
    while (k--)
        c = c->up;
    /* Keep a random subset of the abandoned levels' objects, in ascending
     * depth order, linked through ref[0]. */
    struct sobj *head = NULL;
    unsigned len = 0;
    uint64_t hash = 0;
    unsigned keep_percent = (unsigned)stress_below(&storm_rng, 101);
    for (struct frame *g = f; g && g->depth > c->depth; g = g->up) {
        if (!stress_chance(&storm_rng, keep_percent))
            continue;
        stress_sobj_set(g->obj, 0, head);
        head = g->obj;
        len++;
        hash += stress_mix64(g->id);
    }
    c->kept_len = len;
    c->kept_hash = hash;
    c->from_depth = f->depth;
    if (stress_chance(&storm_rng, 50)) {
        c->kept_in_root = 1;
        c->kept = NULL;
        __atomic_store_n(&root_chain, head, __ATOMIC_RELEASE);
        st.kept_root++;
    } else {
        c->kept_in_root = 0;
        c->kept = head;
        st.kept_local++;
    }
    head = NULL;
    st.jumps++;
    if (mode < 35) {
        st.signal_jumps++;
        signal_from = f->depth;
        signal_target = c;
        raise(SIGUSR1);
        stress_fail("raise(SIGUSR1) at level %u returned: the handler did not jump", f->depth);
    }
    siglongjmp(c->env, (int)f->depth);
}

__attribute__((noinline)) static void level(struct frame *up, unsigned depth)
{
    struct frame f;
    f.up = up;
    f.depth = depth;
    f.catcher = up ? up->catcher : NULL;
    f.id = make_id(round_no, depth, K_LEVEL);
    f.aux_id = 0;
    f.obj = new_obj(f.id, random_len(), "a level's object");
    st.levels++;
    if (stress_chance(&storm_rng, 30)) {
        /* Reachable only through the level's object. */
        f.aux_id = make_id(round_no, depth, K_AUX);
        stress_sobj_set(f.obj, 1, new_obj(f.aux_id, random_len(), "an aux object"));
    }
    /* Held only by this local, wherever the compiler keeps it. */
    struct sobj *extra = NULL;
    uint64_t extra_id = make_id(round_no, depth, K_EXTRA);
    if (stress_chance(&storm_rng, 10))
        extra = new_obj(extra_id, random_len(), "an extra object");
    if (stress_chance(&storm_rng, 20))
        new_obj(make_id(round_no, depth, K_GARBAGE), random_len(), "garbage");

    unsigned target = f.catcher ? f.catcher->target : depth;
    if (depth >= target)
        bottom(&f);
    else if (stress_chance(&storm_rng, 2))
        catch_level(&f, target);
    else
        level(&f, depth + 1);

    /* Returned normally: this level's objects must be intact. */
    STRESS_CHECK(f.obj, f.id, "returning to level %u: its object", depth);
    if (extra)
        STRESS_CHECK(extra, extra_id, "returning to level %u: its register-held object", depth);
    __asm__ __volatile__("" : : "r"(&f), "r"(extra) : "memory");
}

static void *storm_main(void *arg)
{
    (void)arg;
    if (lull_thread_attach() != 0)
        stress_fail("storm thread: lull_thread_attach failed");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sigusr1_jump;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        stress_fail("sigaction(SIGUSR1): %s", strerror(errno));
    storm_rng = stress_rng_for(1);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        round_no++;
        st.rounds++;
        /* Level 0 is always a catch point: the round's first target. */
        struct frame top = { 0 };
        top.id = make_id(round_no, 0, K_LEVEL);
        top.obj = new_obj(top.id, random_len(), "the round's object");
        catch_level(&top, (unsigned)stress_range(&storm_rng, 1, max_depth));
        if (top.catcher)
            stress_fail("round %" PRIu64 ": a catch point was left registered", round_no);
        check_frames(&top, "end of round");
        __asm__ __volatile__("" : : "r"(&top) : "memory");
    }
    lull_thread_detach();
    return NULL;
}

/* Collects in a loop with pauses of 0-300 us, attached in even half-seconds
 * and unattached (its stack not a root, nothing to stop) in odd ones. */
static void *collector_main(void *arg)
{
    (void)arg;
    stress_rng r = stress_rng_for(2);
    double t0 = stress_now();
    int attached = 0;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        int want = ((long)((stress_now() - t0) * 2) & 1) == 0;
        if (want && !attached) {
            if (lull_thread_attach() != 0)
                stress_fail("collector thread: lull_thread_attach failed");
            attached = 1;
        } else if (!want && attached) {
            lull_thread_detach();
            attached = 0;
        }
        lull_collect(stress_chance(&r, 50) ? LULL_GEN_NURSERY : LULL_GEN_MAJOR);
        collections++;
        collections_attached += attached;
        uint64_t ns = stress_below(&r, 300) * 1000;
        if (ns < 20000)
            sched_yield();
        else
            stress_sleep_ns(ns);
    }
    if (attached)
        lull_thread_detach();
    return NULL;
}

static int own_option(const char *arg, const char *val)
{
    if (!strcmp(arg, "--max-depth")) {
        double d = stress_parse_num(val, "--max-depth");
        if (d < 1 || d > 60000)
            stress_usage("[--max-depth D (1..60000)]");
        max_depth = (unsigned)d;
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    stress_parse_args("stress_longjmp", argc, argv, 10, own_option, "[--max-depth D]");
    printf("stress_longjmp: seed %" PRIu64 ", %.1f s, max depth %u, LULL_GC_PARAMS='%s' LULL_GC_DEBUG='%s'\n",
           stress_seed, stress_seconds, max_depth, stress_env("LULL_GC_PARAMS"), stress_env("LULL_GC_DEBUG"));
    fflush(stdout);

    int rc = lull_init(NULL);
    if (rc != 0)
        stress_fail("lull_init: %s", strerror(-rc));
    if ((rc = lull_root_add_refs((void **)&root_chain, 1)) != 0)
        stress_fail("lull_root_add_refs: %s", strerror(-rc));

    /* A big stack: a level takes a few hundred bytes, more under ASan. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)64 << 20);
    pthread_t storm, collector;
    double t0 = stress_now();
    if (pthread_create(&storm, &attr, storm_main, NULL) != 0 ||
        pthread_create(&collector, NULL, collector_main, NULL) != 0)
        stress_fail("pthread_create failed");
    pthread_attr_destroy(&attr);
    while (stress_now() - t0 < stress_seconds)
        stress_sleep_ns(20000000);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(storm, NULL);
    pthread_join(collector, NULL);
    double elapsed = stress_now() - t0;

    lull_stats s;
    lull_get_stats(&s);
    /* The catch points' checks pass when nothing is caught or kept. */
    if (st.rounds == 0 || st.jumps == 0 || st.catches == 0 || st.kept_local + st.kept_root == 0 || s.pauses == 0)
        stress_fail("nothing happened: %" PRIu64 " rounds, %" PRIu64 " jumps, %" PRIu64 " catches, %" PRIu64
                    " chains kept, %" PRIu64 " pauses", st.rounds, st.jumps, st.catches, st.kept_local + st.kept_root,
                    s.pauses);
    printf("stress_longjmp: OK seed %" PRIu64 " %.1f s: stop-the-world rounds %" PRIu64 " (forced %" PRIu64
           ", %" PRIu64 " from an attached thread); storm rounds %" PRIu64 " levels %" PRIu64 " deepest %" PRIu64
           " objects %" PRIu64 "; jumps %" PRIu64 " (%" PRIu64 " from a signal handler) returns %" PRIu64
           " catches %" PRIu64 " redescents %" PRIu64 "; chains kept %" PRIu64 " in a local %" PRIu64
           " in a root (%" PRIu64 " objects, %" PRIu64 " across a waited-for pause); frame checks %" PRIu64
           "; pause max %.0f us p99 %.0f us\n",
           stress_seed, elapsed, s.pauses, collections, collections_attached, st.rounds, st.levels, st.deepest,
           st.objects, st.jumps, st.signal_jumps, st.returns, st.catches, st.redescents, st.kept_local,
           st.kept_root, st.kept_objects, st.waited, st.frame_checks, s.pause_max_ns / 1e3,
           s.pause_p99_ns / 1e3);
    lull_root_remove((void **)&root_chain);
    lull_shutdown();
    return 0;
}
