#define _DEFAULT_SOURCE 1 /* pthreads, sched_yield, sysconf under -std=c11 */
#include "threaded_device.h"

#if IRP_HAVE_THREADS

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../base/clock.h"
#include "cpu_executable.h"
#include "sync_device.h"

#define IRP_NO_FAILURE UINT64_MAX
/* Claims per thread a dispatch is cut into: fewer claims mean fewer trips to the shared counter,
 * more mean better balance when workgroups differ or a thread is descheduled. */
#define IRP_CHUNKS_PER_THREAD 4

/* Bumped in a fork()'s child: a device made before it has no workers there. */
static atomic_uint irp_fork_epoch;
static pthread_once_t irp_fork_handler_once = PTHREAD_ONCE_INIT;
static void irp_after_fork_in_child(void) { atomic_fetch_add(&irp_fork_epoch, 1); }
static void irp_install_fork_handler(void) { pthread_atfork(NULL, NULL, irp_after_fork_in_child); }

typedef struct irp_threaded_device_t {
  irp_hal_device_t base; /* first: a pointer to it is a pointer to the device */
  irp_allocator_t allocator;
  uint32_t worker_count;  /* threads besides the caller */
  uint32_t workers_started;
  unsigned fork_epoch;    /* irp_fork_epoch when the workers started */
  pthread_t* workers;
  struct irp_worker_t* worker_args; /* what each worker thread is started with */

  pthread_mutex_t mutex;  /* guards sleeping on the two conditions, and the failure record */
  pthread_cond_t wake;    /* a new dispatch (generation) or stopping */
  pthread_cond_t done;    /* the last worker finished the dispatch */
  atomic_ulong generation; /* dispatches published so far */
  atomic_bool stopping;

  /* The dispatch in flight: written before `generation` is bumped, read after it is seen. */
  const irp_hal_dispatch_t* dispatch;
  uint64_t total;                /* workgroups in its grid */
  uint64_t chunk;                /* workgroups taken per claim: about IRP_CHUNKS_PER_THREAD claims per thread */
  atomic_uint_fast64_t next;     /* the next workgroup to take, in x-fastest order */
  atomic_uint_fast64_t failed_at; /* lowest failing workgroup so far (IRP_NO_FAILURE: none) */
  int32_t failure_status;        /* its kernel's status (under mutex) */
  atomic_uint busy;              /* workers still on the dispatch */
} irp_threaded_device_t;

typedef struct irp_worker_t {
  irp_threaded_device_t* device;
  uint32_t thread; /* 1.. (0 is the calling thread) */
} irp_worker_t;

/* Takes workgroups until none is left (or all that are left come after a failure). `thread` names
 * this thread's span when the dispatch is traced. */
static void irp_run_workgroups(irp_threaded_device_t* device, uint32_t thread) {
  const irp_hal_dispatch_t* dispatch = device->dispatch;
  const uint32_t* count = dispatch->state.workgroup_count;
  uint64_t plane = (uint64_t)count[0] * count[1];
  irp_hal_thread_span_t* span = thread < dispatch->thread_span_count ? &dispatch->thread_spans[thread] : NULL;
  uint64_t chunk = device->chunk;
  uint32_t ran = 0;
  for (bool more = true; more;) {
    uint64_t first = atomic_fetch_add_explicit(&device->next, chunk, memory_order_relaxed);
    uint64_t last = first + chunk < device->total ? first + chunk : device->total;
    more = first < device->total;
    for (uint64_t index = first; index < last && more; ++index) {
      if (index > atomic_load_explicit(&device->failed_at, memory_order_relaxed)) {
        more = false;  /* every workgroup left comes after a failure */
        break;
      }
      irp_workgroup_state_t workgroup = {{(uint32_t)(index % count[0]), (uint32_t)(index % plane / count[0]),
                                          (uint32_t)(index / plane)}, 0};
      if (span != NULL && ran == 0) span->start_ns = irp_clock_ns();
      ++ran;
      int32_t result = irp_cpu_executable_issue(dispatch->executable, dispatch->entry_point, &dispatch->state, &workgroup);
      if (result != IRP_KERNEL_STATUS_OK) {
        pthread_mutex_lock(&device->mutex);
        if (index < atomic_load(&device->failed_at)) {
          atomic_store(&device->failed_at, index);
          device->failure_status = result;
        }
        pthread_mutex_unlock(&device->mutex);
      }
    }
  }
  if (span != NULL && ran > 0) {
    span->end_ns = irp_clock_ns();
    span->workgroups = ran;
  }
}

