/*
 * ginrun's MPS handling. Ranks that share a GPU without MPS take turns on
 * it by time slice: every exchange between them waits for the other's
 * slice, so a round trip takes milliseconds instead of microseconds
 * (docs/PERFORMANCE.md, "Known limits"). When a job's ranks would share a
 * GPU and no control daemon serves them, ginrun starts one private to the
 * job: its pipe and log directories under $TMPDIR/ginrun-mps-XXXXXX (/tmp
 * when TMPDIR is unset or too long for the daemon's socket paths), passed
 * to the ranks as CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY. The
 * daemon runs in the foreground (-f) as ginrun's child, in its own process
 * group (a terminal's ^C reaches ginrun, which stops it in order), with
 * PR_SET_PDEATHSIG so that it gets SIGTERM should ginrun itself be killed.
 * When the job ends, however it ends, ginrun sends it "quit", waits a
 * bounded time, and removes the directories.
 *
 * Nothing here changes the GPU's settings. A GPU whose compute mode is
 * Prohibited, a missing nvidia-cuda-mps-control, a daemon that fails to
 * start: each is reported with its cost, and the job runs without MPS.
 *
 * The ranks share a GPU when GIN_CUDA_DEVICE names one GPU for all, or when
 * it is -1 (local rank modulo the GPU count) and there are more ranks than
 * GPUs visible (nvidia-smi's list filtered by CUDA_VISIBLE_DEVICES). With
 * -2 the program places its ranks itself; ginrun starts nothing and
 * gin_comm_init warns if they turn out to share.
 *
 * ginrun has threads (the bootstrap root), so children are forked with
 * everything they need prepared beforehand: the environment array, and
 * execvpe, which searches PATH without allocating.
 */
#define _GNU_SOURCE
#include "ginrun_mps.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gin/gin.h"

#define MPS_CONTROL "nvidia-cuda-mps-control"
#define MPS_DEFAULT_PIPE                                                       \
  "/tmp/nvidia-mps"        /* CUDA's, when the variable is unset */
#define MPS_CMD_MS 5000    /* one control command or nvidia-smi query */
#define MPS_READY_MS 10000 /* the daemon's start */
#define MPS_QUIT_MS 10000  /* its exit after quit */
#define MPS_TERM_MS 2000   /* SIGTERM -> SIGKILL */
#define MPS_MAX_GPUS 64
#define MPS_TMPDIR_MAX 60 /* a socket path (108 bytes) must fit below it */
#define MPS_OUT_MAX 8192

extern char **environ;

static uint64_t mps_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void mps_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL); /* a signal may cut it short: callers loop on time */
}

char **ginrun_env(char *const *set, int nset) {
  size_t count = 0;
  while (environ[count])
    count++;
  char **env = calloc(count + (size_t)nset + 1, sizeof *env);
  if (!env) return NULL;
  size_t k = 0;
  for (int j = 0; j < nset; j++)
    env[k++] = set[j];
  for (size_t i = 0; i < count; i++) {
    int skip = 0;
    for (int j = 0; j < nset && !skip; j++) {
      size_t len = (size_t)(strchr(set[j], '=') - set[j]) + 1;
      skip = strncmp(environ[i], set[j], len) == 0;
    }
    if (!skip) env[k++] = environ[i];
  }
  return env;
}

/* A setting's value as the library reads it: the same name, default and
 * parsing as gin_param_info lists. A value that is not an integer is
 * reported and the default used, as the library does. */
static long mps_setting(const char *name) {
  int n = gin_param_count();
  for (int i = 0; i < n; i++) {
    gin_setting_t s;
    if (gin_param_info(i, &s) != GIN_SUCCESS || strcmp(s.name, name)) continue;
    char *end = NULL;
    errno = 0;
    long v = strtol(s.value, &end, 0);
    if (!errno && end != s.value && !*end) return v;
    fprintf(stderr,
            "ginrun: %s=\"%s\" is not an integer; using the default %s\n", name,
            s.value, s.def);
    return strtol(s.def, NULL, 0);
  }
  return 0; /* not a setting of this build */
}

/* Forks argv[0] (searched on PATH) with environment env, stdin from `in`
 * (a descriptor, or -1 for /dev/null), stdout and stderr to `out` (or -1:
 * /dev/null), in its own process group. Returns the pid, or -1. */
