#include "interp.h"

#include <inttypes.h>
#if IRP_STATUS_MESSAGES
#include <stdio.h>
#endif
#include <string.h>

#include "../base/clock.h"
#include "../base/little_endian.h"
#include "isa_generated.h"

/* Operand readers: each advances pc past what it read. */
#define READ_U16() (pc += 2, irp_load_u16(code + pc - 2))
#define READ_U32() (pc += 4, irp_load_u32(code + pc - 4))
#define READ_I64() (pc += 8, (int64_t)irp_load_u64(code + pc - 8))
#define READ_U8() (code[pc++])
/* Register access by operand, in the running function's window. */
#define I64(index) (window->i64[(index)])
#define REF(index) (window->refs[(index)])

/* The registers of the running function. */
typedef struct irp_vm_window_t {
  int64_t* i64;
  irp_vm_ref_t* refs;
} irp_vm_window_t;

static irp_status_t irp_unset_ref(const irp_vm_function_t* function, size_t pc, const char* op,
                                  uint16_t index, irp_diag_t* diag) {
  (void)function, (void)pc, (void)op, (void)index;
  return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: %s reads ref register %u, which holds no buffer",
                  function->name, pc, op, index);
}

/* " (meaning)" of a kernel status in IRP_KERNEL_STATUSES, "" for another code or without messages. */
static const char* irp_kernel_status_meaning(int32_t status) {
#if IRP_STATUS_MESSAGES
  switch (status) {
#define IRP_KERNEL_STATUS_CASE_(code, name, meaning) \
  case (code):                                       \
    return " (" meaning ")";
    IRP_KERNEL_STATUSES(IRP_KERNEL_STATUS_CASE_)
#undef IRP_KERNEL_STATUS_CASE_
    default:
      return "";
  }
#else
  (void)status;
  return "";
#endif
}

