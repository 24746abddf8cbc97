#include "frame.h"

#include "../base/crc32.h"
#include "wire.h"

/* Reads `length` bytes, each within the inter-byte timeout; 0 when one did not come. */
static int irp_frame_read_bytes(const irp_device_io_t* io, uint8_t* out, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    if (!io->read_byte(io->ctx, &out[i], IRP_DEVICE_BYTE_TIMEOUT_MS)) return 0;
  }
  return 1;
}

/* Hunts for the two magic bytes; 0 when nothing arrives within the timeouts. */
static int irp_frame_find_magic(const irp_device_io_t* io, uint32_t idle_timeout_ms) {
  uint8_t byte = 0;
  if (!io->read_byte(io->ctx, &byte, idle_timeout_ms)) return 0;
  for (;;) {
    while (byte != IRP_FRAME_MAGIC0) {
      if (!io->read_byte(io->ctx, &byte, IRP_DEVICE_BYTE_TIMEOUT_MS)) return 0;
    }
    if (!io->read_byte(io->ctx, &byte, IRP_DEVICE_BYTE_TIMEOUT_MS)) return 0;
    if (byte == IRP_FRAME_MAGIC1) return 1;
    /* `byte` may itself start the next frame: look at it again. */
  }
}

int irp_frame_receive(const irp_device_io_t* io, uint8_t* buffer, size_t max_payload,
                      uint32_t idle_timeout_ms, irp_frame_t* out_frame) {
  if (!irp_frame_find_magic(io, idle_timeout_ms)) return 0;
  buffer[0] = IRP_FRAME_MAGIC0;
  buffer[1] = IRP_FRAME_MAGIC1;
  if (!irp_frame_read_bytes(io, buffer + 2, IRP_FRAME_HEADER_BYTES - 2)) return 0;
  uint16_t length = irp_wire_load_u16(buffer + 6);
  if (length > max_payload) return 0;
  if (!irp_frame_read_bytes(io, buffer + IRP_FRAME_HEADER_BYTES, (size_t)length + 4u)) return 0;
  uint32_t expected = irp_wire_load_u32(buffer + IRP_FRAME_HEADER_BYTES + length);
  uint32_t actual = irp_crc32(buffer + 2, IRP_FRAME_HEADER_BYTES - 2 + (size_t)length);
  if (actual != expected) return 0;
  out_frame->type = buffer[2];
  out_frame->seq = irp_wire_load_u16(buffer + 4);
  out_frame->length = length;
  out_frame->payload = buffer + IRP_FRAME_HEADER_BYTES;
  out_frame->crc = actual;
  return 1;
}

size_t irp_frame_seal(uint8_t* buffer, uint8_t type, uint16_t seq, uint16_t length) {
  buffer[0] = IRP_FRAME_MAGIC0;
  buffer[1] = IRP_FRAME_MAGIC1;
  buffer[2] = type;
  buffer[3] = 0;
  irp_wire_store_u16(buffer + 4, seq);
  irp_wire_store_u16(buffer + 6, length);
  uint32_t crc = irp_crc32(buffer + 2, IRP_FRAME_HEADER_BYTES - 2 + (size_t)length);
  irp_wire_store_u32(buffer + IRP_FRAME_HEADER_BYTES + length, crc);
  return IRP_FRAME_HEADER_BYTES + (size_t)length + 4u;
}
