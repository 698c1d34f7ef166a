/*
 * The cases of test_supervisor, one program built from several files: test_supervisor.c (the
 * stage machine: chains and modes, init, pause, resume, stop, kill, auto-resume, and main),
 * test_supervisor_relay.c (relay catch-up between load and sync, the relay file a task holds),
 * test_supervisor_swap.c (hot-swap, update-task). The macros they share, and the cases main runs
 * from the other files.
 */
#ifndef DMH_TEST_SUPERVISOR_CASES_H
#define DMH_TEST_SUPERVISOR_CASES_H

#include "harness.h"

#define SETUP(h, mode, sup, units) CU_ASSERT_FATAL(harness_setup(h, mode, sup, units) == 0)
#define FAST_SUP                                                                                   \
  "init-timeout = 5; stop-timeout = 2; relay-catchup-timeout = 5; relay-catchup-poll = 10; "       \
  "auto-resume = { enable = false; };"

/* test_supervisor_relay.c */
void test_relay_catchup_reached(void);
void test_relay_hold_during_dump(void);
void test_relay_catchup_at_master(void);
void test_relay_catchup_timeout(void);
void test_relay_catchup_one_status_per_poll(void);
void test_relay_catchup_interrupted_by_stop(void);
void test_relay_catchup_pause_resume(void);

/* test_supervisor_swap.c */
void test_swap_mid_run(void);
void test_swap_refused_keeps_old(void);
void test_swap_while_paused(void);
void test_update_all_or_nothing(void);

#endif
