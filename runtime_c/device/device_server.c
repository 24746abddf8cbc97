/* The device protocol server (docs/device_protocol.md): receives frames, answers each request,
 * keeps the uploaded module in the board's module storage and runs it with the C runtime on the
 * board's RAM through a bump allocator. No heap, no OS calls. */
#include "device_server.h"

#include <string.h>

#include "../api/iree_py_runtime.h"
#include "../base/crc32.h"
#include "bump_allocator.h"
#include "frame.h"
#include "protocol_codes.h"
#include "wire.h"

#define IRP_FRAME_BUFFER_BYTES (IRP_FRAME_OVERHEAD + IRP_DEVICE_MAX_PAYLOAD)
#define IRP_IDLE_TIMEOUT_MS 1000u
#define IRP_ARCH_CAPACITY 32u
#define IRP_FUNCTION_NAME_CAPACITY 64u
#define IRP_TEXT_CAPACITY 192u
#define IRP_DEVICE_TRACE_EVENTS 4096u /* dispatches a traced RUN keeps at most (fewer when RAM is short) */

/* A refusal message under construction (no printf on the board). */
typedef struct irp_text_t {
  char data[IRP_TEXT_CAPACITY];
  size_t length;
} irp_text_t;

static void irp_text_add(irp_text_t* text, const char* s) {
  while (*s != '\0' && text->length + 1 < IRP_TEXT_CAPACITY) text->data[text->length++] = *s++;
  text->data[text->length] = '\0';
}

static void irp_text_add_u64(irp_text_t* text, uint64_t value) {
  char digits[21];
  size_t n = 0;
  do {
    digits[n++] = (char)('0' + value % 10u);
    value /= 10u;
  } while (value != 0);
  char reversed[21];
  for (size_t i = 0; i < n; ++i) reversed[i] = digits[n - 1 - i];
  reversed[n] = '\0';
  irp_text_add(text, reversed);
}

typedef struct irp_server_t {
  const irp_device_io_t* io;
  const irp_device_board_t* board;
  irp_bump_allocator_t ram;
  irp_allocator_t allocator; /* the runtime's view of `ram` */
  size_t server_mark;        /* RAM after the server's own state */
  size_t module_mark;        /* RAM after the loaded module (runtime, state, arena) */
  size_t inputs_mark;        /* RAM after the staged inputs */
  uint8_t rx[IRP_FRAME_BUFFER_BYTES];
  uint8_t tx[IRP_FRAME_BUFFER_BYTES]; /* the latest response, kept for retries */
  size_t tx_length;
  int have_last; /* the latest executed request: its seq and CRC */
  uint16_t last_seq;
  uint32_t last_crc;
  irp_wire_writer_t reply; /* the response payload being built (into tx) */
  /* The module held in storage. */
  int module_state; /* irp_module_state_e */
  uint32_t module_size;
  uint32_t module_crc;
  uint32_t module_held; /* bytes from offset 0 received */
  char module_arch[IRP_ARCH_CAPACITY];
  irp_runtime_t* runtime;
  irp_module_t* module;
  /* The staged call. */
  int32_t function;
  int32_t input_count;
  irp_buffer_view_t* inputs;
  uint32_t* input_held;
  int32_t output_count;
  irp_buffer_view_t* outputs;
  int run_ok;   /* outputs hold the result of the latest call */
  int profiled; /* the profile counters hold the latest RUN's */
  int traced;   /* the module's trace holds the latest RUN's timeline */
} irp_server_t;

/* --- replies ------------------------------------------------------------------------------ */

static void irp_reply_begin(irp_server_t* s) {
  s->reply.data = s->tx + IRP_FRAME_HEADER_BYTES;
  s->reply.capacity = IRP_DEVICE_MAX_PAYLOAD;
  s->reply.length = 0;
  s->reply.overflow = 0;
  irp_wire_put_u8(&s->reply, IRP_REPLY_OK);
}

static void irp_refuse(irp_server_t* s, uint8_t code, irp_status_t runtime_status, const char* message) {
  s->reply.length = 0;
  s->reply.overflow = 0;
  irp_wire_put_u8(&s->reply, code);
  irp_wire_put_u8(&s->reply, (uint8_t)runtime_status);
  irp_wire_put_str(&s->reply, message);
}

static void irp_refuse_text(irp_server_t* s, uint8_t code, const irp_text_t* text) {
  irp_refuse(s, code, IRP_OK, text->data);
}

