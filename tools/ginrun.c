/*
 * ginrun: starts N ranks of a program on this host for
 * gin_comm_init_from_env.
 *
 *   ginrun [-n N] [--timeout SEC] [--grace SEC] [--env] [--no-prefix]
 *          prog [args...]
 *
 * Creates a unique id (the bootstrap root runs in this process), forks N
 * children with GIN_RANK, GIN_NRANKS, GIN_LOCAL_RANK, GIN_LOCAL_SIZE and
 * GIN_UNIQUE_ID set, and forwards their stdout and stderr line by line with
 * a "[rank] " prefix. The first rank that fails (non-zero exit or signal)
 * is reported with its pid and ends the job: the others get --grace
 * seconds (default 5) to notice (gin aborts their communicators within
 * milliseconds), report and exit on their own, each exit reported too;
 * those still running then get SIGTERM, and SIGKILL 2 s later. The
 * children share one process group, so no rank outlives ginrun. Children
 * read stdin from /dev/null.
 *
 * When the ranks would share a GPU and no MPS daemon serves them, ginrun
 * starts one for the job and stops it at the end (ginrun_mps.c); GIN_MPS=0
 * turns that off.
 *
 * Exit status: 0 if every rank exited 0; else the failing rank's code or
 * 128+signal; 124 on --timeout; 128+signal when ginrun itself was
 * interrupted; 127 if prog was not found; 2 on a usage error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gin/gin.h"
#include "ginrun_mps.h"

#define GINRUN_LINE_MAX 65536 /* longer lines are forwarded in pieces */
#define GINRUN_GRACE_MS 2000  /* SIGTERM -> SIGKILL */
#define GINRUN_DRAIN_MS 1000  /* output still read after the last exit */
#define GINRUN_REPORT_S 5.0   /* default --grace */

/* One output pipe of one rank. */
typedef struct ginrun_stream {
  int fd;     /* -1 once at EOF */
  int out_fd; /* where it goes: 1 or 2 */
  int rank;
  int midline; /* a partial line was already written */
  size_t len;
  char buf[GINRUN_LINE_MAX];
} ginrun_stream_t;

typedef struct ginrun_rank {
  pid_t pid;
  int exited; /* waited for (WNOWAIT: still a zombie until the end) */
} ginrun_rank_t;

typedef struct ginrun {
  int nranks;
  int prefix;
  double timeout_s; /* 0: none */
  double grace_s;   /* after a rank failed, the others' time to exit */
  pid_t pgid;
  ginrun_rank_t *ranks;
  ginrun_stream_t *streams; /* 2 per rank */
  int failed;               /* a rank failed: the others may finish */
  int failed_rank;
  uint64_t stop_at_ns; /* then they are stopped at this time */
  int stopping;        /* SIGTERM (or a forwarded signal) sent */
  uint64_t kill_at_ns; /* then SIGKILL at this time */
  int killed;
  int exit_code;  /* -1 until the first cause of the job's end */
  time_t started; /* wall clock before the first rank started */
} ginrun_t;

static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t sig_pending; /* last SIGINT/TERM/HUP seen */
static volatile sig_atomic_t sig_count;

static void ginrun_on_signal(int sig) {
  int e = errno;
  if (sig != SIGCHLD) {
    sig_pending = sig;
    sig_count++;
  }
  ssize_t n = write(sig_pipe[1], "x", 1);
  (void)n;
  errno = e;
}

static uint64_t ginrun_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void ginrun_usage(FILE *f) {
  fprintf(f, "usage: ginrun [-n N] [--timeout SEC] [--grace SEC] [--env] "
             "[--no-prefix] prog [args...]\n");
}

static void ginrun_usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ginrun: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  ginrun_usage(stderr);
  exit(2);
}

/* Every setting of either target, with its value, default and help; one
 * that what was built here never reads (a target, the ofi transport) is
 * marked so. */
static int ginrun_print_env(void) {
#ifdef GIN_BUILT_CUDA
  const int cuda_built = 1;
#else
  const int cuda_built = 0;
#endif
#ifdef GIN_BUILT_OFI
  const int ofi_built = 1;
#else
  const int ofi_built = 0;
#endif
  int n = gin_param_count();
  printf("# %d settings (GIN_*); this build has the host target%s\n", n,
         cuda_built ? " and the cuda target" : " only (no cuda target)");
  for (int i = 0; i < n; i++) {
    gin_setting_t s;
    if (gin_param_info(i, &s) != GIN_SUCCESS) continue;
    const char *note = "";
    if (s.target && !strcmp(s.target, "cuda"))
      note = cuda_built ? "; cuda target only"
                        : "; cuda target only: not built here, no effect";
    else if (s.target && !strcmp(s.target, "host"))
      note = "; host target only";
    else if (s.target && !strcmp(s.target, "ofi"))
      note = ofi_built ? "; ofi transport only"
                       : "; ofi transport only: not built here (no "
                         "libfabric), no effect";
    printf("%s=%s  (default: %s%s)\n    %s\n", s.name, s.value, s.def, note,
           s.help);
  }
  return 0;
}

