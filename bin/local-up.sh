#!/usr/bin/env bash
# A local levers9 on k3d, all on its own: a k3d cluster with a local
# registry, the images built and imported, the chart installed with
# deploy/k3d/values.yaml (Postgres and Redis in the release, worker Jobs
# for the pools) and a bootstrap secret, the first admin token fetched into
# the CLI config (context "k3d"), the dashboard deployed with a token of its
# own, and at the end one function run on a worker pod:
# `levers9 run examples/hello.py::hello`.
#
#   bin/local-up.sh          # create or update
#   bin/local-up.sh --down   # delete the cluster and the registry
#
# Needs docker, k3d (v5), kubectl, helm, cargo and Python 3.11+. Safe to
# run again: it reuses the cluster, the registry, the bootstrap secret, a
# CLI context that still works and the dashboard's token and session
# secret. Postgres keeps its data on a volume, so the install survives a
# restart of its pods. A cluster made by an older local-up.sh lacks the
# dashboard's ports (3000, 8080): start afresh with --down.
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
# The dashboard as this machine's browser reaches it.
dashboard_url=http://localhost:3000
dashboard_api=http://localhost:8080/api

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
  cargo build --release -p levers9-cli --bin levers9
fi

# Secrets pass through files in here (never through arguments, which any
# user can read in the process list).
umask 077
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
  # balancer, as plain gRPC and HTTP (TLS is only for the public endpoint);
  # 3000 and 8080 the dashboard's web app and API.
  k3d cluster create "$cluster" --wait \
    --registry-use "$registry_in_cluster" \
    -p "1993:1993@loadbalancer" -p "1994:1994@loadbalancer" \
    -p "3000:3000@loadbalancer" -p "8080:8080@loadbalancer"
fi
kubectl config use-context "k3d-$cluster" >/dev/null

# --- images -----------------------------------------------------------------
say "building images"
for image in controlplane worker dashboard-api; do
  docker build -q -f "docker/$image.Dockerfile" -t "levers9/$image:$tag" . >/dev/null
done
# The web app's security policy names the API it talks to.
docker build -q -f docker/dashboard-web.Dockerfile --build-arg "NEXT_PUBLIC_API_BASE=$dashboard_api" \
  -t "levers9/dashboard-web:$tag" . >/dev/null
k3d image import -c "$cluster" "levers9/controlplane:$tag" "levers9/worker:$tag" \
  "levers9/dashboard-api:$tag" "levers9/dashboard-web:$tag"
# Functions pull the base image by digest from a registry, so it goes to the
# local registry rather than into the nodes.
docker build -q -f docker/runner.Dockerfile -t "$registry_on_host/levers9/python:3.11" . >/dev/null
docker push -q "$registry_on_host/levers9/python:3.11" >/dev/null

# --- bootstrap secret -------------------------------------------------------
kubectl create namespace "$namespace" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
if ! bootstrap=$(kubectl -n "$namespace" get secret levers9-bootstrap -o jsonpath='{.data.secret}' 2>/dev/null) ||
  [ -z "$bootstrap" ]; then
  say "creating the bootstrap secret"
  head -c 32 /dev/urandom | base64 | tr -d '/+=\n' >"$work/bootstrap"
  kubectl -n "$namespace" create secret generic levers9-bootstrap \
    --from-file=secret="$work/bootstrap" >/dev/null
  bootstrap=$(kubectl -n "$namespace" get secret levers9-bootstrap -o jsonpath='{.data.secret}')
fi
bootstrap=$(printf '%s' "$bootstrap" | base64 -d)

# --- chart --------------------------------------------------------------------
# deploy/k3d/values.yaml: images, Postgres and Redis in the release (their
# passwords generated into the levers9-database Secret), worker Jobs, and
# the registry on plain HTTP (config.worker.insecureRegistries: the worker
# Jobs get --insecure-registry for it).
say "installing the chart"
helm upgrade --install levers9 deploy/charts/levers9 --namespace "$namespace" \
  -f deploy/k3d/values.yaml \
  --set "config.worker.imageRegistry=$registry_in_cluster/levers9/images" \
  --set "config.imageService.runner.baseImageRegistry=$registry_in_cluster" \
  --set "config.worker.insecureRegistries={$registry_in_cluster}" \
  --wait --timeout 5m

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
# --- dashboard -------------------------------------------------------------------
# Its settings (docs/dashboard.md): a token of its own, the URLs, a session
# secret, and the development sign-in. A token and session secret it already
# has are kept, so a rerun signs nobody out.
dashboard_env() {
  kubectl -n "$namespace" get secret levers9-dashboard-env -o jsonpath="{.data.$1}" 2>/dev/null | base64 -d
}
dashboard_token=$(dashboard_env LEVERS9_TOKEN || true)
if [ -z "$dashboard_token" ]; then
  say "creating the dashboard's token"
  dashboard_token=$("$levers9" --context "$context" token create --description dashboard)
fi
session_secret=$(dashboard_env LEVERS9_DASHBOARD_SESSION_SECRET || true)
[ -n "$session_secret" ] || session_secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$work/dashboard.env" <<ENV
LEVERS9_TOKEN=$dashboard_token
LEVERS9_CONTROLPLANE_HOST=levers9-controlplane
LEVERS9_CONTROLPLANE_PORT=1993
LEVERS9_DASHBOARD_URL=$dashboard_url
LEVERS9_DASHBOARD_API_URL=$dashboard_api
LEVERS9_DASHBOARD_SESSION_SECRET=$session_secret
LEVERS9_DASHBOARD_DEV_SIGNIN=true
ENV
kubectl -n "$namespace" create secret generic levers9-dashboard-env \
  --from-env-file="$work/dashboard.env" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
say "deploying the dashboard"
kubectl apply -f deploy/k3d/dashboard.yaml >/dev/null
# envFrom is read at start: restart so a changed secret takes effect.
kubectl -n "$namespace" rollout restart deployment/levers9-dashboard-api >/dev/null
kubectl -n "$namespace" rollout status deployment/levers9-dashboard-api --timeout=3m >/dev/null
kubectl -n "$namespace" rollout status deployment/levers9-dashboard-web --timeout=3m >/dev/null

# --- a function on a worker ------------------------------------------------------
# The pools scale from zero: this call makes the controlplane start a worker
# Job, which pulls the runner image from the local registry and runs it.
venv=.tmp/local-up-venv
if ! "$venv/bin/python" -c 'import levers9' 2>/dev/null; then
  say "installing the Python SDK into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q ./sdk/python
fi
say "running examples/hello.py::hello on a worker pod (the first start takes a while)"
LEVERS9_PYTHON=$venv/bin/python timeout 600 "$levers9" --context "$context" run examples/hello.py::hello k3d ||
  die "the function did not run: kubectl -n $namespace get jobs,pods -l app.kubernetes.io/name=levers9-worker; kubectl -n $namespace logs deploy/levers9-controlplane"

say "ready: controlplane on localhost:1993 (gRPC) and :1994 (HTTP), CLI context $context;" \
  "dashboard on $dashboard_url (development sign-in: any email)"
"$levers9" --context "$context" workspace show
