#include <stdint.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <xcb/xcb.h>
#include <xcb/shm.h>
#include <X11/Xauth.h>

/* xcb_shm_id is an extern struct Swift imports as a var it will not take the address of safely. */
static inline xcb_extension_t *cxcb_shm_extension(void) { return &xcb_shm_id; }
