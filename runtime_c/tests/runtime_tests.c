/* The runtime's C tests; run by `make test` under ASan + UBSan with the modules written by
 * tests/make_test_modules.py:   runtime_tests DIR
 * Exits non-zero when any check fails. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../api/iree_py_runtime.h"
#include "../hal/sync_device.h"
#include "../hal/threaded_device.h"
#include "../vm/pool.h"

static int g_failures = 0;
static const char* g_dir = ".";

#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fprintf(stderr, "\n");                                          \
      ++g_failures;                                                   \
    }                                                                 \
  } while (0)

typedef struct bytes_t {
  unsigned char* data;
  size_t length;
} bytes_t;

static bytes_t read_module(const char* name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", g_dir, name);
  bytes_t bytes = {NULL, 0};
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  bytes.data = malloc((size_t)size + 1);
  bytes.length = fread(bytes.data, 1, (size_t)size, file);
  fclose(file);
  return bytes;
}

/* An allocator that fails the Nth allocation (fail_at < 0: never) and counts live blocks. */
typedef struct counting_allocator_t {
  long calls;
  long fail_at;
  long live;
} counting_allocator_t;

static void* counting_alloc(void* ctx, size_t size, size_t alignment) {
  counting_allocator_t* state = ctx;
  if (state->fail_at >= 0 && state->calls++ == state->fail_at) return NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* ptr = NULL;
  if (posix_memalign(&ptr, alignment, size ? size : 1) != 0) return NULL;
  ++state->live;
  return ptr;
}

static void counting_free(void* ctx, void* ptr) {
  counting_allocator_t* state = ctx;
  --state->live;
  free(ptr);
}

/* One thread: the corruption tests load thousands of modules, each into a runtime of its own, and
 * workers would start for each; the threaded device has tests of its own below. */
static irp_runtime_t* make_runtime(void) {
  irp_allocator_t allocator = irp_allocator_system();
  irp_runtime_t* runtime = NULL;
  if (irp_runtime_create(&allocator, &runtime) != IRP_OK) exit(2);
  if (irp_runtime_set_thread_count(runtime, 1) != IRP_OK) exit(2);
  return runtime;
}

static irp_buffer_view_t f32_view(float* data, int64_t dim0, int64_t dim1) {
  irp_buffer_view_t view;
  memset(&view, 0, sizeof(view));
  view.dtype = IRP_DTYPE_F32;
  view.rank = dim1 > 0 ? 2 : 1;
  view.shape[0] = dim0;
  view.shape[1] = dim1 > 0 ? dim1 : 0;
  view.data = data;
  view.length = (size_t)(dim0 * (dim1 > 0 ? dim1 : 1)) * sizeof(float);
  return view;
}

static int32_t find(irp_module_t* module, const char* name) {
  int32_t function = -1;
  CHECK(irp_module_find_function(module, name, &function) == IRP_OK, "function %s", name);
  return function;
}

/* `file`: good.vmfb (elf kernels), symbolic_good.vmfb (the same, relocated through the symbol
 * table) or flat_good.vmfb (the same kernels as a flat image). */
static void test_add_and_scale(const char* file) {
  irp_runtime_t* runtime = make_runtime();
  bytes_t bytes = read_module(file);
  irp_module_t* module = NULL;
  irp_status_t status = irp_module_load(runtime, bytes.data, bytes.length, &module);
  CHECK(status == IRP_OK, "load %s: %s", file, irp_runtime_error_message(runtime));
  if (status != IRP_OK) return;
  CHECK(irp_module_arena_size(module) == 448, "arena %zu", irp_module_arena_size(module));
  int32_t main_fn = find(module, "main");
  CHECK(strcmp(irp_function_name(module, main_fn), "main") == 0, "name");
  CHECK(irp_function_input_count(module, main_fn) == 2 && irp_function_output_count(module, main_fn) == 1, "counts");
  irp_buffer_view_t sig;
  const char* name = NULL;
  CHECK(irp_function_input(module, main_fn, 1, &sig, &name) == IRP_OK && strcmp(name, "b") == 0 &&
            sig.rank == 1 && sig.shape[0] == 100 && sig.length == 400 && sig.dtype == IRP_DTYPE_F32,
        "input 1 signature");
  float a[100], b[100];
  for (int i = 0; i < 100; ++i) a[i] = (float)i, b[i] = 0.5f * (float)i;
  irp_buffer_view_t inputs[2] = {f32_view(a, 100, 0), f32_view(b, 100, 0)}, outputs[2];
  status = irp_call(module, main_fn, inputs, 2, outputs, 1);
  CHECK(status == IRP_OK, "call main: %s", irp_runtime_error_message(runtime));
  if (status == IRP_OK) {
    const float* sum = outputs[0].data;
    int wrong = 0;
    for (int i = 0; i < 100; ++i) wrong += sum[i] != 1.5f * (float)i;
    CHECK(wrong == 0 && outputs[0].length == 400 && outputs[0].shape[0] == 100, "%d wrong sums", wrong);
  }
  int32_t scaled = find(module, "scaled");
  float x[4] = {1, -1, 0.5f, 10};
  irp_buffer_view_t x_view = f32_view(x, 4, 0);
  status = irp_call(module, scaled, &x_view, 1, outputs, 2);
  CHECK(status == IRP_OK, "call scaled: %s", irp_runtime_error_message(runtime));
  if (status == IRP_OK) {
    const float expected[4] = {5.0f, 2.5f, 8.75f, 35.0f}; /* (x + [1,2,3,4]) * 2.5 */
    CHECK(memcmp(outputs[0].data, expected, 16) == 0, "scaled y");
    CHECK(memcmp(outputs[1].data, expected, 16) == 0, "scaled y_copy");
    CHECK(outputs[1].rank == 2 && outputs[1].shape[0] == 2 && outputs[1].shape[1] == 2, "y_copy shape");
    /* state: reset zeroes the whole arena (the outputs above point into it) */
    CHECK(irp_module_reset_state(module) == IRP_OK, "reset state");
    const float zeros[4] = {0, 0, 0, 0};
    CHECK(memcmp(outputs[0].data, zeros, 16) == 0, "arena zeroed by reset");
  }
  CHECK(irp_module_reset_state(NULL) == IRP_INVALID_ARGUMENT, "reset NULL");
  irp_module_release(module);
  irp_runtime_release(runtime);
  free(bytes.data);
}

