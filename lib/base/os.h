/* os.h — the operating system's memory: reserving the heap's address range,
 * committing and releasing pages. Every page request goes through here, so
 * fault injection (LULL_GC_DEBUG=fail-mmap=N) sees all of them. */
#ifndef LULL_OS_H
#define LULL_OS_H

#include <stdbool.h>
#include <stddef.h>

#define LULL_PAGE_SIZE 4096u

/* Reserve `size` bytes of address space aligned to `align` (a power of two),
 * inaccessible (PROT_NONE) and not backed. NULL on failure. */
void *lull_os_reserve(size_t size, size_t align);
/* Reserve `size` bytes readable and writable, backed lazily on first touch
 * (MAP_NORESERVE): side tables sized for the whole range. NULL on failure. */
void *lull_os_reserve_rw(size_t size);
void  lull_os_unreserve(void *p, size_t size);
/* A side table of `bytes` (rounded up to pages): reserved read-write,
 * committed by the kernel as it is touched, not subject to fail-mmap;
 * NULL on failure. lull_os_free_table(NULL, ...) does nothing. */
void *lull_os_table(size_t bytes);
void  lull_os_free_table(void *p, size_t bytes);
/* Make reserved pages usable. false on failure (or injected failure). */
bool  lull_os_commit(void *p, size_t size);
/* Give pages back to the OS; they stay usable and read as zero. */
void  lull_os_release(void *p, size_t size);
/* Give committed pages their memory now, written (zero), so that the
 * first write to them takes no page fault: one madvise(MADV_POPULATE_WRITE)
 * where the kernel has it (Linux 5.14), else a write to every page. */
void  lull_os_populate(void *p, size_t size);
/* Anonymous memory for collector metadata (mark stack sections...): never
 * malloc while the world is stopped, a stopped thread may hold its lock. */
void *lull_os_alloc(size_t size);
void  lull_os_free(void *p, size_t size);

/* Fault injection: every Nth commit/alloc fails (0 = off). */
void  lull_os_set_fail_every(unsigned n);

#endif
