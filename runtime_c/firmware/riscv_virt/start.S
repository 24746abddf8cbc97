/* Start-up for qemu-system-riscv32 -M virt, run with -bios none: qemu's reset code jumps to the
 * start of DRAM (0x80000000), where the linker script puts _start, in machine mode.
 * Sets the stack and global pointers and a trap vector, turns the FPU on (mstatus.FS = Initial),
 * copies .data, zeroes .bss and calls main. */
  .section .text.start, "ax"
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  la sp, __stack_top
  la t0, riscv_virt_trap
  csrw mtvec, t0
  li t0, (1 << 13)
  csrs mstatus, t0
  fscsr zero

  la t0, __data_load
  la t1, __data_start
  la t2, __data_end
1:
  bgeu t1, t2, 2f
  lw t3, 0(t0)
  sw t3, 0(t1)
  addi t0, t0, 4
  addi t1, t1, 4
  j 1b
2:
  la t1, __bss_start
  la t2, __bss_end
3:
  bgeu t1, t2, 4f
  sw zero, 0(t1)
  addi t1, t1, 4
  j 3b
4:
  call main
5:
  wfi
  j 5b

/* A trap has no one to report to over a UART the protocol owns: stop where a debugger sees it.
 * (Interrupts never trap: mstatus.MIE stays 0; they only wake WFI.) */
  .balign 4
riscv_virt_trap:
  wfi
  j riscv_virt_trap