static void expect_call_error(irp_module_t* module, irp_runtime_t* runtime, const char* function,
                              irp_buffer_view_t* inputs, int32_t input_count, int32_t output_count,
                              irp_status_t expected, const char* message) {
  irp_buffer_view_t outputs[4];
  int32_t index = find(module, function);
  irp_status_t status = irp_call(module, index, inputs, input_count, outputs, output_count);
  const char* got = irp_runtime_error_message(runtime);
  CHECK(status == expected && strstr(got, message) != NULL, "%s: status %d, message '%s', expected %d '%s'",
        function, status, got, expected, message);
}

static void test_call_errors(void) {
  irp_runtime_t* runtime = make_runtime();
  bytes_t bytes = read_module("good.vmfb");
  irp_module_t* module = NULL;
  if (irp_module_load(runtime, bytes.data, bytes.length, &module) != IRP_OK) {
    CHECK(0, "load: %s", irp_runtime_error_message(runtime));
    return;
  }
  float a[100] = {0}, b[100] = {0}, small[50] = {0}, x[4] = {-1, 0, 0, 0};
  irp_buffer_view_t inputs[2] = {f32_view(a, 100, 0), f32_view(b, 100, 0)};
  expect_call_error(module, runtime, "main", inputs, 1, 1, IRP_INVALID_ARGUMENT, "main: expected 2 inputs, got 1");
  expect_call_error(module, runtime, "main", inputs, 2, 2, IRP_INVALID_ARGUMENT, "main: expected 1 outputs, got 2");
  inputs[0] = f32_view(small, 50, 0);
  expect_call_error(module, runtime, "main", inputs, 2, 1, IRP_INVALID_ARGUMENT,
                    "main: input 0 'a' has shape [50] but the signature expects [100]");
  inputs[0] = f32_view(a, 10, 10);
  expect_call_error(module, runtime, "main", inputs, 2, 1, IRP_INVALID_ARGUMENT,
                    "main: input 0 'a' has shape [10, 10] but the signature expects [100]");
  inputs[0] = f32_view(a, 100, 0);
  inputs[1].dtype = IRP_DTYPE_I32;
  expect_call_error(module, runtime, "main", inputs, 2, 1, IRP_INVALID_ARGUMENT, "main: input 1 'b' has dtype");
  inputs[1] = f32_view(b, 100, 0);
  inputs[1].length = 399;
  expect_call_error(module, runtime, "main", inputs, 2, 1, IRP_INVALID_ARGUMENT,
                    "main: input 1 'b' is 399 bytes but the signature needs 400");
  inputs[1] = f32_view(NULL, 100, 0);
  expect_call_error(module, runtime, "main", inputs, 2, 1, IRP_INVALID_ARGUMENT, "main: input 1 'b' has no data");
  irp_buffer_view_t x_view = f32_view(x, 4, 0);
  expect_call_error(module, runtime, "fails", NULL, 0, 0, IRP_RUNTIME_FAILURE, "fails: fail with code 42");
  expect_call_error(module, runtime, "kernel_fails", &x_view, 1, 0, IRP_RUNTIME_FAILURE,
                    "kernel_fails: kernel 'fail_if_negative' failed with code 7 at workgroup (0, 0, 0)");
  x[0] = 5000; /* a code of the status table: the message says what it means */
  expect_call_error(module, runtime, "kernel_fails", &x_view, 1, 0, IRP_RUNTIME_FAILURE,
                    "kernel_fails: kernel 'fail_if_negative' failed with code 3 (an index is outside the range "
                    "of its axis) at workgroup (0, 0, 0)");
  x[0] = -1;
  expect_call_error(module, runtime, "short_binding", &x_view, 1, 0, IRP_RUNTIME_FAILURE,
                    "binding 1 is 8 bytes but the entry point needs at least 16");
  CHECK(irp_call(module, find(module, "empty_grid"), &x_view, 1, NULL, 0) == IRP_OK,
        "empty_grid (x[0] < 0 but no workgroup runs): %s", irp_runtime_error_message(runtime));
  expect_call_error(module, runtime, "empty_grid_short_binding", &x_view, 1, 0, IRP_RUNTIME_FAILURE,
                    "binding 1 is 8 bytes but the entry point needs at least 16");
  expect_call_error(module, runtime, "unset_ref", NULL, 0, 0, IRP_RUNTIME_FAILURE,
                    "dispatch reads ref register 3, which holds no buffer");
  expect_call_error(module, runtime, "copy_mismatch", &x_view, 1, 1, IRP_RUNTIME_FAILURE,
                    "buffer_copy of 16 bytes into a 8-byte buffer");
  expect_call_error(module, runtime, "copy_to_constant", &x_view, 1, 0, IRP_RUNTIME_FAILURE,
                    "buffer_copy into read-only ref register 1");
  /* Constants and inputs are read-only in the dispatch state; the kernel refuses to write them. */
  float x_before[4];
  memcpy(x_before, x, sizeof(x_before));
  uint8_t* module_before = malloc(bytes.length);
  memcpy(module_before, bytes.data, bytes.length);
  expect_call_error(module, runtime, "kernel_writes_constant", &x_view, 1, 0, IRP_RUNTIME_FAILURE,
                    "kernel_writes_constant: kernel 'scale_f32' failed with code 5 (the kernel refused its dispatch: "
                    "a binding it writes is read-only (a constant of the module or a caller's input)) at workgroup "
                    "(0, 0, 0)");
  expect_call_error(module, runtime, "kernel_writes_input", &x_view, 1, 0, IRP_RUNTIME_FAILURE,
                    "kernel_writes_input: kernel 'scale_f32' failed with code 5");
  CHECK(memcmp(x, x_before, sizeof(x_before)) == 0, "kernel_writes_input changed its input");
  CHECK(memcmp(bytes.data, module_before, bytes.length) == 0, "a kernel wrote into the module's bytes");
  free(module_before);
  expect_call_error(module, runtime, "too_deep", NULL, 0, 0, IRP_RUNTIME_FAILURE,
                    "fib: bytecode at 52: call of 'fib' is deeper than the 32 calls this runtime allows");
  expect_call_error(module, runtime, "div_zero", NULL, 0, 0, IRP_RUNTIME_FAILURE,
                    "div_zero: bytecode at 22: div_i64 of 7 by zero");
  expect_call_error(module, runtime, "fib", NULL, 0, 0, IRP_INVALID_ARGUMENT, "fib: not exported");
  CHECK(irp_call(module, find(module, "fib_20"), NULL, 0, NULL, 0) == IRP_OK, "fib_20 (recursive calls): %s",
        irp_runtime_error_message(runtime));
  int32_t missing = 0;
  CHECK(irp_module_find_function(module, "nope", &missing) == IRP_NOT_FOUND &&
            strstr(irp_runtime_error_message(runtime), "has no function 'nope'") != NULL,
        "find missing: %s", irp_runtime_error_message(runtime));
  /* A working call after errors: copy_input copies x into the arena. */
  irp_buffer_view_t out;
  x[0] = 3;
  CHECK(irp_call(module, find(module, "copy_input"), &x_view, 1, &out, 1) == IRP_OK &&
            memcmp(out.data, x, 16) == 0 && out.data != (void*)x,
        "copy_input: %s", irp_runtime_error_message(runtime));
  irp_module_release(module);
  irp_runtime_release(runtime);
  free(bytes.data);
}

