/* policy.c — when to collect, and how big the heap is (policy.h).
 *
 * Owns: the pacing of concurrent majors (trigger and allowance), the
 * nursery's size for the pause target, the card budget, aging
 * (promotion-age=auto), and the rules for idle time (lull_idle).
 * Callers: the pauses (collect.c) report what each measured; allocation
 * and lull_idle ask what to run (lull_policy_decide, _idle_minor,
 * _idle_major). All with the gc lock held, except the getters read by
 * lull_get_stats and the barrier, which are relaxed atomics.
 * Invariants: every model is a moving average of what the program's own
 * pauses measured; the constants only stand in until a measurement
 * exists, and bound what one may say. doc/design-notes-pauses.md gives
 * the reasons behind the rules. */
#include "gc/policy.h"
#include "gc/pacer.h"
#include "gc/control.h"
#include "space/meter.h"

#include "gc/collect.h"
#include "space/heap.h"
#include "trace/mark.h"
#include "trace/minor.h"
#include "space/nursery.h"
#include "gc/threads.h"
#include "base/util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>

#define MIN_ALLOWANCE   ((uint64_t)4 << 20)
#define DEFAULT_RESERVE ((size_t)64 << 30)
#define MIN_RESERVE     ((size_t)256 << 20)
#define MIN_NURSERY     ((size_t)64 << 10)
#define NURSERY_FLOOR   ((size_t)256 << 10)   /* the adaptive nursery's smallest size */
#define MIN_SAMPLE      ((uint64_t)64 << 10)  /* a minor of fewer nursery bytes measures nothing */
/* The cost of a nursery byte before any minor has measured one (ns):
 * what a minor costs per nursery byte when it copies most of what it was
 * handed, as a program's first minors do while it builds its data. */
#define PER_BYTE_NS_UNMEASURED 1.4
/* The most EMPTY block bytes kept ready for promotion (lull_policy_block_reserve). */
#define MAX_BLOCK_RESERVE ((uint64_t)64 << 20)
#define CARD_NS_UNMEASURED 30.0   /* a dirty card's cost before a fit (ns) */
#define CARD_NS_MIN        5.0
#define CARD_NS_MAX        2000.0
#define CARD_BUDGET_MIN    1024u  /* cards a thread may always mark between minors */
#define CARD_GRANTS        4u     /* a thread's budget is handed out in this many grants */

/* Aging (promotion-age=auto): lull_policy_note_aging has the rule. */
#define AGING_GAIN       0.5
#define AGING_MIN_SAMPLE ((uint64_t)64 << 10)
#define AGING_TRIAL      8u
#define AGING_STOP_MIN   8u
#define AGING_STOP_MAX   256u

/* Written with the gc lock held only. The major heap's allocation since
 * the last major, the allowance and where the running mark began are the
 * allocation meter's (space/meter.h), read without the lock too. */
static struct {
    uint64_t trigger;           /* allocation at which a concurrent major starts */
    uint64_t sync_finishes;     /* running marks finished with the world stopped (atomic) */
    uint64_t mark_start_ns;     /* when the running mark began */
    /* Pacing (set_trigger), measured over the concurrent marks so far as
     * moving averages (weight 1/2): bytes the program allocated in the
     * major heap per ns while a mark ran, and live bytes a mark got
     * through per ns from its initial to its final pause. */
    double alloc_rate, mark_rate;
    bool measured;              /* the rates hold a measurement */

    /* The pause target (lull_set_pause_target). The model of a minor's
     * pause, fitted after every minor: fixed_ns + per_byte_ns * (bytes
     * handed out in the nursery since the last minor). */
    uint64_t target_ns;
    double fixed_ns, per_byte_ns;
    bool fixed_known, per_byte_known;
    bool fixed_outlier, per_byte_outlier;   /* the last sample was over twice the estimate */
    double predicted_ns;        /* for the nursery chosen last */
    /* The model's error (note_error): moving mean and variance of
     * pause / prediction over the minors' own pauses, apart for
     * minors outside a concurrent mark [0] and inside one [1]. */
    struct { double mean, var; unsigned n; } err[2];
    bool said_unreachable;      /* the log said once that the target cannot be met */
    double promoted_ema;        /* share of its nursery bytes a minor promotes (moving average, weight 1/4) */
    bool promoted_known;
    uint64_t over_target;       /* minors whose pause exceeded the target (read by lull_get_stats) */
    /* The card budget (lull_policy_set_card_budgets): the cost of a dirty
     * card in a minor's copying phase, fitted with the cost of a promoted
     * byte (the s_ sums, see fit_card_cost); the cards each thread may
     * newly mark in the minors' table before its barrier asks for a minor;
     * whether the minor running now was so asked for; how many were
     * (lull_get_stats). */
    double s_pp, s_pc, s_cc, s_tp, s_tc;
    bool fit_known;
    double card_ns;
    double copy_ns;             /* the fit's cost of a promoted byte (0: not fitted) */
    double asked_card_ns;       /* the copying phase per card of the minors the barrier asked for (0: none yet) */
    uint32_t card_budget;
    uint64_t cards_charged;     /* cards the threads' used-up grants counted since the last minor */
    bool card_minor;
    uint64_t minors_for_cards;
    /* Idle time (lull_policy_idle_minor): the program's allocation at the
     * last lull_idle call, the allocation between two calls (moving
     * average, weight 1/4), and the minors run in idle time. */
    uint64_t idle_allocated;
    double idle_period;
    bool idle_period_known;
    uint64_t minors_idle;
    /* The pause of the minors run in idle time (moving average, weight
     * 1/4, each sample at most twice the average); whether the minor
     * running now is one; minors since the last lull_idle call. */
    double idle_pause_ns;
    bool idle_pause_known;
    double idle_ns;             /* the idle time lull_idle calls give (moving average) */
    bool idle_ns_known;         /* also: a call has come, idle_allocated holds its allocation */
    bool idle_minor;
    uint64_t minors_since_idle_call;
    /* Majors' pauses in idle time (lull_policy_idle_major): a concurrent
     * mark's final pause (moving average, weight 1/4, of those that found
     * the background work done), a synchronous major's pause per live byte
     * (the same), the live bytes the last major found, and the pauses
     * lull_idle ran (majors_idle, read by lull_get_stats). */
    double final_pause_ns, sync_ns_per_live;
    bool final_pause_known, sync_known;
    uint64_t live;
    uint64_t majors_idle;
    /* Aging (promotion-age=auto: lull_policy_note_aging). */
    bool aging_on;                /* the next minor may age */
    double surv_on, surv_off;     /* promoted over handed out, with and without aging (moving averages) */
    bool surv_on_known, surv_off_known;
    unsigned aging_phase;         /* minors since aging last turned on or off */
    unsigned aging_left;          /* minors left in this trial or stop (0: aging, no trial) */
    unsigned aging_backoff;       /* minors the next stop lasts */
    /* Steps (lull_collect_step): a step marked in the running mark, and
     * the budget of the last such step. */
    bool stepped;
    uint64_t step_budget_ns;
} policy_g;

static uint32_t card_budget_for(unsigned threads);
static size_t size_for_target(void);
static size_t size_for(bool marking);

static double per_byte_ns(void)
{
    return policy_g.per_byte_known ? policy_g.per_byte_ns : PER_BYTE_NS_UNMEASURED;
}

static inline void put(uint64_t *field, uint64_t v)
{
    __atomic_store_n(field, v, __ATOMIC_RELAXED);
}

