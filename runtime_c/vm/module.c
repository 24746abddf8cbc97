#include "module.h"

#include <inttypes.h>
#include <string.h>

#include "../base/allocator.h"
#include "../base/crc32.h"
#include "../base/little_endian.h"
#include "../hal/kernel_abi.h"
#include "flatbuf.h"
#include "isa_generated.h"
#include "verifier.h"

/* Field ids, in flatbuffers/module.fbs order. */
enum { MODULE_FORMAT_VERSION, MODULE_NAME, MODULE_FUNCTIONS, MODULE_CONSTANTS, MODULE_EXECUTABLES,
       MODULE_MEMORY_PLAN, MODULE_DEBUG_INFO, MODULE_MESSAGES };
enum { FUNCTION_NAME, FUNCTION_EXPORTED, FUNCTION_INPUTS, FUNCTION_OUTPUTS, FUNCTION_I64_COUNT,
       FUNCTION_REF_COUNT, FUNCTION_BYTECODE, FUNCTION_I64_INPUT_COUNT, FUNCTION_I64_OUTPUT_COUNT };
enum { SIG_NAME, SIG_DTYPE, SIG_SHAPE, SIG_SCALE, SIG_ZERO_POINT, SIG_DIM_NAMES };
enum { CONSTANT_NAME, CONSTANT_DATA };
enum { ENTRY_NAME, ENTRY_BINDING_COUNT, ENTRY_PUSH_CONSTANT_COUNT, ENTRY_MIN_LENGTHS, ENTRY_CODE_OFFSET };
enum { EXECUTABLE_ARCH, EXECUTABLE_FORMAT, EXECUTABLE_ENTRY_POINTS, EXECUTABLE_CODE, EXECUTABLE_CODE_CRC32,
       EXECUTABLE_KERNEL_ABI };
enum { PLAN_ARENA_SIZE, PLAN_BUFFERS, PLAN_POOL_SIZE };

size_t irp_dtype_size(uint32_t dtype) {
  switch (dtype) {
    case IRP_DTYPE_F32: return 4;
    case IRP_DTYPE_F64: return 8;
    case IRP_DTYPE_F16: return 2;
    case IRP_DTYPE_I8: return 1;
    case IRP_DTYPE_U8: return 1;
    case IRP_DTYPE_I16: return 2;
    case IRP_DTYPE_I32: return 4;
    case IRP_DTYPE_I64: return 8;
    case IRP_DTYPE_BOOL: return 1;
    case IRP_DTYPE_U16: return 2;
    case IRP_DTYPE_U32: return 4;
    case IRP_DTYPE_U64: return 8;
    case IRP_DTYPE_BF16: return 2;
    case IRP_DTYPE_F8E4M3FN: return 1;
    case IRP_DTYPE_F8E4M3FNUZ: return 1;
    case IRP_DTYPE_F8E5M2: return 1;
    case IRP_DTYPE_F8E5M2FNUZ: return 1;
    case IRP_DTYPE_I4: return 1;
    case IRP_DTYPE_U4: return 1;
    case IRP_DTYPE_F4E2M1: return 1;
    case IRP_DTYPE_I2: return 1;
    case IRP_DTYPE_U2: return 1;
    case IRP_DTYPE_F8E8M0: return 1;
    case IRP_DTYPE_STRING: return 8; /* per element: its offset; the bytes follow (+8 for the end) */
    default: return 0;
  }
}

