/*
 * lull — a concurrent, low-pause garbage collector for C.
 *
 * This header is the whole public API. Its contract (names, signatures,
 * meanings) is fixed by API.md; see README.md for options and tuning.
 *
 *   #include <lull.h>     link with -llull   (pkg-config lull; CMake lull::lull)
 *
 * All sizes are bytes. Functions that can fail for reasons outside the
 * caller's control return 0 or a negative errno value, or NULL with errno set.
 * Misuse that would corrupt the heap is reported with one line on stderr
 * naming the function, followed by abort().
 */
#ifndef LULL_H
#define LULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Lifecycle and threads                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Start the collector. `params` is NULL, "" or a comma-separated list of
 * key=value options (README.md lists them); LULL_GC_PARAMS from the
 * environment is applied on top. Returns 0, -EINVAL for an unknown key or a
 * bad value (one line on stderr names it; nothing is left initialised),
 * -EBUSY if lull is already initialised, or -ENOMEM if the heap's address
 * range cannot be reserved. The calling thread is attached.
 */
int  lull_init(const char *params);

/* Stop the collector's threads and release the heap. Only the calling thread
 * may still be attached; every object becomes invalid. lull_init may be
 * called again afterwards. */
void lull_shutdown(void);

/* Register the calling thread with the collector: its stack and registers
 * become roots. Returns 0 (also if already attached), -EPERM before
 * lull_init, -ENOMEM. A thread that exits attached is detached for it. */
int  lull_thread_attach(void);

/* Unregister the calling thread. Its stack stops being a root. No-op for a
 * thread that is not attached. */
void lull_thread_detach(void);

/* ------------------------------------------------------------------------ */
/* Describing objects                                                       */
/* ------------------------------------------------------------------------ */

/* Word 0 of every object; owned by the collector. */
typedef struct lull_header { uintptr_t word_; } lull_header;
/* The first two words of every array object; `length` is set by the
 * collector at allocation. */
typedef struct lull_array_header { lull_header header; size_t length; } lull_array_header;

/* Called by a type's trace function for every reference slot. */
typedef void (*lull_visit_fn)(void **slot, void *ctx);

typedef struct lull_type {
    const char *name;        /* shown in statistics, heap-shots and trace probes */
    size_t      size;        /* bytes of the fixed part, headers included */
    uint64_t    refs;        /* bit i set: word i of the fixed part holds a reference */
    size_t      elem_size;   /* 0: not an array; else bytes per element */
    uint64_t    elem_refs;   /* bit i set: word i of every element holds a reference */
    void (*trace)(void *obj, lull_visit_fn visit, void *ctx); /* optional; replaces refs/elem_refs */
} lull_type;

/* The `refs` bit of a reference field of struct T. */
#define LULL_REF(T, field) ((uint64_t)1 << (offsetof(T, field) / sizeof(void *)))

/* ------------------------------------------------------------------------ */
/* Allocating                                                               */
/* ------------------------------------------------------------------------ */

/*
 * Allocate one object of `type` (zeroed, header filled in). Returns NULL with
 * errno = ENOMEM when the heap cannot satisfy the request even after a full
 * collection; the heap stays consistent and every live object intact.
 * The calling thread must be attached.
 *
 * The object a thread allocated last (in its TLAB, and the last one outside
 * it: 2-8 KiB, large or pinned) stays alive and in place while that thread
 * is stopped outside lull, even if no register or stack word points into
 * it: an optimising compiler may fill a new object through an address it
 * rebased (base - k, indexed by k + i), and a thread stopped in such a loop
 * must not find its object freed. So a dropped object may outlive one more
 * collection if it was its thread's last allocation; a thread that calls
 * lull_collect itself is inside lull, and its last allocations are then no
 * roots.
 */
void  *lull_alloc(const lull_type *type);

/* Allocate an array: type->size + length * type->elem_size bytes, `length`
 * stored in the array header. An impossible size returns NULL, errno ENOMEM. */
void  *lull_alloc_array(const lull_type *type, size_t length);

/* Like lull_alloc, but the object never moves. */
void  *lull_alloc_pinned(const lull_type *type);

