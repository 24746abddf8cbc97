/* The HAL's device interface: how the VM runs kernels without knowing which driver runs them.
 *
 * A device prepares each executable (hal/executable.h) once, when a module is loaded, and
 * releases it when the module is released. Then each `dispatch` instruction becomes one
 * irp_hal_dispatch_t: an entry point of a prepared executable and the irp_dispatch_state_t its
 * kernel receives (workgroup count, push constants, bindings: hal/kernel_abi.h). The device's
 * `dispatch` runs every workgroup of it before it returns.
 *
 * Drivers implement irp_hal_device_vtable_t. The synchronous CPU driver (hal/sync_device.h) runs
 * the workgroups one after another on the calling thread; a threaded CPU driver would split the
 * same workgroups over a pool of workers (each issuing its share with irp_cpu_executable_issue,
 * hal/cpu_executable.h), and a Vulkan driver would prepare pipelines and record the grid into a
 * command buffer. The VM (vm/interp.c) only calls through the vtable.
 *
 * Memory a device can reach: a CPU device reaches all host memory. A device with memory of its own
 * (Vulkan) allocates the arena and pool through `allocate_buffer` (mapped, so the VM uses their
 * pointers as usual), takes a copy of the module's constants once at load (`register_constants`),
 * and may queue dispatches until `synchronize`, which the VM calls before the host reads or writes
 * tensor bytes (buffer_copy, buffer_load/store_i64) and the API calls at the end of every call.
 * These four members are optional: NULL means host memory from the allocator and nothing to wait
 * for, which is what the CPU drivers leave them as.
 *
 * Ownership: the caller owns the device and everything a dispatch points to; the device borrows
 * them for the call. Nothing in the dispatch path allocates.
 *
 * Errors: `dispatch` returns IRP_OK when every workgroup returned IRP_KERNEL_STATUS_OK. When a
 * kernel returns anything else it returns IRP_RUNTIME_FAILURE and fills *out_failure with that
 * code and the workgroup, and writes no message: the caller names the failed call. Of several
 * failing workgroups it reports the first in x-fastest order (x, then y, then z), whichever order
 * they ran in; workgroups after that one may or may not have run. Any other failure of a driver is
 * its status with a message in `diag`, and out_failure->status stays IRP_KERNEL_STATUS_OK. */
#ifndef IRP_HAL_DEVICE_H_
#define IRP_HAL_DEVICE_H_

#include <stdint.h>

#include "../base/status.h"
#include "executable.h"
#include "kernel_abi.h"

/* What one thread of a CPU driver did in a dispatch (for traces): its first workgroup's start, its
 * last one's end, and how many it ran (0: none, and the times are 0). */
typedef struct irp_hal_thread_span_t {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t workgroups;
} irp_hal_thread_span_t;

/* One kernel call: entry point `entry_point` of `executable` over state.workgroup_count. */
typedef struct irp_hal_dispatch_t {
  const irp_hal_executable_t* executable; /* prepared by the device that runs the dispatch */
  uint32_t entry_point;                   /* < executable->entry_point_count */
  irp_dispatch_state_t state;
  /* NULL, or thread_span_count spans (zeroed by the caller) that a CPU driver fills, span t for its
   * thread t (0: the calling thread); other drivers leave them zero. */
  irp_hal_thread_span_t* thread_spans;
  uint32_t thread_span_count;
  /* NULL, or a counter to which a driver that times dispatches on the device itself (Vulkan:
   * timestamp queries) adds this dispatch's device time in ns once it has run (by synchronize at
   * the latest; it must stay valid until then). CPU drivers leave it alone: the caller's clock
   * around dispatch is their time. */
  uint64_t* device_ns;
} irp_hal_dispatch_t;

/* The bytes a dispatch's bindings span: what traces report, and the size by which a CPU driver judges
 * whether sharing the dispatch out among threads pays. */
static inline uint64_t irp_hal_dispatch_binding_bytes(const irp_dispatch_state_t* state) {
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < state->binding_count; ++i) bytes += state->binding_lengths[i];
  return bytes;
}

/* The first failing workgroup of a dispatch. */
typedef struct irp_hal_kernel_failure_t {
  int32_t status; /* what its kernel returned; IRP_KERNEL_STATUS_OK when no kernel failed */
  uint32_t workgroup_id[3];
} irp_hal_kernel_failure_t;

typedef struct irp_hal_device_t irp_hal_device_t;

typedef struct irp_hal_device_vtable_t {
  /* Makes `executable` ready to dispatch (allocating from `allocator`). On failure what was made
   * stays recorded in the executable, and release_executable releases it. */
  irp_status_t (*prepare_executable)(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                     irp_hal_executable_t* executable, irp_diag_t* diag);
  /* Releases what prepare_executable made; does nothing for an executable never prepared. */
  void (*release_executable)(irp_hal_device_t* device, const irp_allocator_t* allocator,
                             irp_hal_executable_t* executable);
  /* Runs every workgroup of `dispatch` (see Errors above), or queues it to run by `synchronize`. */
  irp_status_t (*dispatch)(irp_hal_device_t* device, const irp_hal_dispatch_t* dispatch,
                           irp_hal_kernel_failure_t* out_failure, irp_diag_t* diag);
  /* Optional (see "Memory" above). The architecture of the executables it prepares; NULL: this
   * build's CPU (IRP_ARCH_NAME). */
  const char* executable_arch;
  /* Optional: `size` zeroed bytes, aligned to IRP_ARENA_ALIGNMENT, that dispatches can bind;
   * *out_data stays NULL on failure. */
  irp_status_t (*allocate_buffer)(irp_hal_device_t* device, size_t size, void** out_data, irp_diag_t* diag);
  void (*free_buffer)(irp_hal_device_t* device, void* data);
  /* Optional: [data, data + length) holds read-only constants that dispatches bind by pointer;
   * unregister_constants(data) forgets them (before the bytes go away). */
  irp_status_t (*register_constants)(irp_hal_device_t* device, const void* data, size_t length, irp_diag_t* diag);
  void (*unregister_constants)(irp_hal_device_t* device, const void* data);
  /* Optional: runs what `dispatch` queued and waits for it, reporting a kernel failure as dispatch does. */
  irp_status_t (*synchronize)(irp_hal_device_t* device, irp_diag_t* diag);
} irp_hal_device_vtable_t;

/* A driver's device struct starts with this member, so a pointer to it is a pointer to the device. */
struct irp_hal_device_t {
  const irp_hal_device_vtable_t* vtable;
};

static inline irp_status_t irp_hal_device_prepare_executable(irp_hal_device_t* device,
                                                             const irp_allocator_t* allocator,
                                                             irp_hal_executable_t* executable, irp_diag_t* diag) {
  return device->vtable->prepare_executable(device, allocator, executable, diag);
}

static inline void irp_hal_device_release_executable(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                                     irp_hal_executable_t* executable) {
  device->vtable->release_executable(device, allocator, executable);
}

static inline irp_status_t irp_hal_device_dispatch(irp_hal_device_t* device, const irp_hal_dispatch_t* dispatch,
                                                   irp_hal_kernel_failure_t* out_failure, irp_diag_t* diag) {
  return device->vtable->dispatch(device, dispatch, out_failure, diag);
}

static inline irp_status_t irp_hal_device_synchronize(irp_hal_device_t* device, irp_diag_t* diag) {
  return device->vtable->synchronize != NULL ? device->vtable->synchronize(device, diag) : IRP_OK;
}

#endif /* IRP_HAL_DEVICE_H_ */
