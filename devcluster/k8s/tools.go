//go:build tools

// Package tools pins the Kubernetes control-plane commands so `go mod tidy` keeps their
// dependencies; the binaries are built from this module by devcluster/provision.sh.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