/* Pacing of concurrent majors. A mark that starts when allocated_since
 * reaches `trigger` should end before the allowance is used up. The next
 * mark is predicted to take live / mark_rate ns (the live size the last
 * major found, at the rate marks got through it), and the program to
 * allocate alloc_rate bytes per ns meanwhile: the trigger leaves room for
 * 1.5 times that, between an eighth and seven eighths of the allowance;
 * half of it before anything is measured. A mark still running when the
 * allowance is used up is finished with the world stopped if synchronous
 * majors are allowed; if not, the heap grows until the mark ends on its
 * own (and the rates measured then start the next one earlier). */
static void set_trigger(void)
{
    uint64_t a = lull_meter_g.allowance;
    uint64_t t = lull_pacer_trigger(a, policy_g.live, policy_g.alloc_rate,
                                    policy_g.measured ? policy_g.mark_rate : 0);
    put(&policy_g.trigger, lull_cfg.major == LULL_MAJOR_CONCURRENT ? t : a);
}

void lull_policy_init(void)
{
    policy_g.target_ns = lull_cfg.pause_target_ns;
    policy_g.fixed_known = policy_g.per_byte_known = policy_g.said_unreachable = false;
    policy_g.fixed_outlier = policy_g.per_byte_outlier = false;
    policy_g.fixed_ns = policy_g.per_byte_ns = policy_g.predicted_ns = 0;
    memset(policy_g.err, 0, sizeof policy_g.err);
    policy_g.promoted_ema = 0;
    policy_g.promoted_known = false;
    __atomic_store_n(&policy_g.over_target, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&policy_g.minors_for_cards, 0, __ATOMIC_RELAXED);
    policy_g.idle_allocated = 0;
    policy_g.idle_period_known = false;
    policy_g.idle_period = 0;
    policy_g.idle_pause_ns = policy_g.idle_ns = 0;
    policy_g.idle_ns_known = false;
    policy_g.idle_pause_known = policy_g.idle_minor = false;
    policy_g.minors_since_idle_call = UINT64_MAX;
    __atomic_store_n(&policy_g.minors_idle, 0, __ATOMIC_RELAXED);
    policy_g.final_pause_ns = policy_g.sync_ns_per_live = 0;
    policy_g.final_pause_known = policy_g.sync_known = false;
    policy_g.live = 0;
    __atomic_store_n(&policy_g.sync_finishes, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&policy_g.majors_idle, 0, __ATOMIC_RELAXED);
    /* auto starts without aging, to measure what minors promote so. */
    policy_g.aging_on = false;
    lull_minor_set_aging(lull_policy_aging());
    policy_g.surv_on = policy_g.surv_off = 0;
    policy_g.surv_on_known = policy_g.surv_off_known = false;
    policy_g.aging_phase = 0;
    policy_g.aging_left = AGING_STOP_MIN;
    policy_g.aging_backoff = 2 * AGING_STOP_MIN;
    policy_g.s_pp = policy_g.s_pc = policy_g.s_cc = policy_g.s_tp = policy_g.s_tc = 0;
    policy_g.fit_known = policy_g.card_minor = false;
    policy_g.card_ns = CARD_NS_UNMEASURED;
    policy_g.copy_ns = 0;
    policy_g.asked_card_ns = 0;
    __atomic_store_n(&policy_g.card_budget, card_budget_for(1), __ATOMIC_RELAXED);
    put(&lull_meter_g.allocated, 0);
    put(&lull_meter_g.mark_start, 0);
    put(&lull_meter_g.mark_room, 0);
    policy_g.mark_start_ns = 0;
    lull_pacer_init(lull_cfg.heap_growth, lull_cfg.memory_limit);
    put(&lull_meter_g.allowance, lull_pacer_allowance(0, lull_cfg.nursery_size));
    policy_g.alloc_rate = policy_g.mark_rate = 0;
    policy_g.measured = false;
    set_trigger();
    /* The first nursery: nursery-size, or less if a minor of that many
     * bytes is predicted to miss the target at the unmeasured cost. */
    lull_nursery_resize(size_for_target());
    policy_g.predicted_ns = per_byte_ns() * (double)lull_nursery_size();
    /* Nothing measured: the first minor may promote its whole nursery, into
     * blocks made ready ahead (lull_init touches them before it returns). */
    lull_major_set_block_reserve(lull_policy_block_reserve());
}

void lull_policy_note_mark_start(void)
{
    /* The runway a mark started at its trigger has: one that starts later
     * (a large allocation jumped past the trigger) keeps it all the same,
     * so that it is paced, not finished with the world stopped at once. */
    uint64_t a = lull_meter_g.allowance, t = policy_g.trigger;
    put(&lull_meter_g.mark_room, a > t ? a - t : a / 8);
    put(&lull_meter_g.mark_start, lull_meter_g.allocated);
    policy_g.mark_start_ns = lull_now_ns();
    policy_g.stepped = false;
    /* The mark is done once a preclean pass finds no more dirty cards than
     * the final pause rescans in half the pause target (its roots and the
     * nursery's objects take the rest), at the minors' measured card cost. */
    lull_mark_set_final_budget((size_t)((double)lull_policy_pause_target() / 2 / lull_policy_card_ns()));
    /* Minors inside the mark have a margin of their own (note_error); the
     * mark is not yet flagged as running here (lull_marking). */
    size_t n = size_for(true);
    if (n < lull_nursery_size())
        lull_nursery_resize(n);
}

static void average(double *v, double sample)
{
    *v = policy_g.measured ? (*v + sample) / 2 : sample;
}

void lull_policy_after_major(uint64_t live_bytes, double done)
{
    /* A concurrent major (its initial pause noted the start): measure. A
     * mark the allowance cut short got through only `done` of the live
     * heap in that time, and is counted so: counted as whole, its rate
     * would be too high and the next mark would start too late. A mark
     * that began with its allowance already used up (a large allocation
     * took the program past both trigger and allowance at once) ran for
     * no allocation at all: it measures neither rate (it would put the
     * allocation rate at 0 and start the next mark too late). */
    if (policy_g.mark_start_ns && lull_meter_g.allocated >= lull_meter_g.mark_start &&
        lull_meter_g.mark_start < lull_meter_g.allowance) {
        double wall = (double)(lull_now_ns() - policy_g.mark_start_ns);
        if (wall < 1)
            wall = 1;
        /* The mark's own time ends where its background job did: the final
         * pause may have waited for an idle call since (up to a frame). */
        uint64_t done_ns = lull_mark_background_done_ns();
        double mark_wall = done_ns > policy_g.mark_start_ns ? (double)(done_ns - policy_g.mark_start_ns) : wall;
        if (mark_wall < 1)
            mark_wall = 1;
        bool had = policy_g.measured;
        lull_pacer_note_mark_end(lull_meter_g.mark_start, lull_meter_g.allocated, done);
        average(&policy_g.alloc_rate, (double)(lull_meter_g.allocated - lull_meter_g.mark_start) / wall);
        /* A mark cut short before its job got through a quarter of the
         * heap says too little about the rate to go on: the last estimate
         * stands, if there is one. */
        if (done >= 0.25 || !had)
            average(&policy_g.mark_rate, (done < 0.25 ? 0.25 : done) *
                                             (double)(live_bytes > MIN_ALLOWANCE ? live_bytes : MIN_ALLOWANCE) / mark_wall);
        policy_g.measured = true;
    }
    put(&lull_meter_g.allocated, 0);
    put(&lull_meter_g.mark_start, 0);
    put(&lull_meter_g.mark_room, 0);
    policy_g.mark_start_ns = 0;
    policy_g.live = live_bytes;
    lull_control_note_major();
    put(&lull_meter_g.allowance, lull_pacer_allowance(live_bytes, lull_nursery_size()));
    set_trigger();
}