/* Finds prog on PATH (as execvp would); returns a malloc'd path or NULL. */
static char *ginrun_find_prog(const char *prog) {
  if (strchr(prog, '/')) return strdup(prog);
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  size_t plen = strlen(prog);
  while (*path) {
    const char *end = strchr(path, ':');
    size_t dlen = end ? (size_t)(end - path) : strlen(path);
    char *full = malloc(dlen + plen + 3);
    if (!full) return NULL;
    snprintf(full, dlen + plen + 3, "%.*s/%s", (int)(dlen ? dlen : 1),
             dlen ? path : ".", prog);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
      return full;
    free(full);
    path += dlen + (end ? 1 : 0);
  }
  return NULL;
}

#define GINRUN_NVARS 5

/* The environment of rank r: the job variables first (owned), then the MPS
 * daemon's directories when ginrun started one, then ours minus any old
 * values of them. Free with ginrun_free_env. */
static char **ginrun_make_env(int r, int n, const char *uid,
                              const ginrun_mps_t *mps) {
  char *set[GINRUN_NVARS + 2] = {NULL};
  if (asprintf(&set[0], "GIN_RANK=%d", r) < 0 ||
      asprintf(&set[1], "GIN_NRANKS=%d", n) < 0 ||
      asprintf(&set[2], "GIN_LOCAL_RANK=%d", r) < 0 ||
      asprintf(&set[3], "GIN_LOCAL_SIZE=%d", n) < 0 ||
      asprintf(&set[4], "GIN_UNIQUE_ID=%s", uid) < 0) {
    for (int i = 0; i < GINRUN_NVARS; i++)
      free(set[i]);
    return NULL;
  }
  int nset = GINRUN_NVARS + ginrun_mps_vars(mps, set + GINRUN_NVARS);
  char **env = ginrun_env(set, nset);
  if (!env)
    for (int i = 0; i < GINRUN_NVARS; i++)
      free(set[i]);
  return env;
}

static void ginrun_free_env(char **env) {
  if (!env) return;
  for (int i = 0; i < GINRUN_NVARS; i++)
    free(env[i]);
  free(env);
}

static void ginrun_signal_job(ginrun_t *job, int sig) {
  if (job->pgid > 0) kill(-job->pgid, sig);
}

/* Starts stopping the job: sig now (SIGTERM or the forwarded signal),
 * SIGKILL after the grace period. `code` is the exit status if this is the
 * first reason the job ends. */
static void ginrun_stop(ginrun_t *job, int sig, int code) {
  if (job->exit_code < 0) job->exit_code = code;
  if (job->stopping) return;
  job->stopping = 1;
  job->kill_at_ns = ginrun_now_ns() + GINRUN_GRACE_MS * 1000000ull;
  ginrun_signal_job(job, sig);
}

static void ginrun_write(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; /* our output is gone (EPIPE): drop it */
    buf += n;
    len -= (size_t)n;
  }
}

/* Writes one piece of a rank's output, prefixed at the start of a line,
 * in one write() so lines of different ranks do not interleave. */
static void ginrun_emit(ginrun_t *job, ginrun_stream_t *s, const char *data,
                        size_t len, int newline) {
  static char out[GINRUN_LINE_MAX + 32];
  size_t k = 0;
  if (!s->midline && job->prefix)
    k = (size_t)snprintf(out, sizeof out, "[%d] ", s->rank);
  memcpy(out + k, data, len);
  k += len;
  if (newline) out[k++] = '\n';
  ginrun_write(s->out_fd, out, k);
  s->midline = !newline && (len == 0 || data[len - 1] != '\n');
}

