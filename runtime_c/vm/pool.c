#include "pool.h"

#include <string.h>

#define IRP_POOL_ALIGN(n) (((n) + (IRP_ARENA_ALIGNMENT - 1)) & ~(uint64_t)(IRP_ARENA_ALIGNMENT - 1))

size_t irp_vm_pool_storage_bytes(uint64_t size, size_t* out_region) {
  *out_region = 0;
  if (size > (uint64_t)SIZE_MAX - IRP_ARENA_ALIGNMENT) return 0;
  uint64_t region = IRP_POOL_ALIGN(size);
  if (region == 0) region = IRP_ARENA_ALIGNMENT; /* a real base pointer even without a pool */
  /* No pool (static modules, boards): no block table either; only zero-length blocks exist. */
  size_t table = size == 0 ? 0 : IRP_POOL_MAX_BLOCKS * sizeof(irp_vm_pool_block_t);
  if (region > (uint64_t)(SIZE_MAX - table)) return 0;
  *out_region = (size_t)region;
  return (size_t)region + table;
}

void irp_vm_pool_init(irp_vm_pool_t* pool, uint8_t* storage, uint64_t size) {
  size_t region = 0;
  (void)irp_vm_pool_storage_bytes(size, &region);
  memset(pool, 0, sizeof(*pool));
  pool->base = storage;
  pool->size = IRP_POOL_ALIGN(size);
  pool->blocks = (irp_vm_pool_block_t*)(void*)(storage + region);
  irp_vm_pool_reset(pool);
}

void irp_vm_pool_reset(irp_vm_pool_t* pool) {
  pool->block_count = 0;
  pool->used_bytes = 0;
  pool->high_water = 0;
  if (pool->size > 0) {
    irp_vm_pool_block_t all = {0, pool->size, false};
    pool->blocks[0] = all;
    pool->block_count = 1;
  }
}

uint8_t* irp_vm_pool_alloc(irp_vm_pool_t* pool, uint64_t length) {
  if (length == 0) return pool->base;
  if (length > pool->size) return NULL;
  uint64_t need = IRP_POOL_ALIGN(length);
  for (uint32_t i = 0; i < pool->block_count; ++i) {
    irp_vm_pool_block_t* block = &pool->blocks[i];
    if (block->used || block->size < need) continue;
    if (block->size > need) {
      if (pool->block_count == IRP_POOL_MAX_BLOCKS) return NULL; /* no slot for the remainder */
      memmove(&pool->blocks[i + 2], &pool->blocks[i + 1],
              (pool->block_count - i - 1) * sizeof(irp_vm_pool_block_t));
      irp_vm_pool_block_t rest = {block->offset + need, block->size - need, false};
      pool->blocks[i + 1] = rest;
      pool->block_count += 1;
      block->size = need;
    }
    block->used = true;
    pool->used_bytes += block->size;
    if (block->offset + block->size > pool->high_water) pool->high_water = block->offset + block->size;
    return pool->base + block->offset;
  }
  return NULL;
}

/* Merges blocks[i] with blocks[i + 1] (both free). */
static void irp_vm_pool_merge_next(irp_vm_pool_t* pool, uint32_t i) {
  pool->blocks[i].size += pool->blocks[i + 1].size;
  memmove(&pool->blocks[i + 1], &pool->blocks[i + 2], (pool->block_count - i - 2) * sizeof(irp_vm_pool_block_t));
  pool->block_count -= 1;
}

irp_vm_pool_free_result_t irp_vm_pool_free(irp_vm_pool_t* pool, const uint8_t* data, size_t length) {
  if (length == 0 && data == pool->base) return IRP_VM_POOL_FREED;
  if (data < pool->base || data >= pool->base + pool->size) return IRP_VM_POOL_NOT_A_BLOCK;
  uint64_t offset = (uint64_t)(data - pool->base);
  /* Binary search: the blocks are in address order. */
  uint32_t lo = 0, hi = pool->block_count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (pool->blocks[mid].offset < offset) lo = mid + 1;
    else hi = mid;
  }
  if (lo == pool->block_count || pool->blocks[lo].offset != offset) return IRP_VM_POOL_NOT_A_BLOCK;
  irp_vm_pool_block_t* block = &pool->blocks[lo];
  if (!block->used) return IRP_VM_POOL_ALREADY_FREE;
  block->used = false;
  pool->used_bytes -= block->size;
  if (lo + 1 < pool->block_count && !pool->blocks[lo + 1].used) irp_vm_pool_merge_next(pool, lo);
  if (lo > 0 && !pool->blocks[lo - 1].used) irp_vm_pool_merge_next(pool, lo - 1);
  return IRP_VM_POOL_FREED;
}
