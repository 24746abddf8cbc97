#include "interp.h"

#include "../base/clock.h"

#include <inttypes.h>
#include <string.h>

#include "flatbuf.h"
#include "isa_generated.h"

/* Operand readers: each advances pc past what it read. */
#define READ_U16() (pc += 2, irp_load_u16(code + pc - 2))
#define READ_U32() (pc += 4, irp_load_u32(code + pc - 4))
#define READ_I64() (pc += 8, (int64_t)irp_load_u64(code + pc - 8))
#define READ_U8() (code[pc++])
/* Register access by operand. */
#define I64(index) (state->i64_registers[(index)])
#define REF(index) (state->ref_registers[(index)])

static irp_status_t irp_unset_ref(const irp_vm_function_t* function, size_t pc, const char* op,
                                  uint16_t index, irp_diag_t* diag) {
  (void)function, (void)pc, (void)op, (void)index;
  return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: bytecode at %zu: %s reads ref register %u, which holds no buffer",
                  function->name, pc, op, index);
}

static irp_status_t irp_dispatch(const irp_vm_module_t* module, const irp_vm_state_t* state,
                                 const irp_vm_function_t* function, size_t insn_pc, size_t* io_pc,
                                 irp_diag_t* diag) {
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
  const irp_vm_entry_point_t* entry = &executable->entry_points[entry_index];
  void* bindings[IRP_MAX_BINDINGS];
  size_t binding_lengths[IRP_MAX_BINDINGS];
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
  }
  *io_pc = pc;
  for (int axis = 0; axis < 3; ++axis) {
    if (counts[axis] < 0 || counts[axis] > (int64_t)UINT32_MAX) {
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: dispatch of '%s': workgroup count %lld on axis %d is out of range",
                      function->name, entry->name, (long long)counts[axis], axis);
    }
  }
  irp_dispatch_state_t dispatch_state = {
      .workgroup_count = {(uint32_t)counts[0], (uint32_t)counts[1], (uint32_t)counts[2]},
      .push_constant_count = push_count,
      .push_constants = push_constants,
      .bindings = bindings,
      .binding_lengths = binding_lengths,
      .binding_count = binding_count,
      .reserved = 0,
  };
  irp_kernel_fn_t kernel = executable->kernels[entry_index];
  irp_workgroup_state_t workgroup = {{0, 0, 0}, 0};
  uint64_t started = state->profile != NULL ? irp_clock_ns() : 0;
  for (uint32_t z = 0; z < dispatch_state.workgroup_count[2]; ++z) {
    for (uint32_t y = 0; y < dispatch_state.workgroup_count[1]; ++y) {
      for (uint32_t x = 0; x < dispatch_state.workgroup_count[0]; ++x) {
        workgroup.workgroup_id[0] = x;
        workgroup.workgroup_id[1] = y;
        workgroup.workgroup_id[2] = z;
        int32_t result = kernel(&dispatch_state, &workgroup);
        if (result != 0) {
          return IRP_FAIL(diag, IRP_RUNTIME_FAILURE,
                          "%s: kernel '%s' failed with code %" PRId32 " at workgroup (%" PRIu32 ", %" PRIu32 ", %" PRIu32 ")",
                          function->name, entry->name, result, x, y, z);
        }
      }
    }
  }
  if (state->profile != NULL) {
    irp_vm_entry_profile_t* slot = &state->profile[executable->first_entry_index + entry_index];
    slot->dispatches += 1;
    slot->nanoseconds += irp_clock_ns() - started;
  }
  return IRP_OK;
}

static irp_status_t irp_buffer_copy(const irp_vm_function_t* function, const irp_vm_state_t* state,
                                    size_t insn_pc, uint16_t dst, uint16_t src, irp_diag_t* diag) {
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
  memmove(to->data, from->data, from->length);
  return IRP_OK;
}

static irp_status_t irp_return(const irp_vm_function_t* function, const irp_vm_state_t* state,
                               const uint8_t* code, size_t pc, size_t insn_pc,
                               irp_vm_ref_t* out_results, irp_diag_t* diag) {
  uint8_t count = READ_U8();
  for (uint8_t i = 0; i < count; ++i) {
    uint16_t index = READ_U16();
    if (REF(index).data == NULL) return irp_unset_ref(function, insn_pc, "ret", index, diag);
    out_results[i] = REF(index);
  }
  return IRP_OK;
}

irp_status_t irp_vm_invoke(const irp_vm_module_t* module, const irp_vm_state_t* state, int32_t function_index,
                           const irp_vm_ref_t* inputs, irp_vm_ref_t* out_results, irp_diag_t* diag) {
  const irp_vm_function_t* function = &module->functions[function_index];
  const uint8_t* code = function->bytecode;
  if (function->i64_register_count > 0) {
    memset(state->i64_registers, 0, sizeof(int64_t) * function->i64_register_count);
  }
  if (function->ref_register_count > 0) {
    memset(state->ref_registers, 0, sizeof(irp_vm_ref_t) * function->ref_register_count);
  }
  for (int32_t i = 0; i < function->input_count; ++i) REF(i) = inputs[i];
  size_t pc = 0;
  for (;;) {
    size_t insn_pc = pc;
    uint8_t opcode = code[pc++];
    switch ((irp_opcode_t)opcode) {
      case IRP_OP_NOP:
        break;
      case IRP_OP_RET:
        return irp_return(function, state, code, pc, insn_pc, out_results, diag);
      case IRP_OP_FAIL: {
        int64_t fail_code = READ_I64();
        return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "%s: fail with code %lld at bytecode %zu",
                        function->name, (long long)fail_code, insn_pc);
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
      case IRP_OP_ADD_I64:
      case IRP_OP_SUB_I64:
      case IRP_OP_MUL_I64:
      case IRP_OP_CMP_EQ_I64:
      case IRP_OP_CMP_LT_I64: {
        uint16_t dst = READ_U16();
        int64_t lhs = I64(READ_U16());
        int64_t rhs = I64(READ_U16());
        /* Wrapping arithmetic through uint64_t: signed overflow would be undefined. */
        uint64_t a = (uint64_t)lhs, b = (uint64_t)rhs;
        if (opcode == IRP_OP_ADD_I64) I64(dst) = (int64_t)(a + b);
        if (opcode == IRP_OP_SUB_I64) I64(dst) = (int64_t)(a - b);
        if (opcode == IRP_OP_MUL_I64) I64(dst) = (int64_t)(a * b);
        if (opcode == IRP_OP_CMP_EQ_I64) I64(dst) = lhs == rhs;
        if (opcode == IRP_OP_CMP_LT_I64) I64(dst) = lhs < rhs;
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
        irp_vm_ref_t view = {(uint8_t*)(constant->length > 0 ? constant->data : code), constant->length,
                             true};
        REF(dst) = view;
        break;
      }
      case IRP_OP_BUFFER_COPY: {
        uint16_t dst = READ_U16();
        uint16_t src = READ_U16();
        IRP_RETURN_IF_ERROR(irp_buffer_copy(function, state, insn_pc, dst, src, diag));
        break;
      }
      case IRP_OP_DISPATCH:
        IRP_RETURN_IF_ERROR(irp_dispatch(module, state, function, insn_pc, &pc, diag));
        break;
      default:
        /* Unreachable for verified bytecode. */
        return IRP_FAIL(diag, IRP_INVALID_MODULE, "%s: unknown opcode 0x%02x at %zu", function->name,
                        opcode, insn_pc);
    }
  }
}
