/* heapshot.h — counting a major's mark by type (lull_heap_shot, and
 * LULL_GC_DEBUG=heap-shot=FILE). All with the gc lock held. */
#ifndef LULL_HEAPSHOT_H
#define LULL_HEAPSHOT_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/trace.h"

/* lull_init: map heap-shot=FILE's table (once per process). */
void lull_heapshot_init(void);
/* After a major's mark, world stopped (tr: the stopper's tracer): count
 * what was asked for. final: a concurrent major's final pause (the
 * nursery and young large objects were its roots, not marked). */
void lull_heapshot_after_mark(lull_tracer *tr, bool final);
/* After a major's pause, world running: heap-shot=FILE appends the
 * counts of its mark. */
void lull_heapshot_after_pause(uint64_t collection, bool synchronous);

#endif
