/* See fuzz_support.h. Built without fuzz_arch.h, so IRP_ARCH_NAME here is this build's literal. */
#define _DEFAULT_SOURCE 1 /* opendir, strdup */
#include "fuzz_support.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/crc32.h"
#include "../vm/flatbuf.h"

const char* const irp_fuzz_host_arch = IRP_ARCH_NAME;
const char* irp_fuzz_arch = IRP_ARCH_NAME;

void irp_fuzz_fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "fuzz check failed: ");
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n");
  va_end(args);
  abort();
}

void irp_fuzz_note(const char* format, ...) {
  static int verbose = -1;
  if (verbose < 0) verbose = getenv("IRP_FUZZ_VERBOSE") != NULL;
  if (!verbose) return;
  va_list args;
  va_start(args, format);
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n");
  va_end(args);
}

void irp_fuzz_check_message(irp_status_t status, const char* message, const char* what) {
  if (status == IRP_OK) return;
  IRP_FUZZ_ASSERT(message != NULL && message[0] != '\0', "%s failed with status %d and no message", what,
                  (int)status);
  IRP_FUZZ_ASSERT(strlen(message) < IRP_MAX_MESSAGE_LENGTH, "%s: message longer than its buffer", what);
}

/* --- the budget allocator ------------------------------------------------------------------ */

/* Each block is preceded by a header (as wide as the alignment, at least 16 bytes) whose last two
 * words hold the block's size and the header's width. */
static void* irp_fuzz_alloc(void* ctx, size_t size, size_t alignment) {
  irp_fuzz_heap_t* heap = ctx;
  if (alignment < 16) alignment = 16;
  if ((alignment & (alignment - 1)) != 0) return NULL;
  if (size > heap->budget - heap->live_bytes) return NULL;
  size_t total = (alignment + size + alignment - 1) & ~(alignment - 1);
  uint8_t* base = aligned_alloc(alignment, total);
  if (base == NULL) return NULL;
  uint8_t* block = base + alignment;
  size_t words[2] = {size, alignment};
  memcpy(block - sizeof(words), words, sizeof(words));
  heap->live_bytes += size;
  heap->live_blocks += 1;
  return block;
}

static void irp_fuzz_free(void* ctx, void* ptr) {
  irp_fuzz_heap_t* heap = ctx;
  if (ptr == NULL) return;
  size_t words[2];
  memcpy(words, (uint8_t*)ptr - sizeof(words), sizeof(words));
  IRP_FUZZ_ASSERT(heap->live_blocks > 0 && words[0] <= heap->live_bytes, "free of a block the heap did not give");
  heap->live_bytes -= words[0];
  heap->live_blocks -= 1;
  free((uint8_t*)ptr - words[1]);
}

irp_allocator_t irp_fuzz_allocator(irp_fuzz_heap_t* heap) {
  irp_allocator_t allocator = {heap, irp_fuzz_alloc, irp_fuzz_free};
  return allocator;
}

/* --- trusted code ---------------------------------------------------------------------------- */

typedef struct irp_fuzz_blob_t {
  uint32_t crc;
  size_t length;
  size_t offset_count;
  uint32_t* offsets; /* flat images: the entry offsets their module gives */
} irp_fuzz_blob_t;

typedef struct irp_fuzz_file_t {
  uint8_t* data;
  size_t length;
} irp_fuzz_file_t;

static irp_fuzz_blob_t* g_blobs;
static size_t g_blob_count;
static irp_fuzz_file_t* g_modules;
static size_t g_module_count;

static bool irp_fuzz_read_file(const char* path, irp_fuzz_file_t* out_file) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return false;
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  out_file->data = malloc(size > 0 ? (size_t)size : 1);
  out_file->length = size > 0 ? fread(out_file->data, 1, (size_t)size, file) : 0;
  fclose(file);
  return true;
}

static void irp_fuzz_parse_trusted_code(const char* path) {
  FILE* file = fopen(path, "r");
  if (file == NULL) return;
  char line[65536];
  while (fgets(line, sizeof(line), file) != NULL) {
    char* rest = line;
    if (strncmp(rest, "code ", 5) != 0) continue;
    rest += 5;
    irp_fuzz_blob_t blob = {0, 0, 0, NULL};
    blob.crc = (uint32_t)strtoul(rest, &rest, 16);
    blob.length = (size_t)strtoull(rest, &rest, 10);
    for (;;) {
      char* end = NULL;
      unsigned long offset = strtoul(rest, &end, 10);
      if (end == rest) break;
      blob.offsets = realloc(blob.offsets, (blob.offset_count + 1) * sizeof(uint32_t));
      blob.offsets[blob.offset_count++] = (uint32_t)offset;
      rest = end;
    }
    g_blobs = realloc(g_blobs, (g_blob_count + 1) * sizeof(irp_fuzz_blob_t));
    g_blobs[g_blob_count++] = blob;
  }
  fclose(file);
}

