#include "stw.h"

#include <errno.h>
#include <semaphore.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#include "util.h"

static atomic_ulong world_epoch;     /* even: running; odd: stopped */
static sem_t ack_sem;
static int sig_suspend, sig_restart;
static struct sigaction old_suspend, old_restart;
static bool installed;

/* The body shared by the signal handler and a thread leaving a critical
 * region. `frame` is the lowest address of the thread's live stack: every
 * frame above it, including the signal frame with the saved registers (or
 * the getcontext buffer of the self-suspend path), is scanned. */
static void suspend_here(lull_thread *t, uintptr_t frame)
{
    unsigned long e = atomic_load_explicit(&world_epoch, memory_order_acquire);
    if (!(e & 1) || atomic_load_explicit(&t->suspended_epoch, memory_order_relaxed) == e)
        return;
    t->stop_sp = frame;
    t->alt_lo = t->alt_hi = 0;
    if (frame < t->stack_lo || frame >= t->stack_hi) {
        /* Running on an alternate signal stack (inside an application's
         * SA_ONSTACK handler): scan that stack from here, and the whole
         * thread stack, since where it was interrupted is unknown. */
        stack_t ss;
        if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) {
            t->alt_lo = frame;
            t->alt_hi = (uintptr_t)ss.ss_sp + ss.ss_size;
        }
        t->stop_sp = t->stack_lo;
    }
    atomic_store_explicit(&t->suspended_epoch, e, memory_order_release);
    sem_post(&ack_sem);
#if LULL_TSAN
    /* ThreadSanitizer runs a deferred handler with every signal blocked and
     * restores the thread's mask afterwards from one per-thread slot; a
     * restart signal taken inside our sigsuspend is processed as a nested
     * deferred signal that overwrites that slot, and the thread is left
     * with the suspend signal blocked for good. So under TSan the restart
     * comes through a semaphore. TSan still runs a handler synchronously
     * inside a blocking call: the suspend signal of a later pause can nest
     * here and take this wait's post, after which glibc's sem_wait sleeps
     * on without returning. Waiting in short slices that re-check the
     * epoch bounds that to a millisecond. */
    while (atomic_load_explicit(&world_epoch, memory_order_acquire) == e) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 1000000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_nsec -= 1000000000L;
            ts.tv_sec++;
        }
        sem_timedwait(&t->resume_sem, &ts);
    }
#else
    sigset_t wait_mask;
    sigfillset(&wait_mask);
    sigdelset(&wait_mask, sig_restart);
    while (atomic_load_explicit(&world_epoch, memory_order_acquire) == e)
        sigsuspend(&wait_mask);
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
    getcontext(&uc);
    __asm__ __volatile__("" : : "r"(&uc) : "memory");
    /* `uc` is a local of this frame, below its frame address: the scan
     * starts at uc itself so the registers are inside it. */
    suspend_here(t, (uintptr_t)&uc);
}

int lull_stw_install(int suspend_signal, int restart_signal)
{
    sig_suspend = suspend_signal;
    sig_restart = restart_signal;
    if (sem_init(&ack_sem, 0, 0) != 0)
        return -errno;
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
    if (sigaction(sig_suspend, &sa, &old_suspend) != 0)
        return -errno;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = restart_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig_restart, &sa, &old_restart) != 0) {
        int e = -errno;
        sigaction(sig_suspend, &old_suspend, NULL);
        return e;
    }
    installed = true;
    return 0;
}

void lull_stw_uninstall(void)
{
    if (!installed)
        return;
    sigaction(sig_suspend, &old_suspend, NULL);
    sigaction(sig_restart, &old_restart, NULL);
    sem_destroy(&ack_sem);
    installed = false;
}

static bool acked(lull_thread *t, unsigned long e)
{
    return atomic_load_explicit(&t->suspended_epoch, memory_order_acquire) == e;
}

void lull_stw_stop(lull_thread *self)
{
    unsigned long e = atomic_load_explicit(&world_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&world_epoch, e, memory_order_release);
    unsigned want = 0;
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        if (t == self)
            continue;
        want++;
        int r = pthread_kill(t->pthread, sig_suspend);
        if (r != 0)
            lull_fatal("lull_collect", "cannot signal attached thread: %s", strerror(r));
    }
    unsigned got = 0;
    long wait_ns = 1000000;       /* 1 ms, doubling up to 100 ms */
    uint64_t started = lull_now_ns(), warned = started;
    while (got < want) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += wait_ns;
        while (ts.tv_nsec >= 1000000000L) {
            ts.tv_nsec -= 1000000000L;
            ts.tv_sec++;
        }
        if (sem_timedwait(&ack_sem, &ts) == 0) {
            got++;
            continue;
        }
        if (errno == EINTR)
            continue;
        /* Timed out: signal again every thread that has not answered. */
        for (lull_thread *t = lull_threads_first(); t; t = t->next)
            if (t != self && !acked(t, e))
                pthread_kill(t->pthread, sig_suspend);
        if (wait_ns < 100000000L)
            wait_ns *= 2;
        uint64_t now = lull_now_ns();
        if (now - warned > 5000000000ull) {
            warned = now;
            lull_warn("lull_collect", "%u of %u threads have not stopped after %.1f s; still waiting",
                      want - got, want, (double)(now - started) / 1e9);
        }
    }
}

void lull_stw_restart(lull_thread *self)
{
    unsigned long e = atomic_load_explicit(&world_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&world_epoch, e, memory_order_release);
    for (lull_thread *t = lull_threads_first(); t; t = t->next) {
        if (t == self)
            continue;
#if LULL_TSAN
        sem_post(&t->resume_sem);
#else
        pthread_kill(t->pthread, sig_restart);
#endif
    }
}
