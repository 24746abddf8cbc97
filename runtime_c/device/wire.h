/* Little-endian encoding of message fields (docs/device_protocol.md): a writer that appends to a
 * fixed buffer and a reader that walks a received payload. Both only set a flag on overflow or a
 * short payload, so a message is built or parsed straight through and checked once at the end. */
#ifndef IRP_DEVICE_WIRE_H_
#define IRP_DEVICE_WIRE_H_

#include <stddef.h>
#include <stdint.h>

typedef struct irp_wire_writer_t {
  uint8_t* data;
  size_t capacity;
  size_t length;
  int overflow; /* set when a put did not fit (the put is dropped) */
} irp_wire_writer_t;

void irp_wire_put_u8(irp_wire_writer_t* w, uint8_t value);
void irp_wire_put_u16(irp_wire_writer_t* w, uint16_t value);
void irp_wire_put_u32(irp_wire_writer_t* w, uint32_t value);
void irp_wire_put_u64(irp_wire_writer_t* w, uint64_t value);
void irp_wire_put_bytes(irp_wire_writer_t* w, const void* data, size_t length);
/* u16 length + bytes; NULL is the empty string; cut at 65535 bytes. */
void irp_wire_put_str(irp_wire_writer_t* w, const char* text);

typedef struct irp_wire_reader_t {
  const uint8_t* data;
  size_t length;
  size_t position;
  int bad; /* set when a get ran past the end (it then returns 0 / NULL) */
} irp_wire_reader_t;

uint8_t irp_wire_get_u8(irp_wire_reader_t* r);
uint16_t irp_wire_get_u16(irp_wire_reader_t* r);
uint32_t irp_wire_get_u32(irp_wire_reader_t* r);
uint64_t irp_wire_get_u64(irp_wire_reader_t* r);
/* Points at the next `length` bytes of the payload. */
const uint8_t* irp_wire_get_bytes(irp_wire_reader_t* r, size_t length);
/* Copies a u16-length string into out (capacity bytes with the NUL); too long sets bad. */
void irp_wire_get_str(irp_wire_reader_t* r, char* out, size_t capacity);
size_t irp_wire_remaining(const irp_wire_reader_t* r);

void irp_wire_store_u16(uint8_t* at, uint16_t value);
void irp_wire_store_u32(uint8_t* at, uint32_t value);
uint16_t irp_wire_load_u16(const uint8_t* at);
uint32_t irp_wire_load_u32(const uint8_t* at);

#endif /* IRP_DEVICE_WIRE_H_ */
