#!/usr/bin/env bash
# System packages some features need; installed only when missing (root on CI and dev machines).
set -uo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v pg_ctlcluster >/dev/null 2>&1 || [ -x /usr/lib/postgresql/15/bin/initdb ] || need+=(postgresql)
# the browser test of `memarch ui` (tests/test_ui_browser.py) drives Debian's headless Chromium
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
      || echo "install_system: could not install ${need[*]} (features that need them will be skipped)"
  else
    echo "install_system: missing ${need[*]}; install them to enable TextWorldExpress / PostgreSQL / browser (UI) tests"
  fi
fi
exit 0
