/* Every build knob of the runtime, with its default. Override with -DNAME=value (CFLAGS_EXTRA).
 * Nothing else in runtime_c/ may test a macro that is not defined here (or by the compiler). */
#ifndef IRP_BASE_CONFIG_H_
#define IRP_BASE_CONFIG_H_

/* 1: a hosted build with an OS (mmap/mprotect for kernel code, aligned_alloc, stdio in tools).
 * 0: bare metal: kernel code is placed in memory from the allocator and run from there. */
#ifndef IRP_HAVE_OS
#define IRP_HAVE_OS 1
#endif

/* 1: ELF kernel libraries are loaded (relocated into fresh memory: hal/elf_loader.c). 0: only flat
 * images (used in place), what bare-metal targets are compiled to (docs/microcontrollers.md); an ELF
 * executable is then refused at load, and the board's flash does not carry the loader. */
#ifndef IRP_HAVE_ELF_LOADER
#define IRP_HAVE_ELF_LOADER IRP_HAVE_OS
#endif

/* 1: the firmware defines irp_clock_ns() (base/clock.h) from its board's cycle counter; the runtime
 * does not. 0: the runtime's own clock: CLOCK_MONOTONIC with IRP_HAVE_OS, else none (always 0).
 * Bare-metal builds default to 1: a board always has some counter (runtime_c/firmware/). */
#ifndef IRP_BOARD_CLOCK
#define IRP_BOARD_CLOCK (!IRP_HAVE_OS)
#endif

/* 1: the threaded CPU driver (hal/threaded_device.c: a pool of POSIX threads sharing each
 * dispatch's workgroups) is built, and runtimes use it when given more than one thread. 0: only the
 * synchronous driver; bare-metal builds have no threads. */
#ifndef IRP_HAVE_THREADS
#define IRP_HAVE_THREADS IRP_HAVE_OS
#endif

/* Most threads (the caller's included) one runtime's CPU dispatches may use. */
#ifndef IRP_MAX_THREADS
#define IRP_MAX_THREADS 256
#endif

/* Nanoseconds an idle worker, or a caller waiting for the workers, spins before it sleeps on a
 * condition variable: dispatches that follow each other within it cost no system call. */
#ifndef IRP_THREAD_SPIN_NS
#define IRP_THREAD_SPIN_NS 50000
#endif

/* A dispatch whose bindings add up to fewer bytes than this runs on the calling thread alone, as a
 * one-workgroup dispatch does: waking the workers and waiting for them costs more than such a
 * kernel (an elementwise op over a few thousand floats, a small matmul) gains from sharing. */
#ifndef IRP_THREAD_INLINE_BYTES
#define IRP_THREAD_INLINE_BYTES 65536
#endif

/* 1: errors carry formatted messages (vsnprintf). 0: only status codes (smaller builds). */
#ifndef IRP_STATUS_MESSAGES
#define IRP_STATUS_MESSAGES 1
#endif

/* Bytes kept for the latest error message of a runtime. */
#ifndef IRP_MAX_MESSAGE_LENGTH
#define IRP_MAX_MESSAGE_LENGTH 256
#endif

/* Largest binding / push constant count of one dispatch (the interpreter keeps these on its
 * stack). The bytecode encodes list lengths as u8, so 255 is the natural ceiling. */
#ifndef IRP_MAX_BINDINGS
#define IRP_MAX_BINDINGS 64
#endif
#ifndef IRP_MAX_PUSH_CONSTANTS
#define IRP_MAX_PUSH_CONSTANTS 64
#endif

/* Deepest chain of VM `call`s, counting the called-from-the-API function as 1. A module whose call
 * graph is acyclic gets register windows for its actual depth (1 without calls); a recursive one gets
 * IRP_MAX_CALL_DEPTH windows, and a call beyond them is a run-time error, never a stack overflow. */
#ifndef IRP_MAX_CALL_DEPTH
#define IRP_MAX_CALL_DEPTH 32
#endif

/* Most bytes one module's state may take (arena, pool, registers, call frames: api/iree_py_runtime.h,
 * irp_runtime_set_memory_limit), checked at load. 0: no fixed number: a hosted build takes the
 * machine's physical memory, a bare-metal build only what its allocator gives (the device server
 * sets its free RAM). */
#ifndef IRP_MAX_MODULE_MEMORY
#define IRP_MAX_MODULE_MEMORY 0
#endif

/* Most instructions one irp_call may execute (kernels' work not counted) before it fails with
 * IRP_RUNTIME_FAILURE; 0: no limit. A damaged branch target or loop bound can make a module loop
 * for ever; a build that must not hang (the fuzz harnesses, a board with no watchdog) sets one. */
#ifndef IRP_MAX_CALL_STEPS
#define IRP_MAX_CALL_STEPS 0
#endif

/* Largest memory image of one kernel library (its PT_LOAD span), in bytes. */
#ifndef IRP_MAX_KERNEL_IMAGE_SIZE
#define IRP_MAX_KERNEL_IMAGE_SIZE (64u * 1024u * 1024u)
#endif

/* Most program headers accepted in a kernel library. */
#ifndef IRP_MAX_ELF_SEGMENTS
#define IRP_MAX_ELF_SEGMENTS 32
#endif

/* Alignment of the arena and of every allocation that holds tensor data. */
#ifndef IRP_ARENA_ALIGNMENT
#define IRP_ARENA_ALIGNMENT 64
#endif

/* 1: the Vulkan driver (hal/drivers/vulkan/) is built: a runtime can run "spirv" executables on a
 * Vulkan device. It needs the Vulkan headers at build time only: libvulkan.so.1 is opened at run
 * time (dlopen), so a machine without it gets an error naming the library, not a failed start.
 * runtime_c/Makefile sets it when <vulkan/vulkan.h> is installed on a hosted build. */
#ifndef IRP_HAVE_VULKAN
#define IRP_HAVE_VULKAN 0
#endif

/* The Vulkan loader the driver opens; the environment variable IRP_VULKAN_LIBRARY overrides it. */
#ifndef IRP_VULKAN_LIBRARY
#define IRP_VULKAN_LIBRARY "libvulkan.so.1"
#endif

/* Most host buffers (inputs the caller owns) one Vulkan submission copies into device memory. */
#ifndef IRP_VULKAN_MAX_STAGED
#define IRP_VULKAN_MAX_STAGED 64
#endif

/* The architecture this build runs kernels for; it must equal an executable's `arch`. */
#ifndef IRP_ARCH_NAME
#if defined(__x86_64__)
#define IRP_ARCH_NAME "x86_64"
#elif defined(__aarch64__)
#define IRP_ARCH_NAME "aarch64"
#elif defined(__riscv) && __riscv_xlen == 64
#define IRP_ARCH_NAME "riscv64"
#elif defined(__riscv) && __riscv_xlen == 32
#define IRP_ARCH_NAME "riscv32"
#elif defined(__ARM_ARCH_7EM__)
#define IRP_ARCH_NAME "thumbv7em"
#else
#define IRP_ARCH_NAME "unknown"
#endif
#endif

#endif /* IRP_BASE_CONFIG_H_ */
