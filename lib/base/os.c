#include "base/os.h"
#include "base/util.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* LULL_GC_DEBUG=fail-mmap: fail_every is set by lull_init; request_count
 * is bumped by whichever thread asks the OS for memory (atomically). */
/* LULL_GC_DEBUG=fail-mmap: set by lull_init and lull_shutdown, counted
 * with atomics by every thread that asks the OS for memory. */
static struct {
    atomic_uint fail_every;
    atomic_uint request_count;
} os_g;

void lull_os_set_fail_every(unsigned n)
{
    atomic_store(&os_g.fail_every, n);
    atomic_store(&os_g.request_count, 0);
}

/* LULL_GC_DEBUG=fail-mmap=N: refuse every Nth request, and say so on
 * stderr (one line each), so a test can see that refusals happened even
 * when lull absorbs them. The line is written with write(2): the world may
 * be stopped here, with another thread holding stdio's lock. */
static bool injected_failure(void)
{
    unsigned n = atomic_load_explicit(&os_g.fail_every, memory_order_relaxed);
    if (n == 0)
        return false;
    unsigned k = atomic_fetch_add(&os_g.request_count, 1) + 1;
    if (k % n)
        return false;
    char line[80];
    int len = snprintf(line, sizeof line, "lull: fail-mmap: refused request %u to the OS\n", k);
    if (len > 0 && write(2, line, (size_t)len) < 0) {
        /* stderr closed: nothing to tell */
    }
    return true;
}

void *lull_os_reserve(size_t size, size_t align)
{
    size_t total = size + align;
    char *p = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
    size_t head = start - (uintptr_t)p;
    if (head)
        munmap(p, head);
    size_t tail = total - head - size;
    if (tail)
        munmap((char *)start + size, tail);
    return (void *)start;
}

void *lull_os_reserve_rw(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void lull_os_unreserve(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

bool lull_os_commit(void *p, size_t size)
{
    if (injected_failure())
        return false;
    return mprotect(p, size, PROT_READ | PROT_WRITE) == 0;
}

void lull_os_release(void *p, size_t size)
{
    /* MADV_DONTNEED on private anonymous memory drops the pages at once and
     * makes them read as zero afterwards: RSS falls, the range stays mapped. */
    if (madvise(p, size, MADV_DONTNEED) != 0)
        memset(p, 0, size);
}

void lull_os_populate(void *p, size_t size)
{
    /* Under ThreadSanitizer, an instrumented write of the whole range: the
     * sanitizer's shadow of the pages is faulted in with them, so memory
     * touched ahead is warm for it too (its shadow is never given back:
     * shadow first touched by the program in a later round would count
     * as growth; tests/large_objects.c). */
    if (LULL_TSAN) {
        memset(p, 0, size);
        return;
    }
#ifdef MADV_POPULATE_WRITE
    /* One call instead of a write fault per page. Not under
     * AddressSanitizer: the loop's instrumented writes also fault in the
     * pages' shadow, which the minor's copies would otherwise fault in
     * their pause (tests/prefault.c). */
    if (!LULL_ASAN && madvise(p, size, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t off = 0; off < size; off += LULL_PAGE_SIZE)
        ((volatile char *)p)[off] = 0;
}

void *lull_os_alloc(size_t size)
{
    if (injected_failure())
        return NULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void lull_os_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}

void *lull_os_table(size_t bytes)
{
    return lull_os_reserve_rw(lull_align_up(bytes, LULL_PAGE_SIZE));
}

void lull_os_free_table(void *p, size_t bytes)
{
    if (p)
        lull_os_unreserve(p, lull_align_up(bytes, LULL_PAGE_SIZE));
}
