#define _DEFAULT_SOURCE 1 /* mmap, MAP_ANONYMOUS, sysconf */
#include "elf_loader.h"

#if IRP_HAVE_ELF_LOADER  /* base/config.h: bare-metal builds load flat images only */
#include <string.h>

#include "../base/allocator.h"
#include "../base/little_endian.h"

#if IRP_HAVE_OS
#include <sys/mman.h>
#include <unistd.h>
#endif

enum {
  ELF_HEADER_SIZE = 64, ELF_PHDR_SIZE = 56, ELF_DYN_SIZE = 16, ELF_RELA_SIZE = 24, ELF_SYM_SIZE = 24,
  ET_DYN = 3, EM_X86_64 = 62, EM_AARCH64 = 183, EM_RISCV = 243,
  PT_LOAD = 1, PT_DYNAMIC = 2, PF_X = 1, PF_W = 2, PF_R = 4,
  DT_NULL = 0, DT_NEEDED = 1, DT_PLTRELSZ = 2, DT_STRTAB = 5, DT_SYMTAB = 6, DT_RELA = 7,
  DT_RELASZ = 8, DT_RELAENT = 9, DT_STRSZ = 10, DT_SYMENT = 11, DT_REL = 17, DT_PLTREL = 20,
  DT_TEXTREL = 22, DT_JMPREL = 23, DT_FLAGS = 30, DT_RELR = 36, DF_TEXTREL = 4,
  R_X86_64_NONE = 0, R_X86_64_64 = 1, R_X86_64_GLOB_DAT = 6, R_X86_64_JUMP_SLOT = 7,
  R_X86_64_RELATIVE = 8,
  R_AARCH64_NONE = 0, R_AARCH64_ABS64 = 257, R_AARCH64_GLOB_DAT = 1025, R_AARCH64_JUMP_SLOT = 1026,
  R_AARCH64_RELATIVE = 1027,
  R_RISCV_NONE = 0, R_RISCV_64 = 2, R_RISCV_RELATIVE = 3, R_RISCV_JUMP_SLOT = 5,
};

#define IRP_MAX_SYMBOLS 65536u
static const char kQuerySymbol[] = "irp_kernel_library_query";

/* What PT_DYNAMIC told us. Addresses are image-relative; 0 = absent. */
typedef struct irp_elf_dynamic_t {
  uint64_t rela, rela_size, rela_entry, jmprel, jmprel_size, pltrel;
  uint64_t symtab, strtab, strtab_size;
} irp_elf_dynamic_t;

typedef struct irp_elf_ctx_t {
  const uint8_t* blob;
  size_t length;
  uint16_t machine;
  irp_elf_image_t* image;
  irp_diag_t* diag;
} irp_elf_ctx_t;

bool irp_elf_contains(const irp_elf_image_t* image, uintptr_t address, size_t bytes) {
  uintptr_t base = (uintptr_t)image->base;
  if (address < base) return false;
  uintptr_t offset = address - base;
  return offset <= image->size && bytes <= image->size - offset;
}

bool irp_elf_contains_code(const irp_elf_image_t* image, uintptr_t address) {
  if (!irp_elf_contains(image, address, 1)) return false;
  uint64_t offset = address - (uintptr_t)image->base;
  for (uint32_t i = 0; i < image->segment_count; ++i) {
    const irp_elf_segment_t* segment = &image->segments[i];
    if ((segment->flags & PF_X) && offset >= segment->start && offset < segment->end) return true;
  }
  return false;
}

/* True when the image-relative range lies in one segment whose flags include none of `forbidden`. */
static bool irp_elf_in_segment(const irp_elf_image_t* image, uint64_t start, uint64_t bytes,
                               uint32_t forbidden) {
  for (uint32_t i = 0; i < image->segment_count; ++i) {
    const irp_elf_segment_t* segment = &image->segments[i];
    if (start >= segment->start && start <= segment->end && bytes <= segment->end - start) {
      return (segment->flags & forbidden) == 0;
    }
  }
  return false;
}

