package main

// Engine protocol tests that need no cluster: the built binary in engine mode (README.md
// "Engine protocol (version 2)"), and the engine's parts in-process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// engineProc is one engine process and the protocol spoken with it.
type engineProc struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	inMu    sync.Mutex
	frames  chan map[string]any
	diag    *bytes.Buffer
	diagMu  *sync.Mutex
	ready   map[string]any
	exited  chan struct{} // closed when the process has exited
	waitErr error
}

func startEngine(t *testing.T, env []string) *engineProc {
	t.Helper()
	cmd := exec.Command(helmBin)
	cmd.Env = append(append([]string{}, env...), "CHARTPILOT_HELM_ENGINE=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &engineProc{t: t, cmd: cmd, stdin: stdin, frames: make(chan map[string]any, 1024),
		diag: &bytes.Buffer{}, diagMu: &sync.Mutex{}, exited: make(chan struct{})}
	cmd.Stderr = lockedBuffer{p.diagMu, p.diag}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 256<<20)
		for sc.Scan() {
			line := sc.Text()
			var f map[string]any
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				f = map[string]any{"notJSON": line}
			}
			p.frames <- f
		}
		close(p.frames)
	}()
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-p.exited
		}
		// An engine built with -race (CHARTPILOT_HELM_BIN) reports data races on its stderr.
		if d := p.diagnostics(); strings.Contains(d, "WARNING: DATA RACE") {
			t.Errorf("the engine reported a data race:\n%s", d)
		}
	})
	p.ready = p.next(30 * time.Second)
	return p
}

func (p *engineProc) diagnostics() string {
	p.diagMu.Lock()
	defer p.diagMu.Unlock()
	return p.diag.String()
}

// next returns the next frame (not-JSON lines fail the test).
func (p *engineProc) next(timeout time.Duration) map[string]any {
	p.t.Helper()
	select {
	case f, ok := <-p.frames:
		if !ok {
			p.t.Fatalf("the engine's stdout ended; its stderr:\n%s", p.diagnostics())
		}
		if s, bad := f["notJSON"]; bad {
			p.t.Fatalf("the engine wrote a line that is not JSON: %q", s)
		}
		return f
	case <-time.After(timeout):
		p.t.Fatalf("no frame from the engine within %s; its stderr:\n%s", timeout, p.diagnostics())
		return nil
	}
}

func (p *engineProc) sendLine(line string) {
	p.t.Helper()
	p.inMu.Lock()
	defer p.inMu.Unlock()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("writing to the engine: %v", err)
	}
}

func (p *engineProc) send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	p.sendLine(string(b))
}

func frameID(f map[string]any) int {
	if v, ok := f["id"].(float64); ok {
		return int(v)
	}
	return -1
}

func frameError(f map[string]any) (class, message string) {
	e, _ := f["error"].(map[string]any)
	class, _ = e["class"].(string)
	message, _ = e["message"].(string)
	return class, message
}

func TestEngineReadyFrame(t *testing.T) {
	p := startEngine(t, envList(isolatedEnv(t)))
	want := fresh(t, []string{"version", "--template={{.Version}}"}, isolatedEnv(t), "").Stdout
	if p.ready["ready"] != true || p.ready["engine"] != float64(engineProtocol) || p.ready["helmVersion"] != want ||
		p.ready["pid"] != float64(p.cmd.Process.Pid) || len(p.ready) != 4 {
		t.Fatalf("ready frame %v; want ready, engine 1, helmVersion %q (what version --template={{.Version}} prints), pid %d", p.ready, want, p.cmd.Process.Pid)
	}
}

