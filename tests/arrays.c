/*
 * arrays — object layouts the collector must follow exactly:
 *
 *  - reference arrays of many lengths (0 included), small and large, whose
 *    elements are the only path to their nodes;
 *  - element structs with several reference words and non-reference words
 *    in between, plus a reference in the array's fixed part;
 *  - pointer-free arrays: their contents are not references (a large object
 *    whose address sits only in a pointer-free array is collected);
 *  - lull_array_length and lull_type_of for every kind;
 *  - trace callbacks (an object type and an array type whose `refs` /
 *    `elem_refs` are 0): their referents are reachable only through the
 *    callback, survive, and the callback is really called.
 */
#include "check.h"

#include <stdatomic.h>

/* ---------------------------------------------------------------------- */
/* Element structs with several reference words.                          */
/* ---------------------------------------------------------------------- */

struct pair_elem {
    struct tnode *a;
    uint64_t      tag;        /* not a reference: holds pointer-like junk */
    struct tnode *b;
};

struct pairs {
    lull_array_header hdr;
    struct tnode     *extra;  /* reference in the fixed part */
    uint64_t          cookie;
    struct pair_elem  e[];
};

static const lull_type pairs_type = {
    .name = "pairs",
    .size = sizeof(struct pairs),
    .refs = LULL_REF(struct pairs, extra),
    .elem_size = sizeof(struct pair_elem),
    .elem_refs = ((uint64_t)1 << (offsetof(struct pair_elem, a) / sizeof(void *))) |
                 ((uint64_t)1 << (offsetof(struct pair_elem, b) / sizeof(void *))),
};

/* ---------------------------------------------------------------------- */
/* Trace callbacks.                                                        */
/* ---------------------------------------------------------------------- */

static atomic_ulong trace_calls;

struct holder {
    lull_header   h;
    uint64_t      n;          /* number of used slots */
    struct tnode *slot[6];
};

static void holder_trace(void *obj, lull_visit_fn visit, void *ctx)
{
    struct holder *h = obj;
    atomic_fetch_add_explicit(&trace_calls, 1, memory_order_relaxed);
    for (uint64_t i = 0; i < h->n && i < 6; i++)
        visit((void **)&h->slot[i], ctx);
}

static const lull_type holder_type = {
    .name = "holder",
    .size = sizeof(struct holder),
    .refs = 0,                /* only the trace function knows the references */
    .trace = holder_trace,
};

struct traced_array {
    lull_array_header hdr;
    struct tnode     *item[];
};

static void traced_array_trace(void *obj, lull_visit_fn visit, void *ctx)
{
    struct traced_array *t = obj;
    atomic_fetch_add_explicit(&trace_calls, 1, memory_order_relaxed);
    size_t n = lull_array_length(t);
    /* every other element only: the odd ones hold non-reference junk */
    for (size_t i = 0; i < n; i += 2)
        visit((void **)&t->item[i], ctx);
}

static const lull_type traced_array_type = {
    .name = "traced-array",
    .size = sizeof(struct traced_array),
    .elem_size = sizeof(void *),
    .elem_refs = 0,
    .trace = traced_array_trace,
};

/* ---------------------------------------------------------------------- */

static NOINLINE void churn(void)
{
    for (int i = 0; i < 30000; i++)
        (void)tnode_new(0xbad000000ull + (uint64_t)i);
}

static void collect_hard(void)
{
    collect_hard_with(churn);
}

/* ---------------------------------------------------------------------- */

#define NLEN 14
static const size_t lengths[NLEN] = { 0, 1, 2, 3, 7, 8, 63, 64, 65, 500, 1000, 1023, 1025, 100000 };

static uint64_t id_of(size_t arr, size_t i) { return ((uint64_t)arr << 32) | i; }

static NOINLINE struct refs *build_ref_arrays(void)
{
    /* an outer array of arrays; the outer one lives on the stack only */
    struct refs *outer = lull_alloc_array(&refs_type, NLEN);
    CHECK(outer != NULL, "lull_alloc_array(outer) failed");
    for (size_t a = 0; a < NLEN; a++) {
        struct refs *r = lull_alloc_array(&refs_type, lengths[a]);
        CHECK(r != NULL, "lull_alloc_array(refs, %zu) failed: %s", lengths[a], strerror(errno));
        CHECK(lull_array_length(r) == lengths[a], "length %zu, expected %zu",
              lull_array_length(r), lengths[a]);
        lull_store(outer, &outer->item[a], r);
        for (size_t i = 0; i < lengths[a]; i++) {
            CHECK(r->item[i] == NULL, "new ref array not zeroed at %zu", i);
            /* leave every 5th element NULL */
            if (i % 5 != 4)
                lull_store(r, &r->item[i], tnode_new(id_of(a, i)));
        }
    }
    return outer;
}

