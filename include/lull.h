/*
 * lull — a concurrent, low-pause garbage collector for C.
 *
 *   #include <lull.h>     link with -llull   (pkg-config lull; CMake lull::lull)
 *
 * This header is the whole public API; doc/api.md is its reference (this
 * repository owns the contract from there), doc/options.md its options.
 * Public declarations come first, each with a short contract: what it
 * does, its errors, whether it may block or run a pause, from which
 * threads, and what it does before lull_init. The internals the inline
 * fast paths need are in a marked section at the end.
 *
 * Conventions (doc/api.md, "Conventions", has the table):
 *  - All sizes are bytes, all times nanoseconds (CLOCK_MONOTONIC).
 *  - Calls that can fail return 0 or a negative errno value (-EINVAL,
 *    -ENOMEM, ...); allocation returns NULL with errno = ENOMEM.
 *  - Before lull_init (and after lull_shutdown): a call that returns an
 *    error code returns -EPERM; a call that cannot report one and needs the
 *    heap is misuse; lull_shutdown, lull_thread_detach and lull_root_remove
 *    are no-ops; lull_version, lull_get_stats and lull_set_message_handler
 *    work.
 *  - Misuse that would corrupt the heap is reported with one line naming
 *    the function ("lull: FUNCTION: message", through the message handler,
 *    stderr by default), then abort().
 *  - "Attached": the calling thread called lull_thread_attach (or
 *    lull_init). "Any thread": attached or not.
 *
 * Needs GCC or Clang (__thread, GNU asm, __atomic builtins) and Linux.
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
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/* The version of this header; the only place it is written (CMakeLists.txt
 * reads it from here). 0.x: a new minor version may change the API and the
 * ABI, and the shared library's soname names the minor (liblull.so.0.MINOR),
 * so a program runs only with the minor it was built against; a patch
 * version changes neither. From 1.0 the soname names the major version. */
#define LULL_VERSION_MAJOR 0
#define LULL_VERSION_MINOR 1
#define LULL_VERSION_PATCH 0
#define LULL__STR2(x) #x
#define LULL__STR(x) LULL__STR2(x)
#define LULL_VERSION_STRING \
    LULL__STR(LULL_VERSION_MAJOR) "." LULL__STR(LULL_VERSION_MINOR) "." LULL__STR(LULL_VERSION_PATCH)

/* The version of the library the program runs with ("MAJOR.MINOR.PATCH"),
 * which may differ from the header's in its patch number. Any thread, any
 * time (also before lull_init); never blocks. */
const char *lull_version(void);

/* ------------------------------------------------------------------------ */
/* Lifecycle and threads                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Start the collector and attach the calling thread. `params` is NULL, ""
 * or "key=value,..." (doc/options.md); then LULL_GC_PARAMS and
 * LULL_GC_DEBUG from the environment are applied on top, unless `params`
 * refuses them: environment=no ignores both, environment=debug-only
 * ignores LULL_GC_PARAMS (an ignored variable that is set gets one
 * warning). Returns 0; -EINVAL for an unknown key or a bad value (one
 * line names it; nothing is left initialised, a later lull_init may
 * succeed); -EBUSY if already initialised; -ENOMEM if the heap's address
 * range cannot be reserved; -errno if trace-file cannot be opened. Any
 * thread; one lull_init or lull_shutdown at a time; one heap per process.
 */
int  lull_init(const char *params);

/*
 * Write the options in force as "key=value,key=value,..." into buf (at
 * most `size` bytes, NUL included; buf may be NULL when size is 0): every
 * LULL_GC_PARAMS key with the value the collector uses now, run-time
 * setters included; trace-file only when set; no LULL_GC_DEBUG option.
 * lull_init accepts the string as it is. Returns its length (without the
 * NUL) as snprintf does, also when it did not fit; -EPERM before
 * lull_init. Any thread; takes no lock.
 */
int  lull_get_params(char *buf, size_t size);

