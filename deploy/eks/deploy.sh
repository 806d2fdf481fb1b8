#!/usr/bin/env bash
# Installs or upgrades levers9 on the EKS cluster with deploy/eks/values.yaml.
#   deploy/eks/deploy.sh [extra helm flags...]
#   deploy/eks/deploy.sh --set images.controlplane.tag=sha-1a2b3c4-41-1 --atomic
#
# The S3 keys never enter the tree or the process list: they are read from
# files under ~/.levers9, written to a temporary values file only this user
# can read, handed to helm with -f, and the file is removed when the script
# ends, whether helm succeeded, failed or was interrupted.
#
# A key file holds two lines (other lines are ignored):
#   AWS_ACCESS_KEY_ID=AKIA...
#   AWS_SECRET_ACCESS_KEY=...
# ~/.levers9/s3-keys serves every job. To give a job its own key, name its
# file (under ~/.levers9, or an absolute path):
#   LEVERS9_JUICEFS_KEYS    JuiceFS volumes
#   LEVERS9_WORKSPACE_KEYS  workspace storage (code and SDK zips)
# Built images take no S3 key: they are pushed to the registry
# (config.worker.imageRegistry) with the controlplane's own ECR role, so
# LEVERS9_IMAGES_KEYS is ignored, with a warning.
# ~/.levers9/eks-secrets.yaml (LEVERS9_SECRET_VALUES), when present, is
# passed to helm too: database passwords and the encryption key go there.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
chart=$here/../charts/levers9
keys_dir=$HOME/.levers9
release=${LEVERS9_RELEASE:-levers9}
namespace=${LEVERS9_NAMESPACE:-levers9}
secret_values=${LEVERS9_SECRET_VALUES:-$keys_dir/eks-secrets.yaml}
helm=${HELM:-helm}

die() {
  echo "deploy.sh: $*" >&2
  exit 1
}

# Resolves a key file name: absolute, or relative to ~/.levers9.
key_file() {
  local name=$1
  case $name in
    /*) printf '%s\n' "$name" ;;
    *) printf '%s\n' "$keys_dir/$name" ;;
  esac
}

warn_if_readable_by_others() {
  local file=$1 mode
  mode=$(stat -c %a "$file")
  if [ $((8#$mode & 8#077)) -ne 0 ]; then
    echo "deploy.sh: warning: $file is readable by others (mode $mode): chmod 600 it" >&2
  fi
}

# Prints one field of a key file. The file is parsed, never sourced, so a
# key file cannot run code.
key_field() {
  local file=$1 field=$2 value
  value=$(sed -n "s/^[[:space:]]*${field}[[:space:]]*=[[:space:]]*//p" "$file" | tail -n 1 | tr -d '\r"'"'")
  [ -n "$value" ] || die "$file has no $field= line"
  # S3 keys are base64-ish; anything else is a broken file, and refusing it
  # also means the value needs no quoting in YAML.
  [[ $value =~ ^[A-Za-z0-9/+=._-]+$ ]] || die "$file: $field has characters an S3 key does not have"
  printf '%s\n' "$value"
}

[ -d "$chart" ] || die "no chart at $chart"
command -v "$helm" >/dev/null || die "helm is not on PATH"

umask 077
values=$(mktemp "${TMPDIR:-/tmp}/levers9-deploy.XXXXXXXX")
cleanup() { rm -f "$values"; }
trap cleanup EXIT
# A signal ends the script through exit, so the EXIT trap still runs.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

if [ -n "${LEVERS9_IMAGES_KEYS:-}" ]; then
  echo "deploy.sh: warning: LEVERS9_IMAGES_KEYS is ignored: built images go to the registry with the controlplane's ECR role, not to S3" >&2
fi
echo "storageKeys:" >"$values"
for job in juicefs workspace; do
  var=LEVERS9_${job^^}_KEYS
  file=$(key_file "${!var:-s3-keys}")
  [ -f "$file" ] || die "no S3 key file for $job: $file (set $var, or create ~/.levers9/s3-keys)"
  warn_if_readable_by_others "$file"
  id=$(key_field "$file" AWS_ACCESS_KEY_ID)
  secret=$(key_field "$file" AWS_SECRET_ACCESS_KEY)
  printf '  %s:\n    accessKeyId: "%s"\n    secretAccessKey: "%s"\n' "$job" "$id" "$secret" >>"$values"
done

extra_values=()
if [ -f "$secret_values" ]; then
  warn_if_readable_by_others "$secret_values"
  extra_values=(-f "$secret_values")
fi

# Not exec: the EXIT trap has to run after helm to remove the keys.
"$helm" upgrade --install "$release" "$chart" \
  --namespace "$namespace" --create-namespace \
  -f "$here/values.yaml" "${extra_values[@]}" -f "$values" \
  "$@"
