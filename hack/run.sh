#!/usr/bin/env bash
# run.sh is `make run`: it brings up the local environment (Temporal with its UI, a host
# cluster, the Karmada control plane and two members), starts the worker and the starter against
# it, applies the MultiClusterService example, shows the result, and keeps everything up until
# Ctrl-C, which stops it all.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=.localenv
bin=$root/bin
kubectl=$bin/kubectl
[ -x "$kubectl" ] || kubectl=kubectl

pids=()
cleanup() {
  trap - EXIT INT TERM
  echo; echo "stopping..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped."
}
trap cleanup EXIT INT TERM

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

go build -o "$bin/localenv" ./test/env/cmd/localenv
envlog=$dir.log
echo "starting the local environment (log: $envlog)..."
"$bin/localenv" -members 2 -dir "$dir" >"$envlog" 2>&1 &
pids+=($!)
wait_for 300 "the local environment" test -f "$dir/env.json" || { tail -20 "$envlog"; exit 1; }

common=(--karmada-kubeconfig "$dir/karmada.kubeconfig" --host-kubeconfig "$dir/host.kubeconfig" --log-format console)
"$bin/worker" "${common[@]}" --metrics-bind-address 127.0.0.1:9090 >"$dir/logs/worker.log" 2>&1 &
pids+=($!)
"$bin/starter" "${common[@]}" --metrics-bind-address 127.0.0.1:9091 >"$dir/logs/starter.log" 2>&1 &
pids+=($!)
wait_for 120 "the worker" ready 9090
wait_for 120 "the starter" ready 9091
echo "worker and starter are ready."

echo "applying the MultiClusterService example (deploy/examples/mcs)..."
"$kubectl" --kubeconfig "$dir/member1.kubeconfig" apply -f deploy/examples/mcs/member1.yaml >/dev/null
"$kubectl" --kubeconfig "$dir/karmada.kubeconfig" apply -f deploy/examples/mcs/controlplane.yaml >/dev/null
dispatched() {
  "$kubectl" --kubeconfig "$dir/member2.kubeconfig" -n demo get endpointslices \
    -l endpointslice.kubernetes.io/managed-by=endpointslice-dispatch-controller.karmada.io -o name | grep -q .
}
wait_for 120 "member1's endpoints in member2" dispatched

cat <<MSG

== karmadaflow is running ==
Temporal UI:        http://127.0.0.1:8233   (filter: KarmadaKind="MultiClusterService")
Worker metrics:     http://127.0.0.1:9090/metrics
Starter metrics:    http://127.0.0.1:9091/metrics
Kubeconfigs:        $dir/karmada.kubeconfig (control plane), $dir/host.kubeconfig,
                    $dir/member1.kubeconfig, $dir/member2.kubeconfig
Logs:               $dir/logs/

member1 provides service demo/foo; member2 now holds member1's endpoints:
MSG
"$kubectl" --kubeconfig "$dir/member2.kubeconfig" -n demo get endpointslices -o wide
echo
"$kubectl" --kubeconfig "$dir/karmada.kubeconfig" -n demo get mcs foo
cat <<MSG

Try:
  kubectl --kubeconfig $dir/member1.kubeconfig -n demo scale deployment foo --replicas 5
  kubectl --kubeconfig $dir/member2.kubeconfig -n demo get endpointslices -o wide
  kubectl --kubeconfig $dir/karmada.kubeconfig -n demo get mcs foo -o yaml
  bin/temporal workflow list --query 'KarmadaKind="MultiClusterService"'
  bin/temporal workflow query --workflow-id mcs/demo/foo --name state
  bin/temporal workflow signal --workflow-id mcs/demo/foo --name resync
  tctl workflow signal --workflow_id mcs/demo/foo --name resync     (the older CLI, same effect)

Ctrl-C stops everything.
MSG
wait