static irp_status_t irp_dispatch(const irp_vm_module_t* module, const irp_vm_state_t* state,
                                 const irp_vm_window_t* window, const irp_vm_function_t* function,
                                 size_t insn_pc, size_t* io_pc, irp_diag_t* diag) {
  const uint8_t* code = function->bytecode;
  size_t pc = *io_pc;
  uint16_t executable_index = READ_U16();
  uint16_t entry_index = READ_U16();
  int64_t counts[3];
  for (int axis = 0; axis < 3; ++axis) counts[axis] = I64(READ_U16());
  uint32_t push_constants[IRP_MAX_PUSH_CONSTANTS];
  uint8_t push_count = READ_U8();
  for (uint8_t i = 0; i < push_count; ++i) push_constants[i] = (uint32_t)I64(READ_U16());
  const irp_vm_executable_t* executable = &module->executables[executable_index];
  const irp_hal_entry_point_t* entry = &executable->hal.entry_points[entry_index];
  void* bindings[IRP_MAX_BINDINGS];
  size_t binding_lengths[IRP_MAX_BINDINGS];
  /* Which bindings are constants or caller inputs: the ref says, not the module (kernel_abi.h). */
  uint32_t read_only[(IRP_MAX_BINDINGS + 31) / 32] = {0};
  uint8_t binding_count = READ_U8();
  for (uint8_t i = 0; i < binding_count; ++i) {
    uint16_t index = READ_U16();
    const irp_vm_ref_t* ref = &REF(index);
    if (ref->data == NULL) return irp_unset_ref(function, insn_pc, "dispatch", index, diag);
    if ((uint64_t)ref->length < entry->binding_min_lengths[i]) {
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                      "%s: dispatch of '%s': binding %u is %zu bytes but the entry point needs at least %llu",
                      function->name, entry->name, i, ref->length,
                      (unsigned long long)entry->binding_min_lengths[i]);
    }
    bindings[i] = ref->data;
    binding_lengths[i] = ref->length;
    if (ref->read_only) read_only[i / 32] |= 1u << (i % 32);
  }
  *io_pc = pc;
  for (int axis = 0; axis < 3; ++axis) {
    if (counts[axis] < 0 || counts[axis] > (int64_t)UINT32_MAX) {
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: dispatch of '%s': workgroup count %lld on axis %d is out of range",
                      function->name, entry->name, (long long)counts[axis], axis);
    }
  }
  irp_vm_entry_profile_t* profile =
      state->profile != NULL ? &state->profile[executable->first_entry_index + entry_index] : NULL;
  irp_hal_dispatch_t dispatch = {
      .executable = &executable->hal,
      .entry_point = entry_index,
      .device_ns = profile != NULL ? &profile->device_nanoseconds : NULL,
      .state = {
          .workgroup_count = {(uint32_t)counts[0], (uint32_t)counts[1], (uint32_t)counts[2]},
          .push_constant_count = push_count,
          .push_constants = push_constants,
          .bindings = bindings,
          .binding_lengths = binding_lengths,
          .binding_count = binding_count,
          .reserved = 0,
          .read_only_bindings = read_only,
      },
  };
  irp_hal_kernel_failure_t failure = {IRP_KERNEL_STATUS_OK, {0, 0, 0}};
  irp_vm_trace_t* trace = state->trace;
  bool traced = trace != NULL && trace->event_count < trace->event_capacity;
  if (traced) {
    dispatch.thread_spans = &trace->spans[trace->span_count];
    dispatch.thread_span_count = trace->thread_count;
    memset(dispatch.thread_spans, 0, trace->thread_count * sizeof(irp_hal_thread_span_t));
  }
  uint64_t started = state->profile != NULL || traced ? irp_clock_ns() : 0;
  /* An empty grid runs no workgroup: a driver need not check (x = 0 would otherwise spin through
   * y x z empty rows). */
  bool empty = counts[0] == 0 || counts[1] == 0 || counts[2] == 0;
  irp_status_t status = empty ? IRP_OK : irp_hal_device_dispatch(state->device, &dispatch, &failure, diag);
  if (failure.status != IRP_KERNEL_STATUS_OK) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                    "%s: kernel '%s' failed with code %" PRId32 "%s at workgroup (%" PRIu32 ", %" PRIu32
                    ", %" PRIu32 ")",
                    function->name, entry->name, failure.status, irp_kernel_status_meaning(failure.status),
                    failure.workgroup_id[0], failure.workgroup_id[1], failure.workgroup_id[2]);
  }
  IRP_RETURN_IF_ERROR(status);
  uint64_t ended = state->profile != NULL || traced ? irp_clock_ns() : 0;
  if (profile != NULL) {
    profile->dispatches += 1;
    profile->nanoseconds += ended - started;
  }
  if (traced) {
    uint64_t bytes = irp_hal_dispatch_binding_bytes(&dispatch.state);
    irp_vm_trace_event_t* event = &trace->events[trace->event_count++];
    *event = (irp_vm_trace_event_t){started, ended, executable->first_entry_index + entry_index,
                                    {(uint32_t)counts[0], (uint32_t)counts[1], (uint32_t)counts[2]}, bytes,
                                    state->pool != NULL ? state->pool->used_bytes : 0, trace->span_count,
                                    trace->thread_count};
    trace->span_count += trace->thread_count;
  } else if (trace != NULL) {
    trace->dropped += 1;
  }
  return IRP_OK;
}

static irp_status_t irp_buffer_copy(const irp_vm_state_t* state, const irp_vm_function_t* function,
                                    const irp_vm_window_t* window, size_t insn_pc, uint16_t dst, uint16_t src,
                                    irp_diag_t* diag) {
  const irp_vm_ref_t* to = &REF(dst);
  const irp_vm_ref_t* from = &REF(src);
  if (to->data == NULL) return irp_unset_ref(function, insn_pc, "buffer_copy", dst, diag);
  if (from->data == NULL) return irp_unset_ref(function, insn_pc, "buffer_copy", src, diag);
  if (to->read_only) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: buffer_copy into read-only ref register %u",
                    function->name, insn_pc, dst);
  }
  if (to->length != from->length) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                    "%s: bytecode at %zu: buffer_copy of %zu bytes into a %zu-byte buffer",
                    function->name, insn_pc, from->length, to->length);
  }
  IRP_RETURN_IF_ERROR(irp_hal_device_synchronize(state->device, diag)); /* queued kernels write these bytes */
  memmove(to->data, from->data, from->length);
  return IRP_OK;
}