/* Stop the collector's threads and release the heap; every object becomes
 * invalid. Only the calling thread may still be attached (another attached
 * thread is misuse). With finalizers=auto, queued finalizers run first.
 * lull_init may be called again afterwards. No-op before lull_init. */
void lull_shutdown(void);

/* Register the calling thread: its stack and registers become roots.
 * Returns 0 (also if already attached), -EPERM before lull_init, -ENOMEM.
 * Waits for a running pause to end. A thread that exits attached is
 * detached for it. */
int  lull_thread_attach(void);

/* Unregister the calling thread; its stack stops being a root. No-op for a
 * thread that is not attached, and before lull_init. */
void lull_thread_detach(void);

/* ------------------------------------------------------------------------ */
/* Describing objects                                                       */
/* ------------------------------------------------------------------------ */

/* Word 0 of every object; owned by the collector. */
typedef struct lull_header { uintptr_t word_; } lull_header;
/* The first two words of every array object; `length` is set by the
 * collector at allocation. */
typedef struct lull_array_header { lull_header header; size_t length; } lull_array_header;

/* Called by a type's trace function for every reference slot; the collector
 * may update *slot when it moves the target. */
typedef void (*lull_visit_fn)(void **slot, void *ctx);

/* A type: must outlive its objects (static storage) and not live in the
 * lull heap. Word 0 is never a reference; references are word-aligned. */
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
 * One object of `type`, zeroed, header filled in. Small objects (up to
 * 8 KiB) come from the thread's buffer in the nursery (up to 2 KiB inline,
 * below; bigger ones out of line) and may move until promoted; large
 * objects (over 8 KiB) never move. Returns NULL with errno = ENOMEM when
 * the heap cannot satisfy the request even after a full collection; the
 * heap stays consistent and every live object intact.
 * Attached thread; may run a pause. A malformed type, an unattached
 * thread or a call before lull_init is misuse. The thread's last
 * allocation stays alive and in place while the thread is stopped outside
 * lull, even with nothing pointing into it (doc/api.md). Also a real
 * function (its address can be taken); calls use the inline fast path.
 */
void  *lull_alloc(const lull_type *type);

/* An array: type->size + length * type->elem_size bytes, `length` stored in
 * the header. An impossible size (overflow, over max-heap-size) returns
 * NULL with errno = ENOMEM. Otherwise as lull_alloc. */
void  *lull_alloc_array(const lull_type *type, size_t length);

/* As lull_alloc, but the object never moves. */
void  *lull_alloc_pinned(const lull_type *type);

/* The length stored in an array object's header. NULL, a non-heap
 * address, an interior pointer or a non-array is misuse. Any thread. */
size_t lull_array_length(const void *array);

/* The type `obj` was allocated with. `obj` must be the start of an object
 * (NULL, a non-heap address or an interior pointer is misuse). Any thread. */
const lull_type *lull_type_of(const void *obj);

/* Keep `p` in a register at this point (an empty asm: no instruction).
 * Put it in the body of a loop that walks an object's fields through an
 * address an optimising compiler may rebase (o->payload[i] indexed by a
 * function of (o->id, i)), so that a collection during the loop sees the
 * object; loops indexing by a plain counter need none (doc/api.md). */
#define lull_keep(p) __asm__ __volatile__("" : : "r"(p))

/* ------------------------------------------------------------------------ */
/* Storing references: the write barrier                                    */
/* ------------------------------------------------------------------------ */

/*
 * Store `value` (a reference or NULL) into `slot`, which lies inside heap
 * object `obj`, and record the store for the collector (a card). Every
 * store of a reference into a heap object goes through it; reading needs
 * no barrier. Release ordering: a thread that loads the slot with acquire
 * ordering sees the target's initialised contents. Attached thread; a
 * slot outside the heap, or a call before lull_init, is misuse. Inline (a
 * few instructions, at the end of this header); a possible pause point:
 * it runs a minor when the thread has marked its budget of cards
 * (lull_stats.minors_for_cards), and during a concurrent mark it may wait
 * a bounded time for the mark to catch up.
 */
