#include "verifier.h"

#include <inttypes.h>
#include <string.h>

#include "../base/allocator.h"
#include "../base/little_endian.h"
#include "isa_generated.h"

static const irp_op_info_t irp_op_info[256] = {IRP_VM_OP_INFO_TABLE};

/* One decoded instruction; list operands keep their position and count. */
typedef struct irp_insn_t {
  uint8_t opcode;
  size_t pc;
  size_t next;
  uint64_t value[IRP_VM_MAX_OPERANDS];
  size_t list_pos[IRP_VM_MAX_OPERANDS];
} irp_insn_t;

typedef struct irp_verify_ctx_t {
  const irp_vm_module_t* module;
  const irp_vm_function_t* function;
  irp_diag_t* diag;
} irp_verify_ctx_t;

static irp_status_t irp_fail_at(const irp_verify_ctx_t* ctx, size_t pc, const char* detail) {
  (void)detail;
  return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "%s: bytecode at %zu: %s", ctx->function->name, pc,
                  detail);
}

static irp_status_t irp_check_register(const irp_verify_ctx_t* ctx, const irp_insn_t* insn,
                                       unsigned kind, uint64_t index) {
  uint16_t count = kind == IRP_OPERAND_RI || kind == IRP_OPERAND_LIST_RI
                       ? ctx->function->i64_register_count
                       : ctx->function->ref_register_count;
  if (index < count) return IRP_OK;
  return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                  "%s: bytecode at %zu: %s uses %s register %llu but the function has %u",
                  ctx->function->name, insn->pc, irp_op_info[insn->opcode].name,
                  (kind == IRP_OPERAND_RI || kind == IRP_OPERAND_LIST_RI) ? "i64" : "ref",
                  (unsigned long long)index, count);
}

/* Decodes the instruction at pc with bounds checks and checks its register operands. */
static irp_status_t irp_decode(const irp_verify_ctx_t* ctx, size_t pc, irp_insn_t* out_insn) {
  const uint8_t* code = ctx->function->bytecode;
  size_t length = ctx->function->bytecode_length;
  memset(out_insn, 0, sizeof(*out_insn));
  out_insn->pc = pc;
  out_insn->opcode = code[pc];
  const irp_op_info_t* info = &irp_op_info[code[pc]];
  if (info->name == NULL) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "%s: bytecode at %zu: unknown opcode 0x%02x",
                    ctx->function->name, pc, code[pc]);
  }
  size_t at = pc + 1;
  for (unsigned i = 0; i < info->operand_count; ++i) {
    unsigned kind = info->operands[i];
    size_t width = kind == IRP_OPERAND_IMM64 ? 8
                   : (kind == IRP_OPERAND_U32 || kind == IRP_OPERAND_TARGET) ? 4
                   : (kind == IRP_OPERAND_LIST_RI || kind == IRP_OPERAND_LIST_RR) ? 1 : 2;
    if (width > length - at) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "%s: bytecode at %zu: %s operand %u runs past the end",
                      ctx->function->name, pc, info->name, i);
    }
    if (kind == IRP_OPERAND_LIST_RI || kind == IRP_OPERAND_LIST_RR) {
      size_t count = code[at];
      if (2 * count > length - at - 1) {
        return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                        "%s: bytecode at %zu: %s register list of %zu runs past the end",
                        ctx->function->name, pc, info->name, count);
      }
      out_insn->value[i] = count;
      out_insn->list_pos[i] = at + 1;
      for (size_t j = 0; j < count; ++j) {
        IRP_RETURN_IF_ERROR(irp_check_register(ctx, out_insn, kind, irp_load_u16(code + at + 1 + 2 * j)));
      }
      at += 1 + 2 * count;
      continue;
    }
    out_insn->value[i] = width == 8 ? irp_load_u64(code + at)
                         : width == 4 ? irp_load_u32(code + at) : irp_load_u16(code + at);
    if (kind == IRP_OPERAND_RI || kind == IRP_OPERAND_RR) {
      IRP_RETURN_IF_ERROR(irp_check_register(ctx, out_insn, kind, out_insn->value[i]));
    }
    at += width;
  }
  out_insn->next = at;
  return IRP_OK;
}

