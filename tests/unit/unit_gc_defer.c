/* A wake deferred under the gc lock runs after the lock's release, once,
 * on the releasing thread, with the lock free (gclock.h: lull_gc_defer).
 * The memory thread's kick uses it: woken under the lock, that thread
 * could take the CPU from the lock's holder while others wait for it. */
#include <stdatomic.h>

#include "base/gclock.h"
#include "unit.h"

static int runs, runs_other;
static bool lock_was_free;

static void wake(void)
{
    runs++;
    lock_was_free = lull_gc_trylock();
    if (lock_was_free)
        lull_gc_unlock();
}

static void wake_other(void)
{
    runs_other++;
}

int main(void)
{
    lull_gc_lock();
    lull_gc_defer(0, wake);
    lull_gc_defer(0, wake);
    lull_gc_defer(3, wake_other);
    UCHECK(runs == 0 && runs_other == 0, "a deferred wake ran while the lock was held");
    lull_gc_unlock();
    UCHECK(runs == 1, "the wake deferred twice ran %d times after the release", runs);
    UCHECK(runs_other == 1, "the other slot's wake ran %d times", runs_other);
    UCHECK(lock_was_free, "the wake ran before the lock was released");
    lull_gc_lock();
    lull_gc_unlock();
    UCHECK(runs == 1 && runs_other == 1, "a wake ran again at a later release");
    printf("unit_gc_defer: ok\n");
    return 0;
}
