/*
 * nursery — the copying nursery and its minor collections:
 *
 *  - promotion: objects reachable only from a precise root, from heap
 *    objects and from large arrays move on lull_collect(LULL_GEN_NURSERY);
 *    every reference to them is updated; identity (the graph's shape),
 *    contents, types and array lengths survive;
 *  - pinning: an object a stack word points to (its start, or only an
 *    interior address) stays where it is, as do lull_alloc_pinned objects
 *    and targets of conservative root ranges;
 *  - cards: references stored into promoted objects with lull_store are
 *    found; in a large array of references only a few elements are
 *    written, and all of them are updated;
 *  - cementing: a pinned object that more than 64 old slots point to stays
 *    in place after it is no longer pinned (it is a root until the next
 *    major), and moves after a major;
 *  - statistics count minors and their pauses apart from majors;
 *  - four threads allocating lists concurrently with minors lose nothing;
 *  - a nursery that grows (lull_set_pause_target) hands out its new room
 *    at once, also right after a shrink, not from the next minor on; what
 *    was allocated there survives the minor; objects pinned beyond the
 *    shrunk size are left alone when it grows past them again
 *    (LULL_GC_DEBUG=verify-nursery unless set);
 *  - objects a minor left pinned do not take the nursery's room: its
 *    limit moves past them; when they fill it all, allocation goes to the
 *    major heap for a while instead of running a minor each time.
 *
 * (LULL_GC_DEBUG=check-cards catching a store without lull_store is in
 * debug_checks, with the other debug checks.)
 *
 * Addresses compared across collections are kept XOR-masked so that the
 * comparison itself does not pin the object (the stack is scanned).
 */
#include "check.h"

#include <pthread.h>

#define MASK ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
#define HIDE(p) ((uintptr_t)(p) ^ MASK)

static void minor(void)
{
    lull_collect(LULL_GEN_NURSERY);
}

/* ---- promotion through a precise root ---------------------------------- */

static void *precise_root[4];

static NOINLINE void build_rooted(void)
{
    precise_root[0] = list_build(1000, 300);          /* a list: heap references */
    struct refs *r = lull_alloc_array(&refs_type, 50);
    CHECK(r, "alloc refs");
    for (size_t i = 0; i < 50; i++)
        LULL_SET(r, item[i], tnode_new(5000 + i));
    precise_root[1] = r;
    struct bytes *b = bytes_new(100, 77);               /* pointer-free array */
    precise_root[2] = b;
    precise_root[3] = precise_root[0];                  /* two roots, one object */
}

static uintptr_t rooted_before[4];

static void promotion_build(void)
{
    build_rooted();
    for (int i = 0; i < 4; i++)
        rooted_before[i] = HIDE(precise_root[i]);
}

static void promotion_check(void)
{
    minor();
    for (int i = 0; i < 3; i++)
        CHECK(HIDE(precise_root[i]) != rooted_before[i],
              "root %d: object reachable only from a precise root did not move", i);
    CHECK(precise_root[3] == precise_root[0], "two roots to one object now differ: %p and %p",
          precise_root[3], precise_root[0]);
    list_verify(precise_root[0], 1000, 300, "promoted list");
    struct refs *r = precise_root[1];
    CHECK(lull_type_of(r) == &refs_type && lull_array_length(r) == 50, "promoted array: type or length lost");
    for (size_t i = 0; i < 50; i++)
        CHECK(tnode_ok(r->item[i], 5000 + i), "promoted array: element %zu", i);
    bytes_verify(precise_root[2], 77, 100, "promoted pointer-free array");
    /* Promoted objects stay put from now on (the major heap does not move). */
    uintptr_t now = HIDE(precise_root[0]);
    minor();
    CHECK(HIDE(precise_root[0]) == now, "an object in the major heap moved");
}

static void test_promotion(void)
{
    CHECK(lull_root_add_refs(precise_root, 4) == 0, "lull_root_add_refs");
    run_in_fresh_thread(promotion_build);      /* built by one thread, */
    run_in_fresh_thread(promotion_check);      /* collected and checked by another */
    lull_root_remove(precise_root);
    for (int i = 0; i < 4; i++)
        precise_root[i] = NULL;
}

