/*
 * The fake host of dmhost-unit-check: services for a unit outside a task (no supervisor, no
 * subtask). A services table of its own whose identity, endpoints, config and rules slots are the
 * host's (host/core/unit/services.c, over a dm_ctx of the tool's own filled from the --config
 * file), and whose stop-token and config-lookup slots are wrappers the checks steer: the token
 * fires when the checks say (or when the unit first looks at it after a given moment), and the n-th
 * setting looked up can be answered DM_CFG_WRONG_TYPE to make init fail.
 *
 * One fake host per process: the wrappers reach it through one pointer, as the tool checks one
 * unit.
 */
#ifndef DMH_UC_FAKE_HOST_H
#define DMH_UC_FAKE_HOST_H

#include <stdbool.h>

#include "dmhost/error.h"
#include "dmhost/unit.h"

typedef struct uc_host uc_host;

/* Reads `config_path` (NULL: none; every setting then has its default) for a unit of `kind`
 * (`kind_name` for a custom one). Work dirs go under `root`, or, when it is NULL, under a fresh
 * temp root of its own. 0, or -1 with *err. */
int uc_host_open(const char *config_path, uint32_t kind, const char *kind_name, const char *root,
                 uc_host **out, dm_error *err);
/* Removes a temp root of its own unless `keep`. */
void uc_host_close(uc_host *h, bool keep);
const char *uc_host_root(const uc_host *h);

/* The services every instance gets. */
const dm_host_services *uc_host_services(void);

/* A context whose work dir is <root>/<work> (created; the same name gives the same folder). */
dm_ctx *uc_host_ctx(uc_host *h, const char *work, dm_error *err);
void uc_host_ctx_free(dm_ctx *ctx);
/* Forget the settings looked up (before the next init on the same context). */
void uc_host_ctx_reset(dm_ctx *ctx);

/* The stop token. uc_host_fire_at_look: fire it when the unit looks at it (stop_requested,
 * wait_stop, stop_fd) `after_ms` or more after this call; -1 turns that off. */
void uc_host_fire(uc_host *h);
void uc_host_reset(uc_host *h);
bool uc_host_fired(uc_host *h, double *at_ms);
void uc_host_fire_at_look(uc_host *h, int after_ms);
/* Fire it at the unit's n-th look since the last reset (1-based); 0 turns that off. */
void uc_host_fire_at_looks(uc_host *h, long n);
/* How often the unit looked at the token since the last reset. */
long uc_host_looks(uc_host *h);

/* Answer the n-th setting looked up from now on (1-based) with DM_CFG_WRONG_TYPE; 0: none.
 * uc_host_lookups: settings looked up since the last call of uc_host_fail_lookup. */
void uc_host_fail_lookup(uc_host *h, int n);
int uc_host_lookups(uc_host *h);

/* Monotonic milliseconds. */
double uc_now_ms(void);

#endif
