/* verify.h — the heap verifier (LULL_GC_DEBUG=verify). */
#ifndef LULL_VERIFY_H
#define LULL_VERIFY_H

/* After marking, world stopped: every marked object has a plausible type
 * and every reference it holds is NULL or the start of a marked object, as
 * is every precise root, NORMAL and weak handle and queued finalizer.
 * Any violation is reported and aborts: a live object would be freed. */
void lull_verify_marked(void);

#endif
