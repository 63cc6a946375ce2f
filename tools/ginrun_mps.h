/*
 * ginrun's MPS handling: when the ranks of a job would share a GPU and no
 * MPS control daemon serves them, ginrun starts one private to the job and
 * stops it when the job ends (ginrun_mps.c says how and why).
 */
#ifndef GINRUN_MPS_H
#define GINRUN_MPS_H

#include <sys/types.h>

typedef struct ginrun_mps {
  pid_t pid;     /* the job's control daemon; 0 when none was started */
  char dir[96];  /* $TMPDIR/ginrun-mps-XXXXXX, holding pipe/ and log/ */
  char *vars[2]; /* CUDA_MPS_PIPE_DIRECTORY=..., CUDA_MPS_LOG_DIRECTORY=... */
} ginrun_mps_t;

/* Decides for a job of nranks ranks on this host; starts the daemon when
 * they would share a GPU that no MPS serves and GIN_MPS is not 0. Says on
 * stderr what it did, or why it could not and what that costs; never
 * fails: the job runs with or without MPS. */
void ginrun_mps_begin(ginrun_mps_t *m, int nranks);

/* The variables the ranks need (the daemon's directories) in vars; returns
 * how many (0 or 2). The strings belong to m. */
int ginrun_mps_vars(const ginrun_mps_t *m, char **vars);

/* Stops the job's daemon, bounded (quit, then SIGTERM, then SIGKILL), and
 * removes its directories. Nothing when none was started. */
void ginrun_mps_end(ginrun_mps_t *m);

/* This process's environment with the NAME=VALUE strings of set[0..nset)
 * first, replacing variables of the same names. The array is malloc'd (free
 * it with free); its strings are not copied. NULL when out of memory. */
char **ginrun_env(char *const *set, int nset);

#endif