/* Keep `p` where the collector sees it, at this point. Stacks and registers
 * are scanned conservatively, and an optimising compiler may walk an
 * object's fields through an address it rebased: for a loop comparing
 * o->payload[i] with a function of (o->id, i), gcc -O2 and -O3 address
 * the payload as (o - 248 * id) + 8 * (31 * id + 1 + i), and nothing in the
 * registers points into the object. A thread stopped inside such a loop
 * then holds no reference the collector can see: if nothing else refers
 * to the object it is freed (except the thread's last allocation: see
 * lull_alloc), and a minor may move it while the loop goes on reading or
 * writing its old place. lull_keep(o) in the loop's body makes the
 * compiler hold `o` itself in a register at every iteration. It emits no
 * instruction. Loops that index an object by a plain counter (o->a[i])
 * keep an address inside it and need none. */
#define lull_keep(p) __asm__ __volatile__("" : : "r"(p))

/* The length stored in an array object's header. `array` must be the
 * start of an array object: NULL, a non-heap address or an interior
 * pointer aborts with a message naming the function. */
size_t lull_array_length(const void *array);

/* Internal: the inline allocation fast path. Not part of the API.
 *
 * Each attached thread bump-allocates small objects from its thread-local
 * allocation buffer (TLAB) in the nursery: [next, end) is zeroed memory
 * only this thread uses. The header is written first and `next` advanced
 * last, so a thread stopped in between has allocated nothing yet (the
 * collector keeps the buffer's unused tail for the thread). `type_ok` is
 * the last type this thread's slow path validated (LULL__NO_TYPE, which
 * matches no pointer a caller passes, NULL included, when there is none):
 * other types, full buffers, detached threads (next = end = NULL) and
 * objects over LULL__TLAB_MAX_OBJECT take the out-of-line path, which
 * checks them. */
typedef struct lull__tlab {
    char       *next;
    char       *end;
    const void *type_ok;    /* validated for lull_alloc */
    const void *array_ok;   /* validated for lull_alloc_array */
    uint32_t    cards_left; /* cards this thread may still mark in the minors'
                               table before lull__cards_slow (a minor sets it) */
    uint32_t    mark_stores_left; /* stores this thread may still make while a
                               concurrent mark runs before lull__mark_stores_slow */
} lull__tlab_t;
/* The layout is compiled into every caller: the symbol names it (see
 * lull__barrier below). */
#define lull__tlab lull__tlab_cards_mark
extern __thread lull__tlab_t lull__tlab __attribute__((tls_model("initial-exec")));
#define LULL__TLAB_MAX_OBJECT 2048u
#define LULL__NO_TYPE ((const void *)1)
void *lull__alloc_slow(const lull_type *type, size_t length, int array);

static inline void *lull__alloc_inline(const lull_type *type, size_t length, int array)
{
    lull__tlab_t *tl = &lull__tlab;
    if (__builtin_expect(type == (array ? tl->array_ok : tl->type_ok), 1)) {
        /* `type` is a checked type, its size and elem_size at most
         * LULL__TLAB_MAX_OBJECT: nothing below overflows. */
        size_t bytes = type->size;
        if (array)
            bytes = length < LULL__TLAB_MAX_OBJECT ? bytes + length * type->elem_size : (size_t)-1;
        size_t sz = (bytes + 15) & ~(size_t)15;
        char *p = tl->next;
        if (__builtin_expect(bytes <= LULL__TLAB_MAX_OBJECT && sz <= (size_t)(tl->end - p), 1)) {
            if (array)
                ((size_t *)p)[1] = length;
            *(const lull_type **)p = type;
            __asm__ __volatile__("" : : : "memory");
            tl->next = p + sz;
            return p;
        }
    }
    return lull__alloc_slow(type, length, array);
}

/* lull_alloc and lull_alloc_array are also real functions (their address
 * can be taken); calls go through the inline fast path. */
#define lull_alloc(type) lull__alloc_inline((type), 0, 0)
#define lull_alloc_array(type, length) lull__alloc_inline((type), (length), 1)

/* The type an object was allocated with. `obj` must be the start of an
 * object (NULL, a non-heap address or an interior pointer aborts; an
 * interior pointer into a young object is recognised by its first word not
 * being a type, so types must not themselves live in the lull heap). */
const lull_type *lull_type_of(const void *obj);

/* ------------------------------------------------------------------------ */
/* Storing references: the write barrier                                    */
/* ------------------------------------------------------------------------ */

