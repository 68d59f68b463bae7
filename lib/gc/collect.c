/* collect.c — the pauses: each kind a script of the collector's phases in
 * order, and lull_collect_locked, which runs the one asked for.
 *
 * Owns: the collection count, the pause hook, the four pause scripts
 * (pause_minor, pause_major, pause_initial, pause_final) and what they
 * share (pause_begin, pause_end), and the public entry points that ask
 * for a collection (lull_collect, lull_idle).
 * Callers: allocation (alloc.c), through policy.c's decisions, the
 * program (lull_collect, lull_idle, lull_heap_shot), the debug option
 * collect-every. Every pause runs on the thread that asked for it, with
 * the gc lock held and the world stopped between pause_begin and
 * pause_end; the listeners of its record (base/events.h) run after it,
 * world running, lock still held.
 * Invariants: a pause fills one lull_pause_record and steps it in order;
 * no script formats a log line or fires a probe itself (the record's
 * steps and listeners do). A concurrent major is its initial pause, the
 * background mark, then its final pause; minors run between them and
 * none runs inside either (the nursery is the final pause's root,
 * trace/mark.h).
 *
 * When to collect, and how big the heap is: policy.c. */
#include "gc/collect.h"
#include "gc/background.h"
#include "gc/control.h"
#include "space/meter.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/events.h"
#include "base/stw.h"
#include "base/timeline.h"
#include "base/util.h"
#include "gc/finalizers.h"
#include "gc/heapshot.h"
#include "gc/policy.h"
#include "gc/pacer.h"
#include "gc/stats.h"
#include "gc/threads.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "trace/handles.h"
#include "trace/mark.h"
#include "trace/roots.h"
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

/* The pause record's listener for the program's pause hook. */
static void pause_hook_listener(const lull_pause_record *r, void *data)
{
    (void)data;
    if (!collect_g.pause_hook)
        return;
    lull_pause_event ev = { .generation = r->kind == LULL_PAUSE_MINOR ? LULL_GEN_NURSERY : LULL_GEN_MAJOR,
                            .collection = r->collection, .start_ns = r->t0, .duration_ns = r->pause_ns,
                            .phase = r->kind == LULL_PAUSE_INITIAL ? LULL_PHASE_INITIAL
                                     : r->kind == LULL_PAUSE_FINAL ? LULL_PHASE_FINAL : LULL_PHASE_WHOLE };
    collect_g.pause_hook(&ev, collect_g.pause_hook_data);
}

/* lull_init. The listeners of every pause, in the order they are told:
 * the trace file, the statistics, the program's hook, the log. */
