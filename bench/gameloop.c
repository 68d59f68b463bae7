/*
 * gameloop.c — frame times of a game-shaped program, written against
 * gcshim.h so the same code runs on lull and on Boehm GC.
 *
 * The world is 1,000,000 entities held by one array of references (a large
 * object). Each entity has a pointer-free component array of 8 doubles
 * (position, velocity, mass, id) and 4 neighbour references. Neighbour links
 * are mutual: every slot is paired with a slot of its neighbour pointing
 * back (they start as a torus-like lattice: p±1 and p±stride). Then each of
 * 3,000 frames
 *   - allocates 20,000 short-lived objects, all held until the end of the
 *     frame by a scratch array: pointer-free vectors, messages chained to each
 *     other and referring to a vector and to a world entity, pointer-free byte
 *     blobs of 8..120 bytes, and small arrays of references to earlier
 *     objects of the frame;
 *   - replaces 2,000 random entities: a new entity with a new component
 *     takes the old one's place in the world array and its neighbour slots,
 *     and the neighbours' slots that pointed at the old one point at the new
 *     one, so the old entity and its component become garbage;
 *   - rewires 2,000 random neighbour edges (a double edge swap: edges p-q and
 *     r-s become p-s and r-q, four reference stores);
 *   - simulates 4,096 entities (a sliding window over the world): each pulls
 *     its velocity towards the average position of its neighbours and moves;
 *   - checks every short-lived object of the frame, then drops them all.
 * Every frame is timed with CLOCK_MONOTONIC; collections that land in a frame
 * show up as long frames. The world build is not in the frame times but is in
 * time_ms (and the pause statistics, which cover the whole run).
 *
 * At the end the world is checked: each entity is at its position with its
 * check word intact, its component holds its id and mass and finite motion,
 * every neighbour is an entity of the world, neighbour links are mutual, and
 * the sum of the ids in the world matches the one kept along the way. A
 * failure (here or in a frame's check) prints a message on stderr and exits
 * 1 without a RESULT line.
 *
 *   gameloop_lull [-v] [--scale F] [--idle]     (gameloop_boehm: same)
 *
 * --scale F (0 < F <= 10, default 1) multiplies the entities and the frames
 * (at least 50); the work of a frame stays the same. --idle: after each
 * frame that took less than 16.6 ms, the program gives the collector what
 * is left of it (lull_idle; Boehm GC has no counterpart and does nothing),
 * as a game does before it waits for the display; the RESULT line then
 * has idle_minors= and idle_majors= (minors and majors' pauses run
 * there: lull_stats.minors_idle, majors_idle) and idle_overran= (frames within
 * 16.6 ms that the idle call took past it). The idle calls are between
 * frames: in time_ms, in no frame's time. -v reports progress on
 * stderr. Prints the RESULT line with checksum= (every entity's id,
 * component values and neighbours' ids, walked by the final check), frames=, frame_p50_ms=, frame_p99_ms=,
 * frame_max_ms= and frames_over_16ms= (frames longer than 16.6 ms),
 * frames_over_16ms_beside_pauses= and frame_p99_ms_beside_pauses= (the
 * same over each frame's time minus the pauses inside it), the PAUSES
 * line, then a SERIES line (name=frame_ms) with every frame's time.
 *
 * The pauses inside a frame are the pause log's entries added during it:
 * this program's one thread allocates, so every collection, lull's or
 * Boehm's, stops the world from inside one of its frames. A frame over
 * 16.6 ms that is still over once its pauses are taken out was made long by
 * something else: the program waiting for a lock the collector holds, the
 * collector's threads taking its CPU, or the machine (bench/jitter).
 */
#include "gcshim.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    kEntities = 1000000,
    kMinEntities = 64,
    kFrames = 3000,
    kMinFrames = 50,
    kTempPerFrame = 20000,
    kReplacePerFrame = 2000,
    kRewirePerFrame = 2000,
    kSimPerFrame = 4096,
    kNeighbours = 4,
    kCompLen = 8, /* x y z vx vy vz mass id */
};

#define FRAME_BUDGET_MS 16.6

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct Comp {
    gcshim_array_header a;
    double v[]; /* kCompLen */
} Comp;
GCSHIM_ARRAY_TYPE(comp_type, Comp, sizeof(double), 0);

