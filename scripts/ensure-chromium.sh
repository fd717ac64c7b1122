#!/usr/bin/env bash
# ensure-chromium.sh — make sure Debian's chromium is at /usr/bin/chromium for
# the browser tests (dashboard/), installing the package with apt-get when it
# is missing and we are root. `make test` and .ci/run call it.
#
# Without root it cannot install anything: it says so and exits 0, and the
# browser tests skip with the same message — except in CI (CI=true), where
# both fail, so a run without a browser never passes by skipping.
set -euo pipefail

log() { printf 'ensure-chromium: %s\n' "$*" >&2; }

chromium=/usr/bin/chromium
if [[ -x "$chromium" ]]; then
	exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
	log "$chromium is missing and installing it needs root (apt-get install chromium)"
	[[ "${CI:-}" == true ]] && exit 1
	exit 0
fi
log "installing Debian's chromium package"
export DEBIAN_FRONTEND=noninteractive
# Another apt-get on the machine holds the lock for a while: wait for it.
apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
apt-get -o DPkg::Lock::Timeout=600 install -y -qq chromium >&2
[[ -x "$chromium" ]] || { log "error: chromium installed but $chromium is missing"; exit 1; }
log "$("$chromium" --version 2>/dev/null || echo installed)"
