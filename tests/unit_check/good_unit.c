/* The base unit as it is: passes every check of dmhost-unit-check. */
#define CONFORM_NAME "good"
#define CONFORM_UPDATE cb_update
#include "conform_base.h"

CONFORM_UNIT(cb_init, cb_process, NULL, cb_status, cb_kill, cb_is_fresh, cb_close)