static inline void lull_store(void *obj, void *slot, void *value);
#define LULL_SET(obj, field, value) lull_store((obj), (void *)&(obj)->field, (value))

/* ------------------------------------------------------------------------ */
/* Roots                                                                    */
/* ------------------------------------------------------------------------ */

/* Register [start, start+size) as a conservative root range: every aligned
 * word that points into an object (interior pointers included) keeps it
 * alive and in place. Returns 0, -EINVAL (NULL start, zero size, a
 * wrapping range), -EEXIST (start already registered), -ENOMEM, -EPERM
 * before lull_init. Any thread; takes the gc lock. */
int  lull_root_add(void *start, size_t size);

/* Register `count` words at `refs` as precise roots: each is a reference or
 * NULL; the collector may move their targets and update the words. Errors
 * as lull_root_add (-EINVAL also for misaligned refs or an overflowing
 * count). Any thread; takes the gc lock. */
int  lull_root_add_refs(void **refs, size_t count);

/* Unregister the root that starts at `start`. No-op if none does, and
 * before lull_init. Any thread; takes the gc lock. */
void lull_root_remove(void *start);

/* ------------------------------------------------------------------------ */
/* GC handles                                                               */
/* ------------------------------------------------------------------------ */

/*
 * A handle names a slot in one of the collector's handle tables (one per
 * kind). Handles are safe to use from any attached thread at any time,
 * without locks (slots are claimed, set and cleared with compare-and-swap;
 * the tables grow by installing buckets with compare-and-swap, so slots
 * never move); no handle call blocks or pauses. The tables are not scanned
 * conservatively. Each kind holds at most LULL_HANDLE_MAX - 1 handles.
 */
typedef uint32_t lull_handle;          /* 0 is never a valid handle */
enum lull_handle_kind {
    LULL_HANDLE_WEAK,        /* cleared when the target dies, before its finalizer runs */
    LULL_HANDLE_WEAK_TRACK,  /* cleared only when the target can no longer be resurrected */
    LULL_HANDLE_NORMAL,      /* keeps the target alive; the target may move (the handle follows) */
    LULL_HANDLE_PINNED,      /* keeps the target alive and in place */
};
#define LULL_HANDLE_MAX ((uint32_t)1 << 25)   /* handles per kind, bound */

/* A new handle of `kind` on `obj` (the start of a heap object, or NULL).
 * Returns 0 with errno = ENOMEM when the kind's table is full or cannot
 * grow. An unknown kind, or an `obj` that is not a heap object, is misuse. */
lull_handle lull_handle_new(void *obj, enum lull_handle_kind kind);

/* The handle's target: NULL if it was set to NULL or, for a weak handle,
 * once its target died (never an object the collector found dead, also
 * during a concurrent mark). */
void       *lull_handle_get(lull_handle h);

/* Point the handle at `obj` (a heap object or NULL). */
void        lull_handle_set(lull_handle h, void *obj);

/* Release the handle; its value may be handed out again. Using a freed
 * handle, or a value lull_handle_new never returned, is misuse (detected
 * unless the slot has since been reused 32 times over). */
void        lull_handle_free(lull_handle h);

/* ------------------------------------------------------------------------ */
/* Finalizers                                                               */
/* ------------------------------------------------------------------------ */

/*
 * `fn(obj, data)` runs once, after `obj` became unreachable: the collection
 * that finds it so keeps the object and what it references for one more
 * cycle and queues the call, which runs on the "lull-finalizer" thread
 * (attached while it runs finalizers; joined by lull_shutdown), or, with
 * finalizers=manual, only inside lull_run_finalizers(). The object is
 * intact during the call and reclaimed afterwards unless the finalizer
 * stored it somewhere reachable (then it is an ordinary object again).
 * Unordered, as in .NET and SGen. Finalizers are program code: they may
 * allocate and call lull, but not lull_shutdown. Registering again
 * replaces the previous finalizer; fn = NULL removes it. Returns 0,
 * -EINVAL if `obj` is not the start of a heap object, -ENOMEM, -EPERM
 * before lull_init. Any thread; takes the gc lock.
 */
