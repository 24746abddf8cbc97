/* Bytecode verification: after irp_vm_verify_function returns OK, the interpreter may run the
 * function without any further decoding checks (see flatbuffers/isa.toml for the encoding). */
#ifndef IRP_VM_VERIFIER_H_
#define IRP_VM_VERIFIER_H_

#include "module.h"

/* Checks every instruction of `function`: known opcode, operands inside the bytecode, register
 * indices below the function's counts, branch targets on instruction starts, a terminator last,
 * arena views inside the memory plan, constant / executable / entry point indices, dispatch
 * binding and push constant counts, and `ret` counts. Uses a temporary allocation for the map of
 * instruction starts. */
irp_status_t irp_vm_verify_function(const irp_allocator_t* allocator, const irp_vm_module_t* module,
                                    const irp_vm_function_t* function, irp_diag_t* diag);

#endif /* IRP_VM_VERIFIER_H_ */