/* Internal: what the inline barrier needs. Not part of the API. */
struct lull__barrier_state {
    uintptr_t heap_start;   /* first address of the heap's range */
    uintptr_t heap_size;    /* bytes in the range; 0 before lull_init */
    uint8_t  *cards;        /* the minors' cards: one byte per 128-byte card of the range */
    uint8_t  *mark_cards;   /* the concurrent mark's cards (the union table), same layout */
    uintptr_t young_start, young_size;  /* the nursery's range (every address with card-filter=no) */
    uintptr_t large_start, large_end;   /* a range holding every young large object (empty: none) */
    uintptr_t marking;      /* non-zero while a concurrent mark runs */
};
/* The card size and this layout are compiled into every caller of
 * lull_store, so the state's symbol names them: a program built against a
 * lull.h of another card size or layout (lull__barrier: 512-byte cards;
 * lull__barrier_card128: one card table) fails to load, with an undefined
 * symbol, instead of marking the wrong cards. */
#define lull__barrier lull__barrier_card128_mark
extern struct lull__barrier_state lull__barrier;
#define LULL__CARD_SHIFT 7
#define LULL__MARK_STORE_BATCH 1024u
void lull__store_outside_heap(void *obj, void *slot, void *value);
void lull__cards_slow(void);
void lull__mark_stores_slow(void *obj, void *slot, void *value);   /* lull_store's arguments: no moves */

/* The minors' half of lull_store (and of lull__mark_stores_slow), after
 * the store and the mark's card: the card of a young reference, counted.
 * off: the slot's offset in the heap's range. */
static inline void lull__store_young(void *slot, void *value, uintptr_t off)
{
    uintptr_t v = (uintptr_t)value;
    uintptr_t ls = __atomic_load_n(&lull__barrier.large_start, __ATOMIC_RELAXED);
    if (v - lull__barrier.young_start < lull__barrier.young_size ||
        v - ls < __atomic_load_n(&lull__barrier.large_end, __ATOMIC_RELAXED) - ls) {
        uint8_t *card = lull__barrier.cards + (off >> LULL__CARD_SHIFT);
        if (!__atomic_load_n(card, __ATOMIC_RELAXED)) {
            __atomic_store_n(card, (uint8_t)1, __ATOMIC_RELAXED);
            __asm__ __volatile__("" : : "r"(value));
            /* Count the card if a minor scans it: not one of the nursery
             * or of a young large object. Last: the store is in the heap
             * and on a marked card, where the minor this may run finds it. */
            uintptr_t s = (uintptr_t)slot;
            if (s - lull__barrier.young_start >= lull__barrier.young_size &&
                s - ls >= __atomic_load_n(&lull__barrier.large_end, __ATOMIC_RELAXED) - ls &&
                __builtin_expect(--lull__tlab.cards_left == 0, 0))
                lull__cards_slow();
            return;
        }
    }
    __asm__ __volatile__("" : : "r"(value));
}

/*
 * Store `value` (a reference or NULL) into `slot`, which lies inside heap
 * object `obj`, and record the store for the collector. Release ordering: a
 * thread that loads the slot with acquire ordering sees the target's
 * initialised contents.
 *
 * The store is recorded (its 128-byte card marked) where the collector
 * needs it: in the minors' cards when `value` is young (in the nursery, or
 * a young large object: the minors' remembered set), and in the mark's
 * cards while a concurrent mark runs (it rescans what was stored behind
 * it). An old-to-old store marks nothing outside a mark, and never a card
 * the next minor scans.
 *
 * A young reference marks its card only if the card is clean, and counts
 * a card of the old generation against the cards this thread may mark
 * before the next minor (its share of what a minor can scan within the
 * pause target, policy.c; none with card-filter=no).
 * When the share is used up, lull_store runs a minor collection, as an
 * allocation would when the nursery is full (lull_stats.minors_for_cards):
 * a loop that links young objects from all over the old heap without
 * allocating would otherwise leave the next minor a pause of its own. It
 * does not while this thread is inside lull (a signal handler that
 * interrupted an allocation or a collection): its next new card asks
 * again.
 *
 * While a concurrent mark runs, every LULL__MARK_STORE_BATCH-th store of a
 * thread also calls lull__mark_stores_slow once the mark's card is marked:
 * the mark may be done and its final pause due (a program that only stores
 * has no other point where it could run), or the program may be dirtying
 * cards faster than the mark rescans them, and then it waits there, a
 * bounded time, for the mark to catch up. It records the store in the
 * minors' cards first, as lull_store would have, and runs no minor.
 *
 * Order matters: the cards are marked after the store, and `value` is kept
 * in a register until they are, so a thread stopped between the two still
 * holds `value` where the conservative scan sees it. The state is read
 * after the store (a compiler fence; threads are stopped by signals, at
 * instruction boundaries): a thread stopped between the two by the pause
 * that starts a mark stored before the mark began, which the mark then
 * sees in the heap.
 */
