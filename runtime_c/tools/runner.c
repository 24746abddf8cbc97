/* irp-run: load a module, feed it inputs from raw files, run a function, write its outputs.
 *
 *   irp-run MODULE.vmfb [--function=NAME] [--input=FILE.bin [--shape=DxDx...]]... [--output=FILE.bin]...
 *           [--output-shapes=FILE.txt] [--repeat=N] [--print] [--stats] [--device=local|vulkan] [--threads=N]
 *           [--trace=FILE.txt]
 *   irp-run --info MODULE.vmfb
 *
 * Inputs are raw little-endian bytes; their dtype and shape come from the signature, except that an
 * input with dynamic dims needs --shape right after its --input (all its dims, e.g. --shape=2x7).
 * --output-shapes writes each output's real shape, one line per output, dims separated by spaces.
 * --stats prints the peak memory of the (last) call: arena + pool high-water mark. Several sets
 * of inputs (k times the function's input count) make k calls in a row in one loaded module, so a
 * stateful module (docs/state.md) sees its state carried over; the outputs are the last call's.
 * Errors go to stderr: exit 1 for runtime errors, 2 for usage errors. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../api/iree_py_runtime.h"

#define MAX_FILES 255
#define TRACE_EVENTS 65536u /* dispatches --trace keeps, as iree_py/cli/trace.py's MAX_EVENTS */

typedef struct options_t {
  const char* module_path;
  const char* function;
  const char* device; /* irp_runtime_set_device; NULL: the default (local) */
  long threads;       /* irp_runtime_set_thread_count; -1: the default */
  const char* inputs[MAX_FILES];
  const char* input_shapes[MAX_FILES]; /* --shape after each --input, or NULL */
  int input_count;
  const char* output_shapes;
  int stats;
  const char* trace; /* --trace: the last call's timeline, as text (write_trace) */
  const char* outputs[MAX_FILES];
  int output_count;
  long repeat;
  int print;
  int info;
} options_t;

static const char* const kDtypeNames[] = {"f32", "f64", "f16", "i8", "u8", "i16", "i32", "i64", "bool", "u16", "u32", "u64"};

static int usage(const char* problem) {
  fprintf(stderr, "irp-run: %s\n", problem);
  fprintf(stderr,
          "usage: irp-run MODULE.vmfb [--function=NAME] [--input=FILE.bin [--shape=DxD...]]... [--output=FILE.bin]...\n"
          "               [--output-shapes=FILE.txt] [--repeat=N] [--print] [--stats] [--device=local|vulkan]\n"
          "               [--threads=N (0: one per physical core, the default)] [--trace=FILE.txt]\n"
          "       irp-run --info MODULE.vmfb\n");
  return 2;
}

static int parse_options(int argc, char** argv, options_t* options) {
  memset(options, 0, sizeof(*options));
  options->threads = -1;
  options->function = "main";
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strncmp(arg, "--device=", 9) == 0) {
      options->device = arg + 9;
    } else if (strncmp(arg, "--function=", 11) == 0) {
      options->function = arg + 11;
    } else if (strncmp(arg, "--input=", 8) == 0) {
      if (options->input_count == MAX_FILES) return usage("too many --input");
      options->inputs[options->input_count++] = arg + 8;
    } else if (strncmp(arg, "--shape=", 8) == 0) {
      if (options->input_count == 0 || options->input_shapes[options->input_count - 1] != NULL) {
        return usage("--shape must follow its --input (one per input)");
      }
      options->input_shapes[options->input_count - 1] = arg + 8;
    } else if (strncmp(arg, "--output-shapes=", 16) == 0) {
      options->output_shapes = arg + 16;
    } else if (strcmp(arg, "--stats") == 0) {
      options->stats = 1;
    } else if (strncmp(arg, "--trace=", 8) == 0) {
      options->trace = arg + 8;
    } else if (strncmp(arg, "--output=", 9) == 0) {
      if (options->output_count == MAX_FILES) return usage("too many --output");
      options->outputs[options->output_count++] = arg + 9;
    } else if (strncmp(arg, "--threads=", 10) == 0) {
      char* end = NULL;
      options->threads = strtol(arg + 10, &end, 10);
      if (*end != '\0' || arg[10] == '\0' || options->threads < 0 || options->threads > 100000) {
        return usage("--threads takes a count (0: one per physical core)");
      }
    } else if (strncmp(arg, "--repeat=", 9) == 0) {
      char* end = NULL;
      options->repeat = strtol(arg + 9, &end, 10);
      if (*end != '\0' || options->repeat < 1 || options->repeat > 1000000) return usage("--repeat takes 1..1000000");
    } else if (strcmp(arg, "--print") == 0) {
      options->print = 1;
    } else if (strcmp(arg, "--info") == 0) {
      options->info = 1;
    } else if (strncmp(arg, "--", 2) == 0) {
      fprintf(stderr, "irp-run: unknown option %s\n", arg);
      return 2;
    } else if (options->module_path == NULL) {
      options->module_path = arg;
    } else {
      return usage("more than one module given");
    }
  }
  if (options->module_path == NULL) return usage("no module given");
  return 0;
}

