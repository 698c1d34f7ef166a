# The browser tests' tools (sourced after tests/crash/lib.sh's serve_begin, which defines fail):
# Chromium, its driver and Debian's python3-selenium, which lives in the system's python whatever
# python3 comes first on PATH. Sets `py` to that python.
web_need_browser() {
  local c
  for c in chromium chromedriver; do
    command -v "$c" >/dev/null ||
      fail "$c is not installed (Debian chromium, chromium-driver: scripts/deps.sh)"
  done
  py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  "$py" -c 'import selenium' 2>/dev/null || fail "python3-selenium is not installed (scripts/deps.sh)"
}