/* Reads what a rank wrote; forwards complete lines. */
static void ginrun_stream_read(ginrun_t *job, ginrun_stream_t *s) {
  ssize_t n = read(s->fd, s->buf + s->len, sizeof s->buf - s->len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) { /* EOF: flush a last line without newline */
    if (s->len > 0)
      ginrun_emit(job, s, s->buf, s->len, 1);
    else if (s->midline)
      ginrun_write(s->out_fd, "\n", 1);
    s->len = 0;
    s->midline = 0;
    close(s->fd);
    s->fd = -1;
    return;
  }
  s->len += (size_t)n;
  size_t start = 0;
  for (size_t i = 0; i < s->len; i++) {
    if (s->buf[i] != '\n') continue;
    ginrun_emit(job, s, s->buf + start, i + 1 - start, 0);
    start = i + 1;
  }
  if (start == 0 && s->len == sizeof s->buf) { /* a very long line */
    ginrun_emit(job, s, s->buf, s->len, 0);
    start = s->len;
  }
  memmove(s->buf, s->buf + start, s->len - start);
  s->len -= start;
}

/* Notes ranks that ended (without reaping them: a zombie keeps the process
 * group alive, so signalling -pgid cannot hit a stranger). Returns how many
 * ranks are still running. */
static int ginrun_check_ranks(ginrun_t *job) {
  int running = 0;
  for (int r = 0; r < job->nranks; r++) {
    ginrun_rank_t *rk = &job->ranks[r];
    if (rk->exited) continue;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)rk->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        si.si_pid == 0) {
      running++;
      continue;
    }
    rk->exited = 1;
    if (si.si_code == CLD_EXITED && si.si_status == 0) continue;
    if (job->stopping) continue; /* a consequence of our stopping */
    int code = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
    if (si.si_code == CLD_EXITED)
      fprintf(stderr, "ginrun: rank %d (pid %d) exited with code %d\n", r,
              (int)rk->pid, si.si_status);
    else
      fprintf(stderr, "ginrun: rank %d (pid %d) killed by signal %d (%s)\n", r,
              (int)rk->pid, si.si_status, strsignal(si.si_status));
    if (job->failed) continue; /* reported; the first failure decides */
    /* The others may still report it (their gin calls fail naming this
     * rank) and exit on their own, for a bounded time. */
    job->failed = 1;
    job->failed_rank = r;
    job->exit_code = code;
    job->stop_at_ns = ginrun_now_ns() + (uint64_t)(job->grace_s * 1e9);
  }
  return running;
}

/* libfabric's shm provider keeps each endpoint's region in /dev/shm,
 * named after its process ("PID:..."), and removes it when the endpoint
 * closes: a rank that died, or exited without gin_comm_destroy, leaves
 * it. Called once every rank has ended, before they are reaped (so no
 * other process has their pids): removes the regions named after a rank's
 * pid that this user made since the job started (not an older process's
 * of the same pid, nor another user's). A rank that runs its program in a
 * child process (a shell that does not exec) is not covered. */
static void ginrun_shm_sweep(const ginrun_t *job, int n) {
  DIR *d = opendir("/dev/shm");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    if (name[0] < '0' || name[0] > '9') continue;
    char *end;
    long pid = strtol(name, &end, 10);
    if (*end != ':') continue;
    struct stat st;
    for (int r = 0; r < n; r++)
      if ((long)job->ranks[r].pid == pid &&
          fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
          st.st_mtime >= job->started - 1) {
        (void)unlinkat(dirfd(d), name, 0);
        break;
      }
  }
  closedir(d);
}

static void ginrun_child(const char *path, char **argv, char **env,
                         const ginrun_stream_t *s, pid_t pgid, pid_t parent) {
  setpgid(0, pgid);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  sigaction(SIGPIPE, &dfl, NULL); /* ignored here; not in the rank */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull >= 0) dup2(devnull, 0);
  /* The pipes' write ends; the read ends are close-on-exec. */
  if (dup2(s[0].fd, 1) < 0 || dup2(s[1].fd, 2) < 0) _exit(127);
  execve(path, argv, env);
  const char *msg = "ginrun: cannot execute ";
  ssize_t w = write(2, msg, strlen(msg));
  w = write(2, path, strlen(path));
  w = write(2, "\n", 1);
  (void)w;
  _exit(127);
}

/* Forks rank r. Returns 0, or -1 (reported) if it could not. */
static int ginrun_spawn(ginrun_t *job, int r, const char *path, char **argv,
                        char **env) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) goto err_report;
  if (pipe2(err, O_CLOEXEC) != 0) goto err_close_out;
  ginrun_stream_t w[2] = {{.fd = out[1]}, {.fd = err[1]}};
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) goto err_close_err;
  if (pid == 0) ginrun_child(path, argv, env, w, job->pgid, parent);
  if (job->pgid == 0) job->pgid = pid;
  setpgid(pid, job->pgid); /* also here: no race with the signals below */
  close(out[1]);
  close(err[1]);
  job->ranks[r].pid = pid;
  ginrun_stream_t *s = &job->streams[2 * r];
  s[0] = (ginrun_stream_t){.fd = out[0], .out_fd = 1, .rank = r};
  s[1] = (ginrun_stream_t){.fd = err[0], .out_fd = 2, .rank = r};
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  return 0;
err_close_err:
  close(err[0]);
  close(err[1]);