void lull_collect_init(void)
{
    collect_g.pause_hook = NULL;
    collect_g.pause_hook_data = NULL;
    lull_heapshot_init();
    collect_g.ncollections = 0;
    atomic_store_explicit(&allow_sync_major, lull_cfg.allow_synchronous_major, memory_order_relaxed);
    lull_control_init();
    lull_policy_init();
    lull_events_reset();
    lull_events_listen(lull_timeline_pause_listener, NULL);
    lull_events_listen(lull_stats_pause_listener, NULL);
    lull_events_listen(pause_hook_listener, NULL);
    lull_events_listen(lull_events_log_listener, NULL);
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

/* ------------------------------------------------------------------------ */
/* The phases                                                               */
/* ------------------------------------------------------------------------ */

/* A concurrent mark's final pause that had to finish it: the share of the
 * objects it scanned that its background job scanned. */
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

/* Stop the background job (its workers take part in the pause instead),
 * then the world: afterwards every other attached thread sits in the
 * suspend handler with its live stack range recorded, outside any
 * critical region. `self`: the calling thread, NULL if not attached. */
static void pause_begin(lull_pause_record *r, enum lull_pause_kind kind, const char *reason, lull_thread *self)
{
    lull_pause_open(r, kind, reason);
    r->marking = lull_marking();
    /* Synchronous: the whole mark stopped, or the rest of a concurrent one
     * whose background work had not finished when the pause was asked. */
    r->synchronous = kind == LULL_PAUSE_MAJOR || (kind == LULL_PAUSE_FINAL && !lull_mark_background_done());
    r->collection = collect_g.ncollections + 1;
    lull_workers_stop_background();
    r->stop_bg_ns = lull_now_ns() - r->t0;
    r->stop_bg_cpu_ns = lull_workers_last_stop_cpu_ns();
    lull_major_link_unlinked();     /* what the stopped job prepared and could not link (heap.h) */
    r->cycle = lull_mark_cycle() + (kind == LULL_PAUSE_INITIAL ? 1 : 0);
    if (kind == LULL_PAUSE_FINAL)
        r->mark_done = lull_mark_background_done();
    lull_registry_lock();           /* until the world restarts: no attach in between */
    r->threads = lull_threads_count();
    lull_threads_alloc_counts_locked(&r->alloc_outside_tlab, &r->alloc_locked);
    lull_pause_step(r, LULL_STEP_STOP);
    lull_stw_stop(self);
    lull_pause_step(r, LULL_STEP_STOPPED);
}

/* What the listeners read that the pause did not record as it ran: the
 * nursery's, the mark's and the policy's figures once the pause is over. */
static void pause_report(lull_pause_record *r)
{
    r->heap_after = lull_heap_bytes_held();
    r->free_resident = lull_space_dirty_bytes();
    lull_space_release_counts(&r->released, &r->release_calls);
    r->nursery_after = lull_nursery_size();
    if (r->minor) {
        r->aged = lull_nursery_aged();
        r->promoted_by_workers = lull_nursery_promoted_by_workers();
        r->large_freed = lull_nursery_large_freed();
        r->cards_scanned = lull_nursery_cards_scanned();
        r->cards_young = lull_nursery_cards_young();
        r->trace_ns = lull_nursery_trace_ns();
        r->aging_paused = lull_cfg.promotion_age == LULL_PROMOTION_AGE_AUTO && !lull_policy_aging();
        r->predicted_minor_ns = lull_policy_predicted_minor_ns();
        r->minor_margin = lull_policy_minor_margin();
        r->card_ns = lull_policy_card_ns();
        r->card_budget = lull_policy_card_budget();
        r->card_grant = lull_policy_card_grant();
    }
    if (r->kind == LULL_PAUSE_MAJOR || r->kind == LULL_PAUSE_FINAL) {
        lull_mark_evacuated(&r->evac_classes, &r->evac_blocks, &r->evac_objects, &r->evac_bytes);
        lull_mark_last_work(&r->marked, &r->marked_by_stopper);
        lull_policy_pacing(&r->trigger, &r->allowance);
        uint64_t waits, waited_ns;
        lull_mark_paced(&waits, &waited_ns);
        int n = lull_pacer_describe(r->pacer, sizeof r->pacer);
        if (n > 0 && (size_t)n < sizeof r->pacer)
            snprintf(r->pacer + n, sizeof r->pacer - (size_t)n, ", %llu paced waits (%.1f ms) so far",
                     (unsigned long long)waits, (double)waited_ns / 1e6);
        r->overflowed = lull_mark_overflows() != 0;
    }
    if (r->kind == LULL_PAUSE_FINAL) {
        lull_mark_concurrent_work(&r->precleaned, &r->rescanned_cards, &r->final_young);
        r->mark_workers = lull_mark_background_work(r->by_worker, LULL_MAX_WORKERS);
    }
    if (r->kind == LULL_PAUSE_INITIAL) {
        r->deferred_young = lull_mark_deferred_young_bytes();
        r->deferred_roots = lull_mark_deferred_roots();
    }
}

/* Restart the world and the background job; then, world running and the
 * gc lock still held, what waits for the world (the policy's measures of
 * the pause, freed runs back to the block space (the memory thread returns
 * them to the OS later),
 * the finalizer thread, heap-shot=FILE) and the record's listeners. */
static void pause_end(lull_pause_record *r, lull_thread *self)
{
    bool ends_major = r->kind == LULL_PAUSE_MAJOR || r->kind == LULL_PAUSE_FINAL;
    if (r->kind != LULL_PAUSE_INITIAL)
        collect_g.ncollections++;
    r->completed = collect_g.ncollections;
    if (r->minor)
        lull_policy_set_card_budgets(r->promoted + lull_nursery_aged(), lull_nursery_cards_scanned(),
                                     lull_nursery_trace_ns());
    /* The background job (the mark, or the sweep) is started here; its
     * threads are woken at the gc lock's release (workers.h), not while
     * this thread still has the world to restart and the lock to give. */
    if (!lull_mark_resume_background())
        lull_major_resume_sweep();
    lull_pause_step(r, LULL_STEP_RESTART);
    lull_stw_restart(self);
    lull_registry_unlock();
    lull_threads_finish_parked();
    lull_pause_step(r, LULL_STEP_RESTARTED);
    lull_pause_step(r, LULL_STEP_END);
    if (ends_major)
        lull_policy_after_major_pause(r->kind == LULL_PAUSE_FINAL, r->synchronous, r->pause_ns, r->live);
    r->heap_at_end = lull_heap_bytes_held();
    r->nursery_before = lull_nursery_size();
    r->last_live = collect_g.last_live;
    r->heap_goal = lull_pacer_goal();
    r->memory_limit = lull_pacer_memory_limit();
    /* The nursery's size for the next minor: only a pause that ran a minor
     * measures one, and only a minor's own pause measures a minor's pause. */
    if (r->minor)
        lull_policy_after_minor(r->handed, lull_nursery_trace_ns(), r->kind == LULL_PAUSE_MINOR ? r->pause_ns : 0,
                                r->stop_bg_ns);
    lull_space_release_pending();
    lull_memory_kick();
    if (lull_finalize_pending_wake())
        lull_finalize_wake();
    if (ends_major)
        lull_heapshot_after_pause(r->completed, r->synchronous);
    pause_report(r);
    lull_pause_emit(r);
}

/* A minor: pin what conservative roots point at, copy every other live
 * nursery object out (into the major heap, or within the nursery when it
 * ages), update every reference to it (space/nursery.h). may_age: false
 * in a major's pause, which promotes everything so that its mark sees
 * one heap. */
static void minor_in_pause(lull_pause_record *r, bool may_age)
{
    r->minor = true;
    r->handed = lull_nursery_handed();
    r->promoted = lull_nursery_collect(may_age);
    lull_policy_note_promoted(r->promoted, r->handed);     /* the blocks kept ready for the next (major.c) */
    lull_policy_note_aging(may_age, r->handed, r->promoted);
    lull_pause_step(r, LULL_STEP_NURSERY);
}

/* A concurrent major's pauses run no minor (each would be as long as
 * one): the nursery is ignored by the mark and a root of the final pause
 * (mark.h). The threads' TLABs are only synced. */
static void nursery_kept(lull_pause_record *r)
{
    lull_nursery_sync_tlabs();
    lull_pause_step(r, LULL_STEP_NURSERY);
}

/* Before a mark, in its pause: the last cycle's lazy sweep, if not done
 * yet (sweep_before_mark does it before the pause, unless the pause is
 * the second of an allocation's finish-then-major). */
static void finish_sweep_in_pause(lull_pause_record *r)
{
    if (!lull_major_sweep_pending())
        return;
    r->sweep_rest_t = lull_now_ns();
    lull_major_sweep_all();
    r->sweep_rest_ns = lull_now_ns() - r->sweep_rest_t;
}

/* Before a major's mark: retire the threads' allocation caches. The slots
 * they still hold are free (word 0 is 0) and the sweep re-lists them. The
 * large-object reserves go back to the block space (los.c). */
static void retire_caches(void)
{
    uint64_t unused = 0;
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        unused += lull_major_drop_caches(&t->caches);
        lull_los_reserve_return(&t->los, true);
    }
    lull_meter_unused(unused);
}