/* ------------------------------------------------------------------------ */
/* The nursery's size                                                       */
/* ------------------------------------------------------------------------ */

/* The program calls lull_idle (at least once every third minor) and the
 * minors run there fit the idle time it gives: those are its minors. */
#define IDLE_MINORS_BETWEEN_CALLS 2u
static bool calls_idle(void)
{
    return policy_g.minors_since_idle_call <= IDLE_MINORS_BETWEEN_CALLS;
}

static bool idle_minors_rule(void)
{
    /* An idle minor has run (idle_pause_known): so calls have come, and
     * the allocation between them and the idle time are known. */
    return calls_idle() && policy_g.idle_pause_known && policy_g.idle_pause_ns <= policy_g.idle_ns;
}

/* The rule. A minor's pause is modelled as
 *     pause = fixed + per_byte * N
 * where N is the nursery allocated since the previous minor; fixed is what
 * does not depend on N (stopping and restarting the threads, scanning
 * their stacks and pinning, rebuilding the free space: the pause minus the
 * copying phase), and per_byte is the copying phase (precise roots
 * forwarded, dirty cards scanned, survivors copied) divided by N, which is
 * the survival rate times the cost per surviving byte plus the dirty cards
 * per allocated byte times the cost per card, as this program behaves now.
 * Both are exponential moving averages (weight 1/4 for the new sample; a
 * minor of less than MIN_SAMPLE only updates `fixed`). Before the first is
 * measured, fixed is taken as 0 and per_byte as PER_BYTE_NS_UNMEASURED, so
 * the first nursery is min(nursery-size, target / PER_BYTE_NS_UNMEASURED).
 * After each minor the nursery is sized so that the next one is predicted
 * to take the target:
 *     N = (target - fixed) / per_byte
 * cut to [NURSERY_FLOOR, nursery-size] and to at most twice the present
 * size (a shrink is immediate, growth one doubling per minor: a phase of
 * low survival that ends should not meet a huge nursery). When even
 * NURSERY_FLOOR is predicted to miss the target, the log says so once. */
static double margin_for(bool marking);
static size_t size_for(bool marking)
{
    size_t ceiling = lull_nursery_ceiling(), floor = NURSERY_FLOOR < ceiling ? NURSERY_FLOOR : ceiling;
    double per_byte = per_byte_ns();
    double room = (double)policy_g.target_ns / margin_for(marking) - policy_g.fixed_ns;
    double n = room > 0 ? room / (per_byte > 1e-6 ? per_byte : 1e-6) : 0;
    if (n < (double)floor) {
        if (lull_cfg.log && !policy_g.said_unreachable)
            fprintf(stderr, "lull: pause target %.3f ms cannot be met: a minor of the smallest nursery (%zu KiB) "
                    "is predicted to take %.3f ms (%.3f ms fixed, %.3f ns per nursery byte); said once\n",
                    (double)policy_g.target_ns / 1e6, floor >> 10,
                    (policy_g.fixed_ns + per_byte * (double)floor) / 1e6, policy_g.fixed_ns / 1e6, per_byte);
        policy_g.said_unreachable = true;
        n = (double)floor;
    }
    double grow = 2.0 * (double)lull_nursery_size();
    if (n > grow)
        n = grow;
    /* A program that calls lull_idle between its units of work: while the
     * minors run there fit the idle time it gives, the nursery holds at
     * least a unit's allocation and a quarter, so that no minor need come
     * in the middle of a unit (lull_policy_idle_minor), even where the
     * target alone would make it smaller, or cannot be met at all: those
     * minors are in time the program said it had nothing to do, and they
     * cost what a unit dirtied and kept, whatever the nursery's size (the
     * per-byte model above does not describe them). A minor in the middle
     * of a unit that allocates more than usual may then take longer than
     * the target. The doubling limit does not hold back this size: the
     * unit's allocation is measured, not guessed, and when the rule comes
     * back (calls resume after units too long to leave idle time, which
     * turned it off and let the target shrink the nursery) a nursery
     * growing one doubling per minor would be filled in the middle of the
     * next units, each such minor promoting a unit's temporaries. */
    if (idle_minors_rule() && n < 1.25 * policy_g.idle_period)
        n = 1.25 * policy_g.idle_period;
    /* An open no-GC region's bytes (control.c): its nursery stays. */
    if (n < (double)lull_control_nursery_floor())
        n = (double)lull_control_nursery_floor();
    return n > (double)ceiling ? ceiling : (size_t)n;
}

/* The nursery for the next minor, in the state the program is in. */
static size_t size_for_target(void)
{
    return size_for(lull_marking());
}

/* The pause the cards are budgeted against: the target, or while the
 * minors run in idle time (size_for_target) the idle time given, theirs
 * to scan the cards in: a budget cut to the target would bring minors
 * back into the program's units of work. */
static double card_target_ns(void)
{
    double target = (double)policy_g.target_ns;
    if (idle_minors_rule() && policy_g.idle_ns > target)
        target = policy_g.idle_ns;
    return target;
}

/* The card budget: the cards whose scan alone would take what the target
 * leaves beyond a minor's fixed cost, shared evenly among the attached
 * threads, each at least CARD_BUDGET_MIN. A program's usual minors stay
 * below it (the nursery is sized for their cards and copying together:
 * size_for_target), so it ends only a run of card marking the nursery's
 * allocation does not explain; a smaller budget would end the usual
 * minors a little early, through the barrier, and add minors. It is
 * handed out in grants (lull_policy_card_grant); at the end of each the
 * policy judges the minor the cards and the nursery would make together
 * (cards_minor_due). LULL_GC_DEBUG=card-budget=N sets it. */
static uint32_t card_budget_for(unsigned threads)
{
    if (lull_cfg.card_budget)
        return lull_cfg.card_budget;      /* LULL_GC_DEBUG=card-budget=N */
    double room = card_target_ns() - policy_g.fixed_ns;
    double total = room > 0 ? room / lull_policy_card_ns() : 0;
    double per = total / (threads ? threads : 1);
    return per < CARD_BUDGET_MIN ? CARD_BUDGET_MIN : per > (double)(1u << 30) ? (1u << 30) : (uint32_t)per;
}

static void ema(double *v, bool *known, double sample)
{
    *v = *known ? *v + (sample - *v) / 4 : sample;
    *known = true;
}

/* The same, for a pause: a sample counts at most twice the average, so
 * that one pause the VM stretched does not flip a rule that compares the
 * average with an idle time. */
static void ema_pause(double *v, bool *known, double sample)
{
    ema(v, known, *known && sample > 2 * *v ? 2 * *v : sample);
}

/* The minor's model: a sample over twice the estimate counts as twice the
 * estimate unless the sample before it was over too, and then it replaces
 * the estimate. One minor stretched by what the nursery's size cannot
 * change (a descheduled thread, page faults, a slow stop of the background
 * job) moves the model by half at most; a real rise in cost (the
 * program's survival jumps) is taken whole from its second minor on. A
 * rise weighs 1/2, a fall 1/4: a model that lags a rise sizes nurseries
 * past the target until it catches up, one that lags a fall only runs a
 * few more minors; the margin (note_error) learns what the bias leaves. */
static void ema_robust(double *v, bool *known, bool *outlier, double sample)
{
    bool over = *known && sample > 2 * *v;
    if (over && *outlier)
        *v = sample;
    else if (*known && sample > *v)
        *v += ((over ? 2 * *v : sample) - *v) / 2;
    else
        ema(v, known, sample);
    *outlier = over;
}