/* buffer_load_i64 / buffer_store_i64: the 8 bytes at i[offset] must lie inside the buffer. */
static irp_status_t irp_buffer_i64(const irp_vm_function_t* function, const irp_vm_window_t* window,
                                   size_t insn_pc, bool store, uint16_t ref, int64_t offset, int64_t* io_value,
                                   irp_diag_t* diag) {
  const char* op = store ? "buffer_store_i64" : "buffer_load_i64";
  const irp_vm_ref_t* buffer = &REF(ref);
  if (buffer->data == NULL) return irp_unset_ref(function, insn_pc, op, ref, diag);
  if (offset < 0 || buffer->length < 8 || (uint64_t)offset > buffer->length - 8) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: %s at byte %lld of a %zu-byte buffer",
                    function->name, insn_pc, op, (long long)offset, buffer->length);
  }
  if (store && buffer->read_only) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: buffer_store_i64 into read-only ref register %u",
                    function->name, insn_pc, ref);
  }
  uint8_t* at = buffer->data + offset;
  uint64_t bits = (uint64_t)*io_value;
  if (store) {
    for (int i = 0; i < 8; ++i) at[i] = (uint8_t)(bits >> (8 * i));
    return IRP_OK;
  }
  *io_value = (int64_t)irp_load_u64(at);
  return IRP_OK;
}

/* r[dst] = bytes [offset, offset + length) of r[src]; the range must lie inside r[src]. */
static irp_status_t irp_buffer_subview(const irp_vm_function_t* function, const irp_vm_window_t* window, size_t insn_pc,
                                       uint16_t dst, uint16_t src, int64_t offset, int64_t length, irp_diag_t* diag) {
  const irp_vm_ref_t* buffer = &REF(src);
  if (buffer->data == NULL) return irp_unset_ref(function, insn_pc, "buffer_subview", src, diag);
  if (offset < 0 || length < 0 || (uint64_t)offset > buffer->length ||
      (uint64_t)length > buffer->length - (uint64_t)offset) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                    "%s: bytecode at %zu: buffer_subview of bytes [%lld, %lld + %lld) of a %zu-byte buffer",
                    function->name, insn_pc, (long long)offset, (long long)offset, (long long)length,
                    buffer->length);
  }
  irp_vm_ref_t view = {buffer->data + offset, (size_t)length, buffer->read_only};
  REF(dst) = view;
  return IRP_OK;
}

/* The scalar ops with three i64 register operands (dst, lhs, rhs). Wrapping arithmetic goes
 * through uint64_t: signed overflow would be undefined. */
static irp_status_t irp_binary_i64(const irp_vm_function_t* function, size_t insn_pc, uint8_t opcode,
                                   int64_t lhs, int64_t rhs, int64_t* out, irp_diag_t* diag) {
  uint64_t a = (uint64_t)lhs, b = (uint64_t)rhs;
  switch (opcode) {
    case IRP_OP_ADD_I64: *out = (int64_t)(a + b); return IRP_OK;
    case IRP_OP_SUB_I64: *out = (int64_t)(a - b); return IRP_OK;
    case IRP_OP_MUL_I64: *out = (int64_t)(a * b); return IRP_OK;
    case IRP_OP_CMP_EQ_I64: *out = lhs == rhs; return IRP_OK;
    case IRP_OP_CMP_LT_I64: *out = lhs < rhs; return IRP_OK;
    case IRP_OP_CMP_LE_I64: *out = lhs <= rhs; return IRP_OK;
    case IRP_OP_CMP_NE_I64: *out = lhs != rhs; return IRP_OK;
    case IRP_OP_MIN_I64: *out = lhs < rhs ? lhs : rhs; return IRP_OK;
    case IRP_OP_MAX_I64: *out = lhs > rhs ? lhs : rhs; return IRP_OK;
    case IRP_OP_AND_I64: *out = (int64_t)(a & b); return IRP_OK;
    case IRP_OP_OR_I64: *out = (int64_t)(a | b); return IRP_OK;
    case IRP_OP_XOR_I64: *out = (int64_t)(a ^ b); return IRP_OK;
    case IRP_OP_SHL_I64: *out = (int64_t)(a << (b & 63u)); return IRP_OK;
    case IRP_OP_SHR_U_I64: *out = (int64_t)(a >> (b & 63u)); return IRP_OK;
    case IRP_OP_SHR_I64: {
      /* Arithmetic shift without relying on implementation-defined >> of negative values. */
      unsigned shift = (unsigned)(b & 63u);
      uint64_t shifted = a >> shift;
      if (lhs < 0 && shift > 0) shifted |= ~(UINT64_MAX >> shift);
      *out = (int64_t)shifted;
      return IRP_OK;
    }
    default:
      break;
  }
  /* div_i64 and rem_i64. */
  const char* op = opcode == IRP_OP_DIV_I64 ? "div_i64" : "rem_i64";
  if (rhs == 0) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: %s of %lld by zero", function->name, insn_pc,
                    op, (long long)lhs);
  }
  if (lhs == INT64_MIN && rhs == -1) {
    if (opcode == IRP_OP_REM_I64) {
      *out = 0;
      return IRP_OK;
    }
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: div_i64 of %lld by -1 overflows",
                    function->name, insn_pc, (long long)lhs);
  }
  *out = opcode == IRP_OP_DIV_I64 ? lhs / rhs : lhs % rhs;
  return IRP_OK;
}

