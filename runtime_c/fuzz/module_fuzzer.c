/* libFuzzer harness: a module (.vmfb) through the loader and verifier, and, when its kernel code is
 * trusted (fuzz_support.h), through the public API: load, reflect, one call of each exported
 * function with zero-filled inputs of the declared shapes (dynamic dims 1), release.
 *
 * A module for another architecture is verified as that architecture's runtime would (the loader's
 * architecture is a variable in fuzz builds, fuzz_arch.h) but not run. Findings besides sanitizer
 * reports: an error without a message, an output view whose bytes are not there, memory the runtime
 * still holds after release, a call that does more work than the step limit allows without failing,
 * a byte of the module or of an input written. */
#include <stdlib.h>
#include <string.h>

#include "../api/iree_py_runtime.h"
#include "../vm/module.h"
#include "fuzz_support.h"

/* What one module's state may take (irp_runtime_set_memory_limit), and one call's inputs. */
#define MODULE_MEMORY_LIMIT ((size_t)16 << 20)
#define INPUT_BYTES_LIMIT ((size_t)4 << 20)

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  irp_fuzz_load_trust(*argc > 0 ? (*argv)[0] : NULL);
  return 0;
}

/* Zero-filled inputs of function f's declared shapes; false when they would be too big. */
static bool make_inputs(irp_module_t* module, int32_t f, int32_t count, irp_buffer_view_t* views) {
  size_t total = 0;
  for (int32_t i = 0; i < count; ++i) {
    const char* name = NULL;
    irp_status_t status = irp_function_input(module, f, i, &views[i], &name);
    IRP_FUZZ_ASSERT(status == IRP_OK && name != NULL, "input %d of function %d does not describe", i, f);
    size_t elements = 1;
    for (int32_t d = 0; d < views[i].rank; ++d) {
      IRP_FUZZ_ASSERT(irp_function_input_dim_name(module, f, i, d) != NULL, "input %d dim %d has no name", i, d);
      if (views[i].shape[d] < 0) views[i].shape[d] = 1;
      if (views[i].shape[d] != 0 && elements > INPUT_BYTES_LIMIT / (size_t)views[i].shape[d]) return false;
      elements *= (size_t)views[i].shape[d];
    }
    IRP_FUZZ_ASSERT(irp_function_input_dim_name(module, f, i, views[i].rank) == NULL, "a dim past the rank");
    size_t element_size = irp_dtype_size((uint32_t)views[i].dtype);
    size_t bytes = elements * element_size + (views[i].dtype == IRP_DTYPE_STRING ? 8 : 0);
    if (bytes > INPUT_BYTES_LIMIT - total) return false;
    total += bytes;
    views[i].length = bytes;
    views[i].data = calloc(1, bytes > 0 ? bytes : 1);
  }
  return true;
}

static void check_outputs(irp_module_t* module, int32_t f, int32_t count, const irp_buffer_view_t* outputs) {
  for (int32_t i = 0; i < count; ++i) {
    irp_buffer_view_t declared;
    IRP_FUZZ_ASSERT(irp_function_output(module, f, i, &declared, NULL) == IRP_OK, "output %d does not describe", i);
    IRP_FUZZ_ASSERT(outputs[i].dtype == declared.dtype && outputs[i].rank == declared.rank,
                    "output %d came back with another dtype or rank", i);
    const volatile uint8_t* bytes = outputs[i].data;
    if (outputs[i].length > 0) {
      /* ASan checks that the view's bytes exist: its first and last. */
      (void)bytes[0];
      (void)bytes[outputs[i].length - 1];
    }
  }
}

static void call_function(irp_runtime_t* runtime, irp_module_t* module, int32_t f) {
  int32_t inputs = irp_function_input_count(module, f), outputs = irp_function_output_count(module, f);
  IRP_FUZZ_ASSERT(inputs >= 0 && inputs <= 255 && outputs >= 0 && outputs <= 255, "function %d: %d inputs, %d outputs",
                  f, inputs, outputs);
  irp_buffer_view_t* in = calloc((size_t)inputs + 1, sizeof(irp_buffer_view_t));
  irp_buffer_view_t* out = calloc((size_t)outputs + 1, sizeof(irp_buffer_view_t));
  if (make_inputs(module, f, inputs, in)) {
    irp_status_t status = irp_call(module, f, in, inputs + 1, out, outputs);
    IRP_FUZZ_ASSERT(status == IRP_INVALID_ARGUMENT || status == IRP_NOT_FOUND, "a call with one input too many: %d",
                    (int)status);
    status = irp_call(module, f, in, inputs, out, outputs);
    irp_fuzz_check_message(status, irp_runtime_error_message(runtime), "irp_call");
    irp_fuzz_note("  call %s: %d %s", irp_function_name(module, f), (int)status, irp_runtime_error_message(runtime));
    if (status == IRP_OK) check_outputs(module, f, outputs, out);
    /* Inputs are read-only to the module (kernel_abi.h read_only_bindings): still all zero. */
    for (int32_t i = 0; i < inputs; ++i) {
      const uint8_t* bytes = in[i].data;
      for (size_t at = 0; at < in[i].length; ++at) {
        IRP_FUZZ_ASSERT(bytes[at] == 0, "function %d wrote byte %zu of its input %d", f, at, i);
      }
    }
  }
  for (int32_t i = 0; i < inputs; ++i) free(in[i].data);
  free(in);
  free(out);
}

