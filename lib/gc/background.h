/* background.h — the background sweep (the concurrent mark's background
 * job is trace/mark.h's). */
#ifndef LULL_BACKGROUND_H
#define LULL_BACKGROUND_H

/* Start the background sweep if blocks wait for it or the promotion
 * reserve is short (gc lock held, no background job running). */
void lull_major_resume_sweep(void);

#endif
