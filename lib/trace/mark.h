/* mark.h — marking with the tracer (trace.h): atomic mark bits, work
 * sharing between markers, termination.
 *
 * Tri-colour: white = mark bit clear; grey = mark bit set and on some
 * tracer's grey stack or in the shared pool (or lost to an overflow, see
 * trace.h); black = mark bit set and scanned. Marking only ever makes white
 * objects grey and grey ones black; when every stack and the shared pool
 * are empty and no overflow is pending, every object reachable from the
 * roots is black.
 *
 * Roots are greyed by the thread that stopped the world, into its own
 * tracer. The drain then runs on up to mark-workers markers at once: that
 * thread and the worker threads (workers.c), each with its own tracer,
 * sharing grey sections through the shared pool. Mark bits are set with
 * test-then-fetch-or, so an object is pushed by exactly one marker. With
 * mark-workers=1 the drain is the serial collector's, unchanged. */
#ifndef LULL_MARK_H
#define LULL_MARK_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/trace.h"

void lull_mark_init(unsigned long stack_limit_entries);
void lull_mark_fini(void);

/* Grey every object that a word in [lo, hi) points into (interior too);
 * ctx is the tracer. A lull_range_fn (roots.h). */
void lull_mark_conservative(uintptr_t lo, uintptr_t hi, void *ctx);
/* Grey the object *slot refers to (a reference or NULL), and update *slot
 * if an evacuating major moves it; ctx is the tracer. A lull_slot_fn
 * (roots.h). */
void lull_mark_precise_slot(void **slot, void *ctx);

/* ---- evacuation (a synchronous major) ----
 *
 * A synchronous major may evacuate sparse size classes (major.c chooses
 * them: lull_major_plan_evacuation). The mark then copies: the first
 * marker to reach an unmarked, movable object of an evacuated block
 * copies it into a block of its class that is not being evacuated,
 * forwards the original's header to the
 * copy (compare-and-swap: several markers race) and marks the copy;
 * every slot the mark visits (heap objects through the tracer and user
 * trace functions, precise roots, NORMAL handles, the finalizer queue)
 * is updated to the copy. Pinning must be known before the first copy:
 * the caller greys the conservative roots (stacks, registers, ranges,
 * PINNED handles) first, which marks their targets in place; then
 * begin_evacuation; then the precise roots. Marked objects are never
 * copied. After the drains (and the weak pass, which follows the
 * originals through lull_mark_forwarded), end_evacuation. World stopped
 * for all of these. Until that major's sweep_begin, an evacuated
 * original still holds its forwarding header (copy | FORWARDED). */
void lull_mark_begin_evacuation(void);
void lull_mark_end_evacuation(void);
/* Where obj lives after this mark's evacuation (obj itself if it did not
 * move). Valid from the first copy until the major's sweep_begin. */
uintptr_t lull_mark_forwarded(uintptr_t obj);
/* What the last major evacuated: size classes (of one kind each), blocks
 * flagged, objects moved and their slots' bytes (all 0 if it moved
 * nothing). */
void lull_mark_evacuated(unsigned *classes, uint32_t *blocks, uint64_t *objects, uint64_t *bytes);
/* At the start of a mark (world stopped, checked builds: LULL_CHECKED):
 * abort, naming the first one, unless every mark bit of the heap is clear.
 * A bit left set would make its object read as already marked: never
 * scanned, so whatever only it reaches would be freed. */
void lull_mark_assert_all_clear(void);
/* Blacken until nothing is grey, with every marker (world stopped; tr is
 * the stopping thread's tracer, holding the greyed roots). */
void lull_mark_drain(lull_tracer *tr);
/* A minor while a concurrent mark runs (world stopped, the job stopped):
 * the copies it makes are black (allocate black, below), so it greys
 * their children in the old generation with grey_from_minor, into a
 * tracer of its own (tr: one per minor tracer, no sharing), and hands
 * each such tracer's grey objects to the mark with adopt_from_minor at
 * its end (one thread). */