// TestEngineProtocolErrors: lines that are not requests are ignored with a diagnostic on stderr;
// calls the engine cannot run are answered with class failed; the engine keeps serving.
func TestEngineProtocolErrors(t *testing.T) {
	p := startEngine(t, envList(isolatedEnv(t)))
	for _, line := range []string{
		"not json",
		`["an","array"]`,
		`{"neither":"id nor cancel"}`,
		`{"id":"not a number","op":"status"}`,
		`{"cancel":12345}`,
		`{"postRendered":12345,"manifest":"x"}`,
		"",
		"   ",
	} {
		p.sendLine(line)
	}
	kc := "/nonexistent/kubeconfig"
	p.send(map[string]any{"id": 1, "op": "frobnicate", "release": "r", "namespace": "n", "kubeconfig": kc})
	p.send(map[string]any{"id": 2})
	p.send(map[string]any{"id": 3, "op": "status", "namespace": "n", "kubeconfig": kc})
	p.send(map[string]any{"id": 4, "op": "upgrade", "release": "r", "namespace": "n", "kubeconfig": kc, "chart": "/c"})
	p.send(map[string]any{"id": 5, "op": "upgrade", "release": "r", "namespace": "n", "kubeconfig": kc, "timeoutMs": 1000})
	p.sendLine(`{"id":6,"op":"upgrade","release":"r","namespace":"n","kubeconfig":"/k","timeoutMs":"5s"}`)
	p.send(map[string]any{"id": 7, "op": "history", "release": "r", "namespace": "n"})
	want := map[int]string{
		1: `chartpilot-helm engine: unknown op "frobnicate"`,
		2: `chartpilot-helm engine: unknown op ""`,
		3: `chartpilot-helm engine: request field "release" is required`,
		4: `chartpilot-helm engine: request field "timeoutMs" is required`,
		5: `chartpilot-helm engine: request field "chart" is required`,
		6: `chartpilot-helm engine: invalid request: json: cannot unmarshal string into Go struct field engineRequest.timeoutMs of type int64`,
		7: `chartpilot-helm engine: request field "kubeconfig" is required`,
	}
	got := map[int]map[string]any{}
	for range want {
		f := p.next(30 * time.Second)
		got[frameID(f)] = f
	}
	for id, msg := range want {
		f := got[id]
		class, message := frameError(f)
		if class != classFailed || message != msg || len(f) != 2 {
			t.Errorf("call %d: answer %v, want error class failed %q", id, f, msg)
		}
	}
	// Five ignored lines with a diagnostic each; a cancel of an unknown id (it may have just
	// answered) and blank lines are ignored silently.
	time.Sleep(200 * time.Millisecond)
	if n := strings.Count(p.diagnostics(), "chartpilot-helm engine: ignoring"); n != 5 {
		t.Errorf("%d diagnostics about ignored lines, want 5:\n%s", n, p.diagnostics())
	}
	// Still serving.
	p.send(map[string]any{"id": 8, "op": "nope"})
	if f := p.next(30 * time.Second); frameID(f) != 8 {
		t.Errorf("after the bad lines: %v", f)
	}
}

// TestEngineErrorsAsTheCLI: what a call answers when helm fails is the text helm's CLI prints
// after "Error: " for the same flags (here: before any cluster is needed).
func TestEngineErrorsAsTheCLI(t *testing.T) {
	env := isolatedEnv(t)
	p := startEngine(t, envList(env))
	kc := "/nonexistent/kubeconfig"
	chart := testdata(t, "chart")
	cases := []struct {
		req  map[string]any
		argv []string
	}{
		{map[string]any{"op": "status"}, []string{"get", "all", "--namespace=n", "--kubeconfig=" + kc, "--", "r"}},
		{map[string]any{"op": "history"}, []string{"history", "--namespace=n", "--kubeconfig=" + kc, "--max=2147483647", "-o", "json", "--", "r"}},
		{map[string]any{"op": "upgrade", "chart": chart, "timeoutMs": 5000}, []string{"upgrade", "--install", "--namespace=n", "--kubeconfig=" + kc, "--output=json", "--disable-openapi-validation", "--timeout=5000ms", "--", "r", chart}},
		{map[string]any{"op": "uninstall", "timeoutMs": 5000}, []string{"uninstall", "--namespace=n", "--kubeconfig=" + kc, "--timeout=5000ms", "--", "r"}},
		{map[string]any{"op": "rollback", "timeoutMs": 5000}, []string{"rollback", "--namespace=n", "--kubeconfig=" + kc, "--timeout=5000ms", "--", "r"}},
	}
	for i, c := range cases {
		c.req["id"] = i
		c.req["release"] = "r"
		c.req["namespace"] = "n"
		c.req["kubeconfig"] = kc
		p.send(c.req)
	}
	got := map[int]map[string]any{}
	for range cases {
		f := p.next(30 * time.Second)
		got[frameID(f)] = f
	}
	for i, c := range cases {
		cli := fresh(t, c.argv, env, "")
		want := strings.TrimSuffix(strings.TrimPrefix(cli.Stderr, "Error: "), "\n")
		class, message := frameError(got[i])
		if cli.ExitCode == 0 || class != classFailed || message != want {
			t.Errorf("%v: engine answered %v; the CLI exits %d with %q", c.req["op"], got[i], cli.ExitCode, cli.Stderr)
		}
	}
}

// TestEngineExitsOnEOF: stdin ends → exit 0 within a few seconds, nothing but frames on stdout.
func TestEngineExitsOnEOF(t *testing.T) {
	p := startEngine(t, envList(isolatedEnv(t)))
	p.send(map[string]any{"id": 1, "op": "nope"})
	p.next(30 * time.Second)
	start := time.Now()
	p.stdin.Close()
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("engine exited with %v after stdin ended; stderr:\n%s", p.waitErr, p.diagnostics())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("engine still running 10 s after stdin ended")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("engine took %s to exit after stdin ended", d)
	}
	for f := range p.frames {
		t.Errorf("unexpected stdout after the answer: %v", f)
	}
}

