"""The frame codec and message layout: Python's frames against the C server's (device-sim), and
the numbers both sides use."""
from __future__ import annotations

import re
import socket
import time
import zlib
from pathlib import Path

import pytest

from iree_py.runtime import protocol as p

ROOT = Path(__file__).resolve().parents[2]


def test_frame_layout_is_the_documented_one():
    frame = p.encode_frame(p.Msg.HELLO, 0x1234, b"\x01\x00")
    assert frame[:8] == bytes([0xA7, 0x5C, 0x01, 0x00, 0x34, 0x12, 0x02, 0x00])
    assert frame[8:10] == b"\x01\x00"
    assert int.from_bytes(frame[10:], "little") == zlib.crc32(frame[2:10])


def test_decoder_skips_garbage_and_broken_frames():
    good1 = p.encode_frame(p.Msg.STATUS, 1, b"")
    good2 = p.encode_frame(p.Msg.RUN, 2, b"\x01")
    broken = bytearray(p.encode_frame(p.Msg.RUN, 3, b"abc"))
    broken[9] ^= 0x10  # payload bit: CRC fails
    stream = b"\x00\xa7junk\xa7" + good1 + bytes(broken) + b"\xa7\x5c\xff\xff" + good2
    assert [(f.type, f.seq, f.payload) for f in p.decode_frames(stream)] == [(0x02, 1, b""), (0x08, 2, b"\x01")]


def test_too_long_frames_are_dropped():
    frame = p.encode_frame(p.Msg.UPLOAD_DATA, 1, bytes(2000))
    assert p.decode_frames(frame, max_payload=1040) == []
    assert len(p.decode_frames(frame)) == 1


def _c_enum(header: str, prefix: str) -> dict[str, int]:
    text = (ROOT / "runtime_c" / "device" / header).read_text()
    return {m[1]: int(m[2], 0) for m in re.finditer(rf"{prefix}(\w+) = (0x[0-9A-Fa-f]+|\d+)", text)}


def test_message_and_refusal_numbers_match_the_c_server():
    c_msgs = _c_enum("protocol_codes.h", "IRP_MSG_")
    assert {k: v for k, v in c_msgs.items() if k != "RESPONSE"} == {m.name: m.value for m in p.Msg}
    assert c_msgs["RESPONSE"] == p.RESPONSE
    assert _c_enum("protocol_codes.h", "IRP_REFUSE_") == {r.name: r.value for r in p.Refusal}
    assert _c_enum("protocol_codes.h", "IRP_MODULE_") == {s.name: s.value for s in p.ModuleState}
    frame_h = (ROOT / "runtime_c" / "device" / "frame.h").read_text()
    assert f"#define IRP_FRAME_MAGIC0 0x{p.MAGIC[0]:X}u" in frame_h
    assert f"#define IRP_FRAME_MAGIC1 0x{p.MAGIC[1]:X}u" in frame_h


class RawLink:
    """Bytes straight to device-sim, no client logic: what the C server does with exactly these."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(0.05)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive(self, seconds: float) -> bytes:
        data, deadline = b"", time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(sim):
    link = RawLink(sim.port)
    yield link
    link.close()


def test_server_answers_python_frames_with_frames_python_reads(raw, sim):
    raw.send(p.encode_frame(p.Msg.HELLO, 7, p.hello_request()))
    (reply,) = p.decode_frames(raw.receive(0.3))
    assert (reply.type, reply.seq) == (p.Msg.HELLO | p.RESPONSE, 7)
    hello = p.parse_hello(p.parse_reply(p.Msg.HELLO, reply.payload))
    assert (hello.version, hello.max_payload, hello.board) == (p.VERSION, 1040, "device-sim")
    assert hello.module_capacity == 4 << 20 and hello.ram_bytes == 16 << 20


def test_server_resynchronises_after_garbage_and_split_writes(raw):
    frame = p.encode_frame(p.Msg.STATUS, 9, b"")
    raw.send(b"\xa7\x00garbage\xa7")
    for i in range(0, len(frame), 3):  # arrives in pieces, well within the inter-byte timeout
        raw.send(frame[i:i + 3])
        time.sleep(0.005)
    (reply,) = p.decode_frames(raw.receive(0.3))
    assert reply.seq == 9 and p.parse_status(p.parse_reply(p.Msg.STATUS, reply.payload)).state == p.ModuleState.EMPTY


def test_server_drops_corrupt_and_stalled_frames_then_serves_the_next(raw):
    corrupt = bytearray(p.encode_frame(p.Msg.STATUS, 1, b""))
    corrupt[5] ^= 0x01
    raw.send(bytes(corrupt))
    assert raw.receive(0.25) == b""  # no answer to a frame that fails its CRC
    stalled = p.encode_frame(p.Msg.STATUS, 2, b"")
    raw.send(stalled[:-1])  # the last byte never comes: dropped after the inter-byte timeout
    assert raw.receive(0.3) == b""
    raw.send(p.encode_frame(p.Msg.STATUS, 3, b""))
    (reply,) = p.decode_frames(raw.receive(0.3))
    assert reply.seq == 3


def test_a_retried_request_is_answered_again_not_executed_again(raw):
    raw.send(p.encode_frame(p.Msg.HELLO, 1, p.hello_request()))
    raw.receive(0.2)
    begin = p.encode_frame(p.Msg.UPLOAD_BEGIN, 2, p.upload_begin_request(100, 0x1234, "x"))
    raw.send(begin)
    first = raw.receive(0.2)
    raw.send(begin)
    assert raw.receive(0.2) == first  # the same bytes: the kept response
    # The same seq with other content is a new request.
    raw.send(p.encode_frame(p.Msg.UPLOAD_BEGIN, 2, p.upload_begin_request(100, 0x1234, "y")))
    (reply,) = p.decode_frames(raw.receive(0.2))
    assert reply.payload != p.decode_frames(first)[0].payload


def test_unknown_type_and_short_payloads_are_refused_with_a_message(raw):
    raw.send(p.encode_frame(0x42, 1, b""))
    (reply,) = p.decode_frames(raw.receive(0.2))
    with pytest.raises(p.DeviceRefused, match="BAD_REQUEST: unknown request type 66"):
        p.parse_reply(p.Msg.HELLO, reply.payload)
    raw.send(p.encode_frame(p.Msg.UPLOAD_BEGIN, 2, b"\x01"))
    (reply,) = p.decode_frames(raw.receive(0.2))
    with pytest.raises(p.DeviceRefused, match="BAD_REQUEST"):
        p.parse_reply(p.Msg.UPLOAD_BEGIN, reply.payload)
