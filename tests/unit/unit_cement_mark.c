/* Cementing during a running concurrent mark (trace/minor.c:
 * old_slot_to_young). A minor clears the card of an old slot that points to
 * a cemented nursery object; the cement table is forgotten when the major
 * ends, so by then the card must be marked again. The final pause's visit
 * of the slot does that, but only if the mark visits the slot again after
 * the minor: so the minor puts the card in the union table.
 *
 * The case: 200 old holders and a young object Y, which a conservative
 * root range pins; a concurrent mark begins and its background work is
 * done; then each holder's slot is set to Y. The preclean's passes clean those
 * union cards (the slots point into the nursery, which the mark ignores).
 * Then a minor cements Y (200 old referrers, over the threshold of 64)
 * and clears the holders' cards. The final pause ends the mark, the cement
 * table is forgotten; Y's pin is dropped and a minor moves it. Every
 * holder must point at the moved Y. Without the union-card mark in
 * old_slot_to_young the slots keep Y's old address in the nursery, which
 * verify-nursery reports. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit_nodes.h"

#define HOLDERS 200u

static void *roots[2];                  /* the holders, and a marker of the end */
static struct node *volatile pinned[1]; /* a conservative root range: pins Y */
static uintptr_t y_hidden;              /* Y's first address, disguised: no root */

/* On threads of their own, so that no stale word of the main thread's
 * stack pins Y later. make_y: Y made, pinned by the root range (before the
 * mark: an allocation's slow path during it could run its final pause).
 * store_y: Y stored into every holder, no allocation (fewer stores than a
 * thread makes before the stores' slow path). */
static void *make_y(void *arg)
{
    (void)arg;
    UCHECK(lull_thread_attach() == 0, "attach");
    struct node *y = lull_alloc(&node_type);
    UCHECK(y != NULL, "Y");
    y->id = 424242;
    pinned[0] = y;
    y_hidden = (uintptr_t)y ^ 0x5a5a5a5a5a5a5a5aull;
    lull_thread_detach();
    return NULL;
}

static void *store_y(void *arg)
{
    struct refs *h = arg;
    UCHECK(lull_thread_attach() == 0, "attach");
    for (uint32_t i = 0; i < HOLDERS; i++) {
        struct node *n = h->item[i];
        lull_store(n, &n->k[0], pinned[0]);
    }
    lull_thread_detach();
    return NULL;
}

static void on_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    UCHECK(pthread_create(&t, NULL, fn, arg) == 0, "pthread_create");
    pthread_join(t, NULL);
}

int main(void)
{
    setenv("LULL_GC_DEBUG", "verify-nursery", 0);
    UCHECK(lull_init("mark-workers=2,allow-synchronous-major=no,pause-target=10s") == 0, "init");
    UCHECK(lull_root_add_refs(roots, 2) == 0, "root");
    UCHECK(lull_root_add((void *)pinned, sizeof pinned) == 0, "pin root");

    struct refs *h = lull_alloc_array(&refs_type, HOLDERS);
    UCHECK(h != NULL, "holders");
    roots[0] = h;
    for (uint32_t i = 0; i < HOLDERS; i++) {
        struct node *n = lull_alloc(&node_type);
        UCHECK(n != NULL, "holder");
        n->id = i;
        lull_store(h, &h->item[i], n);
    }
    lull_collect(LULL_GEN_NURSERY);     /* the holders are old */
    h = roots[0];

    on_thread(make_y, NULL);
    pause_now(LULL_COLLECT_MAJOR_START);
    wait_mark_ready();                  /* the holders are visited (black) */
    on_thread(store_y, h);
    usleep(300000);                     /* the tail's passes clean the union cards */
    lull_collect(LULL_GEN_NURSERY);     /* Y pinned, 200 old referrers: cemented, their cards cleared */
    UCHECK(lull_marking(), "the mark ended before the cementing minor: nothing would be shown");
    pause_now(LULL_COLLECT_MAJOR_FINISH);
    UCHECK(!lull_marking(), "the mark did not end");

    pinned[0] = NULL;                   /* Y is held by the holders alone now */
    lull_collect(LULL_GEN_NURSERY);     /* moves Y: every holder's slot must follow */
    lull_collect(LULL_GEN_NURSERY);
    h = roots[0];
    struct node *moved = ((struct node *)h->item[0])->k[0];
    if ((uintptr_t)moved == (y_hidden ^ 0x5a5a5a5a5a5a5a5aull)) {
        /* A stale word on this thread's stack pinned Y again: nothing moved,
         * so nothing can be shown. */
        printf("unit_cement_mark: skipped, Y did not move (pinned by a stale stack word)\n");
        return 77;
    }
    for (uint32_t i = 0; i < HOLDERS; i++) {
        struct node *n = h->item[i];
        UCHECK(n->id == i, "holder %u damaged", i);
        UCHECK(n->k[0] == moved && moved && moved->id == 424242,
               "holder %u points at %p (holder 0 at %p, id %" PRIu64 "): a slot kept Y's old address", i,
               (void *)n->k[0], (void *)moved, moved ? moved->id : 0);
    }
    lull_collect(LULL_GEN_MAJOR);
    UCHECK(((struct node *)((struct refs *)roots[0])->item[7])->k[0]->id == 424242, "Y after a major");
    roots[0] = NULL;
    lull_root_remove((void *)pinned);
    lull_root_remove(roots);
    lull_shutdown();
    printf("unit_cement_mark: ok (Y cemented during a running mark, then moved; every holder followed)\n");
    return 0;
}
