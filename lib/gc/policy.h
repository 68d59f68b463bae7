/* policy.h — which collection to run and when, and how big the heap is:
 * one module, one entry point (lull_policy_decide).
 *
 * The spaces count what they hand out and give back in the allocation
 * meter (space/meter.h), which the policy reads; allocation asks
 * lull_policy_decide at each of its decision points and runs what it is
 * told; a major reports the live heap it found (lull_policy_after_major).
 * The policy sets what the spaces are to keep (the block reserve, the
 * nursery's size) through their setters; nothing below calls it.
 *
 * The rules (see policy.c): a minor when the nursery is exhausted. The
 * major heap's allowance is the live heap the last major found (so it
 * settles around twice its live size), at least 4 MiB; promotion and direct
 * allocation in the major heap use it up. With major=stw an allocation
 * that finds it used up runs a major first; with major=concurrent a
 * concurrent major starts earlier, at a trigger paced from the last cycle
 * (policy.c), and its final pause runs at the first decision point after
 * its background work is done (for a program that calls lull_idle, in
 * the next call, and the evacuating major a fragmented heap asks for in
 * a call long enough for it: lull_policy_idle_major). An allocation that cannot get memory
 * (max-heap-size, or the OS refusing) runs a major and tries once more
 * before it reports ENOMEM.
 *
 * State: policy_g in policy.c, written with the gc lock held only. */
#ifndef LULL_POLICY_H
#define LULL_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"

/* The points at which allocation asks what to collect (gc lock held). */
typedef enum {
    LULL_POLICY_SLOW_ALLOC,     /* an allocation in the major heap or a TLAB refill, before it */
    LULL_POLICY_NURSERY_FULL,   /* a TLAB refill found no room in the nursery */
    LULL_POLICY_OUT_OF_MEMORY,  /* the major heap could not satisfy an allocation */
    LULL_POLICY_DEBUG_TICK,     /* LULL_GC_DEBUG=collect-every: the Nth allocation (arg = N) */
    LULL_POLICY_CARDS,          /* a thread used up a grant of the next minor's cards (arg = the grant) */
} lull_policy_event;

/* What to collect at `ev`: LULL_GEN_NURSERY, LULL_GEN_MAJOR,
 * LULL_COLLECT_MAJOR_START or _FINISH (collect.h), or -1 for nothing; *reason (when a collection is due) names why, for the log.
 * LULL_POLICY_DEBUG_TICK reads no policy state but lull_marking() and may
 * be asked without the gc lock (allocation asks it on every allocation);
 * lull_collect_locked turns a start or finish that a stale answer asked
 * for into a minor. */
int lull_policy_decide(lull_policy_event ev, unsigned long arg, const char **reason);

/* done: the share of a concurrent mark's objects its background job
 * blackened (1 when it finished on its own; less when the allowance ran
 * out and the final pause marked the rest with the world stopped). */
void lull_policy_after_major(uint64_t live_bytes, double done);
/* A concurrent major's initial pause (gc lock held): pacing measures from here. */
void lull_policy_note_mark_start(void);
/* Synchronous majors are allowed and the last major found the heap
 * fragmented enough that an evacuating (synchronous) one is worth its
 * pause (gc lock held; policy.c has the rule). */
bool lull_policy_prefers_evacuation(void);
/* For the log (gc lock held): the major-heap bytes after which the next
 * major starts, and the allowance they count against. */
void lull_policy_pacing(uint64_t *trigger, uint64_t *allowance);

/* The nursery's size for the pause target (gc lock held; the rule is in
 * policy.c): after every minor, the nursery bytes handed out before it,
 * its copying phase, its whole pause (0 for a minor inside a major's
 * pause, whose pause measures more than the minor) and the part of it
 * spent waiting for the background job to stop. Resizes the nursery. */
void lull_policy_after_minor(uint64_t handed, uint64_t trace_ns, uint64_t pause_ns, uint64_t job_wait_ns);
/* The margin the nursery's size leaves under the pause target for the
 * model's error (policy.c: note_error), now: 1 to 1.5. */
double lull_policy_minor_margin(void);
/* Every minor's promoted bytes and the nursery bytes it was handed (gc
 * lock held), and the EMPTY blocks' bytes kept ready for the next minor's
 * promotion (major.c). */