/* Spins up to IRP_THREAD_SPIN_NS for `*word` to differ from `seen`; true if it did. */
static bool irp_spin_until_changed(atomic_ulong* word, unsigned long seen) {
  uint64_t start = irp_clock_ns();
  for (uint32_t i = 0;; ++i) {
    if (atomic_load_explicit(word, memory_order_acquire) != seen) return true;
    if ((i & 63) == 63) {
      if (irp_clock_ns() - start > IRP_THREAD_SPIN_NS) return false;
      sched_yield();  /* more threads than cores (other processes): let the one we wait for run */
    }
  }
}

static void* irp_worker_main(void* arg) {
  irp_threaded_device_t* device = ((irp_worker_t*)arg)->device;
  uint32_t thread = ((irp_worker_t*)arg)->thread;
  unsigned long seen = 0;
  for (;;) {
    if (!irp_spin_until_changed(&device->generation, seen)) {
      pthread_mutex_lock(&device->mutex);
      while (atomic_load(&device->generation) == seen && !atomic_load(&device->stopping)) {
        pthread_cond_wait(&device->wake, &device->mutex);
      }
      pthread_mutex_unlock(&device->mutex);
    }
    if (atomic_load(&device->stopping)) return NULL;
    seen = atomic_load_explicit(&device->generation, memory_order_acquire);
    irp_run_workgroups(device, thread);
    if (atomic_fetch_sub_explicit(&device->busy, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&device->mutex);
      pthread_cond_signal(&device->done);
      pthread_mutex_unlock(&device->mutex);
    }
  }
}

static irp_status_t irp_threaded_dispatch(irp_hal_device_t* base, const irp_hal_dispatch_t* dispatch,
                                          irp_hal_kernel_failure_t* out_failure, irp_diag_t* diag) {
  (void)diag;
  irp_threaded_device_t* device = (irp_threaded_device_t*)base;
  const uint32_t* count = dispatch->state.workgroup_count;
  uint64_t total = (uint64_t)count[0] * count[1] * count[2];
  if (total <= 1 || irp_hal_dispatch_binding_bytes(&dispatch->state) < IRP_THREAD_INLINE_BYTES ||
      atomic_load(&irp_fork_epoch) != device->fork_epoch) {
    return irp_hal_sync_dispatch(dispatch, out_failure);
  }
  device->dispatch = dispatch;
  device->total = total;
  uint64_t claims = (uint64_t)(device->worker_count + 1) * IRP_CHUNKS_PER_THREAD;
  device->chunk = total > claims ? total / claims : 1;
  atomic_store_explicit(&device->next, 0, memory_order_relaxed);
  atomic_store_explicit(&device->failed_at, IRP_NO_FAILURE, memory_order_relaxed);
  atomic_store_explicit(&device->busy, device->worker_count, memory_order_relaxed);
  atomic_fetch_add_explicit(&device->generation, 1, memory_order_release);
  pthread_mutex_lock(&device->mutex);
  pthread_cond_broadcast(&device->wake);  /* no system call when no worker sleeps */
  pthread_mutex_unlock(&device->mutex);

  irp_run_workgroups(device, 0);

  uint64_t start = irp_clock_ns();
  for (uint32_t i = 0; atomic_load_explicit(&device->busy, memory_order_acquire) != 0; ++i) {
    if ((i & 63) == 63) {
      if (irp_clock_ns() - start > IRP_THREAD_SPIN_NS) {
        pthread_mutex_lock(&device->mutex);
        while (atomic_load(&device->busy) != 0) pthread_cond_wait(&device->done, &device->mutex);
        pthread_mutex_unlock(&device->mutex);
        break;
      }
      sched_yield();
    }
  }
  uint64_t failed_at = atomic_load(&device->failed_at);
  if (failed_at == IRP_NO_FAILURE) return IRP_OK;
  uint64_t plane = (uint64_t)count[0] * count[1];
  out_failure->status = device->failure_status;
  out_failure->workgroup_id[0] = (uint32_t)(failed_at % count[0]);
  out_failure->workgroup_id[1] = (uint32_t)(failed_at % plane / count[0]);
  out_failure->workgroup_id[2] = (uint32_t)(failed_at / plane);
  return IRP_RUNTIME_FAILURE;
}

static const irp_hal_device_vtable_t irp_threaded_device_vtable = {
    .prepare_executable = irp_hal_cpu_prepare_executable,
    .release_executable = irp_hal_cpu_release_executable,
    .dispatch = irp_threaded_dispatch,
};

static void irp_stop_workers(irp_threaded_device_t* device) {
  pthread_mutex_lock(&device->mutex);
  atomic_store(&device->stopping, true);
  pthread_cond_broadcast(&device->wake);
  pthread_mutex_unlock(&device->mutex);
  for (uint32_t i = 0; i < device->workers_started; ++i) pthread_join(device->workers[i], NULL);
  device->workers_started = 0;
}

