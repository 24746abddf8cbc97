"""The device protocol's frames and messages (docs/device_protocol.md), host side.

Mirrors runtime_c/device/frame.h and protocol_codes.h; tests/device checks both sides agree byte
for byte. Everything here is pure: bytes in, bytes or records out.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum

from iree_py.errors import IreeRuntimeError

VERSION = 1
MAGIC = b"\xa7\x5c"
HEADER = struct.Struct("<2sBBHH")  # magic, type, reserved, seq, length
HEADER_BYTES = HEADER.size
CRC_BYTES = 4
RESPONSE = 0x80


class Msg(IntEnum):
    HELLO = 0x01
    STATUS = 0x02
    UPLOAD_BEGIN = 0x03
    UPLOAD_DATA = 0x04
    UPLOAD_END = 0x05
    RUN_BEGIN = 0x06
    INPUT_DATA = 0x07
    RUN = 0x08
    READ_OUTPUT = 0x09
    BENCHMARK = 0x0A
    PROFILE = 0x0B
    TRACE = 0x0C
    BUSY = 0xFF


class Refusal(IntEnum):
    BAD_REQUEST = 1
    WRONG_ARCH = 2
    TOO_BIG = 3
    NO_UPLOAD = 4
    BAD_OFFSET = 5
    INCOMPLETE = 6
    BAD_CRC = 7
    LOAD_FAILED = 8
    STORAGE = 9
    NO_MODULE = 10
    NO_FUNCTION = 11
    OUT_OF_RAM = 12
    BAD_INPUT = 13
    RUN_FAILED = 14
    NO_RUN = 15


class ModuleState(IntEnum):
    EMPTY = 0
    UPLOADING = 1
    ACCEPTED = 2


class DeviceRefused(IreeRuntimeError):
    """The board answered a request with a refusal."""

    def __init__(self, request: Msg, code: int, runtime_status: int, message: str) -> None:
        self.request = request
        self.code = code
        self.runtime_status = runtime_status
        self.board_message = message
        name = Refusal(code).name if code in Refusal._value2member_map_ else f"code {code}"
        super().__init__(f"board refused {request.name}: {name}: {message}")


# --- frames ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes


def encode_frame(type_: int, seq: int, payload: bytes) -> bytes:
    if len(payload) > 0xFFFF:
        raise ValueError(f"frame payload of {len(payload)} bytes; at most 65535")
    header = HEADER.pack(MAGIC, type_, 0, seq & 0xFFFF, len(payload))
    body = header[2:] + payload
    return MAGIC + body + struct.pack("<I", zlib.crc32(body))


def decode_frames(data: bytes, max_payload: int = 0xFFFF) -> list[Frame]:
    """Every valid frame in `data`, skipping garbage and broken frames (for tests and tools;
    the client reads frames off the link with SerialDevice._read_frame)."""
    frames, at = [], 0
    while True:
        start = data.find(MAGIC, at)
        if start < 0 or start + HEADER_BYTES > len(data):
            return frames
        _, type_, _, seq, length = HEADER.unpack_from(data, start)
        end = start + HEADER_BYTES + length
        if length > max_payload or end + CRC_BYTES > len(data):
            at = start + 1
            continue
        (crc,) = struct.unpack_from("<I", data, end)
        if crc != zlib.crc32(data[start + 2:end]):
            at = start + 1
            continue
        frames.append(Frame(type_, seq, bytes(data[start + HEADER_BYTES:end])))
        at = end + CRC_BYTES


def check_frame(header_and_rest: bytes, max_payload: int) -> Frame | None:
    """A frame from its exact bytes (magic .. crc), or None when its length or CRC is wrong."""
    frames = decode_frames(header_and_rest, max_payload)
    return frames[0] if len(frames) == 1 else None


# --- fields ---------------------------------------------------------------------------------

class Writer:
    def __init__(self) -> None:
        self.data = bytearray()

    def u8(self, v: int) -> "Writer":
        self.data += struct.pack("<B", v)
        return self

    def u16(self, v: int) -> "Writer":
        self.data += struct.pack("<H", v)
        return self

    def u32(self, v: int) -> "Writer":
        self.data += struct.pack("<I", v)
        return self

    def u64(self, v: int) -> "Writer":
        self.data += struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)
        return self

    def str(self, s: str) -> "Writer":
        b = s.encode()
        return self.u16(len(b)).raw(b)

    def raw(self, b: bytes) -> "Writer":
        self.data += b
        return self

    def shape(self, shape: tuple[int, ...]) -> "Writer":
        self.u8(len(shape))
        for d in shape:
            self.u64(d)
        return self

    def bytes(self) -> bytes:
        return bytes(self.data)


class Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data, self.at, self.what = data, 0, what

    def _take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise IreeRuntimeError(f"{self.what}: response too short ({len(self.data)} bytes; needed {self.at + n})")
        b = self.data[self.at:self.at + n]
        self.at += n
        return b

    def u8(self) -> int:
        return self._take(1)[0]

    def u16(self) -> int:
        return struct.unpack("<H", self._take(2))[0]

    def u32(self) -> int:
        return struct.unpack("<I", self._take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self._take(8))[0]

    def str(self) -> str:
        return self._take(self.u16()).decode(errors="replace")

    def raw(self, n: int | None = None) -> bytes:
        return self._take(len(self.data) - self.at if n is None else n)

    def shape(self) -> tuple[int, ...]:
        return tuple(struct.unpack("<q", self._take(8))[0] for _ in range(self.u8()))


def parse_reply(request: Msg, payload: bytes) -> Reader:
    """The response's data after an OK status; a refusal raises DeviceRefused."""
    r = Reader(payload, request.name)
    status = r.u8()
    if status == 0:
        return r
    runtime_status = r.u8()
    raise DeviceRefused(request, status, runtime_status, r.str())


