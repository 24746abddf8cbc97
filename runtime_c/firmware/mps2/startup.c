/* Start-up for the MPS2 boards (AN386 Cortex-M4, AN500 Cortex-M7): the vector table, the reset
 * handler (.data copy, .bss zeroing, FPU enable) and the fault handler. qemu loads the ELF into
 * ZBT SSRAM1 at 0x0, where VTOR points at reset. */
#include <stdint.h>
#include <string.h>

#include "mps2_regs.h"

int main(void);
void mps2_systick_handler(void);
void mps2_uart_handler(void);

/* Symbols of the linker script (mps2.ld). */
extern uint32_t __stack_top;
extern uint8_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[];

void mps2_reset_handler(void);

/* A fault has no one to report to over a UART the protocol owns: stop where a debugger sees it. */
static void mps2_fault_handler(void) {
  for (;;) __asm__ volatile("wfi");
}

static void mps2_ignore_interrupt(void) {}

#define MPS2_VECTOR_COUNT (16 + MPS2_UART0_RX_IRQ + 1)

__attribute__((section(".vectors"), used)) static void (*const vectors[MPS2_VECTOR_COUNT])(void) = {
    [0] = (void (*)(void))&__stack_top,
    [1] = mps2_reset_handler,
    [2] = mps2_fault_handler,      /* NMI */
    [3] = mps2_fault_handler,      /* HardFault */
    [4] = mps2_fault_handler,      /* MemManage */
    [5] = mps2_fault_handler,      /* BusFault */
    [6] = mps2_fault_handler,      /* UsageFault */
    [11] = mps2_ignore_interrupt,  /* SVCall */
    [14] = mps2_ignore_interrupt,  /* PendSV */
    [15] = mps2_systick_handler,
    [16 + MPS2_UART0_RX_IRQ] = mps2_uart_handler,
};

void mps2_reset_handler(void) {
  /* Full access to the FPU (CP10, CP11) before any floating-point instruction runs. */
  MPS2_REG(MPS2_SCB_CPACR) |= 0xFu << 20;
  __asm__ volatile("dsb\n\tisb" ::: "memory");
  memcpy(__data_start, __data_load, (size_t)(__data_end - __data_start));
  memset(__bss_start, 0, (size_t)(__bss_end - __bss_start));
  main();
  for (;;) __asm__ volatile("wfi");
}
