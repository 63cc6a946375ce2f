/*
 * deny_pidfd_getfd PROGRAM [ARGS...]: runs PROGRAM with pidfd_getfd
 * refused (EPERM) by a seccomp filter, as some container runtimes' default
 * profiles do. Tests use it to make one rank unable to take its peers'
 * descriptors, so that gin_comm_init's check of VMM windows (and its
 * fallback to CUDA IPC) runs for real. Exit 126 if the filter cannot be
 * installed, 127 if PROGRAM cannot be run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PROGRAM [ARGS...]\n", argv[0]);
    return 2;
  }
#ifndef SYS_pidfd_getfd
  fprintf(stderr, "deny_pidfd_getfd: no pidfd_getfd on this system\n");
  return 126;
#else
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    fprintf(stderr, "deny_pidfd_getfd: seccomp filter: %s\n", strerror(errno));
    return 126;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "deny_pidfd_getfd: %s: %s\n", argv[1], strerror(errno));
  return 127;
#endif
}