void lull_policy_note_promoted(uint64_t promoted, uint64_t handed);
uint64_t lull_policy_block_reserve(void);
/* The pause the model predicts for the next minor, for the log. */
double lull_policy_predicted_minor_ns(void);
/* lull_set_pause_target (gc lock held), and what lull_get_stats reads
 * (any thread). */
void lull_policy_set_pause_target(uint64_t ns);
uint64_t lull_policy_pause_target(void);
uint64_t lull_policy_minors_over_target(void);
/* A done mark's final pause waits for the next minor to empty a nursery
 * that holds much (policy.c: nursery_heavy); TLAB refills need not ask
 * for it meanwhile. Without the gc lock (atomics). */
bool lull_policy_major_waits_for_minor(void);
/* Cards a thread may newly mark in the minors' table between two minors
 * (its budget), and in one grant: when a grant is used up its barrier
 * asks the policy (lull__cards_slow, LULL_POLICY_CARDS with arg = the
 * grant), which runs a minor or lets it have another (gc lock held).
 * set_card_budgets, in the pause of every minor before the world restarts
 * (world stopped): fits the cost of a card from that minor (the bytes it
 * promoted, the dirty cards it scanned, its copying phase), so that the
 * next budget already counts with it, and sets a grant in every attached
 * thread's TLAB (and its cards_granted). */
uint32_t lull_policy_card_budget(void);
uint32_t lull_policy_card_grant(void);
double   lull_policy_card_ns(void);    /* a dirty card's cost, as the budget counts it (the log) */
uint64_t lull_policy_minors_for_cards(void);
void     lull_policy_set_card_budgets(uint64_t promoted, uint64_t cards, uint64_t trace_ns);

/* lull_idle (gc lock held): whether to run a minor now, in `idle_ns` of
 * idle time of which `left_ns` is left, with `allocated` the program's
 * allocation so far (policy.c has the rule; a yes is counted in
 * minors_idle, which lull_get_stats reads from any thread). */
bool     lull_policy_idle_minor(uint64_t idle_ns, uint64_t left_ns, uint64_t allocated);
uint64_t lull_policy_minors_idle(void);
/* lull_idle, first (gc lock held): a major's pause to run now in
 * `idle_ns` (LULL_COLLECT_MAJOR_FINISH or LULL_GEN_MAJOR) or -1, counted
 * in majors_idle (lull_get_stats reads it from any thread). The pauses it
 * predicts from are reported by collect_pause (after_major_pause: `final`
 * for a concurrent mark's final pause, `synchronous` when it marked with
 * the world stopped). */
int      lull_policy_idle_major(uint64_t idle_ns, const char **reason);
uint64_t lull_policy_majors_idle(void);
void     lull_policy_after_major_pause(bool final, bool synchronous, uint64_t pause_ns, uint64_t live);

/* Aging (gc lock held; the rule is in policy.c): whether the next minor
 * may age its survivors in the nursery (promotion-age), and after every
 * minor whether it could (not a major's), what had been handed out before
 * it and what it promoted. */
bool lull_policy_aging(void);
void lull_policy_note_aging(bool may_age, uint64_t handed, uint64_t promoted);

/* Sizing, at lull_init: the address range to reserve, and cfg->nursery_size
 * cut to a power of two at most an eighth of max-heap-size. */
size_t lull_policy_size_heap(lull_config *cfg);

void lull_policy_init(void);
/* lull_major_due's answer (gc lock held): LULL_MAJOR_* flags (lull.h). */
int lull_policy_major_outlook(void);
/* lull_collect_step (gc lock held): the pause that is worth running and
 * predicted to fit `left_ns` (LULL_GEN_* or LULL_COLLECT_MAJOR_*), or -1;
 * *reason names it. */
int lull_policy_step_pause(uint64_t left_ns, const char **reason);
/* A step of `budget_ns` marked in the running mark (gc lock held): its
 * final pause, when done, waits for the next step (as for an idle call)
 * while it fits such a budget and the allowance lasts. */
void lull_policy_note_step(uint64_t budget_ns);
/* Running marks finished with the world stopped (lull_stats). */
uint64_t lull_policy_sync_finishes(void);

#endif