/* A synchronous major's mark. Before, every mark bit is clear and the
 * heap swept; after, exactly the objects reachable from stacks, registers
 * and registered roots are marked, the nursery's pinned survivors
 * included. Sparse size classes are evacuated on the way (mark.h): the
 * conservative roots go first, so that what they pin is marked in place
 * before anything is copied; the precise roots are then updated. */
static void mark_from_roots(lull_pause_record *r, lull_tracer *tr)
{
    finish_sweep_in_pause(r);
    lull_major_assert_all_swept();
    lull_mark_assert_all_clear();
    lull_roots_scan_threads(lull_mark_conservative, tr);
    lull_roots_scan(lull_mark_conservative, NULL, tr);
    lull_mark_begin_evacuation();
    lull_roots_scan(NULL, lull_mark_precise_slot, tr);
    if (lull_cfg.verify_parallel)
        lull_mark_verify_parallel_save();
    lull_mark_drain(tr);
    if (lull_cfg.verify_parallel && lull_workers_count())
        lull_mark_verify_parallel_check(tr);
}

/* Weak references and finalizers: WEAK handles to what `fate` finds dead
 * are cleared; dead finalizable objects are marked, with all they reach,
 * and queued; then WEAK_TRACK handles to what is still dead are cleared
 * (trace/finalize.h). */