/* ---- pinning ------------------------------------------------------------ */

static void test_pinning(void)
{
    struct tnode *volatile held = tnode_new(42);
    uintptr_t where = HIDE(held);
    struct tnode *inner_target = tnode_new(43);
    char *volatile interior = (char *)inner_target + 24;   /* only an interior pointer */
    uintptr_t inner_where = HIDE(inner_target);
    inner_target = NULL;
    static void *range[1];                                 /* a conservative root range */
    CHECK(lull_root_add(range, sizeof range) == 0, "lull_root_add");
    range[0] = tnode_new(44);
    uintptr_t range_where = HIDE(range[0]);
    static const lull_type pinned_type = { .name = "pinned", .size = sizeof(struct tnode),
                                           .refs = LULL_REF(struct tnode, next) };
    struct tnode *volatile pinned = lull_alloc_pinned(&pinned_type);
    uintptr_t pinned_where = HIDE(pinned);
    clobber_stack();
    minor();
    minor();
    CHECK(HIDE(held) == where && tnode_ok(held, 42), "an object held on the stack moved or changed");
    struct tnode *it = (struct tnode *)(interior - 24);
    CHECK(HIDE(it) == inner_where && tnode_ok(it, 43), "an object held by an interior pointer moved or changed");
    CHECK(HIDE(range[0]) == range_where && tnode_ok(range[0], 44),
          "an object in a conservative root range moved or changed");
    CHECK(HIDE(pinned) == pinned_where, "a lull_alloc_pinned object moved");
    /* Pinned objects keep their referents alive and updated. */
    LULL_SET(held, next, tnode_new(45));
    minor();
    CHECK(tnode_ok(held->next, 45), "the referent of a pinned object was lost");
    lull_root_remove(range);
    range[0] = NULL;
}

/* ---- cards -------------------------------------------------------------- */

/* Objects pinned in the nursery through a major are live data: they count
 * in live_bytes_after_major (they did not, before: only the old blocks and
 * large objects were summed). */
#define PINNED_LIVE 256
static void *pinned_live[PINNED_LIVE];

static void test_pinned_live(void)
{
    CHECK(lull_root_add(pinned_live, sizeof pinned_live) == 0, "lull_root_add");
    lull_collect(LULL_GEN_MAJOR);
    uint64_t before = get_stats().live_bytes_after_major;
    for (int i = 0; i < PINNED_LIVE; i++) {
        pinned_live[i] = lull_alloc_array(&bytes_type, 1000);
        CHECK(pinned_live[i] != NULL, "alloc");
    }
    uintptr_t where = HIDE(pinned_live[0]);
    lull_collect(LULL_GEN_MAJOR);
    CHECK(HIDE(pinned_live[0]) == where,
          "an object of a conservative root range moved");
    uint64_t after = get_stats().live_bytes_after_major;
    CHECK(after >= before + PINNED_LIVE * 1000,
          "%d pinned nursery objects of 1000 bytes: live_bytes_after_major went from %" PRIu64 " to %" PRIu64,
          PINNED_LIVE, before, after);
    lull_root_remove(pinned_live);
    memset(pinned_live, 0, sizeof pinned_live);
}

static void test_cards(void)
{
    /* An old object (promoted), then young referents stored into it. */
    struct refs *volatile old = lull_alloc_array(&refs_type, 200);
    CHECK(old, "alloc");
    void *root[1] = { (void *)old };                /* a precise root: the minor promotes it */
    CHECK(lull_root_add_refs(root, 1) == 0, "root");
    old = NULL;
    clobber_stack();
    minor();
    struct refs *o = root[0];
    for (size_t i = 0; i < 200; i += 3)
        LULL_SET(o, item[i], tnode_new(9000 + i));
    o = NULL;
    clobber_stack();
    minor();
    o = root[0];
    for (size_t i = 0; i < 200; i++)
        CHECK(i % 3 ? o->item[i] == NULL : tnode_ok(o->item[i], 9000 + i),
              "old array: element %zu after a minor", i);
    lull_root_remove(root);

    /* A large array of references: a few elements written, far apart. */
    size_t n = 200000;
    struct refs *big = lull_alloc_array(&refs_type, n);
    CHECK(big, "alloc large refs");
    uintptr_t big_where = HIDE(big);
    const size_t idx[] = { 0, 1, 777, 65536, 100003, n - 1 };
    for (size_t k = 0; k < sizeof idx / sizeof idx[0]; k++)
        LULL_SET(big, item[idx[k]], tnode_new(20000 + k));
    minor();
    CHECK(HIDE(big) == big_where, "a large object moved");
    for (size_t k = 0; k < sizeof idx / sizeof idx[0]; k++)
        CHECK(tnode_ok(big->item[idx[k]], 20000 + k), "large array: element %zu lost", idx[k]);
    for (size_t i = 2; i < 700; i++)
        CHECK(big->item[i] == NULL, "large array: element %zu not NULL", i);
}

