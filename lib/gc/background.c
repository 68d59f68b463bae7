/* background.c — the background sweep: a job on worker 0 while the world
 * runs (trace/workers.h), posted by the gc lock's holder after a pause or a
 * fork. (The concurrent mark's job is trace/mark.c's.)
 *
 * It first fills the promotion reserve, as a mark's job does, so that a
 * minor during the sweep finds its blocks' pages touched
 * (tests/prefault.c, sweeping). Then it takes the gc lock for a few blocks
 * at a time, never waiting for it (lull_gc_lock_background: the thread
 * that holds it may be stopping this job) and sleeping 50 us between
 * tries; once nothing is pending it gives long-empty blocks back to the
 * block space (the memory thread below returns them to the OS after the
 * decay), then prepares blocks again. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

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
            lull_memory_kick();
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

/* ------------------------------------------------------------------------ */
/* The memory thread                                                        */
/* ------------------------------------------------------------------------ */

/* lull-memory keeps free memory warm and gives back what stays unused.
 *
 * Touch-ahead: when blocks were handed out cold (clean runs or the
 * frontier: the taker pays their page faults, blocks.c), it raises its
 * warm target to twice what was taken cold since it last looked, on top
 * of the free memory there was (at most 32 MiB, an eighth of the heap and
 * a quarter of its headroom) and populates free memory until the
 * dirty free runs hold the target, so the next large objects and blocks
 * (a pause's promotion, an allocation's slow path) are resident. The
 * target falls to 0 after release-delay without a cold block, and is 0
 * near the soft memory limit.
 *
 * Decay: dirty free memory beyond the target goes back to the OS once it
 * has stayed free release-delay, in batches (every run due, and no sooner
 * than a sixteenth of the delay after the last batch); near the soft
 * memory limit, at once. Both without the gc lock across madvise.
 *
 * It is started at the first kick and sleeps on a futex word (wake_seq):
 * untimed when nothing is free or wanted, else until the next run is due
 * or the target lapses. A kicker bumps the word and wakes it without
 * taking mem_g.lock: the kick runs on a program thread after the gc lock's
 * release, where a pause may stop it, and a thread stopped holding a lock
 * another program thread waits for would stall the pause. It never
 * attaches, never touches objects, and no pause waits for it (it waits
 * for the gc lock like any thread). mem_g's
 * fields are under mem_g.lock but `started` (gc lock) and the atomics
 * (`idle`, `cold_seen`: a kicker's unlocked look at whether the thread
 * needs waking; `urgent_kick`: set by a kicker, taken by the thread;
 * `wake_seq`). A kicker holds the gc lock, so the wake itself waits for
 * the lock's release (lull_gc_defer). */
#define RELEASE_BATCH_BLOCKS 4096u   /* 64 MiB taken off the lists at once */
#define WARM_BATCH_BLOCKS 256u       /* 4 MiB populated between looks */
#define WARM_MAX ((uint64_t)32 << 20)

static struct {
    pthread_mutex_t lock;
    _Atomic unsigned wake_seq;
    pthread_t thread;
    bool started, stop, urgent;
    atomic_bool idle, urgent_kick;
    _Atomic uint64_t cold_seen;   /* lull_space_cold_blocks() when the thread last looked */
    uint64_t warm_target;         /* bytes of dirty free memory to keep */
    _Atomic uint64_t warm_low;    /* half of it: a kicker wakes the thread below this */
    uint64_t last_cold_ns;        /* when it last saw blocks handed out cold */
} mem_g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t release_delay(void)
{
    return lull_cfg.release_delay_ns;
}

/* Sleep until when_ns (lull_now_ns's clock; 0: untimed) or a wake that
 * came after `seen` was read, mem_g.lock released meanwhile. */
static void wait_until(uint64_t when_ns, unsigned seen)
{
    long ns = -1;
    if (when_ns) {
        uint64_t now = lull_now_ns();
        if (when_ns <= now)
            return;
        ns = when_ns - now > (uint64_t)LONG_MAX ? LONG_MAX : (long)(when_ns - now);
    }
    pthread_mutex_unlock(&mem_g.lock);
    lull_futex_wait(&mem_g.wake_seq, seen, ns);
    pthread_mutex_lock(&mem_g.lock);
}

static void wake_thread(void)
{
    atomic_fetch_add(&mem_g.wake_seq, 1);
    lull_futex_wake(&mem_g.wake_seq, 1);
}

static bool near_limit(void)
{
    return lull_pacer_near_limit(lull_heap_bytes_held() + lull_space_dirty_bytes());
}

/* The warm target from what was handed out cold since the last look. */
static void update_target(uint64_t now)
{
    uint64_t cold = lull_space_cold_blocks(), seen = atomic_load(&mem_g.cold_seen);
    if (cold != seen) {
        /* Taken cold while free memory was there: it was in pieces too
         * small, so the target is on top of it. */
        uint64_t want = lull_space_dirty_bytes() + ((cold - seen) << (LULL_BLOCK_SHIFT + 1));
        uint64_t cap = lull_heap_bytes_held() / 8;
        if (cap > lull_space_headroom_bytes() / 4)
            cap = lull_space_headroom_bytes() / 4;
        if (want > mem_g.warm_target)
            mem_g.warm_target = want;
        if (mem_g.warm_target > (cap < WARM_MAX ? cap : WARM_MAX))
            mem_g.warm_target = cap < WARM_MAX ? cap : WARM_MAX;
        mem_g.last_cold_ns = now;
        atomic_store(&mem_g.cold_seen, cold);
    } else if (now - mem_g.last_cold_ns >= release_delay()) {
        mem_g.warm_target = 0;
    }
    if (mem_g.urgent || near_limit())
        mem_g.warm_target = 0;
    atomic_store(&mem_g.warm_low, mem_g.warm_target / 2);
}