static irp_status_t irp_check_arena(const irp_verify_ctx_t* ctx, const irp_insn_t* insn) {
  int64_t offset = (int64_t)insn->value[1];
  int64_t length = (int64_t)insn->value[2];
  uint64_t arena = ctx->module->arena_size;
  if (offset < 0 || length < 0 || (uint64_t)offset > arena || (uint64_t)length > arena - (uint64_t)offset) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "%s: bytecode at %zu: buffer_arena [%lld, +%lld) is outside the %llu-byte arena",
                    ctx->function->name, insn->pc, (long long)offset, (long long)length,
                    (unsigned long long)arena);
  }
  return IRP_OK;
}

static irp_status_t irp_check_dispatch(const irp_verify_ctx_t* ctx, const irp_insn_t* insn) {
  uint64_t executable_index = insn->value[0], entry_index = insn->value[1];
  if (executable_index >= ctx->module->executable_count) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "%s: bytecode at %zu: dispatch of executable %llu but the module has %" PRIu32 " for %s",
                    ctx->function->name, insn->pc, (unsigned long long)executable_index,
                    ctx->module->executable_count, ctx->module->arch);
  }
  const irp_hal_executable_t* executable = &ctx->module->executables[executable_index].hal;
  if (entry_index >= executable->entry_point_count) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "%s: bytecode at %zu: dispatch of entry point %llu but executable %llu has %" PRIu32,
                    ctx->function->name, insn->pc, (unsigned long long)entry_index,
                    (unsigned long long)executable_index, executable->entry_point_count);
  }
  const irp_hal_entry_point_t* entry = &executable->entry_points[entry_index];
  if (insn->value[5] != entry->push_constant_count) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "%s: bytecode at %zu: dispatch of '%s' passes %llu push constants, the entry point takes %u",
                    ctx->function->name, insn->pc, entry->name, (unsigned long long)insn->value[5],
                    entry->push_constant_count);
  }
  if (insn->value[6] != entry->binding_count) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "%s: bytecode at %zu: dispatch of '%s' passes %llu bindings, the entry point takes %u",
                    ctx->function->name, insn->pc, entry->name, (unsigned long long)insn->value[6],
                    entry->binding_count);
  }
  return IRP_OK;
}

/* One list count of a call or return against what the signature says. */
static irp_status_t irp_check_count(const irp_verify_ctx_t* ctx, const irp_insn_t* insn, const char* callee,
                                    const char* what, uint64_t got, uint64_t expected) {
  if (got == expected) return IRP_OK;
  return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "%s: bytecode at %zu: %s%s%s passes %llu %s, expected %llu",
                  ctx->function->name, insn->pc, irp_op_info[insn->opcode].name, callee[0] ? " of " : "",
                  callee, (unsigned long long)got, what, (unsigned long long)expected);
}

static irp_status_t irp_check_call(const irp_verify_ctx_t* ctx, const irp_insn_t* insn) {
  uint64_t callee_index = insn->value[0];
  if (callee_index >= (uint64_t)ctx->module->function_count) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "%s: bytecode at %zu: call of function %llu but the module has %" PRId32,
                    ctx->function->name, insn->pc, (unsigned long long)callee_index, ctx->module->function_count);
  }
  const irp_vm_function_t* callee = &ctx->module->functions[callee_index];
  IRP_RETURN_IF_ERROR(irp_check_count(ctx, insn, callee->name, "i64 arguments", insn->value[1],
                                      callee->i64_input_count));
  IRP_RETURN_IF_ERROR(irp_check_count(ctx, insn, callee->name, "buffer arguments", insn->value[2],
                                      (uint64_t)callee->input_count));
  IRP_RETURN_IF_ERROR(irp_check_count(ctx, insn, callee->name, "i64 results", insn->value[3],
                                      callee->i64_output_count));
  return irp_check_count(ctx, insn, callee->name, "buffer results", insn->value[4],
                         (uint64_t)callee->output_count);
}

