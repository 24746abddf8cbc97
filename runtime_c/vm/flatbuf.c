#include "flatbuf.h"

#include <inttypes.h>
#include <string.h>

#include "../base/little_endian.h"

/* True when [pos, pos + length) lies inside the buffer (no overflow). */
static bool irp_fb_fits(const irp_fb_t* fb, size_t pos, size_t length) {
  return pos <= fb->size && length <= fb->size - pos;
}

/* Follows the uoffset stored at pos to the position it points to. */
static irp_status_t irp_fb_follow(const irp_fb_t* fb, size_t pos, const char* what,
                                  size_t* out_target) {
  if (!irp_fb_fits(fb, pos, 4)) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "flatbuffer: %s offset at %zu is outside the %zu-byte buffer",
                    what, pos, fb->size);
  }
  uint32_t offset = irp_load_u32(fb->data + pos);
  if (offset == 0 || offset > fb->size - pos) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flatbuffer: %s offset %" PRIu32 " at %zu points outside the %zu-byte buffer", what, offset,
                    pos, fb->size);
  }
  *out_target = pos + offset;
  return IRP_OK;
}

static irp_status_t irp_fb_check_table(const irp_fb_t* fb, size_t pos, irp_fb_table_t* out_table) {
  memset(out_table, 0, sizeof(*out_table));
  if ((pos & 3) != 0 || !irp_fb_fits(fb, pos, 4)) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "flatbuffer: table at %zu is misaligned or outside the buffer",
                    pos);
  }
  int32_t soffset;
  uint32_t raw = irp_load_u32(fb->data + pos);
  memcpy(&soffset, &raw, sizeof(soffset));
  /* vtable = pos - soffset, computed in 64-bit signed space to avoid overflow. */
  int64_t vtable = (int64_t)pos - (int64_t)soffset;
  if (vtable < 0 || (vtable & 1) != 0 || !irp_fb_fits(fb, (size_t)vtable, 4)) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "flatbuffer: vtable of table at %zu is outside the buffer",
                    pos);
  }
  uint16_t vtable_size = irp_load_u16(fb->data + vtable);
  uint16_t inline_size = irp_load_u16(fb->data + vtable + 2);
  if (vtable_size < 4 || (vtable_size & 1) != 0 || !irp_fb_fits(fb, (size_t)vtable, vtable_size)) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flatbuffer: vtable of table at %zu has bad size %u", pos, vtable_size);
  }
  if (inline_size < 4 || !irp_fb_fits(fb, pos, inline_size)) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flatbuffer: table at %zu has inline size %u past the end of the buffer", pos,
                    inline_size);
  }
  out_table->pos = pos;
  out_table->vtable = (size_t)vtable;
  out_table->field_count = (uint16_t)((vtable_size - 4) / 2);
  out_table->inline_size = inline_size;
  return IRP_OK;
}

irp_status_t irp_fb_root(const irp_fb_t* fb, const char identifier[4], irp_fb_table_t* out_root) {
  memset(out_root, 0, sizeof(*out_root));
  if (fb->size < 8) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "module is %zu bytes, too short for a flatbuffer header",
                    fb->size);
  }
  if (memcmp(fb->data + 4, identifier, 4) != 0) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "module file identifier is not '%.4s' (not an iree-py module)", identifier);
  }
  size_t root = 0;
  IRP_RETURN_IF_ERROR(irp_fb_follow(fb, 0, "root table", &root));
  return irp_fb_check_table(fb, root, out_root);
}

/* Position of a present field with `width` bytes, or 0 when absent. */
static irp_status_t irp_fb_field(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                                 size_t width, size_t* out_pos) {
  *out_pos = 0;
  if (field >= table->field_count) return IRP_OK;
  uint16_t offset = irp_load_u16(fb->data + table->vtable + 4 + 2 * (size_t)field);
  if (offset == 0) return IRP_OK;
  if (offset < 4 || offset > table->inline_size || width > (size_t)(table->inline_size - offset)) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flatbuffer: field %u of table at %zu (offset %u, %zu bytes) lies outside its %u-byte table",
                    field, table->pos, offset, width, table->inline_size);
  }
  *out_pos = table->pos + offset;
  return IRP_OK;
}

irp_status_t irp_fb_u8(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                       uint8_t default_value, uint8_t* out_value) {
  size_t pos;
  *out_value = default_value;
  IRP_RETURN_IF_ERROR(irp_fb_field(fb, table, field, 1, &pos));
  if (pos != 0) *out_value = fb->data[pos];
  return IRP_OK;
}

irp_status_t irp_fb_u16(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                        uint16_t default_value, uint16_t* out_value) {
  size_t pos;
  *out_value = default_value;
  IRP_RETURN_IF_ERROR(irp_fb_field(fb, table, field, 2, &pos));
  if (pos != 0) *out_value = irp_load_u16(fb->data + pos);
  return IRP_OK;
}

