/* probes.h — USDT trace probes (provider "lull"), compiled in when
 * <sys/sdt.h> is available (CMake LULL_PROBES). A probe costs one nop
 * until a tracer (perf, bpftrace, systemtap) attaches to it:
 *
 *   bpftrace -e 'usdt:./liblull.so:lull:pause_end { @us = hist(arg1 / 1000); }'
 *
 * Probes (doc/observability.md lists them with their arguments; the usdt_probes
 * test reads that table and checks with readelf -n that each is in the
 * built library, and consumer_package that each is in the installed one):
 *   collection_begin(generation, reason)   a pause begins, before the world is stopped
 *   world_stop_begin(threads)              the suspend signals are about to go out
 *   world_stopped(threads)                 every other thread is suspended (the stop's end)
 *   minor_end(promoted_bytes)              a minor's copying is done
 *   mark_end(overflows)                    marking complete
 *   sweep_begin(collection)                a major's sweep in its pause begins
 *   sweep_end(live_bytes)                  that sweep is done
 *   restart_begin(collection)              the world is about to run again
 *   restart_end(collection)                every stopped thread may run
 *   pause_end(collection, pause_ns)        the world runs again
 *   collection_end(generation, reason)     the pause collection_begin began is over
 *   gc_lock_acquired() / gc_lock_released()
 *   initial_pause_begin(cycle) / initial_pause_end(cycle)   a concurrent major's initial pause
 *   concurrent_mark_begin(cycle)           the background mark starts (initial pause)
 *   preclean_begin(cycle)                  a preclean pass begins
 *   preclean_end(cards)                    a preclean pass, and the cards it rescanned
 *   concurrent_mark_done(cycle)            the background mark has nothing left
 *   concurrent_mark_end(cycle, done)       the final pause ends the concurrent mark (done: the
 *                                          background had finished; 0: finished stopped)
 *   final_pause_begin(cycle) / final_pause_end(cycle)       its final pause
 *   bg_sweep_begin() / bg_sweep_end(blocks) the background sweep's runs
 *   alloc_tlab(thread_bytes, need)         a TLAB refill (need: the object's bytes)
 *   alloc_nursery(type_name, bytes)        an object allocated by the slow path in a TLAB
 *                                          (every one with LULL_GC_DEBUG=alloc-slow)
 *   alloc_major(type_name, bytes)          an object allocated in the major heap
 *   alloc_large(type_name, bytes)          an object allocated in the large-object space
 *   alloc_pinned(type_name, bytes)         lull_alloc_pinned
 *   object_pinned(addr, bytes, type_name, generation)   a nursery object pinned by a minor
 *   object_promoted(from, to, bytes, type_name)         a nursery object copied
 *   object_aged(from, to, bytes, type_name)             a nursery object copied within the nursery
 *                                                       (promotion-age=2 or auto)
 *   object_evacuated(from, to, bytes, type_name)        a synchronous major moved an object
 *   heap_grown(bytes, heap_bytes)          blocks taken from the OS
 *   heap_shrunk(bytes, heap_bytes)         blocks given back to the OS
 *   nursery_resized(old_bytes, new_bytes)  the pause target moved the nursery's limit
 *   young_large_freed(bytes)               a minor freed young large objects
 *   weak_cleared(kind, count)              a collection cleared weak handles (kind: 0 WEAK, 1 WEAK_TRACK)
 *   finalizers_queued(count)               a collection found finalizable objects unreachable
 *   finalizer_run(addr, type_name)         a finalizer is about to run
 */
#ifndef LULL_PROBES_H
#define LULL_PROBES_H

#if defined(LULL_HAVE_SDT) && LULL_HAVE_SDT
#include <sys/sdt.h>
#define LULL_PROBE0(name)             DTRACE_PROBE(lull, name)
#define LULL_PROBE1(name, a)          DTRACE_PROBE1(lull, name, a)
#define LULL_PROBE2(name, a, b)       DTRACE_PROBE2(lull, name, a, b)
#define LULL_PROBE4(name, a, b, c, d) DTRACE_PROBE4(lull, name, a, b, c, d)
#else
#define LULL_PROBE0(name)             ((void)0)
#define LULL_PROBE1(name, a)          ((void)(a))
#define LULL_PROBE2(name, a, b)       ((void)(a), (void)(b))
#define LULL_PROBE4(name, a, b, c, d) ((void)(a), (void)(b), (void)(c), (void)(d))
#endif

/* A type's name for a probe ("" when it has none). */
#define LULL_PROBE_TYPE_NAME(t) ((t) && (t)->name ? (t)->name : "")

#endif