/* The model predicts a minor's mean pause; the target is for nearly every
 * pause. So the nursery is sized for the target over a margin: the ratio
 * of pause to prediction ERR_SPREAD standard deviations above its mean
 * (about the 99th percentile of a normal spread), taken apart for minors
 * inside a concurrent mark (their copies are marked, their cards more)
 * and outside one, for the state the program is in now; at least 1 (the
 * margin never enlarges the nursery) and at most MARGIN_MAX. The moving
 * mean and variance take in 1/16 of each new sample, and a sample counts
 * at most ERR_CAP (one pause the VM stretched moves them little); until
 * ERR_MIN_SAMPLES minors of a state are measured its margin is MARGIN_MAX
 * (nothing is known of the spread: the program's first minors, and the
 * first of its first mark, keep the target too). The
 * pause compared excludes the wait for the background job, which the
 * nursery's size does not change. */
#define ERR_WEIGHT (1.0 / 16)
#define ERR_SPREAD 2.33
#define ERR_CAP 4.0
#define ERR_MIN_SAMPLES 4u
#define MARGIN_MAX 1.5
static void note_error(bool marking, double pause_ns, double predicted_ns)
{
    if (!(pause_ns > 0) || !(predicted_ns > 0))
        return;
    double x = pause_ns / predicted_ns;
    if (x > ERR_CAP)
        x = ERR_CAP;
    __typeof__(policy_g.err[0]) *e = &policy_g.err[marking];
    if (!e->n) {
        e->mean = x;
        e->var = 0;
    } else {
        double d = x - e->mean;
        e->mean += ERR_WEIGHT * d;
        e->var = (1 - ERR_WEIGHT) * (e->var + ERR_WEIGHT * d * d);
    }
    if (e->n < UINT_MAX)
        e->n++;
}

/* sqrt for v >= 0 without libm (Newton's iteration from above). */
static double root(double v)
{
    if (!(v > 0))
        return 0;
    double x = v > 1 ? v : 1;
    for (int i = 0; i < 64; i++) {
        double next = (x + v / x) / 2;
        if (next >= x)
            break;
        x = next;
    }
    return x;
}

static double margin_for(bool marking)
{
    __typeof__(policy_g.err[0]) *e = &policy_g.err[marking];
    if (e->n < ERR_MIN_SAMPLES)
        return MARGIN_MAX;
    double q = e->mean + ERR_SPREAD * root(e->var);
    return q < 1.0 ? 1.0 : q > MARGIN_MAX ? MARGIN_MAX : q;
}

static double margin(void)
{
    return margin_for(lull_marking());
}

double lull_policy_minor_margin(void)
{
    return margin();
}

/* The cost of a dirty card. A minor's copying phase takes about
 *     trace_ns = a * promoted + b * cards
 * (promoted: the bytes it copied out of the nursery; cards: dirty cards
 * scanned). a and b are fitted by least squares over every minor so far,
 * each sum a moving average (weight 1/8 for the newest minor), and b is
 * taken as the cost of a card once the two have varied apart enough to
 * tell them apart (their squared correlation below 0.9) and b comes out
 * positive; until then a card is taken to cost CARD_NS_UNMEASURED. Bounded
 * to [CARD_NS_MIN, CARD_NS_MAX]. a, when positive, is the cost of a
 * promoted byte (note_asked_minor). */
static void fit_card_cost(double p, double c, double t)
{
    double w = policy_g.fit_known ? 1.0 / 8 : 1.0;
    policy_g.s_pp += w * (p * p - policy_g.s_pp);
    policy_g.s_pc += w * (p * c - policy_g.s_pc);
    policy_g.s_cc += w * (c * c - policy_g.s_cc);
    policy_g.s_tp += w * (t * p - policy_g.s_tp);
    policy_g.s_tc += w * (t * c - policy_g.s_tc);
    policy_g.fit_known = true;
    double det = policy_g.s_pp * policy_g.s_cc - policy_g.s_pc * policy_g.s_pc;
    if (!(det > 0.1 * policy_g.s_pp * policy_g.s_cc))
        return;
    double b = (policy_g.s_pp * policy_g.s_tc - policy_g.s_pc * policy_g.s_tp) / det;
    double a = (policy_g.s_cc * policy_g.s_tp - policy_g.s_pc * policy_g.s_tc) / det;
    if (b > 0)
        policy_g.card_ns = b < CARD_NS_MIN ? CARD_NS_MIN : b > CARD_NS_MAX ? CARD_NS_MAX : b;
    if (a > 0)
        policy_g.copy_ns = a;
}

/* The cost of a card the budget counts with: the fitted one, or more if
 * the minors the barrier asked for took more per card: their copying
 * phase less the copying of what they promoted (at the fitted cost of a
 * promoted byte, PER_BYTE_NS_UNMEASURED until there is one), over their
 * cards (moving average, weight 1/2). The fit follows the usual minors,
 * whose cards are few and close together; the cards that end a budget are
 * many and scattered, and cost more each. Until the barrier has asked for
 * a minor, a card is taken to cost ASKED_CARD_NS_UNMEASURED at least.
 *
 * The copying is taken out because the barrier may ask in the middle of
 * the program's work, when all it has allocated is still alive: counted as
 * the cards' cost, that copying would raise the cost of a card, shrink the
 * budget, and make the barrier ask for more such minors, each with
 * everything surviving: the estimate would feed itself. */
#define ASKED_MIN_CARDS 1024u
#define ASKED_CARD_NS_UNMEASURED 100.0   /* a scattered card's cost until one is measured (ns) */
static void note_asked_minor(uint64_t promoted, uint64_t cards, uint64_t trace_ns)
{
    if (cards < ASKED_MIN_CARDS)
        return;
    double copy = (double)promoted * (policy_g.copy_ns > 0 ? policy_g.copy_ns : PER_BYTE_NS_UNMEASURED);
    double per = ((double)trace_ns > copy ? (double)trace_ns - copy : 0) / (double)cards;
    if (per < CARD_NS_MIN)
        per = CARD_NS_MIN;
    policy_g.asked_card_ns = policy_g.asked_card_ns > 0 ? (policy_g.asked_card_ns + per) / 2 : per;
}

void lull_policy_set_card_budgets(uint64_t promoted, uint64_t cards, uint64_t trace_ns)
{
    fit_card_cost((double)promoted, (double)cards, (double)trace_ns);
    if (policy_g.card_minor)
        note_asked_minor(promoted, cards, trace_ns);
    uint32_t b = card_budget_for(lull_threads_count());
    __atomic_store_n(&policy_g.card_budget, b, __ATOMIC_RELAXED);
    policy_g.cards_charged = 0;
    uint32_t g = lull_policy_card_grant();
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        t->tlab->cards_left = t->cards_granted = g;
}

uint32_t lull_policy_card_grant(void)
{
    uint32_t b = __atomic_load_n(&policy_g.card_budget, __ATOMIC_RELAXED);
    if (lull_cfg.card_budget)
        return b;                         /* each ask runs a minor (auto_decide) */
    return b / CARD_GRANTS < CARD_BUDGET_MIN ? (b < CARD_BUDGET_MIN ? b : CARD_BUDGET_MIN) : b / CARD_GRANTS;
}

/* A minor for the cards (gc lock held): the pause a minor run now is
 * predicted to take (the model's for what the nursery handed out, which
 * counts the cards its allocation usually brings, plus the cost of the
 * cards the used-up grants counted beyond them, plus `more` cards yet to
 * come) reaches the target over its margin: a minor late in a nursery
 * copies its survivors on top of the cards, and a nursery-full minor scans
 * the cards of grants used up before it on top of its own copying
 * (tests/unit/unit_card_grant.c). */
