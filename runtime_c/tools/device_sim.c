/* device-sim: the device protocol server (device/device_server.c) built with the hosted runtime
 * and served over TCP, so the protocol, its fault handling and module runs are tested without an
 * emulator. One host at a time; a newer connection replaces an older one. Board state (the module
 * held, a partial upload) survives reconnections, as RAM survives a cable pulled from a board.
 *
 *   device-sim [--port=N] [--host=ADDR] [--fd=N] [--module-capacity=BYTES] [--ram=BYTES]
 *              [--arch=NAME] [--name=NAME]
 *
 * --port=0 (default) picks a free port. The first line on stdout is "listening on HOST:PORT".
 * --fd=N serves an already connected socket instead, and exits when it closes. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../base/config.h"
#include "../device/device_server.h"

typedef struct sim_link_t {
  int listen_fd; /* -1 with --fd */
  int conn_fd;   /* -1 while no host is connected */
  uint8_t buffer[4096];
  size_t position, length;
} sim_link_t;

typedef struct sim_options_t {
  const char* host;
  long port;
  long fd;
  long module_capacity;
  long ram;
  const char* arch;
  const char* name;
} sim_options_t;

static void sim_close_connection(sim_link_t* link) {
  if (link->conn_fd >= 0) close(link->conn_fd);
  link->conn_fd = -1;
  link->position = link->length = 0;
  if (link->listen_fd < 0) exit(0); /* the inherited socket closed: nothing left to serve */
}

static void sim_accept(sim_link_t* link) {
  int fd = accept(link->listen_fd, NULL, NULL);
  if (fd < 0) return;
  if (link->conn_fd >= 0) close(link->conn_fd);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  link->conn_fd = fd;
  link->position = link->length = 0;
}

static int sim_read_byte(void* ctx, uint8_t* out_byte, uint32_t timeout_ms) {
  sim_link_t* link = ctx;
  if (link->position < link->length) {
    *out_byte = link->buffer[link->position++];
    return 1;
  }
  struct pollfd fds[2];
  nfds_t count = 0;
  if (link->conn_fd >= 0) fds[count++] = (struct pollfd){link->conn_fd, POLLIN, 0};
  if (link->listen_fd >= 0) fds[count++] = (struct pollfd){link->listen_fd, POLLIN, 0};
  if (poll(fds, count, (int)timeout_ms) <= 0) return 0;
  for (nfds_t i = 0; i < count; ++i) {
    if (fds[i].fd == link->listen_fd && (fds[i].revents & POLLIN)) {
      sim_accept(link); /* a new host: any partial frame from the old one is dropped */
      return 0;
    }
  }
  if (link->conn_fd < 0) return 0;
  ssize_t n = recv(link->conn_fd, link->buffer, sizeof(link->buffer), 0);
  if (n <= 0) {
    sim_close_connection(link);
    return 0;
  }
  link->position = 1;
  link->length = (size_t)n;
  *out_byte = link->buffer[0];
  return 1;
}

static void sim_write(void* ctx, const uint8_t* data, size_t length) {
  sim_link_t* link = ctx;
  while (length > 0 && link->conn_fd >= 0) {
    ssize_t n = send(link->conn_fd, data, length, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sim_close_connection(link);
      return;
    }
    data += n;
    length -= (size_t)n;
  }
}

typedef struct sim_board_t {
  uint8_t* storage;
  size_t capacity;
} sim_board_t;

static int sim_storage_write(void* ctx, size_t offset, const uint8_t* data, size_t length) {
  sim_board_t* board = ctx;
  if (offset > board->capacity || length > board->capacity - offset) return 1;
  memcpy(board->storage + offset, data, length);
  return 0;
}

static uint64_t sim_cycles(void* ctx) {
  (void)ctx;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static int sim_usage(const char* problem) {
  fprintf(stderr, "device-sim: %s\n", problem);
  fprintf(stderr, "usage: device-sim [--port=N] [--host=ADDR] [--fd=N] [--module-capacity=BYTES] [--ram=BYTES]\n"
                  "                  [--arch=NAME] [--name=NAME]\n");
  return 2;
}

static int sim_number(const char* text, long* out_value) {
  char* end = NULL;
  *out_value = strtol(text, &end, 10);
  return *end == '\0' && *out_value >= 0;
}

static int sim_parse(int argc, char** argv, sim_options_t* o) {
  *o = (sim_options_t){"127.0.0.1", 0, -1, 4L << 20, 16L << 20, IRP_ARCH_NAME, "device-sim"};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    int ok = 1;
    if (strncmp(a, "--port=", 7) == 0) ok = sim_number(a + 7, &o->port) && o->port < 65536;
    else if (strncmp(a, "--host=", 7) == 0) o->host = a + 7;
    else if (strncmp(a, "--fd=", 5) == 0) ok = sim_number(a + 5, &o->fd);
    else if (strncmp(a, "--module-capacity=", 18) == 0) ok = sim_number(a + 18, &o->module_capacity);
    else if (strncmp(a, "--ram=", 6) == 0) ok = sim_number(a + 6, &o->ram);
    else if (strncmp(a, "--arch=", 7) == 0) o->arch = a + 7;
    else if (strncmp(a, "--name=", 7) == 0) o->name = a + 7;
    else return sim_usage("unknown option");
    if (!ok) {
      fprintf(stderr, "device-sim: bad value in %s\n", a);
      return 2;
    }
  }
  return 0;
}

static int sim_listen(const sim_options_t* o, sim_link_t* link) {
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons((uint16_t)o->port);
  if (inet_pton(AF_INET, o->host, &address.sin_addr) != 1) return sim_usage("--host must be an IPv4 address");
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, (struct sockaddr*)&address, sizeof(address)) != 0 || listen(fd, 4) != 0) {
    fprintf(stderr, "device-sim: cannot listen on %s:%ld: %s\n", o->host, o->port, strerror(errno));
    return 1;
  }
  socklen_t length = sizeof(address);
  getsockname(fd, (struct sockaddr*)&address, &length);
  printf("listening on %s:%u\n", o->host, (unsigned)ntohs(address.sin_port));
  fflush(stdout);
  link->listen_fd = fd;
  return 0;
}

int main(int argc, char** argv) {
  sim_options_t options;
  int status = sim_parse(argc, argv, &options);
  if (status != 0) return status;
  static sim_link_t link;
  link.listen_fd = -1;
  link.conn_fd = (int)options.fd;
  if (options.fd < 0 && (status = sim_listen(&options, &link)) != 0) return status;
  /* Module storage and RAM: 64-byte aligned, as a board's linker script would place them. */
  size_t capacity = ((size_t)options.module_capacity + 63u) & ~(size_t)63u;
  size_t ram_bytes = ((size_t)options.ram + 63u) & ~(size_t)63u;
  uint8_t* storage = aligned_alloc(64, capacity ? capacity : 64);
  uint8_t* ram = aligned_alloc(64, ram_bytes ? ram_bytes : 64);
  if (storage == NULL || ram == NULL) {
    fprintf(stderr, "device-sim: cannot allocate %zu + %zu bytes\n", capacity, ram_bytes);
    return 1;
  }
  sim_board_t board_ctx = {storage, (size_t)options.module_capacity};
  irp_device_io_t io = {&link, sim_read_byte, sim_write};
  irp_device_board_t board = {&board_ctx, options.name, options.arch, storage, (size_t)options.module_capacity,
                              sim_storage_write, ram, (size_t)options.ram, sim_cycles, 1000000000u};
  irp_device_serve(&io, &board);
  return 0;
}
