// Command bench measures per-call CPU and wall time of helm install (upgrade --install) and
// uninstall, through one warm worker against a helm process per call, serially, on the cluster
// of $KUBECONFIG. Worker CPU is the worker process's user+system time across the calls
// (/proc/<pid>/stat, clock ticks, summed over all calls before dividing); a process's is its
// user+system time (rusage).
//
//	go run ./bench -n 30 -bin "$(bash ../devcluster/provision.sh helm-worker | tail -1)/chartpilot-helm"
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	n := flag.Int("n", 30, "calls of each kind per mode")
	bin := flag.String("bin", "", "chartpilot-helm binary (required)")
	chart := flag.String("chart", "../charts/webapp", "chart to install")
	flag.Parse()
	if *bin == "" || os.Getenv("KUBECONFIG") == "" {
		fmt.Fprintln(os.Stderr, "bench: -bin and $KUBECONFIG are required")
		os.Exit(2)
	}
	chartPath, _ := filepath.Abs(*chart)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	ns := "hwbench-" + hex.EncodeToString(b)
	home, _ := os.MkdirTemp("", "hwbench-")
	defer os.RemoveAll(home)
	env := map[string]string{"PATH": os.Getenv("PATH"), "HOME": home, "KUBECONFIG": os.Getenv("KUBECONFIG")}
	must(run(*bin, env, "upgrade", "--install", "--namespace="+ns, "--create-namespace", "warmup", chartPath))
	defer run(*bin, env, "uninstall", "--namespace="+ns, "warmup")

	installArgs := func(name string) []string {
		return []string{"upgrade", "--install", name, chartPath, "-n", ns, "--disable-openapi-validation", "--history-max", "10"}
	}
	uninstallArgs := func(name string) []string { return []string{"uninstall", name, "-n", ns} }

	type figures struct{ cpu, wall time.Duration }
	results := map[string]figures{}

	// A helm process per call.
	for _, kind := range []string{"install", "uninstall"} {
		var f figures
		for i := range *n {
			args := installArgs(fmt.Sprintf("p%d", i))
			if kind == "uninstall" {
				args = uninstallArgs(fmt.Sprintf("p%d", i))
			}
			start := time.Now()
			cmd := exec.Command(*bin, args...)
			cmd.Env = list(env)
			out, err := cmd.CombinedOutput()
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: %v: %v\n%s", args, err, out)
				os.Exit(1)
			}
			f.wall += time.Since(start)
			f.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		results["process "+kind] = f
	}

	// One worker for all calls.
	w := exec.Command(*bin)
	w.Env = append(list(env), "CHARTPILOT_HELM_WORKER=1")
	stdin, _ := w.StdinPipe()
	stdout, _ := w.StdoutPipe()
	w.Stderr = os.Stderr
	must(w.Start())
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	sc.Scan() // ready
	enc := json.NewEncoder(stdin)
	id := 0
	call := func(args []string) {
		id++
		must(enc.Encode(map[string]any{"id": id, "argv": args, "env": env}))
		if !sc.Scan() {
			fmt.Fprintln(os.Stderr, "bench: the worker ended")
			os.Exit(1)
		}
		var r struct {
			ExitCode int    `json:"exitCode"`
			Stderr   string `json:"stderr"`
		}
		must(json.Unmarshal(sc.Bytes(), &r))
		if r.ExitCode != 0 {
			fmt.Fprintf(os.Stderr, "bench: %v: exit %d\n%s", args, r.ExitCode, r.Stderr)
			os.Exit(1)
		}
	}
	for _, kind := range []string{"install", "uninstall"} {
		var f figures
		cpu0 := schedCPU(w.Process.Pid)
		for i := range *n {
			args := installArgs(fmt.Sprintf("w%d", i))
			if kind == "uninstall" {
				args = uninstallArgs(fmt.Sprintf("w%d", i))
			}
			start := time.Now()
			call(args)
			f.wall += time.Since(start)
		}
		f.cpu = schedCPU(w.Process.Pid) - cpu0
		results["worker "+kind] = f
	}
	rss := vmRSS(w.Process.Pid)
	stdin.Close()
	_ = w.Wait()

	ms := func(d time.Duration) string {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)/float64(*n))
	}
	fmt.Printf("per call, mean of %d serial calls, chart %s\n", *n, filepath.Base(chartPath))
	fmt.Printf("| per call | helm process | warm worker |\n|---|---:|---:|\n")
	for _, kind := range []string{"install", "uninstall"} {
		p, w := results["process "+kind], results["worker "+kind]
		fmt.Printf("| %s: CPU | %s | %s |\n| %s: wall | %s | %s |\n", kind, ms(p.cpu), ms(w.cpu), kind, ms(p.wall), ms(w.wall))
	}
	fmt.Printf("worker RSS after %d calls: %s\n", 2**n, rss)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = exec.CommandContext(ctx, *bin, "uninstall", "warmup", "-n", ns).Run()
}

// schedCPU: user+system time of pid so far (/proc/<pid>/stat fields 14 and 15, in USER_HZ=100 ticks).
func schedCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(err)
	// Fields after the command name, which is in parentheses and may contain spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, err := strconv.ParseInt(f[11], 10, 64)
	must(err)
	stime, err := strconv.ParseInt(f[12], 10, 64)
	must(err)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// vmRSS: the VmRSS line of /proc/<pid>/status.
func vmRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func run(bin string, env map[string]string, args ...string) error {
	cmd := exec.Command(bin, args...)
	cmd.Env = list(env)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %w\n%s", args, err, out.String())
	}
	return nil
}

func list(env map[string]string) []string {
	l := []string{}
	for k, v := range env {
		l = append(l, k+"="+v)
	}
	return l
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