static void test_bad_modules(void) {
  char path[512];
  snprintf(path, sizeof(path), "%s/bad_modules.txt", g_dir);
  FILE* list = fopen(path, "r");
  CHECK(list != NULL, "open %s", path);
  if (list == NULL) return;
  irp_runtime_t* runtime = make_runtime();
  char line[1024];
  int cases = 0;
  while (fgets(line, sizeof(line), list) != NULL) {
    char* name = strtok(line, "\t");
    char* code = strtok(NULL, "\t");
    char* message = strtok(NULL, "\n");
    if (name == NULL || code == NULL || message == NULL) continue;
    bytes_t bytes = read_module(name);
    irp_module_t* module = NULL;
    irp_status_t status = irp_module_load(runtime, bytes.data, bytes.length, &module);
    const char* got = irp_runtime_error_message(runtime);
    CHECK(status == (irp_status_t)atoi(code) && module == NULL && strstr(got, message) != NULL,
          "%s: status %d message '%s'; expected %s '%s'", name, status, got, code, message);
    irp_module_release(module);
    free(bytes.data);
    ++cases;
  }
  fclose(list);
  CHECK(cases >= 30, "only %d bad modules listed", cases);
  irp_runtime_release(runtime);
}

/* A runtime's memory limit refuses a module whose state needs more, naming the numbers: the arena of
 * good.vmfb, and 32 windows of 65535 ref registers (a recursive function that has that many). */