static bool cards_minor_due(double more)
{
    double now = policy_g.fixed_ns + per_byte_ns() * (double)lull_nursery_handed() +
                 lull_policy_card_ns() * ((double)policy_g.cards_charged + more);
    return now >= card_target_ns() / margin();
}

/* A minor for the cards: counted, and kept out of the model's error. */
static int minor_for_cards(const char **reason)
{
    *reason = "dirty cards";
    __atomic_fetch_add(&policy_g.minors_for_cards, 1, __ATOMIC_RELAXED);
    policy_g.card_minor = true;
    return LULL_GEN_NURSERY;
}

void lull_policy_after_minor(uint64_t handed, uint64_t trace_ns, uint64_t pause_ns, uint64_t job_wait_ns)
{
    uint64_t own_ns = pause_ns > job_wait_ns ? pause_ns - job_wait_ns : 0;
    if (own_ns && handed >= MIN_SAMPLE && policy_g.per_byte_known && !policy_g.card_minor && !policy_g.idle_minor)
        note_error(lull_marking(), (double)own_ns, policy_g.fixed_ns + per_byte_ns() * (double)handed);
    /* A minor the barrier asked for scanned more cards per nursery byte
     * than the program's usual minors: it says nothing of those, unless
     * it came with a quarter of the nursery or more handed out. */
    if (handed >= MIN_SAMPLE && (!policy_g.card_minor || handed >= lull_nursery_size() / 4))
        ema_robust(&policy_g.per_byte_ns, &policy_g.per_byte_known, &policy_g.per_byte_outlier,
                   (double)trace_ns / (double)handed);
    if (policy_g.idle_minor && pause_ns) {
        ema_pause(&policy_g.idle_pause_ns, &policy_g.idle_pause_known, (double)pause_ns);
    }
    if (policy_g.minors_since_idle_call < UINT64_MAX)
        policy_g.minors_since_idle_call++;
    policy_g.card_minor = false;
    if (pause_ns) {
        ema_robust(&policy_g.fixed_ns, &policy_g.fixed_known, &policy_g.fixed_outlier,
                   own_ns > trace_ns ? (double)(own_ns - trace_ns) : 0);
        if (pause_ns > policy_g.target_ns)
            __atomic_fetch_add(&policy_g.over_target, 1, __ATOMIC_RELAXED);
    }
    size_t n = size_for_target();
    lull_nursery_resize(n);
    policy_g.predicted_ns = policy_g.fixed_ns + per_byte_ns() * (double)lull_nursery_size();
    policy_g.idle_minor = false;
}

/* Idle time. A program that calls lull_idle between units of its work (a
 * game at the end of each frame's work, before its deadline) says when
 * the objects those units used are dead: a minor then promotes what lives
 * on, not the unit's temporaries, which a minor in the middle of a unit
 * would promote too.
 * The rule: run a minor now when the nursery would fill before the next
 * call (what is handed out plus the allocation between two calls reaches
 * the nursery's size), and the minor is predicted within the idle time
 * given: the average pause of the minors run in idle time, or before one
 * has run the model's fixed + per_byte * handed out; `left_ns` is what
 * is left of the idle time after a major's pause run first in it
 * (lull_policy_idle_major). Else nothing: the
 * minor comes when the nursery fills, as it would have. The first call
 * only starts the count of allocation between calls. Once such minors
 * run, they set the nursery's size and the card budget too
 * (idle_minors_rule). */
bool lull_policy_idle_minor(uint64_t idle_ns, uint64_t left_ns, uint64_t allocated)
{
    if (policy_g.idle_ns_known) {
        uint64_t since = allocated > policy_g.idle_allocated ? allocated - policy_g.idle_allocated : 0;
        ema(&policy_g.idle_period, &policy_g.idle_period_known, (double)since);
    }
    policy_g.idle_allocated = allocated;
    policy_g.minors_since_idle_call = 0;
    ema(&policy_g.idle_ns, &policy_g.idle_ns_known, (double)idle_ns);
    uint64_t handed = lull_nursery_handed();
    if (!handed || !policy_g.idle_period_known)
        return false;
    double predicted = policy_g.idle_pause_known ? policy_g.idle_pause_ns
                                                 : policy_g.fixed_ns + per_byte_ns() * (double)handed;
    if (predicted > (double)left_ns)
        return false;
    if ((double)handed + policy_g.idle_period < (double)lull_nursery_size())
        return false;
    __atomic_fetch_add(&policy_g.minors_idle, 1, __ATOMIC_RELAXED);
    policy_g.idle_minor = true;
    return true;
}

/* A major's pause, for lull_policy_idle_major's predictions: a final
 * pause that found the background work done, or a synchronous major
 * (per live byte it found). A pause the VM stretched counts at most twice
 * the average, as the idle minors' do. */
void lull_policy_after_major_pause(bool final, bool synchronous, uint64_t pause_ns, uint64_t live)
{
    if (final && !synchronous)
        ema_pause(&policy_g.final_pause_ns, &policy_g.final_pause_known, (double)pause_ns);
    else if (!final && synchronous && live)
        ema_pause(&policy_g.sync_ns_per_live, &policy_g.sync_known, (double)pause_ns / (double)live);
}

/* A final pause, predicted: the average of the last ones, or before one
 * has been measured, the fixed cost of a minor's pause (stopping the
 * world and scanning its roots, which a final pause does too; 0 before a
 * minor has measured it). */
static double predicted_final_pause_ns(void)
{
    if (policy_g.final_pause_known)
        return policy_g.final_pause_ns;
    return policy_g.fixed_known ? policy_g.fixed_ns : 0;
}

/* A synchronous major's pause, predicted: per live byte as the last ones
 * took, or before one has run, the live heap at the rate the concurrent
 * marks got through it (with the program running beside them: the world
 * stopped, the markers have the machine). Unknown (INFINITY) before a
 * major has measured either. */
static double predicted_sync_major_ns(void)
{
    if (policy_g.sync_known)
        return policy_g.sync_ns_per_live * (double)policy_g.live;
    if (policy_g.measured && policy_g.mark_rate > 0)
        return (double)policy_g.live / policy_g.mark_rate;
    return INFINITY;
}

/* Idle time, for the majors (lull_idle asks before the minor rule). The
 * final pause of a concurrent mark whose background work is done comes at
 * the next allocation that asks the policy; in idle time it lands between
 * the program's units of work instead: run it now when its pause is
 * predicted to fit `idle_ns` (predicted_final_pause_ns). An evacuating major the heap's
 * fragmentation asks for (lull_policy_prefers_evacuation) runs now when
 * it is predicted to fit (predicted_sync_major_ns): a game's loading
 * screen, a server's quiet spell. Else -1. */
int lull_policy_idle_major(uint64_t idle_ns, const char **reason)
{
    int what = -1;
    if (lull_marking()) {
        if (lull_mark_ready() && predicted_final_pause_ns() <= (double)idle_ns) {
            *reason = "idle time, concurrent mark done";
            what = LULL_COLLECT_MAJOR_FINISH;
        }
    } else if (lull_policy_prefers_evacuation() && predicted_sync_major_ns() <= (double)idle_ns) {
        *reason = "idle time, heap fragmented";
        what = LULL_GEN_MAJOR;
    }
    if (what >= 0)
        __atomic_fetch_add(&policy_g.majors_idle, 1, __ATOMIC_RELAXED);
    return what;
}