/* Nothing to warm or release: sleep until the target lapses, or untimed
 * (idle) when there is neither a target nor free memory. */
static void memory_sleep(unsigned seen)
{
    if (mem_g.warm_target) {
        wait_until(mem_g.last_cold_ns + release_delay(), seen);
        return;
    }
    /* Idle, then look again: a kicker stores its free run or cold block
     * before it reads idle (both sequentially consistent). */
    atomic_store(&mem_g.idle, true);
    if (!lull_space_oldest_dirty_ns() && lull_space_cold_blocks() == atomic_load(&mem_g.cold_seen) && !mem_g.stop)
        wait_until(0, seen);
    atomic_store(&mem_g.idle, false);
}

static void *memory_main(void *arg)
{
    (void)arg;
    uint64_t last = 0;
    pthread_mutex_lock(&mem_g.lock);
    while (!mem_g.stop) {
        unsigned seen = atomic_load(&mem_g.wake_seq);   /* before anything is looked at: no wake is lost */
        mem_g.urgent |= atomic_exchange(&mem_g.urgent_kick, false);
        uint64_t now = lull_now_ns();
        update_target(now);
        uint64_t target = mem_g.warm_target;
        if (target > lull_space_dirty_bytes()) {
            pthread_mutex_unlock(&mem_g.lock);
            uint64_t warmed = lull_space_warm(target, WARM_BATCH_BLOCKS);
            pthread_mutex_lock(&mem_g.lock);
            if (warmed)
                continue;
        }
        uint64_t oldest = lull_space_oldest_dirty_ns();
        if (!oldest || lull_space_dirty_bytes() <= target) {
            memory_sleep(seen);
            continue;
        }
        uint64_t delay = mem_g.urgent ? 0 : release_delay();
        uint64_t due = oldest + delay, gap = last + delay / 16;
        if (due < gap)
            due = gap;
        if (due > now) {
            wait_until(due, seen);
            continue;
        }
        mem_g.urgent = false;
        pthread_mutex_unlock(&mem_g.lock);
        uint64_t n = lull_space_release_dirty(now - delay, RELEASE_BATCH_BLOCKS, target);
        pthread_mutex_lock(&mem_g.lock);
        if (n < RELEASE_BATCH_BLOCKS)
            last = now;
    }
    pthread_mutex_unlock(&mem_g.lock);
    return NULL;
}

static bool memory_start(void)
{
    if (mem_g.started)
        return true;
    mem_g.stop = mem_g.urgent = false;
    mem_g.warm_target = 0;
    atomic_store(&mem_g.warm_low, 0);
    atomic_store(&mem_g.idle, false);
    atomic_store(&mem_g.cold_seen, lull_space_cold_blocks());
    if (pthread_create(&mem_g.thread, NULL, memory_main, NULL) != 0) {
        lull_warn("lull", "cannot start the memory thread: free memory stays resident until lull_release_memory");
        return false;
    }
    pthread_setname_np(mem_g.thread, "lull-memory");
    mem_g.started = true;
    return true;
}

void lull_memory_kick(void)
{
    bool cold = lull_space_cold_blocks() != atomic_load(&mem_g.cold_seen) ||
                lull_space_dirty_bytes() < atomic_load_explicit(&mem_g.warm_low, memory_order_relaxed);
    if ((!cold && !lull_space_oldest_dirty_ns()) || !memory_start())
        return;
    /* Near the soft limit the memory goes back now, whatever the delay. */
    bool urgent = near_limit();
    if (urgent || cold || release_delay() == 0 || atomic_load(&mem_g.idle)) {
        if (urgent)
            atomic_store(&mem_g.urgent_kick, true);
        lull_gc_defer(LULL_GC_DEFER_MEMORY, wake_thread);   /* after the gc lock's release */
    }
}

void lull_memory_stop(void)
{
    if (!mem_g.started)
        return;
    pthread_mutex_lock(&mem_g.lock);
    mem_g.stop = true;
    pthread_mutex_unlock(&mem_g.lock);
    wake_thread();
    pthread_join(mem_g.thread, NULL);
    mem_g.started = false;
}

void lull_memory_after_fork_child(void)
{
    /* The thread does not exist here, and may have held its lock. */
    mem_g.lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    mem_g.started = false;
    lull_space_after_fork_child();
}

int lull_release_memory(void)
{
    if (!lull_is_initialised())
        return -EPERM;
    lull_gc_lock();
    lull_major_release_empty(0);
    lull_space_release_pending();
    lull_gc_unlock();
    while (lull_space_release_dirty(UINT64_MAX, RELEASE_BATCH_BLOCKS, 0))
        ;
    return 0;
}
