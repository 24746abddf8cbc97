"""A board running the device server, reached over a byte stream (docs/device_protocol.md):
`serial:///dev/ttyACM0[?baudrate=115200]` (pyserial) or `socket://HOST:PORT` (an emulated board's
UART bridged to TCP, or runtime_c/tools/device_sim.c).

SerialDevice uploads modules (with retries and resume after a dropped link), runs functions and
benchmarks them there; `call` makes it a device for `iree_py.load(..., device=URL)`.
"""
from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import numpy as np

from iree_py.errors import IreePyError, IreeRuntimeError
from iree_py.ir.types import DType
from iree_py.module.model import Function
from iree_py.runtime import protocol as p
from iree_py.runtime.kernel_failures import KernelSources
from iree_py.runtime.signature import shape_matches

DEVICE_URL_SCHEMES = ("serial://", "socket://")
_DTYPES = list(DType)


class LinkDropped(Exception):
    """The stream closed or failed under us (cable pulled, emulator restarted, proxy cut)."""


@dataclass
class RunResult:
    outputs: list[np.ndarray]
    cycles: int
    profile: list[p.EntryPointCycles] = field(default_factory=list)
    trace: p.TracePage | None = None  # with trace=True: every dispatch kept, in the order they ran


@dataclass
class UploadReport:
    size: int
    sent: int          # bytes sent in DATA frames (less than size after a resume)
    seconds: float
    skipped: bool      # the board already held this module
    events: list[str]  # what went wrong on the way and how it recovered
    ram_left: int | None = None  # board RAM left after loading the module (None: it was already held)

    @property
    def bytes_per_second(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0


def _open_stream(url: str, byte_timeout: float):
    import serial  # pyserial: imported here so the rest of iree_py does not need it
    try:
        if url.startswith("socket://"):
            return serial.serial_for_url(url, timeout=byte_timeout, write_timeout=5.0)
        parts = urlsplit(url)
        baudrate = int(parse_qs(parts.query).get("baudrate", ["115200"])[0])
        return serial.Serial(parts.path or parts.netloc, baudrate=baudrate, timeout=byte_timeout, write_timeout=5.0)
    except (serial.SerialException, OSError, ValueError) as e:
        raise LinkDropped(f"cannot open {url}: {e}") from e


class SerialDevice:
    """One board. `timeout` is how long a request waits for its first answer frame before it is
    sent again (it must exceed the board's 100 ms inter-byte timeout); `long_timeout` is how long
    a request the board said it is working on (BUSY) may take."""

    def __init__(self, url: str, timeout: float = 1.0, long_timeout: float = 600.0, retries: int = 5,
                 reconnects: int = 3, byte_timeout: float = 0.25) -> None:
        if not url.startswith(DEVICE_URL_SCHEMES):
            raise IreePyError(f"device URL {url!r}: expected serial://PORT or socket://HOST:PORT")
        self.url = url
        self.timeout, self.long_timeout, self.retries, self.reconnects = timeout, long_timeout, retries, reconnects
        self.byte_timeout = byte_timeout
        self._stream = None
        self._seq = 0
        self._max_payload = 0xFFFF
        self._staged: tuple | None = None
        self.events: list[str] = []
        # names the model's node when a kernel fails; open_device (iree_py.load) sets the module's
        self.kernel_sources = KernelSources()
        self.info: p.Hello = self._connect()

    # --- link -----------------------------------------------------------------------------

    def _connect(self) -> p.Hello:
        last = ""
        for attempt in range(self.reconnects + 1):
            self.close()
            try:
                self._stream = _open_stream(self.url, self.byte_timeout)
                info = p.parse_hello(self._request(p.Msg.HELLO, p.hello_request()))
                break
            except LinkDropped as e:
                last = str(e)
                time.sleep(0.05 * (attempt + 1))
        else:
            raise IreeRuntimeError(f"cannot reach the board at {self.url}: {last}")
        if info.version != p.VERSION:
            raise IreeRuntimeError(f"board at {self.url} speaks protocol {info.version}, this host speaks {p.VERSION}")
        self._max_payload = info.max_payload
        self.info = info
        return info

    def close(self) -> None:
        if self._stream is not None:
            try:
                self._stream.close()
            except Exception:  # noqa: BLE001 - closing a broken link must not fail
                pass
            self._stream = None

    def __del__(self) -> None:
        self.close()

    def _read(self, n: int) -> bytes:
        import serial
        try:
            return self._stream.read(n)
        except (serial.SerialException, OSError) as e:
            raise LinkDropped(f"reading from {self.url}: {e}") from e

    def _write(self, data: bytes) -> None:
        import serial
        try:
            self._stream.write(data)
            self._stream.flush()
        except (serial.SerialException, OSError) as e:
            raise LinkDropped(f"writing to {self.url}: {e}") from e

    def _read_frame(self, deadline: float) -> p.Frame | None:
        """The next valid frame before `deadline`, skipping garbage and broken frames."""
        while time.monotonic() < deadline:
            b = self._read(1)
            if b != p.MAGIC[:1]:
                continue
            b = self._read(1)
            while b == p.MAGIC[:1]:
                b = self._read(1)
            if b != p.MAGIC[1:]:
                continue
            header = self._read(p.HEADER_BYTES - 2)
            if len(header) < p.HEADER_BYTES - 2:
                continue
            length = int.from_bytes(header[4:6], "little")
            if length > self._max_payload:
                continue
            rest = self._read(length + p.CRC_BYTES)
            if len(rest) < length + p.CRC_BYTES:
                continue
            frame = p.check_frame(p.MAGIC + header + rest, self._max_payload)
            if frame is not None:
                return frame
        return None

    def _request(self, msg: p.Msg, payload: bytes) -> p.Reader:
        """Sends the request until its answer comes (the same seq each time, so the board
        executes it once), and returns the answer's data; refusals raise DeviceRefused."""
        self._seq = (self._seq + 1) & 0xFFFF
        seq = self._seq
        frame = p.encode_frame(msg, seq, payload)
        for _ in range(self.retries + 1):
            self._write(frame)
            deadline = time.monotonic() + self.timeout
            while (reply := self._read_frame(deadline)) is not None:
                if reply.seq != seq:
                    continue  # a late answer to an earlier request
                if reply.type == p.Msg.BUSY:
                    deadline = time.monotonic() + self.long_timeout
                    continue
                if reply.type != msg | p.RESPONSE:
                    raise IreeRuntimeError(f"board answered {msg.name} (seq {seq}) with message type {reply.type:#x}")
                return p.parse_reply(msg, reply.payload)
            try:
                self._stream.reset_input_buffer()  # a partial frame must not prefix the next answer
            except Exception:  # noqa: BLE001
                pass
        raise IreeRuntimeError(f"board at {self.url} did not answer {msg.name} after {self.retries + 1} tries "
                               f"({self.timeout:g} s each)")

    def request(self, msg: p.Msg, payload: bytes) -> p.Reader:
        """`_request`, reconnecting once if the link dropped (every request is safe to repeat)."""
        for attempt in range(self.reconnects + 1):
            try:
                return self._request(msg, payload)
            except LinkDropped as e:
                if attempt == self.reconnects:
                    raise IreeRuntimeError(f"link to {self.url} dropped during {msg.name}: {e}") from None
                self.events.append(f"link dropped during {msg.name} ({e}); reconnected")
                self._connect()
        raise AssertionError("unreachable")

    # --- module -----------------------------------------------------------------------------

    def status(self) -> p.Status:
        return p.parse_status(self.request(p.Msg.STATUS, b""))

    def holds(self, module: bytes) -> bool:
        s = self.status()
        return s.state == p.ModuleState.ACCEPTED and s.size == len(module) and s.crc == zlib.crc32(module)

    def upload(self, module: bytes, arch: str, crc: int | None = None) -> UploadReport:
        """Uploads `module` (built for `arch`) unless the board already holds it; resumes after a
        dropped link. `crc` overrides the whole-module CRC sent (for tests of the board's check)."""
        size, crc = len(module), zlib.crc32(module) if crc is None else crc
        events: list[str] = []
        start = time.monotonic()
        self._staged = None
        chunk = 1 << (self._max_payload - 16).bit_length() - 1
        sent, drops, dropped_at, ram_left = 0, 0, 0, None
        held: int | None = None  # None: ask the board what it holds (UPLOAD_BEGIN)
        while True:
            try:
                if held is None:
                    held, accepted = self._begin(size, crc, arch)
                    if drops:
                        events.append(f"link dropped during upload at byte {dropped_at} of {size}; "
                                      f"resumed at byte {held}")
                    if accepted:
                        break
                while held < size:
                    part = module[held:held + chunk]
                    held = self._request(p.Msg.UPLOAD_DATA, p.upload_data_request(held, part)).u32()
                    sent += len(part)
                ram_left = self._request(p.Msg.UPLOAD_END, b"").u32()
                break
            except LinkDropped as e:
                dropped_at, drops = held or 0, drops + 1
                if drops > self.reconnects:
                    raise IreeRuntimeError(f"link dropped during upload at byte {dropped_at} of {size}; "
                                           f"gave up after {drops} drops: {e}") from None
                self._reconnect_for_upload(dropped_at, size)
                held = None
            except p.DeviceRefused as e:
                raise self._refusal(e, arch) from None
        self.events += events
        return UploadReport(size, sent, time.monotonic() - start, sent == 0 and drops == 0, events, ram_left)

    def _begin(self, size: int, crc: int, arch: str) -> tuple[int, bool]:
        r = self._request(p.Msg.UPLOAD_BEGIN, p.upload_begin_request(size, crc, arch))
        return r.u32(), bool(r.u8())

    def _reconnect_for_upload(self, dropped_at: int, size: int) -> None:
        try:
            self._connect()
        except IreeRuntimeError as e:
            raise IreeRuntimeError(f"link dropped during upload at byte {dropped_at} of {size}; "
                                   f"could not reconnect: {e}") from None

    def _refusal(self, e: p.DeviceRefused, arch: str) -> IreeRuntimeError:
        if e.code == p.Refusal.WRONG_ARCH:
            return IreeRuntimeError(f"board refused module: built for {arch}, board is {self.info.arch} "
                                    f"({self.info.board})")
        if e.code == p.Refusal.TOO_BIG:
            return IreeRuntimeError(f"board refused module: does not fit: {e.board_message}")
        if e.code == p.Refusal.BAD_CRC:
            return IreeRuntimeError(f"board refused module: whole-module CRC mismatch: {e.board_message}")
        return IreeRuntimeError(f"board refused module: {e.board_message} ({p.Refusal(e.code).name})")

    # --- runs -------------------------------------------------------------------------------

    def _stage(self, function: str, inputs: list[np.ndarray], dtypes: list[int]) -> None:
        infos = [p.TensorInfo(code, tuple(a.shape), a.nbytes) for a, code in zip(inputs, dtypes)]
        self.request(p.Msg.RUN_BEGIN, p.run_begin_request(function, infos))
        chunk = self._max_payload - 16
        for i, a in enumerate(inputs):
            data = np.ascontiguousarray(a).tobytes()
            for offset in range(0, len(data), chunk):
                self.request(p.Msg.INPUT_DATA, p.input_data_request(i, offset, data[offset:offset + chunk]))
        self._staged = (function, len(inputs))

    def _read_output(self, index: int, info: p.TensorInfo) -> bytes:
        chunk, data = self._max_payload - 1, bytearray()
        while len(data) < info.nbytes:
            n = min(chunk, info.nbytes - len(data))
            data += self.request(p.Msg.READ_OUTPUT, p.read_output_request(index, len(data), n)).raw()
        return bytes(data)

    def run(self, function: str, inputs: list[np.ndarray], dtypes: list[int] | None = None,
            profile: bool = False, trace: bool = False) -> RunResult:
        """Runs `function` on the board; outputs come back as arrays of the dtypes and shapes
        the board reports. `trace` also fetches each dispatch's cycles (and profiles, for the
        entry points' names)."""
        dtypes = dtypes if dtypes is not None else [DType.from_numpy(a.dtype).module_code for a in inputs]
        profile = profile or trace
        self._stage(function, inputs, dtypes)
        try:
            summary = p.parse_run(self.request(p.Msg.RUN, p.run_request(profile, trace)))
        except p.DeviceRefused as e:
            explained = self.kernel_sources.explain(e.board_message)
            if explained is None:
                raise
            raise IreeRuntimeError(explained) from e
        outputs = []
        for i, info in enumerate(summary.outputs):
            if not 0 <= info.dtype < len(_DTYPES):
                raise IreeRuntimeError(f"{function}: board reported output {i} with dtype code {info.dtype}")
            raw = self._read_output(i, info)
            outputs.append(np.frombuffer(raw, dtype=_DTYPES[info.dtype].numpy).reshape(info.shape).copy())
        entries: list[p.EntryPointCycles] = []
        while profile and len(entries) < summary.profiled_entry_points:
            total, more = p.parse_profile(self.request(p.Msg.PROFILE, p.profile_request(len(entries))))
            if not more:
                break
            entries += more
        return RunResult(outputs, summary.cycles, entries, self._trace() if trace else None)

    def _trace(self) -> p.TracePage:
        """Every dispatch of the latest (traced) run, a TRACE request per reply's worth."""
        page = p.parse_trace(self.request(p.Msg.TRACE, p.trace_request(0)))
        dispatches = list(page.dispatches)
        while len(dispatches) < page.total:
            more = p.parse_trace(self.request(p.Msg.TRACE, p.trace_request(len(dispatches)))).dispatches
            if not more:
                raise IreeRuntimeError(f"the board sent {len(dispatches)} of {page.total} traced dispatches, then none")
            dispatches += more
        return p.TracePage(page.start, page.end, page.total, page.dropped, dispatches)

    def benchmark(self, runs: int) -> p.BenchmarkResult:
        """Runs the last RUN's function `runs` more times with the same inputs, on the board."""
        if self._staged is None:
            raise IreePyError("benchmark on a board needs a run first (its inputs are reused)")
        return p.parse_benchmark(self.request(p.Msg.BENCHMARK, p.benchmark_request(runs)))

    # --- the device interface of iree_py.load -----------------------------------------------

    def ensure_module(self, module: bytes, arch: str) -> UploadReport | None:
        return None if self.holds(module) else self.upload(module, arch)

    def call(self, fn: Function, inputs: list[np.ndarray]) -> list[np.ndarray]:
        result = self.run(fn.name, inputs, [s.dtype.module_code for s in fn.inputs])
        self.last_run = result
        for got, sig in zip(result.outputs, fn.outputs):
            if got.dtype != sig.dtype.numpy or not shape_matches(sig, got.shape):  # dynamic dims: any size
                raise IreeRuntimeError(f"{fn.name}: board returned {sig.name} as {got.shape} {got.dtype}; "
                                       f"signature says {tuple(sig.shape)} {sig.dtype.value}")
        return result.outputs