/* The running function and everything that changes on call and return. */
typedef struct irp_vm_cursor_t {
  int32_t depth; /* frames[0..depth) are the callers */
  int32_t function_index;
  const irp_vm_function_t* function;
  const uint8_t* code;
  size_t pc;
  irp_vm_window_t window;
} irp_vm_cursor_t;

static void irp_enter(const irp_vm_module_t* module, irp_vm_cursor_t* cursor, int32_t function_index,
                      irp_vm_window_t window) {
  const irp_vm_function_t* function = &module->functions[function_index];
  cursor->function_index = function_index;
  cursor->function = function;
  cursor->code = function->bytecode;
  cursor->pc = 0;
  cursor->window = window;
  if (function->i64_register_count > 0) memset(window.i64, 0, sizeof(int64_t) * function->i64_register_count);
  if (function->ref_register_count > 0) {
    memset(window.refs, 0, sizeof(irp_vm_ref_t) * function->ref_register_count);
  }
}

/* `call`: the callee's window follows the caller's; arguments are copied into its registers 0..n-1. */
static irp_status_t irp_vm_call(const irp_vm_module_t* module, const irp_vm_state_t* state, irp_vm_cursor_t* cursor,
                             size_t insn_pc, irp_diag_t* diag) {
  const irp_vm_function_t* function = cursor->function;
  const irp_vm_window_t* window = &cursor->window;
  const uint8_t* code = cursor->code;
  size_t pc = cursor->pc;
  uint16_t callee_index = READ_U16();
  const irp_vm_function_t* callee = &module->functions[callee_index];
  if ((uint32_t)cursor->depth + 1 >= module->call_depth) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                    "%s: bytecode at %zu: call of '%s' is deeper than the %" PRIu32 " calls this runtime allows (IRP_MAX_CALL_DEPTH)",
                    function->name, insn_pc, callee->name, module->call_depth);
  }
  /* A module with no registers of a kind has no storage for them (NULL): NULL + 0 is undefined. */
  irp_vm_window_t callee_window = {window->i64 != NULL ? window->i64 + function->i64_register_count : NULL,
                                   window->refs != NULL ? window->refs + function->ref_register_count : NULL};
  /* Zero the callee's registers first: arguments are read from the caller's, which do not overlap. */
  irp_vm_frame_t frame = {cursor->function_index, insn_pc, window->i64, window->refs};
  irp_vm_window_t caller_window = *window;
  irp_enter(module, cursor, callee_index, callee_window);
  window = &caller_window;
  uint8_t i64_count = READ_U8();
  for (uint8_t i = 0; i < i64_count; ++i) callee_window.i64[i] = I64(READ_U16());
  uint8_t ref_count = READ_U8();
  for (uint8_t i = 0; i < ref_count; ++i) {
    uint16_t index = READ_U16();
    if (REF(index).data == NULL) return irp_unset_ref(function, insn_pc, "call", index, diag);
    callee_window.refs[i] = REF(index);
  }
  state->frames[cursor->depth++] = frame;
  return IRP_OK;
}

