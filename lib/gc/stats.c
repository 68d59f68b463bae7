/* stats.c — lull_get_stats: the pause histograms and the collection
 * counters (stats.h).
 *
 * Written by the pause record's listener (lull_stats_pause_listener, on
 * the thread that collected, world running, gc lock held) and by
 * lull_stats_reset (lull_init); read by lull_get_stats from any thread.
 * Both under stats_lock, never taken while the world is stopped (a
 * stopped thread may hold it). Invariants: a pause is counted once, in
 * the histogram of all pauses and in its kind's (a minor's, or a
 * major's, whichever of its pauses). */
#include "gc/stats.h"
#include "gc/pacer.h"
#include "trace/mark.h"
#include "gc/finalizers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "gc/collect.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "gc/policy.h"
#include "gc/control.h"
#include "gc/threads.h"
#include "base/util.h"

unsigned lull_hist_bucket_of(uint64_t v)
{
    const unsigned sub = 1u << LULL_HIST_SUB_BITS;
    if (v < sub)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);       /* >= SUB_BITS */
    unsigned s = (unsigned)(v >> (e - LULL_HIST_SUB_BITS)) & (sub - 1);
    return (e - LULL_HIST_SUB_BITS + 1) * sub + s;
}

/* The largest value that falls into bucket b. */
static uint64_t bucket_upper(unsigned b)
{
    const unsigned sub = 1u << LULL_HIST_SUB_BITS;
    if (b < sub)
        return b;
    unsigned e = b / sub + LULL_HIST_SUB_BITS - 1;
    uint64_t s = b % sub;
    uint64_t lo = ((uint64_t)1 << e) | (s << (e - LULL_HIST_SUB_BITS));
    return lo + (((uint64_t)1 << (e - LULL_HIST_SUB_BITS)) - 1);
}

void lull_hist_add(lull_histogram *h, uint64_t v)
{
    h->bucket[lull_hist_bucket_of(v)]++;
    h->count++;
    h->total += v;
    if (v > h->max)
        h->max = v;
}

uint64_t lull_hist_quantile(const lull_histogram *h, double q)
{
    if (!h->count)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (unsigned b = 0; b < LULL_HIST_BUCKETS; b++) {
        seen += h->bucket[b];
        if (seen >= rank) {
            uint64_t up = bucket_upper(b);
            return up < h->max ? up : h->max;
        }
    }
    return h->max;
}

/* The pause histograms by kind: a minor's pause, or a major's (any of its
 * pauses: synchronous, initial, final). */
enum { HIST_MINOR, HIST_MAJOR };

/* The statistics: one instance, under its own lock (written by the
 * thread that collected, read by lull_get_stats from any thread). */
static struct {
    pthread_mutex_t stats_lock;
    lull_histogram pauses, pauses_by_kind[2];   /* [HIST_MINOR/MAJOR] */
    uint64_t collections_minor, collections_major, collections_major_sync;
    uint64_t live_after_major;
    uint64_t bytes_promoted, bytes_aged;
    uint64_t objects_evacuated, bytes_evacuated;
    uint64_t job_stop_max_ns, job_stops_slow;   /* pauses' waits for the background job */
    uint64_t job_stop_cpu_max_ns;               /* and the CPU time its threads took to stop */
} stats_g = { .stats_lock = PTHREAD_MUTEX_INITIALIZER };

void lull_stats_lock_for_fork(void)
{
    pthread_mutex_lock(&stats_g.stats_lock);
}

void lull_stats_unlock_after_fork(void)
{
    pthread_mutex_unlock(&stats_g.stats_lock);
}

void lull_stats_reset(void)
{
    pthread_mutex_lock(&stats_g.stats_lock);
    memset(&stats_g.pauses, 0, sizeof stats_g.pauses);
    memset(stats_g.pauses_by_kind, 0, sizeof stats_g.pauses_by_kind);
    stats_g.collections_minor = stats_g.collections_major = stats_g.collections_major_sync = 0;
    stats_g.live_after_major = 0;
    stats_g.bytes_promoted = stats_g.bytes_aged = 0;
    stats_g.objects_evacuated = stats_g.bytes_evacuated = 0;
    stats_g.job_stop_max_ns = stats_g.job_stops_slow = stats_g.job_stop_cpu_max_ns = 0;
    lull_finalizers_reset();
    pthread_mutex_unlock(&stats_g.stats_lock);
}

static void record_pause(int kind, uint64_t ns, uint64_t stop_bg_ns, uint64_t stop_bg_cpu_ns)
{
    pthread_mutex_lock(&stats_g.stats_lock);
    lull_hist_add(&stats_g.pauses, ns);
    lull_hist_add(&stats_g.pauses_by_kind[kind], ns);
    if (stop_bg_ns > stats_g.job_stop_max_ns)
        stats_g.job_stop_max_ns = stop_bg_ns;
    if (stop_bg_ns > LULL_JOB_STOP_SLOW_NS)
        stats_g.job_stops_slow++;
    if (stop_bg_cpu_ns > stats_g.job_stop_cpu_max_ns)
        stats_g.job_stop_cpu_max_ns = stop_bg_cpu_ns;
    pthread_mutex_unlock(&stats_g.stats_lock);
}

static void record_collection(int kind, int synchronous, uint64_t live_bytes, uint64_t promoted_bytes,
                              uint64_t aged_bytes)
{
    pthread_mutex_lock(&stats_g.stats_lock);
    stats_g.bytes_promoted += promoted_bytes;
    stats_g.bytes_aged += aged_bytes;
    if (kind == HIST_MINOR) {
        stats_g.collections_minor++;
    } else {
        stats_g.collections_major++;
        if (synchronous)
            stats_g.collections_major_sync++;
        stats_g.live_after_major = live_bytes;
    }
    pthread_mutex_unlock(&stats_g.stats_lock);
}

