#!/usr/bin/env bash
# apt_install_missing LABEL PACKAGE...: installs (root, Debian) those of the packages that are not
# installed yet, and does nothing when all are. Sourced by scripts/setup.sh and
# scripts/model/train.sh so that both skip apt entirely on a machine that has everything.
apt_install_missing() {
  local label=$1 p
  shift
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "$label: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}