/* Aging (promotion-age=auto; nursery.h has the mechanism). An aged byte
 * costs a copy within the nursery, and saves the major heap a promoted
 * byte (its marking, its sweeping, the room it holds) only if it dies
 * before the next minor; and since the pause target counts the aged
 * copies in a minor's cost, the nursery shrinks while minors age, so that
 * more of each survives its first minor. What settles it is what minors
 * promote of what they were handed out, with aging and without: moving
 * averages (weight 1/4) of promoted / handed out over the minors of each
 * kind (a major's minor, which promotes all, or one of less than
 * AGING_MIN_SAMPLE handed out, does not count, nor the first minor after
 * a switch, which promotes what aged before it or, after a stop, nothing).
 * Minors start without aging, for AGING_STOP_MIN; then a trial of
 * AGING_TRIAL aging minors. Aging stays on while it promotes at most
 * AGING_GAIN of what minors promoted without it; else it stops, for twice
 * as long as the last stop (at most AGING_STOP_MAX minors), then another
 * trial; a trial that passes brings the stop back to the least. Aging
 * pays for a program whose temporaries outlive one minor but not two, and
 * costs one whose objects live on or outlive several minors: auto measures
 * which this program is, now. promotion-age=2 ages always, 1 never. */
bool lull_policy_aging(void)
{
    return lull_cfg.promotion_age == 2 || (lull_cfg.promotion_age == LULL_PROMOTION_AGE_AUTO && policy_g.aging_on);
}

static void aging_switch(bool on, unsigned left)
{
    policy_g.aging_on = on;
    lull_minor_set_aging(lull_policy_aging());
    policy_g.aging_phase = 0;
    policy_g.aging_left = left;
}

void lull_policy_note_aging(bool may_age, uint64_t handed, uint64_t promoted)
{
    if (lull_cfg.promotion_age != LULL_PROMOTION_AGE_AUTO || !may_age)
        return;
    policy_g.aging_phase++;
    if (policy_g.aging_phase > 1 && handed >= AGING_MIN_SAMPLE) {
        double r = (double)promoted / (double)handed;
        if (policy_g.aging_on)
            ema(&policy_g.surv_on, &policy_g.surv_on_known, r);
        else
            ema(&policy_g.surv_off, &policy_g.surv_off_known, r);
    }
    if (policy_g.aging_left && --policy_g.aging_left)
        return;                  /* a stop or a trial goes on */
    if (!policy_g.aging_on) {
        policy_g.surv_on_known = false;          /* the trial measures afresh */
        aging_switch(true, AGING_TRIAL);
        return;
    }
    /* The end of a trial, or a minor that aged after one passed. */
    bool pays = policy_g.surv_on_known && policy_g.surv_off_known &&
                policy_g.surv_on <= AGING_GAIN * policy_g.surv_off;
    if (pays) {
        policy_g.aging_backoff = AGING_STOP_MIN;
        return;
    }
    if (!policy_g.surv_on_known)
        return;                  /* nothing measured yet: age on */
    aging_switch(false, policy_g.aging_backoff);
    policy_g.aging_backoff = policy_g.aging_backoff * 2 > AGING_STOP_MAX ? AGING_STOP_MAX : policy_g.aging_backoff * 2;
}

uint64_t lull_policy_majors_idle(void)
{
    return __atomic_load_n(&policy_g.majors_idle, __ATOMIC_RELAXED);
}

uint64_t lull_policy_minors_idle(void)
{
    return __atomic_load_n(&policy_g.minors_idle, __ATOMIC_RELAXED);
}

uint64_t lull_policy_minors_for_cards(void)
{
    return __atomic_load_n(&policy_g.minors_for_cards, __ATOMIC_RELAXED);
}

double lull_policy_card_ns(void)
{
    double asked = policy_g.asked_card_ns > 0 ? policy_g.asked_card_ns : ASKED_CARD_NS_UNMEASURED;
    double c = policy_g.card_ns > asked ? policy_g.card_ns : asked;
    return c > CARD_NS_MAX ? CARD_NS_MAX : c;
}

uint32_t lull_policy_card_budget(void)
{
    return __atomic_load_n(&policy_g.card_budget, __ATOMIC_RELAXED);
}

void lull_policy_pacing(uint64_t *trigger, uint64_t *allowance)
{
    *trigger = policy_g.trigger;
    *allowance = lull_meter_g.allowance;
}

/* EMPTY blocks kept ready for promotion (space/major.c): twice what the
 * next minor is expected to promote, the share of its bytes minors
 * promote on average times the nursery's size, at most MAX_BLOCK_RESERVE.
 * The share is learnt from minors handed at least AGING_MIN_SAMPLE: one
 * run early (young large objects, an explicit call) says little, and
 * counted in bytes it would empty the reserve the next full one needs.
 * Until one is measured, a whole nursery (lull_policy_init). */
uint64_t lull_policy_block_reserve(void)
{
    double share = policy_g.promoted_known ? policy_g.promoted_ema : 0.5;
    double r = 2 * share * (double)lull_nursery_size();
    return r < (double)MAX_BLOCK_RESERVE ? (uint64_t)r : MAX_BLOCK_RESERVE;
}

void lull_policy_note_promoted(uint64_t promoted, uint64_t handed)
{
    if (handed < AGING_MIN_SAMPLE)
        return;
    ema(&policy_g.promoted_ema, &policy_g.promoted_known, (double)promoted / (double)handed);
    lull_major_set_block_reserve(lull_policy_block_reserve());
}

double lull_policy_predicted_minor_ns(void)
{
    return policy_g.predicted_ns;
}

uint64_t lull_policy_minors_over_target(void)
{
    return __atomic_load_n(&policy_g.over_target, __ATOMIC_RELAXED);
}

uint64_t lull_policy_pause_target(void)
{
    return __atomic_load_n(&policy_g.target_ns, __ATOMIC_RELAXED);
}

void lull_policy_set_pause_target(uint64_t ns)
{
    __atomic_store_n(&policy_g.target_ns, ns, __ATOMIC_RELAXED);
    policy_g.said_unreachable = false;
    /* Resize now on what is known; a larger size waits for the next minor. */
    lull_nursery_resize(size_for_target());
}

/* Memory pressure added since the last major counts as allocation
 * (lull_add_memory_pressure). */
static uint64_t allocated_with_pressure(void)
{
    return lull_meter_g.allocated + lull_control_pressure_growth();
}

static bool major_due(void)
{
    return allocated_with_pressure() >= policy_g.trigger;
}

/* The allowance is used up: while a mark runs, its runway (meter.h). */
static bool over_allowance(void)
{
    uint64_t end = lull_marking() ? lull_meter_runway_end() : lull_meter_g.allowance;
    return lull_meter_g.allocated >= end;
}

/* A synchronous major is worth its pause when synchronous majors are
 * allowed and evacuation would give back a quarter of the heap, at
 * least FRAGMENTED_MIN (the last major's sweep measured it: the free slots of the
 * sparse blocks of the size classes evacuation would empty, major.c). A
 * concurrent major never moves anything, so a heap fragmented by a phase
 * of the program that freed most of what it allocated keeps its sparse
 * blocks until a synchronous one runs. */
#define FRAGMENTED_MIN ((uint64_t)8 << 20)
bool lull_policy_prefers_evacuation(void)
{
    uint64_t f = lull_major_fragmented_bytes();
    return lull_cfg.major == LULL_MAJOR_CONCURRENT && lull_synchronous_major_allowed() && f >= FRAGMENTED_MIN &&
           f >= (uint64_t)lull_heap_bytes_held() / 4;
}

/* A concurrent major's pauses visit every object of the nursery (mark.h):
 * at a full nursery the initial or final pause takes as long as a minor.
 * So while the nursery holds more than NURSERY_LIGHT of its size, a
 * major's pause that is due waits for the next minor to empty it, and the
 * first decision point after that minor runs it: a start as long as the
 * program is less than a quarter of the runway the pacer left past the
 * trigger, a done mark's end until the runway is used up (meter.h) or for
 * at most FINAL_WAIT_TARGETS pause targets (a program that only stores
 * fills no nursery: its final pause comes from its barrier,
 * lull__mark_stores_slow). */