irp_status_t irp_hal_threaded_device_create(const irp_allocator_t* allocator, uint32_t thread_count, irp_diag_t* diag,
                                            irp_hal_device_t** out_device) {
  *out_device = NULL;
  if (thread_count < 2 || thread_count > IRP_MAX_THREADS) {
    return IRP_FAIL(diag, IRP_INVALID_ARGUMENT, "a threaded device takes 2 to %d threads, not %" PRIu32,
                    IRP_MAX_THREADS, thread_count);
  }
  pthread_once(&irp_fork_handler_once, irp_install_fork_handler);
  irp_threaded_device_t* device = allocator->alloc(allocator->ctx, sizeof(*device), 64);
  pthread_t* workers = allocator->alloc(allocator->ctx, (thread_count - 1) * sizeof(pthread_t), 16);
  irp_worker_t* worker_args = allocator->alloc(allocator->ctx, (thread_count - 1) * sizeof(irp_worker_t), 16);
  if (device == NULL || workers == NULL || worker_args == NULL) {
    if (device != NULL) allocator->free(allocator->ctx, device);
    if (workers != NULL) allocator->free(allocator->ctx, workers);
    if (worker_args != NULL) allocator->free(allocator->ctx, worker_args);
    return IRP_FAIL(diag, IRP_OUT_OF_MEMORY, "out of memory for a device of %" PRIu32 " threads", thread_count);
  }
  memset(device, 0, sizeof(*device));
  device->base.vtable = &irp_threaded_device_vtable;
  device->allocator = *allocator;
  device->worker_count = thread_count - 1;
  device->workers = workers;
  device->worker_args = worker_args;
  device->fork_epoch = atomic_load(&irp_fork_epoch);
  pthread_mutex_init(&device->mutex, NULL);
  pthread_cond_init(&device->wake, NULL);
  pthread_cond_init(&device->done, NULL);
  for (uint32_t i = 0; i < device->worker_count; ++i) {
    worker_args[i].device = device;
    worker_args[i].thread = i + 1;
    int error = pthread_create(&workers[i], NULL, irp_worker_main, &worker_args[i]);
    if (error != 0) {
      irp_hal_threaded_device_release(&device->base);
      return IRP_FAIL(diag, IRP_UNSUPPORTED, "could not start worker thread %" PRIu32 " of %" PRIu32 " (%s)", i + 1,
                      thread_count - 1, strerror(error));
    }
    device->workers_started = i + 1;
  }
  *out_device = &device->base;
  return IRP_OK;
}

void irp_hal_threaded_device_release(irp_hal_device_t* base) {
  if (base == NULL) return;
  irp_threaded_device_t* device = (irp_threaded_device_t*)base;
  if (atomic_load(&irp_fork_epoch) == device->fork_epoch) {
    irp_stop_workers(device);
    pthread_cond_destroy(&device->done);
    pthread_cond_destroy(&device->wake);
    pthread_mutex_destroy(&device->mutex);
  }  /* else a child after fork(): no workers, and the mutex may have been held when it forked */
  irp_allocator_t allocator = device->allocator;
  allocator.free(allocator.ctx, device->workers);
  allocator.free(allocator.ctx, device->worker_args);
  allocator.free(allocator.ctx, device);
}

uint32_t irp_physical_core_count(void) {
  /* Distinct (package, core) pairs of the CPUs; hyperthreads share a core. */
  enum { MAX_CPUS = 1024 };
  uint32_t seen_pairs[MAX_CPUS];
  uint32_t pairs = 0;
  for (int cpu = 0; cpu < MAX_CPUS; ++cpu) {
    char path[96];
    unsigned core = 0, package = 0;
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/core_id", cpu);
    FILE* f = fopen(path, "r");
    if (f == NULL) break;
    int got = fscanf(f, "%u", &core);
    fclose(f);
    snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    f = fopen(path, "r");
    if (f != NULL) {
      if (fscanf(f, "%u", &package) != 1) package = 0;
      fclose(f);
    }
    if (got != 1) continue;
    uint32_t pair = (package << 16) ^ core;
    bool known = false;
    for (uint32_t i = 0; i < pairs && !known; ++i) known = seen_pairs[i] == pair;
    if (!known && pairs < MAX_CPUS) seen_pairs[pairs++] = pair;
  }
  if (pairs == 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    pairs = online > 0 ? (uint32_t)online : 1;
  }
  return pairs > IRP_MAX_THREADS ? IRP_MAX_THREADS : pairs;
}
#else
uint32_t irp_physical_core_count(void) { return 1; }
#endif