/* `ret` or `ret_i64` in a called function: copy the results into the registers the call names,
 * then continue the caller after its call. */
static irp_status_t irp_return_to_caller(const irp_vm_module_t* module, const irp_vm_state_t* state,
                                         irp_vm_cursor_t* cursor, uint8_t opcode, size_t insn_pc,
                                         irp_diag_t* diag) {
  const irp_vm_function_t* function = cursor->function;
  const irp_vm_window_t* window = &cursor->window;
  const uint8_t* code = cursor->code;
  size_t pc = cursor->pc;
  const irp_vm_frame_t* frame = &state->frames[cursor->depth - 1];
  const irp_vm_function_t* caller = &module->functions[frame->function];
  /* The call's operands: callee, i64 args, ref args, i64 results, ref results. */
  size_t at = frame->call_pc + 3;
  at += 1 + 2 * (size_t)caller->bytecode[at];
  at += 1 + 2 * (size_t)caller->bytecode[at];
  const uint8_t* i64_dst = caller->bytecode + at + 1;
  const uint8_t* ref_dst = i64_dst + 2 * (size_t)caller->bytecode[at] + 1;
  uint8_t i64_count = opcode == IRP_OP_RET_I64 ? READ_U8() : 0;
  for (uint8_t i = 0; i < i64_count; ++i) {
    frame->i64_registers[irp_load_u16(i64_dst + 2 * (size_t)i)] = I64(READ_U16());
  }
  uint8_t ref_count = READ_U8();
  for (uint8_t i = 0; i < ref_count; ++i) {
    uint16_t index = READ_U16();
    if (REF(index).data == NULL) return irp_unset_ref(function, insn_pc, "ret", index, diag);
    frame->ref_registers[irp_load_u16(ref_dst + 2 * (size_t)i)] = REF(index);
  }
  irp_vm_window_t caller_window = {frame->i64_registers, frame->ref_registers};
  cursor->depth -= 1;
  cursor->function_index = frame->function;
  cursor->function = caller;
  cursor->code = caller->bytecode;
  cursor->window = caller_window;
  cursor->pc = (size_t)(ref_dst - caller->bytecode) + 2 * (size_t)ref_dst[-1];
  return IRP_OK;
}

/* `ret` or `ret_i64` of the function the API called. */
static irp_status_t irp_return(const irp_vm_function_t* function, const irp_vm_window_t* window,
                               const uint8_t* code, size_t pc, size_t insn_pc, uint8_t opcode,
                               irp_vm_ref_t* out_results, int64_t* out_i64_results, irp_diag_t* diag) {
  uint8_t i64_count = opcode == IRP_OP_RET_I64 ? READ_U8() : 0; /* == i64_output_count: verified */
  for (uint8_t i = 0; i < i64_count; ++i) out_i64_results[i] = I64(READ_U16());
  uint8_t count = READ_U8();
  for (uint8_t i = 0; i < count; ++i) {
    uint16_t index = READ_U16();
    if (REF(index).data == NULL) return irp_unset_ref(function, insn_pc, "ret", index, diag);
    out_results[i] = REF(index);
  }
  return IRP_OK;
}

/* buffer_alloc: r[dst] = a pool block of `length` bytes. */
static irp_status_t irp_buffer_alloc(const irp_vm_function_t* function, const irp_vm_window_t* window,
                                     irp_vm_pool_t* pool, size_t insn_pc, uint16_t dst, int64_t length,
                                     irp_diag_t* diag) {
  if (length < 0) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: buffer_alloc of %lld bytes (negative)",
                    function->name, insn_pc, (long long)length);
  }
  uint8_t* data = irp_vm_pool_alloc(pool, (uint64_t)length);
  if (data == NULL) {
    return IRP_FAIL(diag, IRP_OUT_OF_MEMORY,
                    "%s: bytecode at %zu: buffer_alloc of %lld bytes does not fit the %llu-byte pool "
                    "(%llu bytes free, %" PRIu32 " of %d blocks)",
                    function->name, insn_pc, (long long)length, (unsigned long long)pool->size,
                    (unsigned long long)(pool->size - pool->used_bytes), pool->block_count, IRP_POOL_MAX_BLOCKS);
  }
  irp_vm_ref_t view = {data, (size_t)length, false};
  REF(dst) = view;
  return IRP_OK;
}

