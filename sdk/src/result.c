/* Filling a unit's result (result.h). */
#include "dmhost/result.h"

void dm_result_fail(dm_result *result, const dm_error *e) {
  result->outcome = DM_OUTCOME_ERROR;
  result->n_errors = 1;
  result->errors[0] = *e;
}
