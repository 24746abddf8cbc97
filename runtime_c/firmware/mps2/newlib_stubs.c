/* newlib-nano wants a few system calls when its printf family is linked (the runtime's status
 * messages use vsnprintf). The firmware has no heap: _sbrk refuses, so any malloc would fail
 * rather than take RAM the memory plan does not know about. */
#include <errno.h>
#include <stddef.h>

void* _sbrk(ptrdiff_t increment);

void* _sbrk(ptrdiff_t increment) {
  (void)increment;
  errno = ENOMEM;
  return (void*)-1;
}