/* buffer_free: r[src] must be a pool block in use. */
static irp_status_t irp_buffer_free(const irp_vm_function_t* function, const irp_vm_window_t* window,
                                    irp_vm_pool_t* pool, size_t insn_pc, uint16_t src, irp_diag_t* diag) {
  const irp_vm_ref_t* buffer = &REF(src);
  if (buffer->data == NULL) return irp_unset_ref(function, insn_pc, "buffer_free", src, diag);
  irp_vm_pool_free_result_t result = irp_vm_pool_free(pool, buffer->data, buffer->length);
  if (result == IRP_VM_POOL_NOT_A_BLOCK) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                    "%s: bytecode at %zu: buffer_free of ref register %u, which is not a block buffer_alloc returned",
                    function->name, insn_pc, src);
  }
  if (result == IRP_VM_POOL_ALREADY_FREE) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                    "%s: bytecode at %zu: buffer_free of ref register %u, a pool block already freed",
                    function->name, insn_pc, src);
  }
  return IRP_OK;
}

/* The module message a check/fail code names, or NULL. */
static const char* irp_module_message(const irp_vm_module_t* module, int64_t code) {
  if (code < IRP_VM_MESSAGE_CODE_BASE || code - IRP_VM_MESSAGE_CODE_BASE >= (int64_t)module->message_count) {
    return NULL;
  }
  return module->messages[code - IRP_VM_MESSAGE_CODE_BASE];
}

/* The error of a failed check_dims: its message with each 0x1f byte replaced by the value of the
 * next register of the list (u16 indices) at value_registers. */
static irp_status_t irp_failed_dim_check(const irp_vm_module_t* module, const irp_vm_function_t* function,
                                         const irp_vm_window_t* window, int64_t check_code,
                                         const uint8_t* value_registers, uint8_t value_count, size_t insn_pc,
                                         irp_diag_t* diag) {
  const char* message = irp_module_message(module, check_code);
  if (message == NULL) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: check failed with code %lld at bytecode %zu", function->name,
                    (long long)check_code, insn_pc);
  }
#if IRP_STATUS_MESSAGES
  char text[IRP_MAX_MESSAGE_LENGTH];
  size_t used = 0;
  uint8_t next = 0;
  for (const char* c = message; *c != '\0' && used + 1 < sizeof text; ++c) {
    if (*c == '\x1f' && next < value_count) {
      int64_t value = I64(irp_load_u16(value_registers + 2 * (size_t)next++));
      int written = snprintf(text + used, sizeof text - used, "%lld", (long long)value);
      if (written < 0) break;
      used += (size_t)written < sizeof text - used ? (size_t)written : sizeof text - used - 1;
    } else {
      text[used++] = *c;
    }
  }
  text[used] = '\0';
  return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "model check failed: %s", text);
#else
  (void)window, (void)value_registers, (void)value_count;
  return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "model check failed: %s", message);
#endif
}

