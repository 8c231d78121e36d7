//go:build tools

// Package tools pins the control-plane commands so `go mod tidy` keeps their dependencies; the
// binaries are built from this module by devcluster/provision.sh, in one `go build`: the three
// Kubernetes commands, kwok and etcd (whose main package is its server module's root).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
