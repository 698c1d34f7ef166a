/*
 * dmhost SDK: filling a unit's dm_result (unit.h). A unit's process/resume ends with one outcome;
 * a failure carries its errors, the first of which the host shows and acts on (resumable or not).
 */
#ifndef DMHOST_RESULT_H
#define DMHOST_RESULT_H

#include "error.h"
#include "unit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The outcome is DM_OUTCOME_ERROR with *e as its one error. */
void dm_result_fail(dm_result *result, const dm_error *e);

#ifdef __cplusplus
}
#endif
#endif /* DMHOST_RESULT_H */
