/* Force-included (-include) into the runtime's sources in fuzz builds only (runtime_c/Makefile,
 * FUZZ_RUNTIME_FLAGS): the architecture whose executables vm/module.c loads is a variable
 * (fuzz_support.c) instead of this build's literal, so one harness binary verifies modules built for
 * any target. base/config.h keeps an IRP_ARCH_NAME that is already defined. */
#ifndef IRP_FUZZ_ARCH_H_
#define IRP_FUZZ_ARCH_H_

extern const char* irp_fuzz_arch;
#define IRP_ARCH_NAME irp_fuzz_arch

#endif /* IRP_FUZZ_ARCH_H_ */
