#include "CBenchBaseline.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

uint64_t cbb_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Makes `fd` an event-driven side: non-blocking and in a new epoll set (returned, or -1), so that
   a read that would block waits in epoll_wait, as an event loop does. read_full and write_full
   take that set, or -1 for plain blocking I/O. */
static int make_event_driven(int fd) {
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = { .events = EPOLLIN, .data.fd = fd };
    if (ep < 0) return -1;
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event) < 0) {
        close(ep);
        return -1;
    }
    return ep;
}

static int wait_until(int fd, int ep, short events) {
    if (events == POLLIN) {
        struct epoll_event ready;
        return epoll_wait(ep, &ready, 1, -1) < 0 && errno != EINTR ? -1 : 0;
    }
    struct pollfd p = { .fd = fd, .events = events };
    return poll(&p, 1, -1) < 0 && errno != EINTR ? -1 : 0;
}

static int read_full(int fd, int ep, uint8_t *buffer, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t n = read(fd, buffer + done, length - done);
        if (n == 0) return 0;
        if (n < 0 && errno == EAGAIN && ep >= 0) { if (wait_until(fd, ep, POLLIN) < 0) return -1; continue; }
        if (n < 0) { if (errno == EINTR) continue; return -1; }
        done += (size_t)n;
    }
    return 1;
}

static int write_full(int fd, int ep, const uint8_t *buffer, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t n = write(fd, buffer + done, length - done);
        if (n < 0 && errno == EAGAIN && ep >= 0) { if (wait_until(fd, ep, POLLOUT) < 0) return -1; continue; }
        if (n < 0) { if (errno == EINTR) continue; return -1; }
        done += (size_t)n;
    }
    return 0;
}

static long echo_frames(int fd, int ep) {
    static uint8_t buffer[1 << 16];
    long frames = 0;
    for (;;) {
        int r = read_full(fd, ep, buffer, 4);
        if (r == 0) return frames;
        if (r < 0) return -1;
        size_t length = (size_t)buffer[0] << 24 | (size_t)buffer[1] << 16 | (size_t)buffer[2] << 8 | buffer[3];
        if (length == 0 || length > sizeof buffer - 4) return -1;
        if (read_full(fd, ep, buffer + 4, length) != 1) return -1;
        if (write_full(fd, ep, buffer, length + 4) < 0) return -1;
        frames++;
    }
}

long cbb_echo_frames(int fd, int event_driven) {
    int ep = event_driven ? make_event_driven(fd) : -1;
    if (event_driven && ep < 0) return -1;
    long frames = echo_frames(fd, ep);
    if (ep >= 0) close(ep);
    return frames;
}

static int ping_pong(int fd, int ep, const uint8_t *frame, size_t length, int iterations, uint64_t *rtt_ns) {
    uint8_t reply[1 << 16];
    if (length > sizeof reply) return -1;
    for (int i = 0; i < iterations; i++) {
        uint64_t start = cbb_now_ns();
        if (write_full(fd, ep, frame, length) < 0) return -1;
        if (read_full(fd, ep, reply, length) != 1) return -1;
        rtt_ns[i] = cbb_now_ns() - start;
    }
    return 0;
}

int cbb_ping_pong(int fd, int event_driven, const uint8_t *frame, size_t length, int iterations, uint64_t *rtt_ns) {
    int ep = event_driven ? make_event_driven(fd) : -1;
    if (event_driven && ep < 0) return -1;
    int rc = ping_pong(fd, ep, frame, length, iterations, rtt_ns);
    if (ep >= 0) close(ep);
    return rc;
}

int cbb_send_frames(int fd, const uint8_t *frame, size_t length, long count) {
    for (long i = 0; i < count; i++)
        if (write_full(fd, -1, frame, length) < 0) return -1;
    uint8_t ack;
    return read_full(fd, -1, &ack, 1) == 1 ? 0 : -1;
}

int cbb_receive_frames(int fd, long count) {
    static uint8_t buffer[1 << 16];
    size_t have = 0;
    long frames = 0;
    while (frames < count) {
        ssize_t n = read(fd, buffer + have, sizeof buffer - have);
        if (n <= 0) { if (n < 0 && errno == EINTR) continue; return -1; }
        have += (size_t)n;
        size_t at = 0;
        while (have - at >= 4) {
            size_t length = (size_t)buffer[at] << 24 | (size_t)buffer[at + 1] << 16 | (size_t)buffer[at + 2] << 8 | buffer[at + 3];
            if (length == 0 || length > sizeof buffer - 4) return -1;
            if (have - at - 4 < length) break;
            at += 4 + length;
            frames++;
        }
        for (size_t i = at; i < have; i++) buffer[i - at] = buffer[i];
        have -= at;
    }
    uint8_t ack = 1;
    return write_full(fd, -1, &ack, 1);
}

int cbb_spawn_handshake(const char *path, int iterations, uint64_t *ns) {
    for (int i = 0; i < iterations; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
        uint64_t start = cbb_now_ns();
        pid_t pid = fork();
        if (pid < 0) return -1;
        if (pid == 0) {
            dup2(sv[1], 3);
            execl(path, path, (char *)NULL);
            _exit(127);
        }
        close(sv[1]);
        uint8_t header[4], body[256];
        if (read_full(sv[0], -1, header, 4) != 1) return -1;
        size_t length = (size_t)header[2] << 8 | header[3];
        if (length > sizeof body || read_full(sv[0], -1, body, length) != 1) return -1;
        ns[i] = cbb_now_ns() - start;
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(sv[0]);
    }
    return 0;
}