/* Reads a whole file; returns NULL (and prints why) on failure. */
static void* read_file(const char* path, size_t* out_length) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    fprintf(stderr, "irp-run: cannot open %s\n", path);
    return NULL;
  }
  size_t capacity = 1 << 16, length = 0;
  unsigned char* data = malloc(capacity);
  while (data != NULL) {
    length += fread(data + length, 1, capacity - length, file);
    if (length < capacity) break;
    unsigned char* grown = realloc(data, capacity * 2);
    if (grown == NULL) {
      free(data);
      data = NULL;
      break;
    }
    data = grown;
    capacity *= 2;
  }
  int failed = ferror(file);
  fclose(file);
  if (data == NULL || failed) {
    fprintf(stderr, "irp-run: cannot read %s\n", path);
    free(data);
    return NULL;
  }
  *out_length = length;
  return data;
}

static void print_view(const char* kind, int index, const char* name, const irp_buffer_view_t* view) {
  printf("%s %d '%s': %s[", kind, index, name, (unsigned)view->dtype < sizeof kDtypeNames / sizeof kDtypeNames[0] ? kDtypeNames[view->dtype] : "?");
  for (int i = 0; i < view->rank; ++i) printf("%s%lld", i ? ", " : "", (long long)view->shape[i]);
  printf("] (%zu bytes)", view->length);
}

static void print_values(const irp_buffer_view_t* view) {
  printf(" =");
  size_t shown = 0;
  for (size_t at = 0; view->data != NULL && shown < 8; ++shown) {
    const unsigned char* p = (const unsigned char*)view->data;
    if (view->dtype == IRP_DTYPE_F32 && at + 4 <= view->length) {
      float v;
      memcpy(&v, p + at, 4);
      printf(" %g", v);
      at += 4;
    } else if (view->dtype == IRP_DTYPE_I64 && at + 8 <= view->length) {
      long long v;
      memcpy(&v, p + at, 8);
      printf(" %lld", v);
      at += 8;
    } else if (view->dtype == IRP_DTYPE_I32 && at + 4 <= view->length) {
      int v;
      memcpy(&v, p + at, 4);
      printf(" %d", v);
      at += 4;
    } else if (at < view->length) {
      printf(" 0x%02x", p[at]);
      at += 1;
    } else {
      break;
    }
  }
  printf("\n");
}

/* " dims {batch, seq + 1}" after a signature view with dynamic dims. */
static void print_dim_names(irp_module_t* module, int function, int input, int index, const irp_buffer_view_t* view) {
  int printed = 0;
  for (int d = 0; d < view->rank; ++d) {
    if (view->shape[d] >= 0) continue;
    const char* name = input ? irp_function_input_dim_name(module, function, index, d)
                             : irp_function_output_dim_name(module, function, index, d);
    printf("%s%s", printed++ ? ", " : " dims {", name != NULL && name[0] != '\0' ? name : "?");
  }
  if (printed) printf("}");
}