typedef struct Entity {
    gcshim_header h;
    struct Entity *nb[kNeighbours];
    Comp *comp;
    uint64_t id;
    uint32_t pos;   /* index in the world array */
    uint32_t check; /* hash of id and pos */
} Entity;
GCSHIM_TYPE(entity_type, Entity,
            GCSHIM_REF(Entity, nb[0]) | GCSHIM_REF(Entity, nb[1]) | GCSHIM_REF(Entity, nb[2]) |
                GCSHIM_REF(Entity, nb[3]) | GCSHIM_REF(Entity, comp));

typedef struct World {
    gcshim_array_header a;
    Entity *e[];
} World;
GCSHIM_ARRAY_TYPE(world_type, World, sizeof(Entity *), 1);

/* Short-lived objects of a frame. */
typedef struct Vec3 {
    gcshim_header h;
    double x, y, z;
} Vec3;
GCSHIM_TYPE(vec3_type, Vec3, 0);

typedef struct Msg {
    gcshim_header h;
    struct Msg *next;
    Vec3 *payload;
    Entity *target;
    uint64_t seq;
} Msg;
GCSHIM_TYPE(msg_type, Msg, GCSHIM_REF(Msg, next) | GCSHIM_REF(Msg, payload) | GCSHIM_REF(Msg, target));

typedef struct Bytes {
    gcshim_array_header a;
    unsigned char b[];
} Bytes;
GCSHIM_ARRAY_TYPE(bytes_type, Bytes, 1, 0);

typedef struct RefArray { /* a RefList of other temporaries, or the frame's scratch array */
    gcshim_array_header a;
    void *r[];
} RefArray;
GCSHIM_ARRAY_TYPE(refarray_type, RefArray, sizeof(void *), 1);

static int verbose;

/* ------------------------------------------------------------------------ */
/* Deterministic randomness: both collectors do exactly the same work.      */
/* ------------------------------------------------------------------------ */

/* gcshim.h: gcshim_mix64, gcshim_rng_seed/next/below. */

/* ------------------------------------------------------------------------ */

static void fail(const char *what, uint64_t a, uint64_t b)
{
    fprintf(stderr, "gameloop: FAILED: %s (%llu, %llu)\n", what, (unsigned long long)a, (unsigned long long)b);
    exit(1);
}

static uint32_t entity_check(uint64_t id, uint32_t pos) { return (uint32_t)(gcshim_mix64(id * 0x1000193u ^ pos) >> 32); }

static double entity_mass(uint64_t id) { return 1.0 + (double)(gcshim_mix64(id ^ 0x6d617373u) & 1023) / 1024.0; }

/* A new entity with its component, not linked to anything yet. */
static Entity *new_entity(uint64_t id, uint32_t pos)
{
    Entity *e = gcshim_alloc(&entity_type);
    e->id = id;
    e->pos = pos;
    e->check = entity_check(id, pos);
    Comp *c = gcshim_alloc_array(&comp_type, kCompLen);
    uint64_t h = gcshim_mix64(id);
    for (int i = 0; i < 3; i++) {
        c->v[i] = (double)((h >> (i * 16)) & 0xffff) / 32768.0 - 1.0; /* position in [-1, 1) */
        c->v[3 + i] = 0.0;                                            /* velocity */
    }
    c->v[6] = entity_mass(id);
    c->v[7] = (double)id;
    GCSHIM_SET(e, comp, c);
    return e;
}

static void check_entity(const Entity *e, const char *where)
{
    if (e->check != entity_check(e->id, e->pos))
        fail(where, e->id, e->pos);
}

/* The world: entities 0..n-1, slot 0 -> p+1 (paired with its slot 1),
 * slot 2 -> p+stride (paired with its slot 3). */
static World *build_world(uint32_t n)
{
    World *w = gcshim_alloc_array(&world_type, n);
    for (uint32_t p = 0; p < n; p++)
        GCSHIM_STORE(w, &w->e[p], new_entity(p, p));
    uint32_t stride = (uint32_t)sqrt((double)n);
    for (uint32_t p = 0; p < n; p++) {
        Entity *e = w->e[p];
        GCSHIM_SET(e, nb[0], w->e[(p + 1) % n]);
        GCSHIM_SET(e, nb[1], w->e[(p + n - 1) % n]);
        GCSHIM_SET(e, nb[2], w->e[(p + stride) % n]);
        GCSHIM_SET(e, nb[3], w->e[(p + n - stride) % n]);
    }
    return w;
}

/* ------------------------------------------------------------------------ */
/* One frame's work                                                         */
/* ------------------------------------------------------------------------ */