# --- messages -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hello:
    version: int
    max_payload: int
    ram_bytes: int
    module_capacity: int
    cycles_per_second: int
    board: str
    arch: str


@dataclass(frozen=True)
class Status:
    state: ModuleState
    size: int
    crc: int
    held: int
    arch: str


@dataclass(frozen=True)
class TensorInfo:
    dtype: int  # irp_dtype_t / DType.module_code
    shape: tuple[int, ...]
    nbytes: int


@dataclass(frozen=True)
class RunSummary:
    cycles: int
    outputs: list[TensorInfo]
    profiled_entry_points: int


@dataclass(frozen=True)
class BenchmarkResult:
    runs: int
    min_cycles: int
    median_cycles: int
    max_cycles: int


@dataclass(frozen=True)
class EntryPointCycles:
    entry_point: str
    dispatches: int
    cycles: int


@dataclass(frozen=True)
class DispatchCycles:
    """One dispatch of a traced run, in the board's cycle counter."""
    entry_point: int  # index, as in PROFILE's entries
    start: int
    end: int
    workgroup_count: tuple[int, int, int]
    binding_bytes: int
    pool_bytes: int


@dataclass(frozen=True)
class TracePage:
    """A TRACE reply: the call's start and end cycles, how many dispatches it kept and dropped, and
    the dispatches from the one asked for on."""
    start: int
    end: int
    total: int
    dropped: int
    dispatches: list[DispatchCycles]


def hello_request() -> bytes:
    return Writer().u16(VERSION).bytes()


def parse_hello(r: Reader) -> Hello:
    return Hello(r.u16(), r.u16(), r.u32(), r.u32(), r.u32(), r.str(), r.str())


def parse_status(r: Reader) -> Status:
    return Status(ModuleState(r.u8()), r.u32(), r.u32(), r.u32(), r.str())


def upload_begin_request(size: int, crc: int, arch: str) -> bytes:
    return Writer().u32(size).u32(crc).str(arch).bytes()


def upload_data_request(offset: int, chunk: bytes) -> bytes:
    return Writer().u32(offset).raw(chunk).bytes()


def run_begin_request(function: str, inputs: list[TensorInfo]) -> bytes:
    w = Writer().str(function).u8(len(inputs))
    for t in inputs:
        w.u8(t.dtype).shape(t.shape).u32(t.nbytes)
    return w.bytes()


def input_data_request(index: int, offset: int, chunk: bytes) -> bytes:
    return Writer().u8(index).u32(offset).raw(chunk).bytes()


def run_request(profile: bool, trace: bool = False) -> bytes:
    return Writer().u8((1 if profile else 0) | (2 if trace else 0)).bytes()


def parse_run(r: Reader) -> RunSummary:
    cycles = r.u64()
    outputs = [TensorInfo(r.u8(), r.shape(), r.u32()) for _ in range(r.u8())]
    return RunSummary(cycles, outputs, r.u16())


def read_output_request(index: int, offset: int, length: int) -> bytes:
    return Writer().u8(index).u32(offset).u16(length).bytes()


def benchmark_request(runs: int) -> bytes:
    return Writer().u32(runs).bytes()


def parse_benchmark(r: Reader) -> BenchmarkResult:
    return BenchmarkResult(r.u32(), r.u64(), r.u64(), r.u64())


def profile_request(first: int) -> bytes:
    return Writer().u16(first).bytes()


def parse_profile(r: Reader) -> tuple[int, list[EntryPointCycles]]:
    total = r.u16()
    return total, [EntryPointCycles(r.str(), r.u32(), r.u64()) for _ in range(r.u8())]


def trace_request(first: int) -> bytes:
    return Writer().u32(first).bytes()


def parse_trace(r: Reader) -> TracePage:
    start, end, total, dropped = r.u64(), r.u64(), r.u32(), r.u64()
    dispatches = [DispatchCycles(r.u16(), r.u64(), r.u64(), (r.u32(), r.u32(), r.u32()), r.u64(), r.u64())
                  for _ in range(r.u8())]
    return TracePage(start, end, total, dropped, dispatches)
