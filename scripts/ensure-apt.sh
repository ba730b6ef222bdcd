#!/bin/sh
# ensure-apt.sh PKG...: install the Debian packages that are missing, quietly
# when all are present. Idempotent; needs root (or sudo) only when installing.
set -eu
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "rdmalab: installing Debian packages:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "rdmalab: need root (or sudo) to install:$missing" >&2; exit 1; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Several builds may install at once (and apt timers run on a fresh VM):
# wait for the dpkg lock instead of failing.
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $missing >/dev/null
echo "rdmalab: installed:$missing"