/* What temporary i of frame f is, and its sizes: a function of (f, i) only,
 * so the end-of-frame check can recompute it. */
enum { kVec, kMsg, kBytes, kRefs };
static uint64_t temp_hash(uint32_t f, uint32_t i) { return gcshim_mix64(((uint64_t)f << 32) | i); }
static int temp_kind(uint64_t h)
{
    unsigned r = (unsigned)(h % 100);
    return r < 40 ? kVec : r < 70 ? kMsg : r < 90 ? kBytes : kRefs;
}
static size_t bytes_len(uint64_t h) { return 8 + (size_t)((h >> 8) % 113); }
static size_t refs_len(uint64_t h) { return 2 + (size_t)((h >> 8) % 7); }
static uint32_t refs_target(uint64_t h, size_t j, uint32_t i) { return (uint32_t)(gcshim_mix64(h + j) % i); }

/* Allocate the frame's temporaries into a new scratch array. */
static RefArray *alloc_temps(uint32_t f, World *w, uint32_t n)
{
    RefArray *s = gcshim_alloc_array(&refarray_type, kTempPerFrame);
    Msg *last_msg = NULL;
    Vec3 *last_vec = NULL;
    for (uint32_t i = 0; i < kTempPerFrame; i++) {
        uint64_t h = temp_hash(f, i);
        void *obj;
        switch (temp_kind(h)) {
        case kVec: {
            Vec3 *v = gcshim_alloc(&vec3_type);
            v->x = i;
            v->y = f;
            v->z = 0.5;
            last_vec = v;
            obj = v;
            break;
        }
        case kMsg: {
            Msg *m = gcshim_alloc(&msg_type);
            m->seq = ((uint64_t)f << 32) | i;
            if (last_msg)
                GCSHIM_SET(m, next, last_msg);
            if (last_vec)
                GCSHIM_SET(m, payload, last_vec);
            GCSHIM_SET(m, target, w->e[gcshim_rng_below(n)]);
            last_msg = m;
            obj = m;
            break;
        }
        case kBytes: {
            size_t len = bytes_len(h);
            Bytes *b = gcshim_alloc_array(&bytes_type, len);
            b->b[0] = (unsigned char)i;
            b->b[len - 1] = (unsigned char)(h >> 24);
            obj = b;
            break;
        }
        default: {
            size_t len = refs_len(h);
            RefArray *r = gcshim_alloc_array(&refarray_type, len);
            if (i > 0)
                for (size_t j = 0; j < len; j++)
                    GCSHIM_STORE(r, &r->r[j], s->r[refs_target(h, j, i)]);
            obj = r;
            break;
        }
        }
        GCSHIM_STORE(s, &s->r[i], obj);
    }
    return s;
}

/* Every temporary of the frame still what it was made as. */
static void check_temps(uint32_t f, RefArray *s)
{
    if (s->a.length != kTempPerFrame)
        fail("frame scratch array length changed", f, s->a.length);
    for (uint32_t i = 0; i < kTempPerFrame; i++) {
        uint64_t h = temp_hash(f, i);
        void *obj = s->r[i];
        if (!obj)
            fail("short-lived object lost", f, i);
        switch (temp_kind(h)) {
        case kVec: {
            Vec3 *v = obj;
            if (v->x != i || v->y != f || v->z != 0.5)
                fail("short-lived vector damaged", f, i);
            break;
        }
        case kMsg: {
            Msg *m = obj;
            if (m->seq != (((uint64_t)f << 32) | i))
                fail("short-lived message damaged", f, i);
            if (m->next && (m->next->seq >> 32 != f || (uint32_t)m->next->seq >= i))
                fail("message chain damaged", f, i);
            if (m->payload && (m->payload->y != f || m->payload->x >= i))
                fail("message payload damaged", f, i);
            if (!m->target)
                fail("message target lost", f, i);
            check_entity(m->target, "message target damaged");
            break;
        }
        case kBytes: {
            Bytes *b = obj;
            size_t len = bytes_len(h);
            if (b->a.length != len || b->b[0] != (unsigned char)i || b->b[len - 1] != (unsigned char)(h >> 24))
                fail("short-lived byte blob damaged", f, i);
            break;
        }
        default: {
            RefArray *r = obj;
            size_t len = refs_len(h);
            if (r->a.length != len)
                fail("short-lived reference array damaged", f, i);
            for (size_t j = 0; j < len; j++)
                if (r->r[j] != (i > 0 ? s->r[refs_target(h, j, i)] : NULL))
                    fail("short-lived reference array points elsewhere", f, i);
            break;
        }
        }
    }
}

