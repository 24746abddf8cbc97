/* iree-py runtime: the one public C API.
 *
 * Load a compiled module (.vmfb) from memory, look up a function, call it with input buffers, and
 * read its outputs. Every fallible call returns irp_status_t: IRP_OK (0) or an error code; the
 * message that goes with the latest error of a runtime is irp_runtime_error_message(runtime).
 * The status codes, the allocator interface and the dtypes are base/iree_py_base.h, which this
 * header includes (the runtime's lowest layer defines them; `iree-py build-runtime` installs both).
 *
 * Ownership:
 * - The caller owns the module bytes and must keep them alive and unchanged until the module is
 *   released: constants are used in place, never copied.
 * - The runtime allocates only through the allocator given to irp_runtime_create, and only while
 *   creating objects (module load sizes the arena, the pool, the registers and the kernel code
 *   once); irp_call never allocates.
 * - Output views returned by irp_call point into the module's arena or pool and stay valid until
 *   the next irp_call on the same module or its release.
 * Dynamic shapes (docs/dynamic_shapes.md): a signature dim of -1 takes any size; each call's inputs
 * give their sizes, dynamic dims with the same name must agree, and outputs come back with their
 * real shapes.
 * Nothing here is thread-safe; use one runtime per thread. */
#ifndef IREE_PY_RUNTIME_H_
#define IREE_PY_RUNTIME_H_

#include <stddef.h>
#include <stdint.h>

#include "../base/iree_py_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A tensor passed in or out: dtype, shape and the bytes (row-major, dense). */
typedef struct irp_buffer_view_t {
  irp_dtype_t dtype;
  int32_t rank;
  int64_t shape[IRP_MAX_RANK];
  void* data;
  size_t length; /* bytes */
} irp_buffer_view_t;

typedef struct irp_runtime_t irp_runtime_t;
typedef struct irp_module_t irp_module_t;

irp_status_t irp_runtime_create(const irp_allocator_t* allocator, irp_runtime_t** out_runtime);
void irp_runtime_release(irp_runtime_t* runtime);
/* The message of the latest error reported through this runtime ("" if none). */
const char* irp_runtime_error_message(const irp_runtime_t* runtime);
/* Most bytes the state of one module loaded through this runtime may take: its arena and pool (its
 * memory plan), its register windows and call frames (register counts x call depth) and the call
 * bookkeeping. irp_module_load sums them before allocating anything for them and refuses a module
 * that needs more with IRP_OUT_OF_MEMORY and a message giving the numbers. 0 (the initial value)
 * means IRP_MAX_MODULE_MEMORY (base/config.h): on a hosted build by default the machine's physical
 * memory, on bare metal by default only what the allocator gives. */
void irp_runtime_set_memory_limit(irp_runtime_t* runtime, size_t bytes);
/* Chooses the device that runs the dispatches of the modules loaded from now on: "local" (the
 * default: the synchronous CPU driver, executables for this build's CPU) or "vulkan" (the Vulkan
 * driver: "spirv" executables; docs/vulkan.md). Call it before loading modules. A build without
 * the Vulkan driver, a missing libvulkan.so.1 or no Vulkan device is IRP_UNSUPPORTED with a message
 * saying which; the runtime then keeps its previous device. */
irp_status_t irp_runtime_set_device(irp_runtime_t* runtime, const char* device);
/* Threads (the caller's included) that run each CPU dispatch's workgroups: 1 runs them on the
 * calling thread alone (the synchronous driver); N > 1 starts N - 1 worker threads at the next load
 * (the threaded driver, hal/threaded_device.h), kept until the runtime is released; 0 means one per
 * physical core, which is also the initial value on hosted builds (1 on builds without threads).
 * Results are bit-identical for any count. Call it before loading modules; more than
 * IRP_MAX_THREADS, a negative count, or more than 1 on a build without threads is an error. */
irp_status_t irp_runtime_set_thread_count(irp_runtime_t* runtime, int32_t count);
int32_t irp_runtime_thread_count(const irp_runtime_t* runtime);

/* Verifies the whole module (every offset, register, branch target, executable) before returning
 * it; nothing in it is trusted afterwards. */
irp_status_t irp_module_load(irp_runtime_t* runtime, const void* data, size_t length,
                             irp_module_t** out_module);
void irp_module_release(irp_module_t* module);

/* Reflection. */
int32_t irp_module_function_count(const irp_module_t* module);
/* Returns the index of the function named `name`, or IRP_NOT_FOUND. */
irp_status_t irp_module_find_function(const irp_module_t* module, const char* name,
                                      int32_t* out_function);
const char* irp_function_name(const irp_module_t* module, int32_t function);
int32_t irp_function_input_count(const irp_module_t* module, int32_t function);
int32_t irp_function_output_count(const irp_module_t* module, int32_t function);
/* Fills dtype, rank and shape (data = NULL, length = byte size) of input/output `index`. A dynamic
 * dim is -1, and the length of a tensor with dynamic dims is 0. */
