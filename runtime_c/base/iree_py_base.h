/* The base types every layer of the runtime and its callers share: status codes, the allocator
 * interface, dtypes. They are defined here, at the bottom of the runtime (base <- hal <- vm <- api,
 * runtime_c/Makefile), so that base needs nothing above it; the public header
 * api/iree_py_runtime.h includes this file, and callers read both as one API.
 *
 * Standalone on purpose: no include of the runtime's own headers, so `iree-py build-runtime`
 * installs it beside iree_py_runtime.h (DIR/include/) as it is. */
#ifndef IREE_PY_BASE_H_
#define IREE_PY_BASE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum irp_status_e {
  IRP_OK = 0,
  IRP_INVALID_ARGUMENT = 1,  /* a caller error: wrong input count, shape, dtype, size */
  IRP_INVALID_MODULE = 2,    /* the module failed verification (truncated, corrupt, wrong version) */
  IRP_OUT_OF_MEMORY = 3,
  IRP_NOT_FOUND = 4,         /* no such function */
  IRP_UNSUPPORTED = 5,       /* e.g. no executable for this architecture */
  IRP_RUNTIME_FAILURE = 6,   /* a kernel, a `check` or a `fail` instruction reported an error */
} irp_status_t;

/* Allocation is the caller's: alloc(ctx, size, alignment) returns NULL on failure. */
typedef struct irp_allocator_t {
  void* ctx;
  void* (*alloc)(void* ctx, size_t size, size_t alignment);
  void (*free)(void* ctx, void* ptr);
} irp_allocator_t;

/* The allocator over the C library (aligned_alloc/free); not available on bare metal builds. */
irp_allocator_t irp_allocator_system(void);

typedef enum irp_dtype_e {
  IRP_DTYPE_F32 = 0, IRP_DTYPE_F64 = 1, IRP_DTYPE_F16 = 2, IRP_DTYPE_I8 = 3, IRP_DTYPE_U8 = 4,
  IRP_DTYPE_I16 = 5, IRP_DTYPE_I32 = 6, IRP_DTYPE_I64 = 7, IRP_DTYPE_BOOL = 8,
  IRP_DTYPE_U16 = 9, IRP_DTYPE_U32 = 10, IRP_DTYPE_U64 = 11,
  /* storage-only types, one element per byte (BF16: two); 4- and 2-bit values in the low bits */
  IRP_DTYPE_BF16 = 12, IRP_DTYPE_F8E4M3FN = 13, IRP_DTYPE_F8E4M3FNUZ = 14, IRP_DTYPE_F8E5M2 = 15,
  IRP_DTYPE_F8E5M2FNUZ = 16, IRP_DTYPE_I4 = 17, IRP_DTYPE_U4 = 18, IRP_DTYPE_F4E2M1 = 19, IRP_DTYPE_I2 = 20,
  IRP_DTYPE_U2 = 21, IRP_DTYPE_F8E8M0 = 22, /* exponent only: 2^(code - 127), 0xFF NaN */
  /* N strings packed in one buffer: N+1 little-endian int64 byte offsets, then the UTF-8 bytes
   * (element i is bytes[off[i], off[i+1])); any length of at least (N+1)*8 bytes (docs/strings.md) */
  IRP_DTYPE_STRING = 23,
} irp_dtype_t;

#define IRP_MAX_RANK 8

#ifdef __cplusplus
}
#endif

#endif /* IREE_PY_BASE_H_ */
