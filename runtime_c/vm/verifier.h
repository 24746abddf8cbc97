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

/* After every function verified: how many register windows a call can need (module->call_depth):
 * the longest chain of `call`s plus one, or IRP_MAX_CALL_DEPTH when the call graph is recursive
 * (the interpreter then stops a call beyond the limit with an error). A module without recursion
 * whose longest chain needs more than IRP_MAX_CALL_DEPTH windows is refused (IRP_UNSUPPORTED). */
irp_status_t irp_vm_compute_call_depth(const irp_allocator_t* allocator, const irp_vm_module_t* module,
                                       irp_diag_t* diag, uint32_t* out_depth);

#endif /* IRP_VM_VERIFIER_H_ */