static NOINLINE void verify_ref_arrays(struct refs *outer)
{
    CHECK(lull_array_length(outer) == NLEN, "outer length wrong");
    for (size_t a = 0; a < NLEN; a++) {
        struct refs *r = outer->item[a];
        CHECK(r != NULL, "inner array %zu lost", a);
        CHECK(lull_type_of(r) == &refs_type, "lull_type_of(inner %zu) wrong", a);
        CHECK(lull_array_length(r) == lengths[a], "inner %zu: length %zu, expected %zu",
              a, lull_array_length(r), lengths[a]);
        for (size_t i = 0; i < lengths[a]; i++) {
            if (i % 5 == 4)
                CHECK(r->item[i] == NULL, "array %zu element %zu: NULL became %p", a, i, r->item[i]);
            else
                CHECK(tnode_ok(r->item[i], id_of(a, i)),
                      "array of length %zu: node at element %zu did not survive", lengths[a], i);
        }
    }
}

static NOINLINE void test_ref_arrays(void)
{
    struct refs *volatile outer = build_ref_arrays();
    collect_hard();
    verify_ref_arrays(outer);
}

/* ---------------------------------------------------------------------- */

#define NPAIRS 300   /* 300 * 24 bytes: a small array */
#define NPAIRS_LARGE 20000

static NOINLINE struct pairs *build_pairs(size_t n, uint64_t base)
{
    struct pairs *p = lull_alloc_array(&pairs_type, n);
    CHECK(p != NULL, "lull_alloc_array(pairs, %zu) failed", n);
    CHECK(lull_array_length(p) == n, "pairs length wrong");
    CHECK(lull_type_of(p) == &pairs_type, "lull_type_of(pairs) wrong");
    LULL_SET(p, extra, tnode_new(base + 999999));
    p->cookie = 0xc00c1e;
    for (size_t i = 0; i < n; i++) {
        lull_store(p, &p->e[i].a, tnode_new(base + 2 * i));
        p->e[i].tag = i;
        lull_store(p, &p->e[i].b, tnode_new(base + 2 * i + 1));
    }
    return p;
}

static NOINLINE void verify_pairs(struct pairs *p, size_t n, uint64_t base)
{
    CHECK(lull_array_length(p) == n, "pairs length %zu, expected %zu", lull_array_length(p), n);
    CHECK(tnode_ok(p->extra, base + 999999), "node referenced from the fixed part of an "
          "element-struct array did not survive");
    CHECK(p->cookie == 0xc00c1e, "fixed-part data word of pairs changed");
    for (size_t i = 0; i < n; i++) {
        CHECK(p->e[i].tag == i, "pairs[%zu].tag changed to %" PRIu64, i, p->e[i].tag);
        CHECK(tnode_ok(p->e[i].a, base + 2 * i), "pairs[%zu].a (element word 0) did not survive", i);
        CHECK(tnode_ok(p->e[i].b, base + 2 * i + 1), "pairs[%zu].b (element word 2) did not survive", i);
    }
}

static NOINLINE void test_pairs(void)
{
    struct pairs *volatile small = build_pairs(NPAIRS, 1u << 24);
    struct pairs *volatile large = build_pairs(NPAIRS_LARGE, 1u << 25);
    collect_hard();
    verify_pairs(small, NPAIRS, 1u << 24);
    verify_pairs(large, NPAIRS_LARGE, 1u << 25);
}

/* ---------------------------------------------------------------------- */
/* Pointer-free arrays are not scanned.                                    */
/* ---------------------------------------------------------------------- */

#define HIDDEN_N   6
#define HIDDEN_LEN ((size_t)4 << 20)

struct words {
    lull_array_header a;
    uintptr_t         w[];
};
static const lull_type words_type = {
    .name = "words", .size = sizeof(struct words), .elem_size = sizeof(uintptr_t),
};

static NOINLINE struct words *hide_in_pointer_free(void)
{
    struct words *w = lull_alloc_array(&words_type, HIDDEN_N);
    CHECK(w != NULL, "lull_alloc_array(words) failed");
    for (int i = 0; i < HIDDEN_N; i++)
        w->w[i] = (uintptr_t)bytes_new(HIDDEN_LEN, 40 + (uint64_t)i);
    return w;
}

