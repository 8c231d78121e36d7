package main

// Leakage tests: a sequence of calls through ONE worker must give, call by call, exactly what a
// fresh helm process (this binary in plain mode) gives for the same argv, environment and
// directory: exit code, stdout, stderr. Each table is ordered so that any state a call leaves
// behind (flags, settings, environment, log level, plugins, post-renderer, color) would change
// a later call's result.
//
// Normalised, because they differ by nature: the namespace names of the cluster tests (each mode
// works in its own namespaces, `{ns}` in the table), timestamps (release dates, the release
// labels createdAt/modifiedAt) and the AGE column of `helm status`.
//
// Needs: go (builds the binary, or CHARTPILOT_HELM_BIN names one). The cluster tables need
// KUBECONFIG pointing at a cluster where the caller may impersonate; they skip without it.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var helmBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "helm-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helmBin = os.Getenv("CHARTPILOT_HELM_BIN")
	if helmBin == "" {
		helmBin = filepath.Join(dir, "chartpilot-helm")
		// provision.sh's flags (GO_BUILD_FLAGS), so its packages come from the build cache.
		build := exec.Command("go", "build", "-trimpath", "-gcflags=all=-dwarf=false", "-o", helmBin, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building chartpilot-helm:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	ExitCode int    `json:"exitCode"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

type step struct {
	name string
	argv []string
	env  map[string]string // added to the table's base environment
	dir  string
	// process: the worker is expected to hand this call to a helm process (needsProcess).
	process bool
}

// workerProc is one worker process and the protocol spoken with it.
type workerProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     *json.Encoder
	out    *bufio.Scanner
	diag   *bytes.Buffer
	diagMu *sync.Mutex
	pid    int
	nextID int
}

type lockedBuffer struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (b lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func startWorker(t *testing.T, env []string) *workerProc {
	t.Helper()
	cmd := exec.Command(helmBin)
	cmd.Env = append(append([]string{}, env...), "CHARTPILOT_HELM_WORKER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{t: t, cmd: cmd, in: json.NewEncoder(stdin), diag: &bytes.Buffer{}, diagMu: &sync.Mutex{}}
	cmd.Stderr = lockedBuffer{w.diagMu, w.diag}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.out = bufio.NewScanner(stdout)
	w.out.Buffer(make([]byte, 1<<20), 64<<20)
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	var ready struct {
		Ready       bool   `json:"ready"`
		HelmVersion string `json:"helmVersion"`
		PID         int    `json:"pid"`
	}
	w.readLine(&ready)
	if !ready.Ready || ready.PID != cmd.Process.Pid {
		t.Fatalf("ready line: %+v, worker pid %d", ready, cmd.Process.Pid)
	}
	w.pid = ready.PID
	return w
}

func (w *workerProc) readLine(v any) {
	w.t.Helper()
	if !w.out.Scan() {
		w.t.Fatalf("worker's stdout ended (err %v); its stderr:\n%s", w.out.Err(), w.diagnostics())
	}
	if err := json.Unmarshal(w.out.Bytes(), v); err != nil {
		w.t.Fatalf("worker wrote a line that is not JSON: %q: %v", w.out.Text(), err)
	}
}

func (w *workerProc) diagnostics() string {
	w.diagMu.Lock()
	defer w.diagMu.Unlock()
	return w.diag.String()
}

func (w *workerProc) call(argv []string, env map[string]string, dir string) result {
	w.t.Helper()
	w.nextID++
	id := w.nextID
	if err := w.in.Encode(map[string]any{"id": id, "argv": argv, "env": env, "dir": dir}); err != nil {
		w.t.Fatal(err)
	}
	var res struct {
		result
		ID *int `json:"id"`
	}
	w.readLine(&res)
	if res.ID == nil || *res.ID != id {
		w.t.Fatalf("response for id %v, want %d", res.ID, id)
	}
	return res.result
}

// fresh runs the binary as plain helm, as chartpilot runs helm today: the environment exactly,
// stdin from /dev/null.
func fresh(t *testing.T, argv []string, env map[string]string, dir string) result {
	t.Helper()
	cmd := exec.Command(helmBin, argv...)
	cmd.Env = envList(env)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String()}
}

func envList(env map[string]string) []string {
	l := make([]string, 0, len(env))
	for k, v := range env {
		l = append(l, k+"="+v)
	}
	return l
}

func merge(base, extra map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

var timestamps = []*regexp.Regexp{
	regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?( ?(Z|[+-]\d\d:?\d\d))?( [A-Z]{3,4})?`),
	regexp.MustCompile(`(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}`),
	regexp.MustCompile(`"(createdAt|modifiedAt)":"\d+"`),
	regexp.MustCompile(`(?m) +\d+[smhd](\d+[smh])?$`), // AGE, the last column of status's resource tables
}

