/* background.c — the background sweep: a job on worker 0 while the world
 * runs (trace/workers.h), posted by the gc lock's holder after a pause or a
 * fork. (The concurrent mark's job is trace/mark.c's.)
 *
 * It first fills the promotion reserve, as a mark's job does, so that a
 * minor during the sweep finds its blocks' pages touched
 * (tests/prefault.c, sweeping). Then it takes the gc lock for a few blocks
 * at a time, never waiting for it (lull_gc_lock_background: the thread
 * that holds it may be stopping this job) and sleeping 50 us between
 * tries; once nothing is pending it gives long-empty blocks back to the OS
 * (madvise outside any pause), then prepares blocks again. */
#include "gc/background.h"
#include "gc/pacer.h"

#include "base/config.h"
#include "base/gclock.h"
#include "base/probes.h"
#include "base/timeline.h"
#include "base/util.h"
#include "space/heap.h"
#include "trace/workers.h"

#define SWEEP_BATCH 8

static void sweep_job(lull_tracer *tr, void *arg)
{
    (void)tr;
    (void)arg;
    uint64_t swept = 0, t0 = lull_now_ns();
    LULL_PROBE0(bg_sweep_begin);
    lull_major_prepare_for_promotion();
    while (!lull_background_stop_requested()) {
        if (!lull_gc_lock_background(50))
            break;
        bool more = lull_major_sweep_some(SWEEP_BATCH, &swept);
        if (!more) {
            /* Near the soft memory limit, every empty block beyond the
             * promotion reserve goes back after one collection, not two. */
            lull_major_release_empty(lull_pacer_near_limit(lull_heap_bytes_held()) ? 1 : LULL_EMPTY_BLOCK_MAX_AGE);
            lull_space_release_pending();
        }
        lull_gc_unlock();
        if (!more) {
            lull_major_prepare_for_promotion();
            break;
        }
    }
    LULL_PROBE1(bg_sweep_end, swept);
    LULL_TL(LULL_TL_BG_SWEEP, t0, lull_now_ns() - t0, swept, 0, 0, NULL);
}

void lull_major_resume_sweep(void)
{
    if ((lull_major_sweep_pending() || lull_major_short_of_blocks()) && lull_cfg.concurrent_sweep &&
        lull_workers_can_background())
        lull_workers_start_background(sweep_job, NULL, 1);
}
