/* collect.c — when to collect, and what a collection does, in order.
 *
 * Every pause is run with the world stopped by the thread that asked for
 * it (an allocation, lull_collect, or the debug option collect-every):
 *
 *   minor   (nursery.c) pin what conservative roots point at, copy every
 *           other live nursery object into the major heap, update every
 *           reference to it; the nursery's free space becomes fragments.
 *   major   synchronous (major=stw, a mark the allowance ran out on, a
 *           failed allocation): a minor, then a full parallel mark of the
 *           major heap (the nursery's pinned survivors included); large
 *           objects swept, small-object blocks flagged for the lazy sweep
 *           (major.c).
 *   concurrent major, in two pauses (mark.h): the initial pause (a minor,
 *           the roots greyed; the workers mark once the world runs) and the
 *           final pause (a minor, the roots and dirty cards rescanned, a
 *           parallel drain, then the same sweep). Minors run between them.
 *
 * When to collect, and how big the heap is: policy.c. */
#include "gc/collect.h"
#include "gc/background.h"
#include "space/meter.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "gc/finalizers.h"
#include "gc/heapshot.h"
#include "trace/handles.h"
#include "space/heap.h"
#include "trace/mark.h"
#include "base/os.h"
#include "space/nursery.h"
#include "gc/policy.h"
#include "base/probes.h"
#include "base/timeline.h"
#include "trace/roots.h"
#include "gc/stats.h"
#include "base/stw.h"
#include "gc/threads.h"
#include "base/util.h"
#include "trace/verify.h"
#include "trace/workers.h"

/* The collection state: one instance, written with the gc lock held. */
static struct {
    uint64_t ncollections;
    lull_pause_hook pause_hook;
    void *pause_hook_data;
    uint64_t last_live;            /* live bytes the last major found (the timeline's counter) */
} collect_g;

/* lull_set_allow_synchronous_major's switch: read without the lock. */
static atomic_bool allow_sync_major = true;

void lull_set_pause_hook(lull_pause_hook hook, void *data)
{
    if (!lull_is_initialised())
        lull_fatal("lull_set_pause_hook", "lull is not initialised (call lull_init first)");
    lull_gc_lock();
    collect_g.pause_hook = hook;
    collect_g.pause_hook_data = data;
    lull_gc_unlock();
}

void lull_collect_init(void)
{
    collect_g.pause_hook = NULL;
    collect_g.pause_hook_data = NULL;
    lull_heapshot_init();
    collect_g.ncollections = 0;
    atomic_store_explicit(&allow_sync_major, lull_cfg.allow_synchronous_major, memory_order_relaxed);
    lull_policy_init();
}

uint64_t lull_collect_count(void)
{
    return collect_g.ncollections;
}

/* The collector's frames leave heap addresses on this thread's stack
 * (objects it copied, scanned, swept). The frames the program builds next
 * over that memory would hold them in uninitialised slots, and a later
 * conservative scan would keep those objects, and all they reach, alive.
 * Zero the memory below the caller's frame once the collection is done. */
#define CLEAR_STACK_BYTES (64u << 10)
__attribute__((noinline)) static void clear_stack_below(void)
{
    volatile char buf[CLEAR_STACK_BYTES];
    memset((char *)buf, 0, sizeof buf);
    __asm__ __volatile__("" : : "r"(buf) : "memory");
}

/* A concurrent mark's final pause that had to finish it (gc lock held):
 * the share of the objects it scanned that its background job scanned. */
static double background_share(void)
{
    uint64_t by_worker[LULL_MAX_WORKERS], background = 0, total, by_stopper;
    unsigned nw = lull_mark_background_work(by_worker, LULL_MAX_WORKERS);
    for (unsigned i = 0; i < nw; i++)
        background += by_worker[i];
    lull_mark_last_work(&total, &by_stopper);
    return total && background < total ? (double)background / (double)total : 1.0;
}