/* dim_names: absent, or one string per dim, "" for each static dim (a dynamic one may be unnamed). */
static irp_status_t irp_load_dim_names(const irp_fb_t* fb, const irp_fb_table_t* table, const char* function,
                                       const char* kind, int32_t index, irp_vm_tensor_sig_t* sig) {
  irp_fb_vector_t names;
  for (int32_t i = 0; i < sig->rank; ++i) sig->dim_names[i] = "";
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, table, SIG_DIM_NAMES, 4, &names));
  if (names.count == 0) return IRP_OK;
  if (names.count != (uint32_t)sig->rank) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %s %" PRId32 " '%s' has %" PRIu32 " dim names for rank %" PRId32,
                    function, kind, index, sig->name, names.count, sig->rank);
  }
  for (uint32_t i = 0; i < names.count; ++i) {
    uint32_t length;
    IRP_RETURN_IF_ERROR(irp_fb_vector_string(fb, &names, i, &sig->dim_names[i], &length));
    if (sig->shape[i] != IRP_VM_DYNAMIC_DIM && length > 0) {
      return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %s %" PRId32 " '%s' dim %" PRIu32 " is static (%lld) but named '%s'",
                      function, kind, index, sig->name, i, (long long)sig->shape[i], sig->dim_names[i]);
    }
  }
  return IRP_OK;
}

static irp_status_t irp_load_tensor_sig(const irp_fb_t* fb, const irp_fb_table_t* table,
                                        const char* function, const char* kind, int32_t index,
                                        irp_vm_tensor_sig_t* out_sig) {
  uint32_t name_length;
  uint8_t dtype;
  irp_fb_vector_t shape;
  IRP_RETURN_IF_ERROR(irp_fb_string(fb, table, SIG_NAME, &out_sig->name, &name_length));
  IRP_RETURN_IF_ERROR(irp_fb_u8(fb, table, SIG_DTYPE, 0, &dtype));
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, table, SIG_SHAPE, 8, &shape));
  size_t element_size = irp_dtype_size(dtype);
  if (element_size == 0) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %s %" PRId32 " '%s' has unknown dtype %u", function,
                    kind, index, out_sig->name, dtype);
  }
  if (shape.count > IRP_MAX_RANK) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %s %" PRId32 " '%s' has rank %" PRIu32 ", more than the maximum %d",
                    function, kind, index, out_sig->name, shape.count, IRP_MAX_RANK);
  }
  out_sig->dtype = (irp_dtype_t)dtype;
  out_sig->rank = (int32_t)shape.count;
  out_sig->element_size = element_size;
  size_t bytes = element_size;
  for (uint32_t i = 0; i < shape.count; ++i) {
    int64_t dim = (int64_t)irp_load_u64(fb->data + shape.pos + 8 * (size_t)i);
    out_sig->shape[i] = dim;
    if (dim == IRP_VM_DYNAMIC_DIM) {
      out_sig->dynamic_count += 1;
      continue;
    }
    if (dim < 0) {
      return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %s %" PRId32 " '%s' has negative dim %lld at axis %" PRIu32
                      " (only -1, dynamic, is allowed)", function, kind, index, out_sig->name, (long long)dim, i);
    }
    if (dim != 0 && bytes > SIZE_MAX / (uint64_t)dim) {
      return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %s %" PRId32 " '%s' byte size overflows", function, kind,
                      index, out_sig->name);
    }
    bytes *= (size_t)dim;
  }
  out_sig->byte_length = bytes;
  return irp_load_dim_names(fb, table, function, kind, index, out_sig);
}

static irp_status_t irp_load_sig_list(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                      const irp_fb_table_t* table, uint16_t field, const char* function,
                                      const char* kind, int32_t* out_count,
                                      irp_vm_tensor_sig_t** out_sigs) {
  irp_fb_vector_t vector;
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, table, field, 4, &vector));
  if (vector.count > 255) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %" PRIu32 " %ss, more than the 255 the VM can pass",
                    function, vector.count, kind);
  }
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, vector.count, sizeof(irp_vm_tensor_sig_t), 8,
                                          fb->diag, (void**)out_sigs));
  *out_count = (int32_t)vector.count;
  for (uint32_t i = 0; i < vector.count; ++i) {
    irp_fb_table_t sig;
    IRP_RETURN_IF_ERROR(irp_fb_vector_table(fb, &vector, i, &sig));
    IRP_RETURN_IF_ERROR(irp_load_tensor_sig(fb, &sig, function, kind, (int32_t)i, &(*out_sigs)[i]));
  }
  return IRP_OK;
}