typedef void (*lull_finalizer_fn)(void *obj, void *data);
int  lull_register_finalizer(void *obj, lull_finalizer_fn fn, void *data);

/* Run the queued finalizers on the calling (attached) thread, including
 * any that the collections they cause queue meanwhile; returns when the
 * queue is empty. For finalizers=manual (at a frame boundary). Runs
 * program code, which may pause. Misuse before lull_init. */
void lull_run_finalizers(void);

/* ------------------------------------------------------------------------ */
/* Collecting and latency                                                   */
/* ------------------------------------------------------------------------ */

enum { LULL_GEN_NURSERY = 0, LULL_GEN_MAJOR = 1 };

/* LULL_GEN_NURSERY: run a minor collection. LULL_GEN_MAJOR: return after a
 * complete major collection (a running mark is finished). Runs pauses and
 * waits. Any thread (an unattached thread's stack is no root). Another
 * generation, or a call before lull_init, is misuse. */
void lull_collect(int generation);

/* Ask the collector not to run stop-the-world majors (true: allow them
 * again). Returns true when the request is honoured (concurrent majors are
 * available), false with major=stw. Best effort: an allocation that would
 * otherwise fail may still force one (collections_major_sync). Any
 * thread; never blocks. Misuse before lull_init. */
bool lull_set_allow_synchronous_major(bool allow);

/* The pause minors aim at (pause-target; 5 ms unless set): the nursery is
 * resized after every minor, between 256 KiB and nursery-size, so the
 * next minor is predicted to take `ns`; a change takes effect at once.
 * Returns 0, -EINVAL outside [LULL_PAUSE_TARGET_MIN_NS,
 * LULL_PAUSE_TARGET_MAX_NS] (below 100 us stopping the threads alone takes
 * longer; above 10 s nothing is aimed at), -EPERM before lull_init. Any
 * thread; takes the gc lock. */
#define LULL_PAUSE_TARGET_MIN_NS ((uint64_t)100000)
#define LULL_PAUSE_TARGET_MAX_NS ((uint64_t)10000000000)
int lull_set_pause_target(uint64_t ns);

/* The program has about `ns` nanoseconds with nothing to do (the end of a
 * frame, between requests). lull runs a minor there when the nursery would
 * fill before the next call and the minor is predicted to fit `ns`, or a
 * major's pause that fits (a concurrent mark's final pause waits for such
 * a call; an evacuating major runs in one whose `ns` fits it). Returns 1
 * if it collected (lull_stats.minors_idle, majors_idle), 0 if not, -EINVAL
 * for 0, -EPERM before lull_init. Any thread; takes the gc lock: call it
 * between units of work, not inside them (doc/api.md). */
int lull_idle(uint64_t ns);

/* The heap goal (heap-growth; 100 unless set): after each major the heap
 * may grow to live x (1 + percent / 100) (live at least 4 MiB) before the
 * next major is due. Takes effect at once. Returns 0, -EINVAL outside
 * [LULL_HEAP_GROWTH_MIN, LULL_HEAP_GROWTH_MAX], -EPERM before lull_init.
 * Any thread; takes the gc lock; never collects. */
#define LULL_HEAP_GROWTH_MIN 1u
#define LULL_HEAP_GROWTH_MAX 10000u
int lull_set_heap_growth(unsigned percent);

/* A soft limit on the memory the heap holds (memory-limit; none unless
 * set; 0 removes it): the heap goal stays under it, so majors come sooner
 * and free memory goes back sooner near it. Never fails an allocation
 * (max-heap-size is the hard limit). Returns 0, -EINVAL for a nonzero limit
 * under LULL_MEMORY_LIMIT_MIN, -EPERM before lull_init. Any thread; takes
 * the gc lock; never collects. */
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
/* Controlling when collections run                                         */
/* ------------------------------------------------------------------------ */

