"""Link the kernels' object files into a `flat` executable (docs/microcontrollers.md): the kernels' memory
image from address 0, with no relocations, no writable data and no zero-fill, plus each entry
point's offset in it (bit 0 set for Thumb functions, as the symbol table says).

ld.lld links the object statically with a linker script at address 0, so the output has no
dynamic relocations by construction. Whether the code is really position independent is checked
by linking it a second time at another base address: an absolute address anywhere in the image
(a literal pool, a GOT slot, a pointer table) makes the two images differ, and the image is
refused. Compiler builtins the kernels call (`__aeabi_uldivmod`, `__divdi3`, ...) come from the
cross compiler's libgcc when the target names one (`cross_cc`, `cross_cflags`).
"""
from __future__ import annotations

import shlex
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from iree_py.codegen.llvm.link import find_linker, write_objects
from iree_py.targets import Target

CODE_ALIGNMENT = 64    # the module keeps `code` 64-byte aligned (module.fbs force_align), so can the image
SECOND_BASE = 0x10000  # the check link's base; 64 KiB keeps every section alignment kernels use
PF_X, PF_W = 1, 2
PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
SHT_SYMTAB, SHT_REL, SHT_RELA = 2, 9, 4
SHF_ALLOC, SHF_WRITE = 2, 1
STT_FUNC = 2
SHN_UNDEF = 0

LINKER_SCRIPT = """\
SECTIONS {{
  . = {base:#x};
  .text : {{ *(.text .text.*) }}
  .rodata : {{ *(.rodata .rodata.* .srodata .srodata.*) }}
  /DISCARD/ : {{ *(.comment) *(.note .note.*) *(.eh_frame) *(.ARM.exidx .ARM.exidx.*) *(.ARM.extab .ARM.extab.*) }}
}}
"""


class FlatImageError(ValueError):
    """A kernel library that cannot be used in place; the message says why."""


@dataclass(frozen=True)
class FlatImage:
    code: bytes                  # the memory image from address 0
    entry_offsets: tuple[int, ...]  # per entry name, in the order asked for (Thumb: | 1)
    used_libgcc: bool


@dataclass(frozen=True)
class _Segment:
    type: int
    flags: int
    offset: int
    vaddr: int
    filesz: int
    memsz: int


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    addralign: int


@dataclass(frozen=True)
class _Symbol:
    name: str
    value: int
    type: int
    shndx: int


