/* config.h — every tunable of the collector in one struct, parsed from the
 * lull_init argument, LULL_GC_PARAMS and LULL_GC_DEBUG. Parsing has no side
 * effect besides filling the struct, so a rejected configuration leaves the
 * process as if lull_init had never been called. */
#ifndef LULL_CONFIG_H
#define LULL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LULL_DEFAULT_PAUSE_TARGET_NS ((uint64_t)5000000)
#define LULL_DEFAULT_EVACUATION_THRESHOLD 66u   /* SGen's */
#define LULL_PROMOTION_AGE_AUTO 0u
#define LULL_DEFAULT_HEAP_GROWTH 100u
#define LULL_DEFAULT_RELEASE_DELAY_NS ((uint64_t)1000000000)   /* release-delay=1s */
#define LULL_RELEASE_DELAY_MAX_NS ((uint64_t)3600 * 1000000000)

enum lull_major_mode { LULL_MAJOR_CONCURRENT, LULL_MAJOR_STW };
enum lull_finalizer_mode { LULL_FINALIZERS_AUTO, LULL_FINALIZERS_MANUAL };

/* mark-workers: at most this many threads trace in a pause. */
#define LULL_MAX_WORKERS 64

typedef struct lull_config {
    /* LULL_GC_PARAMS */
    size_t nursery_size;          /* power of two */
    size_t max_heap_size;         /* 0: no limit */
    unsigned heap_growth;         /* percent: the heap goal is live x (1 + heap_growth / 100) */
    size_t memory_limit;          /* soft: the goal is at most this (gc/pacer.c); 0: none */
    unsigned promotion_age;       /* minors a nursery object survives before promotion: 1 or 2
                                     (nursery.h), or LULL_PROMOTION_AGE_AUTO (policy.c decides) */
    enum lull_major_mode major;
    unsigned mark_workers;
    bool concurrent_sweep;
    bool background_mark;         /* a concurrent mark runs on the workers (no: only in lull_collect_step) */
    bool card_every_store;        /* card-filter=no: every store marks its card, mark or no mark */
    bool allow_synchronous_major;
    uint64_t pause_target_ns;     /* what minors aim at (policy.c sizes the nursery) */
    uint64_t release_delay_ns;    /* free memory stays resident this long before the background
                                     thread gives it back to the OS (gc/background.c); 0: at once */
    enum lull_finalizer_mode finalizers;
    unsigned evacuation_threshold; /* percent: a synchronous major evacuates classes occupied
                                      less than this (major.c); 0: never */
    int suspend_signal;
    int restart_signal;
    enum { LULL_ENV_ALL, LULL_ENV_DEBUG_ONLY, LULL_ENV_NONE }
        environment;              /* environment=yes|debug-only|no (lull_init's params only):
                                     which of LULL_GC_PARAMS and LULL_GC_DEBUG are applied */
    /* LULL_GC_DEBUG */
    bool verify;                  /* check the heap after every collection */
    bool poison;                  /* fill freed memory with a pattern */
    bool log;                     /* one line on stderr per collection */
    unsigned long collect_every;  /* collect every N allocations; 0 = off */
    unsigned fail_mmap;           /* every Nth page request fails; 0 = off */
    unsigned long mark_stack_limit; /* grey-stack entries before overflow; 0 = no limit */
    bool check_cards;             /* before each minor: old-to-young references have marked cards */
    bool verify_nursery;          /* after each minor: nothing points into the evacuated nursery */
    bool clear_nursery;           /* after each minor: poison the nursery's free fragments */
    bool verify_parallel;         /* after each parallel mark: re-mark serially and compare */
    bool plant_mark_fault;        /* testing verify-parallel: each parallel mark loses an object */
    enum { LULL_PLANT_NONE, LULL_PLANT_SLOT, LULL_PLANT_ROOT }
        plant_evac_fault;         /* testing verify: an evacuating mark leaves one heap slot, or one
                                     root, at the old copy */
    bool verify_concurrent;       /* final pause: re-mark from the roots, every reachable object marked */
    bool check_mod_union;         /* final pause: marked -> unmarked references lie on dirty cards */
    unsigned mark_delay_us;       /* the background marker sleeps this long every 64 objects */
    unsigned join_delay_us;       /* a worker sleeps this long before it joins a pause's job */
    uint32_t card_budget;         /* card-budget=N: every thread's card budget (policy.c); 0 = fitted */
    bool alloc_slow;              /* every allocation through the slow path (its probes see each one) */
    char heap_shot_file[512];     /* heap-shot=FILE: a per-type snapshot of every major appended; "" = off */
    char trace_file[512];         /* trace-file=PATH: the timeline (timeline.h); "" = off */
} lull_config;

/* Fill *cfg with defaults, then apply `params`, then LULL_GC_PARAMS, then
 * LULL_GC_DEBUG (each variable unless `params` refused it: environment=). Returns 0 or -EINVAL after printing one line that names
 * the offending key. */
int lull_config_parse(lull_config *cfg, const char *params);

/* Parse a size with an optional k/m/g suffix. 0 or -EINVAL. Exposed for the
 * unit tests. */
int lull_config_parse_size(const char *s, size_t *out);
/* Parse a time: digits and a unit, ns, us, ms or s. 0 or -EINVAL. */
int lull_config_parse_time(const char *s, uint64_t *ns);

/* The options (global): written by lull_init before any other thread can
 * see the collector, read-only until lull_shutdown. */
extern lull_config lull_cfg;

/* lull_init has completed and lull_shutdown has not begun (read by every
 * API entry, without a lock); set only by gc/init.c. */
bool lull_is_initialised(void);
void lull_set_initialised(bool on);


#endif