/* True when the image-relative range [start, start + bytes) lies in the image (no overflow). */
static bool irp_elf_range(const irp_elf_image_t* image, uint64_t start, uint64_t bytes) {
  return start <= image->size && bytes <= image->size - start;
}

/* The ELF e_machine of a module architecture tag; 0 for one this loader does not know. */
static uint16_t irp_elf_machine_for(const char* arch) {
  if (strcmp(arch, "x86_64") == 0) return EM_X86_64;
  if (strcmp(arch, "aarch64") == 0) return EM_AARCH64;
  if (strcmp(arch, "riscv64") == 0) return EM_RISCV;
  return 0;
}

static irp_status_t irp_elf_check_header(irp_elf_ctx_t* ctx, const char* arch) {
  static const uint8_t magic[4] = {0x7f, 'E', 'L', 'F'};
  const uint8_t* h = ctx->blob;
  if (ctx->length < ELF_HEADER_SIZE || memcmp(h, magic, 4) != 0) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library for %s is not an ELF file (%zu bytes)",
                    arch, ctx->length);
  }
  if (h[4] != 2 || h[5] != 1 || h[6] != 1) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "kernel library for %s is not a little-endian ELF64 version 1 file (class %u, data %u, version %u)",
                    arch, h[4], h[5], h[6]);
  }
  uint16_t type = irp_load_u16(h + 16);
  uint16_t machine = irp_load_u16(h + 18);
  uint16_t expected = irp_elf_machine_for(arch);
  if (type != ET_DYN) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library for %s has ELF type %u, not a shared object (3)",
                    arch, type);
  }
  if (expected == 0 || machine != expected) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "kernel library for %s has ELF machine %u, expected %u", arch, machine, expected);
  }
  ctx->machine = machine;
  uint64_t phoff = irp_load_u64(h + 32);
  uint16_t phentsize = irp_load_u16(h + 54);
  uint16_t phnum = irp_load_u16(h + 56);
  if (phentsize != ELF_PHDR_SIZE || phnum == 0 || phnum > IRP_MAX_ELF_SEGMENTS) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "kernel library: %u program headers of %u bytes (expected 1..%d of %d)", phnum,
                    phentsize, IRP_MAX_ELF_SEGMENTS, ELF_PHDR_SIZE);
  }
  if (phoff > ctx->length || (uint64_t)phnum * ELF_PHDR_SIZE > ctx->length - phoff) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "kernel library: program headers at %llu run past the %zu-byte file",
                    (unsigned long long)phoff, ctx->length);
  }
  return IRP_OK;
}

