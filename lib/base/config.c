#include "base/config.h"

#include <stdatomic.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lull.h"
#include "base/util.h"

/* The name of lull_init's own params in messages; also how apply_param
 * knows where a key came from (environment= is for lull_init alone). */
#define LULL_SOURCE_PARAMS "lull_init params"

/* The leading decimal number of s (no sign, no blank), and where it ends. */
static int parse_leading(const char *s, unsigned long long *v, char **end)
{
    if (!s || !isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    *v = strtoull(s, end, 10);
    return errno ? -EINVAL : 0;
}

int lull_config_parse_size(const char *s, size_t *out)
{
    unsigned long long v;
    char *end;
    if (parse_leading(s, &v, &end))
        return -EINVAL;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end)
        return -EINVAL;
    if (shift && v > (SIZE_MAX >> shift))
        return -EINVAL;
    *out = (size_t)(v << shift);
    return 0;
}

int lull_config_parse_time(const char *s, uint64_t *ns)
{
    unsigned long long v;
    char *end;
    if (parse_leading(s, &v, &end))
        return -EINVAL;
    uint64_t unit;
    if (!strcmp(end, "ns")) unit = 1;
    else if (!strcmp(end, "us")) unit = 1000;
    else if (!strcmp(end, "ms")) unit = 1000000;
    else if (!strcmp(end, "s")) unit = 1000000000;
    else return -EINVAL;
    if (v > UINT64_MAX / unit)
        return -EINVAL;
    *ns = v * unit;
    return 0;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, bool *out)
{
    if (!strcmp(s, "yes") || !strcmp(s, "true") || !strcmp(s, "1")) { *out = true; return 0; }
    if (!strcmp(s, "no") || !strcmp(s, "false") || !strcmp(s, "0")) { *out = false; return 0; }
    return -EINVAL;
}

static int parse_signal(const char *s, int *out)
{
    unsigned long v;
    if (parse_uint(s, (unsigned long)SIGRTMAX, &v) || v == 0)
        return -EINVAL;
    int sig = (int)v;
    /* Signals that cannot be caught, or that report real faults, cannot
     * carry the stop-the-world handshake. */
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGSEGV || sig == SIGBUS ||
        sig == SIGILL || sig == SIGFPE || sig == SIGABRT || sig == SIGTRAP)
        return -EINVAL;
    *out = sig;
    return 0;
}

static unsigned default_workers(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > 8 ? 8u : (unsigned)n;
}

static int bad(const char *source, const char *key, const char *value, const char *why)
{
    lull_warn("lull_init", "%s: bad value '%s' for '%s': %s", source, value, key, why);
    return -EINVAL;
}

/* The heap's sizes and times (apply_param's first half): 1 when `key` is
 * none of them. */
