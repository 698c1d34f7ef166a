/* Helpers of the precheck's tests: run the precheck of the loaded lt_env and read one item. */
#ifndef DMH_PRECHECK_TEST_UTIL_H
#define DMH_PRECHECK_TEST_UTIL_H

#include "load_test_util.h"
#include "precheck.h"

/* dmh_precheck_run on e's task and source into *pc (freed by the caller). 0 or -1. */
int pt_run(lt_env *e, dmh_precheck *pc);
/* The result of item `name`, or NULL when it did not run (ignored, or not for this mode). */
const dmh_check_result *pt_item(const dmh_precheck *pc, const char *name);
/* Its findings joined by " | " into buf. */
const char *pt_msgs(const dmh_check_result *r, char *buf, size_t len);
/* Does item `name` have state `state` and (when part is not NULL) a finding holding part? Prints
 * the result when not. */
bool pt_is(const dmh_precheck *pc, const char *name, dmh_check_state state, const char *part);

#endif
