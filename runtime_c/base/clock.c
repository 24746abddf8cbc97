#define _POSIX_C_SOURCE 199309L  /* clock_gettime under -std=c11 */

#include "clock.h"

#include "config.h"

#if IRP_BOARD_CLOCK
/* The firmware defines irp_clock_ns() from its cycle counter (runtime_c/firmware/). */
#elif IRP_HAVE_OS
#include <time.h>

uint64_t irp_clock_ns(void) {
  struct timespec now;
  if (clock_gettime(CLOCK_MONOTONIC, &now) != 0) return 0;
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
#else
uint64_t irp_clock_ns(void) { return 0; }
#endif