static int apply_param_heap(lull_config *c, const char *source, const char *key, const char *val)
{
    unsigned long u;
    size_t sz;
    if (!strcmp(key, "nursery-size")) {
        if (lull_config_parse_size(val, &sz))
            return bad(source, key, val, "expected a size such as 4m");
        if (sz < (64u << 10) || sz > (1ul << 30) || (sz & (sz - 1)))
            return bad(source, key, val, "must be a power of two between 64k and 1g");
        c->nursery_size = sz;
    } else if (!strcmp(key, "max-heap-size")) {
        if (lull_config_parse_size(val, &sz))
            return bad(source, key, val, "expected a size such as 512m, or 0 for none");
        if (sz && sz < (1u << 20))
            return bad(source, key, val, "must be 0 (none) or at least 1m");
        if (sz > ((size_t)1 << 46))
            return bad(source, key, val, "must be at most 64t");
        c->max_heap_size = sz;
    } else if (!strcmp(key, "heap-growth")) {
        if (parse_uint(val, LULL_HEAP_GROWTH_MAX, &u) || u < LULL_HEAP_GROWTH_MIN)
            return bad(source, key, val, "expected a percentage from 1 to 10000 (the heap may grow to live x "
                       "(1 + PERCENT / 100) before the next major)");
        c->heap_growth = (unsigned)u;
    } else if (!strcmp(key, "memory-limit")) {
        if (lull_config_parse_size(val, &sz))
            return bad(source, key, val, "expected a size such as 2g, or 0 for none");
        if (sz && sz < LULL_MEMORY_LIMIT_MIN)
            return bad(source, key, val, "must be 0 (none) or at least 4m");
        c->memory_limit = sz;
    } else if (!strcmp(key, "pause-target")) {
        uint64_t ns;
        if (lull_config_parse_time(val, &ns))
            return bad(source, key, val, "expected a time such as 2ms (units ns, us, ms, s)");
        if (ns < LULL_PAUSE_TARGET_MIN_NS || ns > LULL_PAUSE_TARGET_MAX_NS)
            return bad(source, key, val, "must be between 100us and 10s");
        c->pause_target_ns = ns;
    } else if (!strcmp(key, "release-delay")) {
        uint64_t ns = 0;
        if (strcmp(val, "0") && lull_config_parse_time(val, &ns))
            return bad(source, key, val, "expected 0 or a time such as 1s (units ns, us, ms, s)");
        if (ns > LULL_RELEASE_DELAY_MAX_NS)
            return bad(source, key, val, "must be at most 3600s");
        c->release_delay_ns = ns;
    } else {
        return 1;
    }
    return 0;
}

static int apply_param(lull_config *c, const char *source, const char *key, const char *val)
{
    unsigned long u;
    int r = apply_param_heap(c, source, key, val);
    if (r != 1)
        return r;
    if (!strcmp(key, "major")) {
        if (!strcmp(val, "concurrent")) c->major = LULL_MAJOR_CONCURRENT;
        else if (!strcmp(val, "stw")) c->major = LULL_MAJOR_STW;
        else return bad(source, key, val, "expected concurrent or stw");
    } else if (!strcmp(key, "mark-workers")) {
        if (parse_uint(val, 64, &u) || u == 0)
            return bad(source, key, val, "expected a number from 1 to 64");
        c->mark_workers = (unsigned)u;
    } else if (!strcmp(key, "background-mark")) {
        if (parse_bool(val, &c->background_mark))
            return bad(source, key, val, "expected yes or no");
    } else if (!strcmp(key, "concurrent-sweep")) {
        if (parse_bool(val, &c->concurrent_sweep))
            return bad(source, key, val, "expected yes or no");
    } else if (!strcmp(key, "card-filter")) {
        bool on;
        if (parse_bool(val, &on))
            return bad(source, key, val, "expected yes or no");
        c->card_every_store = !on;
    } else if (!strcmp(key, "allow-synchronous-major")) {
        if (parse_bool(val, &c->allow_synchronous_major))
            return bad(source, key, val, "expected yes or no");
    } else if (!strcmp(key, "promotion-age")) {
        if (!strcmp(val, "auto"))
            c->promotion_age = LULL_PROMOTION_AGE_AUTO;
        else if (parse_uint(val, 2, &u) || u < 1)
            return bad(source, key, val, "expected 1 (promote a minor's survivors), 2 (age them once in the "
                       "nursery) or auto (age them while that halves what minors promote)");
        else
            c->promotion_age = (unsigned)u;
    } else if (!strcmp(key, "finalizers")) {
        if (!strcmp(val, "auto")) c->finalizers = LULL_FINALIZERS_AUTO;
        else if (!strcmp(val, "manual")) c->finalizers = LULL_FINALIZERS_MANUAL;
        else return bad(source, key, val, "expected auto or manual");
    } else if (!strcmp(key, "evacuation-threshold")) {
        if (parse_uint(val, 100, &u))
            return bad(source, key, val, "expected a percentage from 0 (never evacuate) to 100");
        c->evacuation_threshold = (unsigned)u;
    } else if (!strcmp(key, "trace-file")) {
        if (!*val || strlen(val) >= sizeof c->trace_file)
            return bad(source, key, val, "expected a file name (trace-file=PATH), under 512 bytes");
        strcpy(c->trace_file, val);
    } else if (!strcmp(key, "suspend-signal")) {
        if (parse_signal(val, &c->suspend_signal))
            return bad(source, key, val, "expected a catchable signal number");
    } else if (!strcmp(key, "restart-signal")) {
        if (parse_signal(val, &c->restart_signal))
            return bad(source, key, val, "expected a catchable signal number");
    } else if (!strcmp(key, "environment")) {
        if (strcmp(source, LULL_SOURCE_PARAMS))
            return bad(source, key, val, "only lull_init's params may refuse the environment");
        if (!strcmp(val, "yes")) c->environment = LULL_ENV_ALL;
        else if (!strcmp(val, "debug-only")) c->environment = LULL_ENV_DEBUG_ONLY;
        else if (!strcmp(val, "no")) c->environment = LULL_ENV_NONE;
        else return bad(source, key, val, "expected yes, debug-only or no");
    } else {
        lull_warn("lull_init", "%s: unknown option '%s'", source, key);
        return -EINVAL;
    }
    return 0;
}