/* A refusal that quotes the runtime's message after `what`. */
static void irp_refuse_runtime(irp_server_t* s, uint8_t code, irp_status_t status, const char* what) {
  irp_text_t text = {{0}, 0};
  irp_text_add(&text, what);
  irp_text_add(&text, ": ");
  const char* message = irp_runtime_error_message(s->runtime);
  irp_text_add(&text, message[0] != '\0' ? message : "runtime status ");
  if (message[0] == '\0') irp_text_add_u64(&text, (uint64_t)status);
  irp_refuse_text(s, code, &text);
}

static void irp_send_busy(irp_server_t* s, uint16_t seq) {
  uint8_t frame[IRP_FRAME_OVERHEAD];
  size_t length = irp_frame_seal(frame, IRP_MSG_BUSY, seq, 0);
  s->io->write(s->io->ctx, frame, length);
}

/* --- module and run state ------------------------------------------------------------------ */

static void irp_clear_run(irp_server_t* s) {
  if (s->module != NULL) irp_module_set_trace(s->module, 0); /* its room is in the RAM about to be reused */
  s->traced = 0;
  s->function = -1;
  s->input_count = 0;
  s->inputs = NULL;
  s->input_held = NULL;
  s->output_count = 0;
  s->outputs = NULL;
  s->run_ok = 0;
  s->profiled = 0;
}

/* Releases the loaded module and gives all its RAM back. */
static void irp_drop_module(irp_server_t* s) {
  irp_clear_run(s);
  if (s->module != NULL) irp_module_release(s->module);
  if (s->runtime != NULL) irp_runtime_release(s->runtime);
  s->module = NULL;
  s->runtime = NULL;
  irp_bump_reset(&s->ram, s->server_mark);
}

static int irp_require_module(irp_server_t* s) {
  if (s->module_state == IRP_MODULE_ACCEPTED) return 1;
  irp_refuse(s, IRP_REFUSE_NO_MODULE, IRP_OK, "no module is loaded: upload one first");
  return 0;
}

static int irp_require_run(irp_server_t* s) {
  if (!irp_require_module(s)) return 0;
  if (s->run_ok) return 1;
  irp_refuse(s, IRP_REFUSE_NO_RUN, IRP_OK, "no successful RUN since the inputs were staged");
  return 0;
}

static uint64_t irp_ns_to_cycles(uint64_t ns, uint32_t cycles_per_second) {
  /* ns * rate / 1e9 without overflowing: whole seconds and the rest apart (the rest * rate < 2^62). */
  return ns / 1000000000u * cycles_per_second + ns % 1000000000u * cycles_per_second / 1000000000u;
}

/* --- requests ------------------------------------------------------------------------------ */

static void irp_handle_hello(irp_server_t* s, irp_wire_reader_t* r) {
  (void)irp_wire_get_u16(r); /* the host's version: the host decides whether it speaks ours */
  const irp_device_board_t* board = s->board;
  irp_wire_put_u16(&s->reply, IRP_PROTOCOL_VERSION);
  irp_wire_put_u16(&s->reply, IRP_DEVICE_MAX_PAYLOAD);
  irp_wire_put_u32(&s->reply, board->ram_capacity > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)board->ram_capacity);
  irp_wire_put_u32(&s->reply,
                   board->module_capacity > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)board->module_capacity);
  irp_wire_put_u32(&s->reply, board->cycles_per_second);
  irp_wire_put_str(&s->reply, board->name);
  irp_wire_put_str(&s->reply, board->arch);
}

static void irp_handle_status(irp_server_t* s, irp_wire_reader_t* r) {
  (void)r;
  irp_wire_put_u8(&s->reply, (uint8_t)s->module_state);
  irp_wire_put_u32(&s->reply, s->module_size);
  irp_wire_put_u32(&s->reply, s->module_crc);
  irp_wire_put_u32(&s->reply, s->module_held);
  irp_wire_put_str(&s->reply, s->module_arch);
}

