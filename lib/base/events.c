/* events.c — the pause record's steps, its listeners, and the log lines
 * (events.h: who calls it, under which lock, and the invariants). */
#include "base/events.h"

#include <stdio.h>
#include <string.h>

#include "lull.h"
#include "base/probes.h"
#include "base/util.h"

/* The listeners, in the order they are told; written by lull_init only,
 * read with the gc lock held. */
static struct {
    lull_pause_listener fn[LULL_MAX_LISTENERS];
    void *data[LULL_MAX_LISTENERS];
    unsigned n;
} events_g;

void lull_events_reset(void)
{
    events_g.n = 0;
}

void lull_events_listen(lull_pause_listener fn, void *data)
{
    LULL_ASSERT(events_g.n < LULL_MAX_LISTENERS);
    events_g.fn[events_g.n] = fn;
    events_g.data[events_g.n] = data;
    events_g.n++;
}

void lull_pause_open(lull_pause_record *r, enum lull_pause_kind kind, const char *reason)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->reason = reason;
    r->t0 = lull_now_ns();
}

/* The generation the probes collection_begin/_end name. */
static int probe_generation(const lull_pause_record *r)
{
    return r->kind == LULL_PAUSE_MINOR ? LULL_GEN_NURSERY : LULL_GEN_MAJOR;
}

/* The probes of each step, then the clock: a probe that begins a step
 * fires before its time is taken, as doc/observability.md's table says. */
void lull_pause_step(lull_pause_record *r, enum lull_pause_step s)
{
    switch (s) {
    case LULL_STEP_STOP:
        LULL_PROBE2(collection_begin, probe_generation(r), r->reason);
        if (r->kind == LULL_PAUSE_INITIAL)
            LULL_PROBE1(initial_pause_begin, r->cycle);
        if (r->kind == LULL_PAUSE_FINAL) {
            LULL_PROBE2(concurrent_mark_end, r->cycle, r->mark_done);
            LULL_PROBE1(final_pause_begin, r->cycle);
        }
        LULL_PROBE1(world_stop_begin, r->threads);
        break;
    case LULL_STEP_STOPPED:
        LULL_PROBE1(world_stopped, r->threads);
        break;
    case LULL_STEP_NURSERY:
        if (r->minor)
            LULL_PROBE1(minor_end, r->promoted);
        break;
    case LULL_STEP_MARK_BEGUN:
        LULL_PROBE1(concurrent_mark_begin, r->cycle);
        break;
    case LULL_STEP_MARKED:
        LULL_PROBE1(mark_end, r->overflows);
        break;
    case LULL_STEP_SWEEP_BEGIN:
        LULL_PROBE1(sweep_begin, r->collection);
        break;
    case LULL_STEP_SWEPT:
        LULL_PROBE1(sweep_end, r->live);
        break;
    case LULL_STEP_RESTART:
        LULL_PROBE1(restart_begin, r->completed);
        break;
    case LULL_STEP_RESTARTED:
        LULL_PROBE1(restart_end, r->completed);
        if (r->kind == LULL_PAUSE_INITIAL)
            LULL_PROBE1(initial_pause_end, r->cycle);
        if (r->kind == LULL_PAUSE_FINAL)
            LULL_PROBE1(final_pause_end, r->cycle);
        break;
    case LULL_STEP_END:
        r->at[s] = lull_now_ns();
        r->pause_ns = r->at[s] - r->t0;
        LULL_PROBE2(pause_end, r->completed, r->pause_ns);
        LULL_PROBE2(collection_end, probe_generation(r), r->reason);
        return;
    case LULL_NSTEPS:
        break;
    }
    r->at[s] = lull_now_ns();
}

void lull_pause_emit(const lull_pause_record *r)
{
    for (unsigned i = 0; i < events_g.n; i++)
        events_g.fn[i](r, events_g.data[i]);
}

/* ------------------------------------------------------------------------ */
/* LULL_GC_DEBUG=log                                                        */
/* ------------------------------------------------------------------------ */

/* A final pause: ", concurrent mark done: ..." with each worker's share
 * of the background mark. */
static void log_concurrent(const lull_pause_record *r, char *conc, size_t size)
{
    uint64_t background = 0;
    char shares[512] = "";
    size_t len = 0;
    for (unsigned i = 0; i < r->mark_workers && len < sizeof shares; i++) {
        background += r->by_worker[i];
        len += (size_t)snprintf(shares + len, sizeof shares - len, "%s%llu", i ? " " : "",
                                (unsigned long long)r->by_worker[i]);
    }
    snprintf(conc, size, ", concurrent mark %s: %llu objects scanned while the world ran (by "
             "lull-mark/1..%u: %s), %llu cards precleaned, %llu rescanned in the pause, %llu nursery "
             "and young large objects its roots",
             r->synchronous ? "finished early" : "done", (unsigned long long)background, r->mark_workers, shares,
             (unsigned long long)r->precleaned, (unsigned long long)r->rescanned_cards,
             (unsigned long long)r->final_young);
}