static void weak_and_finalizers(lull_tracer *tr, lull_fate_fn fate)
{
    lull_handles_weak_pass(LULL_HANDLE_WEAK, fate, NULL);
    if (lull_finalize_collect(fate, lull_mark_precise_slot, tr, false))
        lull_mark_drain_more(tr);
    lull_handles_weak_pass(LULL_HANDLE_WEAK_TRACK, fate, NULL);
}

/* The mark is complete: end it, check it (verify), count it (heap-shots). */
static void mark_end(lull_pause_record *r, lull_tracer *tr, bool final)
{
    lull_mark_end_major();
    lull_tracer_release(tr);
    lull_mark_end_evacuation();
    r->overflows = lull_mark_overflows();
    lull_pause_step(r, LULL_STEP_MARKED);
    if (lull_cfg.verify)
        lull_verify_marked(final);
    lull_heapshot_after_mark(tr, final);
}

/* Sweep: large objects and the nursery's survivors now; the small-object
 * blocks lazily (heap.h), their live bytes counted from the mark bits.
 * Empty blocks kept long enough go back to the OS. */
static void sweep_in_pause(lull_pause_record *r, bool final)
{
    lull_pause_step(r, LULL_STEP_SWEEP_BEGIN);
    r->live = lull_major_sweep_begin() + lull_los_sweep() + lull_nursery_after_major(!final) +
              (final ? lull_mark_final_young_bytes() : 0);
    if (lull_cfg.poison)
        lull_major_sweep_all();   /* freed memory reads as poison at once, not when swept */
    lull_major_release_empty(LULL_EMPTY_BLOCK_MAX_AGE);
    lull_pause_step(r, LULL_STEP_SWEPT);
    collect_g.last_live = r->live;
}

/* ------------------------------------------------------------------------ */
/* The pauses                                                               */
/* ------------------------------------------------------------------------ */

/* A minor: the nursery emptied. */
static void pause_minor(const char *reason, lull_thread *self)
{
    lull_pause_record r;
    pause_begin(&r, LULL_PAUSE_MINOR, reason, self);
    minor_in_pause(&r, true);
    pause_end(&r, self);
}

/* A synchronous major (major=stw, a mark the allowance ran out on, a
 * failed allocation, an evacuating major): a minor, the whole mark with
 * the world stopped, the sweep. */
static void pause_major(const char *reason, lull_thread *self)
{
    lull_pause_record r;
    lull_tracer tr = { .id = 0 };
    pause_begin(&r, LULL_PAUSE_MAJOR, reason, self);
    minor_in_pause(&r, false);
    retire_caches();
    mark_from_roots(&r, &tr);
    weak_and_finalizers(&tr, major_fate);
    mark_end(&r, &tr, false);
    sweep_in_pause(&r, false);
    lull_policy_after_major(r.live, 1.0);
    pause_end(&r, self);
}

/* A concurrent major's initial pause: the mark begins on a swept heap,
 * the roots grey; the workers mark once the world runs again. */
static void pause_initial(const char *reason, lull_thread *self)
{
    lull_pause_record r;
    pause_begin(&r, LULL_PAUSE_INITIAL, reason, self);
    nursery_kept(&r);
    lull_policy_note_mark_start();
    finish_sweep_in_pause(&r);
    lull_major_assert_all_swept();
    lull_mark_begin_concurrent();
    lull_pause_step(&r, LULL_STEP_MARK_BEGUN);
    pause_end(&r, self);
}

/* A concurrent major's final pause: the roots, the union table's cards
 * and what the background left, drained by every worker; then the same
 * sweep as a synchronous major. A mark the pause had to finish measured
 * only its share of the heap (policy.c). */
static void pause_final(const char *reason, lull_thread *self)
{
    lull_pause_record r;
    lull_tracer tr = { .id = 0 };
    pause_begin(&r, LULL_PAUSE_FINAL, reason, self);
    nursery_kept(&r);
    retire_caches();
    lull_mark_finish(&tr);
    weak_and_finalizers(&tr, final_fate);
    mark_end(&r, &tr, true);
    sweep_in_pause(&r, true);
    lull_policy_after_major(r.live, r.synchronous ? background_share() : 1.0);
    pause_end(&r, self);
}

/* One pause, the script `what` asks for (lull_collect_locked); a start
 * while a mark runs, or a finish while none does, is a minor. Then the
 * collector's addresses off this thread's stack. */
