/* `dmhost convert FILE`: the libconfig form of DM's YAML task or source file, on stdout. The
 * translation is config_yaml.c's, the one the loader reads YAML files with; the way back (libconfig
 * into YAML) is a later slice of issue 23. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "convert.h"

int dmh_convert_main(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: dmhost convert FILE.yaml\n"
           "  prints the libconfig form of DM's YAML task or source file\n");
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: dmhost convert FILE.yaml\n");
    return 2;
  }
  if (!dmh_config_is_yaml(argv[1])) {
    fprintf(stderr,
            "dmhost convert: %s is not named .yaml or .yml; converting a libconfig file into "
            "YAML is not built yet\n",
            argv[1]);
    return 2;
  }
  dm_error err = {0};
  char *text = dmh_config_convert(argv[1], &err);
  if (!text) {
    fprintf(stderr, "dmhost convert: %s\n", err.message);
    return 1;
  }
  fputs(text, stdout);
  free(text);
  return 0;
}
