/* cards.c — the card table's barrier state (lull.h: lull__barrier), read
 * by the inline write barrier of every program thread and set by the
 * pauses (marking on or off, the card-filter bounds). */
#include "lull.h"

struct lull__barrier_state lull__barrier;
