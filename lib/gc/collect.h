/* collect.h — the pauses of a collection (collect.c), run with the gc
 * lock held (base/gclock.h) by whoever asks for one; the policy that
 * decides which and when is policy.h. */
#ifndef LULL_COLLECT_H
#define LULL_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"
#include "base/gclock.h"
#include "trace/minor.h"   /* the minor collection the pauses run */

/* What lull_collect_locked runs: LULL_GEN_NURSERY (a minor), LULL_GEN_MAJOR
 * (a synchronous major; while a concurrent mark runs, that mark's final
 * pause first), or one of the two pauses of a concurrent major. */
enum { LULL_COLLECT_MAJOR_START = 2, LULL_COLLECT_MAJOR_FINISH = 3 };
void lull_collect_locked(int what, const char *reason);   /* reason: a string literal */
/* A synchronous major may run (allow-synchronous-major, and the switch). */
bool lull_synchronous_major_allowed(void);
/* Collections completed since lull_init (gc lock held). */
uint64_t lull_collect_count(void);
/* lull_init: the collection state, the policy, the pause listeners. */
void lull_collect_init(void);

#endif