/* Reads the PT_LOAD segments into image->segments and checks them against the file. */
static irp_status_t irp_elf_read_segments(irp_elf_ctx_t* ctx, uint64_t* out_span) {
  const uint8_t* h = ctx->blob;
  uint64_t phoff = irp_load_u64(h + 32);
  uint16_t phnum = irp_load_u16(h + 56);
  uint64_t span = 0, file_end = 0;
  for (uint16_t i = 0; i < phnum; ++i) {
    const uint8_t* ph = h + phoff + (size_t)i * ELF_PHDR_SIZE;
    if (irp_load_u32(ph) != PT_LOAD) continue;
    uint32_t flags = irp_load_u32(ph + 4);
    uint64_t offset = irp_load_u64(ph + 8), vaddr = irp_load_u64(ph + 16);
    uint64_t filesz = irp_load_u64(ph + 32), memsz = irp_load_u64(ph + 40), align = irp_load_u64(ph + 48);
    if (filesz > memsz || offset > ctx->length || filesz > ctx->length - offset) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                      "kernel library: segment %u (file %llu+%llu, memory %llu) does not fit the %zu-byte file",
                      i, (unsigned long long)offset, (unsigned long long)filesz,
                      (unsigned long long)memsz, ctx->length);
    }
    if (vaddr > IRP_MAX_KERNEL_IMAGE_SIZE || memsz > IRP_MAX_KERNEL_IMAGE_SIZE - vaddr) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                      "kernel library: segment %u at %llu+%llu exceeds the %u-byte image limit", i,
                      (unsigned long long)vaddr, (unsigned long long)memsz, (unsigned)IRP_MAX_KERNEL_IMAGE_SIZE);
    }
    if ((align & (align - 1)) != 0 || (align > 1 && offset % align != vaddr % align)) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                      "kernel library: segment %u has offset %llu and address %llu that disagree modulo alignment %llu",
                      i, (unsigned long long)offset, (unsigned long long)vaddr, (unsigned long long)align);
    }
    if ((flags & PF_X) && filesz != memsz) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                      "kernel library: executable segment %u has %llu file bytes but %llu in memory", i,
                      (unsigned long long)filesz, (unsigned long long)memsz);
    }
    if (vaddr < span) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                      "kernel library: segment %u at %llu overlaps or precedes the previous segment", i,
                      (unsigned long long)vaddr);
    }
    /* Segments take disjoint, ascending bytes of the file (as linkers lay them out), so a damaged
     * header cannot map one segment's bytes (say, the ELF header) as another's code. */
    if (filesz > 0 && offset < file_end) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                      "kernel library: segment %u's file bytes at %llu overlap the previous segment's", i,
                      (unsigned long long)offset);
    }
    if (filesz > 0) file_end = offset + filesz;
    irp_elf_segment_t* segment = &ctx->image->segments[ctx->image->segment_count++];
    segment->start = vaddr;
    segment->end = vaddr + memsz;
    segment->flags = flags;
    span = vaddr + memsz;
  }
  if (ctx->image->segment_count == 0 || span == 0) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library has no loadable segment");
  }
  *out_span = span;
  return IRP_OK;
}

static size_t irp_page_size(void) {
#if IRP_HAVE_OS
  long size = sysconf(_SC_PAGESIZE);
  return size > 0 ? (size_t)size : 4096;
#else
  return 64;
#endif
}

static irp_status_t irp_elf_map(irp_elf_ctx_t* ctx, const irp_allocator_t* allocator, uint64_t span) {
  size_t page = irp_page_size();
  size_t size = (size_t)((span + page - 1) & ~(uint64_t)(page - 1));
#if IRP_HAVE_OS
  (void)allocator;
  void* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return IRP_FAIL(ctx->diag, IRP_OUT_OF_MEMORY, "kernel library: cannot map %zu bytes", size);
  }
  ctx->image->base = base;
#else
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, size, 1, 4096, ctx->diag, (void**)&ctx->image->base));
#endif
  ctx->image->size = size;
  const uint8_t* h = ctx->blob;
  uint64_t phoff = irp_load_u64(h + 32);
  uint16_t phnum = irp_load_u16(h + 56);
  for (uint16_t i = 0; i < phnum; ++i) {
    const uint8_t* ph = h + phoff + (size_t)i * ELF_PHDR_SIZE;
    if (irp_load_u32(ph) != PT_LOAD) continue;
    uint64_t offset = irp_load_u64(ph + 8), vaddr = irp_load_u64(ph + 16), filesz = irp_load_u64(ph + 32);
    if (filesz > 0) memcpy(ctx->image->base + vaddr, ctx->blob + offset, (size_t)filesz);
  }
  return IRP_OK;
}