#define NURSERY_LIGHT 0.25
static bool nursery_heavy(void)
{
    return (double)lull_nursery_handed() > NURSERY_LIGHT * (double)lull_nursery_size();
}

#define FINAL_WAIT_TARGETS 4
static bool final_waits_for_minor(void)
{
    if (!nursery_heavy() || over_allowance())
        return false;
    uint64_t done = lull_mark_background_done_ns();
    return done && lull_now_ns() - done < FINAL_WAIT_TARGETS * policy_g.target_ns;
}

bool lull_policy_major_waits_for_minor(void)
{
    return lull_marking() && lull_mark_ready() && nursery_heavy();
}

static bool start_waits_for_minor(void)
{
    uint64_t a = lull_meter_g.allowance, t = policy_g.trigger;
    return lull_cfg.major == LULL_MAJOR_CONCURRENT && nursery_heavy() &&
           allocated_with_pressure() < t + (a > t ? (a - t) / 4 : 0);
}

/* A major is due: a concurrent one, or a synchronous one with major=stw
 * or when the heap is fragmented enough to evacuate. Not the evacuating
 * one while the program calls lull_idle between its units of work (at
 * least every third minor): this is the middle of a unit, and an
 * evacuating major stops the world for the whole mark, many times a
 * concurrent major's pauses. It waits for an idle call long enough for it
 * (lull_policy_idle_major), an explicit lull_collect, or an allocation
 * that fails; meanwhile the majors are concurrent and the sparse blocks'
 * free slots are refilled where they are. */
static int start_major(const char **reason)
{
    if (lull_cfg.major != LULL_MAJOR_CONCURRENT)
        return LULL_GEN_MAJOR;
    if (lull_policy_prefers_evacuation()) {
        if (calls_idle()) {
            *reason = "allowance used up (heap fragmented: evacuation waits for idle time)";
            return LULL_COLLECT_MAJOR_START;
        }
        *reason = "allowance used up, heap fragmented";
        return LULL_GEN_MAJOR;
    }
    return LULL_COLLECT_MAJOR_START;
}

/* A done mark's final pause, asked for by an allocation, waits for the
 * next lull_idle call while the program makes them (at least every third
 * minor), the final pauses fit the idle time it gives (on average:
 * predicted_final_pause_ns) and the allowance is not used up: an allocation is in
 * the middle of a unit of work. Without the wait, the allocation that
 * follows the background's end takes the pause, in the middle of a unit,
 * every time. */
static bool final_pause_waits_for_idle(void)
{
    if (policy_g.stepped && !over_allowance() && predicted_final_pause_ns() <= (double)policy_g.step_budget_ns)
        return true;     /* the program's steps marked: its next step ends the mark */
    return calls_idle() && !over_allowance() &&
           predicted_final_pause_ns() <= policy_g.idle_ns;
}

void lull_policy_note_step(uint64_t budget_ns)
{
    policy_g.stepped = true;
    policy_g.step_budget_ns = budget_ns;
}

/* The program got past the running mark's runway (meter.h) by another
 * allowance, and by four nurseries at least (one minor's promotion may
 * take a small heap's whole allowance at once): pacing did not hold it. */
static bool far_past_allowance(void)
{
    uint64_t a = lull_meter_get(&lull_meter_g.allowance), got = lull_meter_get(&lull_meter_g.allocated);
    uint64_t end = lull_meter_runway_end();
    uint64_t over = got > end ? got - end : 0, nursery4 = 4 * (uint64_t)lull_nursery_size();
    return over >= a && over >= nursery4;
}

/* While a concurrent mark runs: its final pause once the background work
 * is done; else `otherwise`. A program that allocates past the allowance
 * waits for the markers in its slow paths (alloc.c: pacing), so the mark
 * still ends concurrently; only one that got far past it anyway (the
 * markers cannot keep up even so) has the mark finished with the world
 * stopped, when synchronous majors are allowed. */
static int while_marking(int otherwise, const char **reason)
{
    if (lull_mark_ready()) {
        if (final_pause_waits_for_idle() || final_waits_for_minor())
            return otherwise;
        *reason = "concurrent mark done";
        return LULL_COLLECT_MAJOR_FINISH;
    }
    if (!lull_cfg.background_mark && over_allowance()) {
        /* background-mark=no: only lull_collect_step marks, and the
         * program's steps did not end the mark within its allowance. */
        *reason = "allowance used up before the steps ended the mark";
        return LULL_COLLECT_MAJOR_FINISH;
    }
    if (far_past_allowance() && lull_synchronous_major_allowed()) {
        __atomic_fetch_add(&policy_g.sync_finishes, 1, __ATOMIC_RELAXED);
        *reason = "allowance used up before the concurrent mark ended";
        return LULL_COLLECT_MAJOR_FINISH;
    }
    return otherwise;
}

/* The young large bytes a minor is due at (heap.h): a nursery's worth,
 * or, when more pointer-free ones survived the last minor, that times the
 * heap growth (the goal's rule applied to them), so that objects the
 * program keeps for a while die young rather than age into the major heap
 * and wait for a major (those with references are left at the nursery's
 * worth: pauses scan them). Under a memory limit, at most what is left of
 * the major heap's allowance: the young set and the major heap share the
 * room. */
static uint64_t young_large_budget(void)
{
    uint64_t b = lull_los_survived_bytes() / 100 * lull_pacer_growth();
    uint64_t a = lull_meter_g.allowance, used = lull_meter_g.allocated;
    uint64_t left = used < a ? a - used : 0;
    if (lull_pacer_memory_limit() && b > left)
        b = left;
    return b > lull_nursery_size() ? b : lull_nursery_size();
}

static int auto_decide(lull_policy_event ev, unsigned long arg, const char **reason)
{
    switch (ev) {
    case LULL_POLICY_SLOW_ALLOC: {
        int what = -1;
        if (lull_marking()) {
            *reason = "";
            what = while_marking(-1, reason);
        } else if (major_due() && !start_waits_for_minor()) {
            *reason = "allowance used up";
            what = start_major(reason);
        }
        if (what < 0 && policy_g.cards_charged && cards_minor_due(0))
            what = minor_for_cards(reason);
        if (what < 0 && lull_los_young_bytes() >= young_large_budget()) {
            /* Large objects are young until a minor judges them (heap.h);
             * a program that allocates only those would never see one. */
            *reason = "young large objects";
            what = LULL_GEN_NURSERY;
        }
        return what;
    }
    case LULL_POLICY_CARDS:
        /* arg: the grant the asking thread used up. Not yet due: it gets
         * another (lull__cards_slow), and every thread may use up the one
         * it holds before the next asks. */
        policy_g.cards_charged += arg;
        if (!lull_cfg.card_budget &&
            !cards_minor_due((double)lull_policy_card_grant() * lull_threads_count()))
            return -1;
        return minor_for_cards(reason);
    case LULL_POLICY_NURSERY_FULL:
        /* Only a pause with a minor empties the nursery: a minor, or a
         * synchronous major (major=stw: the minor would promote into a
         * heap already due for one). A concurrent major's pauses run no
         * minor (mark.h); the allocation's next decision point starts or
         * finishes it. */
        *reason = "nursery full";
        if (!lull_marking() && major_due() && lull_cfg.major != LULL_MAJOR_CONCURRENT) {
            *reason = "allowance used up";
            return LULL_GEN_MAJOR;
        }
        return LULL_GEN_NURSERY;
    case LULL_POLICY_OUT_OF_MEMORY:
        /* Synchronous whatever the switch says (doc/api.md): the allocation
         * fails otherwise. A running concurrent mark is finished. */
        *reason = "allocation failed";
        return LULL_GEN_MAJOR;
    case LULL_POLICY_DEBUG_TICK:
        /* Every collect-every-th allocation, every fourth time a major;
         * with concurrent majors, every fourth time one starts or (the
         * next such time) ends, so marks run across three minors. */
        *reason = "collect-every";
        if (!lull_cfg.collect_every || arg % lull_cfg.collect_every)
            return -1;
        if ((arg / lull_cfg.collect_every) % 4)
            return LULL_GEN_NURSERY;
        if (lull_cfg.major != LULL_MAJOR_CONCURRENT)
            return LULL_GEN_MAJOR;
        return lull_marking() ? LULL_COLLECT_MAJOR_FINISH : LULL_COLLECT_MAJOR_START;
    }
    LULL_ASSERT(!"unknown policy event");
    return -1;
}

