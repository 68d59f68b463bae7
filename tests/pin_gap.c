/*
 * pin_gap — a minor looks up its stack's nursery addresses in ascending
 * order, and each lookup in a logged range resumes the walk where the last
 * one stopped (nursery.c: lull_nursery_objects_at). An address into zeroed
 * memory inside a range must leave that walk at an object boundary, so
 * that the next address, in the object after the zeroes, is found.
 *
 * X1, a dead 256-byte Y and X2 lie next to each other in a TLAB, X1 and
 * X2 held only by interior addresses on the stack. The first minor pins
 * both in place and logs them as one range with Y's place zeroed between
 * them. The stack then also holds an address into Y's old place, between
 * those of X1 and X2. The next minors must keep X2 pinned, in place and
 * intact while garbage refills the nursery around it (an X2 that a lookup
 * missed is freed and overwritten; a walk resumed inside the zeroes reads
 * X2's header out of line and aborts).
 */
#include "check.h"

/* Y: 256 bytes between two test nodes (check.h's struct tnode). */
static const lull_type gap_type = { .name = "gap256", .size = 256 };

#define HIDE ((uintptr_t)0x5a5a5a5a5a5a5a5aull)
#define INTO 40     /* an interior offset into a node */

/* X1, Y, X2 and a dead Z, adjacent; the interior addresses of X1 and X2
 * and the address of Y's middle in out[0..2] (ascending); false if the
 * four did not come out adjacent (a TLAB ended among them). */
static NOINLINE bool make(volatile uintptr_t *out)
{
    struct tnode *x1 = tnode_new(1);
    char *y = lull_alloc(&gap_type);
    struct tnode *x2 = tnode_new(2);
    struct tnode *z = tnode_new(3);
    if ((uintptr_t)y != (uintptr_t)x1 + sizeof *x1 || (uintptr_t)x2 != (uintptr_t)y + 256 ||
        (uintptr_t)z != (uintptr_t)x2 + sizeof *x2)
        return false;
    out[0] = (uintptr_t)x1 + INTO;
    out[1] = (uintptr_t)y + 128;
    out[2] = (uintptr_t)x2 + INTO;
    return true;
}

static NOINLINE void churn(void)
{
    for (uint64_t i = 0; i < 20000; i++)
        tnode_new(0xdead0000u + i);
}

static const struct tnode *node_at(uintptr_t interior)
{
    return (const struct tnode *)(interior - INTO);
}

int main(void)
{
    CHECK(lull_init("nursery-size=1m") == 0, "lull_init");
    volatile uintptr_t held[3] = { 0, 0, 0 };
    int tries = 0;
    while (!make(held))
        CHECK(++tries < 100, "X1, Y, X2 never came out adjacent");
    volatile uintptr_t y_hidden = held[1] ^ HIDE;   /* minor 1: Y is garbage */
    held[1] = 0;
    clobber_stack();
    lull_collect(LULL_GEN_NURSERY);
    CHECK(tnode_ok(node_at(held[0]), 1) && tnode_ok(node_at(held[2]), 2),
          "X1 or X2 broken by the first minor (not pinned in place?)");
    CHECK(*(const uint64_t *)((y_hidden ^ HIDE) - 128) == 0, "Y was pinned: its header is still there");
    held[1] = y_hidden ^ HIDE;                    /* minors 2-4: an address into the zeroes between them */
    for (int m = 0; m < 3; m++) {
        clobber_stack();
        lull_collect(LULL_GEN_NURSERY);
        churn();
        CHECK(tnode_ok(node_at(held[2]), 2), "X2 lost after minor %d: the lookup missed it", m + 2);
        CHECK(tnode_ok(node_at(held[0]), 1), "X1 lost after minor %d", m + 2);
    }
    printf("pin_gap: X1 and X2 pinned across 4 minors, a stack address into the zeroes between them\n");
    lull_shutdown();
    return 0;
}
