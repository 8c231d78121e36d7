package main

// Engine mode (CHARTPILOT_HELM_ENGINE=1, no arguments): helm's pkg/action run concurrently in one
// process, one goroutine and one action.Configuration per call, speaking README.md's "Engine
// protocol (version 2)" on stdin/stdout. Unlike the worker it never touches process-wide state
// per call (environment, cwd, fds, signal handlers, slog's default, helm's package-level
// settings), which is what lets calls overlap.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/rest"
)

// engineEnv switches a process started without arguments into engine mode.
const engineEnv = "CHARTPILOT_HELM_ENGINE"

// engineProtocol is the "engine" number of the ready frame.
const engineProtocol = 2

const (
	// After stdin ends, in-flight calls get this long to answer by themselves before they are
	// cancelled.
	engineEOFGrace = time.Second
	// After the engine cancelled its calls (stdin ended or SIGTERM/SIGINT), this long for them
	// to answer; uninstall and rollback do not take a context, so they may not.
	engineCancelGrace = 3 * time.Second
	// A call's own log (its slog logger, hook output, registry output) is kept up to this size;
	// it is written to stderr only when the call fails.
	callLogLimit = 256 << 10
)

// Error classes of a result's "error".
const (
	classNotFound  = "not-found"
	classCancelled = "cancelled"
	classTimeout   = "timeout"
	classFailed    = "failed"
)

// engineRequest is every field any request may carry (README.md "Engine protocol").
type engineRequest struct {
	ID           *int              `json:"id"`
	Op           string            `json:"op"`
	Release      string            `json:"release"`
	Namespace    string            `json:"namespace"`
	Kubeconfig   string            `json:"kubeconfig"`
	Confine      *confineSpec      `json:"confine"`
	KubeCacheDir string            `json:"kubeCacheDir"`
	Impersonate  string            `json:"impersonate"`
	TimeoutMs    *int64            `json:"timeoutMs"`
	Chart        string            `json:"chart"`
	Values       *string           `json:"values"`
	HistoryMax   *int              `json:"historyMax"`
	Description  string            `json:"description"`
	Labels       map[string]string `json:"labels"`
	Force        bool              `json:"force"`
	DisableHooks bool              `json:"disableHooks"`
	PostRender   bool              `json:"postRender"`
	Wait         bool              `json:"wait"`
	Revision     int               `json:"revision"`
}

// requestHead routes a line: a call, a cancel or a post-render answer.
type requestHead struct {
	ID           *int `json:"id"`
	Cancel       *int `json:"cancel"`
	PostRendered *int `json:"postRendered"`
}

type postRenderAnswer struct {
	Manifest *string `json:"manifest"`
	Error    *string `json:"error"`
}

type engineRelease struct {
	Name         string `json:"name"`
	Namespace    string `json:"namespace"`
	Revision     int    `json:"revision"`
	Status       string `json:"status"`
	ChartName    string `json:"chartName"`
	ChartVersion string `json:"chartVersion"`
	AppVersion   string `json:"appVersion"`
	Notes        string `json:"notes"`
	Manifest     string `json:"manifest"`
	Description  string `json:"description"`
	ApplyMethod  string `json:"applyMethod"`
}

type engineError struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

// engineResult is a call's one answer; exactly one of Release, Releases, Done, Error is set.
type engineResult struct {
	ID       int             `json:"id"`
	Release  *engineRelease  `json:"release,omitempty"`
	Releases []engineRelease `json:"releases,omitempty"`
	Done     bool            `json:"done,omitempty"`
	Error    *engineError    `json:"error,omitempty"`
	// Refusals: what a confined call's confinement refused, in order (also when helm went on).
	Refusals []string `json:"refusals,omitempty"`
}

type postRenderFrame struct {
	ID         int    `json:"id"`
	PostRender string `json:"postRender"`
}

