# qemu-system-riscv32 -M virt (RV32IMAFC in machine mode, -bios none).
BOARD_DIR := firmware/riscv_virt
BOARD_SOURCES := firmware/riscv_virt/start.S firmware/riscv_virt/board_riscv_virt.c
BOARD_LDSCRIPT := firmware/riscv_virt/riscv_virt.ld
BOARD_LIBC := --specs=picolibc.specs
BOARD_SIZE := riscv64-unknown-elf-size
BOARD_OBJCOPY := riscv64-unknown-elf-objcopy
