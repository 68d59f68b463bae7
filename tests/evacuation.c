/*
 * evacuation — synchronous majors evacuate sparse size classes (issue 9).
 *
 * Four size classes are filled and fragmented: items (references), blobs
 * (pointer-free), objects with a trace function, and small arrays, 90% of
 * each dropped, scattered, so that every block keeps a tenth of its slots.
 * The survivors are referenced from heap objects (holder arrays, a ring of
 * items, each item's blob, the traced objects, the arrays' elements),
 * precise roots, NORMAL, WEAK and WEAK_TRACK handles; two items are
 * finalizable. Then synchronous majors (major=stw), in a thread whose stack
 * holds nothing else: the first marks the heap as the program left it (no
 * major has measured it yet), the second evacuates, two more let the
 * emptied blocks age out of the heap. Checked after each:
 *
 *   - objects referenced only precisely moved (their addresses changed),
 *     and lull_stats counts the objects evacuated;
 *   - every field and payload is intact and every reference names the
 *     copy: heap slots (also through a trace function), precise roots,
 *     NORMAL handles, WEAK handles (followed), the WEAK_TRACK handle of an
 *     object kept for its finalizer (followed to its copy, which the
 *     finalizer receives intact), the finalizer table (registering again at
 *     the new address replaces the old registration: the finalizer runs
 *     once, with the new data);
 *   - what must not move did not: an item held by a local variable of the
 *     collecting thread (and by a precise root too: conservative roots pin
 *     before anything is copied), one in a lull_root_add range, a PINNED
 *     handle's target, and lull_alloc_pinned items of the same class;
 *   - heap_bytes dropped by at least half of the bytes the four classes
 *     held before.
 *
 * With evacuation-threshold=0 in the params (argv[1]) nothing may move,
 * nothing is counted, and the heap keeps its blocks. `--scale K` makes the
 * population K times larger and prints the resident set and the majors'
 * pauses as well (doc/performance.md's figures).
 *
 * `evacuation --faults` runs this program again as a child (fresh stack)
 * with LULL_GC_DEBUG=plant-evac-fault=slot, which leaves the first heap
 * slot the evacuating mark should update at the old copy (=root: the first
 * root), plus the check that must catch it; the child must die of SIGABRT
 * with the check's line:
 *   slot, verify            "object ... the old place of an object this major moved ..."
 *   root, verify            "a precise root ... the old place of an object this major moved ..."
 *   slot, verify-parallel   "... left pointing at the old place of an object ..."
 */
#include "check.h"

#include <signal.h>
#include <sys/wait.h>

/* The population; --scale K multiplies it (a measurement, not a test). */
static size_t scale = 1;
#define N_ITEMS  (40000 * scale)
#define N_BLOBS  (40000 * scale)
#define N_TRACED (20000 * scale)
#define N_ARRAYS (10000 * scale)
#define ELEMS    6
#define KEEP     10        /* index i survives when i % KEEP == 0 */
#define PINNED_EVERY 1000  /* items allocated with lull_alloc_pinned */
#define NHANDLES 32

struct item {
    lull_header  h;
    struct item *next;       /* the next survivor: a ring */
    void        *peer;       /* the blob of the same index */
    uint64_t     id, sum;
};
static const lull_type item_type = {
    .name = "evac.item", .size = sizeof(struct item),
    .refs = LULL_REF(struct item, next) | LULL_REF(struct item, peer),
};

struct blob {
    lull_header h;
    uint64_t    id, pad[3], sum;
};
static const lull_type blob_type = { .name = "evac.blob", .size = sizeof(struct blob) };

struct traced {
    lull_header h;
    uint64_t    id;
    void       *ref;         /* the item of the same index, visited by traced_trace */
    uint64_t    sum;
};
static void traced_trace(void *obj, lull_visit_fn visit, void *ctx)
{
    visit(&((struct traced *)obj)->ref, ctx);
}
static const lull_type traced_type = {
    .name = "evac.traced", .size = sizeof(struct traced), .trace = traced_trace,
};

