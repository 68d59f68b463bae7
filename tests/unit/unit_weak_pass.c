/*
 * unit_weak_pass — the collector's walk of a handle table costs what the
 * table holds now, not the most it ever held (handles.c: chunk counts and
 * group flags):
 *
 *  - with 1,000,000 WEAK handles, a minor reads at least that many slots
 *    (the counter works);
 *  - after all but three are freed (the first, one in the middle, the
 *    last), a minor reads at most three chunks of slots (768), and those
 *    three handles still behave: two follow their live objects as the
 *    minor moves them, one whose object was dropped reads NULL;
 *  - once those three are freed too, a minor reads no slot at all, and
 *    neither does one of the empty NORMAL and PINNED tables;
 *  - handles made again after that (the group flags were cleared) are
 *    seen by the next pass: a minor moves a live object and the handle
 *    follows it.
 *
 * It prints the minor pauses with the million handles and with three, side
 * by side (they were the same before the counts: every pass read every
 * slot ever used).
 */
#include <lull.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/handles.h"
#include "unit.h"

#define MANY 1000000u

typedef struct node { lull_header h; struct node *next; uint64_t id; } node;
static const lull_type node_type = { .name = "unit-weak-node", .size = sizeof(node), .refs = LULL_REF(node, next) };

static lull_handle *h;
static void *keep[2];           /* precise roots: these objects live and move */

static node *node_new(uint64_t id)
{
    node *n = lull_alloc(&node_type);
    UCHECK(n, "alloc");
    n->id = id;
    return n;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Zero the 64 KiB below the caller's frame (as tests/check.h's
 * clobber_stack): a new thread may get the cached stack of one that ended,
 * and a word that thread left there would be a conservative root. */
__attribute__((noinline)) static void clobber_stack(void)
{
#if defined(__x86_64__)
    __asm__ __volatile__("mov %%rsp, %%rdx\n\tsub $65536, %%rsp\n\tmov %%rsp, %%rdi\n\tmov $8192, %%ecx\n\t"
                         "xor %%eax, %%eax\n\trep stosq\n\tmov %%rdx, %%rsp"
                         : : : "rax", "rcx", "rdx", "rdi", "memory", "cc");
#endif
}

/* Run fn in a new attached thread, its stack wiped first, while this one is
 * detached (no stale word of either keeps or pins what a check expects to
 * die or move). Every such thread starts here, so their frames line up. */
struct fresh { void (*fn)(void *); void *arg; };
static void *fresh_main(void *p)
{
    struct fresh *f = p;
    UCHECK(lull_thread_attach() == 0, "attach");
    clobber_stack();
    f->fn(f->arg);
    lull_thread_detach();
    return NULL;
}

static void run_fresh(void (*fn)(void *), void *arg)
{
    struct fresh f = { fn, arg };
    pthread_t t;
    lull_thread_detach();
    UCHECK(pthread_create(&t, NULL, fresh_main, &f) == 0, "pthread_create");
    pthread_join(t, NULL);
    UCHECK(lull_thread_attach() == 0, "attach");
}

/* A minor, from a fresh thread; its wall time in ns. */
static void collect_minor(void *arg)
{
    uint64_t *ns = arg;
    uint64_t t = now_ns();
    lull_collect(LULL_GEN_NURSERY);
    *ns = now_ns() - t;
}

static uint64_t minor(void)
{
    uint64_t ns = 0;
    run_fresh(collect_minor, &ns);
    return ns;
}

/* Slots read by one minor in the table of `kind`, and its time. */
static uint64_t slots_of_minor(enum lull_handle_kind kind, uint64_t *ns)
{
    uint64_t before = lull_handles_slots_read(kind);
    uint64_t t = minor();
    if (ns)
        *ns = t;
    return lull_handles_slots_read(kind) - before;
}

