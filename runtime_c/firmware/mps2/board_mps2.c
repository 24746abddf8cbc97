/* Board support for the MPS2 boards: CMSDK UART0 (polled; its RX interrupt only wakes the core)
 * and the cycle counter.
 *
 * The cycle counter is SysTick on the 25 MHz CPU clock, reloaded every millisecond and extended to
 * 64 bits by counting reloads in its interrupt. qemu 7.2 does not model the DWT, so its CYCCNT
 * is not an option there (on real silicon it would be). */
#include "../board.h"
#include "mps2_regs.h"

#define TICK_COUNTS (MPS2_SYSCLK_HZ / 1000u) /* one SysTick period: 1 ms */

const uint32_t board_cycles_per_second = MPS2_SYSCLK_HZ;

static volatile uint32_t systick_periods;

void mps2_systick_handler(void) { systick_periods = systick_periods + 1; }

/* The byte stays in the UART until board_uart_try_read takes it; this only acknowledges the
 * interrupt that woke the core. */
void mps2_uart_handler(void) { MPS2_REG(MPS2_UART_INTSTATUS) = MPS2_UART_INT_RX; }

void board_init(void) {
  MPS2_REG(MPS2_UART_BAUDDIV) = 16;
  MPS2_REG(MPS2_UART_CTRL) = MPS2_UART_CTRL_TX_EN | MPS2_UART_CTRL_RX_EN | MPS2_UART_CTRL_RX_INTEN;
  MPS2_REG(MPS2_NVIC_ISER0) = 1u << MPS2_UART0_RX_IRQ;
  MPS2_REG(MPS2_SYST_RVR) = TICK_COUNTS - 1;
  MPS2_REG(MPS2_SYST_CVR) = 0;
  MPS2_REG(MPS2_SYST_CSR) = 0x7; /* enable, interrupt, CPU clock */
  __asm__ volatile("cpsie i" ::: "memory");
}

int board_uart_try_read(uint8_t* out_byte) {
  if ((MPS2_REG(MPS2_UART_STATE) & MPS2_UART_STATE_RX_FULL) == 0) return 0;
  *out_byte = (uint8_t)MPS2_REG(MPS2_UART_DATA);
  return 1;
}

void board_uart_write(const uint8_t* data, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    while (MPS2_REG(MPS2_UART_STATE) & MPS2_UART_STATE_TX_FULL) {
    }
    MPS2_REG(MPS2_UART_DATA) = data[i];
  }
}

/* Reads the period count on both sides of the counter: a reload in between (whose interrupt runs
 * at once) shows as a changed count, and the read is retried. */
uint64_t board_cycles(void) {
  for (;;) {
    uint32_t before = systick_periods;
    uint32_t counter = MPS2_REG(MPS2_SYST_CVR);
    if (systick_periods == before) return (uint64_t)before * TICK_COUNTS + (TICK_COUNTS - 1 - counter);
  }
}

/* With interrupts masked, WFI still wakes on a pending one; checking the UART inside the masked
 * section means a byte that arrived just before cannot be slept through. */
void board_wait(void) {
  __asm__ volatile("cpsid i" ::: "memory");
  if ((MPS2_REG(MPS2_UART_STATE) & MPS2_UART_STATE_RX_FULL) == 0) __asm__ volatile("wfi" ::: "memory");
  __asm__ volatile("cpsie i" ::: "memory");
}