static int apply_debug(lull_config *c, const char *source, const char *key, const char *val)
{
    unsigned long u;
    if (!strcmp(key, "verify") && !val) c->verify = true;
    else if (!strcmp(key, "poison") && !val) c->poison = true;
    else if (!strcmp(key, "log") && !val) c->log = true;
    else if (!strcmp(key, "check-cards") && !val) c->check_cards = true;
    else if (!strcmp(key, "verify-nursery") && !val) c->verify_nursery = true;
    else if (!strcmp(key, "clear-nursery") && !val) c->clear_nursery = true;
    else if (!strcmp(key, "verify-parallel") && !val) c->verify_parallel = true;
    else if (!strcmp(key, "plant-mark-fault") && !val) c->plant_mark_fault = true;
    else if (!strcmp(key, "plant-evac-fault") && val && !strcmp(val, "slot")) c->plant_evac_fault = LULL_PLANT_SLOT;
    else if (!strcmp(key, "plant-evac-fault") && val && !strcmp(val, "root")) c->plant_evac_fault = LULL_PLANT_ROOT;
    else if (!strcmp(key, "verify-concurrent") && !val) c->verify_concurrent = true;
    else if (!strcmp(key, "check-mod-union") && !val) c->check_mod_union = true;
    else if (!strcmp(key, "alloc-slow") && !val) c->alloc_slow = true;
    else if (!strcmp(key, "mark-delay")) {
        if (!val || parse_uint(val, 1000000, &u))
            return bad(source, key, val ? val : "", "expected microseconds, 0 to 1000000");
        c->mark_delay_us = (unsigned)u;
    }
    else if (!strcmp(key, "join-delay")) {
        if (!val || parse_uint(val, 1000000, &u))
            return bad(source, key, val ? val : "", "expected microseconds, 0 to 1000000");
        c->join_delay_us = (unsigned)u;
    }
    else if (!strcmp(key, "card-budget")) {
        if (!val || parse_uint(val, 1u << 30, &u) || u == 0)
            return bad(source, key, val ? val : "", "expected a number of cards, 1 to 1073741824");
        c->card_budget = (uint32_t)u;
    }
    else if (!strcmp(key, "heap-shot")) {
        if (!val || !*val || strlen(val) >= sizeof c->heap_shot_file)
            return bad(source, key, val ? val : "", "expected a file name (heap-shot=FILE), under 512 bytes");
        strcpy(c->heap_shot_file, val);
    }
    else if (!strcmp(key, "collect-every")) {
        if (!val || parse_uint(val, ULONG_MAX, &u) || u == 0)
            return bad(source, key, val ? val : "", "expected a positive number");
        c->collect_every = u;
    } else if (!strcmp(key, "fail-mmap")) {
        if (!val || parse_uint(val, UINT32_MAX, &u) || u == 0)
            return bad(source, key, val ? val : "", "expected a positive number");
        c->fail_mmap = (unsigned)u;
    } else if (!strcmp(key, "mark-stack-limit")) {
        if (!val || parse_uint(val, ULONG_MAX, &u) || u == 0)
            return bad(source, key, val ? val : "", "expected a positive number");
        c->mark_stack_limit = u;
    } else {
        lull_warn("lull_init", "%s: unknown debug option '%s%s%s'", source, key, val ? "=" : "", val ? val : "");
        return -EINVAL;
    }
    return 0;
}

