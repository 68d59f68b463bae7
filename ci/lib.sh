# Shell functions shared by ci/test and ci/demo. Source it; do not run it.
# shellcheck shell=bash

# The repository root: the parent of this file's directory.
# shellcheck disable=SC2034  # used by the scripts that source this file
LULL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian 12 packages the build, the tests, the sanitizer runs and the
# benchmarks need. Nothing else is ever installed.
LULL_DEB_PACKAGES=(
    cmake make gcc clang pkg-config
    libck-dev libgc-dev systemtap-sdt-dev libclang-rt-14-dev
    python3 util-linux
)

# One clear line before every stage, easy to find in a long log.
ci_stage() {
    printf '\n==== [ci] %s ====\n' "$*"
}

ci_note() {
    printf '[ci] %s\n' "$*"
}

ci_warn() {
    printf '[ci] WARNING: %s\n' "$*" >&2
}

# Install the Debian packages above that are missing: only when something
# is missing, only as root, and only from the configured apt sources.
# As a non-root user it warns and carries on (the build will say what fails).
ci_ensure_deps() {
    local missing=() p
    if ! command -v dpkg >/dev/null 2>&1; then
        ci_warn "dpkg not found: not a Debian system; make sure these are installed: ${LULL_DEB_PACKAGES[*]}"
        return 0
    fi
    for p in "${LULL_DEB_PACKAGES[@]}"; do
        if ! dpkg -s "$p" >/dev/null 2>&1; then
            missing+=("$p")
        fi
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        ci_note "all build dependencies are installed"
        return 0
    fi
    if [ "$(id -u)" -ne 0 ]; then
        ci_warn "missing packages (not root, not installing): ${missing[*]}"
        ci_warn "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}"
        return 0
    fi
    ci_note "installing missing packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update || return 1
    apt-get install -y --no-install-recommends "${missing[@]}" || return 1
}

# Number of parallel jobs for builds and ctest (the CI machine has 2 cores).
LULL_JOBS="${LULL_JOBS:-2}"
