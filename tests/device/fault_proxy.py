"""A TCP proxy between a host and a board (or device-sim) that injures the link on purpose:
drops bytes, flips bits, and cuts the connection after a given number of bytes. Decisions are
made per byte by seeded generators (one per direction), so a test sees the same faults each run.

    with FaultProxy(board_port, FaultPlan(drop_rate=0.001, seed=1)) as proxy:
        SerialDevice(f"socket://127.0.0.1:{proxy.port}")
"""
from __future__ import annotations

import random
import select
import socket
import threading
from dataclasses import dataclass, field


@dataclass
class FaultPlan:
    seed: int = 0
    drop_rate: float = 0.0             # probability a byte vanishes
    flip_rate: float = 0.0             # probability a byte gets one bit flipped
    to_board_only: bool = False        # faults only on the host -> board direction
    cut_after: list[int] = field(default_factory=list)  # cut the link once host->board bytes reach each count
    blackhole: bool = False            # forward nothing at all (a board that never answers)


@dataclass
class FaultCounts:
    dropped: int = 0
    flipped: int = 0
    cuts: int = 0
    forwarded: int = 0


class FaultProxy:
    def __init__(self, board_port: int, plan: FaultPlan) -> None:
        self.board_port, self.plan = board_port, plan
        self.counts = FaultCounts()
        self._rng = {"up": random.Random(plan.seed), "down": random.Random(plan.seed + 1)}
        self._cuts = sorted(plan.cut_after)
        self._sent_up = 0  # host -> board bytes forwarded over all connections
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _injure(self, data: bytes, direction: str) -> bytes:
        plan = self.plan
        if plan.blackhole:
            self.counts.dropped += len(data)
            return b""
        if plan.to_board_only and direction == "down":
            return data
        rng, out = self._rng[direction], bytearray()
        for byte in data:
            if rng.random() < plan.drop_rate:
                self.counts.dropped += 1
                continue
            if rng.random() < plan.flip_rate:
                byte ^= 1 << rng.randrange(8)
                self.counts.flipped += 1
            out.append(byte)
        return bytes(out)

    def _serve(self) -> None:
        """One host connection at a time, each bridged to a fresh connection to the board."""
        while not self._stop.is_set():
            ready, _, _ = select.select([self._listener], [], [], 0.05)
            if not ready:
                continue
            host, _ = self._listener.accept()
            board = socket.create_connection(("127.0.0.1", self.board_port))
            try:
                self._pump(host, board)
            finally:
                host.close()
                board.close()

    def _pump(self, host: socket.socket, board: socket.socket) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([host, board], [], [], 0.05)
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                if s is host:
                    if self._cuts and self._sent_up + len(data) >= self._cuts[0]:
                        keep = self._cuts.pop(0) - self._sent_up
                        board.sendall(self._injure(data[:keep], "up"))
                        self._sent_up += keep
                        self.counts.cuts += 1
                        return  # cut: both connections close
                    self._sent_up += len(data)
                    self.counts.forwarded += len(data)
                    board.sendall(self._injure(data, "up"))
                else:
                    host.sendall(self._injure(data, "down"))
