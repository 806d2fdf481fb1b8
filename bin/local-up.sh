#!/usr/bin/env bash
# A local levers9 on k3d, all on its own: a k3d cluster with a local
# registry, the images built and imported, the chart installed with a
# bootstrap secret, and the first admin token fetched into the CLI config
# (context "k3d") and into the levers9-dashboard-env secret.
#
#   bin/local-up.sh          # create or update
#   bin/local-up.sh --down   # delete the cluster and the registry
#
# Needs docker, k3d (v5), kubectl, helm, cargo and Python 3.11+. Safe to
# run again: it reuses the cluster, the registry, the bootstrap secret and a
# CLI context that still works. The controlplane runs on the embedded state (SQLite in the
# pod), so deleting its pod starts an empty install.
set -euo pipefail
cd "$(dirname "$0")/.."

cluster=${LEVERS9_K3D_CLUSTER:-levers9}
registry_name="levers9-registry.localhost"
registry_port=${LEVERS9_K3D_REGISTRY_PORT:-5111}
# The registry as pods see it, and as this machine sees it.
registry_in_cluster=k3d-$registry_name:$registry_port
registry_on_host=localhost:$registry_port
namespace=levers9
context=k3d
tag=dev
levers9=${LEVERS9_BIN:-target/release/levers9}

say() { echo "local-up: $*" >&2; }
die() {
  say "$*"
  exit 1
}

if [ "${1:-}" = --down ]; then
  k3d cluster delete "$cluster" || true
  k3d registry delete "k3d-$registry_name" || true
  say "deleted; the CLI context $context is left in ~/.levers9/config.toml (levers9 config delete $context)"
  exit 0
fi

for tool in docker k3d kubectl helm python3; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
if [ ! -x "$levers9" ]; then
  say "building the levers9 CLI"
  cargo build --release -p levers9-cli
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- cluster and registry ---------------------------------------------------
if ! k3d registry get "k3d-$registry_name" >/dev/null 2>&1; then
  say "creating registry $registry_on_host"
  k3d registry create "$registry_name" --port "$registry_port"
fi
if ! k3d cluster get "$cluster" >/dev/null 2>&1; then
  say "creating cluster $cluster"
  # 1993/1994 on this machine reach the controlplane through k3d's load
  # balancer, as plain gRPC and HTTP (TLS is only for the public endpoint).
  k3d cluster create "$cluster" --wait \
    --registry-use "$registry_in_cluster" \
    -p "1993:1993@loadbalancer" -p "1994:1994@loadbalancer"
fi
kubectl config use-context "k3d-$cluster" >/dev/null

# --- images -----------------------------------------------------------------
say "building images"
for image in controlplane worker; do
  docker build -q -f "docker/$image.Dockerfile" -t "levers9/$image:$tag" . >/dev/null
done
k3d image import -c "$cluster" "levers9/controlplane:$tag" "levers9/worker:$tag"
# Functions pull the base image by digest from a registry, so it goes to the
# local registry rather than into the nodes.
docker build -q -f docker/runner.Dockerfile -t "$registry_on_host/levers9/python:3.11" . >/dev/null
docker push -q "$registry_on_host/levers9/python:3.11" >/dev/null

# --- bootstrap secret -------------------------------------------------------
kubectl create namespace "$namespace" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
if ! bootstrap=$(kubectl -n "$namespace" get secret levers9-bootstrap -o jsonpath='{.data.secret}' 2>/dev/null) ||
  [ -z "$bootstrap" ]; then
  say "creating the bootstrap secret"
  kubectl -n "$namespace" create secret generic levers9-bootstrap \
    --from-literal=secret="$(head -c 32 /dev/urandom | base64 | tr -d '/+=')" >/dev/null
  bootstrap=$(kubectl -n "$namespace" get secret levers9-bootstrap -o jsonpath='{.data.secret}')
fi
bootstrap=$(printf '%s' "$bootstrap" | base64 -d)

# --- chart --------------------------------------------------------------------
cat >"$work/values.yaml" <<VALUES
images:
  controlplane: {repository: levers9/controlplane, tag: $tag, pullPolicy: Never}
  worker: {repository: levers9/worker, tag: $tag}
# k3d has no device plugin for /dev/fuse; the default (privileged) is fine here.
controlplane:
  resources: {requests: {cpu: 100m, memory: 128Mi}}
rbac:
  legacyClusterWide: false
config:
  worker:
    imageRegistry: $registry_in_cluster/levers9/images
  imageService:
    runner:
      baseImageRegistry: $registry_in_cluster
VALUES
say "installing the chart"
helm upgrade --install levers9 deploy/charts/levers9 --namespace "$namespace" \
  -f "$work/values.yaml" --wait --timeout 5m

# The chart's Service is a ClusterIP; this one is what k3d's load balancer
# forwards 1993/1994 to.
kubectl apply -f - >/dev/null <<SERVICE
apiVersion: v1
kind: Service
metadata:
  name: levers9-controlplane-local
  namespace: $namespace
spec:
  type: LoadBalancer
  selector:
    app.kubernetes.io/name: levers9
    app.kubernetes.io/component: controlplane
  ports:
    - {name: grpc, port: 1993, targetPort: grpc}
    - {name: http, port: 1994, targetPort: http}
SERVICE
say "waiting for the controlplane on localhost:1994"
for _ in $(seq 1 60); do
  curl -fsS http://localhost:1994/readyz >/dev/null 2>&1 && break
  sleep 2
done
curl -fsS http://localhost:1994/readyz >/dev/null || die "the controlplane is not ready: kubectl -n $namespace logs deploy/levers9-controlplane"

# --- first token ----------------------------------------------------------------
if "$levers9" --context "$context" workspace show >/dev/null 2>&1; then
  say "the CLI context $context still works; keeping its token"
else
  say "fetching the first admin token"
  # An empty token with the bootstrap secret set asks for the first admin
  # token; it only works while the install has no workspace.
  printf '\n' | LEVERS9_BOOTSTRAP_SECRET=$bootstrap \
    "$levers9" config create "$context" --host localhost --port 1993 ||
    die "bootstrap refused: the install already has a workspace. Start afresh with bin/local-up.sh --down"
fi
token=$(python3 - "$context" <<'PY'
import pathlib, sys, tomllib
config = tomllib.loads((pathlib.Path.home() / ".levers9" / "config.toml").read_text())
print(config["contexts"][sys.argv[1]]["token"])
PY
)
# The dashboard reads its token from here; plain gRPC to the in-cluster name.
kubectl -n "$namespace" create secret generic levers9-dashboard-env \
  --from-literal=LEVERS9_TOKEN="$token" \
  --from-literal=LEVERS9_CONTROLPLANE_HOST=levers9-controlplane \
  --from-literal=LEVERS9_CONTROLPLANE_PORT=1993 \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null

say "ready: controlplane on localhost:1993 (gRPC) and :1994 (HTTP), CLI context $context"
"$levers9" --context "$context" workspace show
