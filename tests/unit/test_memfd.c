/*
 * Taking a peer's descriptor (src/arch/memfd.c): gin_pidfd_dup and
 * gin_arch_shm_fd_check, which the cuda target's VMM windows rely on (a
 * window's descriptor taken with pidfd_getfd; the check runs on the control
 * pages at gin_comm_init). A real child process exports a memfd; this
 * process takes it, sees the child's bytes through it, and gets the errno
 * of each failure: a descriptor the child does not have, a bad handle, a
 * process that is gone. Exit 0 pass, 1 fail, 77 where the kernel has no
 * pidfd_getfd (Linux < 5.6, or a seccomp filter refusing it) or refuses
 * it on a child (Yama ptrace_scope >= 2). The taken descriptor must be
 * close-on-exec (gin relies on it: a child must not keep windows alive).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch/memfd.h"

#include "unit_check.h"

#define PATTERN "gin memfd test"

/* The child: exports a page holding PATTERN, sends its handle, waits for
 * the parent to close `hold` (its end of a pipe), exits. */
static void child(int out, int hold) {
  void *p = NULL, *cookie = NULL;
  gin_arch_handle_t h;
  if (gin_memfd_alloc(4096, &p, &h, &cookie) != GIN_SUCCESS) _exit(2);
  memcpy(p, PATTERN, sizeof PATTERN);
  if (write(out, &h, sizeof h) != (ssize_t)sizeof h) _exit(3);
  char c;
  while (read(hold, &c, 1) > 0) {
  }
  gin_memfd_free(p, 4096, cookie);
  _exit(0);
}

int main(void) {
  int self = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int probe = gin_pidfd_dup((int32_t)getpid(), self);
  if (probe < 0 && (errno == ENOSYS || errno == EPERM)) {
    fprintf(stderr, "SKIP: pidfd_getfd: %s\n", strerror(errno));
    return 77;
  }
  CHECK(probe >= 0, "pidfd_getfd of this process's own descriptor: %s",
        strerror(errno));
  if (probe >= 0) {
    int fl = fcntl(probe, F_GETFD);
    CHECK(fl >= 0 && (fl & FD_CLOEXEC),
          "the taken descriptor is not "
          "close-on-exec (flags %d)",
          fl);
    close(probe);
  }
  close(self);

  int hp[2], hold[2];
  if (pipe(hp) != 0 || pipe(hold) != 0) return 1;
  pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(hp[0]);
    close(hold[1]);
    child(hp[1], hold[0]);
  }
  close(hp[1]);
  close(hold[0]);
  gin_arch_handle_t h;
  CHECK(read(hp[0], &h, sizeof h) == (ssize_t)sizeof h, "child's handle");
  int32_t hpid, hfd; /* the handle's layout: magic, pid, fd (memfd.c) */
  memcpy(&hpid, h.bytes + 4, sizeof hpid);
  memcpy(&hfd, h.bytes + 8, sizeof hfd);
  CHECK(hpid == pid, "handle pid %d, child %d", (int)hpid, (int)pid);

  int e0 = gin_arch_shm_fd_check(&h);
  if (e0 == EPERM) { /* Yama ptrace_scope >= 2, or an LSM: not gin's call */
    fprintf(stderr, "SKIP: pidfd_getfd of a child's descriptor: %s\n",
            strerror(e0));
    close(hold[1]);
    waitpid(pid, NULL, 0);
    return 77;
  }
  CHECK(e0 == 0, "the child's memfd: %s", strerror(e0));
  int fd = gin_pidfd_dup(hpid, hfd);
  CHECK(fd >= 0, "gin_pidfd_dup(child, %d): %s", (int)hfd, strerror(errno));
  if (fd >= 0) {
    char *m = (char *)mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    CHECK(m != MAP_FAILED && memcmp(m, PATTERN, sizeof PATTERN) == 0,
          "the child's bytes through the taken descriptor");
    if (m != MAP_FAILED) munmap(m, 4096);
    close(fd);
  }

  gin_arch_handle_t bad = h;
  int32_t nofd = 1000; /* the child has no descriptor 1000 */
  memcpy(bad.bytes + 8, &nofd, sizeof nofd);
  CHECK(gin_arch_shm_fd_check(&bad) == EBADF, "descriptor the child lacks: %s",
        strerror(gin_arch_shm_fd_check(&bad)));
  bad = h;
  bad.bytes[0] ^= 0xff;
  CHECK(gin_arch_shm_fd_check(&bad) == EINVAL, "bad magic: %s",
        strerror(gin_arch_shm_fd_check(&bad)));

  close(hold[1]); /* the child exits */
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "child status %d", st);
  int e = gin_arch_shm_fd_check(&h);
  CHECK(e == ESRCH, "a process that is gone: %s", strerror(e));
  close(hp[0]);
  if (!failures) printf("memfd: passed\n");
  return failures ? 1 : 0;
}
