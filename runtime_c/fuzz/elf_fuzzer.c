/* libFuzzer harness: a kernel library (ELF shared object) through the runtime's own ELF loader
 * (hal/elf_loader.c): header, segments, mapping, dynamic section, relocations, entry check and page
 * protection, for the architecture its e_machine names (x86_64, aarch64, riscv64; else x86_64).
 * Nothing it loads is run. Findings besides sanitizer reports: an error without a message, a loaded
 * image whose entry is not code or whose segments leave it, memory held after unload. */
#include <string.h>

#include "../base/little_endian.h"
#include "../hal/elf_loader.h"
#include "../vm/flatbuf.h"
#include "fuzz_support.h"

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  return 0;
}

static const char* elf_arch(const uint8_t* data, size_t size) {
  uint16_t machine = size >= 20 ? irp_load_u16(data + 18) : 0;
  return machine == 183 ? "aarch64" : machine == 243 ? "riscv64" : "x86_64";
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  irp_fuzz_heap_t heap = {IRP_FUZZ_HEAP_BUDGET, 0, 0};
  irp_allocator_t allocator = irp_fuzz_allocator(&heap);
  char message[IRP_MAX_MESSAGE_LENGTH];
  irp_diag_t diag = {message, sizeof(message)};
  irp_elf_image_t image;
  irp_status_t status = irp_elf_load(&allocator, data, size, elf_arch(data, size), &diag, &image);
  irp_fuzz_check_message(status, message, "irp_elf_load");
  irp_fuzz_note("  irp_elf_load for %s: %d %s", elf_arch(data, size), (int)status, status == IRP_OK ? "" : message);
  if (status == IRP_OK) {
    IRP_FUZZ_ASSERT(image.base != NULL && image.size > 0 && image.size <= 2 * (size_t)IRP_MAX_KERNEL_IMAGE_SIZE,
                    "image of %zu bytes", image.size);
    IRP_FUZZ_ASSERT(image.segment_count > 0 && image.segment_count <= IRP_MAX_ELF_SEGMENTS, "%u segments",
                    image.segment_count);
    for (uint32_t i = 0; i < image.segment_count; ++i) {
      IRP_FUZZ_ASSERT(image.segments[i].start <= image.segments[i].end && image.segments[i].end <= image.size,
                      "segment %u [%llu, %llu) leaves the %zu-byte image", i,
                      (unsigned long long)image.segments[i].start, (unsigned long long)image.segments[i].end,
                      image.size);
    }
    IRP_FUZZ_ASSERT(irp_elf_contains_code(&image, (uintptr_t)image.base + (uintptr_t)image.entry),
                    "entry %llu is not code", (unsigned long long)image.entry);
    IRP_FUZZ_ASSERT(!irp_elf_contains(&image, (uintptr_t)image.base + image.size, 1), "a byte past the image");
    irp_elf_unload(&allocator, &image);
  } else {
    IRP_FUZZ_ASSERT(image.base == NULL, "a failed load left an image");
  }
  IRP_FUZZ_ASSERT(heap.live_blocks == 0, "%zu blocks held after unload", heap.live_blocks);
  return 0;
}