static void print_signature(irp_module_t* module, int function) {
  printf("function %s\n", irp_function_name(module, function));
  for (int i = 0; i < irp_function_input_count(module, function); ++i) {
    irp_buffer_view_t view;
    const char* name = "";
    irp_function_input(module, function, i, &view, &name);
    print_view("  input", i, name, &view);
    print_dim_names(module, function, 1, i, &view);
    printf("\n");
  }
  for (int i = 0; i < irp_function_output_count(module, function); ++i) {
    irp_buffer_view_t view;
    const char* name = "";
    irp_function_output(module, function, i, &view, &name);
    print_view("  output", i, name, &view);
    print_dim_names(module, function, 0, i, &view);
    printf("\n");
  }
}

/* Parses "2x7x3" into view->shape (rank must match); returns 0 on success. */
static int parse_shape(const char* text, irp_buffer_view_t* view) {
  int rank = 0;
  const char* at = text;
  while (*at != '\0') {
    char* end = NULL;
    long long dim = strtoll(at, &end, 10);
    if (end == at || dim < 0 || rank == IRP_MAX_RANK || (*end != 'x' && *end != '\0')) return 1;
    view->shape[rank++] = dim;
    at = *end == 'x' ? end + 1 : end;
  }
  return rank == view->rank ? 0 : 1;
}

/* The byte size of a view's shape (0 on overflow: callers compare it with a file's length). */
static size_t shape_bytes(const irp_buffer_view_t* view, size_t element_size) {
  size_t bytes = element_size;
  for (int i = 0; i < view->rank; ++i) {
    if (view->shape[i] != 0 && bytes > SIZE_MAX / (size_t)view->shape[i]) return 0;
    bytes *= (size_t)view->shape[i];
  }
  return bytes;
}

/* Bytes per element of each irp_dtype_t, in enum order. */
static size_t element_size_of(irp_dtype_t dtype) {
  static const unsigned char sizes[] = {4, 8, 2, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 8};
  return (unsigned)dtype < sizeof sizes ? sizes[dtype] : 0;
}

static int write_output_shapes(const char* path, const irp_buffer_view_t* outputs, int output_count) {
  FILE* file = fopen(path, "w");
  if (file == NULL) {
    fprintf(stderr, "irp-run: cannot write %s\n", path);
    return 1;
  }
  for (int i = 0; i < output_count; ++i) {
    for (int d = 0; d < outputs[i].rank; ++d) fprintf(file, "%s%lld", d ? " " : "", (long long)outputs[i].shape[d]);
    fprintf(file, "\n");
  }
  return fclose(file) != 0;
}

/* The latest call's trace (irp_module_set_trace), one record a line, for iree_py/runtime/devices.py:
 *   entry INDEX NAME                  (each entry point)
 *   call START_NS END_NS DISPATCHES DROPPED
 *   dispatch ENTRY START_NS END_NS WX WY WZ BINDING_BYTES POOL_BYTES THREADS
 *   span START_NS END_NS WORKGROUPS   (THREADS of them after each dispatch) */