/* After a synchronous major's mark (handles.h): an object lives if it is
 * marked (the nursery's pinned survivors included), at its copy if the
 * mark evacuated it (mark.h). */
static uintptr_t major_fate(uintptr_t obj, void *ctx)
{
    (void)ctx;
    obj = lull_mark_forwarded(obj);
    return lull_is_marked(obj) ? obj : 0;
}

/* After a concurrent major's final pause: the same, but the nursery and the
 * young large objects were its roots, not marked (mark.h): they live, and
 * the next minor judges them. */
static uintptr_t final_fate(uintptr_t obj, void *ctx)
{
    (void)ctx;
    if (lull_in_nursery(obj) || lull_young_large_at(obj) == obj)
        return obj;
    return lull_is_marked(obj) ? obj : 0;
}

/* Before a mark, in its pause: what is still unswept (sweep_before_mark
 * did it already, unless the pause is the second of an allocation's
 * finish-then-major). */
static void finish_sweep_in_pause(void)
{
    if (!lull_major_sweep_pending())
        return;
    uint64_t t = lull_now_ns();
    lull_major_sweep_all();
    LULL_TL(LULL_TL_SWEEP_REST, t, lull_now_ns() - t, 0, 0, 0, NULL);
}

/* One pause (lull_collect_locked). `self` is the calling thread (NULL if
 * it is not attached), its roots already recorded. */
