/* Implements api/iree_py_runtime.h on top of vm/ (module, verifier, interpreter) and hal/ (the
 * runtime's device, which prepares executables and runs dispatches). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../base/allocator.h"
#include "../base/clock.h"
#include "../hal/sync_device.h"
#include "../hal/threaded_device.h"
#if IRP_HAVE_VULKAN
#include "../hal/drivers/vulkan/vulkan_device.h"
#endif
#include "../vm/interp.h"
#include "iree_py_runtime.h"

struct irp_runtime_t {
  irp_allocator_t allocator;
  irp_hal_device_t cpu_device; /* the synchronous CPU driver */
  irp_hal_device_t* device;    /* runs every module's dispatches: &cpu_device or a Vulkan device */
  irp_hal_device_t* vulkan;    /* the Vulkan device (irp_runtime_set_device), NULL if none */
  uint32_t thread_count;       /* threads for CPU dispatches (irp_runtime_set_thread_count) */
  irp_hal_device_t* threaded;  /* the threaded CPU driver, made at the first load with thread_count > 1 */
  uint32_t module_count;       /* modules loaded and not released: the device cannot change under them */
  size_t memory_limit;     /* 0: IRP_MAX_MODULE_MEMORY (irp_runtime_set_memory_limit) */
  char message[IRP_MAX_MESSAGE_LENGTH];
  irp_diag_t diag;
};

struct irp_module_t {
  irp_runtime_t* runtime;
  irp_vm_module_t vm;
  irp_vm_state_t state;
  irp_vm_ref_t* input_refs;  /* max inputs over functions */
  irp_vm_ref_t* output_refs; /* max outputs over functions */
  int64_t* i64_values;       /* max i64 inputs / outputs over functions: dims passed in and returned */
  irp_vm_pool_t pool;
  void* pool_storage;        /* the pool's region and block table (vm/pool.h) */
  irp_vm_entry_profile_t* profile; /* one slot per loaded entry point; state.profile points here when on */
  irp_vm_trace_t trace;            /* irp_module_set_trace; state.trace points here when on */
  uint64_t call_start_ns, call_end_ns; /* the latest call, when tracing */
  irp_hal_device_t* device;        /* the runtime's device when the module was loaded */
  const uint8_t* constants_base;   /* the span of the constants given to device->register_constants */
  bool constants_registered;
};

irp_status_t irp_runtime_create(const irp_allocator_t* allocator, irp_runtime_t** out_runtime) {
  if (out_runtime == NULL) return IRP_INVALID_ARGUMENT;
  *out_runtime = NULL;
  if (allocator == NULL || allocator->alloc == NULL || allocator->free == NULL) return IRP_INVALID_ARGUMENT;
  irp_runtime_t* runtime = allocator->alloc(allocator->ctx, sizeof(irp_runtime_t), 16);
  if (runtime == NULL) return IRP_OUT_OF_MEMORY;
  memset(runtime, 0, sizeof(*runtime));
  runtime->allocator = *allocator;
  irp_hal_sync_device_initialize(&runtime->cpu_device);
  runtime->device = &runtime->cpu_device;
  runtime->thread_count = irp_physical_core_count();
  runtime->diag.message = runtime->message;
  runtime->diag.capacity = sizeof(runtime->message);
  *out_runtime = runtime;
  return IRP_OK;
}

irp_status_t irp_runtime_set_device(irp_runtime_t* runtime, const char* device) {
  if (runtime == NULL || device == NULL) return IRP_INVALID_ARGUMENT;
  irp_diag_t* diag = &runtime->diag;
  irp_diag_clear(diag);
  if (runtime->module_count > 0) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "the device is chosen before modules are loaded (%" PRIu32 " loaded)",
                    runtime->module_count);
  }
  if (strcmp(device, "local") == 0 || strcmp(device, "cpu") == 0) {
    runtime->device = &runtime->cpu_device;
    return IRP_OK;
  }
  if (strcmp(device, "vulkan") != 0) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "unknown device '%s': this runtime has 'local'%s", device,
                    IRP_HAVE_VULKAN ? " and 'vulkan'" : "");
  }
#if IRP_HAVE_VULKAN
  if (runtime->vulkan == NULL) {
    IRP_RETURN_IF_ERROR(irp_hal_vulkan_device_create(&runtime->allocator, diag, &runtime->vulkan));
  }
  runtime->device = runtime->vulkan;
  return IRP_OK;
#else
  return IRP_FAIL(diag, IRP_UNSUPPORTED, "this runtime was built without the Vulkan driver (IRP_HAVE_VULKAN=0: "
                  "install libvulkan-dev and rebuild it)");
#endif
}

