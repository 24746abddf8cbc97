#include "wire.h"

#include <string.h>

void irp_wire_store_u16(uint8_t* at, uint16_t value) {
  at[0] = (uint8_t)value;
  at[1] = (uint8_t)(value >> 8);
}

void irp_wire_store_u32(uint8_t* at, uint32_t value) {
  for (int i = 0; i < 4; ++i) at[i] = (uint8_t)(value >> (8 * i));
}

uint16_t irp_wire_load_u16(const uint8_t* at) { return (uint16_t)(at[0] | (at[1] << 8)); }

uint32_t irp_wire_load_u32(const uint8_t* at) {
  return (uint32_t)at[0] | ((uint32_t)at[1] << 8) | ((uint32_t)at[2] << 16) | ((uint32_t)at[3] << 24);
}

static uint8_t* irp_wire_reserve(irp_wire_writer_t* w, size_t length) {
  if (w->overflow || length > w->capacity - w->length) {
    w->overflow = 1;
    return NULL;
  }
  uint8_t* at = w->data + w->length;
  w->length += length;
  return at;
}

void irp_wire_put_u8(irp_wire_writer_t* w, uint8_t value) { irp_wire_put_bytes(w, &value, 1); }

void irp_wire_put_u16(irp_wire_writer_t* w, uint16_t value) {
  uint8_t* at = irp_wire_reserve(w, 2);
  if (at != NULL) irp_wire_store_u16(at, value);
}

void irp_wire_put_u32(irp_wire_writer_t* w, uint32_t value) {
  uint8_t* at = irp_wire_reserve(w, 4);
  if (at != NULL) irp_wire_store_u32(at, value);
}

void irp_wire_put_u64(irp_wire_writer_t* w, uint64_t value) {
  irp_wire_put_u32(w, (uint32_t)value);
  irp_wire_put_u32(w, (uint32_t)(value >> 32));
}

void irp_wire_put_bytes(irp_wire_writer_t* w, const void* data, size_t length) {
  uint8_t* at = irp_wire_reserve(w, length);
  if (at != NULL && length > 0) memcpy(at, data, length);
}

void irp_wire_put_str(irp_wire_writer_t* w, const char* text) {
  size_t length = text != NULL ? strlen(text) : 0;
  if (length > 0xFFFF) length = 0xFFFF;
  irp_wire_put_u16(w, (uint16_t)length);
  irp_wire_put_bytes(w, text, length);
}

size_t irp_wire_remaining(const irp_wire_reader_t* r) { return r->length - r->position; }

const uint8_t* irp_wire_get_bytes(irp_wire_reader_t* r, size_t length) {
  if (r->bad || length > irp_wire_remaining(r)) {
    r->bad = 1;
    return NULL;
  }
  const uint8_t* at = r->data + r->position;
  r->position += length;
  return at;
}

uint8_t irp_wire_get_u8(irp_wire_reader_t* r) {
  const uint8_t* at = irp_wire_get_bytes(r, 1);
  return at != NULL ? at[0] : 0;
}

uint16_t irp_wire_get_u16(irp_wire_reader_t* r) {
  const uint8_t* at = irp_wire_get_bytes(r, 2);
  return at != NULL ? irp_wire_load_u16(at) : 0;
}

uint32_t irp_wire_get_u32(irp_wire_reader_t* r) {
  const uint8_t* at = irp_wire_get_bytes(r, 4);
  return at != NULL ? irp_wire_load_u32(at) : 0;
}

uint64_t irp_wire_get_u64(irp_wire_reader_t* r) {
  uint64_t low = irp_wire_get_u32(r);
  uint64_t high = irp_wire_get_u32(r);
  return low | (high << 32);
}

void irp_wire_get_str(irp_wire_reader_t* r, char* out, size_t capacity) {
  out[0] = '\0';
  uint16_t length = irp_wire_get_u16(r);
  if (r->bad) return;
  if ((size_t)length >= capacity) {
    r->bad = 1;
    return;
  }
  const uint8_t* at = irp_wire_get_bytes(r, length);
  if (at == NULL) return;
  memcpy(out, at, length);
  out[length] = '\0';
}