/*
 * No-GC region. After lull_no_gc_region_begin(bytes) returns 0, no pause
 * of any kind runs on any thread (no minor, no major's pause, no paced
 * wait for the concurrent mark) until the program's threads together
 * have allocated `bytes` (counted as lull_stats.bytes_allocated counts;
 * the region holds up to 16 KiB per attached thread longer, as a TLAB is
 * counted whole when handed out) or lull_no_gc_region_end is called.
 * A concurrent mark already running goes on meanwhile; its final pause
 * waits. Begin prepares the heap first, and may pause to do it: a done
 * mark's final pause, a major that is due, and a minor when the nursery
 * has less room than `bytes`; the nursery grows to hold `bytes` (up to
 * nursery-size) for the region, and when it is full anyway small objects
 * go to the major heap without a minor. A collection during the region
 * ends it there (lull_no_gc_region_end then returns 1): an allocation the
 * heap cannot satisfy (past max-heap-size), allocation past `bytes` that
 * needs one, or an explicit lull_collect, lull_collect_start or
 * lull_heap_shot. lull_idle and lull_collect_step run no pause inside a
 * region. Returns 0, -EINVAL for 0 bytes, -EBUSY while a region is open
 * (one at a time, for the whole process), -ENOMEM when the heap cannot
 * promise `bytes` even after a full collection (max-heap-size, or the
 * reserved range, leaves less than 1.25 x bytes plus 256 KiB per thread:
 * every byte might have to go to the major heap), -EPERM before lull_init.
 * Any thread, attached or not; may block on the gc lock and pause.
 * Counted in lull_stats.regions and regions_overrun.
 */
int lull_no_gc_region_begin(size_t bytes);
/* End the region: 0 when it held (no collection ran while it was open),
 * 1 when a collection ran and ended it early, -EINVAL when no region is
 * open, -EPERM before lull_init. Any thread; never pauses itself (what was
 * held back runs at the next allocation's decision point). */
int lull_no_gc_region_end(void);

/*
 * The mode (LULL_MODE_AUTO unless set). LULL_MODE_MANUAL: no collection
 * starts by itself, neither minor nor major; lull_collect,
 * lull_collect_start, lull_collect_step and lull_idle work as in the auto
 * mode, and a mark they started ends in its final pause at an allocation
 * once its background work is done. When the nursery is full, small
 * objects go to the major heap until the next collection (no minor).
 * Forced, counted in lull_stats.collections_forced: past the memory limit
 * (lull_set_memory_limit: the last major's live heap, the nursery and what
 * the major heap took since, at least 4 MiB after each major) a
 * synchronous major, or the running mark's final pause (a concurrent major
 * if synchronous majors are not allowed); and the collection an
 * allocation runs when max-heap-size leaves it no room. Without either
 * limit the heap grows until the OS refuses. Returns 0, -EINVAL for an
 * unknown mode. Any thread, attached or not, also before lull_init (the
 * mode stays in force across lull_shutdown and lull_init); never blocks.
 */
enum { LULL_MODE_AUTO = 0, LULL_MODE_MANUAL = 1 };
int lull_set_mode(int mode);

/*
 * A step of collector work on the calling thread, for at most about
 * `budget_ns` (a game calls it each frame with the time left): a pause
 * that is due and predicted to fit what is left of the budget (a done
 * mark's final pause, the initial pause of a major that is due, a minor
 * when the nursery is 7/8 full; never inside a no-GC region), then the
 * running concurrent mark's marking and precleaning (the background
 * workers stop meanwhile and resume after; the work is checked against
 * the clock every 64 objects or 16 KiB slice), then the last major's lazy
 * sweep. With LULL_GC_PARAMS background-mark=no the workers never mark:
 * marks advance only in steps (a mark the steps have not ended when the
 * major heap's allowance is used up is finished in its final pause, with
 * the world stopped). Returns the LULL_STEP_* bits of what it did, 0 when
 * there was nothing to do, -EINVAL for 0. Any thread, attached or not;
 * holds the gc lock for the whole step, so other threads' allocation slow
 * paths wait for it up to the budget (their fast paths do not); pauses
 * only as said. -EPERM before lull_init.
 */