static void test_memory_limit(void) {
  irp_runtime_t* runtime = make_runtime();
  bytes_t good = read_module("good.vmfb"), huge = read_module("huge_registers.vmfb");
  irp_module_t* module = NULL;
  irp_runtime_set_memory_limit(runtime, 1000);
  irp_status_t status = irp_module_load(runtime, good.data, good.length, &module);
  const char* got = irp_runtime_error_message(runtime);
  CHECK(status == IRP_OUT_OF_MEMORY && module == NULL && strstr(got, "(arena 448, pool 0,") != NULL &&
            strstr(got, "; limit 1000") != NULL,
        "good.vmfb under a 1000-byte limit: status %d '%s'", status, got);
  irp_runtime_set_memory_limit(runtime, 16u << 20);
  status = irp_module_load(runtime, huge.data, huge.length, &module);
  got = irp_runtime_error_message(runtime);
  CHECK(status == IRP_OUT_OF_MEMORY && module == NULL && strstr(got, "registers 32 x 7 i64 + 65535 ref)") != NULL,
        "huge_registers.vmfb under a 16 MiB limit: status %d '%s'", status, got);
  status = irp_module_load(runtime, good.data, good.length, &module);
  CHECK(status == IRP_OK, "good.vmfb under a 16 MiB limit: %s", irp_runtime_error_message(runtime));
  irp_module_release(module);
  module = NULL;
  irp_runtime_set_memory_limit(runtime, 0); /* the machine's memory again: 50 MB fit */
  status = irp_module_load(runtime, huge.data, huge.length, &module);
  CHECK(status == IRP_OK, "huge_registers.vmfb without a limit: %s", irp_runtime_error_message(runtime));
  irp_module_release(module);
  free(good.data);
  free(huge.data);
  irp_runtime_release(runtime);
}

/* Every allocation failure during load must surface as IRP_OUT_OF_MEMORY and leak nothing. */
static void test_out_of_memory(void) {
  bytes_t bytes = read_module("good.vmfb");
  int loaded = 0;
  for (long fail_at = 0; fail_at < 200 && !loaded; ++fail_at) {
    counting_allocator_t state = {0, fail_at, 0};
    irp_allocator_t allocator = {&state, counting_alloc, counting_free};
    irp_runtime_t* runtime = NULL;
    irp_status_t status = irp_runtime_create(&allocator, &runtime);
    if (status == IRP_OK) {
      irp_module_t* module = NULL;
      status = irp_module_load(runtime, bytes.data, bytes.length, &module);
      loaded = status == IRP_OK;
      irp_module_release(module);
      irp_runtime_release(runtime);
    }
    CHECK(status == IRP_OK || status == IRP_OUT_OF_MEMORY, "fail_at %ld: status %d", fail_at, status);
    CHECK(state.live == 0, "fail_at %ld: %ld blocks leaked", fail_at, state.live);
  }
  CHECK(loaded, "never loaded");
  free(bytes.data);
}

/* Loads `data`; if it loads, calls `scaled` (when present and allow_call) and checks the call
 * fails cleanly or succeeds. Returns 1 when it loaded. */
static int load_and_maybe_call(irp_runtime_t* runtime, const unsigned char* data, size_t length, int allow_call) {
  /* Copy into an exact-size heap block so ASan sees any read past the end. */
  unsigned char* copy = malloc(length ? length : 1);
  memcpy(copy, data, length);
  irp_module_t* module = NULL;
  irp_status_t status = irp_module_load(runtime, copy, length, &module);
  if (status == IRP_OK && allow_call) {
    int32_t function = 0;
    if (irp_module_find_function(module, "scaled", &function) == IRP_OK &&
        irp_function_input_count(module, function) == 1) {
      irp_buffer_view_t input, outputs[8];
      if (irp_function_input(module, function, 0, &input, NULL) == IRP_OK && input.length <= 4096) {
        static unsigned char scratch[4096];
        input.data = scratch;
        int32_t outs = irp_function_output_count(module, function);
        if (outs <= 8) (void)irp_call(module, function, &input, 1, outputs, outs);
      }
    }
  }
  irp_module_release(module);
  free(copy);
  return status == IRP_OK;
}

static void test_corruption(void) {
  bytes_t bytes = read_module("small.vmfb");
  char path[512];
  snprintf(path, sizeof(path), "%s/small.code", g_dir);
  FILE* file = fopen(path, "r");
  size_t code_start = 0, code_length = 0;
  CHECK(file != NULL && fscanf(file, "%zu %zu", &code_start, &code_length) == 2, "read small.code");
  if (file != NULL) fclose(file);
  irp_runtime_t* runtime = make_runtime();
  CHECK(load_and_maybe_call(runtime, bytes.data, bytes.length, 1), "small.vmfb loads: %s",
        irp_runtime_error_message(runtime));
  int truncated_loaded = 0;
  for (size_t length = 0; length < bytes.length; ++length) {
    truncated_loaded += load_and_maybe_call(runtime, bytes.data, length, 1);
  }
  /* Only cutting trailing padding can leave a loadable module. */
  CHECK(truncated_loaded < 16, "%d truncations loaded", truncated_loaded);
  /* Flips: everything but the kernel machine code; the ELF's first 1 KB (headers, dynamic
   * section, symbols, relocations) is included, but modules changed there are only loaded. */
  static const int kModes[4] = {-1, 0x00, 0x7f, 0x80}; /* -1: XOR 0xFF */
  size_t elf_header_end = code_start + 1024;
  int loads = 0, tries = 0;
  unsigned char* mutated = malloc(bytes.length);
  for (size_t offset = 0; offset < bytes.length; ++offset) {
    int in_code = offset >= code_start && offset < code_start + code_length;
    if (in_code && offset >= elf_header_end) continue;
    for (int mode = 0; mode < 4; ++mode) {
      memcpy(mutated, bytes.data, bytes.length);
      mutated[offset] = kModes[mode] < 0 ? (unsigned char)(mutated[offset] ^ 0xff) : (unsigned char)kModes[mode];
      if (mutated[offset] == bytes.data[offset]) continue;
      if (getenv("IRP_TEST_VERBOSE") != NULL) fprintf(stderr, "flip offset %zu mode %d\n", offset, mode);
      loads += load_and_maybe_call(runtime, mutated, bytes.length, !in_code);
      ++tries;
    }
  }
  free(mutated);
  printf("corruption: %zu truncations (%d loaded), %d flips (%d still loaded)\n", bytes.length, truncated_loaded, tries, loads);
  irp_runtime_release(runtime);
  free(bytes.data);
}