/* A slot of q that points to p and is none of the `nex` slots (entity,
 * slot) in ex; -1 if there is none. */
typedef struct SlotRef {
    const Entity *e;
    int k;
} SlotRef;
static int partner_slot(const Entity *q, const Entity *p, const SlotRef *ex, int nex)
{
    for (int k = 0; k < kNeighbours; k++) {
        if (q->nb[k] != p)
            continue;
        int excluded = 0;
        for (int x = 0; x < nex; x++)
            excluded |= ex[x].e == q && ex[x].k == k;
        if (!excluded)
            return k;
    }
    return -1;
}

/* Replace the entity at a random position, keeping the sum of the world's
 * ids up to date. */
static void replace_entity(World *w, uint32_t n, uint64_t *next_id, uint64_t *id_sum)
{
    uint32_t pos = gcshim_rng_below(n);
    Entity *old = w->e[pos];
    check_entity(old, "world entity damaged (replace)");
    if (old->pos != pos)
        fail("world entity at the wrong position", pos, old->pos);
    uint64_t id = (*next_id)++;
    Entity *e = new_entity(id, pos);
    for (int k = 0; k < kNeighbours; k++) {
        Entity *q = old->nb[k];
        GCSHIM_SET(e, nb[k], q == old ? e : q);
    }
    /* Each neighbour has as many slots pointing at old as old has at it. */
    for (int k = 0; k < kNeighbours; k++) {
        Entity *q = old->nb[k];
        if (q == old)
            continue;
        for (int m = 0; m < kNeighbours; m++)
            if (q->nb[m] == old)
                GCSHIM_SET(q, nb[m], e);
    }
    GCSHIM_STORE(w, &w->e[pos], e);
    *id_sum += id - old->id;
}

/* A double edge swap: edges p-q and r-s become p-s and r-q. Returns 0 when
 * the two picks are the same edge (nothing done). */
static int rewire_edge(World *w, uint32_t n)
{
    Entity *p = w->e[gcshim_rng_below(n)];
    int k = (int)gcshim_rng_below(kNeighbours);
    Entity *r = w->e[gcshim_rng_below(n)];
    int j = (int)gcshim_rng_below(kNeighbours);
    Entity *q = p->nb[k];
    SlotRef ex[3] = {{p, k}, {NULL, -1}, {r, j}};
    int kq = partner_slot(q, p, ex, 1);
    if (kq < 0)
        fail("neighbour link not mutual (rewire)", p->id, q->id);
    ex[1] = (SlotRef){q, kq};
    if ((r == p && j == k) || (r == q && j == kq))
        return 0;
    Entity *s = r->nb[j];
    int js = partner_slot(s, r, ex, 3);
    if (js < 0)
        fail("neighbour link not mutual (rewire)", r->id, s->id);
    GCSHIM_SET(p, nb[k], s);
    GCSHIM_SET(s, nb[js], p);
    GCSHIM_SET(r, nb[j], q);
    GCSHIM_SET(q, nb[kq], r);
    return 1;
}

/* Move `count` entities from position `start` on; returns their kinetic
 * energy (a number both collectors must agree on). */
static double simulate(World *w, uint32_t n, uint32_t start, uint32_t count)
{
    const double dt = 1.0 / 60, stiffness = 2.0, damping = 0.98;
    double energy = 0;
    for (uint32_t c = 0; c < count; c++) {
        Entity *e = w->e[(start + c) % n];
        double *v = e->comp->v;
        double avg[3] = {0, 0, 0};
        for (int k = 0; k < kNeighbours; k++) {
            const double *nv = e->nb[k]->comp->v;
            for (int i = 0; i < 3; i++)
                avg[i] += nv[i] / kNeighbours;
        }
        for (int i = 0; i < 3; i++) {
            v[3 + i] = damping * v[3 + i] + dt * stiffness * (avg[i] - v[i]) / v[6];
            v[i] += dt * v[3 + i];
            energy += 0.5 * v[6] * v[3 + i] * v[3 + i];
        }
    }
    return energy;
}

/* One frame; returns the simulated entities' kinetic energy. noinline keeps
 * the frame's references in a stack frame of its own, which the next frame
 * overwrites. */
