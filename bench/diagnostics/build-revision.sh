#!/usr/bin/env bash
# Builds another revision once, in .tmp/ab-<revision> (a git worktree sharing node_modules), and
# prints that directory; kept for the next run. Used by start-ab.sh and fast-lane-ab.sh.
#   TREE=$(bash bench/diagnostics/build-revision.sh <revision>)
set -e
cd "$(dirname "$0")/../.."
REV=$(git rev-parse --short "${1:?usage: build-revision.sh <revision>}")
TREE=.tmp/ab-$REV
if [ ! -f "$TREE/dist/bundle/main.mjs" ]; then
  rm -rf "$TREE"; git worktree prune
  git worktree add -f "$TREE" "$REV" >/dev/null
  ln -s "$PWD/node_modules" "$TREE/node_modules"
  # the embedded database's template, as this checkout's build made it (a revision without one skips it)
  mkdir -p "$TREE/dist"; cp -r dist/pglite-initdb dist/pglite-initdb.version "$TREE/dist/"
  (cd "$TREE" && npm run build >/dev/null)
fi
echo "$PWD/$TREE"