enum {
    LULL_STEP_MARK = 1,        /* marked objects of the running mark */
    LULL_STEP_PRECLEAN = 2,    /* rescanned its dirty cards */
    LULL_STEP_SWEEP = 4,       /* swept blocks of the last major */
    LULL_STEP_PAUSE = 8,       /* ran a pause */
    LULL_STEP_STARTED = 16,    /* that pause started a concurrent major */
    LULL_STEP_FINISHED = 32,   /* that pause completed a major */
};
int lull_collect_step(uint64_t budget_ns);

/* Start a concurrent major now and return at once: its initial pause runs
 * here, its mark on the background workers, its final pause at an
 * allocation, lull_idle or lull_collect_step once the mark is done. It
 * never waits for the mark (it does finish the last major's lazy sweep
 * first, world running, if the background sweep has not: a mark starts
 * on a swept heap). Returns 0 (started), 1 (a concurrent mark
 * already runs: nothing done). With major=stw (no concurrent majors) it
 * runs a whole synchronous major and returns 0. Inside a no-GC region
 * its pause ends the region. Any thread, attached or not; takes the gc
 * lock. -EPERM before lull_init. */
int lull_collect_start(void);

/* Memory outside the heap that lull objects keep alive (buffers, textures,
 * sockets a finalizer frees): what was added since the last major (from
 * the lowest it fell to since) counts as allocation in the major heap
 * toward the next major, so that majors come sooner in proportion; remove
 * it when the memory is freed (never below 0). Shown in
 * lull_stats.memory_pressure_bytes. Any thread, attached or not, also
 * before lull_init (it counts from lull_init on, and across lull_shutdown:
 * the memory is the program's); lock-free, never collects (the next
 * allocation's decision point does). */
void lull_add_memory_pressure(size_t bytes);
void lull_remove_memory_pressure(size_t bytes);

/* What major-collection pause is coming (poll it each frame; flags):
 *   LULL_MAJOR_SOON       the major heap took 3/4 of its way to the next
 *                         major's start (or more; also with START_DUE)
 *   LULL_MAJOR_START_DUE  a major starts at the next allocation's
 *                         decision point (its initial pause)
 *   LULL_MAJOR_FINAL_DUE  a concurrent mark's background work is done:
 *                         its final pause runs at the next decision point
 *                         (or lull_idle / lull_collect_step)
 *   LULL_MAJOR_SYNC       the pause coming marks with the world stopped
 *                         (major=stw, an evacuating major, or a mark
 *                         finished early): a long pause
 * 0: none is near. A game that sees one can place the pause: call
 * lull_collect_start, lull_collect_step or lull_idle in a loading screen
 * or at a frame's end. Any thread, attached or not; takes the gc lock
 * briefly; never collects. -EPERM before lull_init. */
enum {
    LULL_MAJOR_SOON = 1,
    LULL_MAJOR_START_DUE = 2,
    LULL_MAJOR_FINAL_DUE = 4,
    LULL_MAJOR_SYNC = 8,
};
int lull_major_due(void);

/* ------------------------------------------------------------------------ */
/* Statistics                                                               */
/* ------------------------------------------------------------------------ */