static void irp_handle_upload_begin(irp_server_t* s, irp_wire_reader_t* r) {
  uint32_t size = irp_wire_get_u32(r);
  uint32_t crc = irp_wire_get_u32(r);
  char arch[IRP_ARCH_CAPACITY];
  irp_wire_get_str(r, arch, sizeof(arch));
  if (r->bad || size == 0) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "UPLOAD_BEGIN needs size > 0, crc, arch (< 32 bytes)");
    return;
  }
  irp_text_t text = {{0}, 0};
  if (strcmp(arch, s->board->arch) != 0) {
    irp_text_add(&text, "module is built for ");
    irp_text_add(&text, arch);
    irp_text_add(&text, "; this board (");
    irp_text_add(&text, s->board->name);
    irp_text_add(&text, ") runs ");
    irp_text_add(&text, s->board->arch);
    irp_refuse_text(s, IRP_REFUSE_WRONG_ARCH, &text);
    return;
  }
  if (size > s->board->module_capacity) {
    irp_text_add(&text, "module is ");
    irp_text_add_u64(&text, size);
    irp_text_add(&text, " bytes; module storage holds ");
    irp_text_add_u64(&text, s->board->module_capacity);
    irp_text_add(&text, " (");
    irp_text_add_u64(&text, size - s->board->module_capacity);
    irp_text_add(&text, " bytes too many)");
    irp_refuse_text(s, IRP_REFUSE_TOO_BIG, &text);
    return;
  }
  int same = s->module_state != IRP_MODULE_EMPTY && size == s->module_size && crc == s->module_crc &&
             strcmp(arch, s->module_arch) == 0;
  if (!same) {
    irp_drop_module(s);
    s->module_state = IRP_MODULE_UPLOADING;
    s->module_size = size;
    s->module_crc = crc;
    s->module_held = 0;
    memcpy(s->module_arch, arch, sizeof(arch));
  }
  irp_wire_put_u32(&s->reply, s->module_held);
  irp_wire_put_u8(&s->reply, s->module_state == IRP_MODULE_ACCEPTED ? 1u : 0u);
}

static void irp_handle_upload_data(irp_server_t* s, irp_wire_reader_t* r) {
  uint32_t offset = irp_wire_get_u32(r);
  size_t length = irp_wire_remaining(r);
  const uint8_t* data = irp_wire_get_bytes(r, length);
  if (r->bad) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "UPLOAD_DATA needs an offset");
    return;
  }
  if (s->module_state != IRP_MODULE_UPLOADING) {
    irp_refuse(s, IRP_REFUSE_NO_UPLOAD, IRP_OK,
               s->module_state == IRP_MODULE_ACCEPTED ? "the module is already accepted" : "no UPLOAD_BEGIN");
    return;
  }
  irp_text_t text = {{0}, 0};
  if (offset > s->module_held || length > s->module_size - offset || offset > s->module_size) {
    irp_text_add(&text, "data at offset ");
    irp_text_add_u64(&text, offset);
    irp_text_add(&text, " (+");
    irp_text_add_u64(&text, length);
    irp_text_add(&text, ") but ");
    irp_text_add_u64(&text, s->module_held);
    irp_text_add(&text, " of ");
    irp_text_add_u64(&text, s->module_size);
    irp_text_add(&text, " bytes are held");
    irp_refuse_text(s, IRP_REFUSE_BAD_OFFSET, &text);
    return;
  }
  if (length > 0 && s->board->storage_write(s->board->ctx, offset, data, length) != 0) {
    irp_text_add(&text, "module storage write failed at offset ");
    irp_text_add_u64(&text, offset);
    irp_refuse_text(s, IRP_REFUSE_STORAGE, &text);
    return;
  }
  if (offset + length > s->module_held) s->module_held = offset + (uint32_t)length;
  irp_wire_put_u32(&s->reply, s->module_held);
}