/* Precise roots (registered): the four holders, items held only here, and
 * the two finalizable items. Plain globals are no roots otherwise. */
enum { R_ITEMS, R_BLOBS, R_TRACED, R_ARRAYS, R_CONS, R_RANGE, R_F, R_D, R_PRECISE, NROOTS = R_PRECISE + 64 };
static void *volatile roots[NROOTS];
static void **range;                      /* a lull_root_add range (malloc'ed) */

/* Each held conservatively and precisely too: registered roots are
 * scanned in the order they were registered, NORMAL handles before PINNED
 * ones, yet none of these may move. */
#define CONS_IDX    (KEEP * 123)           /* held by a local variable and a precise root */
#define RANGE_IDX   (KEEP * 457)           /* held by the lull_root_add range and a precise root */
#define PINH_IDX    (KEEP * 789)           /* a PINNED handle's target and a NORMAL handle's */
static lull_handle normal_h[NHANDLES], weak_live[NHANDLES], weak_dead[NHANDLES], pinned_h, normal_pinh, weak_d,
    track_d;

static uintptr_t *before;                 /* addresses after the first major, by kind and index */
static bool expect_off;
static const char *fault_check;           /* a child planting a fault: the check that must catch it */

static uint64_t sum_of(uint64_t kind, uint64_t id)
{
    return mix64(kind * 0x1000000 + id);
}

static struct refs *holder(int r)
{
    return roots[r];
}

static void *item_at(size_t i) { return holder(R_ITEMS)->item[i]; }

static bool is_special(size_t i)
{
    return i % PINNED_EVERY == 0 || i == CONS_IDX || i == RANGE_IDX || i == PINH_IDX;
}

/* ---- building the heap ---- */

static NOINLINE struct item *new_item(uint64_t id, bool pinned)
{
    struct item *it = pinned ? lull_alloc_pinned(&item_type) : lull_alloc(&item_type);
    CHECK(it != NULL, "alloc item failed");
    it->id = id;
    it->sum = sum_of(1, id);
    return it;
}

static NOINLINE void build(void)
{
    roots[R_ITEMS] = lull_alloc_array(&refs_type, N_ITEMS);
    roots[R_BLOBS] = lull_alloc_array(&refs_type, N_BLOBS);
    roots[R_TRACED] = lull_alloc_array(&refs_type, N_TRACED);
    roots[R_ARRAYS] = lull_alloc_array(&refs_type, N_ARRAYS);
    for (int r = R_ITEMS; r <= R_ARRAYS; r++)
        CHECK(roots[r] != NULL, "alloc holder failed");
    for (size_t i = 0; i < N_ITEMS; i++) {
        struct refs *h = holder(R_ITEMS);
        lull_store(h, &h->item[i], new_item(i, i % PINNED_EVERY == 0));
        if (i == N_ITEMS / 2) {
            /* The two finalizable items, among the others (sparse blocks). */
            roots[R_F] = new_item(1u << 30, false);
            roots[R_D] = new_item(1u << 31, false);
        }
        struct blob *b = lull_alloc(&blob_type);
        CHECK(b != NULL, "alloc blob failed");
        b->id = i;
        b->sum = sum_of(2, i);
        h = holder(R_BLOBS);
        lull_store(h, &h->item[i], b);
        if (i < N_TRACED) {
            struct traced *t = lull_alloc(&traced_type);
            CHECK(t != NULL, "alloc traced failed");
            t->id = i;
            t->sum = sum_of(3, i);
            h = holder(R_TRACED);
            lull_store(h, &h->item[i], t);
        }
        if (i < N_ARRAYS) {
            struct refs *a = lull_alloc_array(&refs_type, ELEMS);
            CHECK(a != NULL, "alloc array failed");
            h = holder(R_ARRAYS);
            lull_store(h, &h->item[i], a);
        }
    }
}