irp_status_t irp_function_input(const irp_module_t* module, int32_t function, int32_t index,
                                irp_buffer_view_t* out_view, const char** out_name);
irp_status_t irp_function_output(const irp_module_t* module, int32_t function, int32_t index,
                                 irp_buffer_view_t* out_view, const char** out_name);
/* The name of dim `axis` of input/output `index` ("batch", "seq + 1"): "" for a static or unnamed
 * dim, NULL when there is no such function, tensor or axis. */
const char* irp_function_input_dim_name(const irp_module_t* module, int32_t function, int32_t index, int32_t axis);
const char* irp_function_output_dim_name(const irp_module_t* module, int32_t function, int32_t index, int32_t axis);
/* Bytes of arena the module reserved (its memory plan). */
size_t irp_module_arena_size(const irp_module_t* module);
/* Peak memory of the latest irp_call: the arena plus the most of the pool that call used (the
 * highest end of a pool block it held; 0 before any call). */
size_t irp_module_peak_bytes(const irp_module_t* module);
/* Module state (variables a stateful model keeps across calls, docs/state.md) lives in the arena,
 * which load zeroes and calls never clear. Zeroes the whole arena: the next call starts as the
 * first call after load did. Output views of earlier calls then read zeros. */
irp_status_t irp_module_reset_state(irp_module_t* module);

/* Calls `function` with input_count inputs, checked against the signature (count, dtype, rank,
 * static dims, length == product of the dims x element size, same-named dynamic dims equal). On
 * success fills output_count views (real shapes) that point into the module's arena or pool. */
irp_status_t irp_call(irp_module_t* module, int32_t function, const irp_buffer_view_t* inputs,
                      int32_t input_count, irp_buffer_view_t* out_outputs, int32_t output_count);

/* Profiling, off by default. While on, every dispatch adds one to its entry point's count and its
 * duration to the entry point's time (nanoseconds; 0 on builds without a clock). Turning it on
 * clears the counters. Entry points are numbered over the executables this build loaded. */
void irp_module_set_profiling(irp_module_t* module, int32_t enabled);
int32_t irp_module_entry_point_count(const irp_module_t* module);
irp_status_t irp_module_entry_point_profile(const irp_module_t* module, int32_t index, const char** out_name,
                                           uint64_t* out_dispatches, uint64_t* out_nanoseconds);
/* The entry point's time as the device itself measured it while profiling was on (ns): on Vulkan,
 * timestamp queries around each dispatch, read back when the queued work has run; 0 on a device
 * that does not time its own work (the CPU drivers: their time is irp_module_entry_point_profile's). */
irp_status_t irp_module_entry_point_device_time(const irp_module_t* module, int32_t index,
                                               uint64_t* out_device_nanoseconds);

/* Tracing: the timeline of each call, for `iree-py run|benchmark --trace` (Chrome trace events).
 * irp_module_set_trace(module, max_events) allocates room for max_events dispatches per call (and
 * their threads' spans) now, so tracing allocates nothing in irp_call; 0 turns it off and frees it.
 * Each irp_call then starts a new trace: its own start and end, and one event per dispatch while
 * there is room (the rest are counted as dropped). Times are the runtime's clock, in ns. */
typedef struct irp_trace_event_t {
  uint64_t start_ns;
  uint64_t end_ns;
  int32_t entry_point;         /* as in irp_module_entry_point_profile */
  uint32_t workgroup_count[3];
  uint64_t binding_bytes;      /* bytes of its bindings (inputs, outputs, constants) */
  uint64_t pool_bytes;         /* the run-time pool's bytes in use when it ran */
  uint32_t thread_count;       /* spans it has: one per thread of the device */
} irp_trace_event_t;
irp_status_t irp_module_set_trace(irp_module_t* module, uint32_t max_events);
/* The latest call's start and end, its events kept, and events dropped for want of room. */
irp_status_t irp_module_trace_call(const irp_module_t* module, uint64_t* out_start_ns, uint64_t* out_end_ns,
                                   uint32_t* out_event_count, uint64_t* out_dropped);
irp_status_t irp_module_trace_event(const irp_module_t* module, uint32_t index, irp_trace_event_t* out_event);
/* Thread `thread` of event `index`: its first workgroup's start, last one's end, and how many it ran. */
irp_status_t irp_module_trace_thread_span(const irp_module_t* module, uint32_t index, uint32_t thread,
                                          uint64_t* out_start_ns, uint64_t* out_end_ns, uint32_t* out_workgroups);

#ifdef __cplusplus
}
#endif

#endif /* IREE_PY_RUNTIME_H_ */
