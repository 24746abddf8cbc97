/* libFuzzer harness: a byte stream from the host into the device protocol server
 * (device/device_server.c): the frame decoder (device/frame.c, wire.c) and every request's handling,
 * with the hosted runtime behind it on a board of 256 KiB RAM and 256 KiB module storage.
 *
 * The input is the stream as the host sends it (make_corpus.py records real sessions), with one
 * help: every complete frame's CRC is rewritten to the right value before the stream is served,
 * unless bit 7 of the frame's reserved byte (which the server ignores) is set, so mutations reach
 * the requests instead of dying at the CRC. The server never returns: when the stream is used up the
 * harness sends HELLO and an UPLOAD_BEGIN of another module (which releases a loaded module: its
 * kernel pages are the only memory outside the board's RAM), then jumps back out of the server.
 *
 * The board's storage only takes bytes that a trusted module (fuzz_support.h, device_modules/) has
 * at the same offset; other writes fail as a flash write would, so only trusted kernel code runs.
 * Findings besides sanitizer reports: a reply that is not one well-formed frame. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "../base/crc32.h"
#include "../device/device_server.h"
#include "../device/frame.h"
#include "../device/protocol_codes.h"
#include "../device/wire.h"
#include "fuzz_support.h"

#define BOARD_RAM_BYTES ((size_t)256 << 10)
#define BOARD_STORAGE_BYTES ((size_t)256 << 10)

static _Alignas(64) uint8_t g_ram[BOARD_RAM_BYTES];
static _Alignas(64) uint8_t g_storage[BOARD_STORAGE_BYTES];

typedef struct stream_t {
  const uint8_t* data;
  size_t length;
  size_t position;
  int epilogue; /* the closing frames are being served */
  jmp_buf done;
} stream_t;

static uint8_t g_epilogue[2 * IRP_FRAME_OVERHEAD + 64];
static size_t g_epilogue_length;
static uint64_t g_cycles;

/* HELLO (forgets the latest request, so the next one is not taken for a retry), then an
 * UPLOAD_BEGIN of a 1-byte module, which drops whatever module the stream left loaded. */
static void build_epilogue(void) {
  uint8_t* at = g_epilogue;
  irp_wire_writer_t w = {at + IRP_FRAME_HEADER_BYTES, 64, 0, 0};
  irp_wire_put_u16(&w, IRP_PROTOCOL_VERSION);
  at += irp_frame_seal(at, IRP_MSG_HELLO, 0xFFFF, (uint16_t)w.length);
  w = (irp_wire_writer_t){at + IRP_FRAME_HEADER_BYTES, 64, 0, 0};
  irp_wire_put_u32(&w, 1);
  irp_wire_put_u32(&w, 0xC105ED);
  irp_wire_put_str(&w, irp_fuzz_host_arch);
  at += irp_frame_seal(at, IRP_MSG_UPLOAD_BEGIN, 0xFFFE, (uint16_t)w.length);
  g_epilogue_length = (size_t)(at - g_epilogue);
}

static int stream_read_byte(void* ctx, uint8_t* out_byte, uint32_t timeout_ms) {
  stream_t* stream = ctx;
  (void)timeout_ms;
  if (stream->position == stream->length) {
    if (stream->epilogue) longjmp(stream->done, 1);
    stream->epilogue = 1;
    stream->data = g_epilogue;
    stream->length = g_epilogue_length;
    stream->position = 0;
    return 0; /* the stream paused: a partial frame is dropped, as after a timeout */
  }
  *out_byte = stream->data[stream->position++];
  return 1;
}