irp_status_t irp_runtime_set_thread_count(irp_runtime_t* runtime, int32_t count) {
  if (runtime == NULL) return IRP_INVALID_ARGUMENT;
  irp_diag_t* diag = &runtime->diag;
  irp_diag_clear(diag);
  if (runtime->module_count > 0) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "the thread count is set before modules are loaded (%" PRIu32
                    " loaded)", runtime->module_count);
  }
  if (count < 0 || count > IRP_MAX_THREADS) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "thread count %" PRId32 ": expected 0 (one per physical core) to %d",
                    count, IRP_MAX_THREADS);
  }
  uint32_t threads = count == 0 ? irp_physical_core_count() : (uint32_t)count;
  if (threads > 1 && !IRP_HAVE_THREADS) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "this runtime was built without threads (IRP_HAVE_THREADS=0): 1 thread only");
  }
#if IRP_HAVE_THREADS
  if (threads != runtime->thread_count && runtime->threaded != NULL) {  /* made for another count */
    if (runtime->device == runtime->threaded) runtime->device = &runtime->cpu_device;
    irp_hal_threaded_device_release(runtime->threaded);
    runtime->threaded = NULL;
  }
#endif
  runtime->thread_count = threads;
  return IRP_OK;
}

int32_t irp_runtime_thread_count(const irp_runtime_t* runtime) {
  return runtime == NULL ? 0 : (int32_t)runtime->thread_count;
}

/* The CPU device for the next load: the threaded driver when more than one thread is asked for
 * (made once, at the first load that needs it), else the synchronous one. */
static irp_status_t irp_runtime_pick_cpu_device(irp_runtime_t* runtime) {
#if IRP_HAVE_THREADS
  bool on_cpu = runtime->device == &runtime->cpu_device || runtime->device == runtime->threaded;
  if (!on_cpu) return IRP_OK;
  if (runtime->thread_count <= 1) {
    runtime->device = &runtime->cpu_device;
    return IRP_OK;
  }
  if (runtime->threaded == NULL) {
    IRP_RETURN_IF_ERROR(irp_hal_threaded_device_create(&runtime->allocator, runtime->thread_count, &runtime->diag,
                                                       &runtime->threaded));
  }
  runtime->device = runtime->threaded;
#else
  (void)runtime;
#endif
  return IRP_OK;
}

void irp_runtime_release(irp_runtime_t* runtime) {
  if (runtime == NULL) return;
#if IRP_HAVE_THREADS
  irp_hal_threaded_device_release(runtime->threaded);
#endif
#if IRP_HAVE_VULKAN
  irp_hal_vulkan_device_release(runtime->vulkan);
#endif
  irp_allocator_t allocator = runtime->allocator;
  allocator.free(allocator.ctx, runtime);
}

const char* irp_runtime_error_message(const irp_runtime_t* runtime) {
  return runtime != NULL ? runtime->message : "";
}

void irp_runtime_set_memory_limit(irp_runtime_t* runtime, size_t bytes) {
  if (runtime != NULL) runtime->memory_limit = bytes;
}

static size_t irp_memory_limit(const irp_runtime_t* runtime) {
  if (runtime->memory_limit != 0) return runtime->memory_limit;
  if (IRP_MAX_MODULE_MEMORY != 0) return (size_t)IRP_MAX_MODULE_MEMORY;
  return irp_system_memory_bytes();
}

/* Bytes no arena or pool may reach: any of them alone is over every limit, and four of them add up
 * without overflow. */
#define IRP_HUGE (SIZE_MAX / 4)

