/* `dmhost convert` (cmd_convert.c). */
#ifndef DMH_CONVERT_H
#define DMH_CONVERT_H

/* argv[0] is "convert". Exit status: 0 printed, 1 the file is refused, 2 usage. */
int dmh_convert_main(int argc, char **argv);

#endif /* DMH_CONVERT_H */