// TestEngineExitsOnSIGTERM: SIGTERM → exit 0.
func TestEngineExitsOnSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		p := startEngine(t, envList(isolatedEnv(t)))
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.exited:
			if p.waitErr != nil {
				t.Errorf("%v: engine exited with %v; stderr:\n%s", sig, p.waitErr, p.diagnostics())
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%v: engine still running 10 s later", sig)
		}
	}
}

// TestEngineConcurrentAnswers: many calls at once, each answered exactly once, frames whole.
func TestEngineConcurrentAnswers(t *testing.T) {
	p := startEngine(t, envList(isolatedEnv(t)))
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := "status"
			if i%2 == 1 {
				op = "nope"
			}
			p.send(map[string]any{"id": i, "op": op, "release": fmt.Sprintf("r%d", i), "namespace": "n", "kubeconfig": "/nonexistent"})
		}()
	}
	wg.Wait()
	seen := map[int]int{}
	for range n {
		f := p.next(60 * time.Second)
		id := frameID(f)
		seen[id]++
		class, msg := frameError(f)
		wantMsg := "kubernetes cluster unreachable"
		if id%2 == 1 {
			wantMsg = "unknown op"
		}
		if class != classFailed || !strings.Contains(msg, wantMsg) {
			t.Errorf("call %d: %v", id, f)
		}
	}
	for i := range n {
		if seen[i] != 1 {
			t.Errorf("call %d answered %d times", i, seen[i])
		}
	}
}

// In-process parts: the engine with a pipe for its frames.

type frameReader struct {
	t  *testing.T
	sc *bufio.Scanner
}

func newTestEngine(t *testing.T) (*engine, *frameReader) {
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close(); r.Close() })
	e := newEngine(w, io.Discard)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return e, &frameReader{t, sc}
}

func (fr *frameReader) next() map[string]any {
	fr.t.Helper()
	done := make(chan bool, 1)
	go func() { done <- fr.sc.Scan() }()
	select {
	case ok := <-done:
		if !ok {
			fr.t.Fatalf("frames ended: %v", fr.sc.Err())
		}
	case <-time.After(10 * time.Second):
		fr.t.Fatalf("no frame within 10 s")
	}
	var f map[string]any
	if err := json.Unmarshal(fr.sc.Bytes(), &f); err != nil {
		fr.t.Fatalf("frame is not JSON: %q", fr.sc.Text())
	}
	return f
}

// TestEnginePanickingCall: a call that panics is answered class failed with the panic and its
// stack; calls before and after it are not affected.
func TestEnginePanickingCall(t *testing.T) {
	e, frames := newTestEngine(t)
	e.dispatch = func(c *engineCall, req *engineRequest) engineResult {
		if req.Op == "boom" {
			var m map[string]int
			m["x"] = 1 // panics: assignment to entry in nil map
		}
		return engineResult{Done: true}
	}
	e.handleLine([]byte(`{"id":1,"op":"boom"}`))
	f := frames.next()
	class, msg := frameError(f)
	if frameID(f) != 1 || class != classFailed || !strings.HasPrefix(msg, "panic: assignment to entry in nil map") || !strings.Contains(msg, "goroutine ") {
		t.Fatalf("answer to the panicking call: %v", f)
	}
	e.handleLine([]byte(`{"id":2,"op":"fine"}`))
	if f := frames.next(); frameID(f) != 2 || f["done"] != true {
		t.Fatalf("the call after the panic: %v", f)
	}
}

// TestEnginePostRenderer: helm's PostRenderer of a call sends the rendered manifests and
// returns the operator's answer: the manifest, or an error whose text is the answer's.
func TestEnginePostRenderer(t *testing.T) {
	e, frames := newTestEngine(t)
	type out struct {
		text string
		err  error
	}
	results := make(chan out, 1)
	e.dispatch = func(c *engineCall, req *engineRequest) engineResult {
		b, err := (&enginePostRenderer{e: e, c: c}).Run(bytes.NewBufferString("kind: ConfigMap\n"))
		o := out{err: err}
		if b != nil {
			o.text = b.String()
		}
		results <- o
		return engineResult{Done: true}
	}
	answers := []struct {
		line    string
		text    string
		errText string
	}{
		{`{"postRendered":%d,"manifest":"kind: Secret\n"}`, "kind: Secret\n", ""},
		{`{"postRendered":%d,"error":"refused by policy"}`, "", "refused by policy"},
		{`{"postRendered":%d,"manifest":"x","error":"both: the error wins"}`, "", "both: the error wins"},
		{`{"postRendered":%d}`, "", `chartpilot-helm engine: the post-render answer has neither "manifest" nor "error"`},
		{`{"cancel":%d}`, "", "context canceled"},
	}
	for i, a := range answers {
		id := 10 + i
		e.handleLine([]byte(fmt.Sprintf(`{"id":%d,"op":"x"}`, id)))
		f := frames.next()
		if frameID(f) != id || f["postRender"] != "kind: ConfigMap\n" || len(f) != 2 {
			t.Fatalf("post-render request: %v", f)
		}
		e.handleLine([]byte(fmt.Sprintf(`{"postRendered":%d,"manifest":"for another call"}`, id+100)))
		e.handleLine([]byte(fmt.Sprintf(a.line, id)))
		o := <-results
		if o.text != a.text || (o.err == nil) != (a.errText == "") || (o.err != nil && o.err.Error() != a.errText) {
			t.Errorf("answer %s: Run returned %q, %v", a.line, o.text, o.err)
		}
		if f := frames.next(); frameID(f) != id || f["done"] != true {
			t.Errorf("result: %v", f)
		}
		// A late second answer is ignored.
		e.handleLine([]byte(fmt.Sprintf(`{"postRendered":%d,"manifest":"late"}`, id)))
	}
}