static irp_status_t irp_elf_read_dynamic(irp_elf_ctx_t* ctx, irp_elf_dynamic_t* out_dynamic) {
  memset(out_dynamic, 0, sizeof(*out_dynamic));
  const uint8_t* h = ctx->blob;
  uint64_t phoff = irp_load_u64(h + 32);
  uint16_t phnum = irp_load_u16(h + 56);
  const irp_elf_image_t* image = ctx->image;
  for (uint16_t i = 0; i < phnum; ++i) {
    const uint8_t* ph = h + phoff + (size_t)i * ELF_PHDR_SIZE;
    if (irp_load_u32(ph) != PT_DYNAMIC) continue;
    uint64_t vaddr = irp_load_u64(ph + 16), memsz = irp_load_u64(ph + 40);
    if (!irp_elf_range(image, vaddr, memsz)) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: PT_DYNAMIC at %llu+%llu is outside the image",
                      (unsigned long long)vaddr, (unsigned long long)memsz);
    }
    for (uint64_t at = vaddr; memsz - (at - vaddr) >= ELF_DYN_SIZE; at += ELF_DYN_SIZE) {
      uint64_t tag = irp_load_u64(image->base + at), value = irp_load_u64(image->base + at + 8);
      switch (tag) {
        case DT_NULL: return IRP_OK;
        case DT_RELA: out_dynamic->rela = value; break;
        case DT_RELASZ: out_dynamic->rela_size = value; break;
        case DT_RELAENT: out_dynamic->rela_entry = value; break;
        case DT_JMPREL: out_dynamic->jmprel = value; break;
        case DT_PLTRELSZ: out_dynamic->jmprel_size = value; break;
        case DT_PLTREL: out_dynamic->pltrel = value; break;
        case DT_SYMTAB: out_dynamic->symtab = value; break;
        case DT_STRTAB: out_dynamic->strtab = value; break;
        case DT_STRSZ: out_dynamic->strtab_size = value; break;
        case DT_SYMENT:
          if (value != ELF_SYM_SIZE) {
            return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: DT_SYMENT is %llu, expected %d",
                            (unsigned long long)value, ELF_SYM_SIZE);
          }
          break;
        case DT_NEEDED:
          return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED, "kernel library imports a shared library (DT_NEEDED); kernels must import nothing");
        case DT_REL:
        case DT_RELR:
          return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED, "kernel library uses %s relocations; only RELA is supported",
                          tag == DT_REL ? "REL" : "RELR");
        case DT_TEXTREL:
          return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED, "kernel library has text relocations (DT_TEXTREL)");
        case DT_FLAGS:
          if (value & DF_TEXTREL) {
            return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED, "kernel library has text relocations (DF_TEXTREL)");
          }
          break;
        default: break;
      }
    }
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: PT_DYNAMIC has no DT_NULL terminator");
  }
  return IRP_OK;
}

/* Finds symbol `index` of the dynamic symbol table; checks the entry lies in the image. */
static irp_status_t irp_elf_symbol(irp_elf_ctx_t* ctx, const irp_elf_dynamic_t* dynamic, uint64_t index,
                                   const uint8_t** out_symbol) {
  /* The entry's offset, computed once: symtab + index * size may wrap around to an offset inside the
   * image, and adding symtab to the base first would overflow the pointer. */
  uint64_t at = index < IRP_MAX_SYMBOLS ? index * ELF_SYM_SIZE : 0;
  if (dynamic->symtab == 0 || index >= IRP_MAX_SYMBOLS || dynamic->symtab > UINT64_MAX - at ||
      !irp_elf_range(ctx->image, dynamic->symtab + at, ELF_SYM_SIZE)) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: relocation refers to symbol %llu outside the symbol table",
                    (unsigned long long)index);
  }
  *out_symbol = ctx->image->base + (dynamic->symtab + at);
  return IRP_OK;
}

/* The name of a symbol if it lies inside the string table and is shorter than IRP_MAX_SYMBOL_NAME,
 * else NULL. Looking no further for its end keeps a scan of every symbol O(symbols), not O(symbols x
 * table) (65536 symbols over a long table without NULs took seconds to hours). */
