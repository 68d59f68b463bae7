#include "base/stw.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "base/util.h"

/* The state of the stop-the-world protocol: one instance. The stopper (gc
 * lock held) writes world_epoch; stopped threads' handlers read it and
 * count acks; the signals and the previous handlers are written by
 * install/uninstall (lull_init/lull_shutdown, under the init lock) only. */
static struct {
    atomic_ulong world_epoch;     /* even: running; odd: stopped */
    atomic_uint acks;             /* acknowledgements; the stopper sleeps on it as a futex */
#if LULL_TSAN
    atomic_uint restarts;         /* bumped at each restart; stopped threads sleep on it */
#endif
    int sig_suspend, sig_restart;
    sigset_t handler_mask;        /* what the suspend handler runs with blocked */
    struct sigaction old_suspend, old_restart;
    bool installed;
} stw_g;

unsigned lull_stw_test_gap_ns;

/* Record where the roots of thread t are: its stack from `frame` (the
 * lowest live address, with its registers saved at or above it) up, and
 * the alternate signal stack it runs on, if any. */
void lull_stw_record_roots(lull_thread *t, uintptr_t frame)
{
    t->stop_sp = frame;
    t->alt_lo = t->alt_hi = 0;
    if (frame < t->stack_lo || frame >= t->stack_hi) {
        /* Running on an alternate signal stack (inside an application's
         * SA_ONSTACK handler): scan that stack from here, and the whole
         * thread stack, since where it was interrupted is unknown. */
        stack_t ss;
        if (syscall(SYS_sigaltstack, NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) {
            t->alt_lo = frame;
            t->alt_hi = (uintptr_t)ss.ss_sp + ss.ss_size;
        }
        t->stop_sp = t->stack_lo;
    }
}

/* The body shared by the signal handler and a thread leaving a critical
 * region. `frame` is the lowest address of the thread's live stack: every
 * frame above it, including the signal frame with the saved registers (or
 * the getcontext buffer of the self-suspend path), is scanned. */
static void suspend_here(lull_thread *t, uintptr_t frame)
{
    unsigned long e = atomic_load_explicit(&stw_g.world_epoch, memory_order_acquire);
    if (!(e & 1) || atomic_load_explicit(&t->suspended_epoch, memory_order_relaxed) == e)
        return;
    lull_stw_record_roots(t, frame);
    atomic_store_explicit(&t->suspended_epoch, e, memory_order_release);
    atomic_fetch_add_explicit(&stw_g.acks, 1, memory_order_release);
    lull_futex_wake(&stw_g.acks, 1);
#if LULL_TSAN
    /* ThreadSanitizer defers a signal that arrives outside a blocking call
     * and runs the handler later, from one of its interceptors, with every
     * signal blocked; it restores the thread's mask afterwards from a single
     * per-thread slot. If the handler itself enters an interceptor while
     * another deferred signal is flagged (one that arrived just as the
     * processing began is enough), TSan processes it there, nested, and the
     * nested pass overwrites the slot with the all-blocked mask: the thread
     * is left with every signal blocked for good, and the next pause waits
     * forever (stress_signals found this). Restarting with a signal inside
     * sigsuspend nests the same way. So under TSan this handler enters no
     * interceptor at all: acknowledgement and restart go through futexes
     * with raw system calls, and the epoch is re-checked after every wake. */
    for (;;) {
        unsigned seen = atomic_load_explicit(&stw_g.restarts, memory_order_acquire);
        if (atomic_load_explicit(&stw_g.world_epoch, memory_order_acquire) != e)
            break;
        lull_futex_wait(&stw_g.restarts, seen, -1);
    }
#else
    sigset_t wait_mask;
    sigfillset(&wait_mask);
    sigdelset(&wait_mask, stw_g.sig_restart);
    while (atomic_load_explicit(&stw_g.world_epoch, memory_order_acquire) == e) {
        if (LULL_UNLIKELY(lull_stw_test_gap_ns))
            for (uint64_t t0 = lull_now_ns(); lull_now_ns() - t0 < lull_stw_test_gap_ns;)
                ;
        sigsuspend(&wait_mask);
    }
#endif
}

static void suspend_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    int saved_errno = errno;
    lull_thread *t = lull_thread_self;
    if (t) {
        if (t->in_critical)
            t->pending_suspend = 1;
        else
            suspend_here(t, (uintptr_t)__builtin_frame_address(0));
    }
    errno = saved_errno;
}

static void restart_handler(int sig)
{
    (void)sig;   /* only wakes sigsuspend; the epoch says what happened */
}

__attribute__((noinline)) void lull_stw_suspend_self(lull_thread *t)
{
    /* Registers of this thread go into `uc`, where the stack scan sees them. */
    ucontext_t uc;
    t->pending_suspend = 0;
#if !LULL_TSAN
    /* Block what the handler blocks, as the handler runs with it: the
     * restart signal must stay pending until sigsuspend, or a restart
     * between suspend_here's check of the epoch and its sigsuspend would
     * be lost and the thread would sleep for good (unit_stw_nested). With
     * the suspend signal blocked too, none lands inside this
     * self-suspension (lull_stw_stop). Under ThreadSanitizer the wait is on
     * a futex whose value the restart bumps: nothing to lose. */
    sigset_t old;
    pthread_sigmask(SIG_BLOCK, &stw_g.handler_mask, &old);
#endif
    lull_capture_registers(&uc);
    __asm__ __volatile__("" : : "r"(&uc) : "memory");
    /* `uc` is a local of this frame, below its frame address: the scan
     * starts at uc itself so the registers are inside it. */
    suspend_here(t, (uintptr_t)&uc);
#if !LULL_TSAN
    pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
}

