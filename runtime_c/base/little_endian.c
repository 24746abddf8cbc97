#include "little_endian.h"

uint16_t irp_load_u16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }

uint32_t irp_load_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

uint64_t irp_load_u64(const uint8_t* p) {
  return (uint64_t)irp_load_u32(p) | ((uint64_t)irp_load_u32(p + 4) << 32);
}
