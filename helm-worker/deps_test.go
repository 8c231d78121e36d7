package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSameDependencyVersionsAsHelm: plain mode must be helm v4.1.4, so every module helm's own
// go.mod requires is built at exactly that version here (nothing upgraded by our imports).
func TestSameDependencyVersionsAsHelm(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", "helm.sh/helm/v4").Output()
	if err != nil {
		t.Fatalf("go mod download helm.sh/helm/v4: %v", err)
	}
	var helm struct{ Dir, Version string }
	if err := json.Unmarshal(out, &helm); err != nil {
		t.Fatal(err)
	}
	if helm.Version != "v4.1.4" {
		t.Fatalf("helm.sh/helm/v4 is %s, want v4.1.4", helm.Version)
	}
	f, err := os.Open(filepath.Join(helm.Dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	inRequire := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "require (":
			inRequire = true
		case line == ")":
			inRequire = false
		case inRequire && line != "" && !strings.HasPrefix(line, "//"):
			if fs := strings.Fields(line); len(fs) >= 2 {
				want[fs[0]] = fs[1]
			}
		}
	}
	list, err := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Version}}", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		if fs := strings.Fields(l); len(fs) == 2 {
			got[fs[0]] = fs[1]
		}
	}
	if len(want) < 50 {
		t.Fatalf("read only %d requirements from helm's go.mod", len(want))
	}
	for mod, v := range want {
		if got[mod] != v {
			t.Errorf("%s: built at %q, helm v4.1.4 requires %s", mod, got[mod], v)
		}
	}
}