static void irp_handle_upload_end(irp_server_t* s, irp_wire_reader_t* r) {
  (void)r;
  if (s->module_state == IRP_MODULE_ACCEPTED) {
    irp_wire_put_u32(&s->reply, (uint32_t)irp_bump_free_bytes(&s->ram));
    return;
  }
  if (s->module_state != IRP_MODULE_UPLOADING) {
    irp_refuse(s, IRP_REFUSE_NO_UPLOAD, IRP_OK, "no UPLOAD_BEGIN");
    return;
  }
  irp_text_t text = {{0}, 0};
  if (s->module_held != s->module_size) {
    irp_text_add(&text, "only ");
    irp_text_add_u64(&text, s->module_held);
    irp_text_add(&text, " of ");
    irp_text_add_u64(&text, s->module_size);
    irp_text_add(&text, " bytes received");
    irp_refuse_text(s, IRP_REFUSE_INCOMPLETE, &text);
    return;
  }
  uint32_t crc = irp_crc32(s->board->module_storage, s->module_size);
  if (crc != s->module_crc) {
    s->module_state = IRP_MODULE_EMPTY;
    s->module_held = 0;
    irp_text_add(&text, "module CRC-32 is ");
    irp_text_add_u64(&text, crc);
    irp_text_add(&text, ", expected ");
    irp_text_add_u64(&text, s->module_crc);
    irp_text_add(&text, ": upload discarded");
    irp_refuse_text(s, IRP_REFUSE_BAD_CRC, &text);
    return;
  }
  s->allocator = irp_bump_allocator(&s->ram);
  irp_status_t status = irp_runtime_create(&s->allocator, &s->runtime);
  if (status == IRP_OK) {
    /* The module's state must fit the RAM left: a module asking for more is refused with the numbers. */
    size_t free_ram = irp_bump_free_bytes(&s->ram);
    irp_runtime_set_memory_limit(s->runtime, free_ram > 0 ? free_ram : 1); /* 0 would mean "no limit" */
    status = irp_module_load(s->runtime, s->board->module_storage, s->module_size, &s->module);
  }
  if (status != IRP_OK) {
    if (s->runtime != NULL) {
      irp_refuse_runtime(s, IRP_REFUSE_LOAD_FAILED, status, "the runtime refused the module");
    } else {
      irp_refuse(s, IRP_REFUSE_LOAD_FAILED, status, "not enough RAM for the runtime");
    }
    irp_drop_module(s);
    s->module_state = IRP_MODULE_EMPTY;
    s->module_held = 0;
    return;
  }
  s->module_state = IRP_MODULE_ACCEPTED;
  s->module_mark = s->ram.used;
  irp_wire_put_u32(&s->reply, (uint32_t)irp_bump_free_bytes(&s->ram));
}

static void irp_handle_run_begin(irp_server_t* s, irp_wire_reader_t* r) {
  if (!irp_require_module(s)) return;
  irp_clear_run(s);
  irp_bump_reset(&s->ram, s->module_mark);
  char name[IRP_FUNCTION_NAME_CAPACITY];
  irp_wire_get_str(r, name, sizeof(name));
  uint8_t count = irp_wire_get_u8(r);
  if (r->bad) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "RUN_BEGIN needs a function name (< 64 bytes) and an input count");
    return;
  }
  irp_text_t text = {{0}, 0};
  int32_t function = -1;
  if (irp_module_find_function(s->module, name, &function) != IRP_OK) {
    irp_text_add(&text, "the module has no function '");
    irp_text_add(&text, name);
    irp_text_add(&text, "'");
    irp_refuse_text(s, IRP_REFUSE_NO_FUNCTION, &text);
    return;
  }
  int32_t output_count = irp_function_output_count(s->module, function);
  size_t free_before = irp_bump_free_bytes(&s->ram);
  irp_buffer_view_t* inputs = irp_bump_alloc(&s->ram, (size_t)(count ? count : 1) * sizeof(irp_buffer_view_t), 8);
  uint32_t* held = irp_bump_alloc(&s->ram, (size_t)(count ? count : 1) * sizeof(uint32_t), 4);
  irp_buffer_view_t* outputs =
      irp_bump_alloc(&s->ram, (size_t)(output_count > 0 ? output_count : 1) * sizeof(irp_buffer_view_t), 8);
  int fits = inputs != NULL && held != NULL && outputs != NULL;
  uint64_t needed = 0;
  for (uint8_t i = 0; i < count && !r->bad; ++i) {
    irp_buffer_view_t* view = &inputs[fits ? i : 0];
    irp_buffer_view_t scratch;
    if (!fits) view = &scratch;
    memset(view, 0, sizeof(*view));
    view->dtype = (irp_dtype_t)irp_wire_get_u8(r);
    uint8_t rank = irp_wire_get_u8(r);
    if (rank > IRP_MAX_RANK) r->bad = 1;
    view->rank = rank;
    for (uint8_t d = 0; d < rank && !r->bad; ++d) view->shape[d] = (int64_t)irp_wire_get_u64(r);
    view->length = irp_wire_get_u32(r);
    needed += view->length;
    if (!fits || r->bad) continue;
    view->data = irp_bump_alloc(&s->ram, view->length ? view->length : 1, 64);
    held[i] = 0;
    if (view->data == NULL) fits = 0;
  }
  if (r->bad || irp_wire_remaining(r) != 0) {
    irp_bump_reset(&s->ram, s->module_mark);
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "RUN_BEGIN: malformed input list (dtype, rank <= 8, shape, bytes)");
    return;
  }
  if (!fits) {
    irp_bump_reset(&s->ram, s->module_mark);
    irp_text_add(&text, "inputs need ");
    irp_text_add_u64(&text, needed);
    irp_text_add(&text, " bytes; ");
    irp_text_add_u64(&text, free_before);
    irp_text_add(&text, " bytes of RAM are free");
    irp_refuse_text(s, IRP_REFUSE_OUT_OF_RAM, &text);
    return;
  }
  s->function = function;
  s->input_count = count;
  s->inputs = inputs;
  s->input_held = held;
  s->output_count = output_count;
  s->outputs = outputs;
  s->inputs_mark = s->ram.used;
}

