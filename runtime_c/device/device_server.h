/* The device protocol server: what a board's firmware runs after start-up. It speaks the framed
 * protocol of docs/device_protocol.md over a byte stream (a UART on a board, a TCP socket in the
 * host simulator), keeps an uploaded module in the board's module storage (flash on a real board,
 * used in place), and runs it with the C runtime on the board's RAM.
 *
 * The server is portable C11 with no OS calls: everything board-specific comes in through the two
 * structs below. It never returns. */
#ifndef IRP_DEVICE_DEVICE_SERVER_H_
#define IRP_DEVICE_DEVICE_SERVER_H_

#include <stddef.h>
#include <stdint.h>

/* The byte stream to the host. */
typedef struct irp_device_io_t {
  void* ctx;
  /* Waits up to timeout_ms for one byte: returns 1 and stores it, or 0 when none arrived. */
  int (*read_byte)(void* ctx, uint8_t* out_byte, uint32_t timeout_ms);
  /* Sends all `length` bytes (blocking). */
  void (*write)(void* ctx, const uint8_t* data, size_t length);
} irp_device_io_t;

/* What the board offers. */
typedef struct irp_device_board_t {
  void* ctx;
  const char* name;              /* the board, e.g. "mps2-an386" */
  const char* arch;              /* the architecture its kernels are built for (IRP_ARCH_NAME) */
  /* Module storage: 64-byte aligned; the accepted module is run from here in place. */
  uint8_t* module_storage;
  size_t module_capacity;
  /* Writes into module storage (memcpy where storage is RAM; a flash driver elsewhere); 0 = OK. */
  int (*storage_write)(void* ctx, size_t offset, const uint8_t* data, size_t length);
  /* RAM for everything the runtime allocates (runtime, module state, arena): the server hands it
   * out with a bump allocator that is reset when a new module is loaded. 64-byte aligned. */
  uint8_t* ram;
  size_t ram_capacity;
  /* A free-running cycle counter and its rate. */
  uint64_t (*cycles)(void* ctx);
  uint32_t cycles_per_second;
} irp_device_board_t;

/* Serves requests forever. */
void irp_device_serve(const irp_device_io_t* io, const irp_device_board_t* board);

#endif /* IRP_DEVICE_DEVICE_SERVER_H_ */
