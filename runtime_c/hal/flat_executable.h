/* Flat executables (docs/microcontrollers.md): a kernel library's memory image from address 0,
 * position independent, with no relocations and no writable data; each entry point's code_offset
 * (checked against the code by the module loader, vm/module.c) says where its function starts.
 *
 * Bare metal (IRP_HAVE_OS = 0): the kernels run in place in the module bytes (execute in place from
 * flash): nothing is allocated or copied. Hosted: module bytes are not executable, so the image
 * is copied into fresh pages that are then made read + execute (and the instruction cache is
 * flushed); executable->image then records those pages (allocated from `allocator`). */
#ifndef IRP_HAL_FLAT_EXECUTABLE_H_
#define IRP_HAL_FLAT_EXECUTABLE_H_

#include "../base/status.h"
#include "executable.h"

/* Fills executable->kernels (allocated by the caller, one per entry point) and, hosted,
 * executable->image. On failure irp_flat_executable_unload releases what was made. */
irp_status_t irp_flat_executable_load(const irp_allocator_t* allocator, irp_hal_executable_t* executable,
                                      irp_diag_t* diag);
void irp_flat_executable_unload(const irp_allocator_t* allocator, irp_hal_executable_t* executable);

#endif /* IRP_HAL_FLAT_EXECUTABLE_H_ */