static __attribute__((noinline)) void collect_pause(int what, const char *reason, lull_thread *self)
{
    bool marking = lull_marking();
    if ((what == LULL_COLLECT_MAJOR_START && marking) || (what == LULL_COLLECT_MAJOR_FINISH && !marking))
        what = LULL_GEN_NURSERY;                /* nothing to start or finish: a minor */
    bool start = what == LULL_COLLECT_MAJOR_START, finish = what == LULL_COLLECT_MAJOR_FINISH;
    bool ends_major = what == LULL_GEN_MAJOR || finish;
    /* Synchronous: the whole mark with the world stopped, or the rest of a
     * concurrent one whose background work had not finished. */
    bool synchronous = what == LULL_GEN_MAJOR || (finish && !lull_mark_background_done());
    uint64_t t0 = lull_now_ns();

    /* The background job (the concurrent mark, or the sweep) stops: its
     * workers take part in the pause instead. */
    lull_workers_stop_background();
    uint64_t stop_bg_ns = lull_now_ns() - t0;
    lull_major_link_unlinked();     /* what the stopped job prepared and could not link (heap.h) */

    /* Stop: afterwards every other attached thread sits in the suspend
     * handler with its live stack range recorded, outside any critical
     * region. */
    LULL_PROBE2(collection_begin, ends_major || start ? LULL_GEN_MAJOR : LULL_GEN_NURSERY, reason);
    if (start)
        LULL_PROBE1(initial_pause_begin, lull_mark_cycle() + 1);
    if (finish) {
        LULL_PROBE2(concurrent_mark_end, lull_mark_cycle(), lull_mark_background_done());
        LULL_PROBE1(final_pause_begin, lull_mark_cycle());
    }
    LULL_PROBE1(world_stop_begin, lull_threads_count());
    uint64_t t_stop = lull_now_ns();
    lull_stw_stop(self);
    LULL_PROBE1(world_stopped, lull_threads_count());
    uint64_t t_stopped = lull_now_ns();
    LULL_TL(LULL_TL_STOP_WORLD, t_stop, t_stopped - t_stop, lull_threads_count(), 0, 0, NULL);

    /* Minor: empty the nursery into the major heap. Not in a concurrent
     * major's pauses: the nursery is ignored by its mark and a root of its
     * final pause (mark.h), and a minor would make each as long as one. */
    uint64_t handed = lull_nursery_handed();
    uint64_t promoted = 0;
    bool minor = !start && !finish;
    if (minor) {
        promoted = lull_nursery_collect(!ends_major);
        lull_policy_note_promoted(promoted);     /* the blocks kept ready for the next (major.c) */
        lull_policy_note_aging(!ends_major, handed, promoted);
        LULL_PROBE1(minor_end, promoted);
    } else {
        lull_nursery_sync_tlabs();
    }
    uint64_t t_minor = lull_now_ns();
    if (minor)
        LULL_TL(LULL_TL_MINOR, t_stopped, t_minor - t_stopped, promoted, 0, 0, NULL);

    uint64_t live = 0;
    if (start) {
        /* Initial pause of a concurrent major: grey the roots; the
         * workers mark once the world runs again. */
        lull_policy_note_mark_start();
        finish_sweep_in_pause();
        lull_major_assert_all_swept();
        lull_mark_begin_concurrent();
        LULL_PROBE1(concurrent_mark_begin, lull_mark_cycle());
    } else if (ends_major) {
        /* Retire the allocation caches: the slots they still hold are free
         * (word 0 is 0) and the sweep re-lists them. */
        uint64_t unused = 0;
        for (lull_thread *t = lull_threads_first(); t; t = t->next)
            unused += lull_major_drop_caches(&t->caches);
        lull_meter_unused(unused);

        lull_tracer tr = { .id = 0 };
        if (finish) {
            /* Final pause: roots, the union table's cards and what the
             * background left, drained by every worker. */
            lull_mark_finish(&tr);
        } else {
            /* Mark: every mark bit is clear before (checked in checked
             * builds); afterwards exactly the objects reachable from
             * stacks, registers and registered roots are marked, the
             * nursery's pinned survivors included. Sparse size classes
             * are evacuated on the way (mark.h): the conservative roots
             * go first, so that what they pin is marked in place before
             * anything is copied; the precise roots are updated. */
            finish_sweep_in_pause();
            lull_major_assert_all_swept();
            lull_mark_assert_all_clear();
            lull_roots_scan_threads(lull_mark_conservative, &tr);
            lull_roots_scan(lull_mark_conservative, NULL, &tr);
            lull_mark_begin_evacuation();
            lull_roots_scan(NULL, lull_mark_precise_slot, &tr);
            if (lull_cfg.verify_parallel)
                lull_mark_verify_parallel_save();
            lull_mark_drain(&tr);
            if (lull_cfg.verify_parallel && lull_workers_count())
                lull_mark_verify_parallel_check(&tr);
        }
        /* Weak references and finalizers: WEAK handles to unmarked objects
         * are cleared; unmarked finalizable objects are marked, with all
         * they reach, and queued; then WEAK_TRACK handles to what is still
         * unmarked are cleared (finalize.h). */
        lull_fate_fn fate = finish ? final_fate : major_fate;
        lull_handles_weak_pass(LULL_HANDLE_WEAK, fate, NULL);
        if (lull_finalize_collect(fate, lull_mark_precise_slot, &tr, false))
            lull_mark_drain_more(&tr);
        lull_handles_weak_pass(LULL_HANDLE_WEAK_TRACK, fate, NULL);
        lull_mark_end_major();
        lull_tracer_release(&tr);
        lull_mark_end_evacuation();
        LULL_PROBE1(mark_end, lull_mark_overflows());
        uint64_t t_marked = lull_now_ns();
        LULL_TL(LULL_TL_MARK, t_minor, t_marked - t_minor, lull_mark_overflows(), 0, 0, NULL);
        if (lull_cfg.verify)
            lull_verify_marked(finish);
        lull_heapshot_after_mark(&tr, finish);

        /* Sweep: large objects and the nursery's survivors now; the
         * small-object blocks lazily (heap.h), their live bytes counted
         * from the mark bits. Empty blocks kept long enough go back to the
         * OS. */
        LULL_PROBE1(sweep_begin, collect_g.ncollections + 1);
        live = lull_major_sweep_begin() + lull_los_sweep() + lull_nursery_after_major(!finish) +
               (finish ? lull_mark_final_young_bytes() : 0);
        if (lull_cfg.poison)
            lull_major_sweep_all();   /* freed memory reads as poison at once, not when swept */
        lull_major_release_empty(LULL_EMPTY_BLOCK_MAX_AGE);
        LULL_PROBE1(sweep_end, live);
        LULL_TL(LULL_TL_SWEEP, t_marked, lull_now_ns() - t_marked, live, 0, 0, NULL);

        lull_policy_after_major(live, finish && synchronous ? background_share() : 1.0);
        collect_g.last_live = live;
    }
    if (!start)
        collect_g.ncollections++;

    if (minor)
        lull_policy_set_card_budgets(promoted + lull_nursery_aged(), lull_nursery_cards_scanned(),
                                     lull_nursery_trace_ns());
    LULL_PROBE1(restart_begin, collect_g.ncollections);
    uint64_t t_restart = lull_now_ns();
    lull_stw_restart(self);
    LULL_PROBE1(restart_end, collect_g.ncollections);
    if (start)
        LULL_PROBE1(initial_pause_end, lull_mark_cycle());
    if (finish)
        LULL_PROBE1(final_pause_end, lull_mark_cycle());
    if (!lull_mark_resume_background())
        lull_major_resume_sweep();
    uint64_t pause = lull_now_ns() - t0;
    if (ends_major)
        lull_policy_after_major_pause(finish, synchronous, pause, live);
    LULL_TL(LULL_TL_RESTART, t_restart, t0 + pause - t_restart, 0, 0, 0, NULL);
    /* The pause as lull_stats and the pause hook see it: same start, same
     * duration. */
    LULL_TL(start ? LULL_TL_PAUSE_INITIAL : finish ? LULL_TL_PAUSE_FINAL
                  : ends_major ? LULL_TL_PAUSE_MAJOR : LULL_TL_PAUSE_MINOR,
            t0, pause, collect_g.ncollections + (start ? 1 : 0), promoted, live, reason);
    LULL_TL(LULL_TL_COUNTERS, t0 + pause, 0, lull_heap_bytes_held(), lull_nursery_size(), collect_g.last_live, NULL);
    LULL_PROBE2(pause_end, collect_g.ncollections, pause);
    LULL_PROBE2(collection_end, ends_major || start ? LULL_GEN_MAJOR : LULL_GEN_NURSERY, reason);

    /* The nursery's size for the next minor (policy.c): only a pause that
     * ran a minor measures one, and only a plain minor's pause measures a
     * minor's whole pause. */
    size_t nursery_before = lull_nursery_size();
    bool major_pause = start || ends_major;
    if (minor)
        lull_policy_after_minor(handed, lull_nursery_trace_ns(), major_pause ? 0 : pause);

    /* The world runs again; this thread still holds the gc lock, so the
     * runs freed by the sweep can be given back to the OS before anyone
     * can allocate from them. */
    lull_space_release_pending();
    if (lull_finalize_pending_wake())
        lull_finalize_wake();
    if (ends_major)
        lull_heapshot_after_pause(collect_g.ncollections, synchronous);
    clear_stack_below();

    enum lull_pause_kind kind = major_pause ? LULL_PAUSE_MAJOR : LULL_PAUSE_MINOR;
    lull_stats_record_pause(kind, pause);
    if (!start)
        lull_stats_record_collection(kind, synchronous, live, promoted, minor ? lull_nursery_aged() : 0);
    unsigned evac_classes = 0;
    uint32_t evac_blocks = 0;
    uint64_t evac_objects = 0, evac_bytes = 0;
    if (ends_major) {
        lull_mark_evacuated(&evac_classes, &evac_blocks, &evac_objects, &evac_bytes);
        if (evac_objects)
            lull_stats_note_evacuated(evac_objects, evac_bytes);
    }
    if (collect_g.pause_hook) {
        lull_pause_event ev = { .generation = major_pause ? LULL_GEN_MAJOR : LULL_GEN_NURSERY,
                                .collection = collect_g.ncollections + (start ? 1 : 0),
                                .start_ns = t0, .duration_ns = pause,
                                .phase = start ? LULL_PHASE_INITIAL : finish ? LULL_PHASE_FINAL : LULL_PHASE_WHOLE };
        collect_g.pause_hook(&ev, collect_g.pause_hook_data);
    }
    if (lull_cfg.log) {
        if (ends_major) {
            uint64_t marked, by_stopper, precleaned = 0, final_cards = 0, final_young = 0;
            lull_mark_last_work(&marked, &by_stopper);
            if (finish)
                lull_mark_concurrent_work(&precleaned, &final_cards, &final_young);
            char conc[768] = "", evac[128] = "";
            if (evac_classes)
                snprintf(evac, sizeof evac, ", evacuated %llu objects (%.1f KiB) from %u blocks of %u size classes",
                         (unsigned long long)evac_objects, (double)evac_bytes / 1024.0, (unsigned)evac_blocks,
                         evac_classes);
            if (finish) {
                /* Each worker's share of the background mark. */
                uint64_t by_worker[LULL_MAX_WORKERS], background = 0;
                unsigned nw = lull_mark_background_work(by_worker, LULL_MAX_WORKERS);
                char shares[512] = "";
                size_t len = 0;
                for (unsigned i = 0; i < nw && len < sizeof shares; i++) {
                    background += by_worker[i];
                    len += (size_t)snprintf(shares + len, sizeof shares - len, "%s%llu", i ? " " : "",
                                            (unsigned long long)by_worker[i]);
                }
                snprintf(conc, sizeof conc, ", concurrent mark %s: %llu objects scanned while the world ran (by "
                         "lull-mark/1..%u: %s), %llu cards precleaned, %llu rescanned in the pause, %llu nursery "
                         "and young large objects its roots",
                         synchronous ? "finished early" : "done", (unsigned long long)background, nw, shares,
                         (unsigned long long)precleaned, (unsigned long long)final_cards,
                         (unsigned long long)final_young);
            }
            uint64_t trigger, allowance;
            lull_policy_pacing(&trigger, &allowance);
            fprintf(stderr, "lull: collection %llu (major, %s): pause %.3f ms, promoted %.1f KiB (%.1f KiB by "
                    "workers), live %.1f MiB, heap %.1f MiB, scanned %llu objects (%llu by workers)%s%s; the "
                    "next starts after %.1f MiB of a %.1f MiB allowance%s\n",
                    (unsigned long long)collect_g.ncollections, reason, (double)pause / 1e6,
                    (double)promoted / 1024.0, minor ? (double)lull_nursery_promoted_by_workers() / 1024.0 : 0.0,
                    (double)live / 1048576.0,
                    (double)lull_heap_bytes_held() / 1048576.0, (unsigned long long)marked,
                    (unsigned long long)(marked - by_stopper),
                    evac, conc, (double)trigger / 1048576.0, (double)allowance / 1048576.0,
                    lull_mark_overflows() ? " (mark stack overflowed)" : "");
        } else if (start) {
            fprintf(stderr, "lull: collection %llu (major start, %s): pause %.3f ms (background job stopped in "
                    "%.3f ms), concurrent mark begins, %.1f KiB of young large objects left to the markers\n",
                    (unsigned long long)collect_g.ncollections + 1, reason, (double)pause / 1e6,
                    (double)stop_bg_ns / 1e6, (double)lull_mark_deferred_young_bytes() / 1024.0);
        } else
            fprintf(stderr, "lull: collection %llu (minor, %s): pause %.3f ms, promoted %.1f KiB (%.1f KiB by "
                    "workers), aged %.1f KiB%s, of %.1f KiB handed out, %.1f KiB of young large objects freed, %llu dirty cards (%llu holding young references), copying %.3f ms, "
                    "background job stopped in %.3f ms; nursery %zu KiB -> %zu KiB, next predicted %.3f ms; a card %.1f ns, "
                    "%u cards per thread until a minor%s\n",
                    (unsigned long long)collect_g.ncollections, reason, (double)pause / 1e6, (double)promoted / 1024.0,
                    (double)lull_nursery_promoted_by_workers() / 1024.0, (double)lull_nursery_aged() / 1024.0,
                    lull_cfg.promotion_age == LULL_PROMOTION_AGE_AUTO && !lull_policy_aging()
                        ? " (the next minor ages nothing: aging has not halved what minors promote)" : "",
                    (double)handed / 1024.0,
                    (double)lull_nursery_large_freed() / 1024.0, (unsigned long long)lull_nursery_cards_scanned(),
                    (unsigned long long)lull_nursery_cards_young(), (double)lull_nursery_trace_ns() / 1e6,
                    (double)stop_bg_ns / 1e6, nursery_before >> 10,
                    lull_nursery_size() >> 10, lull_policy_predicted_minor_ns() / 1e6, lull_policy_card_ns(),
                    lull_policy_card_budget(), marking ? " (a concurrent mark runs)" : "");
    }
}