func normalize(s string, names map[string]string) string {
	for from, to := range names {
		s = strings.ReplaceAll(s, from, to)
	}
	for _, re := range timestamps {
		s = re.ReplaceAllString(s, "<time>")
	}
	return s
}

// runTable runs the steps through one worker and through fresh processes and compares them.
// expand turns a step's argv/env into each mode's (namespace names), names maps them back.
func runTable(t *testing.T, base map[string]string, steps []step, expand func(mode string, s string) string, names map[string]string) {
	if expand == nil {
		expand = func(_ string, s string) string { return s }
	}
	w := startWorker(t, envList(base))
	// Both modes run each step before the next one starts, so that cluster state changes in the
	// same order; the worker goes first.
	for i, s := range steps {
		per := func(mode string) ([]string, map[string]string) {
			argv := make([]string, len(s.argv))
			for j, a := range s.argv {
				argv[j] = expand(mode, a)
			}
			env := map[string]string{}
			for k, v := range merge(base, s.env) {
				env[k] = expand(mode, v)
			}
			return argv, env
		}
		diagBefore := len(w.diagnostics())
		wArgv, wEnv := per("w")
		got := w.call(wArgv, wEnv, s.dir)
		fArgv, fEnv := per("f")
		want := fresh(t, fArgv, fEnv, s.dir)
		ranAsProcess := strings.Contains(w.diagnostics()[diagBefore:], "runs as a helm process")
		if ranAsProcess != s.process {
			t.Errorf("step %d %q: ran as a helm process = %v, want %v (worker stderr: %s)", i, s.name, ranAsProcess, s.process, w.diagnostics()[diagBefore:])
		}
		gotN := result{got.ExitCode, normalize(got.Stdout, names), normalize(got.Stderr, names)}
		wantN := result{want.ExitCode, normalize(want.Stdout, names), normalize(want.Stderr, names)}
		if gotN != wantN {
			t.Errorf("step %d %q (%v): worker and fresh helm differ\nworker: exit %d\n--- stdout\n%s--- stderr\n%s\nfresh helm: exit %d\n--- stdout\n%s--- stderr\n%s",
				i, s.name, s.argv, gotN.ExitCode, gotN.Stdout, gotN.Stderr, wantN.ExitCode, wantN.Stdout, wantN.Stderr)
		}
	}
	// Every call above went through this one process.
	if err := syscall.Kill(w.pid, 0); err != nil {
		t.Fatalf("the worker did not survive the table: %v; its stderr:\n%s", err, w.diagnostics())
	}
}

// isolatedEnv: a HOME of the test's own, so no helm config of the machine takes part.
func isolatedEnv(t *testing.T) map[string]string {
	home := t.TempDir()
	return map[string]string{"PATH": os.Getenv("PATH"), "HOME": home}
}