__attribute__((noinline)) static double run_frame(uint32_t f, World *w, uint32_t n, uint64_t *next_id,
                                                  uint64_t *id_sum, uint32_t *sim_cursor)
{
    RefArray *scratch = alloc_temps(f, w, n);
    for (int i = 0; i < kReplacePerFrame; i++)
        replace_entity(w, n, next_id, id_sum);
    for (int i = 0; i < kRewirePerFrame;)
        i += rewire_edge(w, n);
    double energy = simulate(w, n, *sim_cursor, kSimPerFrame);
    *sim_cursor = (uint32_t)((*sim_cursor + (uint64_t)kSimPerFrame) % n);
    check_temps(f, scratch);
    return energy; /* the frame's temporaries are garbage from here on */
}

/* ------------------------------------------------------------------------ */
/* The final check                                                          */
/* ------------------------------------------------------------------------ */

static int count_to(const Entity *from, const Entity *to)
{
    int c = 0;
    for (int k = 0; k < kNeighbours; k++)
        c += from->nb[k] == to;
    return c;
}

/* Check the world; returns the checksum of the final live data: each
 * entity's id, its component's values (their bits) and its neighbours' ids,
 * in world order. */
static uint64_t verify_world(World *w, uint32_t n, uint64_t next_id, uint64_t id_sum)
{
    if (w->a.length != n)
        fail("world array length changed", w->a.length, n);
    uint64_t sum = 0, checksum = 0;
    for (uint32_t p = 0; p < n; p++) {
        Entity *e = w->e[p];
        if (!e)
            fail("world entity lost", p, 0);
        check_entity(e, "world entity damaged");
        if (e->pos != p || e->id >= next_id)
            fail("world entity out of place", p, e->id);
        sum += e->id;
        Comp *c = e->comp;
        if (!c)
            fail("component lost", e->id, p);
        if (c->a.length != kCompLen || c->v[7] != (double)e->id || c->v[6] != entity_mass(e->id))
            fail("component damaged", e->id, p);
        for (int i = 0; i < 6; i++)
            if (!isfinite(c->v[i]))
                fail("component state not finite", e->id, (uint64_t)i);
        checksum = gcshim_fold(checksum, e->id);
        for (int i = 0; i < kCompLen; i++) {
            uint64_t bits;
            memcpy(&bits, &c->v[i], sizeof bits);
            checksum = gcshim_fold(checksum, bits);
        }
        for (int k = 0; k < kNeighbours; k++) {
            Entity *q = e->nb[k];
            if (!q)
                fail("neighbour lost", e->id, (uint64_t)k);
            if (q->pos >= n || w->e[q->pos] != q)
                fail("neighbour not in the world", e->id, q->id);
            int there = count_to(e, q), back = count_to(q, e);
            if (q == e ? there % 2 != 0 : there != back)
                fail("neighbour links not mutual", e->id, q->id);
            checksum = gcshim_fold(checksum, q->id);
        }
    }
    if (sum != id_sum)
        fail("sum of world ids changed", sum, id_sum);
    return checksum;
}

/* ------------------------------------------------------------------------ */