class _Elf:
    """The parts of a little-endian ELF32/ELF64 executable that the image checks need."""

    def __init__(self, data: bytes, what: str) -> None:
        if data[:4] != b"\x7fELF" or data[5] != 1:
            raise FlatImageError(f"{what}: the linker did not produce a little-endian ELF file")
        self.data, self.what = data, what
        self.wide = data[4] == 2
        if self.wide:
            (self.type, self.machine, _, _, phoff, shoff, self.flags, _, phentsize, phnum, shentsize, shnum,
             shstrndx) = struct.unpack_from("<HHIQQQIHHHHHH", data, 16)
        else:
            (self.type, self.machine, _, _, phoff, shoff, self.flags, _, phentsize, phnum, shentsize, shnum,
             shstrndx) = struct.unpack_from("<HHIIIIIHHHHHH", data, 16)
        self.segments = [self._segment(phoff + i * phentsize) for i in range(phnum)]
        raw = [self._section_header(shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx] if shstrndx < len(raw) else None
        self.sections = [_Section(self._string(names, h[0]) if names else "", *h[1:]) for h in raw]

    def _segment(self, at: int) -> _Segment:
        if self.wide:
            p_type, flags, offset, vaddr, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", self.data, at)
        else:
            p_type, offset, vaddr, _, filesz, memsz, flags, _ = struct.unpack_from("<IIIIIIII", self.data, at)
        return _Segment(p_type, flags, offset, vaddr, filesz, memsz)

    def _section_header(self, at: int) -> tuple:
        fmt = "<IIQQQQIIQQ" if self.wide else "<IIIIIIIIII"
        name, sh_type, flags, addr, offset, size, link, _, addralign, _ = struct.unpack_from(fmt, self.data, at)
        return name, sh_type, flags, addr, offset, size, link, addralign

    def _string(self, table: tuple, index: int) -> str:
        start = table[4] + index
        end = self.data.index(b"\0", start)
        return self.data[start:end].decode("utf-8", errors="replace")

    def symbols(self) -> list[_Symbol]:
        out = []
        for s in self.sections:
            if s.type != SHT_SYMTAB:
                continue
            strtab = self.sections[s.link]
            size = 24 if self.wide else 16
            for at in range(s.offset + size, s.offset + s.size, size):  # entry 0 is the null symbol
                if self.wide:
                    name, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", self.data, at)
                else:
                    name, value, _, info, _, shndx = struct.unpack_from("<IIIBBH", self.data, at)
                start = strtab.offset + name
                symbol_name = self.data[start:self.data.index(b"\0", start)].decode("utf-8", errors="replace")
                out.append(_Symbol(symbol_name, value, info & 0xF, shndx))
        return out


def _link(objects: list[str], libs: list[str], base: int, tmp: Path, what: str) -> bytes:
    script = tmp / f"flat_{base:x}.ld"
    script.write_text(LINKER_SCRIPT.format(base=base))
    out = tmp / f"kernels_{base:x}.elf"
    cmd = [find_linker(), "-static", "--no-undefined", "--build-id=none", "-z", "noexecstack",
           "-T", str(script), *objects, *libs, "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise FlatImageError(f"linking the flat kernel image for {what} failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return out.read_bytes()


def _memory_image(elf: _Elf, base: int) -> bytes:
    """The bytes of the PT_LOAD segments from `base`, after checking each one can be used in place."""
    for seg in elf.segments:
        if seg.type in (PT_DYNAMIC, PT_INTERP):
            raise FlatImageError(f"{elf.what}: the image has a dynamic section or interpreter; "
                                 f"a flat image must be fully linked")
    loads = [s for s in elf.segments if s.type == PT_LOAD and s.memsz > 0]
    if not loads:
        return b""
    for seg in loads:
        where = f"segment at {seg.vaddr - base:#x} ({_sections_in(elf, seg)})"
        if seg.flags & PF_W:
            raise FlatImageError(f"{elf.what}: {where} is writable; a flat image holds no writable data "
                                 f"(kernels must keep their state on the stack)")
        if seg.filesz != seg.memsz:
            raise FlatImageError(f"{elf.what}: {where} has {seg.memsz - seg.filesz} bytes of zero-fill "
                                 f"(memsz {seg.memsz} != filesz {seg.filesz}); a flat image has none")
        if seg.vaddr < base:
            raise FlatImageError(f"{elf.what}: {where} lies below the image base {base:#x}")
    end = max(s.vaddr + s.memsz for s in loads) - base
    image = bytearray(end)
    for seg in loads:
        start = seg.vaddr - base
        image[start:start + seg.filesz] = elf.data[seg.offset:seg.offset + seg.filesz]
    return bytes(image)


def _sections_in(elf: _Elf, seg: _Segment) -> str:
    names = [s.name for s in elf.sections
             if s.flags & SHF_ALLOC and s.size and seg.vaddr <= s.addr < seg.vaddr + seg.memsz]
    return ", ".join(names) or "no named section"


def _check_no_relocations(elf: _Elf) -> None:
    relocs = [s.name for s in elf.sections if s.type in (SHT_REL, SHT_RELA) and s.size]
    if relocs:
        raise FlatImageError(f"{elf.what}: the image has relocations ({', '.join(relocs)}); "
                             f"a flat image is used in place and cannot be relocated")


def _check_no_writable_sections(elf: _Elf) -> None:
    writable = [s.name for s in elf.sections if s.flags & SHF_ALLOC and s.flags & SHF_WRITE and s.size]
    if writable:
        raise FlatImageError(f"{elf.what}: the image has writable sections ({', '.join(writable)}); "
                             f"a flat image holds no writable or zero-initialised data")


def _check_alignment(elf: _Elf) -> None:
    over = [f"{s.name} ({s.addralign})" for s in elf.sections if s.flags & SHF_ALLOC and s.addralign > CODE_ALIGNMENT]
    if over:
        raise FlatImageError(f"{elf.what}: sections need more than the {CODE_ALIGNMENT}-byte alignment the module "
                             f"gives its code: {', '.join(over)}")


def _first_difference(a: bytes, b: bytes) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _section_at(elf: _Elf, address: int) -> str:
    for s in elf.sections:
        if s.flags & SHF_ALLOC and s.addr <= address < s.addr + s.size:
            return s.name
    return "no section"


def _entry_offsets(elf: _Elf, names: list[str], image_size: int) -> tuple[int, ...]:
    symbols = {s.name: s for s in elf.symbols() if s.shndx != SHN_UNDEF}
    undefined = sorted({s.name for s in elf.symbols() if s.shndx == SHN_UNDEF and s.name})
    if undefined:
        raise FlatImageError(f"{elf.what}: the image refers to undefined symbols {undefined}")
    offsets = []
    for name in names:
        sym = symbols.get(name)
        if sym is None or sym.type != STT_FUNC:
            raise FlatImageError(f"{elf.what}: entry point {name!r} is not a function in the linked image")
        if not 0 <= (sym.value & ~1) < image_size:
            raise FlatImageError(f"{elf.what}: entry point {name!r} at {sym.value:#x} lies outside "
                                 f"the {image_size}-byte image")
        offsets.append(sym.value)
    return tuple(offsets)


@cache
def libgcc_for(cross_cc: str, cross_cflags: str) -> str:
    """Path of the cross compiler's libgcc.a for these flags ('' when there is no cross compiler)."""
    if not cross_cc:
        return ""
    cmd = [cross_cc, *shlex.split(cross_cflags), "-print-libgcc-file-name"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as err:
        raise FlatImageError(f"cannot find libgcc with {' '.join(cmd)}: {err}") from err
    path = proc.stdout.strip()
    return path if Path(path).is_file() else ""


def _needs_builtins(obj: bytes, what: str) -> bool:
    """True when the object has undefined symbols (calls to compiler builtins)."""
    elf = _Elf(obj, what)
    return any(s.shndx == SHN_UNDEF and s.name for s in elf.symbols())


def link_flat_image(objects: list[bytes], entry_names: list[str], target: Target | None, what: str) -> FlatImage:
    """Link `objects` into a flat image for `target` (None: no libgcc to fall back on); `what` names
    it in errors. No objects (a model without kernels) give an empty image."""
    if not objects:
        if entry_names:
            raise FlatImageError(f"{what}: entry points {entry_names} but no kernel objects")
        return FlatImage(b"", (), False)
    libs: list[str] = []
    if target is not None and any(_needs_builtins(obj, what) for obj in objects):
        libgcc = libgcc_for(target.cross_cc, target.cross_cflags)
        if libgcc:
            libs.append(libgcc)
    with tempfile.TemporaryDirectory(prefix="irp-flat-") as tmp_name:
        tmp = Path(tmp_name)
        paths = write_objects(objects, tmp)
        first = _Elf(_link(paths, libs, 0, tmp, what), what)
        second = _Elf(_link(paths, libs, SECOND_BASE, tmp, what), what)
    _check_no_relocations(first)
    _check_no_writable_sections(first)
    _check_alignment(first)
    image = _memory_image(first, 0)
    moved = _memory_image(second, SECOND_BASE)
    if image != moved:
        at = _first_difference(image, moved)
        raise FlatImageError(
            f"{what}: the kernel image is not position independent: linked at {SECOND_BASE:#x} instead of 0 "
            f"its bytes differ from offset {at:#x} ({_section_at(first, at)}), so it holds an absolute address "
            f"that would need relocating")
    offsets = _entry_offsets(first, entry_names, len(image))
    return FlatImage(image, offsets, bool(libs))
