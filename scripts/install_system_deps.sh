#!/usr/bin/env bash
# Installs what the test suite runs for real: OpenSSH's sshd (a real server on loopback),
# tmux (the detach method and the demo test), rsync (sync's transfer, the pull benchmark's
# baseline), git (sync lists a git repository's files as git does), prometheus (a real
# server scrapes `watch --metrics` in a test), Slurm with munge (a one-node test cluster,
# tests/support/slurm.py) and exFAT through FUSE with a loop device (a real disk that folds
# case, as macOS's does: tests/support/case_disk.py).
# Does nothing when they are already there.
set -euo pipefail
missing=()
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null || missing+=(openssh-client)
command -v tmux >/dev/null || missing+=(tmux)
command -v rsync >/dev/null || missing+=(rsync)
command -v git >/dev/null || missing+=(git)
command -v prometheus >/dev/null || missing+=(prometheus)
[ -x /usr/sbin/slurmctld ] || missing+=(slurmctld)
[ -x /usr/sbin/slurmd ] || missing+=(slurmd)
command -v sbatch >/dev/null || missing+=(slurm-client)
[ -x /usr/sbin/munged ] || missing+=(munge)
[ -x /usr/sbin/mount.exfat-fuse ] || missing+=(exfat-fuse)
command -v mkfs.exfat >/dev/null || missing+=(exfatprogs)
command -v losetup >/dev/null || missing+=(mount)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing system packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