static uint32_t scaled(double base, double scale, uint32_t min)
{
    double v = floor(base * scale + 0.5);
    return v < min ? min : (uint32_t)v;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void gameloop_usage(const char *argv0)
{
    fprintf(stderr, "usage: %s [-v] [--scale F] [--idle]\n", argv0);
    exit(2);
}

/* Nearest-rank percentile of sorted v[0..n) (gcshim_rank_index's rule). */
static double percentile(const double *v, uint32_t n, unsigned pct) { return v[gcshim_rank_index(n, pct)]; }

int main(int argc, char **argv)
{
    double scale = 1.0;
    int idle = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--idle"))
            idle = 1;
        else if (!gcshim_common_option(argc, argv, &i, &scale, &verbose, gameloop_usage))
            gameloop_usage(argv[0]);
    }
    const uint32_t n = scaled(kEntities, scale, kMinEntities);
    const uint32_t frames = scaled(kFrames, scale, kMinFrames);
    double *frame_ms = malloc(frames * sizeof *frame_ms);
    double *sorted = malloc(frames * sizeof *sorted);
    double *beside_ms = malloc(frames * sizeof *beside_ms);     /* frame_ms minus its pauses */
    if (!frame_ms || !sorted || !beside_ms) {
        fprintf(stderr, "gameloop: out of memory\n");
        return 1;
    }

    gcshim_init();
    gcshim_rng_seed(60);
    uint64_t t0 = gcshim_now_ns();

    World *volatile world = build_world(n);
    uint64_t next_id = n, id_sum = (uint64_t)n * (n - 1) / 2;
    if (verbose)
        fprintf(stderr, "gameloop: %u entities built in %.0f ms\n", n, (gcshim_now_ns() - t0) / 1e6);

    double energy = 0;
    uint32_t sim_cursor = 0;
    uint32_t idle_overran = 0;
    uint64_t idle_minors0, idle_majors0;
    gcshim_idle_counts(&idle_minors0, &idle_majors0);
    for (uint32_t f = 0; f < frames; f++) {
        uint64_t p0 = __atomic_load_n(&gcshim_pause_log_n, __ATOMIC_ACQUIRE);
        uint64_t f0 = gcshim_now_ns();
        energy = run_frame(f, world, n, &next_id, &id_sum, &sim_cursor);
        frame_ms[f] = (gcshim_now_ns() - f0) / 1e6;
        uint64_t p1 = __atomic_load_n(&gcshim_pause_log_n, __ATOMIC_ACQUIRE), paused = 0;
        for (uint64_t k = p0; k < p1 && k < GCSHIM_PAUSE_LOG_CAP; k++)
            paused += gcshim_pause_log[k];
        beside_ms[f] = frame_ms[f] - paused / 1e6;
        uint64_t slack_ns = frame_ms[f] < FRAME_BUDGET_MS ? (uint64_t)((FRAME_BUDGET_MS - frame_ms[f]) * 1e6) : 0;
        if (idle && slack_ns) {     /* lull_idle(0) is -EINVAL: a frame a nanosecond short has no slack */
            uint64_t i0 = gcshim_now_ns();
            int r = gcshim_idle(slack_ns);
            if (r < 0) {
                fprintf(stderr, "gameloop: the idle call failed (%d)\n", r);
                return 1;
            }
            idle_overran += frame_ms[f] + (gcshim_now_ns() - i0) / 1e6 > FRAME_BUDGET_MS;
        }
        if (verbose && (f + 1) % 100 == 0)
            fprintf(stderr, "gameloop: frame %u/%u: %.2f ms, energy %.9g\n", f + 1, frames, frame_ms[f], energy);
    }
    uint64_t t1 = gcshim_now_ns();

    uint64_t v0 = gcshim_now_ns();
    uint64_t checksum = verify_world(world, n, next_id, id_sum);
    if (verbose)
        fprintf(stderr, "gameloop: verified %u entities in %.0f ms; final energy %.9g\n", n,
                (gcshim_now_ns() - v0) / 1e6, energy);

    memcpy(sorted, frame_ms, frames * sizeof *sorted);
    qsort(sorted, frames, sizeof *sorted, cmp_double);
    uint32_t over = 0, over_beside = 0;
    for (uint32_t f = 0; f < frames; f++) {
        over += frame_ms[f] > FRAME_BUDGET_MS;
        over_beside += beside_ms[f] > FRAME_BUDGET_MS;
    }
    double p50 = percentile(sorted, frames, 50), p99 = percentile(sorted, frames, 99), max = sorted[frames - 1];
    memcpy(sorted, beside_ms, frames * sizeof *sorted);
    qsort(sorted, frames, sizeof *sorted, cmp_double);
    char extra[384];
    int len = snprintf(extra, sizeof extra,
                       "frames=%u frame_p50_ms=%.3f frame_p99_ms=%.3f frame_max_ms=%.3f frames_over_16ms=%u "
                       "frames_over_16ms_beside_pauses=%u frame_p99_ms_beside_pauses=%.3f",
                       frames, p50, p99, max, over, over_beside, percentile(sorted, frames, 99));
    uint64_t idle_minors, idle_majors;
    gcshim_idle_counts(&idle_minors, &idle_majors);
    if (idle)
        snprintf(extra + len, sizeof extra - (size_t)len, " idle_minors=%llu idle_majors=%llu idle_overran=%u",
                 (unsigned long long)(idle_minors - idle_minors0), (unsigned long long)(idle_majors - idle_majors0),
                 idle_overran);
    gcshim_report("gameloop", t1 - t0, checksum, extra);
    gcshim_series("gameloop", "frame_ms", frame_ms, frames);
    free(frame_ms);
    free(sorted);
    free(beside_ms);
    gcshim_shutdown();
    return 0;
}
