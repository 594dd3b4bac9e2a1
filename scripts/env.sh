# Sourced by the scripts: puts cargo and the test venv on PATH and keeps the
# build cache outside the clone.
cache="${ROARINGD_CACHE:-$HOME/.cache/roaringd}"
export PATH="$HOME/.cargo/bin:$cache/venv/bin:$PATH"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"
