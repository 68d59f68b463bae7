/* init.c — lull_init, lull_shutdown, attach and detach: the lifecycle.
 *
 * lull_init validates the whole configuration before touching anything,
 * so a rejected option leaves the process as it was. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "gc/collect.h"
#include "gc/background.h"
#include "base/gclock.h"
#include "gc/finalizers.h"
#include "trace/handles.h"
#include "gc/policy.h"
#include "space/heap.h"
#include "space/nursery.h"
#include "trace/mark.h"
#include "trace/minor.h"
#include "base/os.h"
#include "trace/roots.h"
#include "gc/stats.h"
#include "base/stw.h"
#include "gc/threads.h"
#include "base/timeline.h"
#include "trace/workers.h"
#include "base/util.h"



/* The lifecycle: one instance. init_lock serialises lull_init and
 * lull_shutdown (and fork, init.c's atfork handlers); lull_is_initialised (base/config.h)
 * is read by every API entry without it. */
static struct {
    pthread_mutex_t init_lock;
    pthread_once_t atfork_once;
} init_g = { .init_lock = PTHREAD_MUTEX_INITIALIZER, .atfork_once = PTHREAD_ONCE_INIT };

/* fork(): the child gets one thread, a copy of the heap, and whatever locks
 * other threads held at that instant. So the forking thread takes every
 * lock of the collector first (init -> gc -> stats, the order everything
 * else takes them in): no pause, registration or lull_init is in flight
 * when the address space is copied, the heap is consistent, and both
 * processes release the locks afterwards (the forking thread owns them in
 * both). The child then forgets the other threads: they do not exist there
 * and their stacks are no longer roots. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&init_g.init_lock);
    if (lull_is_initialised()) {
        lull_gc_lock();
        lull_los_wait_published();        /* no large object still being zeroed or carved (heap.h) */
        lull_workers_stop_background();   /* a mark's grey objects are held, in both processes */
        lull_registry_lock();             /* no attach in flight */
        lull_nursery_lock_for_fork();     /* no TLAB refill in flight */
    }
    lull_stats_lock_for_fork();
}

static void fork_parent(void)
{
    lull_stats_unlock_after_fork();
    if (lull_is_initialised()) {
        lull_nursery_unlock_after_fork();
        lull_los_allow_carving();
        lull_registry_unlock();
        if (!lull_mark_resume_background())
            lull_major_resume_sweep();
        lull_gc_unlock();
    }
    pthread_mutex_unlock(&init_g.init_lock);
}

static void fork_child(void)
{
    lull_stats_unlock_after_fork();
    if (lull_is_initialised()) {
        lull_nursery_unlock_after_fork();
        lull_gc_lock_after_fork_child();
        lull_registry_lock_after_fork_child();
        lull_threads_after_fork_child();
        lull_los_allow_carving();
        lull_registry_unlock();
        lull_workers_after_fork_child();
        lull_finalize_after_fork_child();
        lull_timeline_after_fork_child();
        lull_memory_after_fork_child();
        if (!lull_mark_resume_background())
            lull_major_resume_sweep();
        lull_gc_unlock();
    }
    pthread_mutex_unlock(&init_g.init_lock);
}

static void install_atfork(void)
{
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
        lull_warn("lull_init", "pthread_atfork failed: fork() in a running program is unsafe");
}

