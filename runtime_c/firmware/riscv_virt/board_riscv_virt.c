/* Board support for qemu-system-riscv32 -M virt: NS16550A UART0 (polled; its interrupt, through
 * the PLIC, only wakes the hart from WFI) and the cycle counter.
 *
 * The cycle counter is the mcycle CSR (mcycleh:mcycle). Under qemu it counts host CPU ticks, unless
 * qemu runs with -icount: then it counts virtual nanoseconds, one per instruction with shift=0,
 * which is how iree_py/runtime/board.py starts this board: "cycles" are instructions executed, on a
 * 1 GHz virtual clock. Interrupts never trap (mstatus.MIE stays 0): WFI wakes on a pending one. */
#include "../board.h"
#include "virt_regs.h"

const uint32_t board_cycles_per_second = 1000000000u;

/* The FIFOs stay off (qemu resets them to off): turning them on clears the receive side, which would
 * drop bytes the host sent before this ran, and under qemu 7.2 the one-byte holding register moves
 * bytes faster (about 23 KiB/s echoed) than the FIFO with its interrupt (about 13 KiB/s). */
void board_init(void) {
  VIRT_REG8(VIRT_UART_LCR) = 0x03; /* 8 data bits, no parity, 1 stop bit */
  VIRT_REG8(VIRT_UART_IER) = 0x01; /* interrupt when data is available */
  VIRT_REG32(VIRT_PLIC_PRIORITY(VIRT_UART0_IRQ)) = 1;
  VIRT_REG32(VIRT_PLIC_ENABLE_CONTEXT0) = 1u << VIRT_UART0_IRQ;
  VIRT_REG32(VIRT_PLIC_THRESHOLD_CONTEXT0) = 0;
  __asm__ volatile("csrs mie, %0" ::"r"(VIRT_MIE_MTIE | VIRT_MIE_MEIE));
}

int board_uart_try_read(uint8_t* out_byte) {
  if ((VIRT_REG8(VIRT_UART_LSR) & VIRT_UART_LSR_DR) == 0) return 0;
  *out_byte = VIRT_REG8(VIRT_UART_RBR_THR);
  return 1;
}

void board_uart_write(const uint8_t* data, size_t length) {
  for (size_t i = 0; i < length; ++i) {
    while ((VIRT_REG8(VIRT_UART_LSR) & VIRT_UART_LSR_THRE) == 0) {
    }
    VIRT_REG8(VIRT_UART_RBR_THR) = data[i];
  }
}

/* The high word is read on both sides of the low one: a carry in between shows and is retried. */
uint64_t board_cycles(void) {
  for (;;) {
    uint32_t high, low, high_again;
    __asm__ volatile("csrr %0, mcycleh" : "=r"(high));
    __asm__ volatile("csrr %0, mcycle" : "=r"(low));
    __asm__ volatile("csrr %0, mcycleh" : "=r"(high_again));
    if (high == high_again) return (uint64_t)high << 32 | low;
  }
}

/* mtime's halves, read like mcycle's. */
static uint64_t mtime_now(void) {
  for (;;) {
    uint32_t high = VIRT_REG32(VIRT_MTIME + 4);
    uint32_t low = VIRT_REG32(VIRT_MTIME);
    if (VIRT_REG32(VIRT_MTIME + 4) == high) return (uint64_t)high << 32 | low;
  }
}

/* Arms the machine timer one millisecond ahead (which also clears its pending interrupt), sleeps
 * unless a byte is already there, and completes any UART interrupt claimed at the PLIC so the next
 * byte can raise it again. */
void board_wait(void) {
  uint64_t wake = mtime_now() + VIRT_MTIME_HZ / 1000u;
  VIRT_REG32(VIRT_MTIMECMP0 + 4) = 0xFFFFFFFFu; /* no early match while the halves change */
  VIRT_REG32(VIRT_MTIMECMP0) = (uint32_t)wake;
  VIRT_REG32(VIRT_MTIMECMP0 + 4) = (uint32_t)(wake >> 32);
  if ((VIRT_REG8(VIRT_UART_LSR) & VIRT_UART_LSR_DR) == 0) __asm__ volatile("wfi" ::: "memory");
  uint32_t source = VIRT_REG32(VIRT_PLIC_CLAIM_CONTEXT0);
  if (source != 0) VIRT_REG32(VIRT_PLIC_CLAIM_CONTEXT0) = source;
}