static void irp_handle_input_data(irp_server_t* s, irp_wire_reader_t* r) {
  if (!irp_require_module(s)) return;
  uint8_t index = irp_wire_get_u8(r);
  uint32_t offset = irp_wire_get_u32(r);
  size_t length = irp_wire_remaining(r);
  const uint8_t* data = irp_wire_get_bytes(r, length);
  if (r->bad) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "INPUT_DATA needs an input index and an offset");
    return;
  }
  irp_text_t text = {{0}, 0};
  if (s->inputs == NULL || index >= s->input_count) {
    irp_text_add(&text, "no staged input ");
    irp_text_add_u64(&text, index);
    irp_text_add(&text, " (RUN_BEGIN declared ");
    irp_text_add_u64(&text, (uint64_t)s->input_count);
    irp_text_add(&text, ")");
    irp_refuse_text(s, IRP_REFUSE_BAD_INPUT, &text);
    return;
  }
  irp_buffer_view_t* view = &s->inputs[index];
  if (offset > s->input_held[index] || offset > view->length || length > view->length - offset) {
    irp_text_add(&text, "input ");
    irp_text_add_u64(&text, index);
    irp_text_add(&text, ": data at offset ");
    irp_text_add_u64(&text, offset);
    irp_text_add(&text, " (+");
    irp_text_add_u64(&text, length);
    irp_text_add(&text, ") but it has ");
    irp_text_add_u64(&text, view->length);
    irp_text_add(&text, " bytes, ");
    irp_text_add_u64(&text, s->input_held[index]);
    irp_text_add(&text, " received");
    irp_refuse_text(s, IRP_REFUSE_BAD_INPUT, &text);
    return;
  }
  if (length > 0) memcpy((uint8_t*)view->data + offset, data, length);
  if (offset + length > s->input_held[index]) s->input_held[index] = offset + (uint32_t)length;
  s->run_ok = 0;
}

static void irp_put_view(irp_wire_writer_t* w, const irp_buffer_view_t* view) {
  irp_wire_put_u8(w, (uint8_t)view->dtype);
  irp_wire_put_u8(w, (uint8_t)view->rank);
  for (int32_t d = 0; d < view->rank; ++d) irp_wire_put_u64(w, (uint64_t)view->shape[d]);
  irp_wire_put_u32(w, (uint32_t)view->length);
}

/* Tracing on (the room for as many dispatches as fit in the RAM after the staged inputs, up to
 * IRP_DEVICE_TRACE_EVENTS) or off. Refuses the run when not even one event fits. */
static int irp_start_trace(irp_server_t* s, int trace) {
  irp_module_set_trace(s->module, 0);
  s->traced = 0;
  irp_bump_reset(&s->ram, s->inputs_mark);
  if (!trace) return 1;
  for (uint32_t room = IRP_DEVICE_TRACE_EVENTS; room > 0; room /= 2) {
    if (irp_module_set_trace(s->module, room) == IRP_OK) return 1;
    irp_bump_reset(&s->ram, s->inputs_mark);
  }
  irp_text_t text = {{0}, 0};
  irp_text_add(&text, "no RAM for a trace: ");
  irp_text_add_u64(&text, (uint64_t)irp_bump_free_bytes(&s->ram));
  irp_text_add(&text, " bytes free after the inputs");
  irp_refuse_text(s, IRP_REFUSE_OUT_OF_RAM, &text);
  return 0;
}