/* Fields are only ever added at the end (doc/api.md has every field). */
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
    /* The pauses above, split by kind. */
    uint64_t pauses_minor;            /* pauses of minor (nursery) collections */
    uint64_t pause_minor_max_ns, pause_minor_p50_ns, pause_minor_p99_ns;
    uint64_t pauses_major;            /* pauses of major collections: initial, final, synchronous */
    uint64_t pause_major_max_ns, pause_major_p50_ns, pause_major_p99_ns;
    /* The pause target: minors whose pause exceeded it, the target now, and
     * the nursery's size now (the room it hands out between minors). */
    uint64_t minors_over_target;
    uint64_t pause_target_ns;
    uint64_t nursery_bytes;
    /* Finalizer calls queued (their object found unreachable) and run. */
    uint64_t finalizers_queued;
    uint64_t finalizers_run;
    /* What synchronous majors moved out of sparse size classes
     * (evacuation-threshold), objects and the bytes of their slots. */
    uint64_t objects_evacuated;
    uint64_t bytes_evacuated;
    /* Of heap_bytes: empty blocks kept for reuse and the next minor. */
    uint64_t heap_empty_bytes;
    /* Minors a thread's write barrier ran: it had marked its share of the
     * cards the next minor may scan within the pause target. */
    uint64_t minors_for_cards;
    /* Bytes of nursery objects minors copied into the major heap. */
    uint64_t bytes_promoted;
    /* Minors, and majors' pauses, lull_idle ran. */
    uint64_t minors_idle;
    uint64_t majors_idle;
    /* Bytes of nursery objects minors copied within the nursery to age
     * there once (promotion-age=2 or auto). */
    uint64_t bytes_aged;
    /* The heap goal (live at the last major plus the allowance) and the
     * soft memory limit in force (0: none). */
    uint64_t heap_goal_bytes;
    uint64_t memory_limit_bytes;
    /* Times a program thread waited for the concurrent mark to catch up,
     * and how long in all. */
    uint64_t paced_waits;
    uint64_t paced_wait_ns;
    /* Concurrent marks finished with the world stopped because the program
     * got far past its allowance (also in collections_major_sync). */
    uint64_t mark_finishes_sync;
    /* Allocations that did not take the inline fast path (objects over
     * LULL__TLAB_MAX_OBJECT, which bump the TLAB out of line up to 8 KiB,
     * lull_alloc_pinned, and the allocation that refilled a TLAB), and how
     * many of those took a lock shared by all threads: the gc lock (a
     * thread cache's batch refill, a large object, a collection) or the
     * nursery's lock (every TLAB refill, held only to cut the TLAB, never
     * while it is zeroed or a collection runs); the rest came from the
     * thread's TLAB or its own caches without a lock. Since
     * lull_init, every thread, attached or gone. */
    uint64_t alloc_outside_tlab;
    uint64_t alloc_locked;
    /* Control (lull_no_gc_region_begin, lull_set_mode,
     * lull_add_memory_pressure): regions begun, regions a collection
     * ended early, collections manual mode forced (memory limit,
     * max-heap-size), and the memory pressure now. */
    uint64_t regions;
    uint64_t regions_overrun;
    uint64_t collections_forced;
    uint64_t memory_pressure_bytes;
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

/*
 * Fill *stats with the statistics now (all 0 before lull_init). Any
 * thread; takes the statistics lock briefly; never collects. NULL is
 * misuse. lull_get_stats is a macro passing sizeof *stats to
 * lull_get_stats_sized, which writes exactly `size` bytes: a program built
 * against an older, smaller lull_stats gets the fields it knows and
 * nothing past them is written; a newer, larger struct gets 0 in the
 * fields this library lacks. It returns the bytes filled from the
 * library's fields. The function lull_get_stats (its address, or
 * (lull_get_stats)(s)) fills LULL_STATS_SIZE_0_1 bytes: the 0.1 struct.
 */
size_t lull_get_stats_sized(lull_stats *stats, size_t size);
void lull_get_stats(lull_stats *stats);
#define lull_get_stats(stats) ((void)lull_get_stats_sized((stats), sizeof *(stats)))
#define LULL_STATS_SIZE_0_1 (offsetof(lull_stats, mark_finishes_sync) + sizeof(uint64_t))

/* ------------------------------------------------------------------------ */
/* The pause hook                                                           */
/* ------------------------------------------------------------------------ */

/* One stop-the-world pause, as reported to the pause hook. Fields are only
 * ever added at the end. */
