/* Frames of the device protocol (docs/device_protocol.md):
 *   magic A7 5C | type u8 | reserved u8 | seq u16 | length u16 | payload | crc32 u32
 * with the CRC-32 over type .. payload. The receiver hunts for the magic, drops a frame that is
 * too long, stalls longer than the inter-byte timeout, or fails its CRC, and keeps hunting. */
#ifndef IRP_DEVICE_FRAME_H_
#define IRP_DEVICE_FRAME_H_

#include <stddef.h>
#include <stdint.h>

#include "device_server.h"

#define IRP_FRAME_MAGIC0 0xA7u
#define IRP_FRAME_MAGIC1 0x5Cu
#define IRP_FRAME_HEADER_BYTES 8u /* magic, type, reserved, seq, length */
#define IRP_FRAME_OVERHEAD 12u    /* header + CRC */
/* Largest payload the server accepts and sends: 1 KiB of data plus room for the fields around it. */
#define IRP_DEVICE_MAX_PAYLOAD 1040u
/* A started frame is dropped when its next byte does not come within this time. */
#define IRP_DEVICE_BYTE_TIMEOUT_MS 100u

typedef struct irp_frame_t {
  uint8_t type;
  uint16_t seq;
  uint16_t length;
  const uint8_t* payload; /* points into the receive buffer */
  uint32_t crc;           /* the frame's CRC (identifies a retried request) */
} irp_frame_t;

/* Waits up to idle_timeout_ms for a frame to start, then reads it into `buffer` (which holds
 * IRP_FRAME_OVERHEAD + max_payload bytes). Returns 1 with *out_frame filled for a valid frame;
 * 0 when none started in time or the one that started was dropped. */
int irp_frame_receive(const irp_device_io_t* io, uint8_t* buffer, size_t max_payload,
                      uint32_t idle_timeout_ms, irp_frame_t* out_frame);

/* Completes the frame whose payload (length bytes) already sits at buffer + IRP_FRAME_HEADER_BYTES:
 * writes the header and the CRC. Returns the frame's total length. */
size_t irp_frame_seal(uint8_t* buffer, uint8_t type, uint16_t seq, uint16_t length);

#endif /* IRP_DEVICE_FRAME_H_ */
