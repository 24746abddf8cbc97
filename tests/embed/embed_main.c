/* A firmware-style program: the module is a C array compiled in (iree-py compile --emit-c), loaded
 * from there with no file system, run on the raw input bytes read from stdin; the output bytes go
 * to stdout. */
#include <stdio.h>
#include <stdlib.h>

#include "iree_py_runtime.h"
#include "model.h"

int main(void) {
  static unsigned char input[1 << 20];
  size_t input_length = fread(input, 1, sizeof(input), stdin);
  irp_allocator_t allocator = irp_allocator_system();
  irp_runtime_t* runtime = NULL;
  irp_module_t* module = NULL;
  int32_t function = 0;
  irp_buffer_view_t in, out;
  if (irp_runtime_create(&allocator, &runtime) != IRP_OK) return 3;
  if (irp_module_load(runtime, model_module, MODEL_MODULE_SIZE, &module) != IRP_OK ||
      irp_module_find_function(module, "main", &function) != IRP_OK ||
      irp_function_input(module, function, 0, &in, NULL) != IRP_OK) {
    fprintf(stderr, "load: %s\n", irp_runtime_error_message(runtime));
    return 1;
  }
  in.data = input;
  if (input_length != in.length) {
    fprintf(stderr, "input: %zu bytes, expected %zu\n", input_length, in.length);
    return 2;
  }
  if (irp_call(module, function, &in, 1, &out, 1) != IRP_OK) {
    fprintf(stderr, "call: %s\n", irp_runtime_error_message(runtime));
    return 1;
  }
  fwrite(out.data, 1, out.length, stdout);
  irp_module_release(module);
  irp_runtime_release(runtime);
  return 0;
}
