/* A kernel library that imports a symbol it does not define: the loader must refuse it. */
#include "../../hal/kernel_abi.h"

extern int32_t external_helper(void);

int32_t calls_out(const irp_dispatch_state_t* dispatch, const irp_workgroup_state_t* workgroup) {
  (void)dispatch, (void)workgroup;
  return external_helper();
}

static const char* const kNames[] = {"add_f32", "scale_f32", "fail_if_negative"};
static const irp_kernel_fn_t kEntries[] = {calls_out, calls_out, calls_out};
static const irp_kernel_library_t kLibrary = {IRP_KERNEL_ABI_VERSION, 3, kNames, kEntries};

const irp_kernel_library_t* irp_kernel_library_query(uint32_t abi_version) {
  return abi_version == IRP_KERNEL_ABI_VERSION ? &kLibrary : 0;
}
