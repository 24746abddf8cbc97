/* The synchronous CPU driver: a device (hal/device.h) that prepares CPU executables
 * (hal/cpu_executable.h) and runs each dispatch on the calling thread, one workgroup after another
 * in x-fastest order (x, then y, then z), stopping at the first kernel that fails. It keeps no
 * state, needs no OS and allocates nothing after prepare: what the runtime uses on every build. */
#ifndef IRP_HAL_SYNC_DEVICE_H_
#define IRP_HAL_SYNC_DEVICE_H_

#include "device.h"

/* Makes *out_device the synchronous CPU device; it needs no release. */
void irp_hal_sync_device_initialize(irp_hal_device_t* out_device);

#endif /* IRP_HAL_SYNC_DEVICE_H_ */
