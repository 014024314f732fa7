/* The helpers that need GNU extensions; the static inline ones are in include/CLinuxHelpers.h. */
#define _GNU_SOURCE
#include "CLinuxHelpers.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int clh_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int clh_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int clh_memfd_create(const char *name) { return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING); }

int clh_seal_size(int fd) { return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL); }

int clh_size_is_sealed(int fd) {
    int seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW) && (seals & F_SEAL_SEAL);
}

int clh_accept(int fd) { return accept4(fd, NULL, NULL, SOCK_CLOEXEC); }

int clh_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

int clh_enter_network_namespace(int fd) { return setns(fd, CLONE_NEWNET); }

int clh_set_parent_death_signal(int signal) { return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0); }

void clh_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }

static volatile int signal_pipe_fd = -1;

static void write_signal_to_pipe(int signal) {
    unsigned char byte = (unsigned char)signal;
    int saved = errno;
    (void)write(signal_pipe_fd, &byte, 1);
    errno = saved;
}

int clh_signal_to_pipe(int signal, int fd) {
    signal_pipe_fd = fd;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = write_signal_to_pipe;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    return sigaction(signal, &action, NULL);
}

int clh_peer_credentials(int fd, uid_t *uid, pid_t *pid) {
    struct ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
    *uid = cred.uid;
    *pid = cred.pid;
    return 0;
}

void clh_release_free_memory(void) { (void)malloc_trim(0); }

int clh_is_main_thread(void) { return syscall(SYS_gettid) == getpid(); }
