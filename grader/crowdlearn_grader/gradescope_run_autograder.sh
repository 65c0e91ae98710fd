#!/usr/bin/env bash
# Gradescope runs this for every submission, from /autograder. It always leaves
# /autograder/results/results.json. Written by crowdlearn_grader.gradescope.
ROOT=/autograder
mkdir -p "$ROOT/results"
PY=python3
[ -f "$ROOT/source/env.sh" ] && . "$ROOT/source/env.sh"
"$PY" -m crowdlearn_grader.gradescope --root "$ROOT"
if [ ! -s "$ROOT/results/results.json" ]; then
    cat > "$ROOT/results/results.json" <<'EOF'
{"score": 0, "execution_time": 0, "stdout_visibility": "hidden", "tests": [],
 "output": "This submission could not be graded: the autograder itself failed to start (see the autograder's log). Please tell your instructor; resubmitting will not help until it is fixed."}
EOF
fi
exit 0