func testdata(t *testing.T, p string) string {
	abs, err := filepath.Abs(filepath.Join("testdata", p))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestLeakageOffline: commands that need no cluster.
func TestLeakageOffline(t *testing.T) {
	base := isolatedEnv(t)
	chart := testdata(t, "chart")
	pluginsA, pluginsB := testdata(t, "plugins-a"), testdata(t, "plugins-b")
	valuesDir := t.TempDir()
	valuesFile := filepath.Join(valuesDir, "values.yaml")
	if err := os.WriteFile(valuesFile, []byte("greeting: from-a-values-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []step{
		{name: "version", argv: []string{"version"}},
		{name: "version template (what chartpilot asks)", argv: []string{"version", "--template={{.Version}}"}},
		{name: "env with every global flag set", argv: []string{"env", "--namespace=ns-a", "--kube-as-user=alice", "--kube-as-group=g1", "--kube-context=ctx-a", "--kube-token=t", "--kube-apiserver=https://a.invalid", "--burst-limit=7", "--qps=3", "--debug"}},
		{name: "env with none: nothing of the previous call", argv: []string{"env"}},
		{name: "env from HELM_* variables", argv: []string{"env"}, env: map[string]string{"HELM_NAMESPACE": "env-ns", "HELM_KUBEASUSER": "bob", "HELM_PLUGINS": pluginsB, "HELM_CACHE_HOME": "/tmp/hc", "HELM_CONFIG_HOME": "/tmp/hcfg", "HELM_DATA_HOME": "/tmp/hd", "HELM_MAX_HISTORY": "3", "HELM_DEBUG": "true"}},
		{name: "env without them again", argv: []string{"env"}},
		{name: "template in a namespace with values and a post-renderer", argv: []string{"template", "--namespace=ns-a", "--values=" + valuesFile, "--post-renderer=pr-a", "--", "r1", chart}, env: map[string]string{"HELM_PLUGINS": pluginsA}},
		{name: "template with none of those", argv: []string{"template", "--", "r1", chart}},
		{name: "template: HELM_NAMESPACE, other plugin dir, other post-renderer", argv: []string{"template", "--post-renderer=pr-b", "--", "r2", chart}, env: map[string]string{"HELM_NAMESPACE": "env-ns", "HELM_PLUGINS": pluginsB}},
		{name: "template: a post-renderer of the previous call's plugin dir is not found", argv: []string{"template", "--post-renderer=pr-b", "--", "r2", chart}, env: map[string]string{"HELM_PLUGINS": pluginsA}},
		{name: "failing call: chart missing", argv: []string{"template", "--namespace=ns-fail", "--", "r3", filepath.Join(chart, "missing")}},
		{name: "failing call: unknown flag", argv: []string{"template", "--no-such-flag", "--", "r3", chart}},
		{name: "failing call: unknown command", argv: []string{"no-such-command"}},
		{name: "good call after failing ones", argv: []string{"template", "--", "r3", chart}},
		{name: "debug and klog verbosity", argv: []string{"template", "--debug", "--v=9", "--", "r4", chart}},
		{name: "neither", argv: []string{"template", "--", "r4", chart}},
		{name: "invalid color mode (root command fails to build)", argv: []string{"template", "--color=purple", "--", "r5", chart}},
		{name: "color always", argv: []string{"status", "--color=always", "no-such-release"}, env: map[string]string{"KUBECONFIG": "/nonexistent"}},
		{name: "color default", argv: []string{"status", "no-such-release"}, env: map[string]string{"KUBECONFIG": "/nonexistent"}},
		{name: "relative chart path in the call's directory", argv: []string{"template", "--", "r6", "chart"}, dir: filepath.Dir(chart)},
		{name: "the same relative path in the worker's own directory", argv: []string{"template", "--", "r6", "chart"}},
		{name: "help", argv: []string{"--help"}},
		{name: "help of upgrade (flag defaults from settings)", argv: []string{"upgrade", "--help"}, env: map[string]string{"HELM_NAMESPACE": "shown-nowhere", "HELM_KUBEASUSER": "carol"}},
		{name: "help of upgrade without those", argv: []string{"upgrade", "--help"}},
		{name: "no arguments (usage)", argv: []string{}},
		{name: "HELM_DRIVER=memory: list", argv: []string{"list"}, env: map[string]string{"HELM_DRIVER": "memory"}, process: true},
		{name: "unknown HELM_DRIVER (helm exits in its initialiser)", argv: []string{"list"}, env: map[string]string{"HELM_DRIVER": "bogus"}, process: true},
		{name: "a proxy variable the worker did not start with", argv: []string{"env"}, env: map[string]string{"HTTPS_PROXY": "http://proxy.invalid:3128"}, process: true},
		{name: "after the process calls, in-process again", argv: []string{"env"}},
	}
	runTable(t, base, steps, nil, nil)
}
