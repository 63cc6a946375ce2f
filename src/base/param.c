/* Settings: GIN_* environment variables declared next to their use with
 * GIN_PARAM_INT / GIN_PARAM_STR, cached on first read, listable. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "gin/gin.h"

static pthread_mutex_t param_lock = PTHREAD_MUTEX_INITIALIZER;
static gin_param_t *param_head;
static int param_n;

void gin_param_register(gin_param_t *p) {
  pthread_mutex_lock(&param_lock);
  /* Keep the list sorted by name for stable listings. */
  gin_param_t **pp = &param_head;
  while (*pp && strcmp((*pp)->name, p->name) < 0)
    pp = &(*pp)->next;
  p->next = *pp;
  *pp = p;
  param_n++;
  pthread_mutex_unlock(&param_lock);
}

const char *gin_param_str(gin_param_t *p) {
  pthread_mutex_lock(&param_lock);
  if (!p->loaded) {
    const char *v = getenv(p->name);
    p->value = (v && *v) ? strdup(v) : p->def;
    if (!p->value) p->value = p->def;
    p->loaded = 1;
  }
  const char *v = p->value;
  pthread_mutex_unlock(&param_lock);
  return v;
}

int64_t gin_param_int(gin_param_t *p) {
  const char *v = gin_param_str(p);
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 0);
  if (errno || end == v || *end != '\0') {
    GIN_WARN(INIT, "%s=\"%s\" is not an integer; using the default %s", p->name,
             v, p->def);
    x = strtoll(p->def, NULL, 0);
  }
  return (int64_t)x;
}

GIN_PARAM_INT(param_timeout_ms, "TIMEOUT_MS", 30000,
              "bound in milliseconds on every wait (bootstrap, host and "
              "device); on expiry the wait reports what it waited for")

int64_t gin_timeout_ms(void) {
  int64_t t = param_timeout_ms();
  return t > 0 ? t : 30000;
}

int gin_param_count(void) {
  pthread_mutex_lock(&param_lock);
  int n = param_n;
  pthread_mutex_unlock(&param_lock);
  return n;
}

gin_result_t gin_param_info(int i, gin_setting_t *info_out) {
  GIN_ARG_CHECK(info_out, "gin_param_info: info_out is NULL");
  pthread_mutex_lock(&param_lock);
  gin_param_t *p = param_head;
  for (int k = 0; p && k < i; k++)
    p = p->next;
  pthread_mutex_unlock(&param_lock);
  if (i < 0 || !p)
    return GIN_ERROR(GIN_ERR_INVALID, "setting index %d out of range [0, %d)",
                     i, gin_param_count());
  gin_setting_t info = {p->name, gin_param_str(p), p->def, p->help, p->target};
  *info_out = info;
  return GIN_SUCCESS;
}