static void make_all(void)
{
    node *target = node_new(0);     /* one object, a million handles on it */
    keep[0] = target;
    for (uint32_t i = 0; i < MANY; i++) {
        h[i] = lull_handle_new(target, LULL_HANDLE_WEAK);
        UCHECK(h[i], "lull_handle_new %u", i);
    }
}

static void make_three(void *arg)
{
    (void)arg;
    keep[0] = node_new(1);
    keep[1] = node_new(2);
    lull_handle_set(h[0], keep[0]);
    lull_handle_set(h[MANY / 2], keep[1]);
    lull_handle_set(h[MANY - 1], node_new(3));     /* dropped at once */
}

int main(void)
{
    UCHECK(lull_init("major=stw") == 0, "lull_init");
    UCHECK(lull_root_add_refs(keep, 2) == 0, "root");
    h = calloc(MANY, sizeof *h);
    UCHECK(h, "calloc");

    make_all();
    uint64_t many_ns, three_ns;
    uint64_t read_many = slots_of_minor(LULL_HANDLE_WEAK, &many_ns);
    UCHECK(read_many >= MANY, "with %u weak handles a minor read %llu slots", MANY, (unsigned long long)read_many);

    for (uint32_t i = 1; i < MANY - 1; i++)
        if (i != MANY / 2)
            lull_handle_free(h[i]);
    run_fresh(make_three, NULL);
    uintptr_t at0 = (uintptr_t)keep[0], at1 = (uintptr_t)keep[1];
    uint64_t read_three = slots_of_minor(LULL_HANDLE_WEAK, &three_ns);
    UCHECK(read_three <= 3 * 256, "with 3 weak handles left of %u a minor read %llu slots", MANY,
           (unsigned long long)read_three);
    UCHECK((uintptr_t)keep[0] != at0 && (uintptr_t)keep[1] != at1, "the minor did not move the kept nodes");
    UCHECK(lull_handle_get(h[0]) == keep[0] && lull_handle_get(h[MANY / 2]) == keep[1],
           "a weak handle did not follow its moved object");
    UCHECK(((node *)keep[0])->id == 1 && ((node *)keep[1])->id == 2, "moved nodes corrupt");
    UCHECK(lull_handle_get(h[MANY - 1]) == NULL, "the weak handle of a dropped node was not cleared");

    lull_handle_free(h[0]);
    lull_handle_free(h[MANY / 2]);
    lull_handle_free(h[MANY - 1]);
    uint64_t read_none = slots_of_minor(LULL_HANDLE_WEAK, NULL);
    uint64_t read_none2 = slots_of_minor(LULL_HANDLE_WEAK, NULL);
    UCHECK(read_none == 0 && read_none2 == 0, "with no weak handle left minors read %llu and %llu slots",
           (unsigned long long)read_none, (unsigned long long)read_none2);
    UCHECK(slots_of_minor(LULL_HANDLE_NORMAL, NULL) == 0 && slots_of_minor(LULL_HANDLE_PINNED, NULL) == 0,
           "empty NORMAL or PINNED tables were read");

    /* The flags are clear now: a new handle must set its group's again. */
    keep[1] = NULL;
    keep[0] = node_new(4);
    {
        lull_handle again = lull_handle_new(keep[0], LULL_HANDLE_WEAK);
        UCHECK(again, "lull_handle_new");
        uintptr_t was = (uintptr_t)keep[0];
        minor();
        UCHECK((uintptr_t)keep[0] != was, "the minor did not move the node");
        UCHECK(lull_handle_get(again) == keep[0], "a handle made after its group was found empty was not updated");
        lull_handle_free(again);
    }

    printf("unit_weak_pass: a minor read %llu slots with %u weak handles (%.3f ms), %llu with 3 left (%.3f ms), "
           "%llu with none\n", (unsigned long long)read_many, MANY, (double)many_ns / 1e6,
           (unsigned long long)read_three, (double)three_ns / 1e6, (unsigned long long)read_none);
    lull_root_remove(keep);
    free(h);
    lull_shutdown();
    puts("unit_weak_pass: ok");
    return 0;
}