/* ---- cementing ---------------------------------------------------------- */

#define OLD_SLOTS 200
static void *olds[OLD_SLOTS];

/* The hidden address of what every old slot points to, after checking
 * that they all agree and the object is intact. The raw pointer lives only
 * in this frame. */
static NOINLINE uintptr_t popular_now(const char *when)
{
    struct tnode *p = ((struct tnode *)olds[0])->next;
    for (int i = 0; i < OLD_SLOTS; i++)
        CHECK(((struct tnode *)olds[i])->next == p, "%s: old slot %d disagrees", when, i);
    CHECK(tnode_ok(p, 31000), "%s: the popular object is corrupt", when);
    return HIDE(p);
}

static NOINLINE uintptr_t make_popular_and_collect(void)
{
    struct tnode *volatile popular = tnode_new(31000);
    for (int i = 0; i < OLD_SLOTS; i++)
        LULL_SET((struct tnode *)olds[i], next, popular);
    minor();                         /* pinned, and more than 64 old slots: cemented */
    return HIDE(popular);
}

static uintptr_t cemented_where;

static void cementing_setup(void)
{
    for (int i = 0; i < OLD_SLOTS; i++)
        olds[i] = tnode_new(30000 + (uint64_t)i);
    minor();                         /* the olds are promoted */
    uintptr_t where = make_popular_and_collect();
    CHECK(popular_now("pinned") == where, "a pinned object moved");
    cemented_where = where;
}

static void cementing_hold(void)
{
    minor();                         /* no longer pinned, but cemented: stays */
    minor();
    CHECK(popular_now("cemented") == cemented_where, "a cemented object moved before the next major");
}

static void cementing_reset(void)
{
    lull_collect(LULL_GEN_MAJOR);    /* cementing starts afresh */
    minor();
    CHECK(popular_now("after a major") != cemented_where,
          "a formerly cemented object did not move after a major and a minor");
}

static void test_cementing(void)
{
    CHECK(lull_root_add_refs(olds, OLD_SLOTS) == 0, "root");
    run_in_fresh_thread(cementing_setup);
    run_in_fresh_thread(cementing_hold);
    run_in_fresh_thread(cementing_reset);
    lull_root_remove(olds);
}

/* ---- threads ------------------------------------------------------------ */

static void *allocator(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    for (int round = 0; round < 20; round++) {
        struct tnode *volatile l = list_build(base + (uint64_t)round * 100000, 5000);
        for (int j = 0; j < 10; j++)
            (void)tnode_new(1);       /* garbage */
        if (round % 5 == 0)
            minor();
        list_verify(l, base + (uint64_t)round * 100000, 5000, "thread list");
    }
    lull_thread_detach();
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, allocator, (void *)(uintptr_t)((uint64_t)(i + 1) << 40)) == 0,
              "pthread_create");
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
}

/* ---- growth takes effect at once --------------------------------------- */

#define GROW_NODES 6144         /* 384 KiB of 64-byte nodes: 1.5x a 256 KiB nursery */
static struct tnode *grow_lists[2];

/* The nursery is at its 256 KiB floor; a target of 10 s doubles it (one
 * doubling per resize). Then 384 KiB are allocated without a minor. */