static irp_status_t irp_load_function(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                      const irp_fb_table_t* table, irp_vm_function_t* out_function) {
  uint32_t name_length;
  uint8_t exported;
  irp_fb_vector_t bytecode;
  IRP_RETURN_IF_ERROR(irp_fb_string(fb, table, FUNCTION_NAME, &out_function->name, &name_length));
  IRP_RETURN_IF_ERROR(irp_fb_u8(fb, table, FUNCTION_EXPORTED, 0, &exported));
  out_function->exported = exported != 0;
  IRP_RETURN_IF_ERROR(irp_load_sig_list(allocator, fb, table, FUNCTION_INPUTS, out_function->name, "input",
                                        &out_function->input_count, &out_function->inputs));
  IRP_RETURN_IF_ERROR(irp_load_sig_list(allocator, fb, table, FUNCTION_OUTPUTS, out_function->name,
                                        "output", &out_function->output_count, &out_function->outputs));
  IRP_RETURN_IF_ERROR(irp_fb_u16(fb, table, FUNCTION_I64_COUNT, 0, &out_function->i64_register_count));
  IRP_RETURN_IF_ERROR(irp_fb_u16(fb, table, FUNCTION_REF_COUNT, 0, &out_function->ref_register_count));
  IRP_RETURN_IF_ERROR(irp_fb_u16(fb, table, FUNCTION_I64_INPUT_COUNT, 0, &out_function->i64_input_count));
  IRP_RETURN_IF_ERROR(irp_fb_u16(fb, table, FUNCTION_I64_OUTPUT_COUNT, 0, &out_function->i64_output_count));
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, table, FUNCTION_BYTECODE, 1, &bytecode));
  out_function->bytecode = fb->data + bytecode.pos;
  out_function->bytecode_length = bytecode.count;
  if (out_function->input_count > out_function->ref_register_count) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "%s: %" PRId32 " inputs do not fit its %u ref registers", out_function->name,
                    out_function->input_count, out_function->ref_register_count);
  }
  if (out_function->i64_input_count > out_function->i64_register_count) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "%s: %u i64 inputs do not fit its %u i64 registers",
                    out_function->name, out_function->i64_input_count, out_function->i64_register_count);
  }
  if (out_function->exported) {
    int32_t dynamic_inputs = 0, dynamic_outputs = 0;
    for (int32_t i = 0; i < out_function->input_count; ++i) dynamic_inputs += out_function->inputs[i].dynamic_count;
    for (int32_t i = 0; i < out_function->output_count; ++i) dynamic_outputs += out_function->outputs[i].dynamic_count;
    if (out_function->i64_input_count != dynamic_inputs || out_function->i64_output_count != dynamic_outputs) {
      return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                      "%s: exported with %u i64 inputs and %u i64 outputs but its signature has %" PRId32
                      " dynamic input dims and %" PRId32 " dynamic output dims (one i64 each)",
                      out_function->name, out_function->i64_input_count, out_function->i64_output_count,
                      dynamic_inputs, dynamic_outputs);
    }
  }
  return IRP_OK;
}

/* Adds `bytes` to what the module's tables refer to: bytecode, signature and entry point references,
 * kernel code of this architecture. Laid out by a writer, each lies in bytes of its own, so the sum
 * never exceeds the module; tables that point many times at the same bytecode or code (a 130 KB
 * module asking for minutes of verification) are refused before that work is done. */
static irp_status_t irp_charge(const irp_fb_t* fb, size_t* io_referenced, size_t bytes) {
  if (bytes <= fb->size - *io_referenced) {
    *io_referenced += bytes;
    return IRP_OK;
  }
  return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "module tables share data: more than its %zu bytes", fb->size);
}