static irp_status_t irp_module_allocate_state(irp_module_t* module) {
  const irp_allocator_t* allocator = &module->runtime->allocator;
  irp_diag_t* diag = &module->runtime->diag;
  const irp_vm_module_t* vm = &module->vm;
  /* Never zero bytes, so arena views always have a real base pointer. */
  size_t arena_bytes = vm->arena_size > IRP_HUGE ? IRP_HUGE
                       : ((size_t)vm->arena_size + IRP_ARENA_ALIGNMENT - 1) & ~(size_t)(IRP_ARENA_ALIGNMENT - 1);
  if (arena_bytes == 0) arena_bytes = IRP_ARENA_ALIGNMENT;
  size_t pool_region = 0;
  size_t pool_bytes = irp_vm_pool_storage_bytes(vm->pool_size, &pool_region);
  if (pool_bytes == 0 || pool_bytes > IRP_HUGE) pool_bytes = IRP_HUGE;
  int32_t max_inputs = 0, max_outputs = 0;
  size_t max_i64_values = 0;
  for (int32_t i = 0; i < vm->function_count; ++i) {
    const irp_vm_function_t* f = &vm->functions[i];
    if (f->input_count > max_inputs) max_inputs = f->input_count;
    if (f->output_count > max_outputs) max_outputs = f->output_count;
    if (f->i64_input_count > max_i64_values) max_i64_values = f->i64_input_count;
    if (f->i64_output_count > max_i64_values) max_i64_values = f->i64_output_count;
  }
  /* One register window per possible call level (vm/interp.h), so a call never allocates. Counts are
   * u16 and the depth at most IRP_MAX_CALL_DEPTH: these products stay far below IRP_HUGE. */
  size_t depth = vm->call_depth > 0 ? vm->call_depth : 1;
  size_t registers = depth * ((size_t)vm->max_i64_registers * sizeof(int64_t) +
                              (size_t)vm->max_ref_registers * sizeof(irp_vm_ref_t) + sizeof(irp_vm_frame_t));
  size_t other = max_i64_values * sizeof(int64_t) + ((size_t)max_inputs + (size_t)max_outputs) * sizeof(irp_vm_ref_t) +
                 (size_t)vm->entry_point_count * sizeof(irp_vm_entry_profile_t);
  size_t total = arena_bytes + pool_bytes + registers + other;
  size_t limit = irp_memory_limit(module->runtime);
  if (total > limit) {
    return IRP_FAIL(diag, IRP_OUT_OF_MEMORY,
                    "out of memory: module '%s' needs %zu bytes (arena %llu, pool %llu, registers %zu x %u i64 + "
                    "%u ref); limit %zu",
                    vm->name, total, (unsigned long long)vm->arena_size, (unsigned long long)vm->pool_size, depth,
                    vm->max_i64_registers, vm->max_ref_registers, limit);
  }
  irp_hal_device_t* device = module->runtime->device;
  if (device->vtable->allocate_buffer != NULL) { /* memory the device's dispatches can bind */
    IRP_RETURN_IF_ERROR(device->vtable->allocate_buffer(device, arena_bytes, (void**)&module->state.arena, diag));
    memset(module->state.arena, 0, arena_bytes);
    IRP_RETURN_IF_ERROR(device->vtable->allocate_buffer(device, pool_bytes, &module->pool_storage, diag));
  } else {
    IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, arena_bytes, 1, IRP_ARENA_ALIGNMENT, diag,
                                            (void**)&module->state.arena));
    /* Not zeroed (pool blocks' contents are undefined): a large pool costs no memory until used. */
    module->pool_storage = allocator->alloc(allocator->ctx, pool_bytes, IRP_ARENA_ALIGNMENT);
  }
  if (module->pool_storage == NULL) {
    return IRP_FAIL(diag, IRP_OUT_OF_MEMORY, "module '%s': out of memory allocating its %llu-byte pool", vm->name,
                    (unsigned long long)vm->pool_size);
  }
  irp_vm_pool_init(&module->pool, (uint8_t*)module->pool_storage, vm->pool_size);
  module->state.pool = &module->pool;
  module->state.device = module->runtime->device;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, max_i64_values, sizeof(int64_t), 8, diag,
                                          (void**)&module->i64_values));
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, depth * vm->max_i64_registers, sizeof(int64_t), 8, diag,
                                          (void**)&module->state.i64_registers));
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, depth * vm->max_ref_registers, sizeof(irp_vm_ref_t), 8, diag,
                                          (void**)&module->state.ref_registers));
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, depth, sizeof(irp_vm_frame_t), 8, diag,
                                          (void**)&module->state.frames));
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, (size_t)max_inputs, sizeof(irp_vm_ref_t), 8, diag,
                                          (void**)&module->input_refs));
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, vm->entry_point_count, sizeof(irp_vm_entry_profile_t), 8,
                                          diag, (void**)&module->profile));
  return irp_allocate_zeroed(allocator, (size_t)max_outputs, sizeof(irp_vm_ref_t), 8, diag,
                             (void**)&module->output_refs);
}

/* A device with memory of its own gets the module's constants once: the span from the first to the
 * end of the last (they lie in the module bytes, in order of the writer's choosing). */
static irp_status_t irp_module_register_constants(irp_module_t* module) {
  irp_hal_device_t* device = module->device;
  if (device->vtable->register_constants == NULL) return IRP_OK;
  const uint8_t* begin = NULL;
  const uint8_t* end = NULL;
  for (uint32_t i = 0; i < module->vm.constant_count; ++i) {
    const irp_vm_constant_t* c = &module->vm.constants[i];
    if (c->length == 0) continue;
    if (begin == NULL || c->data < begin) begin = c->data;
    if (end == NULL || c->data + c->length > end) end = c->data + c->length;
  }
  if (begin == NULL) return IRP_OK;
  IRP_RETURN_IF_ERROR(device->vtable->register_constants(device, begin, (size_t)(end - begin), &module->runtime->diag));
  module->constants_base = begin;
  module->constants_registered = true;
  return IRP_OK;
}

