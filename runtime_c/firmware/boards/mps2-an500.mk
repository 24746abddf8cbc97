# MPS2 with the AN500 FPGA image (Cortex-M7) under qemu-system-arm -M mps2-an500.
include firmware/boards/mps2.mk
