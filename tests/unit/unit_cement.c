/*
 * unit_cement — an object, once cemented, stays cemented until the next
 * major, however crowded the cement table: the minor left the cards of the
 * slots that point to it clean, and only its pinning keeps those slots
 * right (nursery.c: lull_cement_new_cycle).
 *
 * The case: 24 objects whose probes start at entry 4080 fill the table's
 * last 16 entries and wrap to entries 0-7; then 20 objects that start at
 * entry 0 take entries 8-27. All are cemented (65 old referrers each). A
 * new minor's rebuild of the table inserts them in table order: the 8
 * wrapped ones first, which take 4080-4087, then the 20 (0-19), then the
 * 16 that were at 4080-4095: 8 of them find room at 4088-4095 and 8 would
 * need entries 20-27, 36 or more probes from home, beyond the 32 a lookup
 * makes. Before the fix those 8 lost their cementing: the consumer torture
 * on one CPU then failed in 12-15% of runs ("a reference holds ...,
 * inside the nursery but not the start of an object" at the first minor
 * after a concurrent major). Here they must all still be cemented after
 * the rebuild, and after a second one.
 *
 * The table never dereferences the addresses: made-up granule-aligned
 * values stand for nursery objects.
 */
#include <lull.h>
#include <stdint.h>
#include <stdio.h>

#include "space/heap.h"
#include "trace/cement.h"
#include "unit.h"

#define NEND  24
#define NZERO 20

static size_t pick(unsigned home, uintptr_t *out, size_t n, uintptr_t *from)
{
    size_t k = 0;
    for (uintptr_t a = *from; k < n; a += LULL_GRANULE)
        if (lull_cement_home(a) == home) {
            out[k++] = a;
            *from = a + LULL_GRANULE;
        }
    return k;
}

static void cement(uintptr_t obj)
{
    bool cemented = false;
    for (unsigned i = 0; i <= LULL_CEMENT_THRESHOLD; i++)
        cemented = lull_cement_note(obj);
    UCHECK(cemented, "%p not cemented after %u old referrers", (void *)obj, LULL_CEMENT_THRESHOLD + 1);
}

static unsigned count_cemented(const uintptr_t *objs, size_t n)
{
    unsigned k = 0;
    for (size_t i = 0; i < n; i++)
        k += lull_cement_is_cemented(objs[i]);
    return k;
}

int main(void)
{
    UCHECK(lull_init(NULL) == 0, "lull_init");
    uintptr_t objs[NEND + NZERO], from = (uintptr_t)1 << 40;
    UCHECK(pick(4080, objs, NEND, &from) == NEND, "addresses for entry 4080");
    UCHECK(pick(0, objs + NEND, NZERO, &from) == NZERO, "addresses for entry 0");

    lull_cement_new_cycle();    /* a minor begins: empty table */
    for (size_t i = 0; i < NEND + NZERO; i++)
        cement(objs[i]);
    UCHECK(count_cemented(objs, NEND + NZERO) == NEND + NZERO, "cemented before the rebuild");

    for (int cycle = 1; cycle <= 2; cycle++) {
        lull_cement_new_cycle();
        unsigned k = count_cemented(objs, NEND + NZERO);
        printf("unit_cement: after rebuild %d, %u of %d objects cemented\n", cycle, k, NEND + NZERO);
        UCHECK(k == NEND + NZERO, "rebuild %d of the cement table lost %u cemented objects", cycle,
               NEND + NZERO - k);
    }
    lull_shutdown();
    puts("unit_cement: ok");
    return 0;
}