typedef struct lull_pause_event {
    int      generation;     /* LULL_GEN_NURSERY or LULL_GEN_MAJOR */
    uint64_t collection;     /* collections (minor + major) so far, this one included */
    uint64_t start_ns;       /* CLOCK_MONOTONIC when stopping began */
    uint64_t duration_ns;    /* until the last thread may run again; as counted in lull_stats */
    int      phase;          /* LULL_PHASE_WHOLE, _INITIAL or _FINAL (below) */
} lull_pause_event;

/* lull_pause_event.phase: a whole collection in one pause (a minor, or a
 * synchronous major), or the initial or final pause of a concurrent major
 * (both carry the major's collection number). */
enum { LULL_PHASE_WHOLE = 0, LULL_PHASE_INITIAL = 1, LULL_PHASE_FINAL = 2 };

typedef void (*lull_pause_hook)(const lull_pause_event *event, void *data);

/* Call `hook(event, data)` after every pause, on the thread that ran it,
 * once the world runs again, with lull's collection lock still held: the
 * hook must not allocate from lull or call lull, and should only record.
 * NULL removes it; one hook at a time; lull_shutdown removes it. Any
 * thread; takes the gc lock. Misuse before lull_init. */
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

/* Run a complete major collection that marks with the world stopped (exact
 * counts, no floating garbage) and report every type with live objects,
 * once each: `fn(usage, count, data)` runs on the calling thread once the
 * world runs again and lull's locks are released (it may call lull).
 * Returns 0, -EINVAL for a NULL fn, -EPERM before lull_init, -ENOMEM when
 * the table for the counts cannot be had (or more than 65,536 types are
 * live; the collection has run then). Any thread; runs a pause. */
int lull_heap_shot(lull_heap_shot_fn fn, void *data);

/* With <sys/sdt.h> at build time the library also carries USDT probes of
 * provider "lull" (a nop each until a tracer attaches); doc/observability.md
 * lists each probe and its arguments. */

/* ------------------------------------------------------------------------ */
/* Messages: warnings and misuse reports                                    */
/* ------------------------------------------------------------------------ */

/* lull_message_fn's `kind`. */
enum {
    LULL_MSG_WARNING = 1,  /* lull goes on: a bad option in lull_init, a pause waiting long for a thread */
    LULL_MSG_FATAL = 2,    /* misuse that would corrupt the heap, or a broken internal invariant:
                              lull aborts when the handler returns */
};

/* A message handler: `function` is the lull function that reports (such
 * as "lull_alloc"), `message` one line without the "lull: function: "
 * prefix and without a newline. Return 0 to take the message, nonzero to
 * have lull also write it to stderr as it does without a handler. */
typedef int (*lull_message_fn)(int kind, const char *function, const char *message, void *data);

/*
 * Send lull's warnings and misuse reports to `fn(kind, function, message,
 * data)` instead of stderr; NULL restores stderr. It stays installed until
 * replaced (also across lull_shutdown and lull_init). After a
 * LULL_MSG_FATAL message lull calls abort() when the handler returns; the
 * handler may instead end the process its own way (exit, _exit), but must
 * not longjmp back into the program. The handler runs on the reporting
 * thread, which may hold lull's locks with other threads stopped (holding
 * whatever they held, malloc's lock included): it must not call lull and
 * should only record the line. A report racing with this call goes to the
 * old or the new handler, each with its own data. Any thread, any time
 * (also before lull_init, to receive its reports). LULL_GC_DEBUG's own
 * output (log, fail-mmap) stays on stderr.
 */
void lull_set_message_handler(lull_message_fn fn, void *data);

/* ======================================================================== */
/* Internals: what the inline fast paths (lull_alloc, lull_alloc_array,     */
/* lull_store) need. Not part of the API: names with lull__ / LULL__ may    */
/* change in any version.                                                   */
/* ======================================================================== */

/* The inline allocation fast path.
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

/* What the inline barrier needs. */
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
 * lull_store (its contract is in the public part above).
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

#ifdef __cplusplus
}
#endif

#endif /* LULL_H */
