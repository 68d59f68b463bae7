/* cement.c — the cement table (cement.h): open addressing on the object
 * address, CEMENT_SLOTS entries, linear probing of at most CEMENT_PROBES.
 *
 * Callers and phases: cement.h. Invariants: an entry, once it holds an
 * object, keeps it until lull_cement_new_cycle or lull_cement_forget (so
 * probe chains stay valid while tracers insert); every cemented object is
 * found by lookups until the next major (the cards of the slots that point
 * to it were left clean, and only its pinning keeps those slots right). */
#include "trace/cement.h"

#include <stdatomic.h>
#include <string.h>

#include "base/os.h"
#include "base/util.h"
#include "space/heap.h"

#define CEMENT_SLOTS  4096u
#define CEMENT_PROBES 32u

/* `count` is per minor; tracers that copy in parallel insert and count
 * with atomics. */
typedef struct cement_slot {
    _Atomic uintptr_t obj;
    atomic_uint       count;
    atomic_uint       cemented;
} cement_slot;

static struct {
    cement_slot *table, *spare;   /* the table, and the one lull_cement_new_cycle rebuilds into */
    atomic_uint ncemented;
} cement_g;

static size_t table_bytes(void)
{
    return CEMENT_SLOTS * sizeof(cement_slot);
}

int lull_cement_init(void)
{
    cement_g.table = lull_os_table(table_bytes());
    cement_g.spare = lull_os_table(table_bytes());
    atomic_store(&cement_g.ncemented, 0);
    return cement_g.table && cement_g.spare ? 0 : -1;
}

void lull_cement_fini(void)
{
    lull_os_free_table(cement_g.table, table_bytes());
    lull_os_free_table(cement_g.spare, table_bytes());
    cement_g.table = cement_g.spare = NULL;
}

unsigned lull_cement_home(uintptr_t obj)
{
    return (unsigned)((obj >> LULL_GRANULE_SHIFT) * 0x9e3779b97f4a7c15ull >> 52) & (CEMENT_SLOTS - 1);
}

/* obj's entry in `table`, NULL if it has none (insert: claims a free one
 * with a compare-and-swap of its object; NULL when the probe finds none). */
static cement_slot *lookup_in(cement_slot *table, uintptr_t obj, bool insert)
{
    size_t i = lull_cement_home(obj);
    for (unsigned probe = 0; probe < CEMENT_PROBES; probe++, i = (i + 1) & (CEMENT_SLOTS - 1)) {
        cement_slot *c = &table[i];
        uintptr_t o = atomic_load_explicit(&c->obj, memory_order_acquire);
        if (o == obj)
            return c;
        if (!o) {
            if (!insert)
                return NULL;
            if (atomic_compare_exchange_strong_explicit(&c->obj, &o, obj, memory_order_acq_rel,
                                                        memory_order_acquire) || o == obj)
                return c;
        }
    }
    return NULL;      /* table crowded: no cementing for this object */
}

bool lull_cement_is_cemented(uintptr_t obj)
{
    if (!atomic_load_explicit(&cement_g.ncemented, memory_order_relaxed))
        return false;
    cement_slot *c = lookup_in(cement_g.table, obj, false);
    return c && atomic_load_explicit(&c->cemented, memory_order_relaxed);
}

/* The table is rebuilt from the cemented entries into the spare one, so
 * that entries of objects not cemented do not fill it. Reinsertion in
 * table order can fail to place an entry within CEMENT_PROBES of its home
 * although it had a place before (unit_cement): then the table stays as it
 * is and only its counts are reset, so that every cemented object stays
 * found; it fills until the next major forgets it, and an object that
 * finds no entry meanwhile is simply not cemented (its cards stay dirty). */
void lull_cement_new_cycle(void)
{
    if (!atomic_load(&cement_g.ncemented)) {
        memset(cement_g.table, 0, CEMENT_SLOTS * sizeof *cement_g.table);
        return;
    }
    cement_slot *fresh = cement_g.spare;
    memset(fresh, 0, CEMENT_SLOTS * sizeof *fresh);
    unsigned nk = 0;
    bool placed = true;
    for (unsigned i = 0; i < CEMENT_SLOTS && placed; i++) {
        cement_slot *c = &cement_g.table[i];
        if (!c->obj || !c->cemented)
            continue;
        cement_slot *f = lookup_in(fresh, c->obj, true);
        if (f) {
            f->cemented = 1;
            nk++;
        } else {
            placed = false;
        }
    }
    if (placed) {
        cement_g.spare = cement_g.table;
        cement_g.table = fresh;
        atomic_store(&cement_g.ncemented, nk);
        return;
    }
    for (unsigned i = 0; i < CEMENT_SLOTS; i++)
        atomic_store_explicit(&cement_g.table[i].count, 0, memory_order_relaxed);
}

bool lull_cement_note(uintptr_t obj)
{
    cement_slot *c = lookup_in(cement_g.table, obj, true);
    if (c && !atomic_load_explicit(&c->cemented, memory_order_relaxed) &&
        atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed) + 1 > LULL_CEMENT_THRESHOLD &&
        !atomic_exchange_explicit(&c->cemented, 1, memory_order_relaxed))
        atomic_fetch_add_explicit(&cement_g.ncemented, 1, memory_order_relaxed);
    return c && atomic_load_explicit(&c->cemented, memory_order_relaxed);
}

void lull_cement_each(void (*fn)(uintptr_t obj, void *ctx), void *ctx)
{
    if (!atomic_load_explicit(&cement_g.ncemented, memory_order_relaxed))
        return;
    for (unsigned k = 0; k < CEMENT_SLOTS; k++)
        if (cement_g.table[k].cemented)
            fn(cement_g.table[k].obj, ctx);
}

void lull_cement_forget(void)
{
    memset(cement_g.table, 0, CEMENT_SLOTS * sizeof *cement_g.table);
    cement_g.ncemented = 0;
}