static NOINLINE void test_pointer_free(void)
{
    struct words *volatile w = hide_in_pointer_free();
    clobber_stack();
    lull_collect(LULL_GEN_MAJOR);
    lull_collect(LULL_GEN_MAJOR);
    lull_stats s = get_stats();
    /* None of the 4 MiB objects may be kept: their addresses sit only in
     * the pointer-free array (the stack below this frame was zeroed, and
     * the major heap holds nothing else yet). */
    CHECK(s.live_bytes_after_major < HIDDEN_LEN,
          "large objects whose addresses sit only in a pointer-free array were kept: "
          "live_bytes_after_major = %" PRIu64, s.live_bytes_after_major);
    CHECK(lull_array_length(w) == HIDDEN_N, "pointer-free array length changed");
    CHECK(lull_type_of(w) == &words_type, "lull_type_of(words) wrong");

    /* A pointer-free array's payload survives untouched. */
    struct bytes *volatile b = bytes_new(777, 4242);
    collect_hard();
    bytes_verify(b, 4242, 777, "small pointer-free array");
}

/* ---------------------------------------------------------------------- */
/* Trace callbacks.                                                        */
/* ---------------------------------------------------------------------- */

#define NHOLDERS 200
#define TRACED_LEN 501

static NOINLINE struct refs *build_traced(void)
{
    struct refs *keep = lull_alloc_array(&refs_type, NHOLDERS + 1);
    CHECK(keep != NULL, "alloc failed");
    for (int i = 0; i < NHOLDERS; i++) {
        struct holder *h = lull_alloc(&holder_type);
        CHECK(h != NULL, "lull_alloc(holder) failed");
        CHECK(lull_type_of(h) == &holder_type, "lull_type_of(holder) wrong");
        h->n = (uint64_t)(i % 7);           /* 0..6 used slots */
        for (uint64_t j = 0; j < h->n; j++)
            lull_store(h, &h->slot[j], tnode_new(((uint64_t)i << 8) | j));
        lull_store(keep, &keep->item[i], h);
    }
    struct traced_array *t = lull_alloc_array(&traced_array_type, TRACED_LEN);
    CHECK(t != NULL, "lull_alloc_array(traced) failed");
    CHECK(lull_array_length(t) == TRACED_LEN, "traced array length wrong");
    for (size_t i = 0; i < TRACED_LEN; i++) {
        if (i % 2 == 0)
            lull_store(t, &t->item[i], tnode_new(0x77000000u + i));
        else
            t->item[i] = (struct tnode *)(uintptr_t)(0x1000 + i);   /* junk, never traced */
    }
    lull_store(keep, &keep->item[NHOLDERS], t);
    return keep;
}

static NOINLINE void verify_traced(struct refs *keep)
{
    for (int i = 0; i < NHOLDERS; i++) {
        struct holder *h = keep->item[i];
        CHECK(h != NULL && h->n == (uint64_t)(i % 7), "holder %d corrupt", i);
        for (uint64_t j = 0; j < h->n; j++)
            CHECK(tnode_ok(h->slot[j], ((uint64_t)i << 8) | j),
                  "holder %d slot %" PRIu64 ": node reachable only through the trace "
                  "callback did not survive", i, j);
        for (uint64_t j = h->n; j < 6; j++)
            CHECK(h->slot[j] == NULL, "holder %d unused slot %" PRIu64 " changed", i, j);
    }
    struct traced_array *t = keep->item[NHOLDERS];
    CHECK(lull_type_of(t) == &traced_array_type, "lull_type_of(traced array) wrong");
    for (size_t i = 0; i < TRACED_LEN; i++) {
        if (i % 2 == 0)
            CHECK(tnode_ok(t->item[i], 0x77000000u + i),
                  "traced array element %zu did not survive", i);
        else
            CHECK((uintptr_t)t->item[i] == 0x1000 + i, "untraced junk word %zu was modified", i);
    }
}

static NOINLINE void test_trace(void)
{
    unsigned long before = atomic_load(&trace_calls);
    struct refs *volatile keep = build_traced();
    collect_hard();
    verify_traced(keep);
    unsigned long calls = atomic_load(&trace_calls) - before;
    CHECK(calls >= NHOLDERS + 1, "trace callbacks called %lu times during collections of "
          "%d live traced objects", calls, NHOLDERS + 1);
}

int main(void)
{
    want_poison();
    CHECK(lull_init(NULL) == 0, "lull_init failed");

    test_pointer_free();    /* first: measures live bytes, least noise */
    test_ref_arrays();
    test_pairs();
    test_trace();

    lull_shutdown();
    printf("arrays: ok\n");
    return 0;
}
