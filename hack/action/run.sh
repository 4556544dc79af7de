#!/usr/bin/env bash
# The action's step (action.yml): install kubectl fleet INPUT_VERSION,
# checksum verified, and run INPUT_COMMAND with a markdown report, which
# the plugin appends to $GITHUB_STEP_SUMMARY itself.
set -euo pipefail

: "${INPUT_VERSION:?version is required}" "${INPUT_COMMAND:?command is required}"
ok_codes=${INPUT_OK_EXIT_CODES:-0}
url=${INPUT_DOWNLOAD_URL:-https://github.com/kubectl-fleet/kubectl-fleet/releases/download/VERSION/ARCHIVE}
tmp=${RUNNER_TEMP:-$(mktemp -d)}
out=${GITHUB_OUTPUT:-/dev/null}

os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $os in mingw*|msys*|cygwin*) os=windows ;; esac
case $(uname -m) in x86_64|amd64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; *) echo "unsupported machine $(uname -m)" >&2; exit 1 ;; esac
ext=tar.gz; [ "$os" = windows ] && ext=zip
archive=kubectl-fleet_${os}_${arch}.${ext}
fetch() { local u=${url//VERSION/$INPUT_VERSION}; u=${u//ARCHIVE/$1}; curl -fsSL --retry 3 -o "$2" "$u"; }

dir=$tmp/kubectl-fleet-$INPUT_VERSION
mkdir -p "$dir"
fetch "$archive" "$dir/$archive"
fetch checksums.txt "$dir/checksums.txt"
want=$(awk -v a="$archive" '$2 == a {print $1}' "$dir/checksums.txt")
got=$( (sha256sum "$dir/$archive" 2>/dev/null || shasum -a 256 "$dir/$archive") | awk '{print $1}')
if [ -z "$want" ] || [ "$want" != "$got" ]; then
  echo "kubectl fleet $INPUT_VERSION: $archive has sha256 $got, checksums.txt says ${want:-nothing}: refusing it" >&2
  exit 1
fi
if [ "$ext" = zip ]; then unzip -q -o "$dir/$archive" -d "$dir/bin"; else mkdir -p "$dir/bin" && tar -xzf "$dir/$archive" -C "$dir/bin"; fi
export PATH="$dir/bin:$PATH"
[ -n "${GITHUB_PATH:-}" ] && echo "$dir/bin" >>"$GITHUB_PATH"

report=$tmp/kubectl-fleet-report.md
rm -f "$report"
reporting=()
case ${INPUT_COMMAND%% *} in diff|apply|rollback|status) reporting=(--report "$report") ;; esac
set +e
# shellcheck disable=SC2086 # the command is words, as typed
kubectl-fleet $INPUT_COMMAND "${reporting[@]}"
code=$?
set -e
echo "exit-code=$code" >>"$out"
echo "report=$report" >>"$out"

if [ "${INPUT_COMMENT:-false}" = true ] && [ -n "${PR_NUMBER:-}" ] && [ -s "$report" ]; then
  gh pr comment "$PR_NUMBER" --edit-last --create-if-none --body-file "$report" || echo "warning: could not comment on pull request $PR_NUMBER" >&2
fi
case ",$ok_codes," in *",$code,"*) exit 0 ;; esac
echo "kubectl fleet $INPUT_COMMAND: exit $code (not one of $ok_codes)" >&2
exit "$code"