irp_status_t irp_module_load(irp_runtime_t* runtime, const void* data, size_t length,
                             irp_module_t** out_module) {
  if (runtime == NULL || out_module == NULL) return IRP_INVALID_ARGUMENT;
  *out_module = NULL;
  irp_diag_clear(&runtime->diag);
  if (runtime->module_count == 0) IRP_RETURN_IF_ERROR(irp_runtime_pick_cpu_device(runtime));
  irp_module_t* module = NULL;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(&runtime->allocator, 1, sizeof(irp_module_t), 16, &runtime->diag,
                                          (void**)&module));
  module->runtime = runtime;
  module->device = runtime->device;
  runtime->module_count += 1;
  const char* arch = module->device->vtable->executable_arch;
  irp_status_t status = irp_vm_module_load_for_arch(&runtime->allocator, data, length,
                                                    arch != NULL ? arch : IRP_ARCH_NAME, &runtime->diag, &module->vm);
  for (uint32_t i = 0; status == IRP_OK && i < module->vm.executable_count; ++i) {
    status = irp_hal_device_prepare_executable(module->device, &runtime->allocator, &module->vm.executables[i].hal,
                                               &runtime->diag);
  }
  if (status == IRP_OK) status = irp_module_register_constants(module);
  if (status == IRP_OK) status = irp_module_allocate_state(module);
  if (status != IRP_OK) {
    irp_module_release(module);
    return status;
  }
  *out_module = module;
  return IRP_OK;
}

void irp_module_release(irp_module_t* module) {
  if (module == NULL) return;
  const irp_allocator_t* allocator = &module->runtime->allocator;
  irp_hal_device_t* device = module->device;
  (void)irp_hal_device_synchronize(device, &module->runtime->diag); /* nothing may still run on its buffers */
  for (uint32_t i = 0; i < module->vm.executable_count; ++i) {
    irp_hal_device_release_executable(device, allocator, &module->vm.executables[i].hal);
  }
  if (module->constants_registered) device->vtable->unregister_constants(device, module->constants_base);
  irp_vm_module_free(allocator, &module->vm);
  irp_free(allocator, module->profile);
  irp_free(allocator, module->trace.events);
  irp_free(allocator, module->trace.spans);
  if (device->vtable->free_buffer != NULL) {
    device->vtable->free_buffer(device, module->state.arena);
    device->vtable->free_buffer(device, module->pool_storage);
  } else {
    irp_free(allocator, module->state.arena);
    irp_free(allocator, module->pool_storage);
  }
  module->runtime->module_count -= 1;
  irp_free(allocator, module->i64_values);
  irp_free(allocator, module->state.i64_registers);
  irp_free(allocator, module->state.ref_registers);
  irp_free(allocator, module->state.frames);
  irp_free(allocator, module->input_refs);
  irp_free(allocator, module->output_refs);
  irp_free(allocator, module);
}

int32_t irp_module_function_count(const irp_module_t* module) {
  return module != NULL ? module->vm.function_count : 0;
}

irp_status_t irp_module_find_function(const irp_module_t* module, const char* name, int32_t* out_function) {
  if (module == NULL || name == NULL || out_function == NULL) return IRP_INVALID_ARGUMENT;
  *out_function = -1;
  for (int32_t i = 0; i < module->vm.function_count; ++i) {
    if (strcmp(module->vm.functions[i].name, name) == 0) {
      *out_function = i;
      return IRP_OK;
    }
  }
  return IRP_FAIL(&module->runtime->diag, IRP_NOT_FOUND, "module '%s' has no function '%s'", module->vm.name,
                  name);
}

static const irp_vm_function_t* irp_function_at(const irp_module_t* module, int32_t function) {
  if (module == NULL || function < 0 || function >= module->vm.function_count) return NULL;
  return &module->vm.functions[function];
}

const char* irp_function_name(const irp_module_t* module, int32_t function) {
  const irp_vm_function_t* f = irp_function_at(module, function);
  return f != NULL ? f->name : NULL;
}

int32_t irp_function_input_count(const irp_module_t* module, int32_t function) {
  const irp_vm_function_t* f = irp_function_at(module, function);
  return f != NULL ? f->input_count : -1;
}

int32_t irp_function_output_count(const irp_module_t* module, int32_t function) {
  const irp_vm_function_t* f = irp_function_at(module, function);
  return f != NULL ? f->output_count : -1;
}

/* A signature as a view: dynamic dims are -1 and the length 0 (unknown) when there are any. */
static void irp_sig_to_view(const irp_vm_tensor_sig_t* sig, irp_buffer_view_t* out_view) {
  memset(out_view, 0, sizeof(*out_view));
  out_view->dtype = sig->dtype;
  out_view->rank = sig->rank;
  for (int32_t i = 0; i < sig->rank; ++i) out_view->shape[i] = sig->shape[i];
  out_view->length = sig->dynamic_count == 0 ? sig->byte_length : 0;
}

