# Pinned versions of every tool the project builds into bin/. This is the one place they live:
# `make tools` passes them to the build and checks hack/tools/go.mod against them.
KUBERNETES_VERSION     := v1.36.3
ETCD_VERSION           := v3.6.8
KWOK_VERSION           := v0.8.0
TEMPORAL_CLI_VERSION   := v1.5.1
# The SQLite driver the dev server (module hack/tools/devserver) is built with, newer than the
# CLI's own: v1.34.1 can leave the dev server's database interrupted for good after a cancelled
# request (hack/tools/devserver/tools.go). The one hack/tools/temporal resolves, so that both
# builds share its compiled packages.
TEMPORAL_DEV_SQLITE_VERSION := v1.51.0
# The Temporal server, its SQL schema tool and the Web UI server (module hack/tools/temporal).
TEMPORAL_SERVER_VERSION    := v1.32.1
TEMPORAL_UI_SERVER_VERSION := v2.55.0
# Helm renders and lints deploy/charts (its own module graph: go install, Kubernetes v0.37).
HELM_VERSION           := v3.22.0
# apiserver-network-proxy's proxy-server and proxy-agent (module hack/tools/networkproxy): test/proxye2e
# reaches a member in Pull mode through them, as Karmada does.
NETWORK_PROXY_VERSION  := v0.36.0
CONTROLLER_GEN_VERSION := v0.20.1
WORKFLOWCHECK_VERSION  := v0.6.0
# Image builds (make images): ko builds the images, crane the base image and the loopback
# registry ko reads it from.
KO_VERSION             := v0.19.1
CRANE_VERSION          := v0.22.1
# promtool checks and unit-tests the alert rules (`make monitoring-check`); installed with
# `go install pkg@version`, so its dependencies never touch hack/tools/go.mod. The tag leaves
# out the service-discovery plugins, which promtool's rule checks do not use.
PROMETHEUS_VERSION     := v0.316.0
# Upstream Karmada, built from source (no module proxy serves it): the components that tests
# run beside karmadaflow and inside the control planes it provisions. The source tarball is
# found through KARMADA_SRC (default ../shared/karmada) and checked against its checksum; a
# Karmada checkout of the same commit may be named instead.
KARMADA_COMMIT          := f8fdd02
KARMADA_VERSION         := v1.19.0-rc.0
KARMADA_SOURCE_CHECKSUM := b9f12012f217cc7311eec9249021e73d91f1288f2f50e0c1a0ad0f4070c22335