static inline void lull_store(void *obj, void *slot, void *value)
{
    uintptr_t off = (uintptr_t)slot - lull__barrier.heap_start;
    (void)obj;
    if (__builtin_expect(off >= lull__barrier.heap_size, 0)) {
        lull__store_outside_heap(obj, slot, value);
        return;
    }
    __atomic_store_n((void **)slot, value, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&lull__barrier.marking, __ATOMIC_RELAXED) != 0, 0)) {
        __atomic_store_n(lull__barrier.mark_cards + (off >> LULL__CARD_SHIFT), (uint8_t)1, __ATOMIC_RELAXED);
        if (__builtin_expect(--lull__tlab.mark_stores_left == 0, 0)) {
            lull__mark_stores_slow(obj, slot, value);   /* the minors' half there, then its own */
            return;
        }
    }
    lull__store_young(slot, value, off);
}

#define LULL_SET(obj, field, value) lull_store((obj), (void *)&(obj)->field, (value))

/* ------------------------------------------------------------------------ */
/* Roots                                                                    */
/* ------------------------------------------------------------------------ */

/* Register [start, start+size) as a conservative root range: every aligned
 * word that points into an object (interior pointers included) keeps it
 * alive and in place. Returns 0, -EINVAL (NULL start, zero size), -EEXIST
 * (start already registered), -ENOMEM, -EPERM before lull_init. */
int  lull_root_add(void *start, size_t size);

/* Register `count` words at `refs` as precise roots: each is a reference or
 * NULL. The collector may move their targets and update the words. */
int  lull_root_add_refs(void **refs, size_t count);

/* Unregister the root that starts at `start`. No-op if none does. */
void lull_root_remove(void *start);

/* ------------------------------------------------------------------------ */
/* GC handles, weak references and finalizers                               */
/* ------------------------------------------------------------------------ */

/*
 * A handle names a slot in one of the collector's handle tables (one per
 * kind). Handles are safe to use from any attached thread at any time,
 * without locks: a slot is claimed, set and cleared with compare-and-swap,
 * and the tables grow by installing buckets of doubling size with
 * compare-and-swap, so existing slots never move.
 *
 *   WEAK        does not keep its target alive; cleared (reads NULL) when
 *               the target becomes unreachable, before the target's
 *               finalizer runs.
 *   WEAK_TRACK  does not keep its target alive; cleared only when the
 *               target is reclaimed: it follows an object kept for its
 *               finalizer until that object is unreachable again.
 *   NORMAL      keeps its target alive; the target may move (the handle
 *               follows it).
 *   PINNED      keeps its target alive and at its address.
 *
 * The tables are not scanned conservatively: a weak handle's slot never
 * keeps anything alive. Each kind holds at most LULL_HANDLE_MAX - 1 handles.
 */
typedef uint32_t lull_handle;          /* 0 is never a valid handle */
enum lull_handle_kind {
    LULL_HANDLE_WEAK,        /* cleared when the target dies, before its finalizer runs */
    LULL_HANDLE_WEAK_TRACK,  /* cleared only when the target can no longer be resurrected */
    LULL_HANDLE_NORMAL,      /* keeps the target alive; the target may move */
    LULL_HANDLE_PINNED,      /* keeps the target alive and in place */
};
#define LULL_HANDLE_MAX ((uint32_t)1 << 25)   /* handles per kind, bound (addition to API.md) */

/* A new handle of `kind` on `obj` (the start of a heap object, or NULL).
 * Returns 0 with errno = ENOMEM when the kind's table is full or cannot
 * grow. An unknown kind, or an `obj` that is not a heap object, is misuse
 * (abort). */
lull_handle lull_handle_new(void *obj, enum lull_handle_kind kind);

/* The handle's target: NULL if it was set to NULL, or, for a weak handle,
 * once its target died. A weak handle never yields an object the
 * collector has found dead, also while a concurrent mark runs: the object
 * read then is kept by that mark for as long as the program holds it. */