/* Checks what the operand table alone cannot: indices into module tables and sizes. */
static irp_status_t irp_check_semantics(const irp_verify_ctx_t* ctx, const irp_insn_t* insn) {
  switch (insn->opcode) {
    case IRP_OP_RET:
      if (ctx->function->i64_output_count != 0) {
        return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                        "%s: bytecode at %zu: ret in a function with %u i64 outputs (use ret_i64)",
                        ctx->function->name, insn->pc, ctx->function->i64_output_count);
      }
      if (insn->value[0] != (uint64_t)ctx->function->output_count) {
        return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                        "%s: bytecode at %zu: ret returns %llu values but the function has %" PRId32 " outputs",
                        ctx->function->name, insn->pc, (unsigned long long)insn->value[0],
                        ctx->function->output_count);
      }
      return IRP_OK;
    case IRP_OP_RET_I64:
      IRP_RETURN_IF_ERROR(irp_check_count(ctx, insn, "", "i64 results", insn->value[0],
                                          ctx->function->i64_output_count));
      return irp_check_count(ctx, insn, "", "buffer results", insn->value[1],
                             (uint64_t)ctx->function->output_count);
    case IRP_OP_CALL:
      return irp_check_call(ctx, insn);
    case IRP_OP_BUFFER_ARENA:
      return irp_check_arena(ctx, insn);
    case IRP_OP_BUFFER_CONSTANT:
      if (insn->value[1] >= ctx->module->constant_count) {
        return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                        "%s: bytecode at %zu: buffer_constant %llu but the module has %" PRIu32 " constants",
                        ctx->function->name, insn->pc, (unsigned long long)insn->value[1],
                        ctx->module->constant_count);
      }
      return IRP_OK;
    case IRP_OP_DISPATCH:
      return irp_check_dispatch(ctx, insn);
    default:
      return IRP_OK;
  }
}

static irp_status_t irp_check_target(const irp_verify_ctx_t* ctx, const irp_insn_t* insn,
                                     const uint8_t* starts, uint64_t target) {
  if (target < ctx->function->bytecode_length && starts[target]) return IRP_OK;
  return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                  "%s: bytecode at %zu: %s target %llu is not the start of an instruction",
                  ctx->function->name, insn->pc, irp_op_info[insn->opcode].name,
                  (unsigned long long)target);
}

static irp_status_t irp_verify_with_map(const irp_verify_ctx_t* ctx, uint8_t* starts) {
  size_t length = ctx->function->bytecode_length;
  irp_insn_t insn;
  bool last_is_terminator = false;
  /* Pass 1: decode everything, mark instruction starts. */
  for (size_t pc = 0; pc < length; pc = insn.next) {
    IRP_RETURN_IF_ERROR(irp_decode(ctx, pc, &insn));
    IRP_RETURN_IF_ERROR(irp_check_semantics(ctx, &insn));
    starts[pc] = 1;
    last_is_terminator = irp_op_info[insn.opcode].is_terminator != 0;
  }
  if (!last_is_terminator) {
    return irp_fail_at(ctx, length, "the last instruction is not a terminator (ret, fail, br, cond_br)");
  }
  /* Pass 2: branch targets land on instruction starts. */
  for (size_t pc = 0; pc < length; pc = insn.next) {
    IRP_RETURN_IF_ERROR(irp_decode(ctx, pc, &insn));
    const irp_op_info_t* info = &irp_op_info[insn.opcode];
    for (unsigned i = 0; i < info->operand_count; ++i) {
      if (info->operands[i] != IRP_OPERAND_TARGET) continue;
      IRP_RETURN_IF_ERROR(irp_check_target(ctx, &insn, starts, insn.value[i]));
    }
  }
  return IRP_OK;
}

irp_status_t irp_vm_verify_function(const irp_allocator_t* allocator, const irp_vm_module_t* module,
                                    const irp_vm_function_t* function, irp_diag_t* diag) {
  irp_verify_ctx_t ctx = {module, function, diag};
  if (function->bytecode_length == 0) {
    return irp_fail_at(&ctx, 0, "the bytecode is empty (it must end with a terminator)");
  }
  uint8_t* starts = NULL;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, function->bytecode_length, 1, 8, diag, (void**)&starts));
  irp_status_t status = irp_verify_with_map(&ctx, starts);
  irp_free(allocator, starts);
  return status;
}