int lull_init(const char *params)
{
    pthread_once(&init_g.atfork_once, install_atfork);
    pthread_mutex_lock(&init_g.init_lock);
    if (lull_is_initialised()) {
        pthread_mutex_unlock(&init_g.init_lock);
        lull_warn("lull_init", "lull is already initialised");
        return -EBUSY;
    }
    lull_config cfg;
    int r = lull_config_parse(&cfg, params);
    if (r) {
        pthread_mutex_unlock(&init_g.init_lock);
        return r;
    }
    /* First, so that the timeline has every pause, and a bad path fails
     * lull_init before anything else is set up. */
    if (cfg.trace_file[0] && (r = lull_timeline_start(cfg.trace_file, cfg.mark_workers)) != 0) {
        pthread_mutex_unlock(&init_g.init_lock);
        return r;
    }
    size_t reserve = lull_policy_size_heap(&cfg);
    /* promotion-age=2 or auto: the nursery's range is twice nursery-size, the part
     * beyond the allocation area being where survivors age (nursery.h). */
    size_t nursery_range = cfg.nursery_size * (cfg.promotion_age != 1 ? 2 : 1);
    if (lull_space_init_aligned(reserve, nursery_range) != 0) {
        lull_timeline_stop();
        pthread_mutex_unlock(&init_g.init_lock);
        lull_warn("lull_init", "cannot reserve %zu MiB of address space", reserve >> 20);
        return -ENOMEM;
    }
    r = lull_stw_install(cfg.suspend_signal, cfg.restart_signal);
    if (r) {
        lull_space_fini();
        lull_timeline_stop();
        pthread_mutex_unlock(&init_g.init_lock);
        lull_warn("lull_init", "cannot install the stop-the-world signal handlers: %s", strerror(-r));
        return r;
    }
    lull_cfg = cfg;
    lull_space_set_limit(cfg.max_heap_size);
    /* The nursery is committed once, here, before fail-mmap (which is for
     * the heap's growth) takes effect. */
    r = lull_nursery_init(nursery_range, cfg.nursery_size);
    if (!r && (r = lull_minor_init()) != 0)
        lull_nursery_fini();
    if (r) {
        lull_stw_uninstall();
        lull_space_fini();
        lull_timeline_stop();
        pthread_mutex_unlock(&init_g.init_lock);
        lull_warn("lull_init", "cannot set up the %zu KiB nursery", cfg.nursery_size >> 10);
        return -ENOMEM;
    }
    lull_os_set_fail_every(cfg.fail_mmap);
    lull_major_init();
    lull_los_init();
    lull_mark_init(cfg.mark_stack_limit);
    lull_stats_reset();
    lull_collect_init();
    lull_handles_init();
    lull_finalize_init();
    lull_threads_init();
    lull_workers_start(cfg.mark_workers - 1, cfg.major == LULL_MAJOR_CONCURRENT);
    /* The first minor's promotion room (policy.c sets its size) is made
     * ready here, its pages touched, before lull_init returns: a program
     * that fills its first nursery at once would otherwise meet the
     * background job halfway and fault the rest in inside that minor. No
     * background job runs yet (one at a time prepares blocks: major.c);
     * the one started next keeps the room up from then on. */
    atomic_store_explicit(&lull_bg_stop, false, memory_order_relaxed);
    lull_major_prepare_for_promotion();
    lull_gc_lock();
    lull_major_resume_sweep();
    lull_gc_unlock();
    lull__barrier.cards = lull_heap_g.cards;
    lull__barrier.mark_cards = lull_heap_g.union_cards;
    lull__barrier.heap_start = lull_heap_g.start;
    __atomic_store_n(&lull__barrier.heap_size, lull_heap_g.reserve, __ATOMIC_RELEASE);
    lull_set_initialised(true);
    r = lull_threads_attach();
    pthread_mutex_unlock(&init_g.init_lock);
    if (r) {
        lull_shutdown();
        return r;
    }
    return 0;
}

void lull_shutdown(void)
{
    pthread_mutex_lock(&init_g.init_lock);
    if (!lull_is_initialised()) {
        pthread_mutex_unlock(&init_g.init_lock);
        return;
    }
    /* The finalizer thread runs what is queued, and is joined: it is
     * attached while it runs finalizers. */
    lull_finalize_stop();
    lull_gc_lock();
    lull_threads_finish_parked();
    lull_registry_lock();
    unsigned others = lull_threads_count() - (lull_thread_self ? 1u : 0u);
    lull_registry_unlock();
    lull_gc_unlock();
    if (others)
        lull_fatal("lull_shutdown", "%u other thread(s) are still attached; detach them first", others);
    lull_threads_detach();
    lull_set_initialised(false);
    __atomic_store_n(&lull__barrier.heap_size, 0, __ATOMIC_RELEASE);
    lull_mark_abandon();
    lull_workers_stop();
    lull_memory_stop();            /* no pause or background job is left to kick it */
    lull_timeline_stop();          /* no collection can run any more */
    lull_stw_uninstall();
    lull_roots_reset();
    lull_handles_fini();
    lull_mark_fini();
    lull_major_fini();
    lull_minor_fini();
    lull_nursery_fini();
    lull_space_fini();
    lull_os_set_fail_every(0);
    pthread_mutex_unlock(&init_g.init_lock);
}

int lull_thread_attach(void)
{
    if (!lull_is_initialised())
        return -EPERM;
    return lull_threads_attach();
}

void lull_thread_detach(void)
{
    lull_threads_detach();
}