static irp_status_t irp_describe(const irp_module_t* module, int32_t function, int32_t index, bool input,
                                 irp_buffer_view_t* out_view, const char** out_name) {
  const irp_vm_function_t* f = irp_function_at(module, function);
  if (f == NULL || out_view == NULL) return IRP_INVALID_ARGUMENT;
  int32_t count = input ? f->input_count : f->output_count;
  if (index < 0 || index >= count) {
    return IRP_FAIL(&module->runtime->diag, IRP_INVALID_ARGUMENT, "%s: %s %" PRId32 " does not exist (it has %" PRId32 ")",
                    f->name, input ? "input" : "output", index, count);
  }
  const irp_vm_tensor_sig_t* sig = input ? &f->inputs[index] : &f->outputs[index];
  irp_sig_to_view(sig, out_view);
  if (out_name != NULL) *out_name = sig->name;
  return IRP_OK;
}

irp_status_t irp_function_input(const irp_module_t* module, int32_t function, int32_t index,
                                irp_buffer_view_t* out_view, const char** out_name) {
  return irp_describe(module, function, index, true, out_view, out_name);
}

irp_status_t irp_function_output(const irp_module_t* module, int32_t function, int32_t index,
                                 irp_buffer_view_t* out_view, const char** out_name) {
  return irp_describe(module, function, index, false, out_view, out_name);
}

static const char* irp_dim_name(const irp_module_t* module, int32_t function, int32_t index, int32_t axis,
                                bool input) {
  const irp_vm_function_t* f = irp_function_at(module, function);
  if (f == NULL || index < 0 || index >= (input ? f->input_count : f->output_count)) return NULL;
  const irp_vm_tensor_sig_t* sig = input ? &f->inputs[index] : &f->outputs[index];
  return axis >= 0 && axis < sig->rank ? sig->dim_names[axis] : NULL;
}

const char* irp_function_input_dim_name(const irp_module_t* module, int32_t function, int32_t index, int32_t axis) {
  return irp_dim_name(module, function, index, axis, true);
}

const char* irp_function_output_dim_name(const irp_module_t* module, int32_t function, int32_t index, int32_t axis) {
  return irp_dim_name(module, function, index, axis, false);
}

size_t irp_module_peak_bytes(const irp_module_t* module) {
  return module != NULL ? (size_t)module->vm.arena_size + (size_t)module->pool.high_water : 0;
}

size_t irp_module_arena_size(const irp_module_t* module) {
  return module != NULL ? (size_t)module->vm.arena_size : 0;
}

irp_status_t irp_module_reset_state(irp_module_t* module) {
  if (module == NULL) return IRP_INVALID_ARGUMENT;
  if (module->vm.arena_size > 0) memset(module->state.arena, 0, (size_t)module->vm.arena_size);
  return IRP_OK;
}

/* Writes "[1, 3, 8, 8]" into buffer. */
static void irp_format_shape(const int64_t* shape, int32_t rank, char* buffer, size_t capacity) {
  size_t used = 0;
  buffer[0] = '\0';
  for (int32_t i = 0; i < rank && used + 1 < capacity; ++i) {
    int written = snprintf(buffer + used, capacity - used, "%s%lld", i == 0 ? "" : ", ", (long long)shape[i]);
    if (written < 0) break;
    used += (size_t)written;
  }
}

/* "dim 1 (seq)" or "dim 1" for an unnamed one. */
static void irp_format_dim(const irp_vm_tensor_sig_t* sig, int32_t axis, char* buffer, size_t capacity) {
  if (sig->dim_names[axis][0] != '\0') {
    snprintf(buffer, capacity, "dim %" PRId32 " (%s)", axis, sig->dim_names[axis]);
  } else {
    snprintf(buffer, capacity, "dim %" PRId32, axis);
  }
}

/* The dynamic dims of one call go to the VM as i64 inputs; no dim may make a u32 push constant wrap. */
#define IRP_MAX_DYNAMIC_DIM ((int64_t)INT32_MAX)