irp_status_t irp_fb_u32(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                        uint32_t default_value, uint32_t* out_value) {
  size_t pos;
  *out_value = default_value;
  IRP_RETURN_IF_ERROR(irp_fb_field(fb, table, field, 4, &pos));
  if (pos != 0) *out_value = irp_load_u32(fb->data + pos);
  return IRP_OK;
}

irp_status_t irp_fb_u64(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                        uint64_t default_value, uint64_t* out_value) {
  size_t pos;
  *out_value = default_value;
  IRP_RETURN_IF_ERROR(irp_fb_field(fb, table, field, 8, &pos));
  if (pos != 0) *out_value = irp_load_u64(fb->data + pos);
  return IRP_OK;
}

irp_status_t irp_fb_table(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                          irp_fb_table_t* out_table, bool* out_present) {
  size_t pos, target;
  memset(out_table, 0, sizeof(*out_table));
  *out_present = false;
  IRP_RETURN_IF_ERROR(irp_fb_field(fb, table, field, 4, &pos));
  if (pos == 0) return IRP_OK;
  IRP_RETURN_IF_ERROR(irp_fb_follow(fb, pos, "table", &target));
  IRP_RETURN_IF_ERROR(irp_fb_check_table(fb, target, out_table));
  *out_present = true;
  return IRP_OK;
}

/* Checks the vector header at pos and that count * element_size bytes follow it. */
static irp_status_t irp_fb_check_vector(const irp_fb_t* fb, size_t pos, size_t element_size,
                                        irp_fb_vector_t* out_vector) {
  if ((pos & 3) != 0 || !irp_fb_fits(fb, pos, 4)) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "flatbuffer: vector at %zu is misaligned or outside the buffer",
                    pos);
  }
  uint32_t count = irp_load_u32(fb->data + pos);
  if ((size_t)count > (fb->size - pos - 4) / element_size) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE,
                    "flatbuffer: vector at %zu of %" PRIu32 " x %zu bytes runs past the end of the %zu-byte buffer",
                    pos, count, element_size, fb->size);
  }
  out_vector->pos = pos + 4;
  out_vector->count = count;
  return IRP_OK;
}

irp_status_t irp_fb_vector(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                           size_t element_size, irp_fb_vector_t* out_vector) {
  size_t pos, target;
  memset(out_vector, 0, sizeof(*out_vector));
  IRP_RETURN_IF_ERROR(irp_fb_field(fb, table, field, 4, &pos));
  if (pos == 0) return IRP_OK;
  IRP_RETURN_IF_ERROR(irp_fb_follow(fb, pos, "vector", &target));
  return irp_fb_check_vector(fb, target, element_size, out_vector);
}

static irp_status_t irp_fb_check_string(const irp_fb_t* fb, size_t pos, const char** out_string,
                                        uint32_t* out_length) {
  irp_fb_vector_t bytes;
  IRP_RETURN_IF_ERROR(irp_fb_check_vector(fb, pos, 1, &bytes));
  if (!irp_fb_fits(fb, bytes.pos, (size_t)bytes.count + 1) || fb->data[bytes.pos + bytes.count] != 0) {
    return IRP_FAIL(fb->diag, IRP_INVALID_MODULE, "flatbuffer: string at %zu is not NUL-terminated", pos);
  }
  *out_string = (const char*)(fb->data + bytes.pos);
  *out_length = bytes.count;
  return IRP_OK;
}

irp_status_t irp_fb_string(const irp_fb_t* fb, const irp_fb_table_t* table, uint16_t field,
                           const char** out_string, uint32_t* out_length) {
  size_t pos, target;
  *out_string = "";
  *out_length = 0;
  IRP_RETURN_IF_ERROR(irp_fb_field(fb, table, field, 4, &pos));
  if (pos == 0) return IRP_OK;
  IRP_RETURN_IF_ERROR(irp_fb_follow(fb, pos, "string", &target));
  return irp_fb_check_string(fb, target, out_string, out_length);
}

irp_status_t irp_fb_vector_table(const irp_fb_t* fb, const irp_fb_vector_t* vector, uint32_t index,
                                 irp_fb_table_t* out_table) {
  size_t target;
  IRP_RETURN_IF_ERROR(irp_fb_follow(fb, vector->pos + 4 * (size_t)index, "vector element", &target));
  return irp_fb_check_table(fb, target, out_table);
}

irp_status_t irp_fb_vector_string(const irp_fb_t* fb, const irp_fb_vector_t* vector,
                                  uint32_t index, const char** out_string, uint32_t* out_length) {
  size_t target;
  IRP_RETURN_IF_ERROR(irp_fb_follow(fb, vector->pos + 4 * (size_t)index, "vector element", &target));
  return irp_fb_check_string(fb, target, out_string, out_length);
}