static void irp_handle_run(irp_server_t* s, irp_wire_reader_t* r) {
  uint8_t flags = irp_wire_get_u8(r);
  if (r->bad) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "RUN needs a flags byte");
    return;
  }
  if (!irp_require_module(s)) return;
  irp_text_t text = {{0}, 0};
  if (s->inputs == NULL) {
    irp_refuse(s, IRP_REFUSE_BAD_INPUT, IRP_OK, "no RUN_BEGIN: inputs are not staged");
    return;
  }
  for (int32_t i = 0; i < s->input_count; ++i) {
    if (s->input_held[i] == s->inputs[i].length) continue;
    irp_text_add(&text, "input ");
    irp_text_add_u64(&text, (uint64_t)i);
    irp_text_add(&text, " has ");
    irp_text_add_u64(&text, s->input_held[i]);
    irp_text_add(&text, " of ");
    irp_text_add_u64(&text, s->inputs[i].length);
    irp_text_add(&text, " bytes");
    irp_refuse_text(s, IRP_REFUSE_BAD_INPUT, &text);
    return;
  }
  int profile = (flags & 1u) != 0;
  int trace = (flags & 2u) != 0;
  irp_module_set_profiling(s->module, profile);
  if (!irp_start_trace(s, trace)) return;
  uint64_t start = s->board->cycles(s->board->ctx);
  irp_status_t status = irp_call(s->module, s->function, s->inputs, s->input_count, s->outputs, s->output_count);
  uint64_t cycles = s->board->cycles(s->board->ctx) - start;
  s->run_ok = status == IRP_OK;
  s->profiled = s->run_ok && profile;
  s->traced = s->run_ok && trace;
  if (status != IRP_OK) {
    irp_refuse_runtime(s, IRP_REFUSE_RUN_FAILED, status, irp_function_name(s->module, s->function));
    return;
  }
  irp_wire_put_u64(&s->reply, cycles);
  irp_wire_put_u8(&s->reply, (uint8_t)s->output_count);
  for (int32_t i = 0; i < s->output_count; ++i) irp_put_view(&s->reply, &s->outputs[i]);
  irp_wire_put_u16(&s->reply, profile ? (uint16_t)irp_module_entry_point_count(s->module) : 0u);
}

static void irp_handle_read_output(irp_server_t* s, irp_wire_reader_t* r) {
  uint8_t index = irp_wire_get_u8(r);
  uint32_t offset = irp_wire_get_u32(r);
  uint16_t length = irp_wire_get_u16(r);
  if (r->bad) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "READ_OUTPUT needs output, offset, length");
    return;
  }
  if (!irp_require_run(s)) return;
  irp_text_t text = {{0}, 0};
  if (index >= s->output_count || offset > s->outputs[index].length ||
      length > s->outputs[index].length - offset || length > IRP_DEVICE_MAX_PAYLOAD - 1u) {
    irp_text_add(&text, "cannot read ");
    irp_text_add_u64(&text, length);
    irp_text_add(&text, " bytes at ");
    irp_text_add_u64(&text, offset);
    irp_text_add(&text, " of output ");
    irp_text_add_u64(&text, index);
    irp_text_add(&text, " (");
    irp_text_add_u64(&text, (uint64_t)s->output_count);
    irp_text_add(&text, " outputs)");
    irp_refuse_text(s, IRP_REFUSE_BAD_REQUEST, &text);
    return;
  }
  irp_wire_put_bytes(&s->reply, (const uint8_t*)s->outputs[index].data + offset, length);
}

static void irp_sort_cycles(uint64_t* values, uint32_t count) {
  for (uint32_t i = 1; i < count; ++i) {
    uint64_t v = values[i];
    uint32_t j = i;
    for (; j > 0 && values[j - 1] > v; --j) values[j] = values[j - 1];
    values[j] = v;
  }
}

static void irp_handle_benchmark(irp_server_t* s, irp_wire_reader_t* r) {
  uint32_t runs = irp_wire_get_u32(r);
  if (r->bad || runs == 0) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "BENCHMARK needs runs >= 1");
    return;
  }
  if (!irp_require_run(s)) return;
  irp_text_t text = {{0}, 0};
  uint64_t* cycles = irp_bump_alloc(&s->ram, (size_t)runs * sizeof(uint64_t), 8);
  if (cycles == NULL) {
    irp_text_add(&text, "no RAM for ");
    irp_text_add_u64(&text, runs);
    irp_text_add(&text, " cycle counts");
    irp_refuse_text(s, IRP_REFUSE_OUT_OF_RAM, &text);
    return;
  }
  irp_module_set_profiling(s->module, 0);
  s->profiled = 0;
  irp_module_set_trace(s->module, 0); /* its room was after the inputs, where the cycle counts now are */
  s->traced = 0;
  irp_status_t status = IRP_OK;
  for (uint32_t i = 0; i < runs && status == IRP_OK; ++i) {
    uint64_t start = s->board->cycles(s->board->ctx);
    status = irp_call(s->module, s->function, s->inputs, s->input_count, s->outputs, s->output_count);
    cycles[i] = s->board->cycles(s->board->ctx) - start;
  }
  if (status != IRP_OK) {
    s->run_ok = 0;
    irp_bump_reset(&s->ram, s->inputs_mark);
    irp_refuse_runtime(s, IRP_REFUSE_RUN_FAILED, status, irp_function_name(s->module, s->function));
    return;
  }
  irp_sort_cycles(cycles, runs);
  irp_wire_put_u32(&s->reply, runs);
  irp_wire_put_u64(&s->reply, cycles[0]);
  irp_wire_put_u64(&s->reply, cycles[runs / 2]);
  irp_wire_put_u64(&s->reply, cycles[runs - 1]);
  irp_bump_reset(&s->ram, s->inputs_mark);
}