/* The pool allocator alone: first fit, 64-byte blocks, merging on free, running out of space or slots. */
static void test_pool(void) {
  enum { SIZE = 64 * (IRP_POOL_MAX_BLOCKS + 4) };
  size_t region = 0;
  size_t bytes = irp_vm_pool_storage_bytes(SIZE, &region);
  uint8_t* storage = NULL;
  CHECK(bytes > SIZE && region == SIZE && posix_memalign((void**)&storage, 64, bytes) == 0, "pool storage");
  if (storage == NULL) return;
  irp_vm_pool_t pool;
  irp_vm_pool_init(&pool, storage, SIZE);
  uint8_t* a = irp_vm_pool_alloc(&pool, 1);
  uint8_t* b = irp_vm_pool_alloc(&pool, 100);
  uint8_t* c = irp_vm_pool_alloc(&pool, 64);
  CHECK(a == storage && b == storage + 64 && c == storage + 192, "first fit: %p %p %p", (void*)a, (void*)b, (void*)c);
  CHECK(pool.used_bytes == 256 && pool.high_water == 256, "used %llu high water %llu",
        (unsigned long long)pool.used_bytes, (unsigned long long)pool.high_water);
  CHECK(irp_vm_pool_alloc(&pool, 0) == storage, "zero-length alloc: the region start, no block");
  CHECK(irp_vm_pool_free(&pool, storage, 0) == IRP_VM_POOL_FREED, "free of a zero-length view");
  CHECK(irp_vm_pool_free(&pool, b + 4, 8) == IRP_VM_POOL_NOT_A_BLOCK, "free inside a block");
  CHECK(irp_vm_pool_free(&pool, storage - 64, 8) == IRP_VM_POOL_NOT_A_BLOCK, "free outside the pool");
  CHECK(irp_vm_pool_free(&pool, b, 100) == IRP_VM_POOL_FREED, "free b");
  CHECK(irp_vm_pool_free(&pool, b, 100) == IRP_VM_POOL_ALREADY_FREE, "double free of b");
  CHECK(irp_vm_pool_alloc(&pool, 64) == b, "the freed block is reused first");
  CHECK(irp_vm_pool_alloc(&pool, SIZE) == NULL, "larger than the free space");
  irp_vm_pool_reset(&pool);
  CHECK(pool.block_count == 1 && pool.used_bytes == 0 && pool.high_water == 0, "reset empties the pool");
  /* Every 1-byte block takes a slot; the remainder needs one more. */
  int allocated = 0;
  while (irp_vm_pool_alloc(&pool, 1) != NULL) ++allocated;
  CHECK(allocated == IRP_POOL_MAX_BLOCKS - 1, "%d blocks before the slots ran out", allocated);
  CHECK(pool.size - pool.used_bytes == 5 * 64, "free bytes %llu", (unsigned long long)(pool.size - pool.used_bytes));
  CHECK(irp_vm_pool_alloc(&pool, 5 * 64) != NULL, "an exact fit needs no new slot");
  for (int i = 0; i < IRP_POOL_MAX_BLOCKS; ++i) (void)irp_vm_pool_free(&pool, storage + 64 * i, 1);
  CHECK(pool.block_count == 1 && pool.used_bytes == 0, "all freed: merged into %u block(s)", pool.block_count);
  CHECK(irp_vm_pool_alloc(&pool, SIZE) == storage, "the whole pool in one block after merging");
  free(storage);
}

