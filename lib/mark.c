#include "mark.h"

#include <ck_stack.h>

#include "heap.h"
#include "nursery.h"
#include "os.h"
#include "tsan.h"
#include "util.h"

#define SECTION_BYTES  ((size_t)64 << 10)

typedef struct section {
    ck_stack_entry_t pool_entry;     /* while in the pool */
    struct section  *prev;           /* next-older section of the grey stack */
    size_t           top;            /* entries used */
    uintptr_t        item[];
} section;

#define SECTION_CAP ((SECTION_BYTES - sizeof(section)) / sizeof(uintptr_t))

CK_STACK_CONTAINER(section, pool_entry, section_of_entry)

/* Free sections, shared by markers. ck_stack's ABA generation counter is
 * a `char *` that pop_mpmc increments: started at NULL, the first pop is
 * arithmetic on a null pointer, which UBSan rightly reports. Any non-null
 * start makes the counter's arithmetic defined (it never wraps). */
static ck_stack_t pool __attribute__((aligned(16))) = { NULL, (char *)(uintptr_t)4096 };
static section *cur;                 /* top section of the grey stack */
static unsigned long sections_live;  /* sections allocated from the OS */
static unsigned long sections_limit; /* 0: unlimited (LULL_GC_DEBUG mark-stack-limit) */
static size_t section_cap = SECTION_CAP; /* entries used per section */
static bool overflow;
static unsigned long overflows;

static void section_put(section *s);

void lull_mark_init(unsigned long stack_limit_entries)
{
    /* A debug limit smaller than a section shrinks the section too, so the
     * overflow path can be exercised with a handful of entries. */
    section_cap = SECTION_CAP;
    if (stack_limit_entries && stack_limit_entries < SECTION_CAP)
        section_cap = stack_limit_entries;
    sections_limit = stack_limit_entries ? (stack_limit_entries + section_cap - 1) / section_cap : 0;
    cur = NULL;
    overflow = false;
    /* One section from the start, outside fault injection: a heap whose
     * growth the OS refuses still marks depth-first without falling back to
     * rescans (a long chain would take one rescan per link). */
    section *first = lull_os_reserve_rw(SECTION_BYTES);
    if (first) {
        sections_live++;
        section_put(first);
    }
}

void lull_mark_fini(void)
{
    ck_stack_entry_t *e;
    while ((e = ck_stack_pop_mpmc(&pool)) != NULL) {
        lull_tsan_acquire(e);
        lull_os_free(section_of_entry(e), SECTION_BYTES);
        sections_live--;
    }
}

static section *section_get(void)
{
    ck_stack_entry_t *e = ck_stack_pop_mpmc(&pool);
    if (e) {
        lull_tsan_acquire(e);
        return section_of_entry(e);
    }
    if (sections_limit && sections_live >= sections_limit)
        return NULL;
    section *s = lull_os_alloc(SECTION_BYTES);
    if (s)
        sections_live++;
    return s;
}

static void section_put(section *s)
{
    lull_tsan_release(&s->pool_entry);
    ck_stack_push_mpmc(&pool, &s->pool_entry);
}

static inline void push(uintptr_t obj)
{
    if (LULL_LIKELY(cur && cur->top < section_cap)) {
        cur->item[cur->top++] = obj;
        return;
    }
    section *s = section_get();
    if (!s) {
        overflow = true;   /* obj stays marked; the overflow rescan finds it */
        return;
    }
    s->prev = cur;
    s->top = 0;
    cur = s;
    cur->item[cur->top++] = obj;
}

static inline bool pop(uintptr_t *obj)
{
    while (cur) {
        if (cur->top) {
            *obj = cur->item[--cur->top];
            return true;
        }
        section *s = cur;
        cur = s->prev;
        section_put(s);
    }
    return false;
}

/* Grey `v` if it is a reference to an unmarked object. References point to
 * object starts (API contract); the heap verifier checks that. */
static inline void mark_ref(uintptr_t v)
{
    if (!lull_in_committed(v))
        return;
    lull_block *b = lull_block_of(v);
    if (b->state == LULL_BLOCK_SMALL) {
        if (lull_mark_set(v) && b->has_refs)
            push(v);
    } else if (b->state == LULL_BLOCK_LARGE_HEAD && (v & (LULL_BLOCK_SIZE - 1)) == 0) {
        if (lull_mark_set(v) && lull_type_has_refs(lull_header_type(*(uintptr_t *)v)))
            push(v);
    } else if (b->state == LULL_BLOCK_NURSERY) {
        /* A survivor of the minor that began this major (pinned). */
        if (lull_mark_set(v) && lull_type_has_refs(lull_header_type(*(uintptr_t *)v)))
            push(v);
    }
}

/* A reference slot of a heap object. An old slot that points into the
 * nursery gets its card marked: the remembered set is rebuilt by every
 * major (cemented objects' cards were cleared). */
static inline void mark_slot(uintptr_t *slot)
{
    uintptr_t v = *slot;
    if (lull_in_nursery(v) && !lull_in_nursery((uintptr_t)slot))
        lull_heap_g.cards[((uintptr_t)slot - lull_heap_g.start) >> LULL_CARD_SHIFT] = 1;
    mark_ref(v);
}

static void visit(void **slot, void *ctx)
{
    (void)ctx;
    mark_slot((uintptr_t *)slot);
}

void lull_mark_precise_slot(void **slot)
{
    mark_ref((uintptr_t)*slot);
}

/* Make a grey object black: grey its children. */
static void scan_object(uintptr_t obj)
{
    uintptr_t *w = (uintptr_t *)obj;
    const lull_type *t = lull_header_type(w[0]);
    if (t->trace) {
        t->trace((void *)obj, visit, NULL);
        return;
    }
    for (uint64_t r = t->refs; r; r &= r - 1)
        mark_slot(&w[__builtin_ctzll(r)]);
    if (t->elem_size && t->elem_refs) {
        size_t n = w[1];
        char *e = (char *)obj + t->size;
        for (size_t k = 0; k < n; k++, e += t->elem_size) {
            uintptr_t *ew = (uintptr_t *)e;
            for (uint64_t r = t->elem_refs; r; r &= r - 1)
                mark_slot(&ew[__builtin_ctzll(r)]);
        }
    }
}

LULL_NO_SANITIZE_SCAN
void lull_mark_conservative(uintptr_t lo, uintptr_t hi)
{
    lo = (lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    for (const uintptr_t *p = (const uintptr_t *)lo; (uintptr_t)(p + 1) <= hi; p++) {
        uintptr_t v = *p;
        if (!lull_in_committed(v))
            continue;
        uintptr_t obj = lull_find_object(v, true);
        if (!obj || !lull_mark_set(obj))
            continue;
        lull_block *b = lull_block_of(obj);
        if (b->state == LULL_BLOCK_SMALL ? b->has_refs : lull_type_has_refs(lull_header_type(*(uintptr_t *)obj)))
            push(obj);
    }
}

static void drain_stack(void)
{
    uintptr_t obj;
    while (pop(&obj))
        scan_object(obj);
}

/* Overflow recovery: every marked object may have unscanned children. */
static void rescan_one(uintptr_t obj)
{
    scan_object(obj);
    drain_stack();
}

void lull_mark_drain(void)
{
    overflows = 0;
    drain_stack();
    while (overflow) {
        overflow = false;
        overflows++;
        lull_heap_each_marked(true, rescan_one);
    }
}

unsigned long lull_mark_overflows(void)
{
    return overflows;
}