/* PROFILE and TRACE: a well-formed request (`malformed` otherwise) after a successful RUN that
 * recorded what they read (`not_recorded` otherwise). */
static int irp_require_recorded(irp_server_t* s, const irp_wire_reader_t* r, int recorded, const char* malformed,
                                const char* not_recorded) {
  if (r->bad) {
    irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, malformed);
    return 0;
  }
  if (!irp_require_run(s)) return 0;
  if (!recorded) irp_refuse(s, IRP_REFUSE_NO_RUN, IRP_OK, not_recorded);
  return recorded;
}

static void irp_handle_profile(irp_server_t* s, irp_wire_reader_t* r) {
  uint16_t first = irp_wire_get_u16(r);
  if (!irp_require_recorded(s, r, s->profiled, "PROFILE needs the first entry point",
                            "the latest run was not profiled (RUN with the profile flag)")) {
    return;
  }
  int32_t total = irp_module_entry_point_count(s->module);
  irp_wire_put_u16(&s->reply, (uint16_t)total);
  size_t count_at = s->reply.length;
  irp_wire_put_u8(&s->reply, 0);
  uint8_t count = 0;
  for (int32_t i = first; i < total && count < 255; ++i) {
    const char* name = "";
    uint64_t dispatches = 0, ns = 0;
    if (irp_module_entry_point_profile(s->module, i, &name, &dispatches, &ns) != IRP_OK) break;
    size_t needed = 2u + strlen(name) + 4u + 8u;
    if (needed > s->reply.capacity - s->reply.length) break;
    irp_wire_put_str(&s->reply, name);
    irp_wire_put_u32(&s->reply, dispatches > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)dispatches);
    irp_wire_put_u64(&s->reply, irp_ns_to_cycles(ns, s->board->cycles_per_second));
    ++count;
  }
  s->reply.data[count_at] = count;
}

/* Per dispatch of the latest traced RUN, from event `first` on: as many as fit in one reply. Times
 * are the board's cycle counter (the runtime's clock in ns, back in cycles). */
static void irp_handle_trace(irp_server_t* s, irp_wire_reader_t* r) {
  uint32_t first = irp_wire_get_u32(r);
  if (!irp_require_recorded(s, r, s->traced, "TRACE needs the first dispatch",
                            "the latest run was not traced (RUN with the trace flag)")) {
    return;
  }
  uint32_t rate = s->board->cycles_per_second;
  uint64_t start_ns = 0, end_ns = 0, dropped = 0;
  uint32_t total = 0;
  irp_module_trace_call(s->module, &start_ns, &end_ns, &total, &dropped);
  irp_wire_put_u64(&s->reply, irp_ns_to_cycles(start_ns, rate));
  irp_wire_put_u64(&s->reply, irp_ns_to_cycles(end_ns, rate));
  irp_wire_put_u32(&s->reply, total);
  irp_wire_put_u64(&s->reply, dropped);
  size_t count_at = s->reply.length;
  irp_wire_put_u8(&s->reply, 0);
  uint8_t count = 0;
  const size_t event_bytes = 2u + 8u + 8u + 12u + 8u + 8u;
  for (uint32_t i = first; i < total && count < 255; ++i) {
    irp_trace_event_t event;
    if (event_bytes > s->reply.capacity - s->reply.length) break;
    if (irp_module_trace_event(s->module, i, &event) != IRP_OK) break;
    irp_wire_put_u16(&s->reply, (uint16_t)event.entry_point);
    irp_wire_put_u64(&s->reply, irp_ns_to_cycles(event.start_ns, rate));
    irp_wire_put_u64(&s->reply, irp_ns_to_cycles(event.end_ns, rate));
    for (int d = 0; d < 3; ++d) irp_wire_put_u32(&s->reply, event.workgroup_count[d]);
    irp_wire_put_u64(&s->reply, event.binding_bytes);
    irp_wire_put_u64(&s->reply, event.pool_bytes);
    ++count;
  }
  s->reply.data[count_at] = count;
}

