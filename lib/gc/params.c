/* params.c — lull_get_params: the options in force, as a string lull_init
 * accepts. Reads lull_cfg (read-only while lull runs) and, for the options
 * a program can change at run time, the value its owner holds now
 * (pacer.c: heap growth and memory limit; policy.c: pause target;
 * collect.c: the synchronous-major switch). Takes no lock. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "lull.h"
#include "base/config.h"
#include "gc/collect.h"
#include "gc/pacer.h"
#include "gc/policy.h"

/* Appends to a buffer of `size` bytes, counting what did not fit. */
typedef struct out {
    char *buf;
    size_t size, len;
} out_t;

__attribute__((format(printf, 2, 3)))
static void put(out_t *o, const char *fmt, ...)
{
    char tmp[600];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (o->len) {   /* items are separated by commas */
        if (o->len + 1 < o->size)
            o->buf[o->len] = ',';
        o->len++;
    }
    for (int i = 0; i < n && tmp[i]; i++, o->len++)
        if (o->len + 1 < o->size)
            o->buf[o->len] = tmp[i];
}

/* SIZE as the parser reads it: the largest of g, m, k that divides it. */
static void put_size(out_t *o, const char *key, uint64_t v)
{
    static const char unit[] = "gmk";
    for (int i = 0; i < 3; i++) {
        unsigned shift = 30 - 10 * (unsigned)i;
        if (v && !(v & (((uint64_t)1 << shift) - 1))) {
            put(o, "%s=%" PRIu64 "%c", key, v >> shift, unit[i]);
            return;
        }
    }
    put(o, "%s=%" PRIu64, key, v);
}

/* TIME as the parser reads it: the largest of s, ms, us, ns that divides it. */
static void put_time(out_t *o, const char *key, uint64_t ns)
{
    static const struct { uint64_t ns; const char *name; } unit[] = {
        { 1000000000, "s" }, { 1000000, "ms" }, { 1000, "us" }, { 1, "ns" },
    };
    for (int i = 0; i < 4; i++)
        if (!(ns % unit[i].ns)) {
            put(o, "%s=%" PRIu64 "%s", key, ns / unit[i].ns, unit[i].name);
            return;
        }
}

int lull_get_params(char *buf, size_t size)
{
    if (!lull_is_initialised())
        return -EPERM;
    if (!buf)
        size = 0;
    out_t o = { buf, size, 0 };
    const lull_config *c = &lull_cfg;
    static const char *const yes_no[] = { "no", "yes" };
    static const char *const env[] = { "yes", "debug-only", "no" };
    put_size(&o, "nursery-size", c->nursery_size);
    put_size(&o, "max-heap-size", c->max_heap_size);
    put(&o, "heap-growth=%u", lull_pacer_growth());
    put_size(&o, "memory-limit", lull_pacer_memory_limit());
    put(&o, "major=%s", c->major == LULL_MAJOR_STW ? "stw" : "concurrent");
    put(&o, "mark-workers=%u", c->mark_workers);
    put(&o, "concurrent-sweep=%s", yes_no[c->concurrent_sweep]);
    put(&o, "card-filter=%s", yes_no[!c->card_every_store]);
    put(&o, "allow-synchronous-major=%s", yes_no[lull_synchronous_major_allowed()]);
    put_time(&o, "pause-target", lull_policy_pause_target());
    if (c->promotion_age == LULL_PROMOTION_AGE_AUTO)
        put(&o, "promotion-age=auto");
    else
        put(&o, "promotion-age=%u", c->promotion_age);
    put(&o, "finalizers=%s", c->finalizers == LULL_FINALIZERS_MANUAL ? "manual" : "auto");
    put(&o, "evacuation-threshold=%u", c->evacuation_threshold);
    if (c->trace_file[0])
        put(&o, "trace-file=%s", c->trace_file);
    put(&o, "suspend-signal=%d", c->suspend_signal);
    put(&o, "restart-signal=%d", c->restart_signal);
    put(&o, "environment=%s", env[c->environment]);
    if (size)
        buf[o.len < size ? o.len : size - 1] = 0;
    return (int)o.len;
}
