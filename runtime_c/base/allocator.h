/* Allocation helpers over the caller's irp_allocator_t (declared in iree_py_base.h).
 * Every allocation of the runtime goes through these; none happens while a call runs. */
#ifndef IRP_BASE_ALLOCATOR_H_
#define IRP_BASE_ALLOCATOR_H_

#include <stddef.h>

#include "status.h"

/* Allocates count * size zeroed bytes aligned to alignment; checks the product for overflow.
 * Sets *out_ptr (NULL on failure). A zero-byte request returns OK with *out_ptr == NULL. */
irp_status_t irp_allocate_zeroed(const irp_allocator_t* allocator, size_t count, size_t size,
                                 size_t alignment, irp_diag_t* diag, void** out_ptr);
void irp_free(const irp_allocator_t* allocator, void* ptr);

/* Bytes of physical memory of the machine (hosted builds; SIZE_MAX when unknown or on bare metal):
 * the default limit on one module's state (api/iree_py_runtime.h, irp_runtime_set_memory_limit). */
size_t irp_system_memory_bytes(void);

#endif /* IRP_BASE_ALLOCATOR_H_ */
