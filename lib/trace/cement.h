/* cement.h — the cement table: nursery objects that many old slots point
 * to stay pinned at every minor until the next major, so that those slots'
 * cards may be left clean (SGen's cementing).
 *
 * Callers: a minor's tracers (world stopped; several at once through
 * atomics), the minor's pinning and its end (one thread), and the end of
 * a major (lull_cement_forget). */
#ifndef LULL_CEMENT_H
#define LULL_CEMENT_H

#include <stdbool.h>
#include <stdint.h>

/* Old slots a pinned nursery object needs before it is cemented. */
#define LULL_CEMENT_THRESHOLD 64u

/* Reserve the table (lull_init, via lull_minor_init) and give it back. */
int  lull_cement_init(void);
void lull_cement_fini(void);
/* One more old slot points to nursery object obj, which stays where it is
 * this minor: whether obj is (now) cemented. */
bool     lull_cement_note(uintptr_t obj);
bool     lull_cement_is_cemented(uintptr_t obj);
/* A minor begins: the counts go, every cemented object stays found. */
void     lull_cement_new_cycle(void);
/* fn(obj, ctx) on every cemented object (the minor pins them). */
void     lull_cement_each(void (*fn)(uintptr_t obj, void *ctx), void *ctx);
/* A major ended: its mark re-marked the card of every old slot it found
 * pointing into the nursery, so nothing stays cemented. */
void     lull_cement_forget(void);
/* The entry obj's probe starts at (tests that make entries collide). */
unsigned lull_cement_home(uintptr_t obj);

#endif
