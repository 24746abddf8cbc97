/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum zlib.crc32 computes.
 * Used to check kernel code before it is loaded. Bitwise: no table, a few dozen bytes of code. */
#ifndef IRP_BASE_CRC32_H_
#define IRP_BASE_CRC32_H_

#include <stddef.h>
#include <stdint.h>

uint32_t irp_crc32(const uint8_t* data, size_t length);

#endif /* IRP_BASE_CRC32_H_ */
