/* The log-linear pause histogram: buckets are monotonic and percentiles
 * stay within the bucket precision of the exact answer. */
#include <stdint.h>
#include <string.h>

#include "gc/stats.h"
#include "unit.h"

static lull_histogram h;

int main(void)
{
    unsigned prev = 0;
    for (uint64_t v = 0; v < 1u << 20; v += 1 + v / 64) {
        unsigned b = lull_hist_bucket_of(v);
        UCHECK(b >= prev && b < LULL_HIST_BUCKETS, "bucket of %llu", (unsigned long long)v);
        prev = b;
    }
    UCHECK(lull_hist_bucket_of(UINT64_MAX) < LULL_HIST_BUCKETS, "max bucket");

    /* 1..100000 ns uniformly: p50 ~ 50000, p99 ~ 99000. */
    for (uint64_t v = 1; v <= 100000; v++)
        lull_hist_add(&h, v);
    UCHECK(h.count == 100000 && h.max == 100000, "count/max");
    const double qs[] = { 0.5, 0.95, 0.99 };
    for (int i = 0; i < 3; i++) {
        double exact = qs[i] * 100000, got = (double)lull_hist_quantile(&h, qs[i]);
        UCHECK(got >= exact * 0.999 && got <= exact * 1.0625 + 1, "q%.2f: %.0f vs %.0f", qs[i], got, exact);
    }
    UCHECK(lull_hist_quantile(&h, 1.0) == 100000, "q1 is the max");

    memset(&h, 0, sizeof h);
    UCHECK(lull_hist_quantile(&h, 0.5) == 0, "empty");
    lull_hist_add(&h, 7000000);
    UCHECK(lull_hist_quantile(&h, 0.5) == 7000000, "one sample is clamped to the max");
    puts("unit_hist: ok");
    return 0;
}
