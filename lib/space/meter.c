/* meter.c — the allocation meter's one instance (meter.h). */
#include "space/meter.h"

lull_meter lull_meter_g;