void       *lull_handle_get(lull_handle h);

/* Point the handle at `obj` (a heap object or NULL). */
void        lull_handle_set(lull_handle h, void *obj);

/* Release the handle; its value may be handed out again. Using a freed
 * handle, or a value lull_handle_new never returned, is misuse: detected
 * (one line naming the function, then abort) unless the slot has since
 * been reused 32 times over. */
void        lull_handle_free(lull_handle h);

/*
 * Finalizers. `fn(obj, data)` runs once, after `obj` became unreachable:
 * at the collection that finds it so (a minor for a young object, a
 * major for an old one), the object and everything it references are kept
 * for one more cycle, and the call is queued. It runs on the collector's
 * finalizer thread ("lull-finalizer", started when the first finalizer is
 * queued; attached while it runs finalizers, which are program code, so
 * pauses stop it then like any thread; detached while it waits on a
 * semaphore for work, so no pause ever signals it then; joined by
 * lull_shutdown), or, with finalizers=manual in LULL_GC_PARAMS, only
 * inside lull_run_finalizers().
 * During the call `obj` and what it references are intact; afterwards the
 * object is reclaimed unless the finalizer stored it somewhere reachable
 * (it is then an ordinary object again, with no finalizer: register one
 * again to have it run again).
 *
 * Order: unordered (as in .NET and SGen). Objects found unreachable in
 * the same collection are finalized in no particular order, so in a
 * cycle of finalizable objects every member is finalized, and each
 * finalizer may see the others already finalized (but never freed: they
 * are reclaimed only at a later collection that finds them unreachable
 * again, after every finalizer of the cycle ran). A finalizer runs at
 * most once per registration. A finalizer that stores its object (or a
 * cycle member) somewhere reachable resurrects it as an ordinary object.
 *
 * Registering again replaces the previous finalizer; fn = NULL removes it.
 * Returns 0, -EINVAL if `obj` is not the start of a heap object, -ENOMEM,
 * -EPERM before lull_init.
 *
 * lull_shutdown: with finalizers=auto, the finalizers already queued run
 * first (on the finalizer thread, which is then joined); objects still
 * reachable, or not yet found unreachable, are never finalized (no
 * collection runs at shutdown). With finalizers=manual, what
 * lull_run_finalizers was not called for is dropped: it never runs.
 */
typedef void (*lull_finalizer_fn)(void *obj, void *data);
int  lull_register_finalizer(void *obj, lull_finalizer_fn fn, void *data);

/* Run the queued finalizers on the calling thread (attached), including
 * any that the collections they cause queue meanwhile; returns when the
 * queue is empty. Useful with finalizers=manual (at a frame boundary);
 * with finalizers=auto it runs them here instead of waiting for the
 * finalizer thread. */
void lull_run_finalizers(void);

/* ------------------------------------------------------------------------ */
/* Collecting and latency                                                   */
/* ------------------------------------------------------------------------ */

enum { LULL_GEN_NURSERY = 0, LULL_GEN_MAJOR = 1 };

/* Collect `generation`: LULL_GEN_NURSERY runs a nursery collection,
 * LULL_GEN_MAJOR returns after a complete major collection. */
void lull_collect(int generation);

/* Ask the collector not to run stop-the-world majors (true: allow them
 * again). Returns true when the request is honoured (concurrent majors are
 * available), false otherwise. */
bool lull_set_allow_synchronous_major(bool allow);

/* The pause minor collections aim at (LULL_GC_PARAMS pause-target; 5 ms
 * unless set). After every minor the collector sizes the nursery from what
 * it measured (the fixed cost of stopping and scanning roots, the cost per
 * nursery byte of copying survivors and scanning dirty cards), between
 * 256 KiB and nursery-size, so that the next minor is predicted to take
 * `ns`; until a minor has measured them, a nursery byte is taken to cost
 * 1.4 ns, so the first nursery is at most target / 1.4 ns. A call that
 * changes the size does so at once (growing at most twofold): a smaller
 * nursery from the next TLAB handed out, a larger one too with
 * promotion-age=1 (with aging, from the next minor). Returns 0, or
 * -EINVAL for a value outside [LULL_PAUSE_TARGET_MIN_NS,
 * LULL_PAUSE_TARGET_MAX_NS]: below 100 us, stopping the threads alone takes
 * longer; above 10 s, nothing is aimed at. Misuse before lull_init (abort). */
