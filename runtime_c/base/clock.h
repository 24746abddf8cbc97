/* A monotonic clock for profiling. Hosted builds read CLOCK_MONOTONIC; bare-metal builds return 0
 * until a board supplies a cycle counter (profiling then counts dispatches only). */
#ifndef IRP_BASE_CLOCK_H_
#define IRP_BASE_CLOCK_H_

#include <stdint.h>

uint64_t irp_clock_ns(void);

#endif /* IRP_BASE_CLOCK_H_ */