/* Every write of the server is one whole frame: a response or BUSY. */
static void stream_write(void* ctx, const uint8_t* data, size_t length) {
  (void)ctx;
  IRP_FUZZ_ASSERT(length >= IRP_FRAME_OVERHEAD && data[0] == IRP_FRAME_MAGIC0 && data[1] == IRP_FRAME_MAGIC1,
                  "reply of %zu bytes is not a frame", length);
  uint16_t payload = irp_wire_load_u16(data + 6);
  IRP_FUZZ_ASSERT(payload <= IRP_DEVICE_MAX_PAYLOAD && length == IRP_FRAME_OVERHEAD + (size_t)payload,
                  "reply frame says %u payload bytes in %zu", payload, length);
  uint32_t crc = irp_crc32(data + 2, IRP_FRAME_HEADER_BYTES - 2 + (size_t)payload);
  IRP_FUZZ_ASSERT(crc == irp_wire_load_u32(data + IRP_FRAME_HEADER_BYTES + payload), "reply frame has a bad CRC");
  IRP_FUZZ_ASSERT(data[2] == IRP_MSG_BUSY || (data[2] & IRP_MSG_RESPONSE) != 0, "reply of type %u", data[2]);
  IRP_FUZZ_ASSERT(data[2] == IRP_MSG_BUSY || payload >= 1, "a response without its status byte");
  if (data[2] != IRP_MSG_BUSY) irp_fuzz_note("  reply to 0x%02x: status %u", data[2] & 0x7Fu, data[IRP_FRAME_HEADER_BYTES]);
}

static int board_storage_write(void* ctx, size_t offset, const uint8_t* data, size_t length) {
  (void)ctx;
  if (offset > BOARD_STORAGE_BYTES || length > BOARD_STORAGE_BYTES - offset) return 1;
  for (size_t i = 0; i < irp_fuzz_device_module_count(); ++i) {
    size_t module_length = 0;
    const uint8_t* module = irp_fuzz_device_module(i, &module_length);
    if (offset <= module_length && length <= module_length - offset && memcmp(module + offset, data, length) == 0) {
      memcpy(g_storage + offset, data, length);
      return 0;
    }
  }
  return 1;
}

static uint64_t board_cycles(void* ctx) {
  (void)ctx;
  return g_cycles += 1000;
}

/* Rewrites the CRC of every complete frame whose reserved byte has bit 7 clear, walking the stream
 * as the receiver hunts: a too-long frame is skipped after its header. */
static void fix_crcs(uint8_t* s, size_t n) {
  size_t i = 0;
  while (n - i >= IRP_FRAME_OVERHEAD) {
    if (s[i] != IRP_FRAME_MAGIC0 || s[i + 1] != IRP_FRAME_MAGIC1) {
      i += 1;
      continue;
    }
    uint16_t length = irp_wire_load_u16(s + i + 6);
    if (length > IRP_DEVICE_MAX_PAYLOAD) {
      i += IRP_FRAME_HEADER_BYTES;
      continue;
    }
    if ((size_t)length + IRP_FRAME_OVERHEAD > n - i) break;
    if ((s[i + 3] & 0x80u) == 0) {
      uint32_t crc = irp_crc32(s + i + 2, IRP_FRAME_HEADER_BYTES - 2 + (size_t)length);
      irp_wire_store_u32(s + i + IRP_FRAME_HEADER_BYTES + length, crc);
    }
    i += IRP_FRAME_OVERHEAD + (size_t)length;
  }
}

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  irp_fuzz_load_trust(*argc > 0 ? (*argv)[0] : NULL);
  build_epilogue();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t* copy = malloc(size > 0 ? size : 1);
  if (size > 0) memcpy(copy, data, size);
  fix_crcs(copy, size);
  static stream_t stream; /* static: longjmp leaves the server's frames behind */
  stream.data = copy;
  stream.length = size;
  stream.position = 0;
  stream.epilogue = 0;
  g_cycles = 0;
  irp_device_io_t io = {&stream, stream_read_byte, stream_write};
  irp_device_board_t board = {NULL, "fuzz-board", irp_fuzz_host_arch, g_storage, BOARD_STORAGE_BYTES,
                              board_storage_write, g_ram, BOARD_RAM_BYTES, board_cycles, 1000000000u};
  if (setjmp(stream.done) == 0) irp_device_serve(&io, &board);
  free(copy);
  return 0;
}