/* Link the survivors to each other; drop every other object. */
static NOINLINE void link_and_drop(void)
{
    struct refs *items = holder(R_ITEMS), *blobs = holder(R_BLOBS), *traced = holder(R_TRACED),
                *arrays = holder(R_ARRAYS);
    for (size_t i = 0; i < N_ITEMS; i += KEEP) {
        struct item *it = items->item[i];
        LULL_SET(it, next, (struct item *)items->item[(i + KEEP) % N_ITEMS]);
        LULL_SET(it, peer, blobs->item[i]);
    }
    for (size_t i = 0; i < N_TRACED; i += KEEP) {
        struct traced *t = traced->item[i];
        lull_store(t, &t->ref, items->item[i]);
    }
    for (size_t i = 0; i < N_ARRAYS; i += KEEP) {
        struct refs *a = arrays->item[i];
        for (size_t k = 0; k < ELEMS; k++)
            lull_store(a, &a->item[k], items->item[(i + k * KEEP) % N_ITEMS]);
    }
    for (size_t i = 0; i < N_ITEMS; i++) {
        if (i % KEEP == 0)
            continue;
        if (i < NHANDLES * KEEP && i % KEEP == 1)
            weak_dead[i / KEEP] = lull_handle_new(items->item[i], LULL_HANDLE_WEAK);
        lull_store(items, &items->item[i], NULL);
        lull_store(blobs, &blobs->item[i], NULL);
        if (i < N_TRACED)
            lull_store(traced, &traced->item[i], NULL);
        if (i < N_ARRAYS)
            lull_store(arrays, &arrays->item[i], NULL);
    }
}

static void fin_count(void *obj, void *data);

/* The references from outside the heap. */
static NOINLINE void add_roots(void)
{
    for (size_t k = 0; k < NROOTS - R_PRECISE; k++)
        roots[R_PRECISE + k] = item_at(k * 7 * KEEP);
    roots[R_CONS] = item_at(CONS_IDX);
    roots[R_RANGE] = item_at(RANGE_IDX);
    range = malloc(2 * sizeof *range);
    CHECK(range != NULL, "malloc");
    range[0] = item_at(RANGE_IDX);
    range[1] = NULL;
    CHECK(lull_root_add(range, 2 * sizeof *range) == 0, "lull_root_add failed");
    for (size_t k = 0; k < NHANDLES; k++) {
        normal_h[k] = lull_handle_new(item_at(k * 11 * KEEP), LULL_HANDLE_NORMAL);
        weak_live[k] = lull_handle_new(item_at(k * 13 * KEEP), LULL_HANDLE_WEAK);
        CHECK(normal_h[k] && weak_live[k] && weak_dead[k], "lull_handle_new failed");
    }
    pinned_h = lull_handle_new(item_at(PINH_IDX), LULL_HANDLE_PINNED);
    normal_pinh = lull_handle_new(item_at(PINH_IDX), LULL_HANDLE_NORMAL);
    weak_d = lull_handle_new(roots[R_D], LULL_HANDLE_WEAK);
    track_d = lull_handle_new(roots[R_D], LULL_HANDLE_WEAK_TRACK);
    CHECK(pinned_h && normal_pinh && weak_d && track_d, "lull_handle_new failed");
    static int token_f = 1, token_d = 2;
    CHECK(lull_register_finalizer(roots[R_F], fin_count, &token_f) == 0, "register F");
    CHECK(lull_register_finalizer(roots[R_D], fin_count, &token_d) == 0, "register D");
}

/* ---- finalizers ---- */

static int fin_calls_f, fin_calls_d, fin_calls_f2;
static uintptr_t fin_obj_d;

