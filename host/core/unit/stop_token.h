/*
 * The stop token of one subtask run: an atomic flag for cheap polling plus an eventfd that becomes
 * readable when it fires, so a unit blocked in poll() on its sockets wakes as well. Fired by
 * commands (pause, stop, kill, swap); reset only by the supervisor while no runner thread exists,
 * so a command can never be lost between a reset and the unit's first poll.
 */
#ifndef DMH_STOP_TOKEN_H
#define DMH_STOP_TOKEN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct dmh_stop_token {
  atomic_bool fired;
  int fd; /* eventfd; readable once fired */
} dmh_stop_token;

int dmh_stop_token_init(dmh_stop_token *t);
void dmh_stop_token_destroy(dmh_stop_token *t);
void dmh_stop_token_fire(dmh_stop_token *t);
/* Only while nothing polls it (no runner thread). */
void dmh_stop_token_reset(dmh_stop_token *t);
bool dmh_stop_token_fired(dmh_stop_token *t);
/* Sleep up to ms; true as soon as the token fires. */
bool dmh_stop_token_wait(dmh_stop_token *t, uint32_t ms);

#endif /* DMH_STOP_TOKEN_H */