/* dynamic.vmfb (tests/dynamic_test_modules.py): -1 dims in, real shapes out, named dims, the pool. */
static void test_dynamic(void) {
  irp_runtime_t* runtime = make_runtime();
  bytes_t bytes = read_module("dynamic.vmfb");
  irp_module_t* module = NULL;
  if (irp_module_load(runtime, bytes.data, bytes.length, &module) != IRP_OK) {
    CHECK(0, "load dynamic.vmfb: %s", irp_runtime_error_message(runtime));
    free(bytes.data);
    irp_runtime_release(runtime);
    return;
  }
  float a[64], b[64];
  for (int i = 0; i < 64; ++i) a[i] = (float)i, b[i] = 100.0f + (float)i;
  static const int64_t sizes[][2] = {{3, 4}, {0, 5}, {6, 0}, {0, 0}, {17, 30}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
    irp_buffer_view_t inputs[2] = {f32_view(a, sizes[k][0], 0), f32_view(b, sizes[k][1], 0)};
    irp_buffer_view_t out;
    irp_status_t status = irp_call(module, find(module, "concat"), inputs, 2, &out, 1);
    int64_t n = sizes[k][0], m = sizes[k][1];
    CHECK(status == IRP_OK && out.rank == 1 && out.shape[0] == n + m && out.length == (size_t)(n + m) * 4,
          "concat %lld + %lld: %s", (long long)n, (long long)m, irp_runtime_error_message(runtime));
    if (status != IRP_OK) continue;
    CHECK(memcmp(out.data, a, (size_t)n * 4) == 0 && memcmp((float*)out.data + n, b, (size_t)m * 4) == 0,
          "concat %lld + %lld: values", (long long)n, (long long)m);
    size_t pool_bytes = (size_t)((n + m) * 4 + 63) / 64 * 64;
    CHECK(irp_module_peak_bytes(module) == irp_module_arena_size(module) + pool_bytes, "peak %zu",
          irp_module_peak_bytes(module));
  }
  CHECK(strcmp(irp_function_output_dim_name(module, find(module, "concat"), 0, 0), "n + m") == 0, "output dim name");
  irp_buffer_view_t rows = f32_view(a, 4, 3), out;
  CHECK(irp_call(module, find(module, "copy_rows"), &rows, 1, &out, 1) == IRP_OK && out.rank == 2 &&
            out.shape[0] == 4 && out.shape[1] == 3 && memcmp(out.data, a, 48) == 0,
        "copy_rows: %s", irp_runtime_error_message(runtime));
  rows = f32_view(a, 4, 2);
  expect_call_error(module, runtime, "copy_rows", &rows, 1, 1, IRP_INVALID_ARGUMENT,
                    "input 0 'x' has shape [4, 2] but the signature expects [-1, 3] (-1: any size)");
  rows = f32_view(a, 12, 0);
  expect_call_error(module, runtime, "copy_rows", &rows, 1, 1, IRP_INVALID_ARGUMENT,
                    "input 0 'x' has shape [12] but the signature expects [-1, 3]");
  rows = f32_view(a, 4, 3);
  rows.length = 44;
  expect_call_error(module, runtime, "copy_rows", &rows, 1, 1, IRP_INVALID_ARGUMENT,
                    "input 0 'x' is 44 bytes but its shape needs 48");
  rows = f32_view(a, 100, 3);
  expect_call_error(module, runtime, "copy_rows", &rows, 1, 1, IRP_OUT_OF_MEMORY,
                    "buffer_alloc of 1200 bytes does not fit the 1024-byte pool (1024 bytes free");
  irp_buffer_view_t pair[2] = {f32_view(a, 7, 0), f32_view(b, 9, 0)};
  expect_call_error(module, runtime, "same_n", pair, 2, 1, IRP_INVALID_ARGUMENT,
                    "input 'b' dim 0 (n) is 9 but input 'a' dim 0 (n) is 7");
  irp_buffer_view_t x = f32_view(a, 9, 0);
  expect_call_error(module, runtime, "checked", &x, 1, 1, IRP_RUNTIME_FAILURE,
                    "model check failed: input 'x' dim 0 (n) must be at most 8");
  expect_call_error(module, runtime, "double_free", &x, 1, 0, IRP_RUNTIME_FAILURE, "a pool block already freed");
  expect_call_error(module, runtime, "free_input", &x, 1, 0, IRP_RUNTIME_FAILURE, "not a block buffer_alloc returned");
  expect_call_error(module, runtime, "negative_dim", &x, 1, 1, IRP_RUNTIME_FAILURE,
                    "output 0 'y' dim 0 (n) came back as -1");
  /* An empty input may come without data. */
  irp_buffer_view_t empty = f32_view(NULL, 0, 3);
  CHECK(irp_call(module, find(module, "copy_rows"), &empty, 1, &out, 1) == IRP_OK && out.shape[0] == 0 &&
            out.length == 0 && out.data != NULL,
        "copy_rows of an empty input: %s", irp_runtime_error_message(runtime));
  irp_module_release(module);
  irp_runtime_release(runtime);
  free(bytes.data);
}

/* Counts each workgroup it runs in binding 0 (one u32 per workgroup, x fastest) and fails with
 * code 5 at (3, 0, 1) and code 3 at (1, 2, 0) when push constant 0 is 1. */
static int32_t count_and_fail(const irp_dispatch_state_t* dispatch, const irp_workgroup_state_t* workgroup) {
  const uint32_t* grid = dispatch->workgroup_count;
  const uint32_t* id = workgroup->workgroup_id;
  ((uint32_t*)dispatch->bindings[0])[id[0] + grid[0] * (id[1] + grid[1] * id[2])] += 1;
  if (dispatch->push_constants[0] == 0) return IRP_KERNEL_STATUS_OK;
  if (id[0] == 3 && id[1] == 0 && id[2] == 1) return 5;
  return id[0] == 1 && id[1] == 2 && id[2] == 0 ? IRP_KERNEL_STATUS_INDEX_OUT_OF_RANGE : IRP_KERNEL_STATUS_OK;
}

/* The synchronous device through the HAL's device interface (hal/device.h): every workgroup once,
 * and of two failing workgroups the first in x-fastest order, with none after it run. */
