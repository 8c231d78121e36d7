// chartpilot-helm is helm v4.1.4 (the code of helm's own `cmd/helm`), plus a worker mode that
// runs helm's command tree for one call after another in a long-lived process, so that a call
// does not pay for a process start, client set-up and discovery (issue #30).
//
// With arguments, or without CHARTPILOT_HELM_WORKER=1, it IS helm: runPlain is helm's main.
// Worker mode (CHARTPILOT_HELM_WORKER=1 and no arguments) speaks the newline-delimited JSON
// protocol of README.md "Protocol" on stdin/stdout. Engine mode (CHARTPILOT_HELM_ENGINE=1 and no
// arguments; it wins over the worker) runs helm's pkg/action for concurrent calls in one process,
// README.md "Engine protocol (version 2)".
package main

import (
	"log/slog"
	"os"

	// Import to initialize client auth plugins (as helm's main does).
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	helmcmd "helm.sh/helm/v4/pkg/cmd"
	"helm.sh/helm/v4/pkg/kube"
)

// workerEnv switches a process started without arguments into worker mode.
const workerEnv = "CHARTPILOT_HELM_WORKER"

func main() {
	// As helm's main: the managedFields manager is "helm" whatever this binary is called.
	kube.ManagedFieldsManager = "helm"

	if len(os.Args) == 1 && os.Getenv(engineEnv) == "1" {
		os.Exit(serveEngine(os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 || os.Getenv(workerEnv) != "1" {
		runPlain()
		return
	}
	os.Exit(serve(os.Stdin, os.Stdout, os.Stderr))
}

// runPlain is helm v4.1.4's cmd/helm/helm.go main, unchanged.
func runPlain() {
	cmd, err := helmcmd.NewRootCmd(os.Stdout, os.Args[1:], helmcmd.SetupLogging)
	if err != nil {
		slog.Warn("command failed", slog.Any("error", err))
		os.Exit(1)
	}

	if err := cmd.Execute(); err != nil {
		if cerr, ok := err.(helmcmd.CommandError); ok {
			os.Exit(cerr.ExitCode)
		}
		os.Exit(1)
	}
}
