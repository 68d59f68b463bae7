/* control.c — the program's controls over when collections run
 * (control.h): lull_no_gc_region_begin/_end, lull_set_mode,
 * lull_collect_start, memory pressure, lull_major_due.
 *
 * Owns: the region (open, holding, overrun), the mode, the nursery's
 * closed flag, the pressure and its baseline, and their counters.
 * A region holds every collection the policy would start (policy.c asks
 * lull_control_region_holds first) until its bytes, plus a slack for the
 * TLABs counted whole when handed out, have been allocated by all threads
 * together. While it holds, a full nursery closes (small objects go to the
 * major heap: no minor), paced waits are skipped (alloc.c), and only an
 * allocation that fails collects, which ends the region there (overrun).
 * Begin makes that unlikely: it runs a done mark's final pause and a due
 * major's first pause, grows the nursery to take the bytes (up to
 * nursery-size) and runs a minor if it has less room, and refuses what
 * max-heap-size cannot take.
 *
 * Invariants: region fields change with the gc lock held; `blocking`
 * implies `active`; every pause runs lull_control_note_pause first, so no
 * pause ever runs while blocking is set. */
#include "gc/control.h"

#include <errno.h>
#include <stdatomic.h>

#include "base/config.h"
#include "base/gclock.h"
#include "base/util.h"
#include "gc/background.h"
#include "gc/collect.h"
#include "gc/threads.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "trace/mark.h"
#include "trace/workers.h"
#include "lull.h"

/* A thread's TLAB counts whole when handed out (nursery.c), so the count
 * may run ahead of what was allocated by a TLAB a thread (up to 8 KiB plus
 * a sliver): the region holds this much longer per attached thread. */
#define REGION_THREAD_SLACK ((uint64_t)16 << 10)
/* What a thread's allocation caches may hold back in the major heap (free
 * slots of the blocks they were cut from) while the region takes objects
 * there. */
#define REGION_CACHE_SLACK ((uint64_t)256 << 10)

static struct {
    /* The region (gc lock held to write; blocking also read without). */
    bool active;
    atomic_bool blocking;
    bool overrun;                  /* a collection ran while it was open */
    uint64_t start;                /* lull_threads_allocated_bytes at begin */
    uint64_t bytes;                /* promised, with the slack */
    _Atomic size_t floor;          /* the nursery's least size while open */
    atomic_bool nursery_closed;
    atomic_int mode;               /* LULL_MODE_AUTO or _MANUAL; survives lull_shutdown */
    _Atomic uint64_t pressure, pressure_base;
    _Atomic uint64_t regions, regions_overrun, forced;
} control_g;

static inline uint64_t get(_Atomic uint64_t *v)
{
    return atomic_load_explicit(v, memory_order_relaxed);
}

static inline void add1(_Atomic uint64_t *v)
{
    atomic_fetch_add_explicit(v, 1, memory_order_relaxed);
}

void lull_control_init(void)
{
    control_g.active = control_g.overrun = false;
    atomic_store_explicit(&control_g.blocking, false, memory_order_relaxed);
    atomic_store_explicit(&control_g.floor, 0, memory_order_relaxed);
    atomic_store_explicit(&control_g.nursery_closed, false, memory_order_relaxed);
    atomic_store_explicit(&control_g.pressure_base, get(&control_g.pressure), memory_order_relaxed);
    atomic_store_explicit(&control_g.regions, 0, memory_order_relaxed);
    atomic_store_explicit(&control_g.regions_overrun, 0, memory_order_relaxed);
    atomic_store_explicit(&control_g.forced, 0, memory_order_relaxed);
}

bool lull_control_region_blocking(void)
{
    return atomic_load_explicit(&control_g.blocking, memory_order_relaxed);
}

/* Bytes allocated since the region began (gc lock held). A TLAB handed
 * out before it and retired since gives back its unused tail: never
 * below 0. */
