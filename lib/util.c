#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void vreport(const char *fn, const char *fmt, va_list ap)
{
    /* Format into one buffer and write it with one call, so that lines of
     * concurrent threads do not interleave. No malloc: this may run while
     * other threads are stopped. */
    char buf[512];
    int n = snprintf(buf, sizeof buf, "lull: %s: ", fn);
    if (n < 0)
        return;
    if ((size_t)n < sizeof buf)
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if ((size_t)n >= sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, (size_t)n);
    (void)w;
}

void lull_fatal(const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fn, fmt, ap);
    va_end(ap);
    abort();
}

void lull_warn(const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(fn, fmt, ap);
    va_end(ap);
}

uint64_t lull_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
