#!/usr/bin/env bash
# Check the README's set-up on a clean Debian 12: debootstrap a minimal
# bookworm into DIR, run the README's own apt-get line in it, then (with
# --test) the README's test command on a fresh clone of this repository.
#
# Rust comes from the README's rustup line when static.rust-lang.org is
# reachable; with --host-rust, from this machine's ~/.rustup and ~/.cargo
# instead (bind-mounted; for machines that reach only the package registries).
#
#   sudo scripts/fresh-debian.sh DIR [--test] [--host-rust]
#
# Root only: debootstrap, chroot and mounts. DIR is made fresh and left for
# inspection; remove it with `umount -R DIR; rm -rf DIR`.
set -euo pipefail

usage() { echo "usage: $0 DIR [--test] [--host-rust]" >&2; exit 2; }
[ $# -ge 1 ] || usage
dir=$(realpath -m "$1"); shift
test_too=0; host_rust=0
for arg in "$@"; do
  case "$arg" in
    --test) test_too=1 ;;
    --host-rust) host_rust=1 ;;
    *) usage ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "$0: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "$0: needs debootstrap (apt-get install debootstrap)" >&2; exit 2; }
[ ! -e "$dir" ] || { echo "$0: $dir exists; give a new directory" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)

# The README's lines, as a newcomer would copy them.
apt_line=$(grep -m1 '^sudo apt-get install' "$repo/README.md")
rustup_line=$(grep -m1 '^curl .*sh.rustup.rs' "$repo/README.md")
test_line=$(grep -m1 '^cargo test' "$repo/README.md")
[ -n "$apt_line" ] && [ -n "$rustup_line" ] && [ -n "$test_line" ] \
  || { echo "$0: README.md no longer has the apt-get, rustup and cargo test lines" >&2; exit 1; }

echo "== debootstrap bookworm into $dir"
debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian >"$dir.debootstrap.log" 2>&1 \
  || { echo "$0: debootstrap failed; see $dir.debootstrap.log" >&2; exit 1; }

# The sandbox needs / to be a mount point, and /proc, /dev, /sys, cgroups.
mount --bind "$dir" "$dir"
mount -t proc proc "$dir/proc"
mount --rbind /dev "$dir/dev"
mount --rbind /sys "$dir/sys"
cp /etc/resolv.conf "$dir/etc/resolv.conf"
in_root() { chroot "$dir" /usr/bin/env -i HOME=/root PATH=/root/.cargo/bin:/usr/local/bin:/usr/bin:/bin TERM=dumb "$@"; }

echo "== the README's apt line: $apt_line"
# `sudo` is what a user types; root in the chroot runs it without.
in_root bash -ec "apt-get update -qq && DEBIAN_FRONTEND=noninteractive ${apt_line#sudo }"

if [ "$host_rust" -eq 1 ]; then
  echo "== Rust from this machine (--host-rust)"
  mkdir -p "$dir/root/.rustup" "$dir/root/.cargo"
  mount --bind "$HOME/.rustup" "$dir/root/.rustup"
  mount --bind "$HOME/.cargo" "$dir/root/.cargo"
else
  echo "== the README's rustup line"
  in_root bash -ec "$rustup_line"
fi
in_root cargo --version

if [ "$test_too" -eq 1 ]; then
  echo "== a fresh clone, and the README's test command: $test_line"
  git clone -q "$repo" "$dir/root/longrun"
  in_root bash -ec "cd /root/longrun && $test_line"
fi
echo "== the README's set-up works on a fresh Debian 12 ($dir)"