#define IRP_MAX_SYMBOL_NAME 256u
static const char* irp_elf_symbol_name(const irp_elf_ctx_t* ctx, const irp_elf_dynamic_t* dynamic,
                                       const uint8_t* symbol) {
  uint32_t name = irp_load_u32(symbol);
  if (dynamic->strtab == 0 || name >= dynamic->strtab_size ||
      !irp_elf_range(ctx->image, dynamic->strtab, dynamic->strtab_size)) {
    return NULL;
  }
  const char* start = (const char*)ctx->image->base + dynamic->strtab + name;
  uint64_t length = dynamic->strtab_size - name;
  if (memchr(start, 0, (size_t)(length < IRP_MAX_SYMBOL_NAME ? length : IRP_MAX_SYMBOL_NAME)) == NULL) return NULL;
  return start;
}

static bool irp_elf_is_relative(uint16_t machine, uint32_t type) {
  switch (machine) {
    case EM_X86_64: return type == R_X86_64_RELATIVE;
    case EM_AARCH64: return type == R_AARCH64_RELATIVE;
    case EM_RISCV: return type == R_RISCV_RELATIVE;
    default: return false;
  }
}

static const char* irp_elf_machine_name(uint16_t machine) {
  return machine == EM_X86_64 ? "x86_64" : machine == EM_AARCH64 ? "aarch64" : machine == EM_RISCV ? "riscv64" : "?";
}

/* The relocation types irp_elf_relocate_one handles, for error messages. */
static const char* irp_elf_supported_relocations(uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "R_X86_64_NONE, R_X86_64_RELATIVE, R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_JUMP_SLOT";
    case EM_AARCH64:
      return "R_AARCH64_NONE, R_AARCH64_RELATIVE, R_AARCH64_ABS64, R_AARCH64_GLOB_DAT, R_AARCH64_JUMP_SLOT";
    case EM_RISCV: return "R_RISCV_NONE, R_RISCV_RELATIVE, R_RISCV_64, R_RISCV_JUMP_SLOT";
    default: return "none";
  }
}

/* Symbol + addend, 64 bits wide. RISC-V has no GLOB_DAT: its GOT entries use R_RISCV_64. */
static bool irp_elf_is_symbolic(uint16_t machine, uint32_t type) {
  switch (machine) {
    case EM_X86_64: return type == R_X86_64_64 || type == R_X86_64_GLOB_DAT || type == R_X86_64_JUMP_SLOT;
    case EM_AARCH64:
      return type == R_AARCH64_ABS64 || type == R_AARCH64_GLOB_DAT || type == R_AARCH64_JUMP_SLOT;
    case EM_RISCV: return type == R_RISCV_64 || type == R_RISCV_JUMP_SLOT;
    default: return false;
  }
}

static irp_status_t irp_elf_relocate_one(irp_elf_ctx_t* ctx, const irp_elf_dynamic_t* dynamic,
                                         const uint8_t* rela) {
  uint64_t offset = irp_load_u64(rela), info = irp_load_u64(rela + 8);
  uint64_t addend = irp_load_u64(rela + 16);
  uint32_t type = (uint32_t)info;
  uint64_t symbol_index = info >> 32;
  if (type == 0) return IRP_OK; /* R_X86_64_NONE, R_AARCH64_NONE, R_RISCV_NONE */
  if (!irp_elf_in_segment(ctx->image, offset, 8, PF_X)) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                    "kernel library: relocation at %llu is outside the image's writable segments",
                    (unsigned long long)offset);
  }
  uint64_t value;
  if (irp_elf_is_relative(ctx->machine, type)) {
    value = addend;
  } else if (irp_elf_is_symbolic(ctx->machine, type)) {
    const uint8_t* symbol = NULL;
    IRP_RETURN_IF_ERROR(irp_elf_symbol(ctx, dynamic, symbol_index, &symbol));
    if (irp_load_u16(symbol + 6) == 0) {
      const char* name = irp_elf_symbol_name(ctx, dynamic, symbol);
      return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED, "kernel library refers to undefined symbol '%s'; kernels must import nothing",
                      name != NULL ? name : "?");
    }
    value = irp_load_u64(symbol + 8) + addend;
  } else {
    return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED,
                    "kernel library has relocation type %u at %llu, which this loader does not handle (for %s: %s)",
                    (unsigned)type, (unsigned long long)offset, irp_elf_machine_name(ctx->machine),
                    irp_elf_supported_relocations(ctx->machine));
  }
  if (value > ctx->image->size) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: relocation at %llu points outside the image",
                    (unsigned long long)offset);
  }
  uint64_t address = (uint64_t)(uintptr_t)ctx->image->base + value;
  memcpy(ctx->image->base + offset, &address, sizeof(address));
  return IRP_OK;
}

