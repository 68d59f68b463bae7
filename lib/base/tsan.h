/* tsan.h — ThreadSanitizer cannot see the atomics inside Concurrency
 * Kit's inline assembly. Every hand-off through them is
 * annotated here: release before publishing, acquire after taking. Compiles
 * to nothing without TSan. */
#ifndef LULL_TSAN_H
#define LULL_TSAN_H

#include "base/util.h"

#if LULL_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define lull_tsan_acquire(p) __tsan_acquire((void *)(p))
#define lull_tsan_release(p) __tsan_release((void *)(p))
#else
#define lull_tsan_acquire(p) ((void)(p))
#define lull_tsan_release(p) ((void)(p))
#endif

#endif