static int irp_fuzz_compare_names(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static void irp_fuzz_read_device_modules(const char* folder) {
  DIR* dir = opendir(folder);
  if (dir == NULL) return;
  char* names[1024];
  size_t count = 0;
  for (struct dirent* entry; (entry = readdir(dir)) != NULL && count < 1024;) {
    size_t length = strlen(entry->d_name);
    if (length > 5 && strcmp(entry->d_name + length - 5, ".vmfb") == 0) names[count++] = strdup(entry->d_name);
  }
  closedir(dir);
  qsort(names, count, sizeof(names[0]), irp_fuzz_compare_names);
  g_modules = realloc(g_modules, (g_module_count + count + 1) * sizeof(irp_fuzz_file_t));
  for (size_t i = 0; i < count; ++i) {
    char path[8192];
    int written = snprintf(path, sizeof(path), "%s/%s", folder, names[i]);
    if (written > 0 && (size_t)written < sizeof(path) && irp_fuzz_read_file(path, &g_modules[g_module_count])) {
      g_module_count += 1;
    }
    free(names[i]);
  }
}

static void irp_fuzz_load_folder(const char* folder) {
  char path[4200];
  int written = snprintf(path, sizeof(path), "%s/trusted_code.txt", folder);
  if (written > 0 && (size_t)written < sizeof(path)) irp_fuzz_parse_trusted_code(path);
  written = snprintf(path, sizeof(path), "%s/device_modules", folder);
  if (written > 0 && (size_t)written < sizeof(path)) irp_fuzz_read_device_modules(path);
}

void irp_fuzz_load_trust(const char* argv0) {
  char folders[4096];
  const char* data = getenv("IRP_FUZZ_DATA");
  if (data != NULL) {
    snprintf(folders, sizeof(folders), "%s", data);
  } else {
    snprintf(folders, sizeof(folders), "%s", argv0 != NULL ? argv0 : ".");
    char* slash = strrchr(folders, '/');
    if (slash != NULL) *slash = '\0';
    else snprintf(folders, sizeof(folders), ".");
  }
  for (char* folder = strtok(folders, ":"); folder != NULL; folder = strtok(NULL, ":")) irp_fuzz_load_folder(folder);
}

bool irp_fuzz_executable_trusted(const irp_hal_executable_t* executable) {
  uint32_t crc = irp_crc32(executable->code, executable->code_length);
  for (size_t b = 0; b < g_blob_count; ++b) {
    const irp_fuzz_blob_t* blob = &g_blobs[b];
    if (blob->crc != crc || blob->length != executable->code_length) continue;
    if (executable->format != IRP_EXECUTABLE_FORMAT_FLAT) return true;
    bool all_known = true;
    for (uint32_t e = 0; e < executable->entry_point_count && all_known; ++e) {
      bool known = false;
      for (size_t k = 0; k < blob->offset_count && !known; ++k) {
        known = blob->offsets[k] == executable->entry_points[e].code_offset;
      }
      all_known = known;
    }
    if (all_known) return true;
  }
  return false;
}

size_t irp_fuzz_device_module_count(void) { return g_module_count; }

const uint8_t* irp_fuzz_device_module(size_t index, size_t* out_length) {
  *out_length = g_modules[index].length;
  return g_modules[index].data;
}

/* --- module tables --------------------------------------------------------------------------- */

/* Field ids of Module.executables and Executable.arch (flatbuffers/module.fbs, vm/module.c). */
enum { MODULE_EXECUTABLES_FIELD = 4, EXECUTABLE_ARCH_FIELD = 0 };

const char* irp_fuzz_module_arch(const uint8_t* data, size_t size) {
  char message[IRP_MAX_MESSAGE_LENGTH];
  irp_diag_t diag = {message, sizeof(message)};
  irp_fb_t fb = {data, size, &diag};
  irp_fb_table_t root;
  irp_fb_vector_t executables;
  if (irp_fb_root(&fb, "IRPY", &root) != IRP_OK ||
      irp_fb_vector(&fb, &root, MODULE_EXECUTABLES_FIELD, 4, &executables) != IRP_OK) {
    return irp_fuzz_host_arch;
  }
  const char* first = NULL;
  for (uint32_t i = 0; i < executables.count; ++i) {
    irp_fb_table_t table;
    const char* arch = NULL;
    uint32_t length = 0;
    if (irp_fb_vector_table(&fb, &executables, i, &table) != IRP_OK ||
        irp_fb_string(&fb, &table, EXECUTABLE_ARCH_FIELD, &arch, &length) != IRP_OK) {
      break;
    }
    if (strcmp(arch, irp_fuzz_host_arch) == 0) return arch;
    if (first == NULL) first = arch;
  }
  return first != NULL ? first : irp_fuzz_host_arch;
}

irp_status_t irp_fuzz_verify_module(const irp_allocator_t* allocator, const uint8_t* data, size_t size,
                                    irp_vm_module_t* out_vm) {
  irp_fuzz_arch = irp_fuzz_module_arch(data, size);
  char message[IRP_MAX_MESSAGE_LENGTH];
  irp_diag_t diag = {message, sizeof(message)};
  irp_status_t status = irp_vm_module_load(allocator, data, size, &diag, out_vm);
  irp_fuzz_check_message(status, message, "irp_vm_module_load");
  irp_fuzz_note("  verified for %s: %d %s", irp_fuzz_arch, (int)status, status == IRP_OK ? "" : message);
  return status;
}
