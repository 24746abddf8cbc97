/* A main for the fuzz harnesses without libFuzzer: runs LLVMFuzzerTestOneInput once on each file
 * named on the command line, or on each file of a named folder (in name order). Linked with ASan +
 * UBSan by any C compiler (runtime_c/Makefile, fuzz-replay), so the regression inputs
 * (fuzz/regressions/HARNESS/) are replayed where clang's libFuzzer is missing. Exits non-zero on the
 * first sanitizer report or failed check (they abort). */
#define _DEFAULT_SOURCE 1 /* opendir, strdup */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static int replay_file(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) {
    fprintf(stderr, "cannot open %s\n", path);
    return 1;
  }
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  uint8_t* data = malloc(size > 0 ? (size_t)size : 1);
  size_t length = size > 0 ? fread(data, 1, (size_t)size, file) : 0;
  fclose(file);
  fprintf(stderr, "replaying %s (%zu bytes)\n", path, length);
  /* As libFuzzer does: the runtime must never write into the bytes it was given (constants are used
   * in place, module storage may be flash). */
  uint8_t* copy = malloc(length > 0 ? length : 1);
  if (length > 0) memcpy(copy, data, length);
  LLVMFuzzerTestOneInput(data, length);
  if (length > 0 && memcmp(copy, data, length) != 0) {
    fprintf(stderr, "%s: the harness wrote into its input\n", path);
    abort();
  }
  free(copy);
  free(data);
  return 0;
}

static int compare_names(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

static int replay_folder(const char* folder, size_t* io_count) {
  DIR* dir = opendir(folder);
  if (dir == NULL) return 1;
  size_t count = 0, capacity = 64;
  char** names = malloc(capacity * sizeof(char*));
  for (struct dirent* entry; (entry = readdir(dir)) != NULL;) {
    if (entry->d_name[0] == '.') continue;
    if (count == capacity) names = realloc(names, (capacity *= 2) * sizeof(char*));
    names[count++] = strdup(entry->d_name);
  }
  closedir(dir);
  qsort(names, count, sizeof(char*), compare_names);
  int failed = 0;
  for (size_t i = 0; i < count; ++i) {
    char path[8192];
    int written = snprintf(path, sizeof(path), "%s/%s", folder, names[i]);
    struct stat info;
    if (written > 0 && (size_t)written < sizeof(path) && stat(path, &info) == 0 && S_ISREG(info.st_mode)) {
      failed |= replay_file(path);
      *io_count += 1;
    }
    free(names[i]);
  }
  free(names);
  return failed;
}

int main(int argc, char** argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  size_t count = 0;
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat info;
    if (stat(argv[i], &info) != 0) {
      fprintf(stderr, "no such file or folder: %s\n", argv[i]);
      failed = 1;
    } else if (S_ISDIR(info.st_mode)) {
      failed |= replay_folder(argv[i], &count);
    } else {
      failed |= replay_file(argv[i]);
      count += 1;
    }
  }
  printf("replayed %zu inputs\n", count);
  return failed;
}