size_t lull_policy_size_heap(lull_config *cfg)
{
    /* The range: max-heap-size caps what is in use, so a little more than
     * it is reserved (large objects need contiguous runs). */
    size_t reserve = DEFAULT_RESERVE;
    if (cfg->max_heap_size) {
        size_t want = lull_align_up(cfg->max_heap_size, LULL_BLOCK_SIZE) * 2;
        if (want < MIN_RESERVE)
            want = MIN_RESERVE;
        if (want < reserve)
            reserve = want;
    }
    /* The nursery: a power of two at most an eighth of max-heap-size. */
    while (cfg->max_heap_size && cfg->nursery_size > cfg->max_heap_size / 8 && cfg->nursery_size > MIN_NURSERY)
        cfg->nursery_size /= 2;
    return reserve;
}

/* The share of the running mark's runway (from the allocation at its start
 * to the allowance) the program has allocated since: 0 at the start, 1
 * when the allowance is used up (more when the heap grew past it). Read
 * without the gc lock by the preclean (mark.c: preclean_step), so its
 * three fields may come from moments a few allocations apart. */

/* The growth or the memory limit changed (gc lock held): the allowance and
 * the trigger from the last live size, at once. */
void lull_pacer_goal_changed(void)
{
    put(&lull_meter_g.allowance, lull_pacer_allowance(policy_g.live, lull_nursery_size()));
    set_trigger();
}

uint64_t lull_policy_sync_finishes(void)
{
    return __atomic_load_n(&policy_g.sync_finishes, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------ */
/* Manual mode and no-GC regions (control.c)                                */
/* ------------------------------------------------------------------------ */

/* Manual mode: the memory limit is reached, as the auto mode's goal would
 * count it (the live heap of the last major, the nursery, and what the
 * major heap took since, pressure included), at least a minimum allowance
 * after each major. */
static bool manual_past_limit(void)
{
    size_t limit = lull_pacer_memory_limit();
    if (!limit)
        return false;
    uint64_t used = policy_g.live + lull_nursery_size();
    uint64_t room = limit > used ? limit - used : 0;
    return allocated_with_pressure() >= (room > MIN_ALLOWANCE ? room : MIN_ALLOWANCE);
}

/* Manual mode: what a collection forced past the limit is: the running
 * mark's final pause (if done, or if synchronous majors are allowed),
 * else a synchronous major (it empties the nursery too), or a concurrent
 * one when synchronous majors are not allowed. -1: none can be run. */
static int forced_collection(void)
{
    if (lull_marking())
        return lull_mark_ready() || lull_synchronous_major_allowed() ? LULL_COLLECT_MAJOR_FINISH : -1;
    if (lull_cfg.major != LULL_MAJOR_CONCURRENT || lull_synchronous_major_allowed())
        return LULL_GEN_MAJOR;
    return LULL_COLLECT_MAJOR_START;
}

/* Manual mode: no collection starts by itself. Past the memory limit one
 * is forced, counted; an allocation that fails collects (counted too); a
 * mark the program started ends in its final pause when done, as in the
 * auto mode. */
static int manual_decide(lull_policy_event ev, unsigned long arg, const char **reason)
{
    if (ev == LULL_POLICY_OUT_OF_MEMORY) {
        lull_control_note_forced();
        return auto_decide(ev, arg, reason);
    }
    if ((ev == LULL_POLICY_SLOW_ALLOC || ev == LULL_POLICY_NURSERY_FULL) && manual_past_limit()) {
        int what = forced_collection();
        if (what >= 0) {
            *reason = "manual mode, memory limit reached";
            lull_control_note_forced();
            return what;
        }
    }
    if (ev == LULL_POLICY_SLOW_ALLOC && lull_marking() && lull_mark_ready())
        return auto_decide(ev, arg, reason) == LULL_COLLECT_MAJOR_FINISH ? LULL_COLLECT_MAJOR_FINISH : -1;
    return -1;
}

int lull_policy_decide(lull_policy_event ev, unsigned long arg, const char **reason)
{
    if (lull_control_region_holds(ev))
        return -1;
    if (lull_control_manual())
        return manual_decide(ev, arg, reason);
    return auto_decide(ev, arg, reason);
}

/* lull_major_due (lull.h), gc lock held. */
int lull_policy_major_outlook(void)
{
    int due = 0;
    bool stw = lull_cfg.major != LULL_MAJOR_CONCURRENT;
    if (lull_marking()) {
        if (lull_mark_ready())
            due |= LULL_MAJOR_FINAL_DUE;
        else if (far_past_allowance() && lull_synchronous_major_allowed())
            due |= LULL_MAJOR_FINAL_DUE | LULL_MAJOR_SYNC;
        return due;
    }
    uint64_t got = allocated_with_pressure(), trigger = policy_g.trigger;
    if (got >= trigger)
        due |= LULL_MAJOR_START_DUE | LULL_MAJOR_SOON;
    else if (got >= trigger - trigger / 4)
        due |= LULL_MAJOR_SOON;
    if (due && (stw || lull_policy_prefers_evacuation()))
        due |= LULL_MAJOR_SYNC;
    return due;
}

/* lull_collect_step (gc lock held): the pause to run in `left_ns`, or -1.
 * A done mark's final pause predicted to fit; a major that is due (its
 * initial pause, predicted as a minor's fixed cost; a synchronous one
 * with major=stw or an evacuating one, predicted per live byte); a minor
 * when the nursery is 7/8 full and its predicted pause fits. */
int lull_policy_step_pause(uint64_t left_ns, const char **reason)
{
    double left = (double)left_ns;
    if (lull_marking()) {
        if (lull_mark_ready() && predicted_final_pause_ns() <= left) {
            *reason = "step, concurrent mark done";
            return LULL_COLLECT_MAJOR_FINISH;
        }
        return -1;
    }
    if (major_due()) {
        if (lull_cfg.major == LULL_MAJOR_CONCURRENT && !lull_policy_prefers_evacuation()) {
            if ((policy_g.fixed_known ? policy_g.fixed_ns : 0) <= left) {
                *reason = "step, major due";
                return LULL_COLLECT_MAJOR_START;
            }
        } else if (predicted_sync_major_ns() <= left) {
            *reason = "step, major due";
            return LULL_GEN_MAJOR;
        }
        return -1;
    }
    size_t n = lull_nursery_size();
    if (lull_nursery_handed() >= n - n / 8 && policy_g.predicted_ns <= left) {
        *reason = "step, nursery nearly full";
        return LULL_GEN_NURSERY;
    }
    return -1;
}
