/* The threaded CPU driver: a device (hal/device.h) with a pool of persistent worker threads,
 * created with the device, that share out the workgroups of each dispatch with the calling thread.
 *
 * A dispatch publishes its grid; every thread (the caller too) takes the next workgroup from one
 * atomic counter over the x-fastest order until none is left, so the threads balance themselves.
 * Each workgroup computes the same bytes whichever thread runs it, so results are bit-identical for
 * any thread count. A dispatch of one workgroup, or whose bindings span fewer than
 * IRP_THREAD_INLINE_BYTES (base/config.h), runs on the caller alone, with no synchronization.
 * Nothing in the dispatch path allocates or creates threads. Idle workers spin IRP_THREAD_SPIN_NS
 * (base/config.h) on the dispatch counter and then sleep on a condition variable.
 *
 * Failures follow device.h: the lowest failing workgroup in x-fastest order is reported, however
 * the workgroups were spread; workgroups after it may or may not have run.
 *
 * After fork() the child has no workers: its dispatches run on the calling thread.
 *
 * Only with IRP_HAVE_THREADS (POSIX threads); bare-metal builds use hal/sync_device.h. */
#ifndef IRP_HAL_THREADED_DEVICE_H_
#define IRP_HAL_THREADED_DEVICE_H_

#include <stdint.h>

#include "../base/allocator.h"
#include "../base/status.h"
#include "device.h"

#if IRP_HAVE_THREADS

/* A device running each dispatch on `thread_count` threads (2..IRP_MAX_THREADS): the caller and
 * thread_count - 1 workers started now. Release it with irp_hal_threaded_device_release. */
irp_status_t irp_hal_threaded_device_create(const irp_allocator_t* allocator, uint32_t thread_count, irp_diag_t* diag,
                                            irp_hal_device_t** out_device);
/* Stops and joins the workers and frees the device; NULL does nothing. */
void irp_hal_threaded_device_release(irp_hal_device_t* device);

#endif /* IRP_HAVE_THREADS */

/* The number of physical cores of this machine (1 when it cannot tell, or without IRP_HAVE_THREADS). */
uint32_t irp_physical_core_count(void);

#endif /* IRP_HAL_THREADED_DEVICE_H_ */
