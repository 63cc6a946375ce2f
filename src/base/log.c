/* Leveled logging (GIN_DEBUG, GIN_DEBUG_SUBSYS) and the last-error record. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "gin/gin.h"

GIN_PARAM_STR(param_debug, "DEBUG", "WARN",
              "log level: NONE, WARN, INFO or TRACE")
GIN_PARAM_STR(param_debug_subsys, "DEBUG_SUBSYS", "ALL",
              "comma-separated subsystems to log: INIT, BOOTSTRAP, MEM, "
              "WINDOW, DEVCOMM, PROXY, NET, ENV or ALL")

static int log_level = -1;
static unsigned log_mask;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static const struct {
  const char *name;
  unsigned bit;
} subsys_names[] = {
    {"INIT", GIN_SUB_INIT},       {"BOOTSTRAP", GIN_SUB_BOOTSTRAP},
    {"MEM", GIN_SUB_MEM},         {"WINDOW", GIN_SUB_WINDOW},
    {"DEVCOMM", GIN_SUB_DEVCOMM}, {"PROXY", GIN_SUB_PROXY},
    {"NET", GIN_SUB_NET},         {"ENV", GIN_SUB_ENV},
    {"ALL", GIN_SUB_ALL},
};

static void log_init(void) {
  const char *lv = param_debug();
  if (strcasecmp(lv, "TRACE") == 0)
    log_level = GIN_LOG_TRACE;
  else if (strcasecmp(lv, "INFO") == 0)
    log_level = GIN_LOG_INFO;
  else if (strcasecmp(lv, "NONE") == 0)
    log_level = GIN_LOG_NONE;
  else
    log_level = GIN_LOG_WARN;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", param_debug_subsys());
  log_mask = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    for (size_t i = 0; i < sizeof subsys_names / sizeof subsys_names[0]; i++)
      if (strcasecmp(tok, subsys_names[i].name) == 0)
        log_mask |= subsys_names[i].bit;
  }
  if (log_mask == 0) log_mask = GIN_SUB_ALL;
}

int gin_log_enabled(int level, unsigned subsys) {
  pthread_once(&log_once, log_init);
  return level <= log_level && (subsys & log_mask) != 0;
}

static const char *level_name(int level) {
  return level == GIN_LOG_WARN   ? "WARN"
         : level == GIN_LOG_INFO ? "INFO"
                                 : "TRACE";
}

static void log_vwrite(int level, const char *file, int line, const char *fmt,
                       va_list ap) {
  char msg[1024];
  const char *base = strrchr(file, '/');
  int n = snprintf(msg, sizeof msg, "gin %d %s %s:%d ", (int)getpid(),
                   level_name(level), base ? base + 1 : file, line);
  if (n < 0) return;
  if ((size_t)n < sizeof msg)
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  size_t len = strnlen(msg, sizeof msg - 2);
  msg[len++] = '\n';
  /* One write() per line so lines of concurrent ranks do not interleave. */
  ssize_t w = write(STDERR_FILENO, msg, len);
  (void)w;
}

void gin_log(int level, unsigned subsys, const char *file, int line,
             const char *fmt, ...) {
  if (!gin_log_enabled(level, subsys)) return;
  va_list ap;
  va_start(ap, fmt);
  log_vwrite(level, file, line, fmt, ap);
  va_end(ap);
}

static _Thread_local char last_error[1024];

/* Formats this thread's last error. Aside first: callers may pass
 * gin_last_error() itself as an argument, to wrap the callee's message in
 * their own. */
__attribute__((format(printf, 1, 0))) static void
last_error_set(const char *fmt, va_list ap) {
  char msg[sizeof last_error];
  vsnprintf(msg, sizeof msg, fmt, ap);
  memcpy(last_error, msg, sizeof msg);
}

gin_result_t gin_error(gin_result_t res, const char *file, int line,
                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  last_error_set(fmt, ap);
  va_end(ap);
  if (gin_log_enabled(GIN_LOG_WARN, GIN_SUB_ALL)) {
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s: %s", gin_strerror(res), last_error);
    gin_log(GIN_LOG_WARN, GIN_SUB_ALL, file, line, "%s", tmp);
  }
  return res;
}

gin_result_t gin_error_again(gin_result_t res, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  last_error_set(fmt, ap);
  va_end(ap);
  return res;
}

const char *gin_last_error(void) { return last_error; }

const char *gin_strerror(gin_result_t res) {
  switch (res) {
  case GIN_SUCCESS: return "success";
  case GIN_ERR_INVALID: return "invalid argument";
  case GIN_ERR_NOMEM: return "out of memory";
  case GIN_ERR_SYSTEM: return "system call failed";
  case GIN_ERR_TIMEOUT: return "timed out";
  case GIN_ERR_ABORTED: return "aborted";
  case GIN_ERR_UNSUPPORTED: return "unsupported";
  case GIN_ERR_AGAIN: return "resource temporarily unavailable";
  case GIN_ERR_REMOTE: return "remote peer failed";
  case GIN_ERR_CUDA: return "CUDA error";
  case GIN_ERR_STATE: return "invalid state";
  case GIN_ERR_PROTOCOL: return "protocol error";
  case GIN_ERR_INTERNAL: return "internal error";
  default: return "unknown error";
  }
}

uint64_t gin_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
