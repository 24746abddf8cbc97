#include "status.h"

#include <stdarg.h>
#include <stdio.h>

void irp_diag_clear(irp_diag_t* diag) {
  if (diag == NULL || diag->message == NULL || diag->capacity == 0) return;
  diag->message[0] = '\0';
}

#if IRP_STATUS_MESSAGES
irp_status_t irp_diag_fail(irp_diag_t* diag, irp_status_t code, const char* format, ...) {
  if (diag == NULL || diag->message == NULL || diag->capacity == 0) return code;
  va_list args;
  va_start(args, format);
  vsnprintf(diag->message, diag->capacity, format, args);
  va_end(args);
  return code;
}
#endif
