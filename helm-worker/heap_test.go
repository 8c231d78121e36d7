package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestHeapDoesNotGrow: nothing of a call stays reachable after it (cobra's global flag-completion
// map once kept every call's command tree: +15 KB of live heap per call). The Go runtime's GC
// trace (GODEBUG=gctrace=1, written to fd 2, so into the calls' stderr) gives the live heap after
// each collection; after the first calls it must stay flat. GOGC=10 makes the worker collect every
// few hundred KB: at the default a 100-call window saw one collection or none (a third of runs
// failed for want of a trace), and the live heap a trace reports does not depend on GOGC.
func TestHeapDoesNotGrow(t *testing.T) {
	base := isolatedEnv(t)
	base["GODEBUG"] = "gctrace=1"
	base["GOGC"] = "10"
	chart := testdata(t, "chart")
	w := startWorker(t, envList(base))
	live := regexp.MustCompile(`(?m)^gc \d+ .* \d+->\d+->(\d+) MB`)
	var early, late []int
	const calls = 600
	for i := range calls {
		r := w.call([]string{"template", "--namespace=ns" + strconv.Itoa(i), "--", "r", chart}, base, "")
		if r.ExitCode != 0 {
			t.Fatalf("call %d: %+v", i, r)
		}
		for _, m := range live.FindAllStringSubmatch(r.Stderr, -1) {
			mb, _ := strconv.Atoi(m[1])
			switch {
			case i >= 50 && i < 150:
				early = append(early, mb)
			case i >= calls-100:
				late = append(late, mb)
			}
		}
	}
	if len(early) == 0 || len(late) == 0 {
		t.Fatalf("no GC trace in the calls' stderr (early %v, late %v)", early, late)
	}
	if maxOf(late) > maxOf(early)+2 {
		t.Errorf("live heap grows with calls: %v MB around calls 50–150, %v MB in the last 100", early, late)
	}
}

func maxOf(v []int) int {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestMemoryReturnedWhenQuiet: a worker without a call for a second hands the memory its calls
// left back to the OS (freeMemoryAfter), so an idle pool holds helm's package state, not the
// garbage of its last calls. Without it the anonymous memory stays where the last call left it.
func TestMemoryReturnedWhenQuiet(t *testing.T) {
	base := isolatedEnv(t)
	chart := testdata(t, "chart")
	w := startWorker(t, envList(base))
	for i := range 20 {
		if r := w.call([]string{"template", "--namespace=ns" + strconv.Itoa(i), "--", "r", chart}, base, ""); r.ExitCode != 0 {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
	busy := anonymousKiB(t, w.cmd.Process.Pid)
	time.Sleep(freeMemoryAfter + time.Second)
	quiet := anonymousKiB(t, w.cmd.Process.Pid)
	t.Logf("anonymous memory: %d KiB right after the calls, %d KiB after a quiet second", busy, quiet)
	if quiet > busy-2048 {
		t.Errorf("a quiet worker kept its calls' memory: %d KiB after the calls, %d KiB a second later", busy, quiet)
	}
}

func anonymousKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		t.Skipf("no /proc/<pid>/smaps_rollup here: %v", err)
	}
	m := regexp.MustCompile(`(?m)^Anonymous:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no Anonymous line in smaps_rollup: %s", b)
	}
	kib, _ := strconv.Atoi(string(m[1]))
	return kib
}