err_close_out:
  close(out[0]);
  close(out[1]);
err_report:
  fprintf(stderr, "ginrun: cannot start rank %d: %s\n", r, strerror(errno));
  return -1;
}

/* Forwards output and watches the ranks until all ended. */
static void ginrun_loop(ginrun_t *job) {
  int nfd = 2 * job->nranks + 1;
  struct pollfd *pfd = calloc((size_t)nfd, sizeof *pfd);
  uint64_t job_end = job->timeout_s > 0
                         ? ginrun_now_ns() + (uint64_t)(job->timeout_s * 1e9)
                         : UINT64_MAX;
  uint64_t drain_end = UINT64_MAX;
  int seen_signals = 0;
  for (;;) {
    int running = ginrun_check_ranks(job);
    int open = 0;
    for (int i = 0; i < 2 * job->nranks; i++)
      open += job->streams[i].fd >= 0;
    uint64_t now = ginrun_now_ns();
    if (running == 0 && drain_end == UINT64_MAX) {
      ginrun_signal_job(job, SIGKILL); /* whatever the ranks left behind */
      drain_end = now + GINRUN_DRAIN_MS * 1000000ull;
    }
    if (running == 0 && (open == 0 || now >= drain_end)) break;
    if (sig_count != seen_signals) {
      int sig = sig_pending;
      if (seen_signals == 0 && !job->stopping)
        fprintf(stderr,
                "ginrun: got signal %d (%s), forwarding it to the "
                "ranks\n",
                sig, strsignal(sig));
      if (seen_signals > 0 || job->stopping) { /* again: no more grace */
        ginrun_signal_job(job, SIGKILL);
        job->killed = 1;
      }
      ginrun_stop(job, sig, 128 + sig);
      seen_signals = sig_count;
    }
    if (job->failed && !job->stopping && now >= job->stop_at_ns) {
      if (running > 0)
        fprintf(stderr,
                "ginrun: stopping %d rank%s still running %g s after rank "
                "%d failed\n",
                running, running == 1 ? "" : "s", job->grace_s,
                job->failed_rank);
      ginrun_stop(job, SIGTERM, job->exit_code);
    }
    if (now >= job_end && !job->stopping) {
      fprintf(stderr,
              "ginrun: job timed out after %g s; stopping %d "
              "rank%s\n",
              job->timeout_s, running, running == 1 ? "" : "s");
      ginrun_stop(job, SIGTERM, 124);
    }
    if (job->stopping && !job->killed && now >= job->kill_at_ns) {
      ginrun_signal_job(job, SIGKILL);
      job->killed = 1;
    }
    uint64_t wake = now + 1000000000ull;
    if (!job->stopping && job_end < wake) wake = job_end;
    if (job->failed && !job->stopping && job->stop_at_ns < wake)
      wake = job->stop_at_ns;
    if (job->stopping && !job->killed && job->kill_at_ns < wake)
      wake = job->kill_at_ns;
    if (drain_end < wake) wake = drain_end;
    pfd[0] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
    for (int i = 0; i < 2 * job->nranks; i++)
      pfd[i + 1] = (struct pollfd){.fd = job->streams[i].fd, .events = POLLIN};
    int ms = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
    if (poll(pfd, (nfds_t)nfd, ms) <= 0) continue;
    if (pfd[0].revents) {
      char drain[64];
      while (read(sig_pipe[0], drain, sizeof drain) > 0) {
      }
    }
    for (int i = 0; i < 2 * job->nranks; i++)
      if (pfd[i + 1].revents) ginrun_stream_read(job, &job->streams[i]);
  }
  free(pfd);
}

/* Creates the job id, starts the ranks, forwards their output and waits
 * for them. Returns ginrun's exit status. */
