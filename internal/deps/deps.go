//go:build tools

// Package deps pins the libraries the project's design requires, so the module keeps them
// while capability code that uses them is written.
package deps

import (
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/stretchr/testify/require"
	_ "go.opentelemetry.io/otel/exporters/prometheus"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/contrib/opentelemetry"
	_ "go.uber.org/zap"
	_ "go.uber.org/zap/exp/zapslog"
	_ "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	_ "k8s.io/client-go/dynamic"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "sigs.k8s.io/yaml"
)