static void run_module(const uint8_t* data, size_t size) {
  irp_fuzz_heap_t heap = {IRP_FUZZ_HEAP_BUDGET, 0, 0};
  irp_allocator_t allocator = irp_fuzz_allocator(&heap);
  irp_runtime_t* runtime = NULL;
  IRP_FUZZ_ASSERT(irp_runtime_create(&allocator, &runtime) == IRP_OK, "irp_runtime_create");
  irp_runtime_set_memory_limit(runtime, MODULE_MEMORY_LIMIT);
  /* One thread: a fresh runtime per input would start workers per input (the threaded device has
   * its own tests: make test-tsan). */
  IRP_FUZZ_ASSERT(irp_runtime_set_thread_count(runtime, 1) == IRP_OK, "irp_runtime_set_thread_count");
  irp_module_t* module = NULL;
  irp_status_t status = irp_module_load(runtime, data, size, &module);
  irp_fuzz_check_message(status, irp_runtime_error_message(runtime), "irp_module_load");
  irp_fuzz_note("  irp_module_load: %d %s", (int)status, irp_runtime_error_message(runtime));
  if (status == IRP_OK) {
    irp_module_set_profiling(module, 1);
    int32_t count = irp_module_function_count(module);
    for (int32_t f = 0; f < count; ++f) {
      const char* name = irp_function_name(module, f);
      int32_t found = -1;
      IRP_FUZZ_ASSERT(name != NULL && irp_module_find_function(module, name, &found) == IRP_OK && found >= 0 &&
                          strcmp(irp_function_name(module, found), name) == 0,
                      "function %d cannot be found by its name", f);
      call_function(runtime, module, f);
    }
    for (int32_t e = 0; e < irp_module_entry_point_count(module); ++e) {
      const char* name = NULL;
      uint64_t dispatches = 0, ns = 0;
      IRP_FUZZ_ASSERT(irp_module_entry_point_profile(module, e, &name, &dispatches, &ns) == IRP_OK && name != NULL,
                      "entry point %d has no profile", e);
    }
    IRP_FUZZ_ASSERT(irp_module_reset_state(module) == IRP_OK, "irp_module_reset_state");
    irp_module_release(module);
  }
  irp_runtime_release(runtime);
  IRP_FUZZ_ASSERT(heap.live_blocks == 0, "%zu blocks (%zu bytes) still held after release", heap.live_blocks,
                  heap.live_bytes);
}

/* The module runs on a copy of the input, so a write into the module bytes shows: every byte must be
 * as it was. Constants are used in place and the runtime marks them read-only in every dispatch
 * (kernel_abi.h read_only_bindings), which compiled entry points and the test kernels check before
 * they write, so a write anywhere in the module, a constant included, is a finding. */
static void run_on_copy(const uint8_t* data, size_t size) {
  uint8_t* copy = malloc(size > 0 ? size : 1);
  if (size > 0) memcpy(copy, data, size);
  run_module(copy, size);
  for (size_t at = 0; at < size; ++at) {
    IRP_FUZZ_ASSERT(copy[at] == data[at], "byte %zu of the module was written", at);
  }
  free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  irp_fuzz_heap_t heap = {IRP_FUZZ_HEAP_BUDGET, 0, 0};
  irp_allocator_t allocator = irp_fuzz_allocator(&heap);
  irp_vm_module_t vm;
  irp_status_t status = irp_fuzz_verify_module(&allocator, data, size, &vm);
  bool host = strcmp(irp_fuzz_arch, irp_fuzz_host_arch) == 0;
  bool trusted = status == IRP_OK && host;
  for (uint32_t i = 0; trusted && i < vm.executable_count; ++i) {
    trusted = irp_fuzz_executable_trusted(&vm.executables[i].hal);
  }
  irp_fuzz_arch = irp_fuzz_host_arch;
  if (status == IRP_OK && host && !trusted) irp_fuzz_note("  not run: its kernel code is not trusted");
  if (trusted) run_on_copy(data, size);
  irp_vm_module_free(&allocator, &vm);
  IRP_FUZZ_ASSERT(heap.live_blocks == 0, "the loader holds %zu blocks after a %s load", heap.live_blocks,
                  status == IRP_OK ? "freed" : "failed");
  return 0;
}
