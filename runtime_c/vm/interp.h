/* The bytecode interpreter. It runs only verified functions (vm/verifier.h), so it decodes
 * without bounds checks; what it still checks are run-time facts: unset refs, buffer_copy
 * lengths, binding lengths against the entry points' minimums, kernel results, division by zero
 * and overflow, `check`, i64 loads and stores inside their buffers, the call depth, and the pool
 * (space, and that buffer_free gets a block in use).
 * A `dispatch` goes to the HAL device in irp_vm_state_t (hal/device.h), which runs the workgroups;
 * a kernel that fails is reported here, naming the function and the entry point.
 * It never allocates: the registers, the arena and the device come in through irp_vm_state_t. */
#ifndef IRP_VM_INTERP_H_
#define IRP_VM_INTERP_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../hal/device.h"
#include "module.h"
#include "pool.h"

/* A ref register: a view of bytes, or unset (data == NULL). */
typedef struct irp_vm_ref_t {
  uint8_t* data;
  size_t length;
  bool read_only;
} irp_vm_ref_t;

/* What one entry point has cost since profiling was turned on. */
typedef struct irp_vm_entry_profile_t {
  uint64_t dispatches;
  uint64_t nanoseconds;        /* the runtime's clock around each dispatch call */
  uint64_t device_nanoseconds; /* what a device that times its own work reported (irp_hal_dispatch_t) */
} irp_vm_entry_profile_t;

/* One dispatch of a traced call: when it ran, what, how big, and its threads' spans
 * (irp_vm_trace_t.spans[first_span .. first_span + span_count)). */
typedef struct irp_vm_trace_event_t {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t entry_index;       /* executable->first_entry_index + entry point */
  uint32_t workgroup_count[3];
  uint64_t binding_bytes;     /* the bytes of its bindings, read or written */
  uint64_t pool_bytes;        /* the pool's bytes in use when it ran */
  uint32_t first_span;
  uint32_t span_count;
} irp_vm_trace_event_t;

/* Storage for the trace of one call, allocated when tracing is turned on: the interpreter appends
 * an event per dispatch (and thread_count spans) while there is room, and counts the rest in
 * `dropped`. */
typedef struct irp_vm_trace_t {
  irp_vm_trace_event_t* events;
  uint32_t event_capacity;
  uint32_t event_count;
  irp_hal_thread_span_t* spans;  /* event_capacity x thread_count */
  uint32_t thread_count;
  uint32_t span_count;
  uint64_t dropped;
} irp_vm_trace_t;

/* Where a `call` returns to: the caller, its register windows, and the call instruction (which
 * names the registers that receive the results). */
typedef struct irp_vm_frame_t {
  int32_t function;
  size_t call_pc;
  int64_t* i64_registers;
  irp_vm_ref_t* ref_registers;
} irp_vm_frame_t;

/* Storage for one call, sized at module load: module->call_depth x module->max_*_registers
 * registers (each active function's window follows its caller's), module->call_depth frames, and
 * module->arena_size bytes of arena. `profile` is NULL (profiling off) or
 * module->entry_point_count slots indexed by executable->first_entry_index + entry point.
 * `device` runs the dispatches (hal/device.h); it prepared the module's executables. */
typedef struct irp_vm_state_t {
  int64_t* i64_registers;
  irp_vm_ref_t* ref_registers;
  irp_vm_frame_t* frames;
  uint8_t* arena;
  irp_vm_pool_t* pool; /* buffer_alloc / buffer_free; the caller resets it before each invoke */
  irp_vm_entry_profile_t* profile;
  irp_vm_trace_t* trace; /* NULL: not tracing */
  irp_hal_device_t* device;
} irp_vm_state_t;

/* Runs module->functions[function] with its inputs (input_count == the function's input count,
 * already checked by the caller) and its i64_input_count i64 inputs, and writes the returned refs
 * to out_results (output_count) and the returned i64 values to out_i64_results (i64_output_count).
 * i64_inputs / out_i64_results may be NULL when those counts are 0. */
irp_status_t irp_vm_invoke(const irp_vm_module_t* module, const irp_vm_state_t* state, int32_t function,
                           const irp_vm_ref_t* inputs, const int64_t* i64_inputs, irp_vm_ref_t* out_results,
                           int64_t* out_i64_results, irp_diag_t* diag);

#endif /* IRP_VM_INTERP_H_ */