static irp_status_t irp_check_input(const irp_module_t* module, const irp_vm_function_t* f, int32_t index,
                                    const irp_buffer_view_t* view) {
  irp_diag_t* diag = &module->runtime->diag;
  const irp_vm_tensor_sig_t* sig = &f->inputs[index];
  if (view->dtype != sig->dtype) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s' has dtype %d but the signature expects %d",
                    f->name, index, sig->name, (int)view->dtype, (int)sig->dtype);
  }
  bool same_shape = view->rank == sig->rank;
  for (int32_t i = 0; same_shape && i < sig->rank; ++i) {
    same_shape = sig->shape[i] == IRP_VM_DYNAMIC_DIM ? view->shape[i] >= 0 : view->shape[i] == sig->shape[i];
  }
  if (!same_shape) {
    char got[160] = "?", expected[160];
    if (view->rank >= 0 && view->rank <= IRP_MAX_RANK) irp_format_shape(view->shape, view->rank, got, sizeof(got));
    irp_format_shape(sig->shape, sig->rank, expected, sizeof(expected));
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s' has shape [%s] but the signature expects [%s]%s",
                    f->name, index, sig->name, got, expected, sig->dynamic_count > 0 ? " (-1: any size)" : "");
  }
  size_t bytes = sig->byte_length;
  for (int32_t i = 0; i < sig->rank; ++i) {
    if (sig->shape[i] != IRP_VM_DYNAMIC_DIM) continue;
    int64_t dim = view->shape[i];
    if (dim > IRP_MAX_DYNAMIC_DIM) {
      char what[96];
      irp_format_dim(sig, i, what, sizeof(what));
      return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s' %s is %lld, more than the %lld this runtime allows",
                      f->name, index, sig->name, what, (long long)dim, (long long)IRP_MAX_DYNAMIC_DIM);
    }
    if (dim != 0 && bytes > SIZE_MAX / (uint64_t)dim) {
      return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s': its byte size overflows", f->name, index,
                      sig->name);
    }
    bytes *= (size_t)dim;
  }
  if (sig->dtype == IRP_DTYPE_STRING) {
    /* N+1 offsets, then any number of bytes; the kernels validate the offsets (docs/strings.md). */
    if (bytes > SIZE_MAX - 8) {
      return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s': its byte size overflows", f->name, index,
                      sig->name);
    }
    bytes += 8;
    if (view->length < bytes) {
      return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s' is a string tensor of %zu bytes but its "
                      "%zu offsets need at least %zu", f->name, index, sig->name, view->length, bytes / 8, bytes);
    }
  } else if (view->length != bytes) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s' is %zu bytes but %s %zu",
                    f->name, index, sig->name, view->length,
                    sig->dynamic_count > 0 ? "its shape needs" : "the signature needs", bytes);
  }
  if (view->data == NULL && bytes > 0) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: input %" PRId32 " '%s' has no data (NULL)", f->name, index, sig->name);
  }
  return IRP_OK;
}

/* Dynamic input dims with the same name must agree; collects them into module->i64_values in
 * signature order. */
static irp_status_t irp_collect_input_dims(irp_module_t* module, const irp_vm_function_t* f,
                                           const irp_buffer_view_t* inputs) {
  irp_diag_t* diag = &module->runtime->diag;
  int32_t count = 0;
  for (int32_t i = 0; i < f->input_count; ++i) {
    const irp_vm_tensor_sig_t* sig = &f->inputs[i];
    for (int32_t axis = 0; axis < sig->rank; ++axis) {
      if (sig->shape[axis] != IRP_VM_DYNAMIC_DIM) continue;
      const char* name = sig->dim_names[axis];
      /* The first earlier dim of the same name: every earlier one already agrees with it. */
      for (int32_t j = 0; name[0] != '\0' && j <= i; ++j) {
        const irp_vm_tensor_sig_t* other = &f->inputs[j];
        int32_t end = j == i ? axis : other->rank;
        int32_t found = -1;
        for (int32_t b = 0; b < end && found < 0; ++b) {
          if (other->shape[b] == IRP_VM_DYNAMIC_DIM && strcmp(other->dim_names[b], name) == 0) found = b;
        }
        if (found < 0) continue;
        if (inputs[j].shape[found] != inputs[i].shape[axis]) {
          return IRP_FAIL(diag, IRP_INVALID_ARGUMENT,
                          "%s: input '%s' dim %" PRId32 " (%s) is %lld but input '%s' dim %" PRId32 " (%s) is %lld",
                          f->name, sig->name, axis, name, (long long)inputs[i].shape[axis], other->name, found, name,
                          (long long)inputs[j].shape[found]);
        }
        break;
      }
      module->i64_values[count++] = inputs[i].shape[axis];
    }
  }
  return IRP_OK;
}

/* Output i: its shape from the signature and the returned dims (from *io_next on), checked against
 * the returned buffer's length. */
static irp_status_t irp_fill_output(irp_module_t* module, const irp_vm_function_t* f, int32_t index,
                                    const irp_vm_ref_t* ref, int32_t* io_next, irp_buffer_view_t* out_view) {
  irp_diag_t* diag = &module->runtime->diag;
  const irp_vm_tensor_sig_t* sig = &f->outputs[index];
  irp_sig_to_view(sig, out_view);
  size_t bytes = sig->byte_length;
  for (int32_t axis = 0; axis < sig->rank; ++axis) {
    if (sig->shape[axis] != IRP_VM_DYNAMIC_DIM) continue;
    int64_t dim = module->i64_values[(*io_next)++];
    if (dim < 0 || (dim != 0 && bytes > SIZE_MAX / (uint64_t)dim)) {
      char what[96];
      irp_format_dim(sig, axis, what, sizeof(what));
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: output %" PRId32 " '%s' %s came back as %lld", f->name, index,
                      sig->name, what, (long long)dim);
    }
    out_view->shape[axis] = dim;
    bytes *= (size_t)dim;
  }
  if (ref->length != bytes) {
    char shape[160];
    irp_format_shape(out_view->shape, out_view->rank, shape, sizeof(shape));
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: output %" PRId32 " '%s' is %zu bytes but its shape [%s] needs %zu",
                    f->name, index, sig->name, ref->length, shape, bytes);
  }
  out_view->data = ref->data;
  out_view->length = ref->length;
  return IRP_OK;
}

