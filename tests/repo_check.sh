#!/bin/sh
# The repository holds the product, not a lab notebook: no experiment
# records tracked (run logs, patch files, probe scripts), no words of work
# periods, numbered runs or issue numbers in any tracked text, and a
# docs/PERFORMANCE.md short enough to read (under 400 lines).
# usage: repo_check.sh SOURCE_DIR. Exit 0 pass, 1 fail, 77 skip (not a git
# checkout).
set -u
cd "${1:?usage: repo_check.sh source_dir}" || exit 1
command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "SKIP: not a git checkout"; exit 77; }
fails=0
records=$(git ls-files | grep -E '^docs/perf/|\.patch$|^scripts/probes/|GPU-RUNS|^docs/runs/')
if [ -n "$records" ]; then
  echo "FAIL: experiment records are tracked:"
  echo "$records" | head -20
  fails=$((fails + 1))
fi
re='\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|[a-z]+teenth|twenty[- ]?[a-z]*|[0-9]+(st|nd|rd|th)|this|last|next|earlier|previous) sessions?\b|\bcalls? [0-9]+\b|\bissues? #?[0-9]+\b|\bhelper-[0-9]+\b'
diary=$(git grep -nIiE "$re" -- . ':!*.csv' ':!tests/repo_check.sh')
if [ -n "$diary" ]; then
  echo "FAIL: words of work periods, numbered runs or issue numbers:"
  echo "$diary" | head -20
  fails=$((fails + 1))
fi
n=$(wc -l <docs/PERFORMANCE.md)
if [ "$n" -ge 400 ]; then
  echo "FAIL: docs/PERFORMANCE.md has $n lines (under 400: one current table per path)"
  fails=$((fails + 1))
fi
[ $fails -eq 0 ] || exit 1
echo "repo_check: passed ($(git ls-files | wc -l) tracked files, PERFORMANCE.md $n lines)"