static void fin_count(void *obj, void *data)
{
    const struct item *it = obj;
    int token = *(const int *)data;
    CHECK(it->id == (token == 2 ? 1u << 31 : 1u << 30) && it->sum == sum_of(1, it->id),
          "finalizer (token %d) got a corrupt object %p (id %#" PRIx64 ")", token, obj, it->id);
    if (token == 1)
        fin_calls_f++;
    else if (token == 2)
        fin_calls_d++, fin_obj_d = (uintptr_t)obj;
    else
        fin_calls_f2++;
}

/* ---- checking ---- */

static NOINLINE void check_item(const struct item *it, size_t i, const char *when)
{
    CHECK(it != NULL && it->id == i && it->sum == sum_of(1, i), "%s: item %zu corrupt (%p)", when, i,
          (const void *)it);
}

static NOINLINE void check_all(const char *when)
{
    struct refs *items = holder(R_ITEMS), *blobs = holder(R_BLOBS), *traced = holder(R_TRACED),
                *arrays = holder(R_ARRAYS);
    for (size_t i = 0; i < N_ITEMS; i++) {
        if (i % KEEP) {
            CHECK(!items->item[i] && !blobs->item[i], "%s: dropped slot %zu not NULL", when, i);
            continue;
        }
        const struct item *it = items->item[i];
        check_item(it, i, when);
        CHECK(it->next == items->item[(i + KEEP) % N_ITEMS], "%s: item %zu's next is not the copy the holder "
              "names (%p, holder %p)", when, i, (void *)it->next, items->item[(i + KEEP) % N_ITEMS]);
        CHECK(it->peer == blobs->item[i], "%s: item %zu's peer %p is not blob %p", when, i, it->peer,
              blobs->item[i]);
        const struct blob *b = blobs->item[i];
        CHECK(b->id == i && b->sum == sum_of(2, i), "%s: blob %zu corrupt", when, i);
        CHECK(lull_type_of(b) == &blob_type && lull_type_of(it) == &item_type, "%s: type of %zu lost", when, i);
        if (i < N_TRACED) {
            const struct traced *t = traced->item[i];
            CHECK(t && t->id == i && t->sum == sum_of(3, i), "%s: traced %zu corrupt", when, i);
            CHECK(t->ref == it, "%s: traced %zu's reference (through its trace function) is %p, not %p", when, i,
                  t->ref, (const void *)it);
        }
        if (i < N_ARRAYS) {
            struct refs *a = arrays->item[i];
            CHECK(a && lull_array_length(a) == ELEMS, "%s: array %zu corrupt", when, i);
            for (size_t k = 0; k < ELEMS; k++)
                CHECK(a->item[k] == items->item[(i + k * KEEP) % N_ITEMS], "%s: array %zu element %zu stale",
                      when, i, k);
        }
    }
    for (size_t k = 0; k < NROOTS - R_PRECISE; k++)
        CHECK(roots[R_PRECISE + k] == items->item[k * 7 * KEEP], "%s: precise root %zu is %p, the heap says %p",
              when, k, roots[R_PRECISE + k], items->item[k * 7 * KEEP]);
    CHECK(roots[R_CONS] == items->item[CONS_IDX], "%s: precise root of the pinned item differs", when);
    CHECK(range[0] == items->item[RANGE_IDX] && roots[R_RANGE] == range[0], "%s: the range's item differs", when);
    for (size_t k = 0; k < NHANDLES; k++) {
        CHECK(lull_handle_get(normal_h[k]) == items->item[k * 11 * KEEP], "%s: NORMAL handle %zu is %p, the heap "
              "says %p", when, k, lull_handle_get(normal_h[k]), items->item[k * 11 * KEEP]);
        CHECK(lull_handle_get(weak_live[k]) == items->item[k * 13 * KEEP], "%s: WEAK handle %zu is %p, the heap "
              "says %p", when, k, lull_handle_get(weak_live[k]), items->item[k * 13 * KEEP]);
        CHECK(lull_handle_get(weak_dead[k]) == NULL, "%s: WEAK handle to a dropped item not cleared", when);
    }
    CHECK(lull_handle_get(pinned_h) == items->item[PINH_IDX] && lull_handle_get(normal_pinh) == items->item[PINH_IDX],
          "%s: PINNED handle differs", when);
    if (roots[R_F])
        check_item(roots[R_F], 1u << 30, when);
}

