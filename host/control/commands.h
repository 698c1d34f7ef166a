/*
 * The command table (commands.def) as C: an enum of the commands, their rows, dmctl's options, and
 * the command line's parser every client shares (dmctl, `dmhost binlog`). Needs nothing but json-c
 * and the SDK's errors: dmctl links it without the registry, the supervisor or the loader.
 */
#ifndef DMH_COMMANDS_H
#define DMH_COMMANDS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "dmhost/error.h"

/* A command's flags. */
enum {
  DMH_CMD_FAST = 1u << 0,        /* answered at once: on the HTTP server's event threads */
  DMH_CMD_WORKER = 1u << 1,      /* a cluster worker's listener answers it (to its masters) */
  DMH_CMD_FORWARD = 1u << 2,     /* a master forwards it to the worker(s) concerned */
  DMH_CMD_DAEMON_ONLY = 1u << 4, /* only `dmhost serve` answers it: a master refuses it */
  DMH_CMD_SENDS_FILE = 1u << 5, /* its "path" names a file dmctl --master-addr sends as "content" */
  DMH_CMD_NO_DMCTL = 1u << 6,   /* no dmctl command: asked over the protocol or HTTP only */
};

/* An argument's flags: how dmctl's command line gives it (none of POS, REST, OPT, BOOL: not from
 * the command line, e.g. "content", which dmctl reads from the file). */
enum {
  DMH_ARG_REQ = 1u << 0,    /* the command line must give it */
  DMH_ARG_POS = 1u << 1,    /* the next positional word */
  DMH_ARG_REST = 1u << 2,   /* the positional words (up to DMH_CMD_MAX_POS), as an array */
  DMH_ARG_OPT = 1u << 3,    /* its option (DMH_OPTION in commands.def) */
  DMH_ARG_BOOL = 1u << 4,   /* a bare --NAME: true */
  DMH_ARG_PATH = 1u << 5,   /* a file path, made absolute by dmctl (the daemon runs elsewhere) */
  DMH_ARG_MASTER = 1u << 6, /* only a master takes it: not in the daemon's table */
  DMH_ARG_LIST = 1u << 7,   /* with OPT: the option may repeat, "a,b" too (DM's -s): an array */
};

#define DMH_CMD_MAX_ARGS 13 /* with the NULL after the last */
#define DMH_CMD_MAX_POS 5   /* positional words a command line may hold */

typedef struct dmh_cmd_arg {
  const char *name;
  unsigned flags;
  const char *short_name; /* a DMH_ARG_BOOL's one-letter spelling too ("-w": DM's), or NULL */
} dmh_cmd_arg;

typedef struct dmh_command {
  const char *name;
  unsigned flags;
  const char *usage, *daemon_usage, *master_usage; /* the last two NULL: usage */
  const char *summary;
  dmh_cmd_arg args[DMH_CMD_MAX_ARGS];
} dmh_command;

#define DMH_ARG(name, flags)                                                                       \
  { name, flags }
#define DMH_ARG_SHORT(name, flags, short_name)                                                     \
  { name, flags, short_name }
#define DMH_ARGS(...)                                                                              \
  { __VA_ARGS__ }

typedef enum dmh_cmd_id {
#define DMH_COMMAND(id, ...) DMH_CMD_##id,
#include "commands.def"
  DMH_CMD_COUNT
} dmh_cmd_id;

extern const dmh_command dmh_commands[DMH_CMD_COUNT];

typedef struct dmh_cmd_option {
  const char *arg, *short_name, *long_name, *not_taken, *missing;
} dmh_cmd_option;
/* dmctl's options (DMH_OPTION rows), and their number. */
const dmh_cmd_option *dmh_cmd_options(size_t *n);

/* The row named `name`, or NULL. */
const dmh_command *dmh_command_find(const char *name);
/* The names of the rows having every flag of `flags` into out (DMH_CMD_COUNT + 1), NULL-ended. */
void dmh_command_names(unsigned flags, const char **out);
/* "a, b, c": the names of the rows with every flag of `flags` and none of `without`, in the
 * table's order, into buf. */
void dmh_command_list(unsigned flags, unsigned without, char *buf, size_t len);

/* The binlog command's usage (its row's). */
#define DMH_BINLOG_USAGE (dmh_commands[DMH_CMD_BINLOG].usage)

/* The request {"cmd", "args"} of a command line argv[0..argc) (argv[0] the command), as dmctl
 * sends it: the arguments checked against the command's row (DM_ERR_CONTROL_REQUEST quoting the
 * usage), paths made absolute. NULL with *err. */
json_object *dmh_command_request(int argc, char **argv, dm_error *err);

/* The binlog command's args object from "OP TASK [-s SOURCE] [-b FILE:POS] [SQL...]" (argv[0] is
 * OP): shared by dmctl and `dmhost binlog`. NULL with DM_ERR_CONTROL_REQUEST saying the usage. */
json_object *dmh_binlog_args_from_argv(int argc, char **argv, dm_error *err);

#endif /* DMH_COMMANDS_H */
