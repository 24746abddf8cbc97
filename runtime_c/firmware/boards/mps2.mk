# The MPS2 FPGA boards under qemu-system-arm (AN386: Cortex-M4, AN500: Cortex-M7) share everything.
BOARD_DIR := firmware/mps2
BOARD_SOURCES := firmware/mps2/startup.c firmware/mps2/board_mps2.c firmware/mps2/newlib_stubs.c
BOARD_LDSCRIPT := firmware/mps2/mps2.ld
BOARD_LIBC := --specs=nano.specs
BOARD_SIZE := arm-none-eabi-size
BOARD_OBJCOPY := arm-none-eabi-objcopy