static irp_status_t irp_load_functions(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                       const irp_fb_table_t* root, irp_vm_module_t* module,
                                       size_t* io_referenced) {
  irp_fb_vector_t vector;
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, root, MODULE_FUNCTIONS, 4, &vector));
  if (vector.count > INT32_MAX / 2) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "module has too many functions (%" PRIu32 ")", vector.count);
  }
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, vector.count, sizeof(irp_vm_function_t), 8,
                                          fb->diag, (void**)&module->functions));
  module->function_count = (int32_t)vector.count;
  for (uint32_t i = 0; i < vector.count; ++i) {
    irp_fb_table_t table;
    IRP_RETURN_IF_ERROR(irp_fb_vector_table(fb, &vector, i, &table));
    irp_vm_function_t* function = &module->functions[i];
    IRP_RETURN_IF_ERROR(irp_load_function(allocator, fb, &table, function));
    IRP_RETURN_IF_ERROR(irp_charge(fb, io_referenced, function->bytecode_length +
                                                          4u * (size_t)(function->input_count + function->output_count)));
    if (function->i64_register_count > module->max_i64_registers) {
      module->max_i64_registers = function->i64_register_count;
    }
    if (function->ref_register_count > module->max_ref_registers) {
      module->max_ref_registers = function->ref_register_count;
    }
  }
  return IRP_OK;
}

static irp_status_t irp_load_constants(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                       const irp_fb_table_t* root, irp_vm_module_t* module) {
  irp_fb_vector_t vector;
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, root, MODULE_CONSTANTS, 4, &vector));
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, vector.count, sizeof(irp_vm_constant_t), 8,
                                          fb->diag, (void**)&module->constants));
  module->constant_count = vector.count;
  for (uint32_t i = 0; i < vector.count; ++i) {
    irp_fb_table_t table;
    irp_fb_vector_t data;
    IRP_RETURN_IF_ERROR(irp_fb_vector_table(fb, &vector, i, &table));
    IRP_RETURN_IF_ERROR(irp_fb_vector(fb, &table, CONSTANT_DATA, 1, &data));
    module->constants[i].data = fb->data + data.pos;
    module->constants[i].length = data.count;
  }
  return IRP_OK;
}

static irp_status_t irp_load_entry_point(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                         const irp_fb_table_t* table, irp_hal_entry_point_t* out_entry) {
  uint32_t name_length;
  irp_fb_vector_t lengths;
  IRP_RETURN_IF_ERROR(irp_fb_string(fb, table, ENTRY_NAME, &out_entry->name, &name_length));
  IRP_RETURN_IF_ERROR(irp_fb_u16(fb, table, ENTRY_BINDING_COUNT, 0, &out_entry->binding_count));
  IRP_RETURN_IF_ERROR(irp_fb_u16(fb, table, ENTRY_PUSH_CONSTANT_COUNT, 0, &out_entry->push_constant_count));
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, table, ENTRY_MIN_LENGTHS, 8, &lengths));
  IRP_RETURN_IF_ERROR(irp_fb_u32(fb, table, ENTRY_CODE_OFFSET, 0, &out_entry->code_offset));
  if (out_entry->binding_count > IRP_MAX_BINDINGS ||
      out_entry->push_constant_count > IRP_MAX_PUSH_CONSTANTS) {
    return IRP_FAIL(fb->diag, IRP_UNSUPPORTED,
                    "entry point '%s' has %u bindings and %u push constants; this runtime allows %d and %d",
                    out_entry->name, out_entry->binding_count, out_entry->push_constant_count,
                    IRP_MAX_BINDINGS, IRP_MAX_PUSH_CONSTANTS);
  }
  if (lengths.count != out_entry->binding_count) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "entry point '%s' has %" PRIu32 " binding_min_lengths for %u bindings", out_entry->name,
                    lengths.count, out_entry->binding_count);
  }
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, lengths.count, sizeof(uint64_t), 8, fb->diag,
                                          (void**)&out_entry->binding_min_lengths));
  for (uint32_t i = 0; i < lengths.count; ++i) {
    out_entry->binding_min_lengths[i] = irp_load_u64(fb->data + lengths.pos + 8 * (size_t)i);
  }
  return IRP_OK;
}

