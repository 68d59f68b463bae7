/* util.h — small helpers shared by every module: diagnostics, time,
 * sanitizer attributes. No collector state lives here. */
#ifndef LULL_UTIL_H
#define LULL_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define LULL_LIKELY(x)   __builtin_expect(!!(x), 1)
#define LULL_UNLIKELY(x) __builtin_expect(!!(x), 0)

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
#define LULL_TSAN 1
#else
#define LULL_TSAN 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define LULL_ASAN 1
#else
#define LULL_ASAN 0
#endif

/* LULL_ASSERT(cond): an invariant the comments state, checked in Debug and
 * sanitizer builds (LULL_CHECKED, set by lib/CMakeLists.txt); compiled out
 * (the condition is not evaluated) otherwise. Never put a side effect in it. */
#ifdef LULL_CHECKED
#define LULL_ASSERT(cond)                                                                \
    do {                                                                                 \
        if (LULL_UNLIKELY(!(cond)))                                                      \
            lull_fatal("assertion", "%s:%d: %s", __FILE__, __LINE__, #cond);             \
    } while (0)
#else
#define LULL_ASSERT(cond) ((void)sizeof(cond))
#endif

/* Conservative scanning reads memory it does not own: other threads' stacks
 * (with ASan redzones in them) and words that are not known to be pointers.
 * Those reads are deliberate and happen while the owners are stopped (the
 * stop-the-world handshake orders them), so they are not instrumented. */
#define LULL_NO_SANITIZE_SCAN __attribute__((no_sanitize_address, no_sanitize_thread))

/* One line "lull: <fn>: <message>" on stderr, then abort(): heap-corrupting
 * misuse and broken invariants. */
__attribute__((noreturn, format(printf, 2, 3)))
void lull_fatal(const char *fn, const char *fmt, ...);

/* One line "lull: <fn>: <message>" on stderr. */
__attribute__((format(printf, 2, 3)))
void lull_warn(const char *fn, const char *fmt, ...);

uint64_t lull_now_ns(void);
/* An absolute deadline `ns` from now on `clock`, for the timed waits
 * (pthread_cond_timedwait, sem_timedwait) that take one. */
struct timespec lull_deadline_in(clockid_t clock, uint64_t ns);

/* A spin-wait hint to the CPU. */
static inline void lull_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Raw futex system calls (util.c): syscall(2) is not intercepted by the
 * sanitizers, unlike sem_post, sem_timedwait and clock_gettime, so a
 * thread waiting here is still reached by the stop-the-world signals under
 * ThreadSanitizer; nothing is published through the word itself. wait
 * returns at once unless *word == expected, else sleeps until a wake, a
 * signal or `ns` (< 0: no limit); -1 with errno ETIMEDOUT when it timed out. */
long lull_futex_wait(_Atomic unsigned *word, unsigned expected, long ns);
void lull_futex_wake(_Atomic unsigned *word, int n);

static inline size_t lull_align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* LULL_DEFINE_HEAPSORT(name, T, KEY): static void name(T *a, size_t n), an
 * in-place heapsort ascending by KEY(element). For pauses: qsort may call
 * malloc, and a stopped thread may hold malloc's lock. */
#define LULL_DEFINE_HEAPSORT(name, T, KEY)                                       \
    static void name##_down(T *a, size_t i, size_t n)                            \
    {                                                                            \
        for (;;) {                                                               \
            size_t c = 2 * i + 1;                                                \
            if (c >= n)                                                          \
                return;                                                          \
            if (c + 1 < n && KEY(a[c + 1]) > KEY(a[c]))                          \
                c++;                                                             \
            if (KEY(a[c]) <= KEY(a[i]))                                          \
                return;                                                          \
            T tmp = a[i];                                                        \
            a[i] = a[c];                                                         \
            a[c] = tmp;                                                          \
            i = c;                                                               \
        }                                                                        \
    }                                                                            \
    static void name(T *a, size_t n)                                             \
    {                                                                            \
        for (size_t i = n / 2; i-- > 0;)                                         \
            name##_down(a, i, n);                                                \
        for (size_t end = n; end-- > 1;) {                                       \
            T tmp = a[0];                                                        \
            a[0] = a[end];                                                       \
            a[end] = tmp;                                                        \
            name##_down(a, 0, end);                                              \
        }                                                                        \
    }

/* Chunked claiming of the items [0, n) by several threads through *next
 * (start at 0): true with the next claim [*lo, *hi), at most `chunk`
 * items; false once none is left. */
#include <stdatomic.h>
#include <stdbool.h>
static inline bool lull_claim(atomic_size_t *next, size_t n, size_t chunk, size_t *lo, size_t *hi)
{
    size_t i = atomic_fetch_add_explicit(next, chunk, memory_order_relaxed);
    if (i >= n)
        return false;
    *lo = i;
    *hi = n - i > chunk ? i + chunk : n;
    return true;
}

/* The calling thread's registers, for a conservative scan of its own stack
 * at a function boundary. Only the callee-saved registers (rbx, rbp,
 * r12-r15) can hold a live pointer of the callers there; the others, and
 * every vector register (all call-clobbered in the SysV ABI), hold stale
 * values, often pointers the collector itself just copied or scanned, that
 * would pin or retain dead objects. They are zeroed, as is the rest of the
 * struct (getcontext leaves parts of it unwritten). Must be inlined: the
 * registers are the caller's. */
#include <string.h>
#include <ucontext.h>
#if defined(__x86_64__)
#define LULL__SCRUB_CLOBBERED(uc)                                                        \
    do {                                                                                 \
        static const int clobbered_[] = { REG_RAX, REG_RCX, REG_RDX, REG_RSI, REG_RDI,   \
                                          REG_R8,  REG_R9,  REG_R10, REG_R11 };          \
        for (unsigned i_ = 0; i_ < sizeof clobbered_ / sizeof clobbered_[0]; i_++)       \
            (uc)->uc_mcontext.gregs[clobbered_[i_]] = 0;                                 \
        memset(&(uc)->__fpregs_mem, 0, sizeof (uc)->__fpregs_mem);                      \
    } while (0)
#else
#define LULL__SCRUB_CLOBBERED(uc) ((void)(uc))
#endif
/* After a collection, on the thread that ran it, before it goes back to
 * the program: zero the registers the calling convention lets a callee
 * clobber (rax, rcx, rdx, rsi, rdi, r8-r11, every vector register). The
 * collector's memcpy and memmove (glibc's AVX-512 variants move 64 bytes at
 * a time through zmm16-zmm31, which code compiled without -mavx512f never
 * touches) leave heap addresses there, and they stay for as long as the
 * thread runs code that does not overwrite them: when a later pause stops
 * the thread, the signal frame saves them and the stack scan keeps those
 * objects alive (tests/heap_shot.c found zmm17-zmm19 holding 23 addresses
 * of objects the program had dropped, and 64 objects retained with them).
 * A no-op off x86-64. */
void lull_clear_scratch_registers(void);

/* A macro, not a function: the registers must be the caller's. */
#define lull_capture_registers(uc)                                                       \
    do {                                                                                 \
        memset((uc), 0, sizeof *(uc));                                                   \
        getcontext(uc);                                                                  \
        LULL__SCRUB_CLOBBERED(uc);                                                       \
    } while (0)

#endif
