/* The Vulkan driver: a device (hal/device.h) that runs "spirv" executables (one SPIR-V compute
 * shader per entry point) on the first Vulkan device with a compute queue and
 * VK_KHR_push_descriptor.
 *
 * - libvulkan.so.1 is opened at run time (dlopen; IRP_VULKAN_LIBRARY in base/config.h, or the
 *   environment variable of that name): no link-time dependency. No library, no instance or no
 *   device is an IRP_UNAVAILABLE error saying which.
 * - prepare_executable checks every shader (its slice of the code lies in bounds, is whole words,
 *   starts with the SPIR-V magic, has a version this device takes and an OpEntryPoint GLCompute of
 *   the entry point's name) and makes its pipeline.
 * - Memory: the arena and pool (allocate_buffer) are host-visible, coherent device memory, mapped;
 *   the module's constants are copied into device memory once (register_constants). Any other
 *   pointer a dispatch binds (the caller's inputs) is copied into a staging buffer when the
 *   dispatch is recorded, and copied back (if a kernel changed it) at synchronize.
 * - dispatch records into one command buffer (push descriptors, push constants, a barrier after
 *   each dispatch); synchronize submits it and waits on a fence.
 * Binding i is bound at its offset rounded down to minStorageBufferOffsetAlignment; push constant
 * word i says how many 4-byte elements past that the binding starts, and the module's push
 * constants follow (docs/vulkan.md). */
#ifndef IRP_HAL_DRIVERS_VULKAN_VULKAN_DEVICE_H_
#define IRP_HAL_DRIVERS_VULKAN_VULKAN_DEVICE_H_

#include "../../../base/allocator.h"
#include "../../../base/status.h"
#include "../../device.h"

/* Creates the device (allocating from `allocator`, which must outlive it); *out_device is NULL on
 * failure, with the reason in `diag`. */
irp_status_t irp_hal_vulkan_device_create(const irp_allocator_t* allocator, irp_diag_t* diag,
                                          irp_hal_device_t** out_device);
/* Waits for queued work and releases everything the device made. NULL is ignored. */
void irp_hal_vulkan_device_release(irp_hal_device_t* device);

#endif /* IRP_HAL_DRIVERS_VULKAN_VULKAN_DEVICE_H_ */
