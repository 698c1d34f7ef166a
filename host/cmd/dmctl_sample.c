/* dmctl operate-source --print-sample-config (-p): DM's sample source file, in DM's YAML as dmhost
 * reads it. See dmctl_sample.h. */
#include "dmctl_sample.h"

#include <stdio.h>
#include <string.h>

/* DM's sample (dm/config/source.yaml) has the same keys; those dmhost takes only at their default
 * (flavor, purge, checker) are left out, the relay-binlog-* as DM comments them out. */
static const char dmctl_source_sample[] =
    "# A source file in DM's YAML, as dmhost reads it (docs/config.md, \"DM's YAML files\"):\n"
    "# `dmctl operate-source create source.yaml` binds it. The file name must end in .yaml.\n"
    "\n"
    "# server id of the replica connection reading the binlog: each reader of a source needs its\n"
    "# own\n"
    "server-id: 101\n"
    "\n"
    "# the source's name, which the task files' mysql-instances name\n"
    "source-id: mysql-replica-01\n"
    "\n"
    "# the relay: a local copy of the source's binlog that the tasks read\n"
    "enable-relay: false\n"
    "\n"
    "# GTID positions (the server's gtid_mode / gtid_domain_id)\n"
    "enable-gtid: false\n"
    "\n"
    "from:\n"
    "  host: 127.0.0.1\n"
    "  user: root\n"
    "  # or password-file, password-env, password-encrypted (`dmhost encrypt`)\n"
    "  password: '123456'\n"
    "  port: 3306\n";

bool dmctl_sample_wanted(int argc, char **argv) {
  if (argc < 1 || strcmp(argv[0], "operate-source") != 0)
    return false;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--print-sample-config") == 0)
      return true;
  return false;
}

int dmctl_sample_print(void) {
  return fputs(dmctl_source_sample, stdout) < 0 || fflush(stdout) != 0 ? 1 : 0;
}
