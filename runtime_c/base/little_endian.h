/* Unaligned little-endian loads (memcpy-free, byte by byte: no alignment assumed, same result on
 * every host). The caller checks bounds first: the flatbuffer reader (vm/flatbuf.h) for module
 * bytes, the ELF loader (hal/elf_loader.h) for kernel libraries, the interpreter for verified
 * bytecode. */
#ifndef IRP_BASE_LITTLE_ENDIAN_H_
#define IRP_BASE_LITTLE_ENDIAN_H_

#include <stdint.h>

uint16_t irp_load_u16(const uint8_t* p);
uint32_t irp_load_u32(const uint8_t* p);
uint64_t irp_load_u64(const uint8_t* p);

#endif /* IRP_BASE_LITTLE_ENDIAN_H_ */