static pid_t mps_spawn(char *const argv[], char **env, int in, int out,
                       int deathsig) {
  int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) return -1;
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, deathsig);
    if (getppid() != parent) _exit(126);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGPIPE, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (dup2(in >= 0 ? in : devnull, 0) < 0 ||
        dup2(out >= 0 ? out : devnull, 1) < 0 ||
        dup2(out >= 0 ? out : devnull, 2) < 0)
      _exit(126);
    execvpe(argv[0], argv, env);
    _exit(errno == ENOENT ? 127 : 126);
  }
  close(devnull);
  return pid;
}

/* Waits up to ms for pid; returns its exit status (128+signal when
 * killed), or -1 while it still runs. */
static int mps_wait(pid_t pid, int ms) {
  uint64_t end = mps_now_ms() + (uint64_t)ms;
  for (;;) {
    int st;
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    if (w < 0 && errno != EINTR) return 126;
    if (mps_now_ms() >= end) return -1;
    mps_sleep_ms(5);
  }
}

/* Runs argv with environment env and stdin text `in` (or nothing), for at
 * most MPS_CMD_MS; its output in out (NUL-terminated). Returns its exit
 * status, 127 when it was not found, or -1 when it ran too long (then it
 * is killed). */
static int mps_run(char *const argv[], char **env, const char *in, char *out,
                   size_t outlen) {
  int o[2], i[2] = {-1, -1};
  out[0] = '\0';
  if (pipe2(o, O_CLOEXEC) != 0) return 126;
  if (in && pipe2(i, O_CLOEXEC) != 0) {
    close(o[0]);
    close(o[1]);
    return 126;
  }
  pid_t pid = mps_spawn(argv, env, i[0], o[1], SIGKILL);
  close(o[1]);
  if (in) {
    close(i[0]);
    if (pid > 0) { /* a line or two: the pipe's buffer holds it */
      ssize_t w = write(i[1], in, strlen(in));
      (void)w;
    }
    close(i[1]);
  }
  if (pid < 0) {
    close(o[0]);
    return 126;
  }
  uint64_t end = mps_now_ms() + MPS_CMD_MS;
  size_t len = 0;
  for (;;) {
    uint64_t now = mps_now_ms();
    if (now >= end) break;
    struct pollfd p = {.fd = o[0], .events = POLLIN};
    if (poll(&p, 1, (int)(end - now)) <= 0) continue;
    char buf[512];
    ssize_t n = read(o[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break; /* EOF */
    size_t take = (size_t)n < outlen - 1 - len ? (size_t)n : outlen - 1 - len;
    memcpy(out + len, buf, take);
    len += take;
    out[len] = '\0';
  }
  close(o[0]);
  uint64_t now = mps_now_ms();
  int st = mps_wait(pid, now < end ? (int)(end - now) : 0);
  if (st < 0) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    mps_wait(pid, MPS_TERM_MS);
    return -1;
  }
  return st;
}

/* The last non-empty line of text, in a buffer of len bytes. */
static void mps_last_line(const char *text, char *line, size_t len) {
  const char *end = text + strlen(text);
  while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
    end--;
  const char *start = end;
  while (start > text && start[-1] != '\n')
    start--;
  snprintf(line, len, "%.*s", (int)(end - start), start);
}

typedef struct mps_gpu {
  int index;
  char uuid[64];
  char mode[32];
} mps_gpu_t;

static char *mps_trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
    *--e = '\0';
  return s;
}

/* The GPUs the ranks see: nvidia-smi's list, filtered by
 * CUDA_VISIBLE_DEVICES as CUDA reads it (indices or UUID prefixes, up to
 * the first entry that names no GPU or repeats one). Returns how many, or
 * -1 when nvidia-smi does not answer (no GPU to share); *prohibited
 * (len bytes) names the first visible one whose compute mode refuses MPS,
 * or is left empty. */
