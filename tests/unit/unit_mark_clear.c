/* The check at the start of every mark (checked builds): every mark bit is
 * clear. A child process plants the fault, the mark bit of a live object
 * set before a major, and must abort with the check's line; a child that
 * plants nothing must exit cleanly. In builds without the checks
 * (LULL_CHECKED: Debug and sanitizer builds have them) the test is
 * skipped, exit code 77. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gc/collect.h"
#include "space/heap.h"
#include "lull.h"
#include "unit.h"

#ifdef UNIT_LULL_CHECKED
struct obj { lull_header h; void *next; uint64_t v; };
static const lull_type obj_type = {
    .name = "obj", .size = sizeof(struct obj), .refs = LULL_REF(struct obj, next),
};
#endif

#ifdef UNIT_LULL_CHECKED
static void *root[1];

static void child(int plant)
{
    UCHECK(lull_init(NULL) == 0, "init");
    UCHECK(lull_root_add_refs(root, 1) == 0, "root");
    struct obj *o = lull_alloc_pinned(&obj_type);   /* in the major heap at once */
    UCHECK(o != NULL, "alloc");
    root[0] = o;
    lull_collect(LULL_GEN_MAJOR);
    /* The sweep is lazy: o's block still holds the major's mark bits until
     * it is swept (the next mark sweeps it first, clearing them). Sweep it
     * now, so that the planted bit is a stray one. */
    lull_gc_lock();            /* the background sweep may be running */
    lull_major_sweep_all();
    lull_gc_unlock();
    if (plant)
        lull_mark_set((uintptr_t)o);
    lull_collect(LULL_GEN_MAJOR);
    lull_shutdown();
    _exit(0);
}

/* Run a child; its stderr into buf. Returns its wait status. */
static int run(int plant, char *buf, size_t cap)
{
    int fd[2];
    UCHECK(pipe(fd) == 0, "pipe");
    fflush(NULL);
    pid_t pid = fork();
    UCHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        child(plant);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd[0], buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    close(fd[0]);
    int st;
    UCHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    return st;
}
#endif

int main(void)
{
#ifndef UNIT_LULL_CHECKED
    printf("unit_mark_clear: skipped (a build without LULL_CHECKED)\n");
    return 77;
#else
    static char buf[8192];
    int st = run(0, buf, sizeof buf);
    UCHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child without a planted bit failed: %s", buf);
    st = run(1, buf, sizeof buf);
    UCHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "the child with a stray mark bit did not abort (status %d)",
           st);
    UCHECK(strstr(buf, "a mark begins with the mark bit of") != NULL, "the abort did not name the check: %s", buf);
    printf("unit_mark_clear: ok (a stray mark bit aborts the next mark)\n");
    return 0;
#endif
}