int lull_stw_install(int suspend_signal, int restart_signal)
{
    stw_g.sig_suspend = suspend_signal;
    stw_g.sig_restart = restart_signal;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = suspend_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    /* Block everything in the handler but the synchronous fault signals:
     * the restart signal must stay pending until sigsuspend. */
    sigfillset(&sa.sa_mask);
    sigdelset(&sa.sa_mask, SIGSEGV);
    sigdelset(&sa.sa_mask, SIGBUS);
    sigdelset(&sa.sa_mask, SIGILL);
    sigdelset(&sa.sa_mask, SIGFPE);
    sigdelset(&sa.sa_mask, SIGABRT);
    stw_g.handler_mask = sa.sa_mask;
    if (sigaction(stw_g.sig_suspend, &sa, &stw_g.old_suspend) != 0)
        return -errno;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = restart_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(stw_g.sig_restart, &sa, &stw_g.old_restart) != 0) {
        int e = -errno;
        sigaction(stw_g.sig_suspend, &stw_g.old_suspend, NULL);
        return e;
    }
    stw_g.installed = true;
    return 0;
}

void lull_stw_uninstall(void)
{
    if (!stw_g.installed)
        return;
    sigaction(stw_g.sig_suspend, &stw_g.old_suspend, NULL);
    sigaction(stw_g.sig_restart, &stw_g.old_restart, NULL);
    stw_g.installed = false;
}

static bool acked(lull_thread *t, unsigned long e)
{
    return atomic_load_explicit(&t->suspended_epoch, memory_order_acquire) == e;
}

/* Every attached thread but self has acknowledged stop e: it is in its
 * handler (or suspending itself), its roots recorded (the acquire in
 * acked pairs with suspend_here's release). */
static bool all_acked(lull_thread *self, unsigned long e)
{
    for (lull_thread *t = lull_threads_first(); t; t = t->next)
        if (t != self && !t->parked && !acked(t, e))
            return false;
    return true;
}

void lull_stw_stop(lull_thread *self)
{
    /* The ack counter is what the stopper sleeps on, and a hint: the stop
     * is over when every thread's suspended_epoch is this one. A count
     * alone is not to be trusted: a suspend signal that lands while a
     * thread suspends itself (leaving a critical region), between
     * suspend_here's check and its acknowledgement, acknowledges and
     * waits, and after the restart the interrupted call acknowledged the
     * same stop again. That extra ack counted for the next stop, which
     * returned before its last thread had stopped, and a collection ran
     * beside a mutator whose stack it had not scanned
     * (tests/unit/unit_stw_nested.c). */
    unsigned base = atomic_load_explicit(&stw_g.acks, memory_order_acquire);
    unsigned long e = atomic_load_explicit(&stw_g.world_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&stw_g.world_epoch, e, memory_order_release);
    unsigned want = 0;
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        if (t == self || t->parked)
            continue;
        want++;
        int r = pthread_kill(t->pthread, stw_g.sig_suspend);
        if (r != 0)
            lull_fatal("lull_collect", "cannot signal attached thread: %s", strerror(r));
    }
    long wait_ns = 1000000;       /* 1 ms, doubling up to 100 ms */
    uint64_t started = lull_now_ns(), warned = started;
    for (;;) {
        unsigned now = atomic_load_explicit(&stw_g.acks, memory_order_acquire);
        if (now - base >= want && all_acked(self, e))
            break;
        if (lull_futex_wait(&stw_g.acks, now, wait_ns) == 0 || errno != ETIMEDOUT)
            continue;             /* woken, changed meanwhile, or EINTR */
        /* No answer for a while: signal again every thread that has not
         * answered. */
        unsigned missing = 0;
        for (lull_thread *t = lull_threads_first(); t; t = t->next)
            if (t != self && !t->parked && !acked(t, e)) {
                missing++;
                pthread_kill(t->pthread, stw_g.sig_suspend);
            }
        if (wait_ns < 100000000L)
            wait_ns *= 2;
        uint64_t t_now = lull_now_ns();
        if (t_now - warned > 5000000000ull) {
            warned = t_now;
            lull_warn("lull_collect", "%u of %u threads have not stopped after %.1f s; still waiting",
                      missing, want, (double)(t_now - started) / 1e9);
        }
    }
}

void lull_stw_restart(lull_thread *self)
{
    unsigned long e = atomic_load_explicit(&stw_g.world_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&stw_g.world_epoch, e, memory_order_release);
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        if (t == self || t->parked)
            continue;
#if !LULL_TSAN
        pthread_kill(t->pthread, stw_g.sig_restart);
#endif
    }
#if LULL_TSAN
    atomic_fetch_add_explicit(&stw_g.restarts, 1, memory_order_release);
    lull_futex_wake(&stw_g.restarts, INT_MAX);
#endif
}
