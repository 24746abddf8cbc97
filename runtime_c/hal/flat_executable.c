#define _DEFAULT_SOURCE 1 /* mmap, MAP_ANONYMOUS, sysconf */
#include "flat_executable.h"

#include <string.h>

#include "../base/allocator.h"

#if IRP_HAVE_OS
#include <sys/mman.h>
#include <unistd.h>
#endif

/* The executable copy of a hosted image: its pages and their length. */
typedef struct irp_flat_copy_t {
  uint8_t* code;
  size_t size;
} irp_flat_copy_t;

#if IRP_HAVE_OS
static irp_status_t irp_flat_copy(const irp_hal_executable_t* executable, irp_diag_t* diag,
                                  irp_flat_copy_t* out_copy) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t size = (executable->code_length + page - 1) / page * page;
  void* code = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (code == MAP_FAILED) {
    return IRP_FAIL(diag, IRP_OUT_OF_MEMORY, "flat executable for %s: mapping %zu bytes for its code failed",
                    executable->arch, size);
  }
  memcpy(code, executable->code, executable->code_length);
  if (mprotect(code, size, PROT_READ | PROT_EXEC) != 0) {
    munmap(code, size);
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "flat executable for %s: making its code executable failed",
                    executable->arch);
  }
  __builtin___clear_cache((char*)code, (char*)code + executable->code_length);
  out_copy->code = (uint8_t*)code;
  out_copy->size = size;
  return IRP_OK;
}
#endif

irp_status_t irp_flat_executable_load(const irp_allocator_t* allocator, irp_hal_executable_t* executable,
                                      irp_diag_t* diag) {
  const uint8_t* code = executable->code;
#if IRP_HAVE_OS
  if (executable->code_length > 0) {
    irp_flat_copy_t* copy = NULL;
    IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, 1, sizeof(irp_flat_copy_t), 8, diag, (void**)&copy));
    executable->image = copy;
    IRP_RETURN_IF_ERROR(irp_flat_copy(executable, diag, copy));
    code = copy->code;
  }
#else
  (void)allocator;
  (void)diag;
#endif
  /* vm/module.c checked every offset against the code length and its architecture's alignment. */
  for (uint32_t i = 0; i < executable->entry_point_count; ++i) {
    executable->kernels[i] = (irp_kernel_fn_t)((uintptr_t)code + executable->entry_points[i].code_offset);
  }
  return IRP_OK;
}

void irp_flat_executable_unload(const irp_allocator_t* allocator, irp_hal_executable_t* executable) {
#if IRP_HAVE_OS
  irp_flat_copy_t* copy = (irp_flat_copy_t*)executable->image;
  if (copy != NULL && copy->code != NULL) munmap(copy->code, copy->size);
  irp_free(allocator, copy);
#else
  (void)allocator;
#endif
  executable->image = NULL;
}