// engine is what outlives a call: the protocol channel and the table of running calls.
type engine struct {
	outMu sync.Mutex
	out   *json.Encoder
	diag  io.Writer

	mu       sync.Mutex
	calls    map[int]*engineCall
	stopping bool // no new calls: they are answered "cancelled"
	lastBusy time.Time
	freed    bool

	// dispatch runs one call; a field so that tests can make a call panic.
	dispatch func(*engineCall, *engineRequest) engineResult

	// recordCheck: confined calls prove release records (records.go). Only tests turn it off,
	// to show what the wire rules alone stop.
	recordCheck bool
	scopesMu    sync.Mutex
	scopes      scopeLookup
	discovery   *sharedDiscovery
}

// engineCall is one running call. Nothing of it is reachable from package-level state.
type engineCall struct {
	id     int
	op     string
	req    *engineRequest
	engine *engine
	// refused: what the call's confinement refused.
	refused *refusals
	// ctx is the call's context: cancelled by {"cancel":id} or by the engine shutting down.
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled atomic.Bool
	// ended is cancelled when the call answers: from then on its Kubernetes clients refuse
	// every request and abort those in flight (see guardTransport).
	ended    context.Context
	endCall  context.CancelFunc
	log      *callLog
	logger   *slog.Logger
	prMu     sync.Mutex
	prAnswer chan postRenderAnswer // set while helm waits in the post-renderer
}

func serveEngine(stdin, stdout, stderr *os.File) int {
	// The protocol uses private close-on-exec duplicates of fd 0 and 1; fd 0 and 1 themselves
	// lead to /dev/null, so nothing else in the process (helm's chart downloader prints to
	// os.Stdout) and no child can write into the frames or read the requests.
	dupPrivate := func(f *os.File) (*os.File, error) {
		fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), f.Name()), nil
	}
	protoIn, err1 := dupPrivate(stdin)
	protoOut, err2 := dupPrivate(stdout)
	devNull, err3 := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err := firstErr(err1, err2, err3); err != nil {
		fmt.Fprintf(stderr, "chartpilot-helm: cannot set up engine mode: %v\n", err)
		return 1
	}
	for _, fd := range []int{0, 1} {
		if err := unix.Dup3(devNull, fd, 0); err != nil {
			fmt.Fprintf(stderr, "chartpilot-helm: cannot redirect fd %d: %v\n", fd, err)
			return 1
		}
	}
	unix.Close(devNull)

	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)

	e := newEngine(protoOut, stderr)
	e.send(struct {
		Ready       bool   `json:"ready"`
		Engine      int    `json:"engine"`
		HelmVersion string `json:"helmVersion"`
		PID         int    `json:"pid"`
	}{true, engineProtocol, helmVersion(), os.Getpid()})

	eof := make(chan struct{})
	go func() {
		e.readRequests(protoIn)
		close(eof)
	}()

	tick := time.NewTicker(freeMemoryAfter / 2)
	defer tick.Stop()
	for {
		select {
		case <-eof:
			e.waitIdle(engineEOFGrace)
			e.stop()
			e.waitIdle(engineCancelGrace)
			e.seal()
			return 0
		case <-signals:
			e.stop()
			e.waitIdle(engineCancelGrace)
			e.seal()
			return 0
		case <-tick.C:
			e.freeMemoryWhenQuiet()
		}
	}
}

func newEngine(out io.Writer, diag io.Writer) *engine {
	e := &engine{out: json.NewEncoder(out), diag: &lockedWriter{w: diag}, calls: map[int]*engineCall{}, lastBusy: time.Now(), recordCheck: true}
	e.out.SetEscapeHTML(false)
	e.dispatch = e.dispatchOp
	return e
}

// send writes one frame; frames never interleave.
func (e *engine) send(v any) {
	e.outMu.Lock()
	defer e.outMu.Unlock()
	if err := e.out.Encode(v); err != nil {
		fmt.Fprintf(e.diag, "chartpilot-helm engine: writing a frame: %v\n", err)
	}
}

// seal takes the frame lock for good: the process exits next, and no frame is cut in half.
func (e *engine) seal() { e.outMu.Lock() }

func (e *engine) diagf(format string, args ...any) {
	fmt.Fprintf(e.diag, "chartpilot-helm engine: "+format+"\n", args...)
}

func (e *engine) readRequests(in io.Reader) {
	r := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			e.handleLine(line)
		}
		if err != nil {
			if err != io.EOF {
				e.diagf("reading requests: %v", err)
			}
			return
		}
	}
}