typedef int (*apply_fn)(lull_config *, const char *, const char *, const char *);

/* Walk "a=b,c,d=e": each item is handed to `apply`. In params every item
 * needs a value; debug flags may stand alone. */
static int parse_list(lull_config *c, const char *source, const char *text, apply_fn apply, bool need_value)
{
    if (!text || !*text)
        return 0;
    char buf[1024];
    if (strlen(text) >= sizeof buf) {
        lull_warn("lull_init", "%s: option string longer than %zu bytes", source, sizeof buf - 1);
        return -EINVAL;
    }
    strcpy(buf, text);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item))
            item++;
        size_t n = strlen(item);
        while (n && isspace((unsigned char)item[n - 1]))
            item[--n] = 0;
        if (!n)
            continue;
        char *eq = strchr(item, '=');
        char *val = NULL;
        if (eq) {
            *eq = 0;
            val = eq + 1;
        }
        if (need_value && !val) {
            lull_warn("lull_init", "%s: option '%s' needs a value (key=value)", source, item);
            return -EINVAL;
        }
        int r = apply(c, source, item, val);
        if (r)
            return r;
    }
    return 0;
}

/* An environment variable's options, or, when lull_init's params refused
 * it, one warning if it is set (nothing applied). */
static int parse_env(lull_config *c, const char *var, bool allowed, apply_fn apply, bool need_value)
{
    const char *text = getenv(var);
    if (allowed)
        return parse_list(c, var, text, apply, need_value);
    if (text && *text)
        lull_warn("lull_init", "%s ignored: lull_init's params say environment=%s", var,
                  c->environment == LULL_ENV_NONE ? "no" : "debug-only");
    return 0;
}

int lull_config_parse(lull_config *c, const char *params)
{
    *c = (lull_config){
        .nursery_size = 4u << 20,
        .max_heap_size = 0,
        .heap_growth = LULL_DEFAULT_HEAP_GROWTH,
        .memory_limit = 0,
        .promotion_age = 1,
        .major = LULL_MAJOR_CONCURRENT,
        .mark_workers = default_workers(),
        .concurrent_sweep = true,
        .background_mark = true,
        .allow_synchronous_major = true,
        .pause_target_ns = LULL_DEFAULT_PAUSE_TARGET_NS,
        .release_delay_ns = LULL_DEFAULT_RELEASE_DELAY_NS,
        .finalizers = LULL_FINALIZERS_AUTO,
        .evacuation_threshold = LULL_DEFAULT_EVACUATION_THRESHOLD,
        .suspend_signal = SIGPWR,
        .restart_signal = SIGXCPU,
    };
    int r = parse_list(c, LULL_SOURCE_PARAMS, params, apply_param, true);
    if (!r)
        r = parse_env(c, "LULL_GC_PARAMS", c->environment == LULL_ENV_ALL, apply_param, true);
    if (!r)
        r = parse_env(c, "LULL_GC_DEBUG", c->environment != LULL_ENV_NONE, apply_debug, false);
    if (!r && c->suspend_signal == c->restart_signal) {
        lull_warn("lull_init", "suspend-signal and restart-signal must differ (both %d)", c->suspend_signal);
        r = -EINVAL;
    }
    return r;
}

lull_config lull_cfg;

static atomic_bool initialised;

bool lull_is_initialised(void)
{
    return atomic_load_explicit(&initialised, memory_order_acquire);
}

void lull_set_initialised(bool on)
{
    atomic_store_explicit(&initialised, on, memory_order_release);
}
