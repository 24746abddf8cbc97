/* Devices of qemu's riscv "virt" machine used by the firmware (addresses checked with
 * `info mtree` on qemu-system-riscv32 7.2): the NS16550A UART0 at 0x10000000 (PLIC source 10), the
 * PLIC at 0x0C000000 (context 0 = hart 0, machine mode) and the ACLINT machine timer at 0x02004000
 * (mtimecmp of hart 0 at +0x0, mtime at +0x7FF8; 10 MHz). */
#ifndef IRP_FIRMWARE_VIRT_REGS_H_
#define IRP_FIRMWARE_VIRT_REGS_H_

#include <stdint.h>

#define VIRT_REG8(address) (*(volatile uint8_t*)(address))
#define VIRT_REG32(address) (*(volatile uint32_t*)(address))

#define VIRT_UART0 0x10000000u
#define VIRT_UART_RBR_THR (VIRT_UART0 + 0) /* receive buffer / transmit holding */
#define VIRT_UART_IER (VIRT_UART0 + 1)     /* bit 0: interrupt when data is available */
#define VIRT_UART_LCR (VIRT_UART0 + 3)
#define VIRT_UART_LSR (VIRT_UART0 + 5)     /* bit 0: data ready, bit 5: transmit holding empty */
#define VIRT_UART_LSR_DR 0x01u
#define VIRT_UART_LSR_THRE 0x20u
#define VIRT_UART0_IRQ 10u

#define VIRT_PLIC 0x0C000000u
#define VIRT_PLIC_PRIORITY(source) (VIRT_PLIC + 4u * (source))
#define VIRT_PLIC_ENABLE_CONTEXT0 (VIRT_PLIC + 0x2000u)
#define VIRT_PLIC_THRESHOLD_CONTEXT0 (VIRT_PLIC + 0x200000u)
#define VIRT_PLIC_CLAIM_CONTEXT0 (VIRT_PLIC + 0x200004u)

#define VIRT_MTIMECMP0 0x02004000u
#define VIRT_MTIME 0x0200BFF8u
#define VIRT_MTIME_HZ 10000000u

#define VIRT_MIE_MTIE (1u << 7)
#define VIRT_MIE_MEIE (1u << 11)

#endif /* IRP_FIRMWARE_VIRT_REGS_H_ */