func (e *engine) handleLine(line []byte) {
	var head requestHead
	if err := json.Unmarshal(line, &head); err != nil {
		e.diagf("ignoring a request line that is not a JSON object of the protocol: %v", err)
		return
	}
	switch {
	case head.PostRendered != nil:
		var a postRenderAnswer
		if err := json.Unmarshal(line, &a); err != nil {
			e.diagf("ignoring a post-render answer for call %d: %v", *head.PostRendered, err)
			return
		}
		e.deliverPostRender(*head.PostRendered, a)
	case head.Cancel != nil:
		e.cancelCall(*head.Cancel)
	case head.ID != nil:
		req := &engineRequest{}
		if err := json.Unmarshal(line, req); err != nil {
			e.send(engineResult{ID: *head.ID, Error: &engineError{Class: classFailed, Message: fmt.Sprintf("chartpilot-helm engine: invalid request: %v", err)}})
			return
		}
		e.startCall(req)
	default:
		e.diagf("ignoring a request with neither \"id\", \"cancel\" nor \"postRendered\"")
	}
}

func (e *engine) startCall(req *engineRequest) {
	id := *req.ID
	e.mu.Lock()
	if e.stopping {
		e.mu.Unlock()
		e.send(engineResult{ID: id, Error: &engineError{Class: classCancelled, Message: "chartpilot-helm engine: the engine is shutting down"}})
		return
	}
	if _, running := e.calls[id]; running {
		e.mu.Unlock()
		e.diagf("call %d: a call with this id is still running", id)
		e.send(engineResult{ID: id, Error: &engineError{Class: classFailed, Message: fmt.Sprintf("chartpilot-helm engine: a call with id %d is still running", id)}})
		return
	}
	c := &engineCall{id: id, op: req.Op, req: req, engine: e, refused: &refusals{}, log: &callLog{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.ended, c.endCall = context.WithCancel(context.Background())
	e.calls[id] = c
	e.freed = false
	e.mu.Unlock()
	go e.runCall(c)
}

func (e *engine) runCall(c *engineCall) {
	var res engineResult
	defer func() {
		if p := recover(); p != nil {
			res = engineResult{ID: c.id, Error: &engineError{Class: classFailed, Message: fmt.Sprintf("panic: %v\n\n%s", p, debug.Stack())}}
		}
		// Nothing of this call reaches the API server once it has answered (as nothing of a helm
		// process does once it has exited).
		c.endCall()
		c.cancel()
		if res.Error != nil && res.Error.Class != classNotFound {
			if text, dropped := c.log.text(); text != "" {
				e.diagf("call %d (%s %s/%s) failed (%s); its log%s:\n%s", c.id, c.op, c.req.Namespace, c.req.Release, res.Error.Class, truncatedNote(dropped), text)
			}
		}
		e.mu.Lock()
		delete(e.calls, c.id)
		if len(e.calls) == 0 {
			e.lastBusy = time.Now()
		}
		e.mu.Unlock()
		e.send(res)
	}()
	res = e.dispatch(c, c.req)
	res.ID = c.id
	res.Refusals = c.refused.all()
}

// sharedReads are what the engine's confined calls share, made at the first such call as the
// engine's own identity (what discovery lists is the same for every identity): the resource
// scopes their confinement decides on (confine.go) and their discovery (discovery.go).
func (e *engine) sharedReads() (scopeLookup, *sharedDiscovery, error) {
	e.scopesMu.Lock()
	defer e.scopesMu.Unlock()
	if e.scopes == nil {
		rc, err := engineConfig()
		if err != nil {
			return nil, nil, err
		}
		scopes, err := newDiscoveryScopes(rc)
		if err != nil {
			return nil, nil, err
		}
		d, err := newSharedDiscovery(rc)
		if err != nil {
			return nil, nil, err
		}
		e.scopes, e.discovery = scopes, d
	}
	return e.scopes, e.discovery, nil
}

// engineConfig is the engine's own connection, as a confined call's without impersonation, for
// the reads all confined calls share (discovery, resource scopes). Without client-side rate
// limiting: helm's 5 QPS would be shared by every call at once (run at N=200: create 3× slower);
// each call's own requests keep helm's limiter, and the shared reads are at most a few per call.
func engineConfig() (*rest.Config, error) {
	rc, err := connectionSettings(&engineRequest{Confine: &confineSpec{}}).RESTClientGetter().ToRESTConfig()
	if err != nil {
		return nil, err
	}
	rc.QPS = -1 // client-go: a negative QPS makes no rate limiter
	return rc, nil
}

func truncatedNote(dropped int) string {
	if dropped == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d bytes after the first %d dropped)", dropped, callLogLimit)
}

func (e *engine) cancelCall(id int) {
	e.mu.Lock()
	c := e.calls[id]
	e.mu.Unlock()
	if c != nil {
		c.cancelled.Store(true)
		c.cancel()
	}
}

// stop cancels every running call and refuses new ones.
func (e *engine) stop() {
	e.mu.Lock()
	e.stopping = true
	calls := make([]*engineCall, 0, len(e.calls))
	for _, c := range e.calls {
		calls = append(calls, c)
	}
	e.mu.Unlock()
	for _, c := range calls {
		c.cancelled.Store(true)
		c.cancel()
	}
}

// waitIdle waits until no call runs, at most d.
func (e *engine) waitIdle(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		e.mu.Lock()
		n := len(e.calls)
		e.mu.Unlock()
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freeMemoryWhenQuiet hands the memory calls left back to the OS once the engine has had no
// call for freeMemoryAfter (as the worker does; README.md "Measured").
func (e *engine) freeMemoryWhenQuiet() {
	e.mu.Lock()
	quiet := len(e.calls) == 0 && !e.freed && time.Since(e.lastBusy) >= freeMemoryAfter
	if quiet {
		e.freed = true
	}
	e.mu.Unlock()
	if quiet {
		debug.FreeOSMemory()
	}
}

func (e *engine) deliverPostRender(id int, a postRenderAnswer) {
	e.mu.Lock()
	c := e.calls[id]
	e.mu.Unlock()
	if c == nil {
		e.diagf("ignoring a post-render answer for call %d, which is not running", id)
		return
	}
	c.prMu.Lock()
	ch := c.prAnswer
	c.prAnswer = nil
	c.prMu.Unlock()
	if ch == nil {
		e.diagf("ignoring a post-render answer for call %d, which is not waiting for one", id)
		return
	}
	ch <- a // buffered, and taken out of the call: never blocks
}

// enginePostRenderer is helm's postrenderer.PostRenderer for a call with "postRender": true:
// the rendered manifests go to the operator, helm continues with its answer.
type enginePostRenderer struct {
	e *engine
	c *engineCall
}

func (p *enginePostRenderer) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	c := p.c
	ch := make(chan postRenderAnswer, 1)
	c.prMu.Lock()
	c.prAnswer = ch
	c.prMu.Unlock()
	defer func() {
		c.prMu.Lock()
		if c.prAnswer == ch {
			c.prAnswer = nil
		}
		c.prMu.Unlock()
	}()
	if err := c.ctx.Err(); err != nil {
		return nil, err // cancelled already: ask nobody
	}
	p.e.send(postRenderFrame{ID: c.id, PostRender: rendered.String()})
	select {
	case a := <-ch:
		switch {
		case a.Error != nil:
			return nil, errors.New(*a.Error)
		case a.Manifest != nil:
			return bytes.NewBufferString(*a.Manifest), nil
		default:
			return nil, errors.New("chartpilot-helm engine: the post-render answer has neither \"manifest\" nor \"error\"")
		}
	case <-c.ctx.Done():
		return nil, c.ctx.Err()
	}
}

// lockedWriter keeps diagnostics of concurrent calls (a failed call's log can be long) whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// callLog is a call's own log: its slog handler, hook output and registry client write here.
type callLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int
}

func (l *callLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len()+len(p) > callLogLimit {
		l.dropped += len(p)
		return len(p), nil
	}
	return l.buf.Write(p)
}

func (l *callLog) text() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.dropped
}