irp_status_t irp_call(irp_module_t* module, int32_t function, const irp_buffer_view_t* inputs,
                      int32_t input_count, irp_buffer_view_t* out_outputs, int32_t output_count) {
  if (module == NULL) return IRP_INVALID_ARGUMENT;
  irp_diag_t* diag = &module->runtime->diag;
  irp_diag_clear(diag);
  const irp_vm_function_t* f = irp_function_at(module, function);
  if (f == NULL) {
    return IRP_FAIL(diag, IRP_NOT_FOUND, "module '%s' has no function %" PRId32, module->vm.name, function);
  }
  if (!f->exported) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: not exported; only the module's own `call`s reach it", f->name);
  }
  if (input_count != f->input_count) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: expected %" PRId32 " inputs, got %" PRId32, f->name, f->input_count, input_count);
  }
  if (output_count != f->output_count) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: expected %" PRId32 " outputs, got %" PRId32, f->name, f->output_count,
                    output_count);
  }
  if ((input_count > 0 && inputs == NULL) || (output_count > 0 && out_outputs == NULL)) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "%s: inputs or outputs array is NULL", f->name);
  }
  for (int32_t i = 0; i < input_count; ++i) {
    IRP_RETURN_IF_ERROR(irp_check_input(module, f, i, &inputs[i]));
    /* An empty input may come without data; a ref needs a pointer to count as set. */
    uint8_t* data = inputs[i].data != NULL ? (uint8_t*)inputs[i].data : module->pool.base;
    irp_vm_ref_t ref = {data, inputs[i].length, true};
    module->input_refs[i] = ref;
  }
  IRP_RETURN_IF_ERROR(irp_collect_input_dims(module, f, inputs));
  irp_vm_pool_reset(&module->pool);
  if (module->state.trace != NULL) {
    module->trace.event_count = module->trace.span_count = 0;
    module->trace.dropped = 0;
    module->call_start_ns = irp_clock_ns();
  }
  irp_status_t status = irp_vm_invoke(&module->vm, &module->state, function, module->input_refs, module->i64_values,
                                      module->output_refs, module->i64_values, diag);
  /* Queued dispatches (a Vulkan device) finish before the outputs are read, or before an error returns. */
  irp_status_t synchronized = irp_hal_device_synchronize(module->device, status == IRP_OK ? diag : NULL);
  if (module->state.trace != NULL) module->call_end_ns = irp_clock_ns();
  IRP_RETURN_IF_ERROR(status);
  IRP_RETURN_IF_ERROR(synchronized);
  int32_t next_dim = 0;
  for (int32_t i = 0; i < output_count; ++i) {
    IRP_RETURN_IF_ERROR(irp_fill_output(module, f, i, &module->output_refs[i], &next_dim, &out_outputs[i]));
  }
  return IRP_OK;
}

void irp_module_set_profiling(irp_module_t* module, int32_t enabled) {
  if (module == NULL) return;
  if (enabled && module->profile != NULL) {
    memset(module->profile, 0, module->vm.entry_point_count * sizeof(irp_vm_entry_profile_t));
  }
  module->state.profile = enabled ? module->profile : NULL;
}

irp_status_t irp_module_set_trace(irp_module_t* module, uint32_t max_events) {
  if (module == NULL) return IRP_INVALID_ARGUMENT;
  const irp_allocator_t* allocator = &module->runtime->allocator;
  irp_diag_t* diag = &module->runtime->diag;
  irp_diag_clear(diag);
  module->state.trace = NULL;
  irp_free(allocator, module->trace.events);
  irp_free(allocator, module->trace.spans);
  memset(&module->trace, 0, sizeof(module->trace));
  if (max_events == 0) return IRP_OK;
  uint32_t threads = module->device == module->runtime->threaded ? module->runtime->thread_count : 1;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, max_events, sizeof(irp_vm_trace_event_t), 8, diag,
                                          (void**)&module->trace.events));
  irp_status_t status = irp_allocate_zeroed(allocator, (size_t)max_events * threads, sizeof(irp_hal_thread_span_t), 8,
                                            diag, (void**)&module->trace.spans);
  if (status != IRP_OK) {
    irp_free(allocator, module->trace.events);
    module->trace.events = NULL;
    return status;
  }
  module->trace.event_capacity = max_events;
  module->trace.thread_count = threads;
  module->state.trace = &module->trace;
  module->call_start_ns = module->call_end_ns = 0;
  return IRP_OK;
}

