/* The module loader and verifier: reads a .vmfb (flatbuffers/module.fbs) once, checks all of it,
 * and fills plain C structs that the interpreter then trusts.
 *
 * Ownership: strings, bytecode, constants and kernel code point into the caller's module bytes,
 * which must outlive the module. Arrays (functions, signatures, entry points) are allocated from
 * the allocator given to irp_vm_module_load and freed by irp_vm_module_free. */
#ifndef IRP_VM_MODULE_H_
#define IRP_VM_MODULE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/status.h"
#include "../hal/executable.h"

/* A dim of IRP_VM_DYNAMIC_DIM is dynamic: its value comes with each call (inputs) or from the
 * function's i64 results (outputs). */
#define IRP_VM_DYNAMIC_DIM (-1)

typedef struct irp_vm_tensor_sig_t {
  const char* name;
  irp_dtype_t dtype;
  int32_t rank;
  int64_t shape[IRP_MAX_RANK];
  const char* dim_names[IRP_MAX_RANK]; /* "" for a static dim or when the module names none */
  int32_t dynamic_count;               /* dims that are IRP_VM_DYNAMIC_DIM */
  size_t element_size;
  /* product of the static dims x element size (checked for overflow): the byte size when
   * dynamic_count == 0 */
  size_t byte_length;
} irp_vm_tensor_sig_t;

typedef struct irp_vm_function_t {
  const char* name;
  bool exported;
  int32_t input_count;
  int32_t output_count;
  irp_vm_tensor_sig_t* inputs;
  irp_vm_tensor_sig_t* outputs;
  uint16_t i64_register_count;
  uint16_t ref_register_count;
  /* passed by `call` in i64 registers 0..n-1; for exported functions, the inputs' dynamic dims */
  uint16_t i64_input_count;
  uint16_t i64_output_count; /* returned by `ret_i64`; for exported functions, the outputs' dynamic dims */
  const uint8_t* bytecode;
  size_t bytecode_length;
} irp_vm_function_t;

typedef struct irp_vm_constant_t {
  const uint8_t* data;
  size_t length;
} irp_vm_constant_t;

/* An executable for this build's architecture: its code and entry points as the HAL prepares and
 * dispatches them, and where its entry points start in the module's numbering. */
typedef struct irp_vm_executable_t {
  irp_hal_executable_t hal;
  uint32_t first_entry_index; /* of its entry points among all loaded ones (profiling slots) */
} irp_vm_executable_t;

typedef struct irp_vm_module_t {
  const char* name;
  int32_t function_count;
  irp_vm_function_t* functions;
  uint32_t constant_count;
  irp_vm_constant_t* constants;
  /* The architecture the module was loaded for: this build's CPU (IRP_ARCH_NAME) or the device's
   * ("spirv" for a Vulkan device: irp_vm_module_load_for_arch). */
  const char* arch;
  /* Only the executables whose arch is `arch`, in module order: the `executable` operand of
   * `dispatch` indexes this list (in a single-architecture module that is the module's list). */
  uint32_t executable_count;
  irp_vm_executable_t* executables;
  uint32_t entry_point_count; /* over the loaded executables */
  uint64_t arena_size;
  uint64_t pool_size; /* bytes of the pool buffer_alloc takes from (vm/pool.h) */
  /* Module.messages: the texts of `check`/`fail` codes IRP_VM_MESSAGE_CODE_BASE + i. */
  uint32_t message_count;
  const char** messages;
  uint16_t max_i64_registers; /* over all functions */
  uint16_t max_ref_registers;
  /* Register windows a call needs (1 without `call`; IRP_MAX_CALL_DEPTH when recursive or deeper):
   * the interpreter's state holds call_depth x max_*_registers registers and call_depth frames. */
  uint32_t call_depth;
} irp_vm_module_t;

/* A `check` or `fail` code in [IRP_VM_MESSAGE_CODE_BASE, + message_count) names a module message. */
#define IRP_VM_MESSAGE_CODE_BASE 0x10000

/* Loads and verifies, keeping the executables for this build's CPU (IRP_ARCH_NAME); on failure
 * frees what it built and leaves *out_module zeroed. */
irp_status_t irp_vm_module_load(const irp_allocator_t* allocator, const uint8_t* data, size_t length,
                                irp_diag_t* diag, irp_vm_module_t* out_module);
/* The same, keeping the executables whose arch is `arch` (a static string: the device's). */
irp_status_t irp_vm_module_load_for_arch(const irp_allocator_t* allocator, const uint8_t* data, size_t length,
                                         const char* arch, irp_diag_t* diag, irp_vm_module_t* out_module);
void irp_vm_module_free(const irp_allocator_t* allocator, irp_vm_module_t* module);

/* Size in bytes of one element of dtype (0 for an unknown dtype). */
size_t irp_dtype_size(uint32_t dtype);

#endif /* IRP_VM_MODULE_H_ */
