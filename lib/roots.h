/* roots.h — registered roots and conservative scanning of ranges.
 * The registry is protected by the gc lock; it only changes outside pauses
 * (registration takes the lock, a pause holds it). */
#ifndef LULL_ROOTS_H
#define LULL_ROOTS_H

#include <stddef.h>
#include <stdint.h>

void lull_roots_reset(void);
/* Mark from every registered root (gc lock held, world stopped). */
void lull_roots_mark(void);
/* Mark from the stacks of every attached thread, `self` included. */
void lull_roots_mark_threads(void);

#endif