static uint64_t region_allocated(void)
{
    uint64_t now = lull_threads_allocated_bytes_locked();
    return now > control_g.start ? now - control_g.start : 0;
}

bool lull_control_region_holds(lull_policy_event ev)
{
    if (!lull_control_region_blocking() || ev == LULL_POLICY_OUT_OF_MEMORY)
        return false;
    if (ev != LULL_POLICY_DEBUG_TICK &&
        region_allocated() >= control_g.bytes + (uint64_t)lull_threads_count() * REGION_THREAD_SLACK) {
        /* All promised: collections may run again; the first ends it. */
        atomic_store_explicit(&control_g.blocking, false, memory_order_relaxed);
        return false;
    }
    return true;
}

bool lull_control_manual(void)
{
    return atomic_load_explicit(&control_g.mode, memory_order_relaxed) == LULL_MODE_MANUAL;
}

void lull_control_note_pause(void)
{
    if (control_g.active) {
        control_g.overrun = true;
        atomic_store_explicit(&control_g.blocking, false, memory_order_relaxed);
    }
    atomic_store_explicit(&control_g.nursery_closed, false, memory_order_relaxed);
}

void lull_control_close_nursery(void)
{
    atomic_store_explicit(&control_g.nursery_closed, true, memory_order_relaxed);
}

bool lull_control_nursery_closed(void)
{
    return atomic_load_explicit(&control_g.nursery_closed, memory_order_relaxed);
}

size_t lull_control_nursery_floor(void)
{
    return atomic_load_explicit(&control_g.floor, memory_order_relaxed);
}

uint64_t lull_control_pressure_growth(void)
{
    uint64_t p = get(&control_g.pressure), b = get(&control_g.pressure_base);
    return p > b ? p - b : 0;
}

void lull_control_note_major(void)
{
    atomic_store_explicit(&control_g.pressure_base, get(&control_g.pressure), memory_order_relaxed);
}

void lull_control_note_forced(void)
{
    add1(&control_g.forced);
}

uint64_t lull_control_regions(void) { return get(&control_g.regions); }
uint64_t lull_control_regions_overrun(void) { return get(&control_g.regions_overrun); }
uint64_t lull_control_forced(void) { return get(&control_g.forced); }
uint64_t lull_control_pressure(void) { return get(&control_g.pressure); }

/* ------------------------------------------------------------------------ */
/* The no-GC region                                                         */
/* ------------------------------------------------------------------------ */

/* The major heap could take all `need` bytes without a collection, in
 * the worst case that none of them fits the nursery (gc lock held):
 * max-heap-size (or the reserved range) leaves room for them, a quarter
 * more for size classes' rounding, and each thread's caches. */
static uint64_t major_want(uint64_t need)
{
    uint64_t want = need + need / 4 + (uint64_t)lull_threads_count() * REGION_CACHE_SLACK;
    return want >= need ? want : UINT64_MAX;
}

static bool major_room_for(uint64_t need)
{
    return major_want(need) <= (uint64_t)lull_space_headroom_bytes() + lull_major_empty_bytes();
}

/* Even an empty heap could not take it (gc lock held). */
static bool never_room_for(uint64_t need)
{
    uint64_t cap = lull_cfg.max_heap_size ? lull_cfg.max_heap_size : lull_heap_g.reserve;
    return major_want(need) > cap;
}

/* Make the heap ready for `need` bytes without a collection (gc lock
 * held; may run pauses). A done mark's final pause and a major that is
 * due run now rather than wait for the region's end; the nursery grows to
 * take the bytes (up to nursery-size), emptied by a minor if its room is
 * short. */
