/* Error reporting inside the runtime.
 *
 * Fallible functions return irp_status_t (IRP_OK == 0, see iree_py_base.h) and take an
 * irp_diag_t* that receives the message of the error. The diag points at a fixed buffer owned by
 * the caller (the runtime object keeps one); there is no global state. With IRP_STATUS_MESSAGES=0
 * the format strings and vsnprintf are compiled out and only codes remain. */
#ifndef IRP_BASE_STATUS_H_
#define IRP_BASE_STATUS_H_

#include <stddef.h>

#include "config.h"
#include "iree_py_base.h"

typedef struct irp_diag_t {
  char* message;   /* capacity bytes, always NUL-terminated; may be NULL (messages dropped) */
  size_t capacity;
} irp_diag_t;

/* Empties the message. */
void irp_diag_clear(irp_diag_t* diag);

#if IRP_STATUS_MESSAGES
/* Formats the message into diag and returns code. */
irp_status_t irp_diag_fail(irp_diag_t* diag, irp_status_t code, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
#define IRP_FAIL(diag, code, ...) irp_diag_fail((diag), (code), __VA_ARGS__)
#else
/* Arguments are still "used" (no unused warnings); inlining drops them and the format strings. */
static inline irp_status_t irp_diag_code_only(irp_diag_t* diag, irp_status_t code, ...) {
  (void)diag;
  return code;
}
#define IRP_FAIL(diag, code, ...) irp_diag_code_only((diag), (code), __VA_ARGS__)
#endif

#define IRP_RETURN_IF_ERROR(expr)          \
  do {                                     \
    irp_status_t irp_status_ = (expr);     \
    if (irp_status_ != IRP_OK) return irp_status_; \
  } while (0)

#endif /* IRP_BASE_STATUS_H_ */
