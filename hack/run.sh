#!/usr/bin/env bash
# run.sh is `make run`: it brings up the local environment (Temporal with its UI, a host
# cluster, the Karmada control plane and two members), starts the worker (with the global
# resource proxy) and the starter against it, applies the examples of the three capabilities
# (deploy/examples: a MultiClusterService, a Karmada instance, a ResourceRegistry), shows each
# working, and keeps everything up until Ctrl-C, which stops it all.
#
# RUN_SMOKE=1 makes it a test of itself instead: after showing, it runs every command of its
# "Try" section, fails if one fails, and stops everything (test/runsmoke runs it so).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=.localenv
bin=$root/bin
kubectl=$bin/kubectl
temporal=$bin/temporal
# The temporal CLI's default address, localhost:7233, has gRPC ask the machine's DNS resolver
# for records of localhost (_grpclb._tcp, _grpc_config); the loopback address asks no one.
export TEMPORAL_ADDRESS=127.0.0.1:7233
proxy_address=127.0.0.1:10443

# The processes of this run, also written to $pidfile: a run that was killed (SIGKILL leaves
# no time to clean up) leaves them running, and the next run stops them first.
pidfile=$dir.pids
pids=()
cleanup() {
  trap - EXIT INT TERM
  echo; echo "stopping..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f "$pidfile"
  echo "stopped."
}
trap cleanup EXIT INT TERM