static void grow_once(int k, const char *what)
{
    lull_stats a = get_stats();
    CHECK(a.nursery_bytes == 256 << 10, "%s: the nursery is %" PRIu64 " KiB, not the 256 KiB floor", what,
          a.nursery_bytes >> 10);
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MAX_NS) == 0, "10 s refused");
    CHECK(get_stats().nursery_bytes == 512 << 10, "%s: a 10 s target made the nursery %" PRIu64 " KiB, not 512",
          what, get_stats().nursery_bytes >> 10);
    grow_lists[k] = list_build((uint64_t)k << 32, GROW_NODES);
    lull_stats b = get_stats();
    CHECK(b.collections_minor == a.collections_minor, "%s: %" PRIu64 " minors in 384 KiB after the nursery grew "
          "from 256 to 512 KiB: it grew only at the next minor", what, b.collections_minor - a.collections_minor);
}

static void test_grow(void)
{
    setenv("LULL_GC_DEBUG", "verify-nursery", 0);
    const char *params = "nursery-size=4m,pause-target=100us,promotion-age=1";
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add_refs((void **)grow_lists, 2) == 0, "lull_root_add_refs");
    /* From lull_init's nursery: its start was cut to the floor. */
    grow_once(0, "after lull_init");
    minor();
    list_verify(grow_lists[0], 0, GROW_NODES, "allocated in the grown nursery, after a minor");
    /* Shrunk and grown again between two minors. */
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MIN_NS) == 0, "100 us refused");
    grow_once(1, "shrunk after a minor");
    minor();
    list_verify(grow_lists[0], 0, GROW_NODES, "the first list, after the second minor");
    list_verify(grow_lists[1], (uint64_t)1 << 32, GROW_NODES, "allocated after a shrink and a growth, after a minor");
    lull_collect(LULL_GEN_MAJOR);
    list_verify(grow_lists[0], 0, GROW_NODES, "the first list, after a major");
    list_verify(grow_lists[1], (uint64_t)1 << 32, GROW_NODES, "the second list, after a major");
    lull_root_remove((void *)grow_lists);
    lull_shutdown();
}

/* Objects pinned every 256 KiB of a 4 MiB nursery; a minor (they stay,
 * the rest dies); the nursery shrunk (a 100 us target) and grown again (10
 * s: twice the shrunk size); more than the shrunk size allocated in the
 * room between the pinned objects, which must be intact. Any size from
 * 256 KiB to 2 MiB has a pinned object between it and its double. */
#define GROW_PINS 14
static void *grow_pins[GROW_PINS];      /* a conservative root range */

static void pins_intact(const char *when)
{
    for (uint64_t k = 0; k < GROW_PINS; k++)
        CHECK(tnode_ok(grow_pins[k], k * 4096 + 2048), "pinned node %" PRIu64 " (at %p) was overwritten %s", k,
              grow_pins[k], when);
}

static void test_grow_pinned(void)
{
    const char *params = "nursery-size=4m,pause-target=10s,promotion-age=1";
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add(grow_pins, sizeof grow_pins) == 0, "lull_root_add");
    CHECK(lull_root_add_refs((void **)grow_lists, 2) == 0, "lull_root_add_refs");
    CHECK(get_stats().nursery_bytes == 4 << 20, "a 10 s target left a %" PRIu64 " KiB nursery, not 4 MiB",
          get_stats().nursery_bytes >> 10);
    for (uint64_t i = 0, k = 0; k < GROW_PINS; i++) {
        struct tnode *n = tnode_new(i);
        if (i % 4096 == 2048)                   /* every 256 KiB of 64-byte nodes, from 128 KiB on */
            grow_pins[k++] = n;
    }
    clobber_stack();
    minor();
    /* Minors that copy all they were handed out: the cost per nursery
     * byte they measure keeps a 100 us target's nursery well below 2 MiB
     * (the minor above, which copied nothing, measured next to nothing). */
    for (uint64_t round = 0; round < 4; round++) {
        grow_lists[1] = list_build(round << 32, GROW_NODES * 2);
        minor();
    }
    grow_lists[1] = NULL;
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MIN_NS) == 0, "100 us refused");
    uint64_t shrunk = get_stats().nursery_bytes;
    CHECK(lull_set_pause_target(LULL_PAUSE_TARGET_MAX_NS) == 0, "10 s refused");
    uint64_t grown = get_stats().nursery_bytes;
    uintptr_t start = (uintptr_t)grow_pins[0] - 128 * 1024 - 2 * sizeof(struct tnode);   /* about */
    unsigned between = 0;
    for (uint64_t k = 0; k < GROW_PINS; k++)
        between += (uintptr_t)grow_pins[k] >= start + shrunk && (uintptr_t)grow_pins[k] < start + grown;
    printf("nursery: shrunk to %" PRIu64 " KiB, grown to %" PRIu64 " KiB, %u pinned objects in between\n",
           shrunk >> 10, grown >> 10, between);
    CHECK(shrunk < grown && between > 0, "no pinned object between the shrunk size (%" PRIu64 " KiB) and the "
          "grown one (%" PRIu64 " KiB)", shrunk >> 10, grown >> 10);
    size_t nodes = (size_t)((shrunk + grown) / 2 / sizeof(struct tnode));
    uint64_t minors = get_stats().collections_minor;
    grow_lists[0] = list_build(0, nodes);
    CHECK(get_stats().collections_minor == minors, "a minor in %zu KiB of a nursery grown from %" PRIu64 " to %"
          PRIu64 " KiB", nodes * sizeof(struct tnode) >> 10, shrunk >> 10, grown >> 10);
    pins_intact("after the nursery grew");
    minor();
    list_verify(grow_lists[0], 0, nodes, "allocated between pinned objects, after a minor");
    pins_intact("after the minor");
    memset(grow_pins, 0, sizeof grow_pins);
    grow_lists[0] = NULL;
    lull_root_remove(grow_pins);
    lull_root_remove((void *)grow_lists);
    lull_shutdown();
}

