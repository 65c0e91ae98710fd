#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image; the zip is
# unpacked in /autograder/source. Written by crowdlearn_grader.gradescope.
set -euo pipefail
SRC="$(cd "$(dirname "$0")" && pwd)"
cd "$SRC"
WHEEL="$(ls wheels/crowdlearn-*.whl)"
CHECKS="$(ls wheels/crowdlearn_checks-*.whl)"
GRADER="$(ls wheels/crowdlearn_grader-*.whl)"
if [ "${CROWDLEARN_GRADESCOPE_OFFLINE:-0}" = 1 ]; then
    # no apt, no package index: the interpreter already has the dependencies
    PY="${CROWDLEARN_GRADESCOPE_PYTHON:-python3}"
    "$PY" -m pip install --quiet --no-deps --no-index --target "$SRC/lib" "$WHEEL" "$CHECKS" "$GRADER"
    printf 'PY=%q\nexport PYTHONPATH=%q\n' "$PY" "$SRC/lib" > "$SRC/env.sh"
else
    export DEBIAN_FRONTEND=noninteractive
    LOCK="__LOCK_PYTHON__"   # the Python of requirements.lock
    version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
    BASE=python3
    command -v "python$LOCK" >/dev/null 2>&1 && BASE="python$LOCK"
    NEED=""
    command -v bwrap >/dev/null 2>&1 || NEED="bubblewrap"
    if [ -n "$NEED" ] || [ "$(version "$BASE")" != "$LOCK" ] \
            || ! "$BASE" -c 'import ensurepip' >/dev/null 2>&1; then
        apt-get update -q
        if [ "$(version "$BASE")" != "$LOCK" ] \
                && apt-cache show "python$LOCK-venv" >/dev/null 2>&1; then
            NEED="$NEED python$LOCK python$LOCK-venv"; BASE="python$LOCK"
        elif ! "$BASE" -c 'import ensurepip' >/dev/null 2>&1; then
            NEED="$NEED python3-venv"
        fi
        [ -z "$NEED" ] || apt-get install -y -q --no-install-recommends $NEED
    fi
    "$BASE" -m venv /autograder/venv
    PY=/autograder/venv/bin/python
    "$PY" -m pip install --quiet --upgrade pip
    PIN=""
    if [ "$(version "$PY")" = "$LOCK" ]; then PIN="-c constraints.txt"; else
        echo "Python $(version "$PY"), not $LOCK: installing without the pinned versions"; fi
    "$PY" -m pip install --quiet $PIN "crowdlearn[book] @ file://$SRC/$WHEEL" \
        "crowdlearn-checks @ file://$SRC/$CHECKS" "crowdlearn-grader @ file://$SRC/$GRADER"
    printf 'PY=%q\n' "$PY" > "$SRC/env.sh"
fi
. "$SRC/env.sh"
"$PY" -c 'import crowdlearn_grader.gradescope, nbclient, nbgrader; print("grader imports")'
"$PY" -c 'from crowdlearn_grader.sandbox import check_sandbox as c; print("sandbox:", c())' \
    || echo "sandbox: bubblewrap cannot run here (see config.json's sandbox mode)"
