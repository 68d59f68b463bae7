/*
 * slow_path_stall — a thread held in the collector's slow path, with the
 * gc lock, does not stall the other threads' allocation while the nursery
 * has room.
 *
 * The stalled thread runs a minor (lull_collect) whose pause hook, called
 * with the gc lock still held once the world runs again, sleeps STALL_MS.
 * Meanwhile a second thread, attached before, allocates SMALL_BYTES of
 * 32-byte objects (hundreds of TLAB refills) and keeps every 64th in a
 * ring, checking each kept one when it is replaced. It must be done well
 * before the hook returns (within STALL_MS / 4): a TLAB refill takes the
 * nursery lock only, and asks the policy only if the gc lock is free. The
 * nursery (16 MiB, pause target 1 s so that the policy keeps it) holds
 * the whole allocation, so no collection is needed meanwhile.
 */
#include "check.h"

#include <stdatomic.h>

#define STALL_MS    800u
#define SMALL_BYTES (2u << 20)
#define RING        64u

typedef struct cell { lull_header h; uint64_t seq, tag, pad; } cell;
static const lull_type cell_type = { .name = "cell", .size = sizeof(cell) };
typedef struct ring { lull_array_header a; cell *slot[]; } ring;
static const lull_type ring_type = { .name = "ring", .size = sizeof(ring), .elem_size = sizeof(void *),
                                     .elem_refs = 1 };

/* 0: not armed; 1: armed; 2: the hook is stalling; 3: it returned. */
static atomic_int stall_state;
static atomic_uint_fast64_t worker_ns;     /* the worker's allocation time; 0 until done */
static atomic_int worker_done_in_stall;

static void hook(const lull_pause_event *e, void *data)
{
    (void)e;
    (void)data;
    int armed = 1;
    if (!atomic_compare_exchange_strong(&stall_state, &armed, 2))
        return;
    /* Held with the gc lock, as a slow hook or a long slow path would. */
    sleep_ms(STALL_MS);
    atomic_store(&stall_state, 3);
}

static atomic_int worker_attached;

static void *worker(void *arg)
{
    (void)arg;
    lull_thread_attach();
    ring *r = lull_alloc_array(&ring_type, RING);
    CHECK(r, "ring");
    atomic_store(&worker_attached, 1);
    while (atomic_load(&stall_state) < 2)
        sched_yield();
    uint64_t t0 = now_ns();
    uint64_t n = SMALL_BYTES / sizeof(cell);
    for (uint64_t i = 0; i < n; i++) {
        cell *c = lull_alloc(&cell_type);
        CHECK(c, "allocation %" PRIu64 " failed", i);
        c->seq = i;
        c->tag = mix64(i);
        if (i % 64 == 0) {
            unsigned s = (unsigned)(i / 64) % RING;
            cell *old = r->slot[s];
            if (old)
                CHECK(old->seq == i - 64 * RING && old->tag == mix64(old->seq), "kept cell %" PRIu64 " corrupted",
                      i - 64 * RING);
            lull_store(r, &r->slot[s], c);
        }
    }
    uint64_t dt = now_ns() - t0;
    atomic_store(&worker_done_in_stall, atomic_load(&stall_state) == 2);
    atomic_store(&worker_ns, dt);
    lull_thread_detach();
    return NULL;
}

int main(void)
{
    setenv("LULL_GC_PARAMS", "nursery-size=16m,pause-target=1s", 1);
    CHECK(lull_init(NULL) == 0, "lull_init");
    unsetenv("LULL_GC_PARAMS");
    lull_set_pause_hook(hook, NULL);
    pthread_t w;
    CHECK(pthread_create(&w, NULL, worker, NULL) == 0, "pthread_create");
    while (!atomic_load(&worker_attached))
        sched_yield();
    atomic_store(&stall_state, 1);
    uint64_t t0 = now_ns();
    lull_collect(LULL_GEN_NURSERY);     /* the hook holds this thread, gc lock and all */
    uint64_t stall_ns = now_ns() - t0;
    pthread_join(w, NULL);
    lull_set_pause_hook(NULL, NULL);
    uint64_t dt = atomic_load(&worker_ns);
    printf("stall %.1f ms; the other thread's %u KiB of small objects took %.1f ms, %s the stall\n",
           (double)stall_ns / 1e6, SMALL_BYTES >> 10, (double)dt / 1e6,
           atomic_load(&worker_done_in_stall) ? "inside" : "not inside");
    CHECK(stall_ns >= (uint64_t)STALL_MS * 1000000u, "the hook did not stall (%.1f ms)", (double)stall_ns / 1e6);
    CHECK(atomic_load(&worker_done_in_stall) && dt < (uint64_t)STALL_MS * 1000000u / 4,
          "small allocation waited for the stalled thread: %.1f ms for %u KiB", (double)dt / 1e6,
          SMALL_BYTES >> 10);
    lull_shutdown();
    puts("ok");
    return 0;
}