static void region_prepare(uint64_t need)
{
    if (lull_marking() && lull_mark_ready())
        lull_collect_locked(LULL_COLLECT_MAJOR_FINISH, "no-GC region begins, concurrent mark done");
    if (!lull_control_manual()) {
        const char *reason = "";
        int what = lull_policy_decide(LULL_POLICY_SLOW_ALLOC, 0, &reason);
        if (what >= 0)
            lull_collect_locked(what, reason);
    }
    size_t ceiling = lull_nursery_ceiling();
    size_t floor = need < ceiling ? (size_t)need : ceiling;
    atomic_store_explicit(&control_g.floor, floor, memory_order_relaxed);
    if (lull_nursery_room(LULL__TLAB_MAX_OBJECT) < floor) {
        if (lull_nursery_size() < floor)
            lull_nursery_resize(floor + LULL_TLAB_SIZE);
        lull_collect_locked(LULL_GEN_NURSERY, "no-GC region begins");
    }
}

/* Open a region of `bytes` (gc lock held); `swept`: a full major has just
 * run, finish its sweep before judging the room. */
static int region_open(size_t bytes, bool swept)
{
    if (control_g.active)
        return -EBUSY;
    uint64_t need = (uint64_t)bytes;
    if (swept) {
        lull_major_sweep_all();
        lull_major_release_empty(0);
    }
    if (!major_room_for(need))
        return -ENOMEM;
    region_prepare(need);
    if (!major_room_for(need)) {
        atomic_store_explicit(&control_g.floor, 0, memory_order_relaxed);
        return -ENOMEM;
    }
    control_g.active = true;
    control_g.overrun = false;
    control_g.start = lull_threads_allocated_bytes_locked();
    control_g.bytes = need;
    atomic_store_explicit(&control_g.blocking, true, memory_order_relaxed);
    add1(&control_g.regions);
    return 0;
}

int lull_no_gc_region_begin(size_t bytes)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (!bytes)
        return -EINVAL;
    lull_gc_lock();
    int rc = region_open(bytes, false);
    if (rc == -ENOMEM && !never_room_for(bytes)) {
        /* Room may come back from a full collection. */
        lull_gc_unlock();
        lull_collect(LULL_GEN_MAJOR);
        lull_gc_lock();
        rc = region_open(bytes, true);
    }
    lull_gc_unlock();
    return rc;
}

