/* What each emulated board's support code provides to the firmware's main (firmware/main.c):
 * a UART to the host, a free-running cycle counter, and a way to sleep until something happens.
 * One implementation per board family: mps2/ (MPS2 AN386 Cortex-M4, AN500 Cortex-M7) and
 * riscv_virt/ (qemu-system-riscv32 -M virt). Start-up code (vector table or trap vector, .data
 * copy, .bss zeroing, FPU enable) runs before main and is also the board's.
 *
 * Nothing here allocates; the UART is polled, and interrupts are used only to wake the core from
 * board_wait() and (on Cortex-M) to extend the 24-bit SysTick to 64 bits. */
#ifndef IRP_FIRMWARE_BOARD_H_
#define IRP_FIRMWARE_BOARD_H_

#include <stddef.h>
#include <stdint.h>

/* Rate of board_cycles(), in counts per second. */
extern const uint32_t board_cycles_per_second;

/* Sets up the UART, the cycle counter and the interrupts that wake board_wait(). */
void board_init(void);

/* 1 and the byte when the UART has received one, else 0 (never blocks). */
int board_uart_try_read(uint8_t* out_byte);

/* Sends `length` bytes, waiting for room in the transmitter as needed. */
void board_uart_write(const uint8_t* data, size_t length);

/* The cycle counter: 64 bits, never wraps in practice, starts near 0 at board_init(). */
uint64_t board_cycles(void);

/* Sleeps until a byte may have arrived or about a millisecond has passed, whichever is first.
 * Returns at once when a byte is already waiting. Callers loop around it. */
void board_wait(void);

/* The same for every board (board_common.c): waits up to timeout_ms (by the cycle counter) for a
 * byte, sleeping in board_wait() meanwhile; 1 and the byte, or 0 on timeout. */
int board_uart_read_timeout(uint8_t* out_byte, uint32_t timeout_ms);

#endif /* IRP_FIRMWARE_BOARD_H_ */
