/* verify.h — the heap verifier (LULL_GC_DEBUG=verify). */
#ifndef LULL_VERIFY_H
#define LULL_VERIFY_H

#include <stdbool.h>

/* After marking, world stopped: every marked object has a plausible type
 * and every reference it holds is NULL or the start of a marked object, as
 * is every precise root, NORMAL and weak handle and queued finalizer.
 * Any violation is reported and aborts: a live object would be freed.
 * young_roots: a concurrent major's final pause, whose roots included the
 * nursery and the young large objects, left unmarked (mark.h): references
 * to them are accepted, and their own references to old objects must
 * lead to marked objects too. */
void lull_verify_marked(bool young_roots);

#endif
