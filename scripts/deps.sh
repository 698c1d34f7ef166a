#!/usr/bin/env bash
# Install what dmhost needs to build and test on Debian (12+), only what is missing.
# clang + libclang-rt-dev: the fuzz targets (libFuzzer is in libclang-rt-dev, only a Recommends
# of clang, which --no-install-recommends below skips). python3 and jq: test scripts (tests/json-sink
# checks and applies JSON lines with python3; the cluster and json-sink tests read dmctl's JSON with
# jq).
# etcd-client: etcdctl, which sets up the TLS+auth etcd (scripts/etcd.sh, DMH_ETCD_TLS=1) and plays the
# etcd attacks of tests/cluster/etcd_secure.sh.
# libyaml-dev: DM's YAML task and source files are read with libyaml (a maintained parser).
# prometheus: its promtool checks every /metrics exposition in the tests (docs/metrics.md), and
# the alert test runs it with DM's rules (python3-yaml reads the rule file there).
# chromium, chromium-driver, python3-selenium: the status page's browser test (tests/web).
# percona-toolkit: pt-online-schema-change, run against the source by tests/shard/online_ptosc.sh.
# python3-jsonschema: tests/control/dm_openapi_check.py validates the HTTP answers against DM's
# OpenAPI schemas (run with /usr/bin/python3, whose packages these are).
set -euo pipefail
pkgs=(build-essential cmake pkg-config libconfig-dev libyaml-dev libjson-c-dev libcunit1-dev libmariadb-dev
      mariadb-server mariadb-client clang-format clang libclang-rt-dev libssl-dev zlib1g-dev openssl
      libzstd-dev zstd libcurl4-openssl-dev etcd-server etcd-client libmicrohttpd-dev libgnutls28-dev
      python3 python3-yaml python3-jsonschema jq prometheus chromium chromium-driver python3-selenium
      percona-toolkit)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# mariadb-server's post-install start of the system service fails without systemd: harmless, the
# project starts its own servers.
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}" || \
  dpkg-query -W -f='${Status}' mariadb-server | grep -q "install ok installed"
