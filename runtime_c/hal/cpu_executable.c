#include "cpu_executable.h"

#include <inttypes.h>
#include <string.h>

#include "../base/allocator.h"
#include "elf_loader.h"
#include "flat_executable.h"

#if IRP_HAVE_ELF_LOADER
/* Reads a pointer stored at `address` after checking it lies in the image. */
static bool irp_read_pointer(const irp_elf_image_t* image, uintptr_t address, uintptr_t* out_value) {
  if (!irp_elf_contains(image, address, sizeof(void*))) return false;
  memcpy(out_value, (const void*)address, sizeof(*out_value));
  return true;
}

/* True when `address` is a NUL-terminated string inside the image equal to `expected`. */
static bool irp_image_string_equals(const irp_elf_image_t* image, uintptr_t address, const char* expected) {
  size_t length = strlen(expected);
  if (!irp_elf_contains(image, address, length + 1)) return false;
  return memcmp((const void*)address, expected, length + 1) == 0;
}

static irp_status_t irp_check_library(const irp_elf_image_t* image, const irp_hal_executable_t* executable,
                                      const irp_kernel_library_t* library_ptr, irp_diag_t* diag) {
  irp_kernel_library_t library;
  if (library_ptr == NULL) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "kernel library for %s does not speak kernel ABI version %u",
                    executable->arch, IRP_KERNEL_ABI_VERSION);
  }
  if (!irp_elf_contains(image, (uintptr_t)library_ptr, sizeof(library))) {
    return IRP_FAIL(diag, IRP_INVALID_MODULE, "kernel library for %s returned a table outside its image",
                    executable->arch);
  }
  memcpy(&library, library_ptr, sizeof(library));
  if (library.abi_version != IRP_KERNEL_ABI_VERSION) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "kernel library for %s has ABI version %" PRIu32 ", this runtime speaks %u",
                    executable->arch, library.abi_version, IRP_KERNEL_ABI_VERSION);
  }
  if (library.entry_count != executable->entry_point_count) {
    return IRP_FAIL(diag, IRP_INVALID_MODULE, "kernel library for %s has %" PRIu32 " entry points but the module declares %" PRIu32,
                    executable->arch, library.entry_count, executable->entry_point_count);
  }
  for (uint32_t i = 0; i < library.entry_count; ++i) {
    const char* expected = executable->entry_points[i].name;
    uintptr_t name = 0, function = 0;
    if (!irp_read_pointer(image, (uintptr_t)library.entry_names + i * sizeof(void*), &name) ||
        !irp_image_string_equals(image, name, expected)) {
      return IRP_FAIL(diag, IRP_INVALID_MODULE,
                      "kernel library for %s: entry %" PRIu32 " is not named '%s' as the module says",
                      executable->arch, i, expected);
    }
    if (!irp_read_pointer(image, (uintptr_t)library.entries + i * sizeof(void*), &function) ||
        !irp_elf_contains_code(image, function)) {
      return IRP_FAIL(diag, IRP_INVALID_MODULE,
                      "kernel library for %s: entry '%s' does not point into executable code",
                      executable->arch, expected);
    }
    executable->kernels[i] = (irp_kernel_fn_t)function;
  }
  return IRP_OK;
}

#endif  /* IRP_HAVE_ELF_LOADER */

irp_status_t irp_cpu_executable_load(const irp_allocator_t* allocator, irp_hal_executable_t* executable,
                                     irp_diag_t* diag) {
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, executable->entry_point_count, sizeof(irp_kernel_fn_t),
                                          8, diag, (void**)&executable->kernels));
  if (executable->format == IRP_EXECUTABLE_FORMAT_FLAT) {
    return irp_flat_executable_load(allocator, executable, diag);
  }
#if IRP_HAVE_ELF_LOADER
  irp_elf_image_t* image = NULL;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, 1, sizeof(irp_elf_image_t), 8, diag, (void**)&image));
  executable->image = image;
  IRP_RETURN_IF_ERROR(irp_elf_load(allocator, executable->code, executable->code_length, executable->arch,
                                   diag, image));
  irp_kernel_library_query_fn_t query = (irp_kernel_library_query_fn_t)((uintptr_t)image->base + (uintptr_t)image->entry);
  const irp_kernel_library_t* library = query(IRP_KERNEL_ABI_VERSION);
  return irp_check_library(image, executable, library, diag);
#else
  return IRP_FAIL(diag, IRP_UNSUPPORTED, "executable for %s is an ELF library; this runtime (a bare-metal build) "
                  "loads flat images only: compile for the board's target", executable->arch);
#endif
}

void irp_cpu_executable_unload(const irp_allocator_t* allocator, irp_hal_executable_t* executable) {
  if (executable->format == IRP_EXECUTABLE_FORMAT_FLAT) {
    irp_flat_executable_unload(allocator, executable);
  } else if (executable->image != NULL) {
#if IRP_HAVE_ELF_LOADER
    irp_elf_unload(allocator, (irp_elf_image_t*)executable->image);
#endif
    irp_free(allocator, executable->image);
  }
  irp_free(allocator, executable->kernels);
  executable->image = NULL;
  executable->kernels = NULL;
}
