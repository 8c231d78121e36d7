package main

// Package-level state of helm's CLI and its libraries that a helm process builds once and a
// worker must build again before each call, so that a call sees exactly what a fresh process
// would. README.md "What a call could inherit, and how it does not" lists each item and why.

import (
	"flag"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	_ "unsafe" // go:linkname

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	_ "helm.sh/helm/v4/pkg/chart/common/util" // holds warnedURNs
	"helm.sh/helm/v4/pkg/cli"
	helmcmd "helm.sh/helm/v4/pkg/cmd"
)

// helm's `var settings = cli.New()` (pkg/cmd/root.go): read from HELM_* once, and every global
// flag is registered with the current value as its default, so a flag a call omits would keep
// the previous call's value. Replaced by a fresh cli.New() after the call's environment is set.
//
//go:linkname helmSettings helm.sh/helm/v4/pkg/cmd.settings
var helmSettings *cli.EnvSettings

// cobra.OnInitialize appends to this slice; NewRootCmd adds one initializer per call, and
// Execute runs them all, so without a reset call N would re-initialise N-1 old configurations.
//
//go:linkname cobraInitializers github.com/spf13/cobra.initializers
var cobraInitializers []func()

//go:linkname cobraFinalizers github.com/spf13/cobra.finalizers
var cobraFinalizers []func()

// cobra keeps every flag's completion function in a global map keyed by the flag; helm registers
// several per root command, so without a clear each call's command tree (and what its closures
// hold: the action configuration, clients) would stay reachable for ever.
//
//go:linkname cobraFlagCompletionFunctions github.com/spf13/cobra.flagCompletionFunctions
var cobraFlagCompletionFunctions map[*pflag.Flag]cobra.CompletionFunc

//go:linkname cobraFlagCompletionMutex github.com/spf13/cobra.flagCompletionMutex
var cobraFlagCompletionMutex *sync.RWMutex

// helm reads HELM_PPROF_CPU_PROFILE/HELM_PPROF_MEM_PROFILE in an init function.
//
//go:linkname helmCPUProfilePath helm.sh/helm/v4/pkg/cmd.cpuProfilePath
var helmCPUProfilePath string

//go:linkname helmMemProfilePath helm.sh/helm/v4/pkg/cmd.memProfilePath
var helmMemProfilePath string

//go:linkname helmCPUProfileFile helm.sh/helm/v4/pkg/cmd.cpuProfileFile
var helmCPUProfileFile *os.File

// The "unresolved URN reference ignored" warning is printed once per URN per process.
//
//go:linkname helmWarnedURNs helm.sh/helm/v4/pkg/chart/common/util.warnedURNs
var helmWarnedURNs sync.Map

var _ = helmcmd.SetupLogging // keeps pkg/cmd linked even if main stops naming it

// processDefaults is what a fresh process starts with, captured before the first call.
type processDefaults struct {
	slogDefault *slog.Logger
	logFlags    int
	logPrefix   string
	klogFlags   map[string]string
	klogSet     *flag.FlagSet
}

func captureDefaults() *processDefaults {
	d := &processDefaults{
		slogDefault: slog.Default(),
		logFlags:    log.Flags(),
		logPrefix:   log.Prefix(),
		klogFlags:   map[string]string{},
		klogSet:     flag.NewFlagSet("klog", flag.ContinueOnError),
	}
	// helm registers klog's flags (hidden) on every root command with their CURRENT values as
	// defaults (klog.InitFlags); `--v=9` in one call would stay for the next one.
	klog.InitFlags(d.klogSet)
	d.klogSet.VisitAll(func(f *flag.Flag) { d.klogFlags[f.Name] = f.Value.String() })
	return d
}

// resetForCall puts the process-wide state back to a fresh process's, reading the call's
// environment, which must already be in place (os.Environ is the call's env).
func (d *processDefaults) resetForCall() error {
	cobraInitializers = nil
	cobraFinalizers = nil
	cobraFlagCompletionMutex.Lock()
	clear(cobraFlagCompletionFunctions)
	cobraFlagCompletionMutex.Unlock()

	helmSettings = cli.New()
	helmCPUProfilePath = os.Getenv("HELM_PPROF_CPU_PROFILE")
	helmMemProfilePath = os.Getenv("HELM_PPROF_MEM_PROFILE")
	helmCPUProfileFile = nil
	helmWarnedURNs.Clear()

	// slog.SetDefault with helm's handler redirected the log package into it and set its flags
	// to 0; a fresh process has log writing to stderr with the standard flags.
	slog.SetDefault(d.slogDefault)
	log.SetOutput(os.Stderr)
	log.SetFlags(d.logFlags)
	log.SetPrefix(d.logPrefix)

	var err error
	d.klogSet.VisitAll(func(f *flag.Flag) {
		if want := d.klogFlags[f.Name]; f.Value.String() != want {
			if e := f.Value.Set(want); e != nil && err == nil {
				err = e
			}
		}
	})

	// fatih/color decides NoColor in its init from NO_COLOR, TERM and whether fd 1 is a
	// terminal; helm only overrides it for --color=never|always. Same expression, call's env
	// and the call's fd 1 (a pipe).
	color.NoColor = os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" ||
		(!isatty.IsTerminal(os.Stdout.Fd()) && !isatty.IsCygwinTerminal(os.Stdout.Fd()))
	return err
}

// termSignals are the signals helm's install and upgrade turn into a cancelled context.
var termSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// dropSignalHandlers removes every signal.Notify registration (helm's install and upgrade
// register one per call and never stop it), then registers ours again.
func dropSignalHandlers(ours chan os.Signal) {
	signal.Reset(termSignals...)
	signal.Notify(ours, termSignals...)
}

// helm's version string, stamped by -ldflags -X as helm's Makefile does (internal package).
//
//go:linkname helmVersionString helm.sh/helm/v4/internal/version.version
var helmVersionString string

//go:linkname helmVersionMetadata helm.sh/helm/v4/internal/version.metadata
var helmVersionMetadata string

// helmVersion is version.GetVersion(): what `helm version --template={{.Version}}` prints.
func helmVersion() string {
	if helmVersionMetadata == "" {
		return helmVersionString
	}
	return helmVersionString + "+" + helmVersionMetadata
}