/* A mark starts on a swept heap. What the last cycle's lazy sweep has not
 * reached yet is swept here, gc lock held, with the world running (as the
 * background sweep does), not in the pause: in the game loop's traces this
 * was most of a 32 ms initial pause (README, the timeline). */
static void sweep_before_mark(void)
{
    if (lull_marking() || !lull_major_sweep_pending())
        return;
    uint64_t t = lull_now_ns();
    lull_major_sweep_all();
    LULL_TL(LULL_TL_SWEEP_REST, t, lull_now_ns() - t, 0, 0, 0, NULL);
}

void lull_collect_locked(int what, const char *reason)
{
    /* This thread's roots are its registers and stack as they are here, on
     * entry, like a stopped thread's at its suspend point: `entry` holds the
     * registers, and the scan starts at it. The collector's own frames
     * below are not roots: they hold addresses from the work of this very
     * pause (the minor before a major copies and scans objects, then the
     * frames of the root scan reuse that memory), and a word left in one
     * kept a dead object and all it reaches alive. Nor is the frame of
     * collect_pause: its locals not yet written when the roots are scanned
     * (the log line's buffer, the pause event) held words that code run
     * earlier on this stack (a lazy sweep) left there, and under
     * ThreadSanitizer those kept a dropped 32 MB list alive (bad_input).
     * This frame holds `entry` and nothing else. */
    lull_thread *self = lull_thread_self;
    ucontext_t entry;
    if (self) {
        lull_capture_registers(&entry);
        lull_stw_record_roots(self, (uintptr_t)&entry);
    }
    if (what == LULL_GEN_MAJOR && lull_marking()) {
        /* A synchronous major while a concurrent mark runs (an allocation
         * that failed): end that mark first. What it kept (everything live
         * when it began, everything allocated since) may be what fills the
         * heap, so a whole synchronous major follows. */
        collect_pause(LULL_COLLECT_MAJOR_FINISH, reason, self);
    }
    if (what == LULL_COLLECT_MAJOR_START || what == LULL_GEN_MAJOR)
        sweep_before_mark();
    collect_pause(what, reason, self);
    __asm__ __volatile__("" : : "r"(&entry) : "memory");   /* `entry` lives until here */
    lull_clear_scratch_registers();   /* the collector's addresses out of this thread's registers (util.h) */
}