static void note_evacuated(uint64_t objects, uint64_t bytes)
{
    pthread_mutex_lock(&stats_g.stats_lock);
    stats_g.objects_evacuated += objects;
    stats_g.bytes_evacuated += bytes;
    pthread_mutex_unlock(&stats_g.stats_lock);
}

void lull_stats_pause_listener(const lull_pause_record *r, void *data)
{
    (void)data;
    int kind = r->kind == LULL_PAUSE_MINOR ? HIST_MINOR : HIST_MAJOR;
    record_pause(kind, r->pause_ns, r->stop_bg_ns, r->stop_bg_cpu_ns);
    if (r->kind != LULL_PAUSE_INITIAL)
        record_collection(kind, r->synchronous, r->live, r->promoted, r->aged);
    if (r->evac_objects)
        note_evacuated(r->evac_objects, r->evac_bytes);
}

/* Fill the library's whole struct *s (the callers below copy what the
 * program's struct has room for). */
static void stats_fill(lull_stats *s)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&stats_g.stats_lock);
    s->collections_minor = stats_g.collections_minor;
    s->collections_major = stats_g.collections_major;
    s->collections_major_sync = stats_g.collections_major_sync;
    s->pauses = stats_g.pauses.count;
    s->pause_total_ns = stats_g.pauses.total;
    s->pause_max_ns = stats_g.pauses.max;
    s->pause_p50_ns = lull_hist_quantile(&stats_g.pauses, 0.50);
    s->pause_p95_ns = lull_hist_quantile(&stats_g.pauses, 0.95);
    s->pause_p99_ns = lull_hist_quantile(&stats_g.pauses, 0.99);
    s->live_bytes_after_major = stats_g.live_after_major;
    s->bytes_promoted = stats_g.bytes_promoted;
    s->bytes_aged = stats_g.bytes_aged;
    s->objects_evacuated = stats_g.objects_evacuated;
    s->bytes_evacuated = stats_g.bytes_evacuated;
    s->finalizers_queued = lull_finalize_queued_total();
    s->finalizers_run = lull_finalizers_run_total();
    const lull_histogram *mi = &stats_g.pauses_by_kind[HIST_MINOR], *ma = &stats_g.pauses_by_kind[HIST_MAJOR];
    s->pauses_minor = mi->count;
    s->pause_minor_max_ns = mi->max;
    s->pause_minor_p50_ns = lull_hist_quantile(mi, 0.50);
    s->pause_minor_p99_ns = lull_hist_quantile(mi, 0.99);
    s->pauses_major = ma->count;
    s->pause_major_max_ns = ma->max;
    s->pause_major_p50_ns = lull_hist_quantile(ma, 0.50);
    s->pause_major_p99_ns = lull_hist_quantile(ma, 0.99);
    s->job_stop_wait_max_ns = stats_g.job_stop_max_ns;
    s->job_stop_waits_slow = stats_g.job_stops_slow;
    s->job_stop_cpu_max_ns = stats_g.job_stop_cpu_max_ns;
    pthread_mutex_unlock(&stats_g.stats_lock);
    if (lull_is_initialised())
        s->bytes_allocated = lull_threads_allocated_bytes();
    s->heap_bytes = lull_heap_bytes_held();
    if (lull_is_initialised()) {
        s->heap_empty_bytes = lull_major_empty_bytes();
        s->minors_over_target = lull_policy_minors_over_target();
        s->minors_for_cards = lull_policy_minors_for_cards();
        s->minors_idle = lull_policy_minors_idle();
        s->majors_idle = lull_policy_majors_idle();
        s->pause_target_ns = lull_policy_pause_target();
        s->nursery_bytes = lull_nursery_size();
        s->heap_goal_bytes = lull_pacer_goal();
        s->memory_limit_bytes = lull_pacer_memory_limit();
        lull_mark_paced(&s->paced_waits, &s->paced_wait_ns);
        s->mark_finishes_sync = lull_policy_sync_finishes();
        lull_threads_alloc_counts(&s->alloc_outside_tlab, &s->alloc_locked);
        s->regions = lull_control_regions();
        s->regions_overrun = lull_control_regions_overrun();
        s->collections_forced = lull_control_forced();
        s->memory_pressure_bytes = lull_control_pressure();
        lull_space_release_counts(&s->bytes_released, &s->release_calls);
        s->free_resident_bytes = lull_space_dirty_bytes();
        s->bytes_touched_ahead = lull_space_warmed_bytes();
    }
}

/* The program's struct is `size` bytes (sizeof of the lull_stats it was
 * built against): exactly that many bytes are written, never more. */
size_t lull_get_stats_sized(lull_stats *s, size_t size)
{
    if (!s)
        lull_fatal("lull_get_stats", "stats is NULL");
    lull_stats full;
    stats_fill(&full);
    size_t n = size < sizeof full ? size : sizeof full;
    memcpy(s, &full, n);
    if (size > n)
        memset((char *)s + n, 0, size - n);
    return n;
}

/* The symbol a program built before the sized call links to, or one that
 * takes its address: the struct of 0.1 (LULL_STATS_SIZE_0_1). */
void (lull_get_stats)(lull_stats *s)
{
    (void)lull_get_stats_sized(s, LULL_STATS_SIZE_0_1);
}