static __attribute__((noinline)) void run_pause(int what, const char *reason, lull_thread *self)
{
    bool marking = lull_marking();
    if ((what == LULL_COLLECT_MAJOR_START && marking) || (what == LULL_COLLECT_MAJOR_FINISH && !marking))
        what = LULL_GEN_NURSERY;
    switch (what) {
    case LULL_GEN_MAJOR:
        pause_major(reason, self);
        break;
    case LULL_COLLECT_MAJOR_START:
        pause_initial(reason, self);
        break;
    case LULL_COLLECT_MAJOR_FINISH:
        pause_final(reason, self);
        break;
    default:
        pause_minor(reason, self);
        break;
    }
    clear_stack_below();
}

/* A mark starts on a swept heap. What the last cycle's lazy sweep has not
 * reached yet is swept here, gc lock held, with the world running (as the
 * background sweep does), not in the pause. */
static void sweep_before_mark(void)
{
    if (lull_marking() || !lull_major_sweep_pending())
        return;
    uint64_t t = lull_now_ns();
    lull_major_sweep_all();
    LULL_TL(LULL_TL_SWEEP_REST, t, lull_now_ns() - t, 0, 0, 0, NULL);
}

/* This thread's roots are its registers and stack as they are here, on
 * entry, like a stopped thread's at its suspend point: `entry` holds the
 * registers, and the scan starts at it. The frames below (run_pause and
 * the scripts) are not roots: they hold addresses from the pause's own
 * work, and locals not yet written when the roots are scanned (the
 * record, the log's buffers) hold whatever code run earlier on this
 * stack left there. This frame holds `entry` and nothing else. */
void lull_collect_locked(int what, const char *reason)
{
    lull_thread *self = lull_thread_self;
    ucontext_t entry;
    lull_control_note_pause();     /* a no-GC region open ends here */
    if (self) {
        lull_capture_registers(&entry);
        lull_stw_record_roots(self, (uintptr_t)&entry);
    }
    if (what == LULL_GEN_MAJOR && lull_marking()) {
        /* A synchronous major while a concurrent mark runs (an allocation
         * that failed): end that mark first. What it kept (everything live
         * when it began, everything allocated since) may be what fills the
         * heap, so a whole synchronous major follows. */
        run_pause(LULL_COLLECT_MAJOR_FINISH, reason, self);
    }
    if (what == LULL_COLLECT_MAJOR_START || what == LULL_GEN_MAJOR)
        sweep_before_mark();
    run_pause(what, reason, self);
    __asm__ __volatile__("" : : "r"(&entry) : "memory");   /* `entry` lives until here */
    lull_clear_scratch_registers();   /* the collector's addresses out of this thread's registers (util.h) */
}

/* Wait, without the gc lock, until the background job of mark cycle
 * `cycle` is done, or EXPLICIT_WAIT_NS have passed (the caller then
 * finishes it with the world stopped: an explicit request returns in
 * bounded time while other threads keep storing); false: another thread
 * finished that mark meanwhile. The wait sleeps on the mark's progress. */
#define EXPLICIT_WAIT_NS 5000000000ull
static bool wait_for_mark(uint64_t cycle)
{
    if (!lull_cfg.background_mark && lull_marking() && lull_mark_cycle() == cycle)
        lull_control_step_mark(UINT64_MAX);    /* no worker marks: this thread does */
    uint64_t t0 = lull_now_ns();
    while (lull_marking() && lull_mark_cycle() == cycle && !lull_mark_ready() &&
           lull_now_ns() - t0 < EXPLICIT_WAIT_NS) {
        lull_gc_unlock();
        lull_mark_wait_progress(1000000, -1);
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
         * that evacuates (doc/api.md: "unless synchronous majors are allowed and
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
        return -EPERM;
    if (ns == 0)
        return -EINVAL;
    if (lull_control_region_blocking())
        return 0;      /* a no-GC region holds: no pause */
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
        return -EPERM;
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
    if (!lull_is_initialised())
        lull_fatal("lull_set_allow_synchronous_major", "lull is not initialised (call lull_init first)");
    if (lull_cfg.major != LULL_MAJOR_CONCURRENT)
        return false;     /* no concurrent majors (major=stw): cannot be honoured */
    atomic_store_explicit(&allow_sync_major, allow, memory_order_relaxed);
    return true;
}
