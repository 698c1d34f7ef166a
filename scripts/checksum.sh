#!/usr/bin/env bash
# Compare schemas between the local source and target, table by table: row count and an
# order-independent checksum computed by each server over every column (FLOAT read as DOUBLE, so
# no digit is lost; NULL distinct from ''). Prints one line per table and exits 1 on a difference.
#
#   scripts/checksum.sh DB [DB...]        (servers from scripts/mariadb.sh env)
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(bash scripts/mariadb.sh env)"
[ $# -gt 0 ] || { echo "usage: $0 DB [DB...]" >&2; exit 2; }

q() { # side sql
  local host port user pass
  if [ "$1" = source ]; then
    host=$DMH_SOURCE_HOST port=$DMH_SOURCE_PORT user=$DMH_SOURCE_USER pass=$DMH_SOURCE_PASSWORD
  else
    host=$DMH_TARGET_HOST port=$DMH_TARGET_PORT user=$DMH_TARGET_USER pass=$DMH_TARGET_PASSWORD
  fi
  mariadb --no-defaults --protocol=tcp -h"$host" -P"$port" -u"$user" ${pass:+-p"$pass"} -N -B \
    -e "$2"
}

# The checksum expression of a table: the SUM (so duplicate rows count, unlike XOR) of a per-row
# CRC over all columns. The expression
# is built from the source's columns and run on both sides.
row_expr() { # db table
  q source "SELECT GROUP_CONCAT(
      CONCAT('IFNULL(HEX(', IF(DATA_TYPE = 'float', CONCAT('CAST(\`', COLUMN_NAME, '\` AS DOUBLE)'),
             CONCAT('\`', COLUMN_NAME, '\`')), '), ''~N'')')
      ORDER BY ORDINAL_POSITION SEPARATOR ', ''|'', ')
    FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '$1' AND TABLE_NAME = '$2'"
}

status=0
printf '%-36s %10s  %-12s %-12s %s\n' table rows source target result
for db in "$@"; do
  for t in $(q source "SELECT TABLE_NAME FROM information_schema.TABLES
                       WHERE TABLE_SCHEMA = '$db' AND TABLE_TYPE = 'BASE TABLE' ORDER BY 1"); do
    expr=$(row_expr "$db" "$t")
    sql="SELECT COUNT(*), LPAD(HEX(IFNULL(SUM(CRC32(CONCAT($expr))), 0)), 12, '0')
         FROM \`$db\`.\`$t\`"
    read -r sn sc <<<"$(q source "$sql")"
    if tgt=$(q target "$sql" 2>/dev/null); then read -r tn tc <<<"$tgt"; else tn=- tc=missing; fi
    if [ "$sn" = "$tn" ] && [ "$sc" = "$tc" ]; then r=equal; else r=DIFFERENT; status=1; fi
    printf '%-36s %10s  %-12s %-12s %s\n' "$db.$t" "$sn" "$sc" "$tc" "$r"
  done
done
exit $status
