/* util.c — reports to the program (warnings, fatal misuse; through the
 * program's message handler, else on stderr), the version, the futex
 * wrappers, and small helpers every tier uses. No collector state. */
#include "base/util.h"

#include "lull.h"

#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The program's message handler (lull_set_message_handler): fn and data
 * change together under `seq`, a sequence lock. Writers serialise on
 * handler_lock and make seq odd while they write; a report reads fn and
 * data, and retries while seq was odd or changed, so it never pairs one
 * handler's fn with another's data. Readers take no lock: a report may be
 * made while other threads are stopped, holding any lock. */
static struct {
    pthread_mutex_t handler_lock;
    _Atomic unsigned seq;
    _Atomic(lull_message_fn) fn;
    _Atomic(void *) data;
} msg_g = { .handler_lock = PTHREAD_MUTEX_INITIALIZER };

void lull_set_message_handler(lull_message_fn fn, void *data)
{
    pthread_mutex_lock(&msg_g.handler_lock);
    unsigned s = atomic_load_explicit(&msg_g.seq, memory_order_relaxed);
    atomic_store_explicit(&msg_g.seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&msg_g.fn, fn, memory_order_relaxed);
    atomic_store_explicit(&msg_g.data, data, memory_order_relaxed);
    atomic_store_explicit(&msg_g.seq, s + 2, memory_order_release);
    pthread_mutex_unlock(&msg_g.handler_lock);
}

static lull_message_fn current_handler(void **data)
{
    for (;;) {
        unsigned s = atomic_load_explicit(&msg_g.seq, memory_order_acquire);
        lull_message_fn fn = atomic_load_explicit(&msg_g.fn, memory_order_relaxed);
        *data = atomic_load_explicit(&msg_g.data, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (!(s & 1) && atomic_load_explicit(&msg_g.seq, memory_order_relaxed) == s)
            return fn;
        lull_cpu_relax();
    }
}

/* Format "lull: <fn>: <message>" into one buffer; hand the message to the
 * program's handler, and write the line to stderr with one call (so that
 * lines of concurrent threads do not interleave) when there is none or it
 * asks for it. No malloc: this may run while other threads are stopped. */
static void vreport(int kind, const char *fn, const char *fmt, va_list ap)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "lull: %s: ", fn);
    if (n < 0)
        return;
    int head = (size_t)n < sizeof buf ? n : (int)sizeof buf - 1;
    if ((size_t)n < sizeof buf)
        n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if ((size_t)n >= sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n] = 0;
    void *data;
    lull_message_fn handler = current_handler(&data);
    if (handler && !handler(kind, fn, buf + head, data))
        return;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, (size_t)n);
    (void)w;
}

void lull_fatal(const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(LULL_MSG_FATAL, fn, fmt, ap);
    va_end(ap);
    abort();
}

void lull_warn(const char *fn, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(LULL_MSG_WARNING, fn, fmt, ap);
    va_end(ap);
}

uint64_t lull_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct timespec lull_deadline_in(clockid_t clock, uint64_t ns)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += (time_t)(ns / 1000000000u);
    t.tv_nsec += (long)(ns % 1000000000u);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

__attribute__((noinline)) void lull_clear_scratch_registers(void)
{
#if defined(__x86_64__)
    /* The EVEX and VEX forms zero every bit of their register above the
     * 128 they name; a 128-bit form avoids any 512-bit operation (and the
     * clock drop some CPUs take for one). The assembler knows these
     * instructions whatever -m flags this file is compiled with; they run
     * only where the CPU and the OS support them. */
    if (__builtin_cpu_supports("avx512f"))
        __asm__ __volatile__("vpxord %%xmm16, %%xmm16, %%xmm16\n\tvpxord %%xmm17, %%xmm17, %%xmm17\n\t"
                             "vpxord %%xmm18, %%xmm18, %%xmm18\n\tvpxord %%xmm19, %%xmm19, %%xmm19\n\t"
                             "vpxord %%xmm20, %%xmm20, %%xmm20\n\tvpxord %%xmm21, %%xmm21, %%xmm21\n\t"
                             "vpxord %%xmm22, %%xmm22, %%xmm22\n\tvpxord %%xmm23, %%xmm23, %%xmm23\n\t"
                             "vpxord %%xmm24, %%xmm24, %%xmm24\n\tvpxord %%xmm25, %%xmm25, %%xmm25\n\t"
                             "vpxord %%xmm26, %%xmm26, %%xmm26\n\tvpxord %%xmm27, %%xmm27, %%xmm27\n\t"
                             "vpxord %%xmm28, %%xmm28, %%xmm28\n\tvpxord %%xmm29, %%xmm29, %%xmm29\n\t"
                             "vpxord %%xmm30, %%xmm30, %%xmm30\n\tvpxord %%xmm31, %%xmm31, %%xmm31"
                             ::: "memory");
    if (__builtin_cpu_supports("avx"))
        __asm__ __volatile__("vzeroall" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                             "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    else
        __asm__ __volatile__("pxor %%xmm0, %%xmm0\n\tpxor %%xmm1, %%xmm1\n\tpxor %%xmm2, %%xmm2\n\t"
                             "pxor %%xmm3, %%xmm3\n\tpxor %%xmm4, %%xmm4\n\tpxor %%xmm5, %%xmm5\n\t"
                             "pxor %%xmm6, %%xmm6\n\tpxor %%xmm7, %%xmm7\n\tpxor %%xmm8, %%xmm8\n\t"
                             "pxor %%xmm9, %%xmm9\n\tpxor %%xmm10, %%xmm10\n\tpxor %%xmm11, %%xmm11\n\t"
                             "pxor %%xmm12, %%xmm12\n\tpxor %%xmm13, %%xmm13\n\tpxor %%xmm14, %%xmm14\n\t"
                             "pxor %%xmm15, %%xmm15"
                             ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                             "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    __asm__ __volatile__("xorl %%eax, %%eax\n\txorl %%ecx, %%ecx\n\txorl %%edx, %%edx\n\t"
                         "xorl %%esi, %%esi\n\txorl %%edi, %%edi\n\txorl %%r8d, %%r8d\n\t"
                         "xorl %%r9d, %%r9d\n\txorl %%r10d, %%r10d\n\txorl %%r11d, %%r11d"
                         ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc");
#endif
}

long lull_futex_wait(_Atomic unsigned *word, unsigned expected, long ns)
{
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    return syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, ns < 0 ? NULL : &ts, NULL, 0);
}

void lull_futex_wake(_Atomic unsigned *word, int n)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

const char *lull_version(void)
{
    return LULL_VERSION_STRING;
}
