/* stats.h — counters and the pause histogram behind lull_get_stats
 * (stats.c says who writes and reads them, under which lock).
 *
 * Pauses go into a log-linear histogram (16 linear sub-buckets per power of
 * two: <= 6.25% relative error) so percentiles cost constant memory however
 * many pauses a long-running program takes. The counters are updated under
 * stats_lock after the world has restarted, never while it is stopped (a
 * stopped thread might be inside lull_get_stats holding it). */
#ifndef LULL_STATS_H
#define LULL_STATS_H

#include <stdint.h>

#include "lull.h"
#include "base/events.h"

#define LULL_HIST_SUB_BITS 4
#define LULL_HIST_BUCKETS ((64 - LULL_HIST_SUB_BITS + 1) << LULL_HIST_SUB_BITS)

typedef struct lull_histogram {
    uint64_t count;
    uint64_t max;
    uint64_t total;
    uint64_t bucket[LULL_HIST_BUCKETS];
} lull_histogram;

void     lull_hist_add(lull_histogram *h, uint64_t v);
/* The value below which a fraction `q` (0..1) of the samples lie: the upper
 * bound of the bucket holding that sample, clamped to the maximum seen. */
uint64_t lull_hist_quantile(const lull_histogram *h, double q);
unsigned lull_hist_bucket_of(uint64_t v);

void lull_stats_reset(void);
/* fork: hold the stats lock across fork() (init.c). */
void lull_stats_lock_for_fork(void);
void lull_stats_unlock_after_fork(void);
/* The pause record's listener (base/events.h): the pause into the
 * histograms; a collection's counts (not an initial pause's), the bytes
 * its minor promoted and aged, what its mark evacuated. */
void lull_stats_pause_listener(const lull_pause_record *r, void *data);

#endif