static irp_status_t irp_elf_relocate_table(irp_elf_ctx_t* ctx, const irp_elf_dynamic_t* dynamic,
                                           uint64_t table, uint64_t size) {
  if (size == 0) return IRP_OK;
  if (size % ELF_RELA_SIZE != 0 || !irp_elf_range(ctx->image, table, size)) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: relocation table at %llu+%llu is outside the image",
                    (unsigned long long)table, (unsigned long long)size);
  }
  for (uint64_t at = 0; at < size; at += ELF_RELA_SIZE) {
    IRP_RETURN_IF_ERROR(irp_elf_relocate_one(ctx, dynamic, ctx->image->base + table + at));
  }
  return IRP_OK;
}

static irp_status_t irp_elf_relocate(irp_elf_ctx_t* ctx, const irp_elf_dynamic_t* dynamic) {
  if (dynamic->rela_size != 0 && dynamic->rela_entry != ELF_RELA_SIZE) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: DT_RELAENT is %llu, expected %d",
                    (unsigned long long)dynamic->rela_entry, ELF_RELA_SIZE);
  }
  if (dynamic->jmprel_size != 0 && dynamic->pltrel != DT_RELA) {
    return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED, "kernel library: PLT relocations are not RELA");
  }
  IRP_RETURN_IF_ERROR(irp_elf_relocate_table(ctx, dynamic, dynamic->rela, dynamic->rela_size));
  return irp_elf_relocate_table(ctx, dynamic, dynamic->jmprel, dynamic->jmprel_size);
}

/* e_entry must be in an executable segment, and when the library exports irp_kernel_library_query
 * the two must agree (so a damaged header cannot send us into the middle of some code). */
static irp_status_t irp_elf_check_entry(irp_elf_ctx_t* ctx, const irp_elf_dynamic_t* dynamic) {
  uint64_t entry = irp_load_u64(ctx->blob + 24);
  if (!irp_elf_in_segment(ctx->image, entry, 1, 0) ||
      !irp_elf_contains_code(ctx->image, (uintptr_t)ctx->image->base + entry)) {
    return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library: entry point %llu is not in an executable segment",
                    (unsigned long long)entry);
  }
  ctx->image->entry = entry;
  if (dynamic->symtab == 0 || dynamic->strtab == 0) return IRP_OK;
  uint64_t end = dynamic->strtab > dynamic->symtab ? dynamic->strtab : ctx->image->size;
  for (uint64_t index = 1; index < IRP_MAX_SYMBOLS; ++index) {
    uint64_t at = dynamic->symtab + index * ELF_SYM_SIZE;
    if (at > end || end - at < ELF_SYM_SIZE || !irp_elf_range(ctx->image, at, ELF_SYM_SIZE)) break;
    const uint8_t* symbol = ctx->image->base + at;
    const char* name = irp_elf_symbol_name(ctx, dynamic, symbol);
    if (name == NULL || strcmp(name, kQuerySymbol) != 0) continue;
    uint64_t value = irp_load_u64(symbol + 8), size = irp_load_u64(symbol + 16);
    if (value != entry || !irp_elf_in_segment(ctx->image, value, size, 0)) {
      return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE,
                      "kernel library: entry point %llu is not the exported %s (at %llu)",
                      (unsigned long long)entry, kQuerySymbol, (unsigned long long)value);
    }
    return IRP_OK;
  }
  return IRP_FAIL(ctx->diag, IRP_INVALID_MODULE, "kernel library has a symbol table but does not export %s",
                  kQuerySymbol);
}

