// Command bundle-validate checks an OLM bundle directory as `operator-sdk bundle validate <dir>`
// v1.42 does (the same operator-registry format check, the same operator-framework/api content
// validators, the same optional validators and selector labels), without building operator-sdk:
// it links only libraries opm already compiles in this module, so CI pays for a link, not for a
// second Kubernetes build. Directories only (no images).
//
// Usage: bundle-validate <bundle dir> [--select-optional <selector>] [--optional-values k=v,...]
// Findings go to stdout as logrus lines (level=warning / level=error); exit 1 on any error.
package main

import (
	"fmt"
	"io"
	"os"

	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	flags := pflag.NewFlagSet("bundle-validate", pflag.ContinueOnError)
	flags.SetOutput(stderr)
	selectRaw := flags.String("select-optional", "", "label selector of optional validators: suite=operatorframework, or name=<validator>")
	values := flags.StringToString("optional-values", map[string]string{}, "values for the optional validators, e.g. k8s-version=1.30")
	flags.Usage = func() {
		fmt.Fprintf(stderr, "usage: bundle-validate <bundle dir> [--select-optional suite=operatorframework] [--optional-values k8s-version=1.30]\n"+
			"optional validators: %s\n%s", validatorNames(), flags.FlagUsages())
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 1 {
		fmt.Fprintf(stderr, "bundle-validate: give exactly one bundle directory (the one holding manifests/ and metadata/), got %d arguments\n", flags.NArg())
		flags.Usage()
		return 2
	}
	sel, err := selectOptional(*selectRaw)
	if err != nil {
		fmt.Fprintf(stderr, "bundle-validate: %v\n", err)
		return 2
	}
	dir := flags.Arg(0)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		fmt.Fprintf(stderr, "bundle-validate: %s is not a directory: give a bundle directory (bundle images are not supported; unpack one first)\n", dir)
		return 2
	}

	loaded, err := loadBundle(dir)
	if err != nil {
		// A fatal line, as operator-sdk prints when it cannot load a bundle.
		logTo(stderr).Log(logrus.FatalLevel, fmt.Sprintf("cannot read the bundle in %s: %v; give the directory that holds manifests/ and metadata/ (chartpilot generate bundle writes one)", dir, err))
		return 1
	}
	out := newReport(stdout)
	for _, msg := range formatErrors(dir) {
		out.error(msg)
	}
	out.add(contentResults(loaded))
	out.add(optionalResults(loaded, sel, *values))
	if out.failed {
		return 1
	}
	logTo(stderr).Info("All validation tests have completed successfully")
	return 0
}

// report prints findings as operator-sdk's text output does (logrus lines), warnings before errors
// within each result, and remembers whether any was an error.
type report struct {
	log    *logrus.Logger
	failed bool
}

func newReport(w io.Writer) *report {
	return &report{log: logTo(w)}
}

func (r *report) error(msg string) {
	r.log.Error(msg)
	r.failed = true
}

func (r *report) add(results []apierrors.ManifestResult) {
	for _, res := range results {
		for _, w := range res.Warnings {
			r.log.Warn(w.Error())
		}
		for _, e := range res.Errors {
			r.error(e.Error())
		}
	}
}

// logTo is a logger writing operator-sdk's line format (logrus text) to w.
func logTo(w io.Writer) *logrus.Logger {
	l := logrus.New()
	l.SetOutput(w)
	return l
}
