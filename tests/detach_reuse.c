/*
 * detach_reuse — a detaching thread's free lists go back for reuse.
 *
 * 200 threads, one after another, attach, allocate one 7.5 KiB
 * pointer-free array and a 3 KiB one (each refill takes up to 64 KiB of
 * blocks for its class), check them, and detach. Each detach must hand
 * the slots it did not use back to their blocks, where the next thread
 * finds them: the heap grows by less than 8 MiB over the 200 threads
 * (dropped, the lists would cost 200 x ~192 KiB, ~38 MiB, until the next
 * major's sweep). No major runs meanwhile (checked: a sweep would find the
 * slots anyway).
 */
#include "check.h"

typedef struct arr { lull_array_header a; uint64_t w[]; } arr;
static const lull_type arr_type = { .name = "arr", .size = sizeof(arr), .elem_size = 1 };

static void *one(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    CHECK(lull_thread_attach() == 0, "attach");
    arr *a = lull_alloc_array(&arr_type, 7680);
    arr *b = lull_alloc_array(&arr_type, 3072);
    CHECK(a && b, "allocation");
    a->w[0] = i;
    b->w[383] = ~i;
    CHECK(a->w[959] == 0 && b->w[0] == 0, "zeroed");
    CHECK(a->w[0] == i && b->w[383] == ~i, "kept");
    lull_thread_detach();
    return NULL;
}

int main(void)
{
    CHECK(lull_init("heap-growth=1000") == 0, "lull_init");
    lull_collect(LULL_GEN_MAJOR);
    lull_stats s0, s1;
    lull_get_stats(&s0);
    for (uintptr_t i = 0; i < 200; i++) {
        pthread_t t;
        CHECK(pthread_create(&t, NULL, one, (void *)i) == 0, "pthread_create");
        pthread_join(t, NULL);
    }
    lull_get_stats(&s1);
    double grew = ((double)s1.heap_bytes - (double)s0.heap_bytes) / 1048576.0;
    printf("heap %.1f MiB -> %.1f MiB over 200 threads; majors %llu -> %llu\n", s0.heap_bytes / 1048576.0,
           s1.heap_bytes / 1048576.0, (unsigned long long)s0.collections_major,
           (unsigned long long)s1.collections_major);
    CHECK(s1.collections_major == s0.collections_major, "a major ran: the test proves nothing then");
    CHECK(grew < 8.0, "the heap grew by %.1f MiB: detached threads' free lists were not reused", grew);
    lull_shutdown();
    return 0;
}