int lull_no_gc_region_end(void)
{
    if (!lull_is_initialised())
        return -EPERM;
    lull_gc_lock();
    int rc = -EINVAL;
    if (control_g.active) {
        rc = control_g.overrun ? 1 : 0;
        if (control_g.overrun)
            add1(&control_g.regions_overrun);
        control_g.active = control_g.overrun = false;
        atomic_store_explicit(&control_g.blocking, false, memory_order_relaxed);
        atomic_store_explicit(&control_g.floor, 0, memory_order_relaxed);
        atomic_store_explicit(&control_g.nursery_closed, false, memory_order_relaxed);
    }
    lull_gc_unlock();
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The mode, a major started without waiting, memory pressure               */
/* ------------------------------------------------------------------------ */

int lull_set_mode(int mode)
{
    if (mode != LULL_MODE_AUTO && mode != LULL_MODE_MANUAL)
        return -EINVAL;
    atomic_store_explicit(&control_g.mode, mode, memory_order_relaxed);
    if (mode == LULL_MODE_AUTO)
        atomic_store_explicit(&control_g.nursery_closed, false, memory_order_relaxed);
    return 0;
}

int lull_collect_start(void)
{
    if (!lull_is_initialised())
        return -EPERM;
    lull_gc_lock();
    int rc = 1;
    if (!lull_marking()) {
        rc = 0;
        lull_collect_locked(lull_cfg.major == LULL_MAJOR_CONCURRENT ? LULL_COLLECT_MAJOR_START : LULL_GEN_MAJOR,
                            "explicit start");
    }
    lull_gc_unlock();
    return rc;
}

void lull_add_memory_pressure(size_t bytes)
{
    uint64_t old = get(&control_g.pressure), nv;
    do
        nv = old + bytes < old ? UINT64_MAX : old + bytes;
    while (!atomic_compare_exchange_weak_explicit(&control_g.pressure, &old, nv, memory_order_relaxed,
                                                  memory_order_relaxed));
}

void lull_remove_memory_pressure(size_t bytes)
{
    uint64_t old = get(&control_g.pressure), nv;
    do
        nv = old > bytes ? old - bytes : 0;
    while (!atomic_compare_exchange_weak_explicit(&control_g.pressure, &old, nv, memory_order_relaxed,
                                                  memory_order_relaxed));
    /* Growth counts from the lowest the pressure fell to since the last
     * major: buffers freed and new ones added count as new. */
    uint64_t base = get(&control_g.pressure_base);
    while (base > nv && !atomic_compare_exchange_weak_explicit(&control_g.pressure_base, &base, nv,
                                                               memory_order_relaxed, memory_order_relaxed))
        ;
}

int lull_major_due(void)
{
    if (!lull_is_initialised())
        return -EPERM;
    lull_gc_lock();
    int due = lull_policy_major_outlook();
    lull_gc_unlock();
    return due;
}

/* ------------------------------------------------------------------------ */
/* A step of collector work                                                 */
/* ------------------------------------------------------------------------ */

#define STEP_SWEEP_BATCH 4u

/* The running mark's work on this thread until `deadline` (gc lock held):
 * the background job stopped first (as a pause stops it) and started
 * again after, so that no pause and no worker meets the step. */
int lull_control_step_mark(uint64_t deadline)
{
    lull_workers_stop_background();
    lull_major_link_unlinked();
    unsigned m = lull_mark_step(deadline);
    if (!lull_mark_resume_background())
        lull_major_resume_sweep();
    return ((m & LULL_MARK_STEP_MARKED) ? LULL_STEP_MARK : 0) | ((m & LULL_MARK_STEP_PRECLEANED) ? LULL_STEP_PRECLEAN : 0);
}

/* The last major's lazy sweep until `deadline` (gc lock held; the
 * background sweep takes the lock per batch, so it waits meanwhile). */
static int step_sweep(uint64_t deadline)
{
    uint64_t swept = 0;
    bool more = true;
    while (more && lull_now_ns() < deadline)
        more = lull_major_sweep_some(STEP_SWEEP_BATCH, &swept);
    return swept ? LULL_STEP_SWEEP : 0;
}

/* A pause that fits what is left (never inside a no-GC region). */
static int step_pause(uint64_t deadline)
{
    uint64_t now = lull_now_ns();
    if (now >= deadline || lull_control_region_blocking())
        return 0;
    const char *reason = "";
    int what = lull_policy_step_pause(deadline - now, &reason);
    if (what < 0)
        return 0;
    uint64_t majors = lull_collect_count();
    bool marking = lull_marking();
    lull_collect_locked(what, reason);
    int did = LULL_STEP_PAUSE;
    if (what == LULL_COLLECT_MAJOR_START && !marking && lull_marking())
        did |= LULL_STEP_STARTED;
    if ((what == LULL_COLLECT_MAJOR_FINISH || what == LULL_GEN_MAJOR) && lull_collect_count() > majors)
        did |= LULL_STEP_FINISHED;
    return did;
}

int lull_collect_step(uint64_t budget_ns)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (!budget_ns)
        return -EINVAL;
    uint64_t deadline = lull_now_ns() + budget_ns;
    lull_gc_lock();
    int did = step_pause(deadline);        /* a done mark's end, a due major's start */
    if (lull_marking() && !lull_mark_ready() && lull_now_ns() < deadline) {
        did |= lull_control_step_mark(deadline);
        lull_policy_note_step(budget_ns);
        if (lull_mark_ready() && !(did & LULL_STEP_FINISHED))
            did |= step_pause(deadline);   /* the mark this step ended, if its pause fits */
    }
    if (!lull_marking() && lull_major_sweep_pending())
        did |= step_sweep(deadline);
    lull_gc_unlock();
    return did;
}
