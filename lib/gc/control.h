/* control.h — what the program says about when collections may run
 * (control.c): the no-GC region, the mode (auto or manual), memory
 * pressure. The policy (policy.c) asks here first at each of its decision
 * points; the pauses (collect.c) report here that one begins.
 *
 * State: control_g in control.c. The region's fields and the nursery's
 * closed flag are written with the gc lock held; what is read without it
 * (the region's blocking flag, the mode, the pressure, the counters) is a
 * relaxed atomic. */
#ifndef LULL_CONTROL_H
#define LULL_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gc/policy.h"

/* lull_init: no region, the nursery open, pressure and counters at 0. The
 * mode is kept (it may be set before lull_init). */
void lull_control_init(void);

/* A no-GC region holds: no collection may start for `ev` (gc lock held,
 * but for LULL_POLICY_DEBUG_TICK, asked without it). A region whose bytes
 * have all been allocated stops holding here. Never for
 * LULL_POLICY_OUT_OF_MEMORY: that collection runs, and ends the region. */
bool lull_control_region_holds(lull_policy_event ev);
/* A region holds (without the gc lock): no paced wait either. */
bool lull_control_region_blocking(void);

/* lull_set_mode(LULL_MODE_MANUAL) is in force (any thread). */
bool lull_control_manual(void);

/* Every pause, first (gc lock held): a region still open ends here (its
 * end returns 1), and the nursery opens again. */
void lull_control_note_pause(void);

/* The nursery was found full while collections are held (gc lock held):
 * until the next pause, small objects go to the major heap without asking
 * for a refill (alloc.c reads the flag without the lock). */
void lull_control_close_nursery(void);
bool lull_control_nursery_closed(void);

/* The nursery's least size while a region is open (0: none): the
 * policy's sizing keeps at least this (policy.c: size_for_target). */
size_t lull_control_nursery_floor(void);

/* Memory pressure added since the last major (never negative): counted
 * as major-heap allocation toward the next major's trigger. */
uint64_t lull_control_pressure_growth(void);
/* A major ended (gc lock held): pressure counts again from here. */
void lull_control_note_major(void);
/* A collection the manual mode forced (gc lock held). */
void lull_control_note_forced(void);

/* The running mark's work on the calling thread until `deadline`
 * (lull_now_ns; gc lock held): the background job stopped meanwhile.
 * Returns LULL_STEP_MARK / _PRECLEAN bits (lull.h). */
int lull_control_step_mark(uint64_t deadline);

/* For lull_get_stats (any thread). */
uint64_t lull_control_regions(void);
uint64_t lull_control_regions_overrun(void);
uint64_t lull_control_forced(void);
uint64_t lull_control_pressure(void);

#endif
