/* The synchronous CPU driver: a device (hal/device.h) that prepares CPU executables
 * (hal/cpu_executable.h) and runs each dispatch on the calling thread, one workgroup after another
 * in x-fastest order (x, then y, then z), stopping at the first kernel that fails. It keeps no
 * state, needs no OS and allocates nothing after prepare: what the runtime uses on every build. */
#ifndef IRP_HAL_SYNC_DEVICE_H_
#define IRP_HAL_SYNC_DEVICE_H_

#include "device.h"

/* Makes *out_device the synchronous CPU device; it needs no release. */
void irp_hal_sync_device_initialize(irp_hal_device_t* out_device);

/* The pieces the CPU drivers share (the threaded one, hal/threaded_device.h, uses them too):
 * preparing and releasing CPU executables (hal/cpu_executable.h), and running a dispatch's
 * workgroups on the calling thread in x-fastest order, stopping at the first that fails (its span,
 * when the dispatch is traced, is thread_spans[0]). */
irp_status_t irp_hal_cpu_prepare_executable(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                            irp_hal_executable_t* executable, irp_diag_t* diag);
void irp_hal_cpu_release_executable(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                    irp_hal_executable_t* executable);
irp_status_t irp_hal_sync_dispatch(const irp_hal_dispatch_t* dispatch, irp_hal_kernel_failure_t* out_failure);

#endif /* IRP_HAL_SYNC_DEVICE_H_ */
