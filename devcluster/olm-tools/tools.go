//go:build tools

// Package tools pins the Operator Framework commands the OLM tests run, so `go mod tidy` keeps
// their dependencies; devcluster/provision.sh builds them from this one module in one `go build`,
// so the Kubernetes libraries they share compile once.
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
	_ "github.com/operator-framework/operator-registry/cmd/opm"
)
