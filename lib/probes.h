/* probes.h — USDT trace probes (provider "lull"), compiled in when
 * <sys/sdt.h> is available (CMake LULL_PROBES). A probe costs one nop
 * until a tracer (perf, bpftrace, systemtap) attaches to it:
 *
 *   bpftrace -e 'usdt:./liblull.so:lull:pause_end { @us = hist(arg1 / 1000); }'
 *
 * Probes:
 *   collection_begin(generation, reason)   before the world is stopped
 *   world_stopped(threads)                 every other thread is suspended
 *   mark_end(overflows)                    marking complete
 *   sweep_end(live_bytes)                  sweep complete
 *   pause_end(collection, pause_ns)        the world runs again
 */
#ifndef LULL_PROBES_H
#define LULL_PROBES_H

#if defined(LULL_HAVE_SDT) && LULL_HAVE_SDT
#include <sys/sdt.h>
#define LULL_PROBE1(name, a)    DTRACE_PROBE1(lull, name, a)
#define LULL_PROBE2(name, a, b) DTRACE_PROBE2(lull, name, a, b)
#else
#define LULL_PROBE1(name, a)    ((void)(a))
#define LULL_PROBE2(name, a, b) ((void)(a), (void)(b))
#endif

#endif
