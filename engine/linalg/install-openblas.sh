#!/bin/sh
# Installs the OpenBLAS development package that `go build -tags openblas` links against (Debian/Ubuntu).
# Idempotent: does nothing when libopenblas is already present.
set -eu
if [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so '; then
	exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libopenblas-dev
