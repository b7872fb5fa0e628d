# Sourced by the scripts: settings that Debian's Emscripten 3.1.6 needs.
# NodeSource's node cannot find Debian's acorn for -O2+ links without this.
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
# Two cores here; never more than the machine has.
JOBS="$(nproc)"
