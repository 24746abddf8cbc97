/* What the fuzz harnesses (runtime_c/fuzz/NAME_fuzzer.c) share: an allocator with a budget that counts
 * what is live, the architecture variable of fuzz builds (fuzz_arch.h), the list of kernel code the
 * harnesses may run, and small checks that abort (a finding) when the runtime breaks a promise.
 *
 * Kernel code is machine code: no loader can tell good code from bad, so a harness never runs code
 * that is not byte for byte a blob the project's compiler (or the runtime's test kernels) produced:
 * trusted_code.txt, written by make_corpus.py beside the corpora, lists those blobs (CRC-32 and
 * length, and for flat images the entry offsets). Everything around the code (the module's tables,
 * bytecode, entry points, shapes) stays fuzzed, and every compiled entry point checks its dispatch
 * (iree_py/codegen/llvm/dispatch_guard.py), so running trusted code under damaged tables is fair. */
#ifndef IRP_FUZZ_FUZZ_SUPPORT_H_
#define IRP_FUZZ_FUZZ_SUPPORT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../api/iree_py_runtime.h"
#include "../vm/module.h"

/* The architecture vm/module.c loads executables for (fuzz builds), and this build's own. */
extern const char* irp_fuzz_arch;
extern const char* const irp_fuzz_host_arch;

/* Memory the runtime may hold at once in one harness run, well below libFuzzer's malloc limit. */
#define IRP_FUZZ_HEAP_BUDGET ((size_t)256 << 20)

typedef struct irp_fuzz_heap_t {
  size_t budget; /* bytes; an allocation past it returns NULL */
  size_t live_bytes;
  size_t live_blocks;
} irp_fuzz_heap_t;

irp_allocator_t irp_fuzz_allocator(irp_fuzz_heap_t* heap);

/* Reads trusted_code.txt and the trusted device modules (device_modules/) from each folder of
 * $IRP_FUZZ_DATA (colon-separated; the Makefile gives the build's fuzz folder, where make_corpus.py
 * writes them, and fuzz/regressions, whose trusted_code.txt lists the code inside committed
 * regression inputs), else from the folder of argv0. Missing files trust nothing. */
void irp_fuzz_load_trust(const char* argv0);

/* True when `code` is a trusted blob and, for a flat image, every entry offset is one of its own. */
bool irp_fuzz_executable_trusted(const irp_hal_executable_t* executable);

/* The trusted device modules (the .vmfb files of device_modules/), for the device harness's storage. */
size_t irp_fuzz_device_module_count(void);
const uint8_t* irp_fuzz_device_module(size_t index, size_t* out_length);

/* Aborts with a message (libFuzzer reports it as a crash with the input). */
void irp_fuzz_fail(const char* format, ...) __attribute__((format(printf, 1, 2), noreturn));
#define IRP_FUZZ_ASSERT(cond, ...) \
  do {                             \
    if (!(cond)) irp_fuzz_fail(__VA_ARGS__); \
  } while (0)

/* Prints to stderr when $IRP_FUZZ_VERBOSE is set (what a replayed input did: fuzz-replay, triage). */
void irp_fuzz_note(const char* format, ...) __attribute__((format(printf, 1, 2)));

/* A failed status must come with a message: every error names what is wrong. */
void irp_fuzz_check_message(irp_status_t status, const char* message, const char* what);

/* The arch string of the module's first executable whose arch is the host's, else of its first
 * executable, else the host's (pointing into data, or irp_fuzz_host_arch). Damaged tables read as
 * "no executables". */
const char* irp_fuzz_module_arch(const uint8_t* data, size_t size);

/* Loads and verifies a module as the runtime for its own architecture would: irp_fuzz_arch is set to
 * irp_fuzz_module_arch (the caller sets it back to irp_fuzz_host_arch when done with the module) and
 * a failure must have a message. The caller frees *out_vm (zeroed on failure). */
irp_status_t irp_fuzz_verify_module(const irp_allocator_t* allocator, const uint8_t* data, size_t size,
                                    irp_vm_module_t* out_vm);

#endif /* IRP_FUZZ_FUZZ_SUPPORT_H_ */