func TestClassify(t *testing.T) {
	notFound := errors.New("release: not found")
	cases := []struct {
		err       error
		cancelled bool
		want      string
	}{
		{fmt.Errorf("uninstall: Release not loaded: r: %w", driver.ErrReleaseNotFound), false, classNotFound},
		{notFound, false, classNotFound},
		{context.Canceled, true, classCancelled},
		{fmt.Errorf("UPGRADE FAILED: %w", context.Canceled), true, classCancelled},
		{fmt.Errorf("UPGRADE FAILED: %w", context.DeadlineExceeded), false, classTimeout},
		{errors.New("failed pre-install: resource Pod/ns/x not ready. status: InProgress, message: …\ncontext deadline exceeded"), false, classTimeout},
		{errors.New("timed out waiting for the condition"), false, classTimeout},
		{errors.New("secrets is forbidden: User cannot create"), false, classFailed},
		{errors.New("UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress"), false, classFailed},
	}
	for _, c := range cases {
		if got := classify(c.err, c.cancelled); got != c.want {
			t.Errorf("classify(%q, cancelled=%v) = %s, want %s", c.err, c.cancelled, got, c.want)
		}
	}
}

// TestMergeValuesAsHelm: a call's values are typed exactly as `helm … -f file` types them
// (values.Options.MergeValues on a file of the same text).
func TestMergeValuesAsHelm(t *testing.T) {
	for _, text := range []string{
		`{"i":7,"big":1000000,"huge":12345678901234567890,"neg":-3,"f":1.5,"e":1e3,"b":true,"s":"x","n":null,"m":{"k":[1,"a",{"x":0.1}]}}`,
		"{}",
		"",
		"a: 1\nb: yes\nc: 010\n---\nd: 2\n",
	} {
		file := filepath.Join(t.TempDir(), "values.json")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		want, werr := (&values.Options{ValueFiles: []string{file}}).MergeValues(getter.All(cli.New()))
		got, err := mergeValues(&text)
		if werr != nil || err != nil {
			t.Fatalf("%q: helm: %v, engine: %v", text, werr, err)
		}
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Errorf("%q: engine %#v\nhelm %#v", text, got, want)
		}
	}
	bad := "{not yaml: ["
	file := filepath.Join(t.TempDir(), "values.json")
	if err := os.WriteFile(file, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, werr := (&values.Options{ValueFiles: []string{file}}).MergeValues(getter.All(cli.New()))
	_, err := mergeValues(&bad)
	if werr == nil || err == nil || strings.Replace(werr.Error(), file, "values", 1) != err.Error() {
		t.Errorf("bad values: engine %v, helm %v", err, werr)
	}
	if got, err := mergeValues(nil); err != nil || len(got) != 0 {
		t.Errorf("no values: %v %v", got, err)
	}
}

// TestGuardTransport: a call's requests pass while it runs; when it has answered, one in flight
// is aborted and new ones fail at once (helm's leftover goroutines reach no API server).
func TestGuardTransport(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	defer close(release)
	ended, end := context.WithCancel(context.Background())
	client := &http.Client{Transport: &guardTransport{rt: http.DefaultTransport, ended: ended}}

	resp, err := client.Get(srv.URL + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("before the end: %q", b)
	}

	slow, err := client.Get(srv.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() { _, err := io.ReadAll(slow.Body); read <- err }()
	end()
	select {
	case err := <-read:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the request in flight at the end: %v, want context canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request in flight was not aborted at the end")
	}
	slow.Body.Close()

	if _, err := client.Get(srv.URL + "/fast"); !errors.Is(err, errCallEnded) || !errors.Is(err, context.Canceled) {
		t.Errorf("after the end: %v, want errCallEnded (a context.Canceled)", err)
	}
}
