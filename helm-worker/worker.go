package main

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	helmcmd "helm.sh/helm/v4/pkg/cmd"
)

type request struct {
	ID     *int              `json:"id"`
	Argv   []string          `json:"argv"`
	Env    map[string]string `json:"env"`
	Dir    string            `json:"dir"`
	Cancel *int              `json:"cancel"`
}

type response struct {
	ID       int    `json:"id"`
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

const (
	// How long a cancelled install/upgrade gets to show that helm's own SIGTERM handler took the
	// signal; without it, a helm process would have died of the signal, and so does the worker.
	cancelAckWait = time.Second
	// How long a call's children may keep its stdout/stderr open after the call returned.
	pipeLinger = 2 * time.Second
	// A worker without a call for this long hands the memory its calls left back to the OS
	// (debug.FreeOSMemory: ~20 → ~12 MiB anonymous). Not after every call: that costs ~7 ms of CPU
	// per call (+25 %), and in a wave the next call would grow the heap again at once.
	freeMemoryAfter = time.Second
	// Exit code reported for a call ended by SIGTERM with no handler: the shell's 128+signal.
	exitBySIGTERM = 128 + int(syscall.SIGTERM)
)

// worker holds what outlives a call: the protocol channel and the process defaults.
type worker struct {
	out      *json.Encoder
	outMu    sync.Mutex
	diag     io.Writer
	devNull  int
	startDir string
	startEnv map[string]string
	defaults *processDefaults
	signals  chan os.Signal
	// selfSignals counts SIGTERMs the worker sent itself and has not yet seen on its channel.
	selfSignals atomic.Int32
	// shutdown: an outside SIGTERM/SIGINT or the end of stdin; the worker exits when idle.
	shutdown atomic.Bool
}

func serve(stdin, stdout, stderr *os.File) int {
	// Private close-on-exec duplicates: no call, and no child of a call, can write to them.
	dupPrivate := func(f *os.File) (*os.File, error) {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), f.Name()), nil
	}
	protoIn, err1 := dupPrivate(stdin)
	protoOut, err2 := dupPrivate(stdout)
	diag, err3 := dupPrivate(stderr)
	devNull, err4 := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err := firstErr(err1, err2, err3, err4); err != nil {
		fmt.Fprintf(stderr, "chartpilot-helm: cannot set up worker mode: %v\n", err)
		return 1
	}
	// Calls see an empty stdin (as a helm process started with stdin 'ignore') and, between
	// calls, fd 1 and 2 lead nowhere.
	for _, fd := range []int{0, 1, 2} {
		if err := unix.Dup3(devNull, fd, 0); err != nil {
			fmt.Fprintf(diag, "chartpilot-helm: cannot redirect fd %d: %v\n", fd, err)
			return 1
		}
	}

	w := &worker{out: json.NewEncoder(protoOut), diag: diag, devNull: devNull}
	w.out.SetEscapeHTML(false)
	w.startDir, _ = os.Getwd()
	w.startEnv = envMap(os.Environ())
	warmReadOnceState()
	w.defaults = captureDefaults()
	w.signals = make(chan os.Signal, 8)
	signal.Notify(w.signals, termSignals...)

	w.send(struct {
		Ready       bool   `json:"ready"`
		HelmVersion string `json:"helmVersion"`
		PID         int    `json:"pid"`
	}{true, helmVersion(), os.Getpid()})

	calls := make(chan request)
	cancels := make(chan int, 16)
	go w.readRequests(protoIn, calls, cancels)
	quiet := time.NewTimer(freeMemoryAfter)

	for {
		if w.shutdown.Load() {
			return 0
		}
		select {
		case req, ok := <-calls:
			if !ok {
				return 0
			}
			if exit, code := w.handle(req, cancels); exit {
				return code
			}
			quiet.Reset(freeMemoryAfter)
		case <-quiet.C:
			debug.FreeOSMemory()
		case <-cancels:
			// A cancel for a call that has already answered: nothing to do.
		case <-w.signals:
			if !w.tookOwnSignal() {
				return 0
			}
		}
	}
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (w *worker) readRequests(in io.Reader, calls chan<- request, cancels chan<- int) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1024*1024), 256*1024*1024)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			fmt.Fprintf(w.diag, "chartpilot-helm: ignoring a request that is not JSON: %v\n", err)
			continue
		}
		switch {
		case req.Cancel != nil:
			cancels <- *req.Cancel
		case req.ID != nil:
			calls <- req
		default:
			fmt.Fprintf(w.diag, "chartpilot-helm: ignoring a request with neither \"id\" nor \"cancel\"\n")
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w.diag, "chartpilot-helm: reading requests: %v\n", err)
	}
	close(calls)
}

