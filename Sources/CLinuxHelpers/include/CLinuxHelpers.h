#ifndef CLINUXHELPERS_H
#define CLINUXHELPERS_H

/* What Swift cannot import from the Linux headers: function-like macros, packed structs, and
   functions behind _GNU_SOURCE. The macro wrappers are static inlines (no call overhead). */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/types.h>

/* ---- SCM_RIGHTS: the CMSG_* macros ---- */

static inline size_t clh_cmsg_space(size_t length) { return CMSG_SPACE(length); }
static inline size_t clh_cmsg_len(size_t length) { return CMSG_LEN(length); }
static inline struct cmsghdr *clh_cmsg_firsthdr(struct msghdr *msg) { return CMSG_FIRSTHDR(msg); }
static inline struct cmsghdr *clh_cmsg_nxthdr(struct msghdr *msg, struct cmsghdr *cmsg) { return CMSG_NXTHDR(msg, cmsg); }
static inline unsigned char *clh_cmsg_data(struct cmsghdr *cmsg) { return CMSG_DATA(cmsg); }

/* ---- epoll: struct epoll_event is packed on x86_64 ---- */

/* Registers `fd` with `events`, storing the fd itself as the event's data. */
static inline int clh_epoll_ctl(int epfd, int op, int fd, uint32_t events) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(epfd, op, fd, &ev);
}

/* Waits like epoll_wait, returning the ready fds and their event masks in two plain arrays. */
static inline int clh_epoll_wait(int epfd, int *fds, uint32_t *events, int capacity, int timeout_ms) {
    struct epoll_event ready[64];
    if (capacity > 64) capacity = 64;
    int n = epoll_wait(epfd, ready, capacity, timeout_ms);
    for (int i = 0; i < n; i++) { fds[i] = ready[i].data.fd; events[i] = ready[i].events; }
    return n;
}

/* ---- sockaddr_un: sun_path is a fixed char array (a tuple in Swift) ---- */

/* Fills `addr` for `path`; returns the address length, or -1 if the path does not fit. */
static inline int clh_sockaddr_un(struct sockaddr_un *addr, const char *path) {
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof addr->sun_path) return -1;
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    memcpy(addr->sun_path, path, n + 1);
    return (int)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/* These need _GNU_SOURCE, which must not leak into this header (Swift's Glibc module is built
   without it, and the two views of the system headers would clash): they live in CLinuxHelpers.c. */

/* A pipe whose two ends are close-on-exec (pipe2 with O_CLOEXEC). */
int clh_pipe_cloexec(int fds[2]);

/* Adds "close every descriptor >= lowest" to a posix_spawn: a child gets only what it is given,
   even if a library in this process opened something without close-on-exec. */
int clh_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

/* An anonymous shared-memory file (memfd), close-on-exec, that can be sealed. */
int clh_memfd_create(const char *name);

/* Fixes a memfd's size for good (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL): a peer it is passed to
   cannot truncate it under the other side's mapping (which would be a SIGBUS there). */
int clh_seal_size(int fd);

/* 1 if a memfd's size is sealed for good (it can neither shrink nor grow, nor be unsealed), else 0. */
int clh_size_is_sealed(int fd);

/* Accepts a connection, close-on-exec. */
int clh_accept(int fd);

/* A descriptor that becomes readable when `pid` exits (Linux 5.3+), so child deaths are epoll events. */
int clh_pidfd_open(pid_t pid);

/* Moves the calling thread into the network namespace of `fd` (an open /run/netns/NAME). */
int clh_enter_network_namespace(int fd);

/* Asks the kernel to send `signal` to this process when its parent (thread) dies. */
int clh_set_parent_death_signal(int signal);

/* Makes stdout line-buffered (a driver's stdout is a pipe, fully buffered by default), without
   Swift touching the `stdout` global, which strict concurrency rejects. */
void clh_line_buffer_stdout(void);

/* From now on, `signal` writes one byte (its number) to `fd` instead of its default action. Installed
   before this returns, unlike a Dispatch signal source, so a signal sent right after is never lost. */
int clh_signal_to_pipe(int signal, int fd);

/* Hands the heap's free pages back to the kernel (malloc_trim), which glibc otherwise keeps. */
void clh_release_free_memory(void);

/* Whether the caller is the process's main thread. */
int clh_is_main_thread(void);

/* libdispatch's hooks for a loop that serves the main queue itself, as CoreFoundation's RunLoop
   does on Linux: the eventfd signalled while the main queue has work, and the drain. */
int _dispatch_get_main_queue_handle_4CF(void);
void _dispatch_main_queue_callback_4CF(void *message);

/* The uid and pid of the process at the other end of a Unix socket. */
int clh_peer_credentials(int fd, uid_t *uid, pid_t *pid);

#endif