/* Remember where everything is (after the first major: promoted, marked). */
static NOINLINE void record(void)
{
    for (size_t i = 0; i < N_ITEMS; i += KEEP) {
        before[i] = (uintptr_t)item_at(i);
        before[N_ITEMS + i] = (uintptr_t)holder(R_BLOBS)->item[i];
        if (i < N_TRACED)
            before[2 * N_ITEMS + i] = (uintptr_t)holder(R_TRACED)->item[i];
        if (i < N_ARRAYS)
            before[3 * N_ITEMS + i] = (uintptr_t)holder(R_ARRAYS)->item[i];
    }
    before[4 * N_ITEMS] = (uintptr_t)roots[R_D];
    before[4 * N_ITEMS + 1] = (uintptr_t)roots[R_F];
}

/* What moved, by kind; the objects that must stay did. */
static NOINLINE void check_moves(void)
{
    size_t moved[4] = { 0 }, total[4] = { 0 };
    for (size_t i = 0; i < N_ITEMS; i += KEEP) {
        uintptr_t now[4] = { (uintptr_t)item_at(i), (uintptr_t)holder(R_BLOBS)->item[i],
                             i < N_TRACED ? (uintptr_t)holder(R_TRACED)->item[i] : 0,
                             i < N_ARRAYS ? (uintptr_t)holder(R_ARRAYS)->item[i] : 0 };
        for (int k = 0; k < 4; k++) {
            if (!now[k] || (k == 0 && is_special(i)))
                continue;
            total[k]++;
            moved[k] += now[k] != before[(size_t)k * N_ITEMS + i];
        }
        if (is_special(i))
            CHECK(now[0] == before[i], "item %zu moved from %p to %p: it is %s", i, (void *)before[i],
                  (void *)now[0], i % PINNED_EVERY == 0 ? "a lull_alloc_pinned object"
                  : i == CONS_IDX ? "held by a local variable (a conservative root)"
                  : i == RANGE_IDX ? "held by a lull_root_add range" : "a PINNED handle's target");
    }
    printf("evacuation: moved %zu/%zu items, %zu/%zu blobs, %zu/%zu traced, %zu/%zu arrays\n", moved[0], total[0],
           moved[1], total[1], moved[2], total[2], moved[3], total[3]);
    for (int k = 0; k < 4; k++) {
        if (expect_off)
            CHECK(moved[k] == 0, "evacuation-threshold=0, yet %zu objects of kind %d moved", moved[k], k);
        else
            /* A stale word on a stack may pin a few. */
            CHECK(moved[k] * 100 >= total[k] * 95, "only %zu of %zu objects of kind %d moved", moved[k], total[k], k);
    }
}

static NOINLINE void drop_d(void) { roots[R_D] = NULL; }

static NOINLINE void check_d(void)
{
    lull_run_finalizers();
    CHECK(fin_calls_d == 1, "the dropped item's finalizer ran %d times", fin_calls_d);
    CHECK(fin_calls_f == 0, "the live item's finalizer ran");
    CHECK(lull_handle_get(weak_d) == NULL, "WEAK handle to the dropped item not cleared");
    void *track = lull_handle_get(track_d);
    CHECK(track != NULL && (uintptr_t)track == fin_obj_d, "WEAK_TRACK handle %p does not follow the item kept for "
          "its finalizer (%p)", track, (void *)fin_obj_d);
    if (!expect_off)
        CHECK(fin_obj_d != before[4 * N_ITEMS], "the item kept for its finalizer did not move");
}

