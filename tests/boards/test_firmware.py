"""Firmware images for each emulated board, and the board support on its own (UART, cycle counter,
sleeping wait) through the diagnostic echo firmware (runtime_c/firmware/echo_main.c)."""
from __future__ import annotations

import socket
import subprocess
import time

from iree_py.runtime import board
from iree_py.runtime.board import QemuBoard


def _symbols(target, elf) -> dict[str, int]:
    nm = target.cross_cc.removesuffix("gcc") + "nm"
    lines = subprocess.run([nm, str(elf)], capture_output=True, text=True, check=True).stdout.splitlines()
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in lines) if len(parts) == 3}


def test_firmware_layout(target):
    elf = board.build_firmware(target)
    assert elf.with_suffix(".bin").stat().st_size > 0
    sections = board.elf_size(target, elf)
    symbols = _symbols(target, elf)
    # The device server and the runtime are inside; module storage and RAM are the target's sizes.
    assert "irp_device_serve" in symbols and "irp_module_load" in symbols and "irp_clock_ns" in symbols
    assert sections[".module_storage"] == target.flash_bytes
    assert sections[".noinit"] == target.ram_bytes
    assert symbols["module_storage"] % 64 == 0 and symbols["runtime_ram"] % 64 == 0
    # Code stays far below a microcontroller's flash: runtime + server + libc pieces.
    assert sections[".text"] < 64 * 1024


class _Uart:
    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("socket://").rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=5)

    def read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            assert chunk, f"the board closed the link after {data!r}"
            data += chunk
        return data

    def cycles(self) -> int:
        self.sock.sendall(b"c")
        reply = self.read(17)
        assert reply[:1] == b"C", reply
        return int(reply[1:], 16)


def test_board_support_echo_counter_and_timeout(target):
    with QemuBoard(target, board.build_firmware(target, echo=True)) as emulator:
        uart = _Uart(emulator.url)
        payload = bytes(b for b in range(256) if b not in b"cw") * 8
        uart.sock.sendall(payload)
        assert uart.read(len(payload)) == payload
        # The counter runs, and while the board sleeps waiting for the host it follows real time
        # roughly (qemu -icount with sleep): 0.2 s of waiting is between 0.05 and 5 s of cycles.
        first = uart.cycles()
        time.sleep(0.2)
        waited = (uart.cycles() - first) / board.board_cycles_per_second(target)
        assert 0.05 < waited < 5.0, waited
        # A wait for a byte times out when none comes, and returns it when it does.
        uart.sock.sendall(b"w")
        assert uart.read(2) == b"W0"
        uart.sock.sendall(b"wq")
        assert uart.read(3) == b"W1q"