void lull_mark_grey_from_minor(lull_tracer *tr, uintptr_t v);
/* The same minor: young large object obj becomes old at its end, marked
 * then (lull_los_end_minor); its slots are the markers' to scan, a slice
 * at a time while the world runs (trace/minor.c: scan_young_large). */
void lull_mark_grey_made_old(lull_tracer *tr, uintptr_t obj);
void lull_mark_adopt_from_minor(lull_tracer *tr);
/* After a drain, in the same pause: blacken what was greyed since (the
 * objects kept for their finalizers), with every marker; the counts of
 * the drain go on. */
void lull_mark_drain_more(lull_tracer *tr);
/* How many times the last drain had to recover from an overflow. */
unsigned long lull_mark_overflows(void);
/* Objects the last drain blackened, and how many of them the stopping
 * thread did (the rest: workers). */
void lull_mark_last_work(uint64_t *total, uint64_t *by_stopper);

/* ---- the concurrent mark (major=concurrent) ----
 *
 * Initial pause (world stopped, no minor): begin_concurrent turns
 * lull_marking() on and greys what the roots point to, ignoring the
 * nursery and the young large objects. The grey objects are held; after
 * every pause resume_background lets every worker blacken them while the
 * world runs (reading slots atomically), sharing them through the shared
 * pool; worker 0 alone also precleans and says when the mark is done.
 * Every pause first stops that job (lull_workers_stop_background), which
 * puts every worker's grey objects back into the held ones, so a pause's
 * writes of slots, cards and the union table meet no marker; a pause
 * waits at most for POLL_EVERY objects or one 16 KiB slice per worker.
 *
 * Incremental update: while a mark runs, every reference store marks its
 * card in the union table (lull_store), which is the mark's alone; the
 * card table records only stores of young references, as outside marks,
 * and a minor clears it without telling the mark. Objects that enter the
 * major heap meanwhile are allocated black (the mark bit set once the
 * header is published): allocations, a minor's copies (their old children
 * greyed as the minor scans them), a young large object turning old.
 * Invariant at the final pause: every reference from a marked object to
 * an unmarked old one lies on a dirty card of the union table, or in a
 * grey object.
 *
 * The final pause (finish; world stopped, no minor) rescans the roots and
 * takes every nursery object and young large object as a root (their
 * slots visited, they themselves not marked; the next minor judges them),
 * then the union table's dirty cards, then the drain, with every worker.
 * What dies during the mark is floating garbage for one cycle.
 *
 * The union table is written by the barrier (any mutator, a plain store
 * after the slot's), by minors (world stopped: cementing, below), and
 * cleared by the preclean (an atomic exchange before it reads the card's
 * slots, so that a store it does not see marks the card again after) and
 * by the final pause (world stopped).
 *
 * Cementing: a minor clears the card of a slot that points to a cemented
 * object, and the cement table is forgotten at the end of every major, so
 * the card must be marked again by then. The full mark does it (visit
 * marks the card of every old slot it finds pointing into the nursery); a
 * concurrent mark may have visited the slot before the minor cleared its
 * card, so that minor puts the card in the union table, whose rescan
 * (preclean, or the final pause) visits the slot again. */
void lull_mark_begin_concurrent(void);
/* After a pause: start the job again if a mark runs and has work (true:
 * a mark runs). Stopping it is lull_workers_stop_background. */
bool lull_mark_resume_background(void);
/* The job has finished (or cannot run: no worker thread): time for the
 * final pause. */
bool lull_mark_ready(void);
/* The job itself has finished: the mark was done while the world ran
 * (false in a process with no worker thread, whose final pause marks). */
bool lull_mark_background_done(void);
/* When the running mark's background job found nothing left to do
 * (lull_now_ns), 0 before: the policy's mark rate counts to there, not to
 * the final pause, which may wait for an idle call (policy.c). */
