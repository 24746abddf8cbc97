/* A diagnostic firmware: the board support without the protocol server, to test a board's UART,
 * cycle counter and sleeping wait on their own (tests/boards/test_board_support.py).
 * Each received byte is answered:
 *   'c'  -> "C" and the cycle counter as 16 hex digits
 *   'w'  -> waits up to 50 ms for one more byte: "W1" and that byte, or "W0" after the timeout
 *   else -> the same byte (echo) */
#include <stdint.h>

#include "board.h"

static void write_hex64(uint64_t value) {
  uint8_t text[16];
  for (int i = 15; i >= 0; --i) {
    text[i] = (uint8_t)"0123456789abcdef"[value & 0xF];
    value >>= 4;
  }
  board_uart_write(text, sizeof(text));
}

int main(void) {
  board_init();
  for (;;) {
    uint8_t byte;
    if (!board_uart_try_read(&byte)) {
      board_wait();
      continue;
    }
    if (byte == 'c') {
      board_uart_write((const uint8_t*)"C", 1);
      write_hex64(board_cycles());
    } else if (byte == 'w') {
      uint8_t next;
      int got = board_uart_read_timeout(&next, 50);
      board_uart_write((const uint8_t*)(got ? "W1" : "W0"), 2);
      if (got) board_uart_write(&next, 1);
    } else {
      board_uart_write(&byte, 1);
    }
  }
}