#define LULL_PAUSE_TARGET_MIN_NS ((uint64_t)100000)
#define LULL_PAUSE_TARGET_MAX_NS ((uint64_t)10000000000)
int lull_set_pause_target(uint64_t ns);

/* Idle time (addition to API.md): the program has about `ns` nanoseconds
 * with nothing to do now; a game calls it at the end of each frame's work
 * with the time left before the frame's deadline, a server between
 * requests. Objects a unit of work used and dropped are dead at that
 * point, so a minor then promotes only what lives on, where a minor in
 * the middle of the work would promote the unit's temporaries too. lull
 * runs a minor now when the nursery would fill before the next call (at
 * the allocation measured between calls) and the minor is predicted to
 * fit `ns` (the average pause of the minors run there, or the pause-target
 * model before one has run); else it does nothing and the minor comes when
 * the nursery fills, as without the call. The first call only starts that
 * measurement. While the program calls it at least every third minor and
 * the minors run there fit the idle time it gives, the nursery holds at
 * least 1.25 times the allocation between calls and the write barrier's
 * card budget counts with the idle time, even where the pause target alone
 * would set them smaller: a minor in the middle of a unit of work that
 * allocates more than usual may then exceed the target. The majors'
 * pauses come here too, before the minor rule (which then counts with
 * what is left of `ns`): while the program makes the calls, a concurrent
 * mark whose background work is done waits for the next call for its
 * final pause (unless the allowance runs out first, or the final pauses
 * do not fit the idle time given on average), and the call runs it when
 * the last final pauses fit `ns`; and a synchronous major that evacuates a
 * fragmented heap is not chosen in the middle of the work (the majors stay
 * concurrent) but runs in a call whose `ns` fits its predicted pause. An
 * explicit lull_collect and an allocation that fails still evacuate at
 * once. Returns 1 if it collected (a minor or a major's pause; counted in
 * lull_stats.minors_idle and majors_idle), 0 if not, -EINVAL for
 * ns == 0. Each call takes the gc lock (about 0.04 us alone; 0.5-1.4 us
 * with 2-4 threads calling it back to back on 2 cores): call it between
 * units of work, not inside them. It may wait for the gc lock like any
 * allocation slow path, and may run on any thread (its pauses count as
 * usual). Misuse before
 * lull_init (abort). */
int lull_idle(uint64_t ns);

/* The heap goal (LULL_GC_PARAMS heap-growth; 100 unless set): after each
 * major the heap may grow to live x (1 + percent / 100) (live: what that
 * major found, at least 4 MiB) before the next major is due; concurrent
 * majors are started early enough to end there. Takes effect at once: the
 * goal in force is recomputed from the last major's live size. Returns 0,
 * or -EINVAL for a percent outside [LULL_HEAP_GROWTH_MIN,
 * LULL_HEAP_GROWTH_MAX]. Any thread; takes the gc lock; never collects.
 * Misuse before lull_init (abort). */
#define LULL_HEAP_GROWTH_MIN 1u
#define LULL_HEAP_GROWTH_MAX 10000u
int lull_set_heap_growth(unsigned percent);

/* A soft limit on the memory the heap holds (LULL_GC_PARAMS memory-limit;
 * none unless set; 0 removes it). When the heap goal would pass it, the
 * goal is the limit: majors come sooner, and free memory goes back to the
 * OS sooner near it. It never fails an allocation: max-heap-size is the
 * hard limit. A live heap larger than the limit makes majors back to back
 * (every major's goal is then its live size plus a minimum allowance).
 * Returns 0, or -EINVAL for a nonzero limit under LULL_MEMORY_LIMIT_MIN.
 * Any thread; takes the gc lock; never collects. Misuse before lull_init
 * (abort). */
#define LULL_MEMORY_LIMIT_MIN ((size_t)4 << 20)
int lull_set_memory_limit(size_t bytes);

/* Return every byte of free heap memory to the OS now (a trim a server
 * calls after a burst): the empty blocks kept for reuse (the promotion
 * reserve among them, which the background job refills later) and every
 * free run, however recently freed. Otherwise free memory stays resident
 * for reuse and goes back only release-delay after it became free
 * (LULL_GC_PARAMS release-delay=TIME, default 1s; sooner near the soft
 * memory limit), from lull's background memory thread, never in a pause or
 * on a program thread. Returns 0 once the memory is back (counted in
 * lull_stats.bytes_released), or -EPERM before lull_init. Any thread,
 * attached or not; never collects; takes the gc lock briefly (it may wait
 * for a running pause) and not across the madvise calls. */