static void test_sync_device(void) {
  irp_hal_device_t device;
  irp_hal_sync_device_initialize(&device);
  irp_kernel_fn_t kernels[] = {count_and_fail};
  irp_hal_executable_t executable = {0};
  executable.entry_point_count = 1;
  executable.kernels = kernels;
  uint32_t runs[4 * 3 * 2] = {0};
  void* bindings[] = {runs};
  size_t binding_lengths[] = {sizeof(runs)};
  uint32_t push_constants[] = {0};
  const uint32_t read_only[] = {0};
  irp_hal_dispatch_t dispatch = {&executable, 0, {{4, 3, 2}, 1, push_constants, bindings, binding_lengths, 1, 0, read_only}, NULL, 0, NULL};
  irp_hal_kernel_failure_t failure = {IRP_KERNEL_STATUS_OK, {0, 0, 0}};
  CHECK(irp_hal_device_dispatch(&device, &dispatch, &failure, NULL) == IRP_OK, "a grid without failures");
  CHECK(failure.status == IRP_KERNEL_STATUS_OK, "no failure reported: %d", (int)failure.status);
  for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); ++i) CHECK(runs[i] == 1, "workgroup %zu ran %u times", i, runs[i]);
  memset(runs, 0, sizeof(runs));
  push_constants[0] = 1;
  CHECK(irp_hal_device_dispatch(&device, &dispatch, &failure, NULL) == IRP_RUNTIME_FAILURE, "a failing grid");
  CHECK(failure.status == IRP_KERNEL_STATUS_INDEX_OUT_OF_RANGE && failure.workgroup_id[0] == 1 &&
            failure.workgroup_id[1] == 2 && failure.workgroup_id[2] == 0,
        "first failure: code %d at (%u, %u, %u)", (int)failure.status, failure.workgroup_id[0],
        failure.workgroup_id[1], failure.workgroup_id[2]);
  size_t failed = 1 + 4 * 2; /* (1, 2, 0) */
  for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); ++i) {
    CHECK(runs[i] == (i <= failed ? 1u : 0u), "workgroup %zu ran %u times", i, runs[i]);
  }
}

#if IRP_HAVE_THREADS
/* The threaded device (hal/threaded_device.h) on the same contract, at several thread counts and
 * many dispatches in a row (what ThreadSanitizer checks, make test-tsan): every workgroup exactly
 * once, and of the two failing workgroups the first in x-fastest order, with every workgroup before
 * it run (those after it may or may not have run). */
static void test_threaded_device(void) {
  const uint32_t thread_counts[] = {2, 3, 4, 8};
  irp_allocator_t allocator = irp_allocator_system();
  for (size_t t = 0; t < sizeof(thread_counts) / sizeof(thread_counts[0]); ++t) {
    irp_hal_device_t* device = NULL;
    char message[128];
    irp_diag_t diag = {message, sizeof(message)};
    CHECK(irp_hal_threaded_device_create(&allocator, thread_counts[t], &diag, &device) == IRP_OK, "create: %s", message);
    if (device == NULL) continue;
    irp_kernel_fn_t kernels[] = {count_and_fail};
    irp_hal_executable_t executable = {0};
    executable.entry_point_count = 1;
    executable.kernels = kernels;
    /* The 24 workgroups' counters, in a binding big enough (IRP_THREAD_INLINE_BYTES) to be shared out. */
    static uint32_t runs[IRP_THREAD_INLINE_BYTES / sizeof(uint32_t)];
    const size_t workgroups = 4 * 3 * 2;
    void* bindings[] = {runs};
    size_t binding_lengths[] = {sizeof(runs)};
    uint32_t push_constants[] = {0};
    const uint32_t read_only[] = {0};
    irp_hal_dispatch_t dispatch = {&executable, 0, {{4, 3, 2}, 1, push_constants, bindings, binding_lengths, 1, 0, read_only}, NULL, 0, NULL};
    irp_hal_thread_span_t spans[8];
    for (int round = 0; round < 200; ++round) {
      memset(runs, 0, sizeof(runs));
      memset(spans, 0, sizeof(spans));
      dispatch.thread_spans = round % 4 == 0 ? spans : NULL; /* traced (the threads' spans) now and then */
      dispatch.thread_span_count = round % 4 == 0 ? thread_counts[t] : 0;
      push_constants[0] = (uint32_t)(round & 1);
      irp_hal_kernel_failure_t failure = {IRP_KERNEL_STATUS_OK, {0, 0, 0}};
      irp_status_t status = irp_hal_device_dispatch(device, &dispatch, &failure, NULL);
      size_t failed = 1 + 4 * 2; /* (1, 2, 0) */
      if (round & 1) {
        CHECK(status == IRP_RUNTIME_FAILURE && failure.status == IRP_KERNEL_STATUS_INDEX_OUT_OF_RANGE &&
                  failure.workgroup_id[0] == 1 && failure.workgroup_id[1] == 2 && failure.workgroup_id[2] == 0,
              "%u threads: first failure: status %d code %d at (%u, %u, %u)", thread_counts[t], status,
              (int)failure.status, failure.workgroup_id[0], failure.workgroup_id[1], failure.workgroup_id[2]);
      } else {
        CHECK(status == IRP_OK && failure.status == IRP_KERNEL_STATUS_OK, "%u threads: no failure", thread_counts[t]);
        uint32_t traced = 0;
        for (uint32_t k = 0; k < dispatch.thread_span_count; ++k) {
          traced += spans[k].workgroups;
          CHECK(spans[k].workgroups == 0 || spans[k].end_ns >= spans[k].start_ns, "span %u runs forward", k);
        }
        CHECK(dispatch.thread_spans == NULL || traced == 24, "%u threads: spans hold %u of 24 workgroups",
              thread_counts[t], traced);
      }
      for (size_t i = 0; i < workgroups; ++i) {
        bool must_run = !(round & 1) || i <= failed;
        CHECK(runs[i] <= 1 && (!must_run || runs[i] == 1), "%u threads, round %d: workgroup %zu ran %u times",
              thread_counts[t], round, i, runs[i]);
      }
    }
    uint32_t single[1] = {0};
    void* single_bindings[] = {single};
    size_t single_lengths[] = {sizeof(single)};
    push_constants[0] = 0;
    irp_hal_dispatch_t one = {&executable, 0, {{1, 1, 1}, 1, push_constants, single_bindings, single_lengths, 1, 0, read_only}, NULL, 0, NULL};
    irp_hal_kernel_failure_t failure = {IRP_KERNEL_STATUS_OK, {0, 0, 0}};
    CHECK(irp_hal_device_dispatch(device, &one, &failure, NULL) == IRP_OK && single[0] == 1, "one workgroup, inline");
    /* A grid of many workgroups over bindings smaller than IRP_THREAD_INLINE_BYTES: the caller runs them all. */
    memset(runs, 0, workgroups * sizeof(runs[0]));
    memset(spans, 0, sizeof(spans));
    size_t small_lengths[] = {workgroups * sizeof(runs[0])};
    irp_hal_dispatch_t small = {&executable, 0, {{4, 3, 2}, 1, push_constants, bindings, small_lengths, 1, 0, read_only}, spans,
                                thread_counts[t], NULL};
    CHECK(irp_hal_device_dispatch(device, &small, &failure, NULL) == IRP_OK && spans[0].workgroups == 24,
          "%u threads: a small dispatch stays on the caller (it ran %u of 24)", thread_counts[t], spans[0].workgroups);
    irp_hal_threaded_device_release(device);
  }
  irp_hal_device_t* device = NULL;
  char message[128];
  irp_diag_t diag = {message, sizeof(message)};
  CHECK(irp_hal_threaded_device_create(&allocator, 1, &diag, &device) == IRP_INVALID_ARGUMENT && device == NULL,
        "a threaded device of 1 thread is refused");
}