/* Executes one instruction that neither calls nor returns. */
static irp_status_t irp_step(const irp_vm_module_t* module, const irp_vm_state_t* state, irp_vm_cursor_t* cursor,
                             uint8_t opcode, size_t insn_pc, irp_diag_t* diag) {
  const irp_vm_function_t* function = cursor->function;
  const irp_vm_window_t* window = &cursor->window;
  const uint8_t* code = cursor->code;
  size_t pc = cursor->pc;
  switch ((irp_opcode_t)opcode) {
    case IRP_OP_NOP:
      break;
    case IRP_OP_FAIL: {
      int64_t fail_code = READ_I64();
      const char* message = irp_module_message(module, fail_code);
      if (message != NULL) return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "model check failed: %s", message);
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: fail with code %lld at bytecode %zu", function->name,
                      (long long)fail_code, insn_pc);
    }
    case IRP_OP_CHECK: {
      int64_t cond = I64(READ_U16());
      int64_t check_code = READ_I64();
      if (cond == 0) {
        const char* message = irp_module_message(module, check_code);
        if (message != NULL) return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "model check failed: %s", message);
        return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: check failed with code %lld at bytecode %zu",
                        function->name, (long long)check_code, insn_pc);
      }
      break;
    }
    case IRP_OP_CHECK_DIMS: {
      int64_t cond = I64(READ_U16());
      int64_t check_code = READ_I64();
      uint8_t value_count = READ_U8();
      const uint8_t* value_registers = code + pc;
      pc += 2 * (size_t)value_count;
      if (cond == 0) {
        return irp_failed_dim_check(module, function, window, check_code, value_registers, value_count, insn_pc,
                                    diag);
      }
      break;
    }
    case IRP_OP_BR:
      pc = READ_U32();
      break;
    case IRP_OP_COND_BR: {
      int64_t cond = I64(READ_U16());
      uint32_t if_true = READ_U32();
      uint32_t if_false = READ_U32();
      pc = cond != 0 ? if_true : if_false;
      break;
    }
    case IRP_OP_CONST_I64: {
      uint16_t dst = READ_U16();
      I64(dst) = READ_I64();
      break;
    }
    case IRP_OP_SELECT_I64: {
      uint16_t dst = READ_U16();
      int64_t cond = I64(READ_U16());
      int64_t if_true = I64(READ_U16());
      int64_t if_false = I64(READ_U16());
      I64(dst) = cond != 0 ? if_true : if_false;
      break;
    }
    case IRP_OP_ADD_I64: case IRP_OP_SUB_I64: case IRP_OP_MUL_I64: case IRP_OP_CMP_EQ_I64:
    case IRP_OP_CMP_LT_I64: case IRP_OP_CMP_LE_I64: case IRP_OP_CMP_NE_I64: case IRP_OP_DIV_I64:
    case IRP_OP_REM_I64: case IRP_OP_MIN_I64: case IRP_OP_MAX_I64: case IRP_OP_AND_I64: case IRP_OP_OR_I64:
    case IRP_OP_XOR_I64: case IRP_OP_SHL_I64: case IRP_OP_SHR_I64: case IRP_OP_SHR_U_I64: {
      uint16_t dst = READ_U16();
      int64_t lhs = I64(READ_U16());
      int64_t rhs = I64(READ_U16());
      IRP_RETURN_IF_ERROR(irp_binary_i64(function, insn_pc, opcode, lhs, rhs, &I64(dst), diag));
      break;
    }
    case IRP_OP_BUFFER_ARENA: {
      uint16_t dst = READ_U16();
      int64_t offset = READ_I64();
      int64_t length = READ_I64();
      irp_vm_ref_t view = {state->arena + offset, (size_t)length, false};
      REF(dst) = view;
      break;
    }
    case IRP_OP_BUFFER_CONSTANT: {
      uint16_t dst = READ_U16();
      const irp_vm_constant_t* constant = &module->constants[READ_U32()];
      /* A zero-length constant still needs a non-NULL pointer to count as set. */
      irp_vm_ref_t view = {(uint8_t*)(constant->length > 0 ? constant->data : code), constant->length, true};
      REF(dst) = view;
      break;
    }
    case IRP_OP_BUFFER_COPY: {
      uint16_t dst = READ_U16();
      uint16_t src = READ_U16();
      IRP_RETURN_IF_ERROR(irp_buffer_copy(state, function, window, insn_pc, dst, src, diag));
      break;
    }
    case IRP_OP_BUFFER_LOAD_I64: {
      uint16_t dst = READ_U16();
      uint16_t src = READ_U16();
      int64_t offset = I64(READ_U16());
      IRP_RETURN_IF_ERROR(irp_hal_device_synchronize(state->device, diag)); /* the host reads kernel results */
      IRP_RETURN_IF_ERROR(irp_buffer_i64(function, window, insn_pc, false, src, offset, &I64(dst), diag));
      break;
    }
    case IRP_OP_BUFFER_STORE_I64: {
      uint16_t dst = READ_U16();
      int64_t offset = I64(READ_U16());
      int64_t value = I64(READ_U16());
      IRP_RETURN_IF_ERROR(irp_hal_device_synchronize(state->device, diag));
      IRP_RETURN_IF_ERROR(irp_buffer_i64(function, window, insn_pc, true, dst, offset, &value, diag));
      break;
    }
    case IRP_OP_BUFFER_LENGTH: {
      uint16_t dst = READ_U16();
      uint16_t src = READ_U16();
      if (REF(src).data == NULL) return irp_unset_ref(function, insn_pc, "buffer_length", src, diag);
      I64(dst) = (int64_t)REF(src).length;
      break;
    }
    case IRP_OP_BUFFER_SUBVIEW: {
      uint16_t dst = READ_U16();
      uint16_t src = READ_U16();
      int64_t offset = I64(READ_U16());
      int64_t length = I64(READ_U16());
      IRP_RETURN_IF_ERROR(irp_buffer_subview(function, window, insn_pc, dst, src, offset, length, diag));
      break;
    }
    case IRP_OP_BUFFER_ALLOC: {
      uint16_t dst = READ_U16();
      int64_t length = I64(READ_U16());
      IRP_RETURN_IF_ERROR(irp_buffer_alloc(function, window, state->pool, insn_pc, dst, length, diag));
      break;
    }
    case IRP_OP_BUFFER_FREE: {
      uint16_t src = READ_U16();
      IRP_RETURN_IF_ERROR(irp_buffer_free(function, window, state->pool, insn_pc, src, diag));
      break;
    }
    case IRP_OP_DISPATCH:
      IRP_RETURN_IF_ERROR(irp_dispatch(module, state, window, function, insn_pc, &pc, diag));
      break;
    default:
      /* Unreachable for verified bytecode. */
      return IRP_FAIL(diag, IRP_INVALID_MODULE, "%s: unknown opcode 0x%02x at %zu", function->name, opcode,
                      insn_pc);
  }
  cursor->pc = pc;
  return IRP_OK;
}

