/* Unaligned little-endian loads (memcpy-free, byte by byte: no alignment assumed, same result on
 * every host). The caller checks bounds first: the flatbuffer reader (vm/flatbuf.h) for module
 * bytes, the ELF loader (hal/elf_loader.h) for kernel libraries, the interpreter for verified
 * bytecode. Inline: the interpreter decodes every operand through them, and a call per operand
 * was a third of a dynamic-shape module's VM time. */
#ifndef IRP_BASE_LITTLE_ENDIAN_H_
#define IRP_BASE_LITTLE_ENDIAN_H_

#include <stdint.h>

static inline uint16_t irp_load_u16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t irp_load_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t irp_load_u64(const uint8_t* p) {
  return (uint64_t)irp_load_u32(p) | ((uint64_t)irp_load_u32(p + 4) << 32);
}

#endif /* IRP_BASE_LITTLE_ENDIAN_H_ */