int lull_release_memory(void);

/* ------------------------------------------------------------------------ */
/* Statistics                                                               */
/* ------------------------------------------------------------------------ */

typedef struct lull_stats {
    uint64_t collections_minor;
    uint64_t collections_major;       /* all majors, concurrent and synchronous */
    uint64_t collections_major_sync;  /* majors that marked with the world stopped */
    uint64_t pauses;                  /* stop-the-world pauses of any kind */
    uint64_t pause_total_ns;
    uint64_t pause_max_ns;
    uint64_t pause_p50_ns, pause_p95_ns, pause_p99_ns;
    uint64_t bytes_allocated;         /* since lull_init */
    uint64_t heap_bytes;              /* memory the heap holds now */
    uint64_t live_bytes_after_major;  /* live bytes found by the last major */
    /* The pauses above, split by kind (additions to API.md). */
    uint64_t pauses_minor;            /* pauses of minor (nursery) collections */
    uint64_t pause_minor_max_ns, pause_minor_p50_ns, pause_minor_p99_ns;
    uint64_t pauses_major;            /* pauses of major collections */
    uint64_t pause_major_max_ns, pause_major_p50_ns, pause_major_p99_ns;
    /* The pause target (additions to API.md): minors whose pause exceeded
     * it, the target now, and the nursery's size now: the room it hands
     * out between minors (objects the last minor left pinned in it take
     * none of it: its limit moves past them, up to nursery-size). */
    uint64_t minors_over_target;
    uint64_t pause_target_ns;
    uint64_t nursery_bytes;
    /* Finalizers (additions to API.md): calls queued because their object
     * was found unreachable, and calls that have run (queued - run are
     * pending). */
    uint64_t finalizers_queued;
    uint64_t finalizers_run;
    /* Evacuation (additions to API.md): objects synchronous majors have
     * moved out of sparsely occupied size classes since lull_init, and the
     * bytes of their slots (evacuation-threshold, README). */
    uint64_t objects_evacuated;
    uint64_t bytes_evacuated;
    /* Of heap_bytes (addition to API.md): empty blocks the heap keeps for
     * reuse, among them those prepared for the next minor's promotion. */
    uint64_t heap_empty_bytes;
    /* Minors that a thread's write barrier asked for (addition to API.md):
     * it had marked its share of the cards the next minor may scan within
     * the pause target, in stores of young references into old objects
     * made without allocating (README, "when to collect"). */
    uint64_t minors_for_cards;
    /* Survival (addition to API.md): bytes of nursery objects that minors
     * copied into the major heap since lull_init. Over bytes_allocated it
     * is the share of allocation that outlived its nursery; objects pinned
     * in the nursery and large objects (never in it) are not counted. */
    uint64_t bytes_promoted;
    /* Minors lull_idle ran (addition to API.md); among collections_minor. */
    uint64_t minors_idle;
    /* Majors' pauses lull_idle ran (addition to API.md): final pauses of
     * concurrent marks, and evacuating synchronous majors (README, "idle
     * time"). Among pauses_major. */
    uint64_t majors_idle;
    /* Aging (addition to API.md): bytes of nursery objects that minors
     * copied within the nursery, to age there once before promotion
     * (promotion-age=2 or auto; README, "aging in the nursery"). A survivor that ages and
     * then survives again is counted here and in bytes_promoted. */
    uint64_t bytes_aged;
    /* The heap goal (lull_set_heap_growth): live at the last major plus
     * the allowance; the soft memory limit in force (0: none). */
    uint64_t heap_goal_bytes;
    uint64_t memory_limit_bytes;
    /* Pacing: the times a program thread waited in a slow path for the
     * concurrent mark to catch up, and how long in all. */
    uint64_t paced_waits;
    uint64_t paced_wait_ns;
    /* Concurrent marks finished with the world stopped because the program
     * got far past its allowance while they ran (when synchronous majors
     * are allowed; also counted in collections_major_sync). */
    uint64_t mark_finishes_sync;
    /* Memory kept warm (lull_release_memory): bytes the heap gave back to
     * the OS since lull_init and the madvise calls that did it; free
     * memory now kept resident for reuse, not counted in heap_bytes, that
     * goes back after release-delay. */
    uint64_t bytes_released;
    uint64_t release_calls;
    uint64_t free_resident_bytes;
    /* Free memory the background thread touched ahead since lull_init, so
     * that the large objects and blocks handed out next take no page fault
     * (it follows what was handed out untouched; at most 32 MiB and an
     * eighth of the heap are kept so). */
    uint64_t bytes_touched_ahead;
    /* The longest a pause waited for the background job (the concurrent
     * mark's or the sweep's) to stop before it stopped the world, and the
     * pauses that waited more than LULL_JOB_STOP_SLOW_NS (0.1 ms); the
     * most CPU time the job's threads took from the request to their
     * return (the wait less what the scheduler added: how finely the job
     * looks at its stop flag). */
    uint64_t job_stop_wait_max_ns;
    uint64_t job_stop_waits_slow;
    uint64_t job_stop_cpu_max_ns;
} lull_stats;
#define LULL_JOB_STOP_SLOW_NS ((uint64_t)100000)