/* Instruction alignment of flat entry points per architecture, and whether they are Thumb code
 * (bit 0 set, the rest aligned). Architectures not listed need no alignment. */
typedef struct irp_flat_arch_t {
  const char* arch;
  uint32_t alignment;
  bool thumb;
} irp_flat_arch_t;

static const irp_flat_arch_t irp_flat_archs[] = {
    {"thumbv7em", 2, true}, {"riscv32", 2, false}, {"riscv64", 2, false}, {"aarch64", 4, false},
};

/* A flat entry point must start inside the code, on an instruction boundary of its architecture:
 * the runtime calls code + code_offset and must never jump outside the image. */
static irp_status_t irp_check_flat_entry(const irp_fb_t* fb, const irp_hal_executable_t* executable,
                                         const irp_hal_entry_point_t* entry) {
  irp_flat_arch_t rule = {executable->arch, 1, false};
  for (size_t i = 0; i < sizeof(irp_flat_archs) / sizeof(irp_flat_archs[0]); ++i) {
    if (strcmp(irp_flat_archs[i].arch, executable->arch) == 0) rule = irp_flat_archs[i];
  }
  if (rule.thumb && (entry->code_offset & 1u) == 0) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flat executable for %s: entry point '%s' at offset 0x%x is not Thumb code (bit 0 clear)",
                    executable->arch, entry->name, (unsigned)entry->code_offset);
  }
  uint32_t start = rule.thumb ? entry->code_offset & ~1u : entry->code_offset;
  if ((size_t)start >= executable->code_length) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flat executable for %s: entry point '%s' at offset 0x%x is outside its %zu bytes of code",
                    executable->arch, entry->name, (unsigned)entry->code_offset, executable->code_length);
  }
  if (start % rule.alignment != 0) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flat executable for %s: entry point '%s' at offset 0x%x is not %u-byte aligned",
                    executable->arch, entry->name, (unsigned)entry->code_offset, (unsigned)rule.alignment);
  }
  return IRP_OK;
}

static irp_status_t irp_load_executable(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                        const irp_fb_table_t* table, irp_hal_executable_t* out_executable,
                                        size_t* io_referenced) {
  uint8_t format;
  irp_fb_vector_t entries, code;
  IRP_RETURN_IF_ERROR(irp_fb_u8(fb, table, EXECUTABLE_FORMAT, 0, &format));
  if (format != IRP_EXECUTABLE_FORMAT_ELF && format != IRP_EXECUTABLE_FORMAT_FLAT &&
      format != IRP_EXECUTABLE_FORMAT_SPIRV) {
    return IRP_FAIL(fb->diag, IRP_UNSUPPORTED,
                    "executable for %s has format %u; this runtime loads elf (0), flat (1) and spirv (2)",
                    out_executable->arch, format);
  }
  out_executable->format = (irp_hal_executable_format_t)format;
  if (format == IRP_EXECUTABLE_FORMAT_FLAT) {
    /* A flat image has no library query: the module says which dispatch state its code reads. */
    uint32_t abi;
    IRP_RETURN_IF_ERROR(irp_fb_u32(fb, table, EXECUTABLE_KERNEL_ABI, 0, &abi));
    if (abi != IRP_KERNEL_ABI_VERSION) {
      return IRP_FAIL(fb->diag, IRP_UNSUPPORTED,
                      "flat executable for %s was built for kernel ABI %u; this runtime runs ABI %u: compile the "
                      "module again",
                      out_executable->arch, (unsigned)(abi == 0 ? 1 : abi), (unsigned)IRP_KERNEL_ABI_VERSION);
    }
  }
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, table, EXECUTABLE_ENTRY_POINTS, 4, &entries));
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, table, EXECUTABLE_CODE, 1, &code));
  out_executable->code = fb->data + code.pos;
  out_executable->code_length = code.count;
  IRP_RETURN_IF_ERROR(irp_charge(fb, io_referenced, (size_t)code.count + 4u * (size_t)entries.count));
  uint32_t expected_crc;
  IRP_RETURN_IF_ERROR(irp_fb_u32(fb, table, EXECUTABLE_CODE_CRC32, 0, &expected_crc));
  uint32_t actual_crc = irp_crc32(out_executable->code, out_executable->code_length);
  if (actual_crc != expected_crc) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "executable for %s is corrupt: its code has CRC-32 0x%08x, the module says 0x%08x",
                    out_executable->arch, (unsigned)actual_crc, (unsigned)expected_crc);
  }
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, entries.count, sizeof(irp_hal_entry_point_t), 8,
                                          fb->diag, (void**)&out_executable->entry_points));
  out_executable->entry_point_count = entries.count;
  for (uint32_t i = 0; i < entries.count; ++i) {
    irp_fb_table_t entry;
    IRP_RETURN_IF_ERROR(irp_fb_vector_table(fb, &entries, i, &entry));
    IRP_RETURN_IF_ERROR(irp_load_entry_point(allocator, fb, &entry, &out_executable->entry_points[i]));
    if (out_executable->format == IRP_EXECUTABLE_FORMAT_FLAT) {
      IRP_RETURN_IF_ERROR(irp_check_flat_entry(fb, out_executable, &out_executable->entry_points[i]));
    }
    /* spirv: the device checks each shader (magic, version, entry point) when it prepares them. */
  }
  return IRP_OK;
}