ours() { # ours PID: the process is alive and runs one of bin/'s binaries
  [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q "^$bin/"
}
stop_leftovers() { # the processes a killed run left behind, from its pid file
  [ -f "$pidfile" ] || return 0
  local left=()
  for pid in $(cat "$pidfile"); do ours "$pid" && left+=("$pid"); done
  if [ ${#left[@]} -gt 0 ]; then
    echo "stopping what an earlier run left running (pids ${left[*]})..."
    kill -TERM "${left[@]}" 2>/dev/null || true
    for _ in $(seq 30); do
      local alive=0
      for pid in "${left[@]}"; do ours "$pid" && alive=1; done
      [ $alive = 0 ] && break
      sleep 1
    done
    for pid in "${left[@]}"; do ours "$pid" && kill -KILL "$pid" 2>/dev/null; done
  fi
  rm -f "$pidfile"
}
started() { pids+=("$1"); echo "$1" >>"$pidfile"; } # started PID: stop it with this run

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...: fails on timeout or when a process we started exits
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "timed out waiting for $what" >&2; return 1; fi
    for pid in "${pids[@]}"; do
      kill -0 "$pid" 2>/dev/null || { echo "a process exited while waiting for $what" >&2; return 1; }
    done
    sleep 1
  done
}

ready() { # ready PORT: /readyz on 127.0.0.1:PORT answers 200 (plain bash, no curl needed)
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  local status; read -r _ status _ <&3; exec 3<&-
  [ "$status" = 200 ]
}

k() { "$kubectl" --kubeconfig "$dir/$1.kubeconfig" "${@:2}"; } # k CLUSTER ARGS...

go build -o "$bin/localenv" ./test/env/cmd/localenv
stop_leftovers
# The directory is kept after a run for its logs; its env.json describes an environment that
# is gone, so it must not be taken for the new one's before the new one writes it.
rm -f "$dir/env.json"
envlog=$dir.log
echo "starting the local environment (log: $envlog)..."
"$bin/localenv" -members 2 -dir "$dir" -keep -proxy-address "$proxy_address" >"$envlog" 2>&1 &
started $!
wait_for 300 "the local environment" test -f "$dir/env.json" || { tail -20 "$envlog"; exit 1; }

common=(--karmada-kubeconfig "$dir/karmada.kubeconfig" --host-kubeconfig "$dir/host.kubeconfig" --log-format console)
"$bin/worker" "${common[@]}" --metrics-bind-address 127.0.0.1:9090 \
  --crd-tarball-url "$(sed -n 's/.*"crdTarballURL": *"\([^"]*\)".*/\1/p' "$dir/env.json")" \
  --enable-proxy --proxy-bind-address "$proxy_address" \
  --proxy-tls-cert-file "$dir/proxy.crt" --proxy-tls-key-file "$dir/proxy.key" >"$dir/logs/worker.log" 2>&1 &
started $!
"$bin/starter" "${common[@]}" --metrics-bind-address 127.0.0.1:9091 >"$dir/logs/starter.log" 2>&1 &
started $!
wait_for 120 "the worker" ready 9090
wait_for 120 "the starter" ready 9091
echo "worker and starter are ready."

echo "applying the examples (deploy/examples)..."
k member1 apply -f deploy/examples/mcs/member1.yaml >/dev/null
k karmada apply -f deploy/examples/mcs/controlplane.yaml >/dev/null
k host apply --server-side -f deploy/examples/karmada/karmada.yaml >/dev/null
k karmada apply -f deploy/examples/proxy/resourceregistry.yaml >/dev/null

# join_member NAME: member NAME joins the Karmada instance tenant1/demo in Push mode, as
# `karmadactl join` registers it: its credentials in Secrets of karmada-cluster (keys token and
# caBundle, and the impersonator's token), and a Cluster naming them.
join_member() {
  local member=$1 view=(config view --raw --minify -o)
  local server token
  server=$(k "$member" "${view[@]}" jsonpath='{.clusters[0].cluster.server}')
  token=$(k "$member" "${view[@]}" jsonpath='{.users[0].user.token}')
  k demo-karmada create namespace karmada-cluster --dry-run=client -o yaml | k demo-karmada apply -f - >/dev/null
  for secret in "$member" "$member-impersonator"; do
    k demo-karmada -n karmada-cluster create secret generic "$secret" --dry-run=client -o yaml \
      --from-file=token=<(printf %s "$token") \
      --from-file=caBundle=<(k "$member" "${view[@]}" jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d) |
      k demo-karmada apply -f - >/dev/null
  done
  k demo-karmada apply -f - >/dev/null <<CLUSTER
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: $member
spec:
  syncMode: Push
  apiEndpoint: $server
  secretRef: {namespace: karmada-cluster, name: $member}
  impersonatorSecretRef: {namespace: karmada-cluster, name: $member-impersonator}
CLUSTER
}
member_ready() {
  [ "$(k demo-karmada get cluster "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
dispatched() {
  k member2 -n demo get endpointslices \
    -l endpointslice.kubernetes.io/managed-by=endpointslice-dispatch-controller.karmada.io -o name | grep -q .
}
karmada_ready() {
  [ "$(k host -n tenant1 get karmada demo -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
proxied() { # the proxy lists pods of member1 (the example's Deployment)
  k proxy get pods -A -o name | grep -q '^pod/foo-'
}
wait_for 120 "member1's endpoints in member2" dispatched
wait_for 60 "pods of the members through the proxy" proxied
wait_for 240 "the Karmada instance tenant1/demo to be Ready" karmada_ready
k host -n tenant1 get secret demo-karmada-admin-config -o jsonpath='{.data.kubeconfig}' | base64 -d >"$dir/demo-karmada.kubeconfig"
chmod 600 "$dir/demo-karmada.kubeconfig"
# Ready means karmada-webhook's pod is ready; the instance's API server may not resolve its
# Service's name for a few seconds more (here names resolve through hosts files the pod runner
# rewrites, which Go's resolver reads again at most every 5 s), and until then it refuses
# every policy. The apply is tried again until it goes through.
wait_for 60 "the example's PropagationPolicy to pass karmada-webhook" \
  k demo-karmada apply -f deploy/examples/karmada/propagation.yaml
join_member member1
wait_for 120 "Karmada's cluster status controller to mark member1 Ready" member_ready member1
wait_for 120 "the Deployment karmada-demo/hello propagated into member1" k member1 -n karmada-demo get deployment hello

cat <<MSG

== karmadaflow is running ==
Temporal UI:        http://127.0.0.1:8233
Worker metrics:     http://127.0.0.1:9090/metrics
Starter metrics:    http://127.0.0.1:9091/metrics
Global proxy:       https://$proxy_address/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy
Kubeconfigs:        $dir/karmada.kubeconfig (control plane), $dir/host.kubeconfig,
                    $dir/member1.kubeconfig, $dir/member2.kubeconfig,
                    $dir/proxy.kubeconfig (the control plane through the proxy),
                    $dir/demo-karmada.kubeconfig (the Karmada instance tenant1/demo)
Logs:               $dir/logs/

1. MultiClusterService: member1 provides service demo/foo; member2 now holds member1's endpoints:
MSG
k member2 -n demo get endpointslices -o wide
echo
k karmada -n demo get mcs foo
echo
echo "2. Karmada provisioning: tenant1/demo in the host cluster is Ready; its API server Service:"
k host -n tenant1 get karmada demo
k host -n tenant1 get karmada demo -o jsonpath='   status.apiServerService: {.status.apiServerService}{"\n"}'
echo "   every component runs, played from its manifest by the environment's pod runner:"
k host -n tenant1 get deployments,statefulsets
echo "   the new control plane, through its admin kubeconfig: member1 joined, Ready by Karmada's own"
echo "   cluster status controller, and a PropagationPolicy brought karmada-demo/hello into member1:"
k demo-karmada get clusters
k demo-karmada -n karmada-demo get propagationpolicy,resourcebinding
k member1 -n karmada-demo get deployment hello
echo
echo "3. Global resource proxy: pods of every member, each with the cluster it came from:"
k proxy get pods -A -o 'custom-columns=CLUSTER:.metadata.annotations.resource\.karmada\.io/cached-from-cluster,NAMESPACE:.metadata.namespace,NAME:.metadata.name'

# The Try section: printed for the user, and run one by one under RUN_SMOKE=1.
try=(
  "$kubectl --kubeconfig $dir/member1.kubeconfig -n demo scale deployment foo --replicas 5"
  "$kubectl --kubeconfig $dir/member2.kubeconfig -n demo get endpointslices -o wide"
  "$kubectl --kubeconfig $dir/karmada.kubeconfig -n demo get mcs foo -o yaml"
  "$temporal workflow list --query 'KarmadaKind=\"MultiClusterService\"'"
  "$temporal workflow query --workflow-id mcs/demo/foo --name state"
  "$temporal workflow signal --workflow-id mcs/demo/foo --name resync"
  "$kubectl --kubeconfig $dir/host.kubeconfig -n tenant1 get karmada demo -o yaml"
  "$kubectl --kubeconfig $dir/demo-karmada.kubeconfig get crds"
  "$kubectl --kubeconfig $dir/demo-karmada.kubeconfig get --raw /apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy/apis/apps/v1/namespaces/karmada-demo/deployments/hello"
  "$temporal workflow list --query 'KarmadaKind=\"Karmada\"'"
  "$temporal workflow query --workflow-id karmada/tenant1/demo --name state"
  "$kubectl --kubeconfig $dir/proxy.kubeconfig get pods -A"
  "$kubectl --kubeconfig $dir/proxy.kubeconfig get deployments -A"
  "$kubectl --kubeconfig $dir/proxy.kubeconfig get resourceregistries"
)
echo
echo "Try (the temporal commands after: export TEMPORAL_ADDRESS=$TEMPORAL_ADDRESS):"
for cmd in "${try[@]}"; do echo "  ${cmd//$root\//}"; done
cat <<MSG
  tctl workflow signal --workflow_id mcs/demo/foo --name resync     (the older CLI, same effect)

In the Temporal UI (http://127.0.0.1:8233), filter runs with:
  KarmadaKind="MultiClusterService"             every MultiClusterService
  KarmadaKind="Karmada" AND KarmadaName="demo"  the install of tenant1/demo
  KarmadaKind="Cluster" AND KarmadaCluster="member1"   health of member1
  KarmadaKind="WorkExecution"                   Work execution of each member
  ReconcilePhase="Degraded"                     whatever is not converged

Ctrl-C stops everything.
MSG

if [ "${RUN_SMOKE:-}" = 1 ]; then
  echo; echo "== RUN_SMOKE: running every Try command =="
  for cmd in "${try[@]}"; do
    echo "+ ${cmd//$root\//}"
    eval "$cmd"
  done
  echo "== RUN_SMOKE: all Try commands succeeded =="
  exit 0
fi
wait