static void log_major(const lull_pause_record *r)
{
    char conc[768] = "", evac[128] = "";
    if (r->evac_classes)
        snprintf(evac, sizeof evac, ", evacuated %llu objects (%.1f KiB) from %u blocks of %u size classes",
                 (unsigned long long)r->evac_objects, (double)r->evac_bytes / 1024.0, (unsigned)r->evac_blocks,
                 r->evac_classes);
    if (r->kind == LULL_PAUSE_FINAL)
        log_concurrent(r, conc, sizeof conc);
    fprintf(stderr, "lull: collection %llu (major, %s): pause %.3f ms, promoted %.1f KiB (%.1f KiB by "
            "workers), live %.1f MiB, heap %.1f MiB (free and resident %.1f MiB, released %.1f MiB in %llu "
            "calls so far), scanned %llu objects (%llu by workers)%s%s; the "
            "next starts after %.1f MiB of a %.1f MiB allowance; pacer: %s%s\n",
            (unsigned long long)r->collection, r->reason, (double)r->pause_ns / 1e6,
            (double)r->promoted / 1024.0, r->minor ? (double)r->promoted_by_workers / 1024.0 : 0.0,
            (double)r->live / 1048576.0, (double)r->heap_after / 1048576.0, (double)r->free_resident / 1048576.0,
            (double)r->released / 1048576.0, (unsigned long long)r->release_calls, (unsigned long long)r->marked,
            (unsigned long long)(r->marked - r->marked_by_stopper), evac, conc,
            (double)r->trigger / 1048576.0, (double)r->allowance / 1048576.0, r->pacer,
            r->overflowed ? " (mark stack overflowed)" : "");
}

static void log_initial(const lull_pause_record *r)
{
    fprintf(stderr, "lull: collection %llu (major start, %s): pause %.3f ms (background job stopped in "
            "%.3f ms), concurrent mark begins, %.1f KiB of young large objects and %llu registered roots' values "
            "left to the markers\n",
            (unsigned long long)r->collection, r->reason, (double)r->pause_ns / 1e6,
            (double)r->stop_bg_ns / 1e6, (double)r->deferred_young / 1024.0, (unsigned long long)r->deferred_roots);
}

static void log_minor(const lull_pause_record *r)
{
    fprintf(stderr, "lull: collection %llu (minor, %s): pause %.3f ms, promoted %.1f KiB (%.1f KiB by "
            "workers), aged %.1f KiB%s, of %.1f KiB handed out, %.1f KiB of young large objects freed, %llu "
            "dirty cards (%llu holding young references), copying %.3f ms, "
            "background job stopped in %.3f ms; nursery %zu KiB -> %zu KiB, next predicted %.3f ms (margin x%.2f); "
            "a card %.1f ns, %u cards per thread until a minor in grants of %u%s; %llu allocations outside TLABs so "
            "far, %.1f per thousand took a lock\n",
            (unsigned long long)r->collection, r->reason, (double)r->pause_ns / 1e6, (double)r->promoted / 1024.0,
            (double)r->promoted_by_workers / 1024.0, (double)r->aged / 1024.0,
            r->aging_paused ? " (the next minor ages nothing: aging has not halved what minors promote)" : "",
            (double)r->handed / 1024.0, (double)r->large_freed / 1024.0, (unsigned long long)r->cards_scanned,
            (unsigned long long)r->cards_young, (double)r->trace_ns / 1e6, (double)r->stop_bg_ns / 1e6,
            r->nursery_before >> 10, r->nursery_after >> 10, r->predicted_minor_ns / 1e6, r->minor_margin, r->card_ns,
            r->card_budget, r->card_grant, r->marking ? " (a concurrent mark runs)" : "",
            (unsigned long long)r->alloc_outside_tlab,
            r->alloc_outside_tlab ? 1000.0 * (double)r->alloc_locked / (double)r->alloc_outside_tlab : 0.0);
}

void lull_events_log_listener(const lull_pause_record *r, void *data)
{
    (void)data;
    if (!lull_cfg.log)
        return;
    switch (r->kind) {
    case LULL_PAUSE_MAJOR:
    case LULL_PAUSE_FINAL:
        log_major(r);
        break;
    case LULL_PAUSE_INITIAL:
        log_initial(r);
        break;
    case LULL_PAUSE_MINOR:
        log_minor(r);
        break;
    }
}
