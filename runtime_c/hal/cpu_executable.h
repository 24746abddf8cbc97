/* CPU executables: native code whose entry points the runtime calls as functions. An elf kernel
 * library is loaded by the ELF loader, asked for its entry points and checked against the
 * executable's entry points; a flat one is used in place or copied to executable memory
 * (flat_executable.h). Either way `kernels` ends up with one function per entry point, and a CPU
 * driver (hal/sync_device.h) runs a dispatch by issuing each of its workgroups. */
#ifndef IRP_HAL_CPU_EXECUTABLE_H_
#define IRP_HAL_CPU_EXECUTABLE_H_

#include "../base/status.h"
#include "executable.h"

/* Loads the code of `executable` and fills executable->kernels and ->image. On failure what was
 * made stays recorded there: irp_cpu_executable_unload releases it (and does nothing for an
 * executable never loaded). */
irp_status_t irp_cpu_executable_load(const irp_allocator_t* allocator, irp_hal_executable_t* executable,
                                     irp_diag_t* diag);
void irp_cpu_executable_unload(const irp_allocator_t* allocator, irp_hal_executable_t* executable);

/* Issues one workgroup of entry point `entry_point` of a loaded executable: calls its kernel with
 * the dispatch's state and this workgroup's, and returns what the kernel returns
 * (IRP_KERNEL_STATUS_OK or its failure). A CPU driver issues every workgroup of a dispatch. */
static inline int32_t irp_cpu_executable_issue(const irp_hal_executable_t* executable, uint32_t entry_point,
                                               const irp_dispatch_state_t* dispatch_state,
                                               const irp_workgroup_state_t* workgroup_state) {
  return executable->kernels[entry_point](dispatch_state, workgroup_state);
}

#endif /* IRP_HAL_CPU_EXECUTABLE_H_ */
