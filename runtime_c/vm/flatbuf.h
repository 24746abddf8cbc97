/* A flatbuffer reader that checks every access against the buffer bounds.
 *
 * Positions are byte offsets from the start of the buffer (size_t), never raw pointers, so every
 * step can be checked before it is taken. Each accessor returns IRP_INVALID_MODULE with a message
 * naming the table position and field id when something does not fit; none reads out of bounds
 * on any input. Multi-byte values are read little-endian with memcpy (no alignment assumed). */
#ifndef IRP_VM_FLATBUF_H_
#define IRP_VM_FLATBUF_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/status.h"

typedef struct irp_fb_t {
  const uint8_t* data;
  size_t size;
  irp_diag_t* diag;
} irp_fb_t;

/* A verified table: its position, and its vtable's field count and inline size. */
typedef struct irp_fb_table_t {
  size_t pos;
  size_t vtable;
  uint16_t field_count;
  uint16_t inline_size;
} irp_fb_table_t;

/* A verified vector: position of its first element and element count (all elements fit). */
typedef struct irp_fb_vector_t {
  size_t pos;
  uint32_t count;
} irp_fb_vector_t;

/* Checks the root offset and the 4-byte file identifier at bytes 4..7. */
irp_status_t irp_fb_root(const irp_fb_t* fb, const char identifier[4], irp_fb_table_t* out_root);

/* Scalars: absent fields read as default_value. */
irp_status_t irp_fb_u8(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                       uint8_t default_value, uint8_t* out_value);
irp_status_t irp_fb_u16(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                        uint16_t default_value, uint16_t* out_value);
irp_status_t irp_fb_u32(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                        uint32_t default_value, uint32_t* out_value);
irp_status_t irp_fb_u64(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                        uint64_t default_value, uint64_t* out_value);

/* Offsets to children: *out_present says whether the field is there; absent -> zeroed output. */
irp_status_t irp_fb_table(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                          irp_fb_table_t* out_table, bool* out_present);
irp_status_t irp_fb_vector(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                           size_t element_size, irp_fb_vector_t* out_vector);
/* A string field: NUL-terminated in the buffer (checked); absent -> "" with length 0. */
irp_status_t irp_fb_string(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                           const char** out_string, uint32_t* out_length);

/* Elements of vectors of tables / strings. index must be < vector->count. */
irp_status_t irp_fb_vector_table(const irp_fb_t* fb, const irp_fb_vector_t* vector, uint32_t index,
                                 irp_fb_table_t* out_table);
irp_status_t irp_fb_vector_string(const irp_fb_t* fb, const irp_fb_vector_t* vector,
                                  uint32_t index, const char** out_string, uint32_t* out_length);

#endif /* IRP_VM_FLATBUF_H_ */
