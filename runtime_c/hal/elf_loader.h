/* Our own loader for kernel libraries: an ELF64 little-endian ET_DYN shared object for x86_64 or
 * aarch64, with no imports (no DT_NEEDED, no undefined symbols). No dlopen, so it also works on
 * bare metal (IRP_HAVE_OS=0: the image lives in allocator memory, no page protection).
 *
 * Loading checks the ELF header and program headers against the blob, maps the PT_LOAD segments
 * into one allocation, applies RELATIVE / ABS64 / GLOB_DAT / JUMP_SLOT relocations (targets must
 * lie in a non-executable segment of the image), then protects the pages (RX for executable
 * segments, RW for writable ones, R otherwise). The blob is only read during loading. */
#ifndef IRP_HAL_ELF_LOADER_H_
#define IRP_HAL_ELF_LOADER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/status.h"

typedef struct irp_elf_segment_t {
  uint64_t start; /* image-relative */
  uint64_t end;
  uint32_t flags; /* PF_X = 1, PF_W = 2, PF_R = 4 */
} irp_elf_segment_t;

typedef struct irp_elf_image_t {
  uint8_t* base;
  size_t size;
  uint64_t entry; /* image-relative e_entry */
  uint32_t segment_count;
  irp_elf_segment_t segments[IRP_MAX_ELF_SEGMENTS];
} irp_elf_image_t;

/* Loads blob for `arch` ("x86_64" / "aarch64"); on failure *out_image is left empty. */
irp_status_t irp_elf_load(const irp_allocator_t* allocator, const uint8_t* blob, size_t length,
                          const char* arch, irp_diag_t* diag, irp_elf_image_t* out_image);
void irp_elf_unload(const irp_allocator_t* allocator, irp_elf_image_t* image);

/* True when [address, address + bytes) lies inside the image / inside an executable segment. */
bool irp_elf_contains(const irp_elf_image_t* image, uintptr_t address, size_t bytes);
bool irp_elf_contains_code(const irp_elf_image_t* image, uintptr_t address);

#endif /* IRP_HAL_ELF_LOADER_H_ */
