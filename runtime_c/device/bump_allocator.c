#include "bump_allocator.h"

void irp_bump_init(irp_bump_allocator_t* bump, uint8_t* base, size_t capacity) {
  bump->base = base;
  bump->capacity = capacity;
  bump->used = 0;
}

void* irp_bump_alloc(irp_bump_allocator_t* bump, size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return NULL;
  uintptr_t at = (uintptr_t)bump->base + bump->used;
  size_t padding = (size_t)((alignment - (at & (alignment - 1))) & (alignment - 1));
  size_t free_bytes = bump->capacity - bump->used;
  if (padding > free_bytes || size > free_bytes - padding) return NULL;
  bump->used += padding + size;
  return (void*)(at + padding);
}

size_t irp_bump_free_bytes(const irp_bump_allocator_t* bump) { return bump->capacity - bump->used; }

void irp_bump_reset(irp_bump_allocator_t* bump, size_t mark) {
  if (mark <= bump->used) bump->used = mark;
}

static void* irp_bump_alloc_callback(void* ctx, size_t size, size_t alignment) {
  return irp_bump_alloc((irp_bump_allocator_t*)ctx, size, alignment);
}

static void irp_bump_free_callback(void* ctx, void* ptr) {
  (void)ctx;
  (void)ptr;
}

irp_allocator_t irp_bump_allocator(irp_bump_allocator_t* bump) {
  irp_allocator_t allocator = {bump, irp_bump_alloc_callback, irp_bump_free_callback};
  return allocator;
}
