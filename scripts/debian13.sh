#!/usr/bin/env bash
# Runs scripts/test.sh against Debian 13 ("trixie"): LibTorch 2.6, GCC 14, Python 3.13's torchrun.
# On Debian 12 it makes, once, a Debian 13 root with debootstrap and the packages scripts/setup.sh
# names, and runs the same checkout's scripts/test.sh inside it (build folders end in -debian13);
# on Debian 13 itself it is scripts/test.sh. Called as `scripts/test.sh --debian13 [ARGS]`;
# `scripts/test.sh --debian13 --prepare` only makes the root (CI makes it while it builds).
#   SACCADE_DEBIAN13_ROOT   where the root is kept (default /var/cache/saccade/debian13)
#   SACCADE_DEBIAN_MIRROR   the archive to make it from (default: the one apt uses here)
# The root is made under a temporary name and renamed when complete, so an interrupted or failed
# attempt leaves nothing that a later run would take for a root.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD

fail() {
  echo "test.sh --debian13: $*" >&2
  exit 1
}

prepare_only=false
if [ "${1:-}" = "--prepare" ]; then
  prepare_only=true
  shift
fi
if grep -q '^VERSION_ID="13"' /etc/os-release 2>/dev/null; then
  $prepare_only && exit 0
  exec scripts/test.sh "$@"
fi
[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap and chroot make and enter the Debian 13 root); run it as root or with sudo"

root=${SACCADE_DEBIAN13_ROOT:-/var/cache/saccade/debian13}
# Room for the root's packages (~4 GiB) and its build folders (~3 GiB).
needed_gib=10

archive_in_use() {  # the first non-security Debian archive in apt's sources
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' | grep -v security | head -n1)
  [ -n "$uri" ] || uri=$(grep -hs '^deb ' /etc/apt/sources.list | awk '{print $2}' | grep -v security | head -n1)
  echo "${uri:-http://deb.debian.org/debian}"
}

# Every mount this script made under $1, deepest first; then checks none is left.
unmount_within() {
  local mounts
  mounts=$(awk -v top="$1" '$2 == top || index($2, top "/") == 1 {print $2}' /proc/mounts | sort -r)
  for mount in $mounts; do umount -l "$mount" 2>/dev/null || true; done
  ! awk -v top="$1" '$2 == top || index($2, top "/") == 1 {found=1} END {exit !found}' /proc/mounts
}

enter_mounts() {  # what the root needs to build and test: kernel files, the network, the checkout
  local target=$1
  mount -t proc proc "$target/proc"
  # Slaves, so that unmounting them later never reaches the host's own /dev/pts or /sys mounts.
  mount --rbind /dev "$target/dev" && mount --make-rslave "$target/dev"
  mount --rbind /sys "$target/sys" && mount --make-rslave "$target/sys"
  cp -L /etc/resolv.conf "$target/etc/resolv.conf" 2>/dev/null || true
  mkdir -p "$target/saccade"
  mount --bind "$checkout" "$target/saccade"
}

make_root() {
  local parent mirror temporary log free_kib
  parent=$(dirname "$root")
  mkdir -p "$parent" || fail "cannot create $parent"
  free_kib=$(df -Pk "$parent" | awk 'NR == 2 {print $4}')
  [ "$free_kib" -ge $((needed_gib * 1024 * 1024)) ] ||
    fail "too little disk for the Debian 13 root: $((free_kib / 1024 / 1024)) GiB free in $parent, $needed_gib GiB needed"
  if ! command -v debootstrap >/dev/null 2>&1; then
    echo "test.sh --debian13: installing debootstrap"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; } >/dev/null 2>&1 ||
      fail "cannot install debootstrap: no network to the Debian archive?"
  fi
  mirror=${SACCADE_DEBIAN_MIRROR:-$(archive_in_use)}
  temporary=$root.tmp-$$
  log=$parent/debian13-make.log
  trap 'unmount_within "$temporary" && rm -rf "$temporary"' EXIT
  echo "test.sh --debian13: making a Debian 13 root in $root from $mirror (once; log: $log)"
  debootstrap --variant=minbase trixie "$temporary" "$mirror" >"$log" 2>&1 ||
    fail "debootstrap could not make Debian 13 from $mirror (no network to the archive, or too little disk?); see $log"
  enter_mounts "$temporary"
  chroot "$temporary" /saccade/scripts/setup.sh >>"$log" 2>&1 ||
    fail "installing saccade's packages in the Debian 13 root failed (no network to the archive?); see $log"
  chroot "$temporary" apt-get clean  # the downloaded packages (~0.7 GiB) are not needed again
  unmount_within "$temporary" || fail "could not unmount what was mounted under $temporary"
  mv "$temporary" "$root"
  trap - EXIT
}

mkdir -p "$(dirname "$root")" || fail "cannot create $(dirname "$root")"
exec 9>"$root.lock"
flock 9  # one run at a time enters the root
[ -d "$root" ] || make_root
$prepare_only && exit 0

trap 'unmount_within "$root"' EXIT
enter_mounts "$root"
echo "test.sh --debian13: in $root ($(chroot "$root" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'))"
chroot "$root" /usr/bin/env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  SACCADE_BUILD_SUFFIX=-debian13 /saccade/scripts/test.sh "$@"