/* --- the loop ------------------------------------------------------------------------------ */

typedef struct irp_request_kind_t {
  uint8_t type;
  int long_running; /* answer BUSY first */
  void (*handle)(irp_server_t* s, irp_wire_reader_t* r);
} irp_request_kind_t;

static const irp_request_kind_t kRequests[] = {
    {IRP_MSG_HELLO, 0, irp_handle_hello},
    {IRP_MSG_STATUS, 0, irp_handle_status},
    {IRP_MSG_UPLOAD_BEGIN, 0, irp_handle_upload_begin},
    {IRP_MSG_UPLOAD_DATA, 0, irp_handle_upload_data},
    {IRP_MSG_UPLOAD_END, 1, irp_handle_upload_end},
    {IRP_MSG_RUN_BEGIN, 0, irp_handle_run_begin},
    {IRP_MSG_INPUT_DATA, 0, irp_handle_input_data},
    {IRP_MSG_RUN, 1, irp_handle_run},
    {IRP_MSG_READ_OUTPUT, 0, irp_handle_read_output},
    {IRP_MSG_BENCHMARK, 1, irp_handle_benchmark},
    {IRP_MSG_PROFILE, 0, irp_handle_profile},
    {IRP_MSG_TRACE, 0, irp_handle_trace},
};

static void irp_serve_frame(irp_server_t* s, const irp_frame_t* frame) {
  if (frame->type == IRP_MSG_HELLO) {
    s->have_last = 0;
  } else if (s->have_last && frame->seq == s->last_seq && frame->crc == s->last_crc) {
    s->io->write(s->io->ctx, s->tx, s->tx_length); /* a retry: answer again, do not execute again */
    return;
  }
  const irp_request_kind_t* kind = NULL;
  for (size_t i = 0; i < sizeof(kRequests) / sizeof(kRequests[0]); ++i) {
    if (kRequests[i].type == frame->type) kind = &kRequests[i];
  }
  irp_reply_begin(s);
  irp_wire_reader_t reader = {frame->payload, frame->length, 0, 0};
  if (kind == NULL) {
    irp_text_t text = {{0}, 0};
    irp_text_add(&text, "unknown request type ");
    irp_text_add_u64(&text, frame->type);
    irp_refuse_text(s, IRP_REFUSE_BAD_REQUEST, &text);
  } else {
    if (kind->long_running) irp_send_busy(s, frame->seq);
    kind->handle(s, &reader);
  }
  if (s->reply.overflow) irp_refuse(s, IRP_REFUSE_BAD_REQUEST, IRP_OK, "response does not fit a frame");
  s->tx_length = irp_frame_seal(s->tx, (uint8_t)(frame->type | IRP_MSG_RESPONSE), frame->seq,
                                (uint16_t)s->reply.length);
  s->have_last = 1;
  s->last_seq = frame->seq;
  s->last_crc = frame->crc;
  s->io->write(s->io->ctx, s->tx, s->tx_length);
}

void irp_device_serve(const irp_device_io_t* io, const irp_device_board_t* board) {
  irp_bump_allocator_t ram;
  irp_bump_init(&ram, board->ram, board->ram_capacity);
  irp_server_t* s = irp_bump_alloc(&ram, sizeof(irp_server_t), 16);
  if (s == NULL) {
    for (;;) {
      /* The board's RAM cannot even hold the server: nothing can be served. */
    }
  }
  memset(s, 0, sizeof(*s));
  s->io = io;
  s->board = board;
  s->ram = ram;
  s->server_mark = s->ram.used;
  s->module_mark = s->ram.used;
  s->inputs_mark = s->ram.used;
  irp_clear_run(s);
  for (;;) {
    irp_frame_t frame;
    if (!irp_frame_receive(io, s->rx, IRP_DEVICE_MAX_PAYLOAD, IRP_IDLE_TIMEOUT_MS, &frame)) continue;
    irp_serve_frame(s, &frame);
  }
}