func (w *worker) send(v any) {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	if err := w.out.Encode(v); err != nil {
		fmt.Fprintf(w.diag, "chartpilot-helm: writing a response: %v\n", err)
	}
}

// tookOwnSignal says whether a signal that arrived on w.signals was one the worker sent itself;
// otherwise it came from outside and the worker shuts down once idle.
func (w *worker) tookOwnSignal() bool {
	for {
		n := w.selfSignals.Load()
		if n <= 0 {
			w.shutdown.Store(true)
			return false
		}
		if w.selfSignals.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// signalSelf sends the worker SIGTERM, which reaches every signal.Notify channel: helm's
// install/upgrade handler of the running call (if registered), those leaked by earlier calls,
// and the worker's own.
func (w *worker) signalSelf() {
	w.selfSignals.Add(1)
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
}

// handle runs one call and answers it. exit: the worker must end now (with code), because the
// call cannot be stopped any other way or left the process in an unknown state.
func (w *worker) handle(req request, cancels <-chan int) (exit bool, code int) {
	id := *req.ID
	call, err := w.begin(req)
	if err != nil {
		w.send(response{ID: id, ExitCode: 1, Stderr: fmt.Sprintf("chartpilot-helm: cannot start the call: %v\n", err)})
		return false, 0
	}
	var res callResult
	for waiting := true; waiting; {
		select {
		case res = <-call.done:
			waiting = false
		case cid := <-cancels:
			if cid != id {
				continue
			}
			if call.cancel(w) {
				continue // helm took it: the call ends by itself, "context canceled"
			}
			// A helm process would have died of the signal here.
			stdout, stderr := call.capture.finish(w.devNull, 0)
			w.send(response{ID: id, ExitCode: exitBySIGTERM, Stdout: stdout, Stderr: stderr})
			return true, exitBySIGTERM
		case <-w.signals:
			// Outside SIGTERM while busy: helm's handler (if any) got it too; answer, then exit.
			w.tookOwnSignal()
		}
	}
	stdout, stderr := call.end(w)
	w.send(response{ID: id, ExitCode: res.exitCode, Stdout: stdout, Stderr: stderr})
	if res.panicked {
		return true, 2
	}
	return false, 0
}

type callResult struct {
	exitCode int
	panicked bool
}

type call struct {
	capture *capture
	out     *callOut
	done    chan callResult
	// child is set when the call runs as a helm process (see needsProcess).
	child   *os.Process
	childMu sync.Mutex
	// handlesSIGTERM: helm's install and upgrade register a SIGTERM handler during the call.
	handlesSIGTERM atomic.Bool
}

// callOut is the `out` helm's commands print to: the call's fd 1 while the call runs, nothing
// after (helm's leaked SIGTERM goroutines hold it). It notices helm's cancellation message.
type callOut struct {
	mu        sync.Mutex
	w         io.Writer
	cancelled chan struct{}
	once      sync.Once
}

func (o *callOut) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.w == nil {
		return len(b), nil
	}
	if bytes.HasSuffix(b, []byte(" has been cancelled.\n")) && bytes.HasPrefix(b, []byte("Release ")) {
		o.once.Do(func() { close(o.cancelled) })
	}
	return o.w.Write(b)
}

func (o *callOut) close() {
	o.mu.Lock()
	o.w = nil
	o.mu.Unlock()
}

// begin sets the process up as a fresh helm process would be for this call, and starts it.
func (w *worker) begin(req request) (*call, error) {
	env := req.Env
	dir := req.Dir
	if dir == "" {
		dir = w.startDir
	}
	if err := os.Chdir(dir); err != nil {
		return nil, err
	}
	os.Clearenv()
	for k, v := range env {
		if err := os.Setenv(k, v); err != nil {
			return nil, fmt.Errorf("environment variable %q: %w", k, err)
		}
	}
	argv := req.Argv
	if argv == nil {
		argv = []string{}
	}
	os.Args = append([]string{os.Args[0]}, argv...)

	cap, err := startCapture()
	if err != nil {
		return nil, err
	}
	c := &call{capture: cap, done: make(chan callResult, 1)}
	c.out = &callOut{w: os.Stdout, cancelled: make(chan struct{})}

	if why := needsProcess(w.startEnv, env); why != "" {
		fmt.Fprintf(w.diag, "chartpilot-helm: call %d runs as a helm process: %s\n", *req.ID, why)
		return c, c.startProcess(argv, env, dir)
	}
	if err := w.defaults.resetForCall(); err != nil {
		c.capture.finish(w.devNull, 0)
		return nil, fmt.Errorf("resetting klog flags: %w", err)
	}
	go c.run(argv)
	return c, nil
}

func (c *call) run(argv []string) {
	res := callResult{exitCode: 0}
	defer func() {
		if p := recover(); p != nil {
			// What the Go runtime prints for an unrecovered panic, and its exit code.
			fmt.Fprintf(os.Stderr, "panic: %v\n\n%s", p, debug.Stack())
			res = callResult{exitCode: 2, panicked: true}
		}
		c.done <- res
	}()
	res.exitCode = c.runHelmCommand(argv)
}

// runHelmCommand is runPlain with the call's out and argv, returning the exit code.
func (c *call) runHelmCommand(argv []string) int {
	cmd, err := helmcmd.NewRootCmd(c.out, argv, helmcmd.SetupLogging)
	if err != nil {
		slogWarnCommandFailed(err)
		return 1
	}
	// Find only walks the command tree (no flag parsing): which command will run.
	if sub, _, err := cmd.Find(argv); err == nil && (sub.Name() == "install" || sub.Name() == "upgrade") {
		c.handlesSIGTERM.Store(true)
	}
	cmd.SetArgs(argv)
	if err := cmd.Execute(); err != nil {
		if cerr, ok := err.(helmcmd.CommandError); ok {
			return cerr.ExitCode
		}
		return 1
	}
	return 0
}

// cancel delivers the call's SIGTERM. It reports whether the call will end by itself.
func (c *call) cancel(w *worker) bool {
	c.childMu.Lock()
	child := c.child
	c.childMu.Unlock()
	if child != nil {
		_ = child.Signal(syscall.SIGTERM)
		return true // the process answers by exiting, handled or not
	}
	if !c.handlesSIGTERM.Load() {
		return false
	}
	w.signalSelf()
	select {
	case <-c.out.cancelled:
		return true
	case <-time.After(cancelAckWait):
		return false
	}
}

// end collects the output, cuts helm's leftovers off from the next call, and restores the
// process to its between-calls state.
func (c *call) end(w *worker) (stdout, stderr string) {
	c.out.close()
	stdout, stderr = c.capture.finish(w.devNull, pipeLinger)
	if c.child == nil {
		// Wake helm's SIGTERM goroutines of this call (they print to a closed `out` and cancel a
		// finished context), then forget their registrations.
		w.signalSelf()
		select {
		case <-w.signals:
			w.tookOwnSignal()
		case <-time.After(time.Second):
		}
		dropSignalHandlers(w.signals)
	}
	_ = os.Chdir(w.startDir)
	return stdout, stderr
}

// readOnceVars are read by Go or a library once per process (sync.Once or init), so a call
// whose value differs from the worker's own runs as a helm process instead.
var readOnceVars = []string{
	// net/http.ProxyFromEnvironment
	"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "REQUEST_METHOD",
	// time.Local
	"TZ", "ZONEINFO",
	// crypto/x509 system roots
	"SSL_CERT_FILE", "SSL_CERT_DIR",
	// the Go runtime: GODEBUG changes behaviour (TLS, x509, …), GOTRACEBACK panic output. Not here:
	// GOGC, GOMEMLIMIT, GOMAXPROCS change speed and memory, never what a call prints, so a pool
	// may set them for its workers alone.
	"GODEBUG", "GOTRACEBACK",
}

// readOncePrefixes: client-go's environment feature gates (KUBE_FEATURE_*) are read once.
var readOncePrefixes = []string{"KUBE_FEATURE_"}

// needsProcess says why a call cannot run in this process ("" when it can).
func needsProcess(start, call map[string]string) string {
	if k := readOnceDiffers(start, call); k != "" {
		return k + " differs from the worker's own, and the process reads it only once"
	}
	// helm's root command initialiser calls log.Fatal (os.Exit) when the storage driver cannot be
	// set up: an unknown HELM_DRIVER, an unreachable SQL database, unreadable memory-driver data.
	switch call["HELM_DRIVER"] {
	case "", "secret", "secrets", "configmap", "configmaps":
		return ""
	default:
		return "HELM_DRIVER=" + call["HELM_DRIVER"] + " may end helm with os.Exit while it sets the driver up"
	}
}

func readOnceDiffers(start, call map[string]string) string {
	for _, k := range readOnceVars {
		a, aok := start[k]
		b, bok := call[k]
		if a != b || aok != bok {
			return k
		}
	}
	for _, m := range []map[string]string{start, call} {
		for k := range m {
			for _, p := range readOncePrefixes {
				if strings.HasPrefix(k, p) {
					a, aok := start[k]
					b, bok := call[k]
					if a != b || aok != bok {
						return k
					}
				}
			}
		}
	}
	return ""
}

// warmReadOnceState makes the process read the read-once variables now, from its own
// environment, rather than from whichever call first needs them.
func warmReadOnceState() {
	_, _ = http.ProxyFromEnvironment(&http.Request{URL: &url.URL{Scheme: "https", Host: "warm.invalid"}})
	_ = time.Now().Local().String()
	_, _ = x509.SystemCertPool()
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
