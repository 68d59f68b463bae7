/*
 * game_loop.c — a frame loop on a live world, the workload lull is built for.
 *
 * The world holds ENTITIES entities (200k by default), each with four
 * neighbour references and a pointer-free inventory. Every frame allocates
 * short-lived events and scratch buffers, spawns entities that replace old
 * ones and rewires neighbour links. Once a second it prints a progress line;
 * at the end it prints frame-time and GC-pause percentiles and checks that
 * the world is intact.
 *
 * The run is a sequence of levels of LEVEL_SECONDS each. While a level is
 * played, synchronous (stop-the-world) majors are switched off with
 * lull_set_allow_synchronous_major(false): majors run concurrently, with
 * two short pauses each. Between levels (a loading screen, where a hitch
 * is invisible) they are allowed again and a full major is asked for.
 * The loading screen's major is started with lull_collect_start and
 * driven by lull_collect_step in slices of LOADING_STEP_NS (a loading
 * screen that animates between them) until a step completes it. Each
 * frame's event processing, the timing-critical section, runs inside a
 * no-GC region that promises what it allocates: no pause may land there.
 * Frame times are those of played frames; the loading screens are
 * reported apart. A frame that took less than its 16.6 ms hands what is
 * left to lull_idle, as a game does before it waits for the display: the
 * frame's events and scratch buffers are dead then, and a minor run there
 * promotes only what lives on. (This loop does not wait for a display:
 * the next frame starts at once.)
 *
 *   game_loop [--seconds S] [--heap-shot] [FRAMES [ENTITIES]]
 *
 * It runs FRAMES frames if given, else S seconds (default 5). With
 * --heap-shot, each loading screen's major is a lull_heap_shot, and the
 * five types that hold the most bytes are printed. The exit status is 1 if
 * the world is broken or no frame ran.
 */
#include <lull.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ENTITY_MAGIC 0x5eed0e17u
#define LEVEL_SECONDS 2.0
#define FRAME_SECONDS (1.0 / 60)
#define LOADING_STEP_NS 4000000u      /* one slice of a loading screen's major */

struct blob {                       /* pointer-free bytes */
    lull_array_header a;
    unsigned char data[];
};
static const lull_type blob_type = {
    .name = "blob", .size = sizeof(struct blob), .elem_size = 1,
};

struct entity {
    lull_header h;
    struct entity *nb[4];           /* neighbours */
    struct blob *inv;               /* inventory */
    float x, y, vx, vy;
    uint32_t magic, index;          /* index: slot in the world it was spawned for */
    uint64_t serial;
};
static const lull_type entity_type = {
    .name = "entity", .size = sizeof(struct entity),
    .refs = LULL_REF(struct entity, nb[0]) | LULL_REF(struct entity, nb[1]) |
            LULL_REF(struct entity, nb[2]) | LULL_REF(struct entity, nb[3]) |
            LULL_REF(struct entity, inv),
};

struct event {                      /* lives for one frame */
    lull_header h;
    struct event *next;
    struct entity *src, *dst;
    double amount;
    uint64_t kind;
};
static const lull_type event_type = {
    .name = "event", .size = sizeof(struct event),
    .refs = LULL_REF(struct event, next) | LULL_REF(struct event, src) |
            LULL_REF(struct event, dst),
};

struct world {                      /* array of entity references */
    lull_array_header a;
    struct entity *e[];
};
static const lull_type world_type = {
    .name = "world", .size = sizeof(struct world),
    .elem_size = sizeof(void *), .elem_refs = 1,
};

/* The world is reachable from this global, a precise root. */
static struct world *world;
static uint64_t serial;