/* Fill *stats. Before lull_init every field is 0. */
void lull_get_stats(lull_stats *stats);

/* One stop-the-world pause, as reported to the pause hook. */
typedef struct lull_pause_event {
    int      generation;     /* LULL_GEN_NURSERY or LULL_GEN_MAJOR */
    uint64_t collection;     /* collections (minor + major) so far, this one included */
    uint64_t start_ns;       /* CLOCK_MONOTONIC when stopping began */
    uint64_t duration_ns;    /* until the last thread may run again; as counted in lull_stats */
    int      phase;          /* LULL_PHASE_WHOLE, _INITIAL or _FINAL (below) */
} lull_pause_event;

/* lull_pause_event.phase: a whole collection in one pause (a minor, or a
 * synchronous major), or the initial or final pause of a concurrent major.
 * A concurrent major's two pauses carry the same collection number; minors
 * run between them carry numbers of their own. */
enum { LULL_PHASE_WHOLE = 0, LULL_PHASE_INITIAL = 1, LULL_PHASE_FINAL = 2 };

typedef void (*lull_pause_hook)(const lull_pause_event *event, void *data);

/* Call `hook(event, data)` after every pause, from the thread that ran the
 * collection, once the world runs again, while lull's collection lock is
 * still held: the hook must not allocate from lull or call other lull
 * functions, and should return quickly (record the event, nothing more).
 * NULL removes the hook. Only one hook is installed at a time; lull_shutdown
 * removes it. Calling before lull_init is misuse (abort). */
void lull_set_pause_hook(lull_pause_hook hook, void *data);

/* ------------------------------------------------------------------------ */
/* Looking inside: heap-shots                                               */
/* ------------------------------------------------------------------------ */

typedef struct lull_type_usage {
    const lull_type *type;
    uint64_t objects;        /* live objects of this type */
    uint64_t bytes;          /* their bytes, headers included: the memory their slots take */
} lull_type_usage;

typedef void (*lull_heap_shot_fn)(const lull_type_usage *usage, size_t count, void *data);

/* Run a complete major collection, marking with the world stopped (so
 * the counts are exactly what was reachable at that moment, with no
 * floating garbage; a concurrent mark running is finished first), and
 * report from its mark every type with live objects, once each: `count`
 * entries, in no particular order. `fn` runs on the calling thread once
 * the world runs again and lull's locks are released: it may call lull.
 * The counting walks the marked objects within that collection's pause.
 * Returns 0, -EINVAL for a NULL fn, -EPERM before lull_init, -ENOMEM when
 * the table for the counts cannot be had (or more than 65,536 types are
 * live; the collection has run then). */
int lull_heap_shot(lull_heap_shot_fn fn, void *data);

/* With <sys/sdt.h> at build time the library also carries USDT probes of
 * provider "lull" (a nop each until a tracer attaches): the begin and end
 * of every pause and of its steps (world stop, restart, sweep), of a
 * concurrent major's initial pause, concurrent mark, preclean passes and
 * final pause, and of the background sweep; the gc lock; allocation slow
 * paths by kind with type name and size; objects pinned and promoted; heap
 * growth; weak handles cleared; finalizers queued and run. The README
 * lists each probe and its arguments. */

#ifdef __cplusplus
}
#endif

#endif /* LULL_H */
