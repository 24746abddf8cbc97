#define _DEFAULT_SOURCE 1 /* sysconf(_SC_PHYS_PAGES) */
#include "allocator.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

irp_status_t irp_allocate_zeroed(const irp_allocator_t* allocator, size_t count, size_t size,
                                 size_t alignment, irp_diag_t* diag, void** out_ptr) {
  *out_ptr = NULL;
  if (count == 0 || size == 0) return IRP_OK;
  if (count > SIZE_MAX / size) {
    return IRP_FAIL(diag, IRP_OUT_OF_MEMORY, "allocation of %zu x %zu bytes overflows", count, size);
  }
  size_t bytes = count * size;
  void* ptr = allocator->alloc(allocator->ctx, bytes, alignment);
  if (ptr == NULL) {
    return IRP_FAIL(diag, IRP_OUT_OF_MEMORY, "out of memory allocating %zu bytes", bytes);
  }
  memset(ptr, 0, bytes);
  *out_ptr = ptr;
  return IRP_OK;
}

void irp_free(const irp_allocator_t* allocator, void* ptr) {
  if (ptr != NULL) allocator->free(allocator->ctx, ptr);
}

#if IRP_HAVE_OS
#include <unistd.h>

size_t irp_system_memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0 || (unsigned long)pages > SIZE_MAX / (unsigned long)page) return SIZE_MAX;
  return (size_t)pages * (size_t)page;
}

static void* irp_system_alloc(void* ctx, size_t size, size_t alignment) {
  (void)ctx;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if ((alignment & (alignment - 1)) != 0) return NULL;
  /* aligned_alloc wants size to be a multiple of alignment. */
  if (size > SIZE_MAX - (alignment - 1)) return NULL;
  size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  return aligned_alloc(alignment, rounded);
}

static void irp_system_free(void* ctx, void* ptr) {
  (void)ctx;
  free(ptr);
}

irp_allocator_t irp_allocator_system(void) {
  irp_allocator_t allocator = {NULL, irp_system_alloc, irp_system_free};
  return allocator;
}
#else
size_t irp_system_memory_bytes(void) { return SIZE_MAX; }
#endif