/* Per-frame work. */
enum { EVENTS = 2000, SPAWNS = 200, REWIRES = 4000, MOVES = 5000, SCRATCH = 50 };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)                     /* xorshift64* */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}
static uint32_t rnd_below(uint32_t n) { return (uint32_t)((rnd() >> 32) * n >> 32); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *check(void *p)
{
    if (!p) {
        fprintf(stderr, "game_loop: allocation failed: %s\n", strerror(errno));
        exit(1);
    }
    return p;
}

static struct entity *spawn(uint32_t index)
{
    struct entity *e = check(lull_alloc(&entity_type));
    e->magic = ENTITY_MAGIC;
    e->index = index;
    e->serial = ++serial;
    e->x = (float)rnd_below(10000);
    e->y = (float)rnd_below(10000);
    e->vx = (float)rnd_below(100) / 50.0f - 1.0f;
    e->vy = (float)rnd_below(100) / 50.0f - 1.0f;
    struct blob *inv = check(lull_alloc_array(&blob_type, 16 + rnd_below(240)));
    for (size_t i = 0; i < inv->a.length; i++)
        inv->data[i] = (unsigned char)(e->serial + i);
    LULL_SET(e, inv, inv);
    return e;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

/* Every entity in the world, its neighbours and its inventory are intact. */
static int check_world(uint32_t n)
{
    int bad = 0;
    for (uint32_t i = 0; i < n && bad < 5; i++) {
        struct entity *e = world->e[i];
        if (!e || e->magic != ENTITY_MAGIC || e->index != i) {
            fprintf(stderr, "game_loop: world[%u] broken (%p)\n", i, (void *)e);
            bad++;
            continue;
        }
        for (int k = 0; k < 4; k++)
            if (!e->nb[k] || e->nb[k]->magic != ENTITY_MAGIC) {   /* may be despawned, not freed */
                fprintf(stderr, "game_loop: world[%u]->nb[%d] broken (%p)\n", i, k, (void *)e->nb[k]);
                bad++;
            }
        struct blob *inv = e->inv;
        for (size_t j = 0; inv && j < inv->a.length; j++)
            if (inv->data[j] != (unsigned char)(e->serial + j)) {
                fprintf(stderr, "game_loop: world[%u]->inv[%zu] broken\n", i, j);
                bad++;
                break;
            }
    }
    return bad;
}

/* --heap-shot: what the heap holds, by type, at each loading screen. */
static int by_bytes(const void *a, const void *b)
{
    const lull_type_usage *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

static void print_top(const lull_type_usage *usage, size_t count, void *data)
{
    lull_type_usage top[5];
    size_t n = 0;
    /* Keep the five largest (the callback may not keep `usage`). */
    for (size_t i = 0; i < count; i++) {
        if (n < 5)
            top[n++] = usage[i];
        else if (usage[i].bytes > top[4].bytes)
            top[4] = usage[i];
        qsort(top, n, sizeof top[0], by_bytes);
    }
    printf("heap shot after level %d: %zu types live; top by bytes:", *(int *)data, count);
    for (size_t i = 0; i < n; i++)
        printf("  %s %llu objects %.1f MB", top[i].type->name ? top[i].type->name : "?",
               (unsigned long long)top[i].objects, (double)top[i].bytes / 1e6);
    printf("\n");
}

static void heap_shot(int level)
{
    int r = lull_heap_shot(print_top, &level);
    if (r) {
        fprintf(stderr, "game_loop: lull_heap_shot failed: %s\n", strerror(-r));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    double run_seconds = 5.0;
    bool heap_shots = false;
    while (argc > 1 && !strncmp(argv[1], "--", 2)) {
        if (!strcmp(argv[1], "--heap-shot")) {
            heap_shots = true;
            argc--;
            argv++;
            continue;
        }
        if (argc > 2 && !strcmp(argv[1], "--seconds")) {
            char *end;
            run_seconds = strtod(argv[2], &end);
            if (*end || !(run_seconds > 0)) {
                fprintf(stderr, "game_loop: --seconds needs a positive number, not '%s'\n", argv[2]);
                return 2;
            }
            argc -= 2;
            argv += 2;
            continue;
        }
        fprintf(stderr, "usage: game_loop [--seconds S] [--heap-shot] [FRAMES [ENTITIES>=16]]\n");
        return 2;
    }
    long frames_wanted = argc > 1 ? atol(argv[1]) : 0;   /* 0: run for run_seconds */
    uint32_t n = argc > 2 ? (uint32_t)atol(argv[2]) : 200000;
    if (n < 16 || (argc > 1 && frames_wanted <= 0) || argc > 3) {
        fprintf(stderr, "usage: game_loop [--seconds S] [--heap-shot] [FRAMES [ENTITIES>=16]]\n");
        return 2;
    }

    if (lull_init(NULL) != 0) {
        fprintf(stderr, "game_loop: lull_init failed\n");
        return 1;
    }
    lull_root_add_refs((void **)&world, 1);

    double t_start = now_s();
    world = check(lull_alloc_array(&world_type, n));
    for (uint32_t i = 0; i < n; i++)
        lull_store(world, &world->e[i], spawn(i));
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            LULL_SET(world->e[i], nb[k], world->e[rnd_below(n)]);
    char running[64];
    if (frames_wanted)
        snprintf(running, sizeof running, "%ld frames", frames_wanted);
    else
        snprintf(running, sizeof running, "for %g s", run_seconds);
    printf("game_loop: world of %u entities built in %.0f ms; running %s\n", n,
           (now_s() - t_start) * 1e3, running);
    fflush(stdout);

    size_t cap = 4096, nframes = 0;
    double *frame_ms = malloc(cap * sizeof *frame_ms);
    if (!frame_ms)
        return 1;

    lull_stats st, last_st;
    lull_get_stats(&last_st);
    double t0 = now_s(), t_last = t0;
    long last_frames = 0;
    double checksum = 0;
    int levels = 1;
    double loading_ms = 0, loading_max_ms = 0;
    long regions_overrun = 0, loading_steps_done = 0;
    bool honoured = lull_set_allow_synchronous_major(false);   /* level 1 begins */
    double level_end = t0 + LEVEL_SECONDS;

    for (long frame = 0;; frame++) {
        double t = now_s();
        if (frames_wanted ? frame >= frames_wanted : t - t0 >= run_seconds)
            break;
        if (t >= level_end) {
            /* Loading screen: a full major where nobody sees it, then the
             * next level with synchronous majors off again. */
            lull_set_allow_synchronous_major(true);
            if (heap_shots) {
                heap_shot(levels);       /* its own full major */
            } else {
                /* Start a major (or join the one running) and step it to
                 * its end: the loading screen stays responsive between
                 * slices. */
                lull_collect_start();
                int did;
                do {
                    did = lull_collect_step(LOADING_STEP_NS);
                    if (did < 0) {
                        fprintf(stderr, "game_loop: lull_collect_step failed\n");
                        return 1;
                    }
                } while (!(did & LULL_STEP_FINISHED) && now_s() - t < 2.0);
                if (!(did & LULL_STEP_FINISHED))
                    lull_collect(LULL_GEN_MAJOR);     /* the steps could not end it in 2 s */
                loading_steps_done += (did & LULL_STEP_FINISHED) != 0;
            }
            lull_set_allow_synchronous_major(false);
            double load = (now_s() - t) * 1e3;
            loading_ms += load;
            if (load > loading_max_ms)
                loading_max_ms = load;
            levels++;
            t = now_s();
            level_end = t + LEVEL_SECONDS;
        }

        /* Events: a list that lives for this frame only, built and applied
         * in a no-GC region promising exactly its allocation. */
        int region = lull_no_gc_region_begin(EVENTS * sizeof(struct event));
        if (region != 0 && region != -ENOMEM) {
            fprintf(stderr, "game_loop: lull_no_gc_region_begin: %s\n", strerror(-region));
            return 1;
        }
        struct event *events = NULL;
        for (int i = 0; i < EVENTS; i++) {
            struct event *ev = check(lull_alloc(&event_type));
            ev->amount = (double)rnd_below(1000) / 10.0;
            ev->kind = rnd_below(4);
            LULL_SET(ev, src, world->e[rnd_below(n)]);
            LULL_SET(ev, dst, world->e[rnd_below(n)]);
            LULL_SET(ev, next, events);
            events = ev;
        }
        for (struct event *ev = events; ev; ev = ev->next) {
            ev->dst->vx += (float)(ev->amount * 1e-3);
            checksum += ev->src->x * (double)ev->kind;
        }
        if (region == 0 && lull_no_gc_region_end() != 0)
            regions_overrun++;

        /* Scratch buffers (path finding, say). */
        for (int i = 0; i < SCRATCH; i++) {
            struct blob *b = check(lull_alloc_array(&blob_type, 512));
            memset(b->data, i, b->a.length);
            checksum += b->data[rnd_below(512)];
        }

        /* Spawns replace entities. A despawned entity drops its own links
         * (else the retired ones would keep each other alive forever) and
         * lives on while others still point to it. */
        for (int i = 0; i < SPAWNS; i++) {
            uint32_t slot = rnd_below(n);
            struct entity *old = world->e[slot], *e = spawn(slot);
            for (int k = 0; k < 4; k++) {
                LULL_SET(e, nb[k], old->nb[k]);
                LULL_SET(old, nb[k], NULL);
            }
            LULL_SET(old, inv, NULL);
            lull_store(world, &world->e[slot], e);
            struct entity *friend = world->e[rnd_below(n)];   /* LULL_SET evaluates obj twice */
            LULL_SET(friend, nb[rnd_below(4)], e);
        }

        /* Rewiring. */
        for (int i = 0; i < REWIRES; i++) {
            struct entity *e = world->e[rnd_below(n)];
            LULL_SET(e, nb[rnd_below(4)], world->e[rnd_below(n)]);
        }

        /* Movement: plain stores of non-reference data need no barrier. */
        for (int i = 0; i < MOVES; i++) {
            struct entity *e = world->e[rnd_below(n)];
            e->x += e->vx;
            e->y += e->vy;
        }

        double t_end = now_s();
        if (nframes == cap) {
            cap *= 2;
            double *p = realloc(frame_ms, cap * sizeof *frame_ms);
            if (!p)
                return 1;
            frame_ms = p;
        }
        frame_ms[nframes++] = (t_end - t) * 1e3;
        uint64_t slack_ns = t_end - t < FRAME_SECONDS ? (uint64_t)((FRAME_SECONDS - (t_end - t)) * 1e9) : 0;
        if (slack_ns && lull_idle(slack_ns) < 0) {      /* lull_idle(0) would be -EINVAL */
            fprintf(stderr, "game_loop: lull_idle failed\n");
            return 1;
        }

        if (t_end - t_last >= 1.0) {
            lull_get_stats(&st);
            printf("[%5.1fs] frames %6ld (%5.0f/s)  alloc %7.1f MB/s  collections %5llu  "
                   "max pause %7.3f ms  heap %6.1f MB\n",
                   t_end - t0, frame + 1, (frame + 1 - last_frames) / (t_end - t_last),
                   (st.bytes_allocated - last_st.bytes_allocated) / 1e6 / (t_end - t_last),
                   (unsigned long long)(st.collections_minor + st.collections_major),
                   st.pause_max_ns / 1e6, st.heap_bytes / 1e6);
            fflush(stdout);
            last_st = st;
            t_last = t_end;
            last_frames = frame + 1;
        }
    }
    double elapsed = now_s() - t0;

    lull_get_stats(&st);
    qsort(frame_ms, nframes, sizeof *frame_ms, cmp_double);
    printf("frames: %zu in %.2f s (%.0f/s); frame time ms: p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n",
           nframes, elapsed, nframes / elapsed, pct(frame_ms, nframes, 50), pct(frame_ms, nframes, 90),
           pct(frame_ms, nframes, 99), nframes ? frame_ms[nframes - 1] : 0.0);
    printf("levels: %d of %.0f s; synchronous majors off while playing (%s); %d loading screens, "
           "%.1f ms each on average, longest %.1f ms\n", levels, LEVEL_SECONDS,
           honoured ? "honoured" : "not honoured: major=stw", levels - 1,
           levels > 1 ? loading_ms / (levels - 1) : 0.0, loading_max_ms);
    printf("gc: %llu minor (%llu in idle time) + %llu major collections (%llu concurrent, %llu synchronous; "
           "%llu pauses in idle time), %llu pauses, %.1f%% of run time\n",
           (unsigned long long)st.collections_minor, (unsigned long long)st.minors_idle,
           (unsigned long long)st.collections_major,
           (unsigned long long)(st.collections_major - st.collections_major_sync),
           (unsigned long long)st.collections_major_sync, (unsigned long long)st.majors_idle,
           (unsigned long long)st.pauses,
           100.0 * st.pause_total_ns / 1e9 / (now_s() - t_start));
    printf("pause ms: all p50 %.3f  p95 %.3f  p99 %.3f  max %.3f; minor (%llu) p50 %.3f  p99 %.3f  max %.3f; "
           "major (%llu initial/final/synchronous) p50 %.3f  p99 %.3f  max %.3f\n",
           st.pause_p50_ns / 1e6, st.pause_p95_ns / 1e6, st.pause_p99_ns / 1e6, st.pause_max_ns / 1e6,
           (unsigned long long)st.pauses_minor, st.pause_minor_p50_ns / 1e6, st.pause_minor_p99_ns / 1e6,
           st.pause_minor_max_ns / 1e6, (unsigned long long)st.pauses_major, st.pause_major_p50_ns / 1e6,
           st.pause_major_p99_ns / 1e6, st.pause_major_max_ns / 1e6);
    printf("memory: %.1f MB allocated, %.1f%% of it promoted, heap %.1f MB, live after last major %.1f MB\n",
           st.bytes_allocated / 1e6, st.bytes_allocated ? 100.0 * st.bytes_promoted / st.bytes_allocated : 0.0,
           st.heap_bytes / 1e6, st.live_bytes_after_major / 1e6);

    printf("no-GC regions: %llu around the frames' events, %ld overrun (a collection ran inside); "
           "loading screens' majors ended by steps: %ld\n", (unsigned long long)st.regions, regions_overrun,
           loading_steps_done);

    int bad = check_world(n);
    printf("world: %s (checksum %.0f)\n", bad ? "BROKEN" : "intact", checksum);
    if (nframes == 0)
        fprintf(stderr, "game_loop: no frame ran\n");

    free(frame_ms);
    lull_root_remove((void **)&world);
    lull_shutdown();
    return bad || nframes == 0 ? 1 : 0;
}