irp_status_t irp_vm_invoke(const irp_vm_module_t* module, const irp_vm_state_t* state, int32_t function_index,
                           const irp_vm_ref_t* inputs, const int64_t* i64_inputs, irp_vm_ref_t* out_results,
                           int64_t* out_i64_results, irp_diag_t* diag) {
  irp_vm_cursor_t cursor;
  irp_vm_window_t root = {state->i64_registers, state->ref_registers};
  cursor.depth = 0;
  irp_enter(module, &cursor, function_index, root);
  for (int32_t i = 0; i < cursor.function->input_count; ++i) root.refs[i] = inputs[i];
  for (uint16_t i = 0; i < cursor.function->i64_input_count; ++i) root.i64[i] = i64_inputs[i];
  uint64_t steps = 0;
  for (;;) {
    size_t insn_pc = cursor.pc;
    if (IRP_MAX_CALL_STEPS > 0 && ++steps > (uint64_t)IRP_MAX_CALL_STEPS) {
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: the call ran more than %llu instructions (IRP_MAX_CALL_STEPS)",
                      cursor.function->name, insn_pc, (unsigned long long)IRP_MAX_CALL_STEPS);
    }
    uint8_t opcode = cursor.code[cursor.pc++];
    if (opcode == IRP_OP_CALL) {
      IRP_RETURN_IF_ERROR(irp_vm_call(module, state, &cursor, insn_pc, diag));
      continue;
    }
    if (opcode != IRP_OP_RET && opcode != IRP_OP_RET_I64) {
      IRP_RETURN_IF_ERROR(irp_step(module, state, &cursor, opcode, insn_pc, diag));
      continue;
    }
    if (cursor.depth == 0) {
      return irp_return(cursor.function, &cursor.window, cursor.code, cursor.pc, insn_pc, opcode, out_results,
                        out_i64_results, diag);
    }
    IRP_RETURN_IF_ERROR(irp_return_to_caller(module, state, &cursor, opcode, insn_pc, diag));
  }
}
