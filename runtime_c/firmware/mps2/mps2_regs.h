/* Registers of the MPS2 boards as qemu models them (hw/arm/mps2.c, checked with `info mtree` on
 * qemu 7.2 for mps2-an386 and mps2-an500): the CMSDK APB UART0 at 0x40004000 (its RX interrupt
 * is IRQ 0) and the Cortex-M system registers (SysTick, NVIC, SCB). The FPGA's system clock,
 * which clocks the CPU and SysTick, is 25 MHz. */
#ifndef IRP_FIRMWARE_MPS2_REGS_H_
#define IRP_FIRMWARE_MPS2_REGS_H_

#include <stdint.h>

#define MPS2_REG(address) (*(volatile uint32_t*)(address))

#define MPS2_SYSCLK_HZ 25000000u

/* CMSDK APB UART0 */
#define MPS2_UART0 0x40004000u
#define MPS2_UART_DATA (MPS2_UART0 + 0x00)
#define MPS2_UART_STATE (MPS2_UART0 + 0x04)      /* bit 0: TX full, bit 1: RX full */
#define MPS2_UART_CTRL (MPS2_UART0 + 0x08)       /* bit 0: TX enable, 1: RX enable, 3: RX interrupt */
#define MPS2_UART_INTSTATUS (MPS2_UART0 + 0x0C)  /* write 1 to clear; bit 1: RX */
#define MPS2_UART_BAUDDIV (MPS2_UART0 + 0x10)    /* at least 16, or the UART does not send */
#define MPS2_UART_STATE_TX_FULL 0x1u
#define MPS2_UART_STATE_RX_FULL 0x2u
#define MPS2_UART_CTRL_TX_EN 0x1u
#define MPS2_UART_CTRL_RX_EN 0x2u
#define MPS2_UART_CTRL_RX_INTEN 0x8u
#define MPS2_UART_INT_RX 0x2u
#define MPS2_UART0_RX_IRQ 0

/* SysTick: a 24-bit down counter; CTRL bit 0 enable, 1 interrupt, 2 clock = the CPU clock. */
#define MPS2_SYST_CSR 0xE000E010u
#define MPS2_SYST_RVR 0xE000E014u
#define MPS2_SYST_CVR 0xE000E018u

#define MPS2_NVIC_ISER0 0xE000E100u
#define MPS2_SCB_CPACR 0xE000ED88u

#endif /* IRP_FIRMWARE_MPS2_REGS_H_ */
