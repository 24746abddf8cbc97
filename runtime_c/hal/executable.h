/* An executable as the HAL sees it: kernel code for one architecture and its entry points. The VM's
 * module loader (vm/module.c) fills one per executable of the module from the verified flatbuffer;
 * a device then prepares it (hal/device.h: for the CPU, hal/cpu_executable.h loads the code and
 * fills `kernels`) and dispatches its entry points. Nothing here knows of bytecode or modules.
 *
 * Ownership: `arch`, entry point names and `code` point into the caller's module bytes;
 * `entry_points` and each binding_min_lengths are the module loader's; `kernels` and `image`
 * belong to the device that prepared the executable and are released by it. */
#ifndef IRP_HAL_EXECUTABLE_H_
#define IRP_HAL_EXECUTABLE_H_

#include <stddef.h>
#include <stdint.h>

#include "kernel_abi.h"

typedef struct irp_hal_entry_point_t {
  const char* name;
  uint16_t binding_count;
  uint16_t push_constant_count;
  uint64_t* binding_min_lengths; /* binding_count values */
  uint32_t code_offset;          /* flat: where the function starts in `code` (Thumb: | 1); spirv: the shader */
} irp_hal_entry_point_t;

/* ExecutableFormat in flatbuffers/module.fbs. */
typedef enum irp_hal_executable_format_e {
  IRP_EXECUTABLE_FORMAT_ELF = 0,  /* a shared object, loaded and relocated (hal/elf_loader.h) */
  IRP_EXECUTABLE_FORMAT_FLAT = 1, /* a memory image used in place (hal/flat_executable.h) */
  IRP_EXECUTABLE_FORMAT_SPIRV = 2, /* SPIR-V shaders, one per entry point at its code_offset (a Vulkan device) */
} irp_hal_executable_format_t;

typedef struct irp_hal_executable_t {
  const char* arch;
  irp_hal_executable_format_t format;
  uint32_t entry_point_count;
  irp_hal_entry_point_t* entry_points;
  const uint8_t* code;
  size_t code_length;
  /* Filled when a CPU device prepares the executable: one function per entry point, same order. */
  irp_kernel_fn_t* kernels;
  void* image; /* the loaded kernel library (Vulkan: the pipelines), owned by the device that prepared it */
} irp_hal_executable_t;

#endif /* IRP_HAL_EXECUTABLE_H_ */
