/* pacer.h — the heap goal, and when a concurrent major starts so that it
 * ends there (gc/pacer.c).
 *
 * Goal: after each major, live x (1 + heap-growth / 100), at most the soft
 * memory-limit (less the nursery), and never less than live plus a minimum
 * allowance. The allowance (what the major heap may take in before the next
 * major is due) is the goal less live; the spaces count against it in the
 * allocation meter (space/meter.h).
 *
 * Trigger: a concurrent mark starts when the meter reaches the trigger,
 * chosen so that the mark is predicted to end at the allowance: the room
 * left is 1.5 x the model (the predicted mark time, live / mark rate, times
 * the allocation rate during marks) x a correction that follows the last
 * cycles' error (what marks really saw allocated over the model: a mark
 * that saw more starts the next one earlier, one that saw less later).
 *
 * All of it with the gc lock held, but the growth and limit, which the
 * statistics read without it. */
#ifndef LULL_PACER_H
#define LULL_PACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* lull_init: the options' growth and limit, no measurement yet. */
void lull_pacer_init(unsigned growth_percent, size_t memory_limit);

/* The allowance for a live heap of `live` bytes with a nursery of
 * `nursery` bytes (the goal less live); both become the goal in force
 * (lull_pacer_goal). */
uint64_t lull_pacer_allowance(uint64_t live, uint64_t nursery);

/* The goal in force: live at the last major plus the allowance. */
uint64_t lull_pacer_goal(void);
size_t   lull_pacer_memory_limit(void);
unsigned lull_pacer_growth(void);

/* The trigger for an allowance `a`, given the last live size and the
 * measured rates (bytes per ns; mark_rate 0: unmeasured). */
uint64_t lull_pacer_trigger(uint64_t a, uint64_t live, double alloc_rate, double mark_rate);

/* A concurrent mark ended: it began at `start` bytes of the meter and
 * ended at `end`, having got through `done` of the live heap (less than 1:
 * cut short, its allocation is scaled up to a whole mark's); moves the
 * correction (no model yet, or less than a quarter done: nothing, as the
 * rates ignore such a mark). */
void lull_pacer_note_mark_end(uint64_t start, uint64_t end, double done);
double lull_pacer_correction(void);

/* The growth or the memory limit changed (gc lock held): the allowance and
 * the trigger are recomputed from the last live size (gc/policy.c). */
void lull_pacer_goal_changed(void);

/* The heap goal's state in the log line of a major. */
int lull_pacer_describe(char *buf, size_t n);

/* Near the memory limit: the heap holds at least 7/8 of it. */
bool lull_pacer_near_limit(uint64_t heap_bytes);

#endif