static int write_trace(const char* path, const irp_module_t* module) {
  FILE* file = fopen(path, "w");
  if (file == NULL) {
    fprintf(stderr, "irp-run: cannot write %s\n", path);
    return 1;
  }
  for (int32_t i = 0; i < irp_module_entry_point_count(module); ++i) {
    const char* name = "";
    uint64_t dispatches = 0, ns = 0;
    if (irp_module_entry_point_profile(module, i, &name, &dispatches, &ns) == IRP_OK) fprintf(file, "entry %d %s\n", i, name);
  }
  uint64_t start = 0, end = 0, dropped = 0;
  uint32_t count = 0;
  irp_module_trace_call(module, &start, &end, &count, &dropped);
  fprintf(file, "call %llu %llu %u %llu\n", (unsigned long long)start, (unsigned long long)end, count,
          (unsigned long long)dropped);
  for (uint32_t i = 0; i < count; ++i) {
    irp_trace_event_t e;
    if (irp_module_trace_event(module, i, &e) != IRP_OK) break;
    fprintf(file, "dispatch %d %llu %llu %u %u %u %llu %llu %u\n", e.entry_point, (unsigned long long)e.start_ns,
            (unsigned long long)e.end_ns, e.workgroup_count[0], e.workgroup_count[1], e.workgroup_count[2],
            (unsigned long long)e.binding_bytes, (unsigned long long)e.pool_bytes, e.thread_count);
    for (uint32_t t = 0; t < e.thread_count; ++t) {
      uint64_t span_start = 0, span_end = 0;
      uint32_t workgroups = 0;
      irp_module_trace_thread_span(module, i, t, &span_start, &span_end, &workgroups);
      fprintf(file, "span %llu %llu %u\n", (unsigned long long)span_start, (unsigned long long)span_end, workgroups);
    }
  }
  return fclose(file) != 0;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int write_file(const char* path, const void* data, size_t length) {
  FILE* file = fopen(path, "wb");
  if (file == NULL || fwrite(data, 1, length, file) != length) {
    fprintf(stderr, "irp-run: cannot write %s\n", path);
    if (file != NULL) fclose(file);
    return 1;
  }
  return fclose(file) != 0;
}

/* Loads the inputs, runs, reports; returns the exit code. */
static int run(irp_runtime_t* runtime, irp_module_t* module, const options_t* options) {
  int32_t function;
  if (irp_module_find_function(module, options->function, &function) != IRP_OK) {
    fprintf(stderr, "irp-run: %s\n", irp_runtime_error_message(runtime));
    return 1;
  }
  if (options->info) {
    print_signature(module, function);
    return 0;
  }
  int input_count = irp_function_input_count(module, function);
  int output_count = irp_function_output_count(module, function);
  int calls = input_count > 0 ? options->input_count / input_count : 1;
  if (input_count > 0 ? (calls < 1 || options->input_count % input_count != 0) : options->input_count != 0) {
    fprintf(stderr, "irp-run: %s takes %d inputs (per call), %d --input given\n", options->function, input_count,
            options->input_count);
    return 2;
  }
  if (options->output_count > output_count) {
    fprintf(stderr, "irp-run: %s has %d outputs, %d --output given\n", options->function, output_count,
            options->output_count);
    return 2;
  }
  static irp_buffer_view_t inputs[MAX_FILES], outputs[MAX_FILES];
  static void* input_data[MAX_FILES];
  int code = 0;
  for (int i = 0; i < options->input_count && code == 0; ++i) {
    const char* name = "";
    irp_function_input(module, function, i % input_count, &inputs[i], &name);
    int dynamic = 0;
    for (int d = 0; d < inputs[i].rank; ++d) dynamic |= inputs[i].shape[d] < 0;
    if (options->input_shapes[i] != NULL) {
      if (parse_shape(options->input_shapes[i], &inputs[i]) != 0) {
        fprintf(stderr, "irp-run: input %d '%s': --shape=%s is not %d dims DxDx...\n", i, name,
                options->input_shapes[i], inputs[i].rank);
        code = 2;
        break;
      }
      inputs[i].length = shape_bytes(&inputs[i], element_size_of(inputs[i].dtype));
    } else if (dynamic) {
      fprintf(stderr, "irp-run: input %d '%s' has dynamic dims: give its shape with --shape=DxDx... after its --input\n",
              i, name);
      code = 2;
      break;
    }
    size_t length = 0;
    input_data[i] = read_file(options->inputs[i], &length);
    if (input_data[i] == NULL) {
      code = 1;
    } else if (inputs[i].dtype == IRP_DTYPE_STRING && length >= inputs[i].length + 8) {
      inputs[i].length = length; /* packed strings: offsets, then bytes of any length (the runtime checks) */
    } else if (length != inputs[i].length) {
      fprintf(stderr, "irp-run: input %d '%s' needs %zu bytes but %s has %zu\n", i, name, inputs[i].length,
              options->inputs[i], length);
      code = 1;
    }
    inputs[i].data = input_data[i];
  }
  if (code == 0 && options->trace != NULL && irp_module_set_trace(module, TRACE_EVENTS) != IRP_OK) {
    fprintf(stderr, "irp-run: --trace: %s\n", irp_runtime_error_message(runtime));
    code = 1;
  }
  long repeat = options->repeat > 0 ? options->repeat : 1;
  double* times = code == 0 ? malloc(sizeof(double) * (size_t)repeat) : NULL;
  if (code == 0 && times == NULL) code = 1;
  for (long r = 0; r < repeat && code == 0; ++r) {
    double start = now_us();
    for (int c = 0; c < calls && code == 0; ++c) {
      if (irp_call(module, function, &inputs[c * input_count], input_count, outputs, output_count) != IRP_OK) {
        fprintf(stderr, "irp-run: %s\n", irp_runtime_error_message(runtime));
        code = 1;
      }
    }
    times[r] = now_us() - start;
  }
  if (code == 0 && options->repeat > 0) {
    qsort(times, (size_t)repeat, sizeof(double), compare_doubles);
    printf("%s: %ld calls, median %.1f us, min %.1f us\n", options->function, repeat, times[repeat / 2], times[0]);
  }
  for (int i = 0; i < options->output_count && code == 0; ++i) {
    code = write_file(options->outputs[i], outputs[i].data, outputs[i].length);
  }
  if (code == 0 && options->output_shapes != NULL) code = write_output_shapes(options->output_shapes, outputs, output_count);
  if (code == 0 && options->trace != NULL) code = write_trace(options->trace, module);
  if (code == 0 && options->stats) {
    printf("peak memory: %zu bytes (arena %zu + pool)\n", irp_module_peak_bytes(module), irp_module_arena_size(module));
  }
  if (code == 0 && options->print) {
    print_signature(module, function);
    for (int i = 0; i < output_count; ++i) {
      const char* name = "";
      irp_buffer_view_t sig;
      irp_function_output(module, function, i, &sig, &name);
      print_view("output", i, name, &outputs[i]);
      print_values(&outputs[i]);
    }
  }
  free(times);
  for (int i = 0; i < options->input_count; ++i) free(input_data[i]);
  return code;
}

int main(int argc, char** argv) {
  options_t options;
  int code = parse_options(argc, argv, &options);
  if (code != 0) return code;
  size_t length = 0;
  void* data = read_file(options.module_path, &length);
  if (data == NULL) return 1;
  irp_allocator_t allocator = irp_allocator_system();
  irp_runtime_t* runtime = NULL;
  irp_module_t* module = NULL;
  if (irp_runtime_create(&allocator, &runtime) != IRP_OK) {
    fprintf(stderr, "irp-run: cannot create the runtime\n");
    free(data);
    return 1;
  }
  if (options.threads >= 0 && irp_runtime_set_thread_count(runtime, (int32_t)options.threads) != IRP_OK) {
    fprintf(stderr, "irp-run: --threads=%ld: %s\n", options.threads, irp_runtime_error_message(runtime));
    irp_runtime_release(runtime);
    free(data);
    return 2;
  }
  if (options.device != NULL && irp_runtime_set_device(runtime, options.device) != IRP_OK) {
    fprintf(stderr, "irp-run: --device=%s: %s\n", options.device, irp_runtime_error_message(runtime));
    code = 1;
  } else if (irp_module_load(runtime, data, length, &module) != IRP_OK) {
    fprintf(stderr, "irp-run: %s: %s\n", options.module_path, irp_runtime_error_message(runtime));
    code = 1;
  } else {
    code = run(runtime, module, &options);
  }
  irp_module_release(module);
  irp_runtime_release(runtime);
  free(data);
  return code;
}