static int mps_gpus(char *prohibited, size_t len) {
  static char *const argv[] = {"nvidia-smi",
                               "--query-gpu=index,uuid,compute_mode",
                               "--format=csv,noheader", NULL};
  char out[MPS_OUT_MAX];
  prohibited[0] = '\0';
  if (mps_run(argv, environ, NULL, out, sizeof out) != 0) return -1;
  mps_gpu_t gpu[MPS_MAX_GPUS];
  int n = 0;
  for (char *save = NULL, *line = strtok_r(out, "\n", &save);
       line && n < MPS_MAX_GPUS; line = strtok_r(NULL, "\n", &save)) {
    char *f[3], *save2 = NULL;
    int k = 0;
    for (char *t = strtok_r(line, ",", &save2); t && k < 3;
         t = strtok_r(NULL, ",", &save2))
      f[k++] = mps_trim(t);
    if (k < 3) continue;
    char *end = NULL;
    long idx = strtol(f[0], &end, 10);
    if (end == f[0] || *end) continue;
    gpu[n].index = (int)idx;
    snprintf(gpu[n].uuid, sizeof gpu[n].uuid, "%s", f[1]);
    snprintf(gpu[n].mode, sizeof gpu[n].mode, "%s", f[2]);
    n++;
  }
  const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
  int used[MPS_MAX_GPUS] = {0}, visible = 0;
  if (!cvd) {
    for (int g = 0; g < n; g++)
      used[g] = 1;
    visible = n;
  } else {
    char list[1024];
    snprintf(list, sizeof list, "%s", cvd);
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
      t = mps_trim(t);
      int hit = -1;
      char *end = NULL;
      long idx = strtol(t, &end, 10);
      for (int g = 0; g < n && hit < 0; g++) {
        if (end != t && !*end && gpu[g].index == idx) hit = g;
        if (!strncmp(t, "GPU-", 4) && !strncmp(gpu[g].uuid, t, strlen(t)))
          hit = g;
      }
      if (hit < 0 && !strncmp(t, "MIG-", 4)) { /* an instance: one device */
        visible++;
        continue;
      }
      if (hit < 0 || used[hit]) break; /* CUDA stops at such an entry */
      used[hit] = 1;
      visible++;
    }
  }
  for (int g = 0; g < n; g++)
    if (used[g] && !strcasecmp(gpu[g].mode, "Prohibited")) {
      snprintf(prohibited, len, "GPU %d", gpu[g].index);
      break;
    }
  return visible;
}

/* Whether a control daemon answers at pipe directory dir. */
static int mps_served(const char *dir) {
  char path[4096];
  struct stat st;
  snprintf(path, sizeof path, "%s/control", dir);
  if (stat(path, &st) != 0) return 0;
  char var[4096 + 32];
  snprintf(var, sizeof var, "CUDA_MPS_PIPE_DIRECTORY=%s", dir);
  char *set[1] = {var};
  char **env = ginrun_env(set, 1);
  if (!env) return 0;
  static char *const argv[] = {MPS_CONTROL, NULL};
  char out[MPS_OUT_MAX];
  int rc = mps_run(argv, env, "get_server_list\n", out, sizeof out);
  free(env);
  return rc == 0;
}

static int mps_rm_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

