/* Glue between the module's executables (vm/module.h) and the loaders: an elf kernel library is
 * loaded by the ELF loader, asked for its entry points and checked against the module's entry
 * points; a flat one is used in place or copied to executable memory (flat_executable.h). */
#ifndef IRP_HAL_CPU_EXECUTABLE_H_
#define IRP_HAL_CPU_EXECUTABLE_H_

#include "../vm/module.h"

/* Loads every executable of `module` and fills executable->kernels and ->image. On failure the
 * executables already loaded stay loaded; irp_cpu_executables_unload releases them all. */
irp_status_t irp_cpu_executables_load(const irp_allocator_t* allocator, irp_vm_module_t* module,
                                      irp_diag_t* diag);
void irp_cpu_executables_unload(const irp_allocator_t* allocator, irp_vm_module_t* module);

#endif /* IRP_HAL_CPU_EXECUTABLE_H_ */
