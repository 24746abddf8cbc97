/* The pool `buffer_alloc` / `buffer_free` take blocks from (docs/dynamic_shapes.md §4).
 *
 * One region given at module load (MemoryPlan.pool_size bytes, rounded up to IRP_ARENA_ALIGNMENT),
 * managed first-fit through a fixed table of IRP_POOL_MAX_BLOCKS blocks kept beside the region:
 * the blocks tile the region in address order, each free or in use, and neighbouring free blocks
 * are merged on free. Nothing is allocated after load; running out of space or of block slots is a
 * run-time error. Every block starts IRP_ARENA_ALIGNMENT-aligned and its size is a multiple of it.
 * A zero-length block takes no space: it is a view of length 0 at the region's start, and freeing
 * such a view is accepted. */
#ifndef IRP_VM_POOL_H_
#define IRP_VM_POOL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/config.h"

#ifndef IRP_POOL_MAX_BLOCKS
#define IRP_POOL_MAX_BLOCKS 256
#endif

typedef struct irp_vm_pool_block_t {
  uint64_t offset;
  uint64_t size;
  bool used;
} irp_vm_pool_block_t;

typedef struct irp_vm_pool_t {
  uint8_t* base;                 /* never NULL once initialized (at least IRP_ARENA_ALIGNMENT bytes) */
  uint64_t size;                 /* usable bytes (0 when the module has no pool) */
  irp_vm_pool_block_t* blocks;   /* IRP_POOL_MAX_BLOCKS slots; blocks[0..block_count) tile [0, size) */
  uint32_t block_count;
  uint64_t used_bytes;           /* sum of the sizes of blocks in use */
  uint64_t high_water;           /* highest end offset of a block in use since the last reset */
} irp_vm_pool_t;

/* Bytes of the one allocation a pool of `size` bytes needs (region + block table), or 0 when that
 * overflows; *out_region is the rounded region size, where the block table starts. */
size_t irp_vm_pool_storage_bytes(uint64_t size, size_t* out_region);

/* Sets up a pool over `storage` (irp_vm_pool_storage_bytes(size) bytes, aligned), empty. */
void irp_vm_pool_init(irp_vm_pool_t* pool, uint8_t* storage, uint64_t size);

/* Frees every block and clears the high-water mark (the start of every call). */
void irp_vm_pool_reset(irp_vm_pool_t* pool);

/* A block of `length` (>= 0) bytes, or NULL when no free block is large enough or no block slot
 * is left (the caller reports it: pool->size, pool->used_bytes say how full the pool is). */
uint8_t* irp_vm_pool_alloc(irp_vm_pool_t* pool, uint64_t length);

typedef enum irp_vm_pool_free_result_e {
  IRP_VM_POOL_FREED = 0,
  IRP_VM_POOL_NOT_A_BLOCK = 1,     /* data is not the start of a block of this pool */
  IRP_VM_POOL_ALREADY_FREE = 2,    /* the block that starts at data is free */
} irp_vm_pool_free_result_t;

/* Returns the block that starts at data to the pool. A zero-length view at the region's start (what
 * a zero-length alloc returns) is accepted and changes nothing. */
irp_vm_pool_free_result_t irp_vm_pool_free(irp_vm_pool_t* pool, const uint8_t* data, size_t length);

#endif /* IRP_VM_POOL_H_ */