/* irp_runtime_set_thread_count: its range, before loading only, and modules that run alike. */
static void test_thread_count(void) {
  irp_runtime_t* runtime = make_runtime();
  CHECK(irp_runtime_thread_count(runtime) >= 1, "a default thread count");
  CHECK(irp_runtime_set_thread_count(runtime, -1) == IRP_INVALID_ARGUMENT, "negative");
  CHECK(irp_runtime_set_thread_count(runtime, IRP_MAX_THREADS + 1) == IRP_INVALID_ARGUMENT &&
            strstr(irp_runtime_error_message(runtime), "expected 0 (one per physical core) to 256") != NULL,
        "too many: %s", irp_runtime_error_message(runtime));
  CHECK(irp_runtime_set_thread_count(runtime, 3) == IRP_OK && irp_runtime_thread_count(runtime) == 3, "3 threads");
  bytes_t bytes = read_module("good.vmfb");
  irp_module_t* module = NULL;
  CHECK(irp_module_load(runtime, bytes.data, bytes.length, &module) == IRP_OK, "load with 3 threads");
  CHECK(irp_runtime_set_thread_count(runtime, 2) == IRP_INVALID_ARGUMENT, "not after a load");
  float a[100], b[100];
  for (int i = 0; i < 100; ++i) a[i] = (float)i, b[i] = 0.5f * (float)i;
  irp_buffer_view_t inputs[2] = {f32_view(a, 100, 0), f32_view(b, 100, 0)}, outputs[1];
  for (int round = 0; round < 100 && module != NULL; ++round) {
    CHECK(irp_call(module, find(module, "main"), inputs, 2, outputs, 1) == IRP_OK, "call");
    const float* sum = outputs[0].data;
    int wrong = 0;
    for (int i = 0; i < 100; ++i) wrong += sum[i] != 1.5f * (float)i;
    CHECK(wrong == 0, "round %d: %d wrong sums", round, wrong);
  }
  irp_module_release(module);
  CHECK(irp_runtime_set_thread_count(runtime, 0) == IRP_OK, "again once released");
  irp_runtime_release(runtime);
  free(bytes.data);
}
#endif

int main(int argc, char** argv) {
  bool threads_only = argc == 3 && strcmp(argv[2], "--threads-only") == 0;
  if (argc != 2 && !threads_only) {
    fprintf(stderr, "usage: runtime_tests DIR_OF_TEST_MODULES [--threads-only]\n");
    return 2;
  }
  g_dir = argv[1];
  if (!threads_only) {
    test_add_and_scale("good.vmfb");
    test_add_and_scale("symbolic_good.vmfb"); /* relocated through the symbol table (R_*_64) */
    test_add_and_scale("flat_good.vmfb");
    test_call_errors();
    test_sync_device();
    test_pool();
    test_dynamic();
    test_bad_modules();
    test_memory_limit();
    test_out_of_memory();
    test_corruption();
  }
#if IRP_HAVE_THREADS
  test_threaded_device();
  test_thread_count();
#endif
  if (g_failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", g_failures);
    return 1;
  }
  printf("runtime_tests: all passed%s\n", threads_only ? " (threads only)" : "");
  return 0;
}