irp_status_t irp_module_trace_call(const irp_module_t* module, uint64_t* out_start_ns, uint64_t* out_end_ns,
                                   uint32_t* out_event_count, uint64_t* out_dropped) {
  if (module == NULL || out_start_ns == NULL || out_end_ns == NULL || out_event_count == NULL || out_dropped == NULL) {
    return IRP_INVALID_ARGUMENT;
  }
  *out_start_ns = module->call_start_ns;
  *out_end_ns = module->call_end_ns;
  *out_event_count = module->trace.event_count;
  *out_dropped = module->trace.dropped;
  return IRP_OK;
}

irp_status_t irp_module_trace_event(const irp_module_t* module, uint32_t index, irp_trace_event_t* out_event) {
  if (module == NULL || out_event == NULL) return IRP_INVALID_ARGUMENT;
  if (index >= module->trace.event_count) {
    return IRP_FAIL(&module->runtime->diag, IRP_INVALID_ARGUMENT, "trace event %" PRIu32 " does not exist (%" PRIu32
                    " recorded)", index, module->trace.event_count);
  }
  const irp_vm_trace_event_t* event = &module->trace.events[index];
  *out_event = (irp_trace_event_t){event->start_ns, event->end_ns, (int32_t)event->entry_index,
                                   {event->workgroup_count[0], event->workgroup_count[1], event->workgroup_count[2]},
                                   event->binding_bytes, event->pool_bytes, event->span_count};
  return IRP_OK;
}

irp_status_t irp_module_trace_thread_span(const irp_module_t* module, uint32_t index, uint32_t thread,
                                          uint64_t* out_start_ns, uint64_t* out_end_ns, uint32_t* out_workgroups) {
  if (module == NULL || out_start_ns == NULL || out_end_ns == NULL || out_workgroups == NULL) return IRP_INVALID_ARGUMENT;
  if (index >= module->trace.event_count || thread >= module->trace.events[index].span_count) {
    return IRP_FAIL(&module->runtime->diag, IRP_INVALID_ARGUMENT, "trace event %" PRIu32 " has no thread %" PRIu32,
                    index, thread);
  }
  const irp_hal_thread_span_t* span = &module->trace.spans[module->trace.events[index].first_span + thread];
  *out_start_ns = span->start_ns;
  *out_end_ns = span->end_ns;
  *out_workgroups = span->workgroups;
  return IRP_OK;
}

int32_t irp_module_entry_point_count(const irp_module_t* module) {
  return module == NULL ? 0 : (int32_t)module->vm.entry_point_count;
}

irp_status_t irp_module_entry_point_profile(const irp_module_t* module, int32_t index, const char** out_name,
                                           uint64_t* out_dispatches, uint64_t* out_nanoseconds) {
  if (module == NULL || out_name == NULL || out_dispatches == NULL || out_nanoseconds == NULL) {
    return IRP_INVALID_ARGUMENT;
  }
  if (index < 0 || (uint32_t)index >= module->vm.entry_point_count || module->profile == NULL) {
    return IRP_FAIL(&module->runtime->diag, IRP_INVALID_ARGUMENT, "entry point %" PRId32 " does not exist (the module has %" PRIu32 ")",
                    index, module->vm.entry_point_count);
  }
  for (uint32_t e = 0; e < module->vm.executable_count; ++e) {
    const irp_vm_executable_t* executable = &module->vm.executables[e];
    uint32_t local = (uint32_t)index - executable->first_entry_index;
    if ((uint32_t)index >= executable->first_entry_index && local < executable->hal.entry_point_count) {
      *out_name = executable->hal.entry_points[local].name;
    }
  }
  *out_dispatches = module->profile[index].dispatches;
  *out_nanoseconds = module->profile[index].nanoseconds;
  return IRP_OK;
}

irp_status_t irp_module_entry_point_device_time(const irp_module_t* module, int32_t index,
                                               uint64_t* out_device_nanoseconds) {
  if (module == NULL || out_device_nanoseconds == NULL) return IRP_INVALID_ARGUMENT;
  if (index < 0 || (uint32_t)index >= module->vm.entry_point_count || module->profile == NULL) {
    return IRP_FAIL(&module->runtime->diag, IRP_INVALID_ARGUMENT, "entry point %" PRId32 " does not exist (the module has %" PRIu32 ")",
                    index, module->vm.entry_point_count);
  }
  *out_device_nanoseconds = module->profile[index].device_nanoseconds;
  return IRP_OK;
}
