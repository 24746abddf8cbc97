/* Board support shared by every board, built on the per-board functions of board.h. */
#include "board.h"

int board_uart_read_timeout(uint8_t* out_byte, uint32_t timeout_ms) {
  uint64_t deadline = board_cycles() + (uint64_t)timeout_ms * board_cycles_per_second / 1000u;
  for (;;) {
    if (board_uart_try_read(out_byte)) return 1;
    if (board_cycles() >= deadline) return 0;
    board_wait();
  }
}