static int ginrun_run(ginrun_t *job, const ginrun_mps_t *mps, const char *path,
                      char **prog_argv) {
  int code = 1, n = job->nranks, started = 0;
  gin_unique_id_t uid;
  char uid_str[2 * GIN_UNIQUE_ID_BYTES + 1];
  if (gin_get_unique_id(n, &uid) != GIN_SUCCESS ||
      gin_unique_id_to_string(&uid, uid_str, sizeof uid_str) != GIN_SUCCESS) {
    fprintf(stderr, "ginrun: cannot create the job id: %s\n", gin_last_error());
    return 1;
  }
  job->ranks = calloc((size_t)n, sizeof *job->ranks);
  job->streams = calloc((size_t)n * 2, sizeof *job->streams);
  char ***envs = calloc((size_t)n, sizeof *envs);
  if (!job->ranks || !job->streams || !envs) goto err_nomem;
  for (int r = 0; r < n; r++)
    if (!(envs[r] = ginrun_make_env(r, n, uid_str, mps))) goto err_nomem;
  for (int r = 0; r < 2 * n; r++)
    job->streams[r].fd = -1;
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    fprintf(stderr, "ginrun: pipe: %s\n", strerror(errno));
    goto out_free;
  }
  struct sigaction sa = {.sa_handler = ginrun_on_signal,
                         .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sigaction(SIGCHLD, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  job->started = time(NULL);
  for (; started < n; started++)
    if (ginrun_spawn(job, started, path, prog_argv, envs[started]) != 0) break;
  if (started < n) { /* reported; take down those started */
    ginrun_stop(job, SIGKILL, 1);
    job->killed = 1;
  }
  job->nranks = started;
  if (started > 0) ginrun_loop(job);
  /* ginrun_loop returns once every rank ended; none is reaped yet. */
  ginrun_shm_sweep(job, started);
  for (int r = 0; r < started; r++)
    waitpid(job->ranks[r].pid, NULL, 0);
  for (int r = 0; r < 2 * started; r++)
    if (job->streams[r].fd >= 0) close(job->streams[r].fd);
  code = job->exit_code < 0 ? 0 : job->exit_code;
  goto out_free;
err_nomem:
  fprintf(stderr, "ginrun: out of memory\n");
out_free:
  for (int r = 0; envs && r < n; r++)
    ginrun_free_env(envs[r]);
  free(envs);
  free(job->streams);
  free(job->ranks);
  return code;
}

int main(int argc, char **argv) {
  ginrun_t job = {
      .nranks = 1, .prefix = 1, .exit_code = -1, .grace_s = GINRUN_REPORT_S};
  int print_env = 0, i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i], *val = NULL;
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-') break;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      ginrun_usage(stdout);
      return 0;
    } else if (!strcmp(a, "--env")) {
      print_env = 1;
    } else if (!strcmp(a, "--no-prefix")) {
      job.prefix = 0;
    } else if (!strcmp(a, "-n") || !strcmp(a, "--timeout") ||
               !strcmp(a, "--grace")) {
      if (i + 1 >= argc) ginrun_usage_error("%s needs a value", a);
      val = argv[++i];
    } else if (!strncmp(a, "-n", 2)) {
      val = a + 2;
    } else if (!strncmp(a, "--timeout=", 10) || !strncmp(a, "--grace=", 8)) {
      val = strchr(a, '=') + 1;
    } else {
      ginrun_usage_error("unknown option %s", a);
    }
    if (!val) continue;
    char *end = NULL;
    errno = 0;
    if (a[1] == 'n') {
      long n = strtol(val, &end, 10);
      if (errno || end == val || *end || n < 1 || n > GIN_MAX_RANKS)
        ginrun_usage_error("bad rank count \"%s\" (1..1024)", val);
      job.nranks = (int)n;
    } else if (a[2] == 't') {
      double t = strtod(val, &end);
      if (errno || end == val || *end || !(t > 0) || t > 1e8)
        ginrun_usage_error("bad timeout \"%s\" (seconds > 0)", val);
      job.timeout_s = t;
    } else {
      double t = strtod(val, &end);
      if (errno || end == val || *end || !(t >= 0) || t > 1e8)
        ginrun_usage_error("bad grace \"%s\" (seconds >= 0)", val);
      job.grace_s = t;
    }
  }
  if (print_env) return ginrun_print_env();
  if (i >= argc) ginrun_usage_error("%s", "no program given");
  char **prog_argv = argv + i;
  char *path = ginrun_find_prog(prog_argv[0]);
  if (!path) {
    fprintf(stderr, "ginrun: %s: command not found\n", prog_argv[0]);
    return 127;
  }

  /* A child that exits before reading what ginrun writes to it (an MPS
   * control command) must not take ginrun down; children restore it. */
  signal(SIGPIPE, SIG_IGN);
  ginrun_mps_t mps;
  ginrun_mps_begin(&mps, job.nranks);
  int code = ginrun_run(&job, &mps, path, prog_argv);
  ginrun_mps_end(&mps);
  free(path);
  return code;
}
