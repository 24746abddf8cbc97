/* A monotonic clock for profiling. Hosted builds read CLOCK_MONOTONIC. With IRP_BOARD_CLOCK (the
 * default on bare metal) the firmware defines irp_clock_ns() from its board's cycle counter
 * (runtime_c/firmware/); a build with neither returns 0 (profiling then counts dispatches only). */
#ifndef IRP_BASE_CLOCK_H_
#define IRP_BASE_CLOCK_H_

#include <stdint.h>

uint64_t irp_clock_ns(void);

#endif /* IRP_BASE_CLOCK_H_ */
