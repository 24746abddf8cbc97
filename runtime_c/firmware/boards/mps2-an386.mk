# MPS2 with the AN386 FPGA image (Cortex-M4) under qemu-system-arm -M mps2-an386.
include firmware/boards/mps2.mk