/* ---- the room beside pinned objects ------------------------------------ */

/* A nursery's size is the room it hands out between minors: objects a
 * minor leaves pinned below its limit do not take that room, the limit
 * moves past them. A 100 us target starts at the 256 KiB floor; 160 KiB
 * of nodes allocated there stay pinned (a conservative root range), and
 * the minor sizes the nursery (at most twice: 512 KiB). Then 90% of that
 * size is allocated without a minor, and the pinned nodes are intact.
 * Without it, 512 KiB of which 160 pinned left 352 KiB, and a deep stack
 * holding young objects ran a minor at nearly every allocation
 * (stress_longjmp). */
#define ROOM_PINS 2560                  /* 160 KiB of 64-byte nodes */
static void *room_pins[ROOM_PINS];      /* a conservative root range */

static NOINLINE void alloc_garbage(size_t n)
{
    for (size_t i = 0; i < n; i++)
        tnode_new(i);
}

static void room_pins_intact(const char *when)
{
    for (uint64_t k = 0; k < ROOM_PINS; k++)
        CHECK(tnode_ok(room_pins[k], k), "pinned node %" PRIu64 " (at %p) was overwritten %s", k, room_pins[k],
              when);
}

static void test_room_beside_pins(void)
{
    const char *params = "nursery-size=4m,pause-target=100us,promotion-age=1";
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add(room_pins, sizeof room_pins) == 0, "lull_root_add");
    uint64_t pinned = ROOM_PINS * sizeof(struct tnode);
    for (uint64_t k = 0; k < ROOM_PINS; k++)
        room_pins[k] = tnode_new(k);
    clobber_stack();
    minor();
    lull_stats s = get_stats();
    uint64_t room = s.nursery_bytes;
    CHECK(room >= 256 << 10 && room <= 4 * pinned, "a %" PRIu64 " KiB nursery beside %" PRIu64 " KiB pinned: "
          "expected 256-640 KiB, so that the pinned nodes would take a quarter of it or more", room >> 10,
          pinned >> 10);
    size_t nodes = (size_t)(room * 9 / 10 / sizeof(struct tnode));
    alloc_garbage(nodes);
    uint64_t minors = get_stats().collections_minor - s.collections_minor;
    printf("nursery: %" PRIu64 " KiB pinned, a %" PRIu64 " KiB nursery, %zu KiB allocated beside them with %"
           PRIu64 " minors\n", pinned >> 10, room >> 10, nodes * sizeof(struct tnode) >> 10, minors);
    CHECK(minors == 0, "%" PRIu64 " minors in %zu KiB of a %" PRIu64 " KiB nursery: the %" PRIu64 " KiB pinned "
          "in it took its room", minors, nodes * sizeof(struct tnode) >> 10, room >> 10, pinned >> 10);
    room_pins_intact("while the room beside them was filled");
    minor();
    room_pins_intact("after the minor");
    memset(room_pins, 0, sizeof room_pins);
    lull_root_remove(room_pins);
    lull_shutdown();
}

