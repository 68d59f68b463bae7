/*
 * lifecycle — lull_init / lull_shutdown / attach / detach:
 *
 *  - before lull_init: lull_thread_attach and lull_root_add return -EPERM,
 *    lull_thread_detach is a no-op, stats are zero;
 *  - init, work, shutdown, init again — several cycles with different
 *    options, each heap fully usable (lists survive collections);
 *  - lull_init while initialised is -EBUSY;
 *  - attach twice returns 0, detach twice is a no-op, a re-attached thread
 *    works again;
 *  - lull_set_allow_synchronous_major returns false with major=stw (no
 *    concurrent majors to fall back on, doc/api.md) and true otherwise;
 *    toggling it is harmless.
 */
#include "check.h"

#include <pthread.h>

static void *worker(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg;
    CHECK(lull_thread_attach() == 0, "lull_thread_attach failed");
    CHECK(lull_thread_attach() == 0, "second lull_thread_attach did not return 0");
    struct tnode *volatile l = list_build(base, 3000);
    lull_collect(LULL_GEN_MAJOR);
    list_verify(l, base, 3000, "worker list");
    lull_thread_detach();
    lull_thread_detach();            /* no-op */
    /* attach again: a fresh start */
    CHECK(lull_thread_attach() == 0, "re-attaching failed");
    l = list_build(base + 10000, 3000);
    lull_collect(LULL_GEN_NURSERY);
    list_verify(l, base + 10000, 3000, "worker list after re-attach");
    lull_thread_detach();
    return NULL;
}

static const char *cycles[] = {
    NULL,
    "major=stw",
    "nursery-size=1m,mark-workers=1",
    "nursery-size=16m,max-heap-size=512m,concurrent-sweep=no",
    "allow-synchronous-major=no,finalizers=manual",
    "",
};

int main(void)
{
    static void *word;
    CHECK(lull_thread_attach() == -EPERM, "lull_thread_attach before lull_init should be -EPERM");
    CHECK(lull_root_add(&word, sizeof word) == -EPERM, "lull_root_add before lull_init should be -EPERM");
    lull_thread_detach();            /* no-op */
    lull_root_remove(&word);         /* no-op */
    lull_stats s0 = get_stats();     /* filled with 0xa5 first */
    static const lull_stats zero;
    CHECK(memcmp(&s0, &zero, sizeof s0) == 0, "lull_get_stats before lull_init is not all zero");

    for (size_t c = 0; c < sizeof cycles / sizeof cycles[0]; c++) {
        const char *p = cycles[c];
        int rc = lull_init(p);
        CHECK(rc == 0, "cycle %zu: lull_init(%s) returned %d", c, p ? p : "NULL", rc);
        CHECK(lull_init(p) == -EBUSY, "cycle %zu: second lull_init not -EBUSY", c);
        CHECK(lull_thread_attach() == 0, "cycle %zu: attaching the init thread again did not return 0", c);

        uint64_t base = (uint64_t)(c + 1) << 32;
        struct tnode *volatile mine = list_build(base, 20000);
        pthread_t t[3];
        for (int i = 0; i < 3; i++)
            CHECK(pthread_create(&t[i], NULL, worker,
                                 (void *)(uintptr_t)(base + 100000 * (uint64_t)(i + 1))) == 0,
                  "pthread_create failed");
        for (int i = 0; i < 3; i++)
            pthread_join(t[i], NULL);

        bool stw = p && strstr(p, "major=stw");
        bool expect = !stw;
        CHECK(lull_set_allow_synchronous_major(false) == expect,
              "cycle %zu (%s): lull_set_allow_synchronous_major(false) did not return %s (%s)", c,
              p ? p : "NULL", expect ? "true" : "false", stw ? "major=stw" : "concurrent majors");
        lull_collect(LULL_GEN_MAJOR);
        CHECK(lull_set_allow_synchronous_major(true) == expect,
              "cycle %zu (%s): lull_set_allow_synchronous_major(true) did not return %s", c,
              p ? p : "NULL", expect ? "true" : "false");
        lull_collect(LULL_GEN_MAJOR);
        list_verify(mine, base, 20000, "main list");
        lull_stats s = get_stats();
        CHECK(s.bytes_allocated >= 20000 * sizeof(struct tnode), "cycle %zu: bytes_allocated %" PRIu64,
              c, s.bytes_allocated);
        lull_shutdown();
    }
    CHECK(lull_thread_attach() == -EPERM, "lull_thread_attach after lull_shutdown should be -EPERM");
    printf("lifecycle: ok: %zu init/shutdown cycles\n", sizeof cycles / sizeof cycles[0]);
    return 0;
}