/* Register F's finalizer again at F's address now, then drop F. */
static NOINLINE void reregister_and_drop_f(void)
{
    static int token_f2 = 3;
    if (!expect_off)
        CHECK((uintptr_t)roots[R_F] != before[4 * N_ITEMS + 1], "the finalizable item did not move");
    CHECK(lull_register_finalizer(roots[R_F], fin_count, &token_f2) == 0, "register F again");
    roots[R_F] = NULL;
}

static uint64_t last_major_ns;     /* the pause hook's */

static void on_pause(const lull_pause_event *ev, void *data)
{
    (void)data;
    if (ev->generation == LULL_GEN_MAJOR)
        last_major_ns = ev->duration_ns;
}

static NOINLINE void collect_major(void)
{
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
}

static size_t classes_bytes(void)
{
    /* The slots the four classes hold before evacuation: 48-byte items and
     * blobs, 32-byte traced objects, 64-byte arrays (size classes). */
    return (size_t)N_ITEMS * 48 + (size_t)N_BLOBS * 48 + (size_t)N_TRACED * 32 + (size_t)N_ARRAYS * 64;
}

static void scenario(void)
{
    build();
    lull_collect(LULL_GEN_NURSERY);   /* everything promoted: it dies in the major heap */
    link_and_drop();
    add_roots();
    /* A conservative root: this frame's variable (the item is in a
     * precise root too). */
    struct item *volatile cons = item_at(CONS_IDX);
    collect_major();
    uint64_t pause1 = last_major_ns;
    check_all("after the first major");
    record();
    lull_stats s1 = get_stats();
    size_t rss1 = rss_bytes();
    drop_d();

    collect_major();
    uint64_t pause2 = last_major_ns;
    if (fault_check)
        return;                       /* the check should have aborted */
    lull_stats s2 = get_stats();
    check_all("after the evacuating major");
    check_moves();
    CHECK((uintptr_t)cons == before[CONS_IDX] && cons == item_at(CONS_IDX), "the item on the stack moved");
    check_d();
    uint64_t objects = s2.objects_evacuated - s1.objects_evacuated, bytes = s2.bytes_evacuated - s1.bytes_evacuated;
    printf("evacuation: lull_stats: %" PRIu64 " objects, %" PRIu64 " bytes evacuated\n", objects, bytes);
    if (expect_off)
        CHECK(objects == 0 && bytes == 0, "evacuation-threshold=0, yet lull_stats counts %" PRIu64 " objects", objects);
    else
        CHECK(objects >= N_ITEMS / KEEP && bytes >= objects * 32, "lull_stats counts %" PRIu64 " objects (%" PRIu64
              " bytes) evacuated", objects, bytes);

    reregister_and_drop_f();
    collect_major();
    lull_run_finalizers();
    CHECK(fin_calls_f == 0 && fin_calls_f2 == 1, "the moved item's finalizer, registered again at its new address, "
          "ran %d times with the old data and %d with the new", fin_calls_f, fin_calls_f2);
    collect_major();
    check_all("two majors later");
    lull_stats s4 = get_stats();
    if (scale > 1)
        printf("evacuation: --scale %zu: RSS %zu MiB after the first major, %zu MiB at the end; major pauses "
               "%.1f ms (the first), %.1f ms (the evacuating one), %.1f ms (the last)\n", scale, rss1 >> 20,
               rss_bytes() >> 20, (double)pause1 / 1e6, (double)pause2 / 1e6, (double)last_major_ns / 1e6);
    /* The blocks in use: heap_bytes without the empty blocks the heap
     * keeps for reuse and for the next minor's promotion (their number
     * follows what minors promote, not what evacuation gave back). */
    uint64_t used1 = s1.heap_bytes - s1.heap_empty_bytes, used4 = s4.heap_bytes - s4.heap_empty_bytes;
    printf("evacuation: heap_bytes in use %zu KiB after the first major, %zu KiB two majors after the evacuating "
           "one (the classes held %zu KiB)\n", (size_t)(used1 >> 10), (size_t)(used4 >> 10), classes_bytes() >> 10);
    if (expect_off)
        CHECK(used4 + classes_bytes() / 4 > used1, "evacuation-threshold=0, yet the heap in use shrank "
              "from %" PRIu64 " to %" PRIu64, used1, used4);
    else
        CHECK(used4 + classes_bytes() / 2 <= used1, "the heap in use went from %" PRIu64 " only to %" PRIu64
              ": the evacuated blocks were not given back", used1, used4);
    CHECK((uintptr_t)cons == before[CONS_IDX], "the item on the stack moved later");
}

