package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCancel: {"cancel":id} is SIGTERM to a helm process. For install/upgrade helm's own handler
// takes it (the call answers, the release is recorded failed, the worker lives on); for other
// commands a helm process dies of it, and so does the worker after answering 128+15. Each is
// compared with a fresh helm process sent SIGTERM at the same point.
func TestCancel(t *testing.T) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: the cancel tests need a control plane")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := "hc" + hex.EncodeToString(b)
	t.Cleanup(func() { deleteNamespaces(t, kubeconfig, id) })
	base := isolatedEnv(t)
	base["KUBECONFIG"] = kubeconfig
	hang := testdata(t, "hang")
	names := map[string]string{id + "w": "{ns}", id + "f": "{ns}"}
	// Long enough for helm to be waiting for the hook (its SIGTERM handler is set up before).
	const cancelAfter = 4 * time.Second

	w := startWorker(t, envList(base))

	compare := func(what string, got, want result) {
		t.Helper()
		g := result{got.ExitCode, normalize(got.Stdout, names), normalize(got.Stderr, names)}
		f := result{want.ExitCode, normalize(want.Stdout, names), normalize(want.Stderr, names)}
		if g != f {
			t.Errorf("%s: worker and fresh helm differ\nworker: %+v\nfresh helm: %+v", what, g, f)
		}
	}

	install := func(ns string) []string {
		return []string{"upgrade", "--install", "--namespace=" + ns, "--create-namespace", "--output=json", "--timeout=300s", "--", "r", hang}
	}
	got := w.callCancelled(install(id+"w"), base, cancelAfter)
	want := freshTerminated(t, install(id+"f"), base, cancelAfter)
	compare("cancelled install", got, want)
	if !strings.Contains(got.Stdout, "has been cancelled.") {
		t.Errorf("cancelled install: helm's handler did not run: %+v", got)
	}
	if err := syscall.Kill(w.pid, 0); err != nil {
		t.Fatalf("the worker died of a cancelled install: %v\n%s", err, w.diagnostics())
	}
	for _, mode := range []string{"w", "f"} {
		argv := []string{"status", "--namespace=" + id + mode, "--", "r"}
		var r result
		if mode == "w" {
			r = w.call(argv, base, "")
		} else {
			r = fresh(t, argv, base, "")
		}
		if !strings.Contains(r.Stdout, "STATUS: failed") {
			t.Errorf("%s: after the cancelled install the release is not failed: %+v", mode, r)
		}
	}

	// Uninstall has no handler: the pre-delete hook hangs, SIGTERM ends the process.
	for _, mode := range []string{"w", "f"} {
		argv := []string{"upgrade", "--install", "--no-hooks", "--namespace=" + id + mode + "-u", "--create-namespace", "--timeout=120s", "--", "u", hang}
		var r result
		if mode == "w" {
			r = w.call(argv, base, "")
		} else {
			r = fresh(t, argv, base, "")
		}
		if r.ExitCode != 0 {
			t.Fatalf("%s: installing without hooks: %+v", mode, r)
		}
	}
	uninstall := func(ns string) []string {
		return []string{"uninstall", "--namespace=" + ns, "--timeout=300s", "--", "u"}
	}
	got = w.callCancelled(uninstall(id+"w-u"), base, cancelAfter)
	want = freshTerminated(t, uninstall(id+"f-u"), base, cancelAfter)
	compare("cancelled uninstall", got, want)
	if got.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("cancelled uninstall: exit %d, want %d", got.ExitCode, 128+int(syscall.SIGTERM))
	}
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the worker is still running after a cancelled uninstall, which it cannot stop in-process")
	}
}

// callCancelled sends a call, then {"cancel":id} after `after`, and returns the response.
func (w *workerProc) callCancelled(argv []string, env map[string]string, after time.Duration) result {
	w.t.Helper()
	w.nextID++
	id := w.nextID
	if err := w.in.Encode(map[string]any{"id": id, "argv": argv, "env": env}); err != nil {
		w.t.Fatal(err)
	}
	time.Sleep(after)
	if err := w.in.Encode(map[string]any{"cancel": id}); err != nil {
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

// freshTerminated runs a helm process and sends it SIGTERM after `after`; death by a signal is
// reported as 128+signal.
func freshTerminated(t *testing.T, argv []string, env map[string]string, after time.Duration) result {
	t.Helper()
	cmd := exec.Command(helmBin, argv...)
	cmd.Env = envList(env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(after)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return result{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String()}
}
