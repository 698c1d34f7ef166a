/*
 * One command-line flag with a value, in the forms dmctl and dmhost accept: "-s X", "--source X",
 * "-s=X", "--source=X".
 */
#ifndef DMH_CLI_FLAG_H
#define DMH_CLI_FLAG_H

/* The flag `short_name`/`long_name` at argv[*i]: 1 taken (*out set, *i moved past its value), 0
 * not this flag, -1 the value is missing. */
int dmh_cli_flag(int argc, char **argv, int *i, const char *short_name, const char *long_name,
                 const char **out);

/* A flag's decimal value in min..max: 0 and *out, or -1 (not a number, or out of range: never
 * wrapped or clamped). */
int dmh_cli_int(const char *v, long min, long max, long *out);

#endif /* DMH_CLI_FLAG_H */
