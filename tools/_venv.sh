# Sourced by tools/serve and tools/test: make .venv (Python >= 3.11) and install the project into it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python=""
for candidate in python3.11 python3.12 python3.13 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    python="$candidate"; break
  fi
done
[ -n "$python" ] || { echo "fdb-leaderboard needs Python 3.11 or newer" >&2; exit 1; }
if [ ! -x .venv/bin/python ]; then
  if ! "$python" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "installing Debian's venv support for $python" >&2
      apt-get update -qq && apt-get install -y -qq "$(basename "$python")-venv" || apt-get install -y -qq python3-venv
      "$python" -m venv .venv
    else
      echo "cannot create a virtual environment: install python3-venv (Debian) and retry" >&2; exit 1
    fi
  fi
fi
stamp=".venv/.installed-$1"
# Reinstalled when pyproject.toml or a C extension's source changed (an editable install
# builds the extensions in place).
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ -n "$(find fdb_leaderboard -name '*.c' -newer "$stamp")" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  if [ "$1" = dev ]; then .venv/bin/python -m pip install -q -e '.[dev]'; else .venv/bin/python -m pip install -q -e .; fi
  touch "$stamp"
fi
# The FoundationDB binding must match the client library (major.minor): when one is found
# (LD_LIBRARY_PATH or the system's), install the matching binding, e.g. 7.3.* for a 7.3 client.
binding=$(.venv/bin/python tools/dev/fdb_binding.py)
if [ -n "$binding" ]; then
  echo "installing $binding to match the FoundationDB client library" >&2
  .venv/bin/python -m pip install -q "$binding"
fi
