/*
 * The base layer, under every other: logging, errors and their check
 * macros, settings, time (base.h), socket addresses and wire fields
 * (net.h). The library's layers, bottom up: base, arch, transport, proxy,
 * comm, ep; each includes and calls only those below it (the layer test,
 * tests/layers_check.sh, and docs/DESIGN-NOTES.md, "Layers").
 */
#ifndef GIN_BASE_H
#define GIN_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "gin/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- log */

enum {
  GIN_LOG_NONE = 0,
  GIN_LOG_WARN = 1,
  GIN_LOG_INFO = 2,
  GIN_LOG_TRACE = 3
};

/* Subsystems for GIN_DEBUG_SUBSYS (comma separated names, or ALL). */
enum {
  GIN_SUB_INIT = 1u << 0,
  GIN_SUB_BOOTSTRAP = 1u << 1,
  GIN_SUB_MEM = 1u << 2,
  GIN_SUB_WINDOW = 1u << 3,
  GIN_SUB_DEVCOMM = 1u << 4,
  GIN_SUB_PROXY = 1u << 5,
  GIN_SUB_NET = 1u << 6,
  GIN_SUB_ENV = 1u << 7,
  GIN_SUB_ALL = 0xffffffffu
};

int gin_log_enabled(int level, unsigned subsys);
void gin_log(int level, unsigned subsys, const char *file, int line,
             const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define GIN_LOG_(lvl, sub, ...)                                                \
  do {                                                                         \
    if (gin_log_enabled(lvl, GIN_SUB_##sub))                                   \
      gin_log(lvl, GIN_SUB_##sub, __FILE__, __LINE__, __VA_ARGS__);            \
  } while (0)
#define GIN_WARN(sub, ...) GIN_LOG_(GIN_LOG_WARN, sub, __VA_ARGS__)
#define GIN_INFO(sub, ...) GIN_LOG_(GIN_LOG_INFO, sub, __VA_ARGS__)
#define GIN_TRACE(sub, ...) GIN_LOG_(GIN_LOG_TRACE, sub, __VA_ARGS__)

/* ------------------------------------------------------------- errors */

/* Records `res` with a formatted message as this thread's last error, logs
 * it at WARN (the first place that sees an error calls this), returns res.
 * gin_last_error() may be among the arguments (to wrap a callee's message). */
gin_result_t gin_error(gin_result_t res, const char *file, int line,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define GIN_ERROR(res, ...) gin_error(res, __FILE__, __LINE__, __VA_ARGS__)
/* gin_error without the log line: for the same failure seen again (a
 * caller that logged the first one counts the others). */
gin_result_t gin_error_again(gin_result_t res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* This thread's last error message (public: gin.h). */
GIN_API const char *gin_last_error(void);

/* Propagate an error already recorded by the callee. */
#define GIN_CHECK(call)                                                        \
  do {                                                                         \
    gin_result_t gin_r_ = (call);                                              \
    if (gin_r_ != GIN_SUCCESS) return gin_r_;                                  \
  } while (0)
#define GIN_CHECK_GOTO(call, res, label)                                       \
  do {                                                                         \
    (res) = (call);                                                            \
    if ((res) != GIN_SUCCESS) goto label;                                      \
  } while (0)
#define GIN_ARG_CHECK(cond, ...)                                               \
  do {                                                                         \
    if (!(cond)) return GIN_ERROR(GIN_ERR_INVALID, __VA_ARGS__);               \
  } while (0)

/* ----------------------------------------------------------- settings */

typedef struct gin_param {
  const char *name; /* full variable name, GIN_... */
  const char *def;  /* default, as text */
  const char *help;
  const char *target; /* "cuda" or "host": read by that target only */
  const char *value;  /* cached: the environment's or def */
  int loaded;
  struct gin_param *next;
} gin_param_t;

void gin_param_register(gin_param_t *p);
const char *gin_param_str(gin_param_t *p);
int64_t gin_param_int(gin_param_t *p);

/* Declares setting GIN_<NAME> once, next to its use: defines
 * `static int64_t fn(void)` (or `const char *fn(void)` for _STR) that reads
 * and caches the variable, and registers it for gin_param_info. */
#define GIN_PARAM_DECL_(fn, NAME, def, target, help)                           \
  static gin_param_t fn##_param_ = {"GIN_" NAME, def, help, target,            \
                                    NULL,        0,   NULL};                   \
  __attribute__((constructor)) static void fn##_register_(void) {              \
    gin_param_register(&fn##_param_);                                          \
  }
#define GIN_PARAM_INT(fn, NAME, def, help)                                     \
  GIN_PARAM_DECL_(fn, NAME, #def, NULL, help)                                  \
  static int64_t fn(void) { return gin_param_int(&fn##_param_); }
#define GIN_PARAM_STR(fn, NAME, def, help)                                     \
  GIN_PARAM_DECL_(fn, NAME, def, NULL, help)                                   \
  static const char *fn(void) { return gin_param_str(&fn##_param_); }
/* A setting that one target's library reads ("cuda" or "host"), or only a
 * build with an optional part ("ofi": the libfabric transport): fn is
 * extern, and the declaration sits in a file every build compiles
 * (src/arch/params.c, src/transport/ofi_params.c), so that every build
 * lists every setting. */
#define GIN_PARAM_TARGET_INT(target, fn, NAME, def, help)                      \
  GIN_PARAM_DECL_(fn, NAME, #def, target, help)                                \
  int64_t fn(void) { return gin_param_int(&fn##_param_); }
#define GIN_PARAM_TARGET_STR(target, fn, NAME, def, help)                      \
  GIN_PARAM_DECL_(fn, NAME, def, target, help)                                 \
  const char *fn(void) { return gin_param_str(&fn##_param_); }

/* GIN_TIMEOUT_MS: the bound on every wait (bootstrap, host, device). */
int64_t gin_timeout_ms(void);

/* Value of a hex digit (either case), -1 if c is not one. */
int gin_hex_digit(char c);

/* --------------------------------------------------------------- time */

uint64_t gin_now_ns(void);
/* A release of a peer's window view slower than this is logged (normally
 * well under 1 ms; under MPS one took ~150 ms:
 * docs/RELIABILITY.md). */
#define GIN_SLOW_RELEASE_NS 20000000ull

#ifdef __cplusplus
}
#endif
#endif
