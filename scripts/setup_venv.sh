#!/usr/bin/env bash
# Sets up the project's virtualenv: made on the fastest CPython 3.11+ at hand, with the
# project, its dev tools and the `spark` extra (the Spark tests run in `make test`) installed; a no-op when it is already so.
#
# Debian's /usr/bin/python3 is built with profile-guided and link-time optimisation and links
# libpython statically; a plain source build (pyenv's default) has neither and runs the
# engine's per-event loops 15-25 % slower. $PYTHON overrides the choice. A venv made from
# another interpreter is replaced. Debian ships venv support as a package of its own:
# installed with apt-get when missing (needs root, as in CI).
set -euo pipefail
venv=${1:-.venv}
stamp=$venv/.installed

usable() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }

python=${PYTHON:-}
if [[ -z $python ]]; then
    if usable /usr/bin/python3; then python=/usr/bin/python3; else python=python3; fi
fi
usable "$python" || { echo "setup_venv: $python is not Python 3.11 or newer" >&2; exit 1; }

want=$("$python" -c 'import sys; print(sys.base_prefix, sys.version)')
if [[ -x $venv/bin/python ]]; then
    have=$("$venv/bin/python" -c 'import sys; print(sys.base_prefix, sys.version)' 2>/dev/null || true)
    if [[ $have != "$want" ]]; then
        echo "setup_venv: $venv was made from another interpreter; re-creating it from $python"
        rm -rf "$venv"
    fi
fi

if [[ ! -x $venv/bin/python ]]; then
    if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
        echo "setup_venv: installing Debian's venv support for $python"
        apt-get update -qq
        apt-get install -y -qq "python3.$("$python" -c 'import sys; print(sys.version_info[1])')-venv"
    fi
    "$python" -m venv "$venv"
    echo "setup_venv: $venv on $("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])') ($python)"
fi

if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet -e '.[dev,spark]'
    touch "$stamp"
fi