static void mps_cleanup(ginrun_mps_t *m) {
  if (m->dir[0]) nftw(m->dir, mps_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  free(m->vars[0]);
  free(m->vars[1]);
  m->vars[0] = m->vars[1] = NULL;
  m->dir[0] = '\0';
  m->pid = 0;
}

/* Starts the daemon; returns 0, or -1 with the reason in why. */
static int mps_start(ginrun_mps_t *m, char *why, size_t len) {
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp || strlen(tmp) > MPS_TMPDIR_MAX) tmp = "/tmp";
  snprintf(m->dir, sizeof m->dir, "%s/ginrun-mps-XXXXXX", tmp);
  if (!mkdtemp(m->dir)) {
    snprintf(why, len, "cannot create %s: %s", m->dir, strerror(errno));
    m->dir[0] = '\0';
    return -1;
  }
  char pipe_dir[128], log_dir[128], out_path[160];
  snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe", m->dir);
  snprintf(log_dir, sizeof log_dir, "%s/log", m->dir);
  snprintf(out_path, sizeof out_path, "%s/daemon.out", log_dir);
  if (asprintf(&m->vars[0], "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir) < 0)
    m->vars[0] = NULL;
  if (asprintf(&m->vars[1], "CUDA_MPS_LOG_DIRECTORY=%s", log_dir) < 0)
    m->vars[1] = NULL;
  if (mkdir(pipe_dir, 0700) != 0 || mkdir(log_dir, 0700) != 0 || !m->vars[0] ||
      !m->vars[1]) {
    snprintf(why, len, "cannot prepare %s: %s", m->dir, strerror(errno));
    return -1;
  }
  char **env = ginrun_env(m->vars, 2);
  int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  static char *const daemon_argv[] = {MPS_CONTROL, "-f", NULL};
  pid_t pid =
      env && out >= 0 ? mps_spawn(daemon_argv, env, -1, out, SIGTERM) : -1;
  if (out >= 0) close(out);
  if (pid < 0) {
    snprintf(why, len, "cannot start %s: %s", MPS_CONTROL, strerror(errno));
    free(env);
    return -1;
  }
  m->pid = pid;
  /* Ready when it answers a query at its pipe directory. */
  uint64_t end = mps_now_ms() + MPS_READY_MS;
  static char *const query[] = {MPS_CONTROL, NULL};
  char text[MPS_OUT_MAX];
  int rc = -1;
  while (mps_now_ms() < end) {
    rc = mps_wait(pid, 0);
    if (rc >= 0) break; /* it exited */
    if (mps_run(query, env, "get_server_list\n", text, sizeof text) == 0) {
      free(env);
      return 0;
    }
    mps_sleep_ms(20);
  }
  free(env);
  if (rc < 0) { /* still running but not answering */
    kill(pid, SIGKILL);
    mps_wait(pid, MPS_TERM_MS);
    snprintf(why, len, "%s -f did not answer within %d s", MPS_CONTROL,
             MPS_READY_MS / 1000);
  } else if (rc == 127) {
    snprintf(why, len, "%s is not on PATH", MPS_CONTROL);
  } else {
    char said[MPS_OUT_MAX], line[256];
    int fd = open(out_path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, said, sizeof said - 1) : -1;
    if (fd >= 0) close(fd);
    said[n > 0 ? n : 0] = '\0';
    mps_last_line(said, line, sizeof line);
    snprintf(why, len, "%s -f exited with status %d%s%s", MPS_CONTROL, rc,
             line[0] ? ": " : "", line);
  }
  m->pid = 0;
  return -1;
}

/* No program of a build without the cuda target runs on a GPU. */
#ifdef GIN_BUILT_CUDA
#define MPS_CUDA_BUILT 1
#else
#define MPS_CUDA_BUILT 0
#endif

void ginrun_mps_begin(ginrun_mps_t *m, int nranks) {
  memset(m, 0, sizeof *m);
  if (!MPS_CUDA_BUILT || nranks < 2 || mps_setting("GIN_MPS") == 0) return;
  char prohibited[64];
  int gpus = mps_gpus(prohibited, sizeof prohibited);
  if (gpus < 1) return;
  long device = mps_setting("GIN_CUDA_DEVICE");
  int share = device >= 0 || (device == -1 && nranks > gpus);
  if (!share) return;
  int used = device >= 0 ? 1 : gpus;
  const char *env_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
  const char *dir = env_dir && *env_dir ? env_dir : MPS_DEFAULT_PIPE;
  if (mps_served(dir)) return; /* all is as it should be: nothing to say */
  char why[512];
  if (prohibited[0])
    snprintf(why, sizeof why, "%s's compute mode is Prohibited", prohibited);
  else if (mps_start(m, why, sizeof why) == 0) {
    fprintf(stderr,
            "ginrun: %d ranks share %d GPU%s: started an MPS control daemon "
            "for this job (%s); GIN_MPS=0 runs without\n",
            nranks, used, used == 1 ? "" : "s", m->dir);
    return;
  }
  mps_cleanup(m);
  fprintf(stderr,
          "ginrun: %d ranks share %d GPU%s and no MPS daemon serves them; "
          "cannot start one: %s. Running without MPS: the ranks take turns "
          "on the GPU by time slice, so each exchange between them takes "
          "milliseconds instead of microseconds\n",
          nranks, used, used == 1 ? "" : "s", why);
}

int ginrun_mps_vars(const ginrun_mps_t *m, char **vars) {
  if (m->pid <= 0) return 0;
  vars[0] = m->vars[0];
  vars[1] = m->vars[1];
  return 2;
}

void ginrun_mps_end(ginrun_mps_t *m) {
  if (m->pid <= 0) return;
  char **env = ginrun_env(m->vars, 2);
  static char *const argv[] = {MPS_CONTROL, NULL};
  char out[MPS_OUT_MAX];
  if (env) mps_run(argv, env, "quit\n", out, sizeof out);
  free(env);
  if (mps_wait(m->pid, MPS_QUIT_MS) < 0) {
    fprintf(stderr,
            "ginrun: the job's MPS daemon (pid %d) did not stop within %d s "
            "of quit; killing it\n",
            (int)m->pid, MPS_QUIT_MS / 1000);
    kill(m->pid, SIGTERM);
    if (mps_wait(m->pid, MPS_TERM_MS) < 0) {
      kill(m->pid, SIGKILL);
      mps_wait(m->pid, MPS_TERM_MS);
    }
  }
  mps_cleanup(m);
}