/* Appends ", arch" to a list of architectures for the error message (truncating quietly). */
static void irp_append_arch(char* list, size_t capacity, const char* arch) {
  size_t used = strlen(list);
  size_t i = 0;
  if (used > 0 && used + 2 < capacity) {
    list[used++] = ',';
    list[used++] = ' ';
  }
  while (arch[i] != '\0' && used + 1 < capacity) list[used++] = arch[i++];
  list[used] = '\0';
}

static irp_status_t irp_load_executables(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                         const irp_fb_table_t* root, irp_vm_module_t* module,
                                         size_t* io_referenced) {
  irp_fb_vector_t vector;
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, root, MODULE_EXECUTABLES, 4, &vector));
  if (vector.count == 0) return IRP_OK;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, vector.count, sizeof(irp_vm_executable_t), 8,
                                          fb->diag, (void**)&module->executables));
  char archs[96] = "";
  for (uint32_t i = 0; i < vector.count; ++i) {
    irp_fb_table_t table;
    const char* arch;
    uint32_t arch_length;
    IRP_RETURN_IF_ERROR(irp_fb_vector_table(fb, &vector, i, &table));
    IRP_RETURN_IF_ERROR(irp_fb_string(fb, &table, EXECUTABLE_ARCH, &arch, &arch_length));
    irp_append_arch(archs, sizeof(archs), arch);
    if (strcmp(arch, module->arch) != 0) continue;
    irp_vm_executable_t* executable = &module->executables[module->executable_count++];
    executable->hal.arch = arch;
    executable->first_entry_index = module->entry_point_count;
    IRP_RETURN_IF_ERROR(irp_load_executable(allocator, fb, &table, &executable->hal, io_referenced));
    module->entry_point_count += executable->hal.entry_point_count;
  }
  if (module->executable_count == 0) {
    return IRP_FAIL(fb->diag, IRP_UNSUPPORTED,
                    "module '%s' has executables for [%s] but this runtime runs %s", module->name,
                    archs, module->arch);
  }
  return IRP_OK;
}

static irp_status_t irp_load_messages(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                       const irp_fb_table_t* root, irp_vm_module_t* module) {
  irp_fb_vector_t vector;
  IRP_RETURN_IF_ERROR(irp_fb_vector(fb, root, MODULE_MESSAGES, 4, &vector));
  if (vector.count == 0) return IRP_OK;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, vector.count, sizeof(const char*), 8, fb->diag,
                                          (void**)&module->messages));
  module->message_count = vector.count;
  for (uint32_t i = 0; i < vector.count; ++i) {
    uint32_t length;
    IRP_RETURN_IF_ERROR(irp_fb_vector_string(fb, &vector, i, &module->messages[i], &length));
  }
  return IRP_OK;
}