/* ---- a nursery full of pinned objects ----------------------------------- */

/* A conservative root range holds more new objects than the nursery can:
 * the minor the full nursery asks for pins them all and frees nothing.
 * The allocations after it go to the major heap for nursery-size bytes
 * (degraded mode, nursery.h) instead of running, each, a minor that pins
 * them all again (a program whose range held 100,000 such objects never
 * finished: a 70 ms minor per allocation). Every node stays intact, also
 * after a major. */
#define FULL_PINS 17408                 /* 1.06 MiB of 64-byte nodes, in a 1 MiB nursery */
static void *full_pins[FULL_PINS];      /* a conservative root range */

static void test_pinned_full(void)
{
    const char *params = "nursery-size=1m,pause-target=10s,promotion-age=1";
    CHECK(lull_init(params) == 0, "lull_init(%s)", params);
    CHECK(lull_root_add(full_pins, sizeof full_pins) == 0, "lull_root_add");
    lull_stats a = get_stats();
    for (uint64_t k = 0; k < FULL_PINS; k++)
        full_pins[k] = tnode_new(k);
    uint64_t minors = get_stats().collections_minor - a.collections_minor;
    printf("nursery: %d nodes (%zu KiB) held by a root range in a 1 MiB nursery: %" PRIu64 " minors\n",
           FULL_PINS, FULL_PINS * sizeof(struct tnode) >> 10, minors);
    CHECK(minors <= 3, "%" PRIu64 " minors while a root range took %d nodes: the nursery full of pinned objects "
          "ran a minor at each allocation", minors, FULL_PINS);
    for (uint64_t k = 0; k < FULL_PINS; k++)
        CHECK(tnode_ok(full_pins[k], k), "node %" PRIu64 " (at %p) of a full nursery was overwritten", k,
              full_pins[k]);
    lull_collect(LULL_GEN_MAJOR);
    for (uint64_t k = 0; k < FULL_PINS; k++)
        CHECK(tnode_ok(full_pins[k], k), "node %" PRIu64 " (at %p) was overwritten after a major", k,
              full_pins[k]);
    memset(full_pins, 0, sizeof full_pins);
    lull_root_remove(full_pins);
    lull_shutdown();
}

/* promotion-age=2 or auto in LULL_GC_PARAMS would override the tests'
 * promotion-age=1: growth then waits for the next minor, by design. */
static bool aging_set(void)
{
    const char *p = getenv("LULL_GC_PARAMS");
    return p && strstr(p, "promotion-age=") && !strstr(p, "promotion-age=1");
}

int main(void)
{
    CHECK(lull_init(NULL) == 0, "lull_init");
    lull_stats a = get_stats();
    test_promotion();
    test_pinning();
    test_pinned_live();
    test_cards();
    test_cementing();
    test_threads();
    lull_stats b = get_stats();
    CHECK(b.collections_minor > a.collections_minor + 10, "minors not counted: %" PRIu64,
          b.collections_minor - a.collections_minor);
    CHECK(b.pauses_minor >= b.collections_minor && b.pauses_major >= b.collections_major,
          "pauses by kind: %" PRIu64 " minor, %" PRIu64 " major", b.pauses_minor, b.pauses_major);
    CHECK(b.pause_minor_max_ns > 0 && b.pause_minor_p50_ns <= b.pause_minor_p99_ns &&
          b.pause_minor_p99_ns <= b.pause_minor_max_ns, "minor pause percentiles out of order");
    lull_shutdown();
    if (aging_set()) {
        printf("nursery: growth checks skipped: LULL_GC_PARAMS sets aging, and growth then waits for a minor\n");
    } else {
        test_grow();
        test_grow_pinned();
        test_room_beside_pins();
        test_pinned_full();
    }
    printf("nursery: ok (%" PRIu64 " minors, %" PRIu64 " majors)\n", b.collections_minor, b.collections_major);
    return 0;
}