/* ---- the planted faults ---- */

/* The child must abort, its stderr holding `expect` and then `expect2`. */
static void run_fault(const char *self, const char *where, const char *check, const char *expect, const char *expect2)
{
    int fds[2];
    CHECK(pipe(fds) == 0, "pipe");
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        execl(self, self, "--child", where, check, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[8192];
    size_t len = 0;
    ssize_t r;
    while (len + 1 < sizeof buf && (r = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fds[0]);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "plant-evac-fault=%s with %s: the child did not abort "
          "(status %#x); its stderr:\n%s", where, check, st, buf);
    const char *at = strstr(buf, expect);
    CHECK(at && strstr(at, expect2), "plant-evac-fault=%s with %s: expected '%s ... %s' on stderr, got:\n%s", where,
          check, expect, expect2, buf);
    printf("evacuation: plant-evac-fault=%s caught by %s\n", where, check);
}

int main(int argc, char **argv)
{
    char params[256] = "major=stw,finalizers=manual";
    if (argc == 4 && !strcmp(argv[1], "--child")) {
        /* A planted fault: the check named must abort the second major. */
        fault_check = argv[3];
        char dbg[64];
        snprintf(dbg, sizeof dbg, "plant-evac-fault=%s,%s", argv[2], fault_check);
        CHECK(setenv("LULL_GC_DEBUG", dbg, 1) == 0, "setenv");
        strcat(params, ",mark-workers=2");
    } else if (argc == 2 && !strcmp(argv[1], "--faults")) {
        const char *moved = ", the old place of an object this major moved to ";
        run_fault(argv[0], "slot", "verify", "lull: verify: object ", moved);
        run_fault(argv[0], "root", "verify", "lull: verify: a precise root (registered, a NORMAL handle, or a "
                  "queued finalizer) points to ", moved);
        run_fault(argv[0], "slot", "verify-parallel", "lull: verify-parallel: a reference to ",
                  " was left pointing at the old place of an object the parallel mark moved to ");
        return 0;
    } else {
        for (int i = 1; i < argc; i++)
            if (!strcmp(argv[i], "--scale") && i + 1 < argc)
                scale = strtoul(argv[++i], NULL, 10);
            else
                snprintf(params + strlen(params), sizeof params - strlen(params), ",%s", argv[i]);
        CHECK(scale >= 1 && scale <= 100, "--scale wants 1 to 100");
    }
    expect_off = strstr(params, "evacuation-threshold=0") != NULL;
    CHECK(lull_init(params) == 0, "lull_init(%s) failed", params);
    CHECK(lull_root_add_refs((void **)roots, NROOTS) == 0, "lull_root_add_refs failed");
    lull_set_pause_hook(on_pause, NULL);
    before = calloc(4 * N_ITEMS + 2, sizeof *before);
    CHECK(before != NULL, "calloc");
    run_in_fresh_thread(scenario);
    if (fault_check) {
        fprintf(stderr, "evacuation: %s did not catch the planted fault\n", fault_check);
        return 1;
    }
    lull_root_remove(range);
    lull_root_remove((void *)roots);
    lull_shutdown();
    printf("evacuation: ok (%s)\n", params);
    return 0;
}
