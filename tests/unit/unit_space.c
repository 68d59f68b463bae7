/* Size classes and the block space: every request fits its class, runs are
 * split and merged back, the max-heap-size limit holds. */
#include <string.h>

#include "space/heap.h"
#include "unit.h"

/* blocks.c counts allocations through collect.c in the library; the unit
 * test links the library, so those are the real ones. */

int main(void)
{
    lull_major_init();
    UCHECK(lull_nclasses > 20 && lull_nclasses <= LULL_MAX_CLASSES, "%u classes", lull_nclasses);
    for (unsigned c = 0; c < lull_nclasses; c++) {
        UCHECK(lull_class_size[c] % LULL_GRANULE == 0, "class %u aligned", c);
        UCHECK(lull_class_slots[c] * lull_class_size[c] <= LULL_BLOCK_SIZE, "class %u fits", c);
        if (c)
            UCHECK(lull_class_size[c] > lull_class_size[c - 1], "class %u grows", c);
    }
    UCHECK(lull_class_size[lull_nclasses - 1] == LULL_MAX_SMALL, "largest class");
    for (size_t b = 1; b <= LULL_MAX_SMALL; b++) {
        unsigned c = lull_size_class(b);
        UCHECK(lull_class_size[c] >= b, "size %zu -> class %u", b, c);
        UCHECK(c == 0 || lull_class_size[c - 1] < b, "size %zu not in the smallest class", b);
    }

    UCHECK(lull_space_init((size_t)256 << 20) == 0, "space init");
    uint32_t a = lull_space_alloc(1), b = lull_space_alloc(3), c = lull_space_alloc(2);
    UCHECK(a != LULL_NO_BLOCK && b == a + 1 && c == b + 3, "bump %u %u %u", a, b, c);
    UCHECK(lull_space_in_use_bytes() == 6 * LULL_BLOCK_SIZE, "in use");
    memset((void *)lull_block_addr(b), 0x5a, 3 * LULL_BLOCK_SIZE);
    lull_space_free(b, 3);
    lull_space_free(a, 1);            /* merges with b's run: 4 free blocks */
    uint32_t d = lull_space_alloc(4);
    UCHECK(d == a, "merged run reused (%u vs %u)", d, a);
    for (size_t i = 0; i < 4 * LULL_BLOCK_SIZE; i++)
        UCHECK(((unsigned char *)lull_block_addr(d))[i] == 0, "freed run reads as zero");
    lull_space_free(d, 4);
    lull_space_free(c, 2);            /* everything free: one run of 6 */
    UCHECK(lull_space_in_use_bytes() == 0, "all free");
    UCHECK(lull_space_alloc(6) == a, "whole run");
    lull_space_free(a, 6);

    lull_space_set_limit(8 * LULL_BLOCK_SIZE);
    UCHECK(lull_space_alloc(9) == LULL_NO_BLOCK, "limit");
    uint32_t e = lull_space_alloc(8);
    UCHECK(e != LULL_NO_BLOCK && lull_space_alloc(1) == LULL_NO_BLOCK, "limit reached");
    lull_space_free(e, 8);
    lull_space_fini();
    puts("unit_space: ok");
    return 0;
}