static irp_status_t irp_load_module_tables(const irp_allocator_t* allocator, const irp_fb_t* fb,
                                           irp_vm_module_t* module) {
  irp_fb_table_t root, plan;
  uint32_t version, name_length;
  bool has_plan;
  IRP_RETURN_IF_ERROR(irp_fb_root(fb, "IRPY", &root));
  IRP_RETURN_IF_ERROR(irp_fb_u32(fb, &root, MODULE_FORMAT_VERSION, 0, &version));
  if (version != IRP_VM_FORMAT_VERSION) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "module format version is %" PRIu32 " but this runtime reads version %u", version,
                    IRP_VM_FORMAT_VERSION);
  }
  IRP_RETURN_IF_ERROR(irp_fb_string(fb, &root, MODULE_NAME, &module->name, &name_length));
  IRP_RETURN_IF_ERROR(irp_fb_table(fb, &root, MODULE_MEMORY_PLAN, &plan, &has_plan));
  if (has_plan) IRP_RETURN_IF_ERROR(irp_fb_u64(fb, &plan, PLAN_ARENA_SIZE, 0, &module->arena_size));
  if (has_plan) IRP_RETURN_IF_ERROR(irp_fb_u64(fb, &plan, PLAN_POOL_SIZE, 0, &module->pool_size));
  IRP_RETURN_IF_ERROR(irp_load_messages(allocator, fb, &root, module));
  size_t referenced = 0;
  IRP_RETURN_IF_ERROR(irp_load_functions(allocator, fb, &root, module, &referenced));
  IRP_RETURN_IF_ERROR(irp_load_constants(allocator, fb, &root, module));
  IRP_RETURN_IF_ERROR(irp_load_executables(allocator, fb, &root, module, &referenced));
  for (int32_t i = 0; i < module->function_count; ++i) {
    IRP_RETURN_IF_ERROR(irp_vm_verify_function(allocator, module, &module->functions[i], fb->diag));
  }
  return irp_vm_compute_call_depth(allocator, module, fb->diag, &module->call_depth);
}

irp_status_t irp_vm_module_load(const irp_allocator_t* allocator, const uint8_t* data, size_t length,
                                irp_diag_t* diag, irp_vm_module_t* out_module) {
  return irp_vm_module_load_for_arch(allocator, data, length, IRP_ARCH_NAME, diag, out_module);
}

irp_status_t irp_vm_module_load_for_arch(const irp_allocator_t* allocator, const uint8_t* data, size_t length,
                                         const char* arch, irp_diag_t* diag, irp_vm_module_t* out_module) {
  memset(out_module, 0, sizeof(*out_module));
  out_module->name = "";
  out_module->arch = arch;
  if (data == NULL) return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "module data is NULL");
  irp_fb_t fb = {data, length, diag};
  irp_status_t status = irp_load_module_tables(allocator, &fb, out_module);
  if (status != IRP_OK) irp_vm_module_free(allocator, out_module);
  return status;
}

void irp_vm_module_free(const irp_allocator_t* allocator, irp_vm_module_t* module) {
  for (int32_t i = 0; module->functions != NULL && i < module->function_count; ++i) {
    irp_free(allocator, module->functions[i].inputs);
    irp_free(allocator, module->functions[i].outputs);
  }
  for (uint32_t i = 0; module->executables != NULL && i < module->executable_count; ++i) {
    irp_hal_executable_t* executable = &module->executables[i].hal;
    for (uint32_t j = 0; executable->entry_points != NULL && j < executable->entry_point_count; ++j) {
      irp_free(allocator, executable->entry_points[j].binding_min_lengths);
    }
    irp_free(allocator, executable->entry_points);
  }
  irp_free(allocator, module->functions);
  irp_free(allocator, module->constants);
  irp_free(allocator, module->executables);
  irp_free(allocator, module->messages);
  memset(module, 0, sizeof(*module));
}
