/* A tiny kernel library for the runtime's tests, built like the compiler's libraries:
 *   cc -shared -fPIC -nostdlib -O2 -Wl,-e,irp_kernel_library_query -Wl,-Bsymbolic
 * Entry points (in this order):
 *   add_f32   bindings (a, b, out), f32 each; push constant 0 = element count;
 *             workgroup x handles elements [x * 64, x * 64 + 64)
 *   scale_f32 bindings (in, out); push constants (count, factor as f32 bits)
 *   fail_if_negative  binding (in) f32; returns 7 (a code outside IRP_KERNEL_STATUSES) if in[0] < 0,
 *             IRP_KERNEL_STATUS_INDEX_OUT_OF_RANGE if in[0] > 1000
 * Each kernel checks its push constants against the binding lengths and the grid, and returns 1
 * when they disagree: the corruption test changes push constants and workgroup counts, and a
 * kernel is the only one that knows what they mean. Like a compiled entry point (dispatch_guard.py)
 * one that writes returns IRP_KERNEL_STATUS_READ_ONLY_BINDING when its output is read-only. */
#include "../../hal/kernel_abi.h"

#define TILE 64u

/* 1 when `count` floats do not fit every binding or the grid is not (groups, 1, 1). */
static int32_t check_dispatch(const irp_dispatch_state_t* dispatch, uint64_t count, uint32_t groups) {
  for (uint32_t i = 0; i < dispatch->binding_count; ++i) {
    if (dispatch->binding_lengths[i] < count * sizeof(float)) return 1;
  }
  const uint32_t* grid = dispatch->workgroup_count;
  return grid[0] == groups && grid[1] == 1 && grid[2] == 1 ? 0 : 1;
}

/* Whether binding `index` is marked read-only (a constant or a caller's input). */
static int read_only(const irp_dispatch_state_t* dispatch, uint32_t index) {
  return (dispatch->read_only_bindings[index / 32] >> (index % 32)) & 1u;
}

int32_t add_f32(const irp_dispatch_state_t* dispatch, const irp_workgroup_state_t* workgroup) {
  if (dispatch->push_constant_count != 1 || dispatch->binding_count != 3) return 1;
  if (check_dispatch(dispatch, dispatch->push_constants[0], (dispatch->push_constants[0] + TILE - 1) / TILE)) return 1;
  if (read_only(dispatch, 2)) return IRP_KERNEL_STATUS_READ_ONLY_BINDING;
  const float* a = (const float*)dispatch->bindings[0];
  const float* b = (const float*)dispatch->bindings[1];
  float* out = (float*)dispatch->bindings[2];
  uint32_t count = dispatch->push_constants[0];
  uint32_t begin = workgroup->workgroup_id[0] * TILE;
  for (uint32_t i = begin; i < begin + TILE && i < count; ++i) out[i] = a[i] + b[i];
  return 0;
}

int32_t scale_f32(const irp_dispatch_state_t* dispatch, const irp_workgroup_state_t* workgroup) {
  (void)workgroup;
  if (dispatch->push_constant_count != 2 || dispatch->binding_count != 2) return 1;
  if (check_dispatch(dispatch, dispatch->push_constants[0], 1)) return 1;
  if (read_only(dispatch, 1)) return IRP_KERNEL_STATUS_READ_ONLY_BINDING;
  const float* in = (const float*)dispatch->bindings[0];
  float* out = (float*)dispatch->bindings[1];
  uint32_t count = dispatch->push_constants[0];
  union { uint32_t bits; float value; } factor = {dispatch->push_constants[1]};
  for (uint32_t i = 0; i < count; ++i) out[i] = in[i] * factor.value;
  return 0;
}

int32_t fail_if_negative(const irp_dispatch_state_t* dispatch, const irp_workgroup_state_t* workgroup) {
  (void)workgroup;
  if (dispatch->binding_count != 1 || check_dispatch(dispatch, 1, 1)) return 1;
  const float* in = (const float*)dispatch->bindings[0];
  if (in[0] > 1000.0f) return IRP_KERNEL_STATUS_INDEX_OUT_OF_RANGE;
  return in[0] < 0.0f ? 7 : 0;
}

/* A flat executable has no library table (its pointers would need relocating): the runtime finds
 * each entry point by its offset in the image. */
#ifndef IRP_FLAT_KERNELS
static const char* const kNames[] = {"add_f32", "scale_f32", "fail_if_negative"};
static const irp_kernel_fn_t kEntries[] = {add_f32, scale_f32, fail_if_negative};
static const irp_kernel_library_t kLibrary = {IRP_KERNEL_ABI_VERSION, 3, kNames, kEntries};

const irp_kernel_library_t* irp_kernel_library_query(uint32_t abi_version) {
  return abi_version == IRP_KERNEL_ABI_VERSION ? &kLibrary : 0;
}
#endif /* IRP_FLAT_KERNELS */