static irp_status_t irp_elf_protect(irp_elf_ctx_t* ctx) {
  irp_elf_image_t* image = ctx->image;
#if IRP_HAVE_OS
  uint64_t page = irp_page_size();
  for (uint32_t i = 0; i < image->segment_count; ++i) {
    uint64_t start = image->segments[i].start & ~(page - 1);
    uint64_t end = (image->segments[i].end + page - 1) & ~(page - 1);
    uint32_t flags = 0;
    /* Pages shared by two segments get the union of their permissions. */
    for (uint32_t j = 0; j < image->segment_count; ++j) {
      if (image->segments[j].start < end && image->segments[j].end > start) flags |= image->segments[j].flags;
    }
    int prot = PROT_READ | ((flags & PF_X) ? PROT_EXEC : 0) | ((flags & PF_W) ? PROT_WRITE : 0);
    if (end > start && mprotect(image->base + start, (size_t)(end - start), prot) != 0) {
      return IRP_FAIL(ctx->diag, IRP_UNSUPPORTED, "kernel library: mprotect of segment %u failed", i);
    }
  }
#endif
  /* aarch64 and RISC-V do not keep instruction fetch coherent with stores: make the code we wrote
   * visible. On RISC-V Linux GCC's builtin calls __riscv_flush_icache, the riscv_flush_icache system
   * call, which reaches every hart the process runs on (fence.i would reach only this one). Bare-metal
   * RISC-V runs flat images in place and loads no ELF code (libgcc's __clear_cache is a no-op there). */
#if defined(__aarch64__) || (defined(__riscv) && IRP_HAVE_OS)
  for (uint32_t i = 0; i < image->segment_count; ++i) {
    if (!(image->segments[i].flags & PF_X)) continue;
    __builtin___clear_cache((char*)image->base + image->segments[i].start,
                            (char*)image->base + image->segments[i].end);
  }
#endif
  (void)image;
  return IRP_OK;
}

static irp_status_t irp_elf_load_steps(irp_elf_ctx_t* ctx, const irp_allocator_t* allocator, const char* arch) {
  uint64_t span = 0;
  irp_elf_dynamic_t dynamic;
  IRP_RETURN_IF_ERROR(irp_elf_check_header(ctx, arch));
  IRP_RETURN_IF_ERROR(irp_elf_read_segments(ctx, &span));
  IRP_RETURN_IF_ERROR(irp_elf_map(ctx, allocator, span));
  IRP_RETURN_IF_ERROR(irp_elf_read_dynamic(ctx, &dynamic));
  IRP_RETURN_IF_ERROR(irp_elf_relocate(ctx, &dynamic));
  IRP_RETURN_IF_ERROR(irp_elf_check_entry(ctx, &dynamic));
  return irp_elf_protect(ctx);
}

irp_status_t irp_elf_load(const irp_allocator_t* allocator, const uint8_t* blob, size_t length,
                          const char* arch, irp_diag_t* diag, irp_elf_image_t* out_image) {
  memset(out_image, 0, sizeof(*out_image));
  irp_elf_ctx_t ctx = {blob, length, 0, out_image, diag};
  irp_status_t status = irp_elf_load_steps(&ctx, allocator, arch);
  if (status != IRP_OK) irp_elf_unload(allocator, out_image);
  return status;
}

void irp_elf_unload(const irp_allocator_t* allocator, irp_elf_image_t* image) {
  if (image->base != NULL) {
#if IRP_HAVE_OS
    (void)allocator;
    munmap(image->base, image->size);
#else
    irp_free(allocator, image->base);
#endif
  }
  memset(image, 0, sizeof(*image));
}

#else
typedef int irp_elf_loader_compiled_out_t; /* ISO C wants a declaration in every translation unit */
#endif  /* IRP_HAVE_ELF_LOADER */
