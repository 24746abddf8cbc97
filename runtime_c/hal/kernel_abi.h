/* The kernel ABI: how the runtime calls a compiled kernel, and how a kernel library exposes its
 * entry points. This header is the schema; the compiler mirrors it in iree_py/codegen/kernel_abi.py
 * and tests/test_kernel_abi.py checks that the two agree (sizes and offsets for 64- and 32-bit).
 *
 * A kernel library is one ELF shared object per architecture, linked with its entry symbol
 * (e_entry) set to irp_kernel_library_query. The runtime loads it with its own ELF loader
 * (runtime_c/hal/elf_loader.c), calls the query function with IRP_KERNEL_ABI_VERSION and gets
 * back the table of entry points. Kernels import nothing: no libc, no libm.
 *
 * A dispatch runs one entry point once per workgroup id in [0, workgroup_count) on each axis.
 * Kernels must only touch bytes inside their bindings; the runtime checks every binding against
 * the minimum length the module declares for the entry point before calling it.
 * Read-only bindings: the module is data, so a damaged one can bind a constant (used in place: the
 * caller's module bytes, flash on a board) or a caller's input where a kernel writes. The runtime
 * marks every such binding in read_only_bindings, which it fills from what each buffer is, never
 * from the module; a kernel writes only bindings that are not marked, and a compiled entry point
 * returns IRP_KERNEL_STATUS_READ_ONLY_BINDING when one it writes is (dispatch_guard.py).
 * Ownership: everything a kernel receives is borrowed for the duration of the call. */
#ifndef IRP_HAL_KERNEL_ABI_H_
#define IRP_HAL_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define IRP_KERNEL_ABI_VERSION 2u /* 2: read_only_bindings */

typedef struct irp_dispatch_state_t {
  uint32_t workgroup_count[3];   /* grid size on x, y, z */
  uint32_t push_constant_count;
  const uint32_t* push_constants; /* push_constant_count values */
  void* const* bindings;          /* base pointer of each binding, in the entry's order */
  const size_t* binding_lengths;  /* length in bytes of each binding */
  uint32_t binding_count;
  uint32_t reserved;
  /* Bit (i % 32) of word i / 32 is set when binding i is read-only (a module constant or a
   * caller's input): (binding_count + 31) / 32 words, never NULL (one word, 0, without bindings). */
  const uint32_t* read_only_bindings;
} irp_dispatch_state_t;

typedef struct irp_workgroup_state_t {
  uint32_t workgroup_id[3];
  uint32_t reserved;
} irp_workgroup_state_t;

/* Returns IRP_KERNEL_STATUS_OK (0) on success; any other value aborts the call with an error naming
 * the entry point, the code and, for a code in IRP_KERNEL_STATUSES, its meaning. */
typedef int32_t (*irp_kernel_fn_t)(const irp_dispatch_state_t* dispatch_state,
                                   const irp_workgroup_state_t* workgroup_state);

/* What a kernel returns: X(code, NAME, meaning) per status. The compiler's copy of this table is
 * KERNEL_STATUSES in iree_py/codegen/kernel_abi.py (tests/test_kernel_abi.py checks that they agree);
 * the Python runtime turns a failed dispatch into a message naming the model's node from it. */
#define IRP_KERNEL_STATUSES(X)                                                                     \
  X(0, OK, "the kernel ran to the end")                                                            \
  X(1, DISPATCH_REFUSED,                                                                           \
    "the kernel refused its dispatch (grid, bindings or run-time dims other than it was built for)") \
  X(2, STRINGS_MALFORMED, "a packed string tensor's offsets do not fit its buffer")               \
  X(3, INDEX_OUT_OF_RANGE, "an index is outside the range of its axis")                           \
  X(4, UNSUPPORTED_VALUE, "an input holds a value this kernel cannot compute with (a NaN to sort, a non-finite size)") \
  X(5, READ_ONLY_BINDING,                                                                          \
    "the kernel refused its dispatch: a binding it writes is read-only (a constant of the module or a caller's input)")

#define IRP_KERNEL_STATUS_ENUMERATOR_(code, name, meaning) IRP_KERNEL_STATUS_##name = (code),
typedef enum irp_kernel_status_t { IRP_KERNEL_STATUSES(IRP_KERNEL_STATUS_ENUMERATOR_) } irp_kernel_status_t;
#undef IRP_KERNEL_STATUS_ENUMERATOR_

typedef struct irp_kernel_library_t {
  uint32_t abi_version;
  uint32_t entry_count;
  const char* const* entry_names; /* entry_count NUL-terminated names */
  const irp_kernel_fn_t* entries; /* entry_count functions, same order as the module's entry points */
} irp_kernel_library_t;

/* Exported by every kernel library; returns NULL if it does not speak abi_version. */
typedef const irp_kernel_library_t* (*irp_kernel_library_query_fn_t)(uint32_t abi_version);

#define IRP_KERNEL_LIBRARY_QUERY_SYMBOL "irp_kernel_library_query"

/* The layout is part of the contract: a change here needs a new IRP_KERNEL_ABI_VERSION. */
_Static_assert(offsetof(irp_dispatch_state_t, workgroup_count) == 0, "abi");
_Static_assert(offsetof(irp_dispatch_state_t, push_constant_count) == 12, "abi");
_Static_assert(offsetof(irp_dispatch_state_t, push_constants) == 16, "abi");
_Static_assert(offsetof(irp_dispatch_state_t, bindings) == 16 + sizeof(void*), "abi");
_Static_assert(offsetof(irp_dispatch_state_t, binding_lengths) == 16 + 2 * sizeof(void*), "abi");
_Static_assert(offsetof(irp_dispatch_state_t, binding_count) == 16 + 3 * sizeof(void*), "abi");
_Static_assert(offsetof(irp_dispatch_state_t, read_only_bindings) == 24 + 3 * sizeof(void*), "abi");
_Static_assert(sizeof(irp_dispatch_state_t) == 24 + 4 * sizeof(void*), "abi");
_Static_assert(sizeof(irp_workgroup_state_t) == 16, "abi");

#endif /* IRP_HAL_KERNEL_ABI_H_ */