/* Wait, without the gc lock, until the background job of mark cycle
 * `cycle` is done; false: another thread finished that mark meanwhile. */
static bool wait_for_mark(uint64_t cycle)
{
    while (lull_marking() && lull_mark_cycle() == cycle && !lull_mark_ready()) {
        lull_gc_unlock();
        usleep(200);
        lull_gc_lock();
    }
    return lull_marking() && lull_mark_cycle() == cycle;
}

void lull_collect(int generation)
{
    if (!lull_is_initialised())
        lull_fatal("lull_collect", "lull is not initialised (call lull_init first)");
    if (generation != LULL_GEN_NURSERY && generation != LULL_GEN_MAJOR)
        lull_fatal("lull_collect", "unknown generation %d (LULL_GEN_NURSERY or LULL_GEN_MAJOR)", generation);
    lull_gc_lock();
    if (generation == LULL_GEN_MAJOR && lull_policy_prefers_evacuation()) {
        /* Synchronous majors are allowed and the heap is fragmented: one
         * that evacuates (API.md: "unless synchronous majors are allowed and
         * the collector judges one better"). */
        lull_collect_locked(LULL_GEN_MAJOR, "explicit, heap fragmented");
    } else if (generation == LULL_GEN_MAJOR && lull_cfg.major == LULL_MAJOR_CONCURRENT) {
        /* A complete concurrent major from a start after this call: let the
         * one that runs (it began before) end, then run one whole. A minor
         * first: the final pause keeps everything in the nursery (mark.h),
         * and what the program dropped there before this call must not
         * keep old objects alive through it. */
        if (lull_marking() && wait_for_mark(lull_mark_cycle()))
            lull_collect_locked(LULL_COLLECT_MAJOR_FINISH, "explicit");
        lull_collect_locked(LULL_GEN_NURSERY, "explicit");
        lull_collect_locked(LULL_COLLECT_MAJOR_START, "explicit");
        if (wait_for_mark(lull_mark_cycle()))
            lull_collect_locked(LULL_COLLECT_MAJOR_FINISH, "explicit");
    } else {
        lull_collect_locked(generation, "explicit");
    }
    lull_gc_unlock();
}

