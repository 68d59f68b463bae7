/* stw.h — stopping and restarting the world with signals.
 *
 * Handshake (never trust a single signal):
 *   stop:    world_epoch becomes odd; every other attached thread gets the
 *            suspend signal. Its handler records where its live stack
 *            begins, publishes suspended_epoch = world_epoch, bumps the ack
 *            counter (a futex) and waits in sigsuspend until world_epoch
 *            changes (under ThreadSanitizer: on a futex, see stw.c).
 *            The stopper sleeps on the ack counter until every thread's
 *            suspended_epoch is this stop's (the count is only a hint: a
 *            thread may acknowledge one stop twice, stw.c); a thread that
 *            has not answered after a while is signalled again (duplicate
 *            signals are harmless: a handler that finds its epoch already
 *            acknowledged, or the world running, returns at once).
 *   restart: world_epoch becomes even; every thread gets the restart
 *            signal, which only wakes sigsuspend; the loop re-checks the
 *            epoch, so a restart signal that arrives early is not lost
 *            (it is blocked in the handler, and in a thread suspending itself
 *            as it leaves a critical region, until sigsuspend).
 * The caller holds the gc lock for the whole pause. Collector threads are
 * not attached, so they are never signalled. */
#ifndef LULL_STW_H
#define LULL_STW_H

#include "base/registry.h"

int  lull_stw_install(int suspend_signal, int restart_signal);
void lull_stw_uninstall(void);
/* Stop every attached thread but `self` (which may be NULL). */
void lull_stw_stop(lull_thread *self);
void lull_stw_restart(lull_thread *self);
/* Record where thread t's roots begin: `frame` is the lowest address of its
 * live stack, with its registers saved at or above it (a signal frame, or a
 * getcontext buffer). Called for every stopped thread by its suspend
 * handler, and by the thread that collects as it enters the collection. */
void lull_stw_record_roots(lull_thread *t, uintptr_t frame);
/* Tests only (tests/unit/unit_stw_nested.c): a stopped thread spins this
 * long between its check of the epoch and its wait, to widen the window a
 * restart signal must not be lost in. 0 in every program. */
extern unsigned lull_stw_test_gap_ns;

#endif
