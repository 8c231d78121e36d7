package main

import (
	"regexp"
	"strconv"
	"testing"
)

// TestHeapDoesNotGrow: nothing of a call stays reachable after it (cobra's global flag-completion
// map once kept every call's command tree: +15 KB of live heap per call). The Go runtime's GC
// trace (GODEBUG=gctrace=1, written to fd 2, so into the calls' stderr) gives the live heap after
// each collection; after the first calls it must stay flat.
func TestHeapDoesNotGrow(t *testing.T) {
	base := isolatedEnv(t)
	base["GODEBUG"] = "gctrace=1"
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
