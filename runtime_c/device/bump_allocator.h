/* A bump allocator over one caller-given RAM region: what the device server hands the runtime on
 * a board without a heap. Allocation moves a pointer up; free does nothing; the owner takes
 * memory back in bulk by resetting to a mark taken earlier (e.g. when a new module is loaded). */
#ifndef IRP_DEVICE_BUMP_ALLOCATOR_H_
#define IRP_DEVICE_BUMP_ALLOCATOR_H_

#include <stddef.h>
#include <stdint.h>

#include "../api/iree_py_runtime.h"

typedef struct irp_bump_allocator_t {
  uint8_t* base;
  size_t capacity;
  size_t used; /* bytes from base handed out so far, padding included */
} irp_bump_allocator_t;

void irp_bump_init(irp_bump_allocator_t* bump, uint8_t* base, size_t capacity);
/* `size` bytes aligned to `alignment` (a power of two), or NULL when they do not fit. */
void* irp_bump_alloc(irp_bump_allocator_t* bump, size_t size, size_t alignment);
/* Bytes still free (ignoring alignment padding). */
size_t irp_bump_free_bytes(const irp_bump_allocator_t* bump);
/* Everything allocated after `mark` (a former value of bump->used) is given back. */
void irp_bump_reset(irp_bump_allocator_t* bump, size_t mark);
/* The runtime's allocator interface over `bump` (free is a no-op). */
irp_allocator_t irp_bump_allocator(irp_bump_allocator_t* bump);

#endif /* IRP_DEVICE_BUMP_ALLOCATOR_H_ */
