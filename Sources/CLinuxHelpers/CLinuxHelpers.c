/* The helpers that need GNU extensions; the static inline ones are in include/CLinuxHelpers.h. */
#define _GNU_SOURCE
#include "CLinuxHelpers.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int clh_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int clh_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

int clh_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int clh_set_parent_death_signal(int signal) { return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0); }

void clh_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

int clh_peer_credentials(int fd, uid_t *uid, pid_t *pid) {
    struct ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    *uid = cred.uid;
    *pid = cred.pid;
    return 0;
}
