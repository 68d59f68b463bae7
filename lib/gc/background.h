/* background.h — the background sweep (the concurrent mark's background
 * job is trace/mark.h's). */
#ifndef LULL_BACKGROUND_H
#define LULL_BACKGROUND_H

/* Start the background sweep if blocks wait for it or the promotion
 * reserve is short (gc lock held, no background job running). */
void lull_major_resume_sweep(void);

/* The memory thread (lull-memory): dirty free memory (space/blocks.c)
 * goes back to the OS release-delay after it became free, from it alone.
 * Kick it after freeing runs (gc lock held): it is started at the first
 * kick, woken when idle, near the soft memory limit or with
 * release-delay=0. Stop it in lull_shutdown (gc lock not held); in a fork
 * child (gc lock held) it is forgotten, and runs a release had in flight
 * go back on the free lists. */
void lull_memory_kick(void);
void lull_memory_stop(void);
void lull_memory_after_fork_child(void);

#endif
