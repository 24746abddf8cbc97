#include "sync_device.h"

#include "../base/clock.h"
#include "cpu_executable.h"

irp_status_t irp_hal_cpu_prepare_executable(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                            irp_hal_executable_t* executable, irp_diag_t* diag) {
  (void)device;
  return irp_cpu_executable_load(allocator, executable, diag);
}

void irp_hal_cpu_release_executable(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                    irp_hal_executable_t* executable) {
  (void)device;
  irp_cpu_executable_unload(allocator, executable);
}

irp_status_t irp_hal_sync_dispatch(const irp_hal_dispatch_t* dispatch, irp_hal_kernel_failure_t* out_failure) {
  const uint32_t* count = dispatch->state.workgroup_count;
  irp_hal_thread_span_t* span = dispatch->thread_span_count > 0 ? dispatch->thread_spans : NULL;
  uint64_t started = span != NULL ? irp_clock_ns() : 0;
  uint32_t ran = 0;
  irp_status_t status = IRP_OK;
  irp_workgroup_state_t workgroup = {{0, 0, 0}, 0};
  for (uint32_t z = 0; z < count[2] && status == IRP_OK; ++z) {
    for (uint32_t y = 0; y < count[1] && status == IRP_OK; ++y) {
      for (uint32_t x = 0; x < count[0] && status == IRP_OK; ++x) {
        workgroup.workgroup_id[0] = x;
        workgroup.workgroup_id[1] = y;
        workgroup.workgroup_id[2] = z;
        int32_t result = irp_cpu_executable_issue(dispatch->executable, dispatch->entry_point, &dispatch->state,
                                                  &workgroup);
        ++ran;
        if (result != IRP_KERNEL_STATUS_OK) {
          out_failure->status = result;
          out_failure->workgroup_id[0] = x;
          out_failure->workgroup_id[1] = y;
          out_failure->workgroup_id[2] = z;
          status = IRP_RUNTIME_FAILURE;
        }
      }
    }
  }
  if (span != NULL && ran > 0) *span = (irp_hal_thread_span_t){started, irp_clock_ns(), ran};
  return status;
}

static irp_status_t irp_sync_dispatch(irp_hal_device_t* device, const irp_hal_dispatch_t* dispatch,
                                      irp_hal_kernel_failure_t* out_failure, irp_diag_t* diag) {
  (void)device, (void)diag;
  return irp_hal_sync_dispatch(dispatch, out_failure);
}

static const irp_hal_device_vtable_t irp_sync_device_vtable = {
    .prepare_executable = irp_hal_cpu_prepare_executable,
    .release_executable = irp_hal_cpu_release_executable,
    .dispatch = irp_sync_dispatch,
};

void irp_hal_sync_device_initialize(irp_hal_device_t* out_device) {
  out_device->vtable = &irp_sync_device_vtable;
}
