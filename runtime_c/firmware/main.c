/* The firmware's main, the same on every board: describe the board to the device protocol server
 * (runtime_c/device/device_server.h) and serve forever.
 *
 * Module storage lives in the board's code memory (section .module_storage, placed by the board's
 * linker script) and is used in place. On the emulated boards that memory is RAM, so
 * storage_write is a memcpy; a real board would program its flash here instead.
 * The runtime's RAM is one static region (section .noinit: not zeroed at boot; the runtime zeroes
 * what it allocates); nothing is allocated from a heap. */
#include <string.h>

#include "../base/clock.h"
#include "../base/config.h"
#include "../device/device_server.h"
#include "board.h"

#ifndef IRP_FIRMWARE_BOARD_NAME
#error "IRP_FIRMWARE_BOARD_NAME must be set by the board's makefile fragment (firmware/boards/*.mk)"
#endif
#ifndef IRP_FIRMWARE_STORAGE_BYTES
#error "IRP_FIRMWARE_STORAGE_BYTES (module storage) must be set by the build"
#endif
#ifndef IRP_FIRMWARE_RAM_BYTES
#error "IRP_FIRMWARE_RAM_BYTES (the runtime's RAM) must be set by the build"
#endif

static uint8_t module_storage[IRP_FIRMWARE_STORAGE_BYTES]
    __attribute__((section(".module_storage"), aligned(64)));
static uint8_t runtime_ram[IRP_FIRMWARE_RAM_BYTES] __attribute__((section(".noinit"), aligned(64)));

/* The runtime's profiling clock (IRP_BOARD_CLOCK): the cycle counter in nanoseconds, split so
 * the product does not overflow. */
uint64_t irp_clock_ns(void) {
  uint64_t cycles = board_cycles();
  uint64_t rate = board_cycles_per_second;
  return cycles / rate * 1000000000u + cycles % rate * 1000000000u / rate;
}

static int uart_read_byte(void* ctx, uint8_t* out_byte, uint32_t timeout_ms) {
  (void)ctx;
  return board_uart_read_timeout(out_byte, timeout_ms);
}

static void uart_write(void* ctx, const uint8_t* data, size_t length) {
  (void)ctx;
  board_uart_write(data, length);
}

static int storage_write(void* ctx, size_t offset, const uint8_t* data, size_t length) {
  (void)ctx;
  if (offset > sizeof(module_storage) || length > sizeof(module_storage) - offset) return 1;
  memcpy(module_storage + offset, data, length);
  return 0;
}

static uint64_t cycles(void* ctx) {
  (void)ctx;
  return board_cycles();
}

int main(void) {
  board_init();
  const irp_device_io_t io = {NULL, uart_read_byte, uart_write};
  const irp_device_board_t board = {
      .ctx = NULL,
      .name = IRP_FIRMWARE_BOARD_NAME,
      .arch = IRP_ARCH_NAME,
      .module_storage = module_storage,
      .module_capacity = sizeof(module_storage),
      .storage_write = storage_write,
      .ram = runtime_ram,
      .ram_capacity = sizeof(runtime_ram),
      .cycles = cycles,
      .cycles_per_second = board_cycles_per_second,
  };
  irp_device_serve(&io, &board);
  return 0;
}
