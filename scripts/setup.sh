#!/usr/bin/env bash
# Install everything iree-py and its tests need on a fresh Debian machine, then install iree-py
# itself (which builds the C runtime for this host). Safe to run again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  make gcc
  lld                              # ld.lld links kernel objects into one ELF per target
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross   # the runtime cross-built for arm64
  gcc-arm-linux-gnueabihf libc6-dev-armhf-cross # 32-bit ARM: the kernel ABI layout test
                                   # (not gcc-multilib: Debian won't install it beside cross compilers)
  gcc-riscv64-linux-gnu libc6-dev-riscv64-cross # the runtime cross-built for riscv64 Linux
  gcc-arm-none-eabi libnewlib-arm-none-eabi     # bare-metal runtime and firmware for Cortex-M
  picolibc-riscv64-unknown-elf                  # brings riscv64-unknown-elf-gcc: firmware for riscv32
  qemu-user                        # qemu-aarch64 runs arm64 modules here; qemu-arm the 32-bit probe
  qemu-system-arm qemu-system-misc # emulated boards: MPS2 (Cortex-M4/M7) and riscv32 virt
  flatbuffers-compiler             # flatc: the module schema test
  clang                            # libFuzzer + ASan/UBSan: the C fuzz harnesses (runtime_c/fuzz/)
  mesa-vulkan-drivers libvulkan-dev vulkan-tools   # lavapipe (Vulkan on the CPU), headers for the driver
  spirv-tools spirv-headers vulkan-validationlayers # spirv-val on every shader; the SPIR-V grammar
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -e ".[test]"