uint64_t lull_mark_background_done_ns(void);
/* lull_collect_step (gc lock held, the background job stopped, world
 * running): the running mark's background work on the calling thread
 * until it is done (lull_mark_ready then) or lull_now_ns() passes
 * `deadline` (checked every POLL_EVERY objects, large-object slice or
 * few preclean blocks). Returns LULL_MARK_STEP_* bits; 0: no mark runs or
 * its work is done. */
enum { LULL_MARK_STEP_MARKED = 1, LULL_MARK_STEP_PRECLEANED = 2 };
unsigned lull_mark_step(uint64_t deadline);
/* Concurrent marks begun so far. */
uint64_t lull_mark_cycle(void);
/* The final pause's mark (world stopped, tr empty, no minor before it):
 * afterwards lull_marking() is false but the nursery is still ignored
 * until lull_mark_end_major. */
void lull_mark_finish(lull_tracer *tr);
/* lull_shutdown during a mark: drop it. */
void lull_mark_abandon(void);
/* Objects the running or last concurrent mark's background job
 * blackened, by worker: by_worker[i] for lull-mark/(i+1), for i below n
 * and below the count returned (the workers the job runs on). */
unsigned lull_mark_background_work(uint64_t *by_worker, unsigned n);
/* Cards the last mark's job precleaned, the cards its final pause
 * rescanned, and the nursery and young large objects that pause visited. */
void lull_mark_concurrent_work(uint64_t *precleaned, uint64_t *final_cards, uint64_t *final_nursery_objects);
/* The end of every major's pause, after its weak and finalizer passes
 * (which mark what finalizable objects reach, still ignoring the nursery
 * in a final pause): the next mark starts from scratch. */
void lull_mark_end_major(void);
/* The bytes of young large objects the last initial pause left to the
 * background markers instead of visiting them (mark.c: defer_young_large). */
uint64_t lull_mark_deferred_young_bytes(void);
/* The registered roots' values the last initial pause left to the job
 * (mark.c: deferred_root). */
size_t lull_mark_deferred_roots(void);
/* The bytes of the nursery and young large objects the last final pause
 * kept as roots (live data of that major). */
uint64_t lull_mark_final_young_bytes(void);

/* LULL_GC_DEBUG=verify-parallel (world stopped). Call save before the
 * drain, after the roots are greyed; check after the parallel drain: it
 * re-marks serially from the saved root marks into the bitmap and aborts
 * with the first object the two marks disagree on. After an evacuating
 * drain the re-mark copies nothing: it follows the slots as they were
 * left, and aborts at one still naming an evacuated original. */
void lull_mark_verify_parallel_save(void);
void lull_mark_verify_parallel_check(lull_tracer *tr);

/* ---- pacing: the program waits for the concurrent mark ----
 *
 * When the program outruns the markers (it allocates past its allowance,
 * or its stores dirty cards as fast as the preclean rescans them), it
 * waits in its slow paths, a bounded time each, for the mark's next step:
 * a preclean pass completed, or the mark done, or (want >= 0) the drain
 * through `want` of the last mark's work (lull_mark_progress's measure).
 * wait_progress returns at once when no mark runs, the mark is done or no
 * worker thread exists; else after the next step, the progress wanted or
 * max_ns, whichever comes first. note_paced
 * counts one paced wait of ns (lull_stats). wants_quiet: the preclean's passes stopped shrinking,
 * so storing threads should wait too. Any thread, no lock held; not from
 * inside a critical region (the wait may be interrupted by a pause). */
void lull_mark_wait_progress(uint64_t max_ns, double want);
/* The running mark's drain, as a share of what the last concurrent mark
 * scanned in all (objects); -1 before any finished. Without a lock. */
double lull_mark_progress(void);
bool lull_mark_wants_quiet(void);
void lull_mark_note_paced(uint64_t ns);
void lull_mark_paced(uint64_t *waits, uint64_t *ns);
/* The dirty cards a final pause may rescan within the pause target (the
 * policy sets it as a mark begins): the mark is done once a preclean pass
 * finds no more. */
void lull_mark_set_final_budget(size_t cards);

#endif
