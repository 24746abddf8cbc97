/* libFuzzer harness: a module with flat executables (cortex-m4/m7, riscv32, x86_64 as a flat image)
 * through the loader and verifier for its architecture (fuzz_arch.h), then each flat image through
 * hal/flat_executable.c (copied to executable pages; nothing is run). The oracle is the promise the
 * flat loader relies on: every entry point starts inside its image, Thumb entries with bit 0 set. */
#include <stdlib.h>
#include <string.h>

#include "../hal/flat_executable.h"
#include "../vm/module.h"
#include "fuzz_support.h"

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static void load_flat(const irp_allocator_t* allocator, irp_hal_executable_t* executable) {
  bool thumb = strcmp(executable->arch, "thumbv7em") == 0;
  for (uint32_t i = 0; i < executable->entry_point_count; ++i) {
    uint32_t offset = executable->entry_points[i].code_offset;
    IRP_FUZZ_ASSERT(!thumb || (offset & 1u) != 0, "Thumb entry %u at even offset %u", i, offset);
    IRP_FUZZ_ASSERT((thumb ? offset & ~1u : offset) < executable->code_length,
                    "entry %u at %u outside its %zu-byte image", i, offset, executable->code_length);
  }
  char message[IRP_MAX_MESSAGE_LENGTH];
  irp_diag_t diag = {message, sizeof(message)};
  executable->kernels = calloc(executable->entry_point_count + 1u, sizeof(irp_kernel_fn_t));
  irp_status_t status = irp_flat_executable_load(allocator, executable, &diag);
  irp_fuzz_check_message(status, message, "irp_flat_executable_load");
  for (uint32_t i = 1; status == IRP_OK && i < executable->entry_point_count; ++i) {
    uintptr_t delta = (uintptr_t)executable->kernels[i] - (uintptr_t)executable->kernels[0];
    IRP_FUZZ_ASSERT(delta == (uintptr_t)executable->entry_points[i].code_offset - executable->entry_points[0].code_offset,
                    "kernel %u is not at its offset in the image", i);
  }
  irp_flat_executable_unload(allocator, executable);
  free(executable->kernels);
  executable->kernels = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  irp_fuzz_heap_t heap = {IRP_FUZZ_HEAP_BUDGET, 0, 0};
  irp_allocator_t allocator = irp_fuzz_allocator(&heap);
  irp_vm_module_t vm;
  irp_status_t status = irp_fuzz_verify_module(&allocator, data, size, &vm);
  for (uint32_t i = 0; status == IRP_OK && i < vm.executable_count; ++i) {
    if (vm.executables[i].hal.format == IRP_EXECUTABLE_FORMAT_FLAT) load_flat(&allocator, &vm.executables[i].hal);
  }
  irp_vm_module_free(&allocator, &vm);
  irp_fuzz_arch = irp_fuzz_host_arch;
  IRP_FUZZ_ASSERT(heap.live_blocks == 0, "%zu blocks held after the module was freed", heap.live_blocks);
  return 0;
}