/* Size of the verified instruction at pc: the decoder's walk without its checks. */
static size_t irp_insn_size(const uint8_t* code, size_t pc) {
  const irp_op_info_t* info = &irp_op_info[code[pc]];
  size_t at = pc + 1;
  for (unsigned i = 0; i < info->operand_count; ++i) {
    unsigned kind = info->operands[i];
    if (kind == IRP_OPERAND_LIST_RI || kind == IRP_OPERAND_LIST_RR) at += 1 + 2 * (size_t)code[at];
    else if (kind == IRP_OPERAND_IMM64) at += 8;
    else if (kind == IRP_OPERAND_U32 || kind == IRP_OPERAND_TARGET) at += 4;
    else at += 2;
  }
  return at - pc;
}

/* A function on the depth-first walk of the call graph: where its scan for calls stands and the
 * depth of its deepest callee so far, plus one. */
typedef struct irp_call_walk_t {
  int32_t function;
  uint32_t depth;
  size_t pc;
} irp_call_walk_t;

#define IRP_ON_WALK UINT32_MAX

/* Depth-first over the verified bytecode with an explicit stack (never C recursion), each function
 * once: depths[f] (0 while unseen, IRP_ON_WALK while on the walk) becomes 1 + its deepest callee's
 * depth, capped just above IRP_MAX_CALL_DEPTH. `depths` and `stack` hold function_count entries.
 * Returns whether a call leads back to a function on the walk (recursion). */
static bool irp_walk_calls(const irp_vm_module_t* module, uint32_t* depths, irp_call_walk_t* stack) {
  bool recursive = false;
  for (int32_t root = 0; root < module->function_count; ++root) {
    if (depths[root] != 0) continue;
    size_t top = 0;
    stack[0] = (irp_call_walk_t){root, 1, 0};
    depths[root] = IRP_ON_WALK;
    for (;;) {
      irp_call_walk_t* walk = &stack[top];
      const irp_vm_function_t* function = &module->functions[walk->function];
      uint32_t below = 0; /* the depth of a callee that is done */
      if (walk->pc < function->bytecode_length) {
        size_t pc = walk->pc;
        walk->pc += irp_insn_size(function->bytecode, pc);
        if (function->bytecode[pc] != IRP_OP_CALL) continue;
        int32_t callee = irp_load_u16(function->bytecode + pc + 1);
        if (depths[callee] == 0) {
          depths[callee] = IRP_ON_WALK;
          stack[++top] = (irp_call_walk_t){callee, 1, 0};
          continue;
        }
        recursive |= depths[callee] == IRP_ON_WALK;
        below = depths[callee] == IRP_ON_WALK ? 0 : depths[callee];
      } else {
        depths[walk->function] = walk->depth;
        if (top == 0) break;
        below = walk->depth;
        walk = &stack[--top];
      }
      uint32_t through = below < IRP_MAX_CALL_DEPTH + 1u ? below + 1 : IRP_MAX_CALL_DEPTH + 1u;
      if (through > walk->depth) walk->depth = through;
    }
  }
  return recursive;
}

irp_status_t irp_vm_compute_call_depth(const irp_allocator_t* allocator, const irp_vm_module_t* module,
                                       irp_diag_t* diag, uint32_t* out_depth) {
  *out_depth = 1;
  size_t count = (size_t)module->function_count;
  uint32_t* depths = NULL;
  irp_call_walk_t* stack = NULL;
  irp_status_t status = irp_allocate_zeroed(allocator, count, sizeof(uint32_t), 8, diag, (void**)&depths);
  if (status == IRP_OK) status = irp_allocate_zeroed(allocator, count, sizeof(irp_call_walk_t), 8, diag, (void**)&stack);
  if (status == IRP_OK && count > 0) {
    bool recursive = irp_walk_calls(module, depths, stack);
    for (size_t f = 0; f < count; ++f) {
      if (depths[f] > *out_depth) *out_depth = depths[f];
    }
    if (recursive) {
      *out_depth = IRP_MAX_CALL_DEPTH;
    } else if (*out_depth > IRP_MAX_CALL_DEPTH) {
      status = IRP_FAIL(diag, IRP_UNSUPPORTED, "module '%s': more than %d nested calls",
                        module->name, IRP_MAX_CALL_DEPTH);
    }
  }
  irp_free(allocator, stack);
  irp_free(allocator, depths);
  return status;
}