int lull_idle(uint64_t ns)
{
    if (!lull_is_initialised())
        lull_fatal("lull_idle", "lull is not initialised (call lull_init first)");
    if (ns == 0)
        return -EINVAL;
    lull_gc_lock();
    uint64_t allocated = lull_threads_allocated_bytes_locked();
    /* A major's pause first (a done mark's final pause, or an evacuating
     * major); then the minor rule, in what is left of the time. The clock
     * is read only then: a call with nothing to do costs no more. */
    const char *reason = "";
    uint64_t left = ns;
    int major = lull_policy_idle_major(ns, &reason);
    if (major >= 0) {
        uint64_t t0 = lull_now_ns();
        lull_collect_locked(major, reason);
        uint64_t spent = lull_now_ns() - t0;
        left = spent < ns ? ns - spent : 0;
    }
    bool minor = lull_policy_idle_minor(ns, left, allocated);
    if (minor)
        lull_collect_locked(LULL_GEN_NURSERY, "idle time");
    lull_gc_unlock();
    return major >= 0 || minor ? 1 : 0;
}

int lull_set_pause_target(uint64_t ns)
{
    if (!lull_is_initialised())
        lull_fatal("lull_set_pause_target", "lull is not initialised (call lull_init first)");
    if (ns < LULL_PAUSE_TARGET_MIN_NS || ns > LULL_PAUSE_TARGET_MAX_NS)
        return -EINVAL;
    lull_gc_lock();
    lull_policy_set_pause_target(ns);
    lull_gc_unlock();
    return 0;
}

bool lull_synchronous_major_allowed(void)
{
    return atomic_load_explicit(&allow_sync_major, memory_order_relaxed);
}

bool lull_set_allow_synchronous_major(bool allow)
{
    if (!lull_is_initialised() || lull_cfg.major != LULL_MAJOR_CONCURRENT)
        return false;     /* no concurrent majors (major=stw, or no lull): cannot be honoured */
    atomic_store_explicit(&allow_sync_major, allow, memory_order_relaxed);
    return true;
}
