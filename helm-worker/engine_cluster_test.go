package main

// Engine tests against a real API server (skipped without KUBECONFIG, like cluster_test.go).

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// engineClient speaks the protocol with one engine for concurrent callers: results go to the
// caller of their id, post-render requests to the handler registered for it.
type engineClient struct {
	p       *engineProc
	nextID  atomic.Int64
	mu      sync.Mutex
	results map[int]chan map[string]any
	// postRender answers a post-render request: the answer's fields besides "postRendered".
	postRender map[int]func(manifest string) map[string]any
	// rendered records what each call's post-render request carried.
	rendered map[int]string
	stray    []map[string]any
}

func newEngineClient(t *testing.T, env []string) *engineClient {
	c := &engineClient{p: startEngine(t, env), results: map[int]chan map[string]any{},
		postRender: map[int]func(string) map[string]any{}, rendered: map[int]string{}}
	go func() {
		for f := range c.p.frames {
			id := frameID(f)
			c.mu.Lock()
			if m, ok := f["postRender"].(string); ok {
				c.rendered[id] = m
				h := c.postRender[id]
				c.mu.Unlock()
				if h == nil {
					t.Errorf("call %d: a post-render request the call did not ask for", id)
					continue
				}
				if a := h(m); a != nil {
					a["postRendered"] = id
					c.p.send(a)
				}
				continue
			}
			ch := c.results[id]
			delete(c.results, id)
			if ch == nil {
				c.stray = append(c.stray, f)
			}
			c.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		}
	}()
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, f := range c.stray {
			t.Errorf("a frame no call waited for: %v", f)
		}
	})
	return c
}

// start sends a call and returns its id and where its result will arrive.
func (c *engineClient) start(req map[string]any, postRender func(string) map[string]any) (int, chan map[string]any) {
	id := int(c.nextID.Add(1))
	ch := make(chan map[string]any, 1)
	c.mu.Lock()
	c.results[id] = ch
	if postRender != nil {
		c.postRender[id] = postRender
	}
	c.mu.Unlock()
	r := map[string]any{"id": id}
	for k, v := range req {
		r[k] = v
	}
	c.p.send(r)
	return id, ch
}

func (c *engineClient) call(t *testing.T, req map[string]any, postRender func(string) map[string]any) map[string]any {
	t.Helper()
	_, ch := c.start(req, postRender)
	return c.wait(t, ch)
}

func (c *engineClient) wait(t *testing.T, ch chan map[string]any) map[string]any {
	t.Helper()
	select {
	case f := <-ch:
		return f
	case <-time.After(10 * time.Minute):
		t.Fatalf("no result within 10 minutes; engine stderr:\n%s", c.p.diagnostics())
		return nil
	}
}

func (c *engineClient) renderedFor(id int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rendered[id]
}

// storedRelease is the part of helm's stored release record (Secret sh.helm.release.v1.*) the
// tests look at.
type storedRelease struct {
	Name      string         `json:"name"`
	Namespace string         `json:"namespace"`
	Version   int            `json:"version"`
	Config    map[string]any `json:"config"`
	Manifest  string         `json:"manifest"`
	Info      struct {
		Status      string `json:"status"`
		Description string `json:"description"`
		Notes       string `json:"notes"`
	} `json:"info"`
	ApplyMethod string `json:"apply_method"`
	// Labels: the Secret's labels (helm keeps the release labels there).
	Labels map[string]string `json:"-"`
}

// storedReleases reads a release's records the way helm's Secret driver stores them
// (base64 of gzipped JSON), oldest first.
func storedReleases(t *testing.T, cs kubernetes.Interface, ns, name string) []storedRelease {
	t.Helper()
	list, err := cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatalf("listing release secrets of %s/%s: %v", ns, name, err)
	}
	var out []storedRelease
	for _, s := range list.Items {
		b, err := base64.StdEncoding.DecodeString(string(s.Data["release"]))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		j, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		var r storedRelease
		if err := json.Unmarshal(j, &r); err != nil {
			t.Fatal(err)
		}
		r.Labels = s.Labels
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out
}

func clusterClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func createNamespaces(t *testing.T, cs kubernetes.Interface, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", n, err)
		}
	}
}

func randomID(prefix string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// wantRelease checks a result's release object.
func wantRelease(t *testing.T, what string, f map[string]any, want map[string]any) map[string]any {
	t.Helper()
	rel, ok := f["release"].(map[string]any)
	if !ok || len(f) != 2 {
		t.Errorf("%s: result %v, want a release", what, f)
		return nil
	}
	fields := []string{"name", "namespace", "revision", "status", "chartName", "chartVersion", "appVersion", "notes", "manifest", "description", "applyMethod"}
	if len(rel) != len(fields) {
		t.Errorf("%s: release has fields %v, want exactly %v", what, keys(rel), fields)
	}
	for _, k := range fields {
		if _, ok := rel[k]; !ok {
			t.Errorf("%s: release has no %q", what, k)
		}
	}
	for k, v := range want {
		if !reflect.DeepEqual(rel[k], v) {
			t.Errorf("%s: release %s = %#v, want %#v", what, k, rel[k], v)
		}
	}
	return rel
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestEngineClusterConcurrent: 50 concurrent upgrade --install calls through one engine, each
// in its own namespace with its own values, labels and post-render answer (changed, unchanged,
// refused, none), and a chart that fails to render in between; every release must hold exactly
// its own; then upgrades, history, status and concurrent uninstalls.
func TestEngineClusterConcurrent(t *testing.T) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: the engine cluster tests need a control plane")
	}
	id := randomID("he")
	t.Cleanup(func() { deleteNamespaces(t, kubeconfig, id) })
	cs := clusterClient(t, kubeconfig)
	const n = 50
	ns := func(i int) string { return fmt.Sprintf("%s-%d", id, i) }
	var names []string
	for i := range n {
		names = append(names, ns(i))
	}
	createNamespaces(t, cs, names...)

	chart, bad := testdata(t, "engine"), testdata(t, "engine-bad")
	sharedCache := t.TempDir()
	c := newEngineClient(t, envList(isolatedEnv(t)))

	// kind of post-rendering per release: 0,1 change the manifest, 2 returns it unchanged,
	// 3 refuses, 4 has none.
	kind := func(i int) int { return i % 5 }
	valuesOf := func(i, round int) map[string]any {
		return map[string]any{"greeting": fmt.Sprintf("hello-%d-%d", i, round), "count": i, "big": 1000000, "ratio": 0.5, "nested": map[string]any{"i": i, "list": []any{i, "x"}}}
	}
	request := func(i, round int) map[string]any {
		vals, _ := json.Marshal(valuesOf(i, round))
		req := map[string]any{
			"op": "upgrade", "release": fmt.Sprintf("r%d", i), "namespace": ns(i), "kubeconfig": kubeconfig,
			"timeoutMs": 300000, "chart": chart, "values": string(vals),
			"labels":     map[string]string{"team": fmt.Sprintf("t%d", i), "round": fmt.Sprint(round)},
			"postRender": kind(i) != 4,
		}
		if i%2 == 0 {
			req["kubeCacheDir"] = sharedCache
		} else {
			req["kubeCacheDir"] = t.TempDir()
		}
		if i%3 == 0 {
			req["historyMax"] = 2
		}
		return req
	}
	// Round 2 refuses the upgrade of some installed releases.
	refusedUpgrade := func(i, round int) bool { return round == 2 && i%10 == 1 }
	postRenderer := func(i, round int) func(string) map[string]any {
		return func(m string) map[string]any {
			if refusedUpgrade(i, round) {
				return map[string]any{"error": fmt.Sprintf("policy refuses r%d round %d", i, round)}
			}
			switch kind(i) {
			case 0, 1:
				m = strings.ReplaceAll(m, "POSTRENDER", fmt.Sprintf("engine-%d-%d", i, round))
				m = strings.Replace(m, "\nmetadata:\n", fmt.Sprintf("\nmetadata:\n  labels:\n    postrendered: \"%d\"\n", i), 1)
				return map[string]any{"manifest": m}
			case 2:
				return map[string]any{"manifest": m}
			default:
				return map[string]any{"error": fmt.Sprintf("policy refuses r%d", i)}
			}
		}
	}

	// Round 1: installs, all at once, a failing chart among them.
	type pending struct {
		id int
		ch chan map[string]any
	}
	calls := make([]pending, n)
	var badCall pending
	for i := range n {
		if i == n/2 {
			badCall.id, badCall.ch = c.start(map[string]any{"op": "upgrade", "release": "bad", "namespace": ns(7), "kubeconfig": kubeconfig, "timeoutMs": 300000, "chart": bad}, nil)
		}
		var pr func(string) map[string]any
		if kind(i) != 4 {
			pr = postRenderer(i, 1)
		}
		calls[i].id, calls[i].ch = c.start(request(i, 1), pr)
	}
	start := time.Now()
	results := make([]map[string]any, n)
	for i := range n {
		results[i] = c.wait(t, calls[i].ch)
	}
	badResult := c.wait(t, badCall.ch)
	t.Logf("50 concurrent installs answered in %s", time.Since(start))

	if class, msg := frameError(badResult); class != classFailed || msg != `execution error at (engine-bad/templates/configmap.yaml:6:8): engine-bad refuses to render` {
		t.Errorf("bad chart: %v", badResult)
	}
	if got := storedReleases(t, cs, ns(7), "bad"); len(got) != 0 {
		t.Errorf("bad chart: %d release records stored", len(got))
	}

	for i := range n {
		what := fmt.Sprintf("r%d install", i)
		rendered := c.renderedFor(calls[i].id)
		if kind(i) != 4 && !strings.Contains(rendered, fmt.Sprintf(`greeting: "hello-%d-1"`, i)) {
			t.Errorf("%s: the post-render request does not carry its own values:\n%s", what, rendered)
		}
		if kind(i) == 4 && rendered != "" {
			t.Errorf("%s: a post-render request without postRender", what)
		}
		cm, cmErr := cs.CoreV1().ConfigMaps(ns(i)).Get(context.Background(), fmt.Sprintf("r%d-cm", i), metav1.GetOptions{})
		stored := storedReleases(t, cs, ns(i), fmt.Sprintf("r%d", i))
		if kind(i) == 3 {
			if class, msg := frameError(results[i]); class != classFailed || msg != fmt.Sprintf("error while running post render on files: policy refuses r%d", i) {
				t.Errorf("%s: refused post-render answered %v", what, results[i])
			}
			if !apierrors.IsNotFound(cmErr) || len(stored) != 0 {
				t.Errorf("%s: refused, yet the ConfigMap exists (%v) or %d records are stored", what, cmErr, len(stored))
			}
			continue
		}
		wantRelease(t, what, results[i], map[string]any{
			"name": fmt.Sprintf("r%d", i), "namespace": ns(i), "revision": float64(1), "status": "deployed",
			"chartName": "engine-probe", "chartVersion": "0.2.0", "appVersion": "1.2.3",
			"notes": fmt.Sprintf("Release r%d greets hello-%d-1.\n", i, i), "description": "Install complete", "applyMethod": "ssa",
		})
		if cmErr != nil {
			t.Errorf("%s: ConfigMap: %v", what, cmErr)
			continue
		}
		wantRenderedBy := "POSTRENDER"
		if kind(i) <= 1 {
			wantRenderedBy = fmt.Sprintf("engine-%d-1", i)
			if cm.Labels["postrendered"] != fmt.Sprint(i) {
				t.Errorf("%s: ConfigMap labels %v, want postrendered=%d", what, cm.Labels, i)
			}
		} else if _, ok := cm.Labels["postrendered"]; ok {
			t.Errorf("%s: ConfigMap labels %v", what, cm.Labels)
		}
		// 1000000 from a JSON values file is a float64 to helm (sigs.k8s.io/yaml), so it renders
		// 1e+06, with `helm -f` as here (TestEngineClusterAsTheCLI compares with helm itself).
		wantData := map[string]string{"greeting": fmt.Sprintf("hello-%d-1", i), "count": fmt.Sprint(i), "big": "1e+06", "ratio": "0.5", "revision": "1", "renderedBy": wantRenderedBy}
		if !reflect.DeepEqual(cm.Data, wantData) {
			t.Errorf("%s: ConfigMap data %v, want %v", what, cm.Data, wantData)
		}
		if len(stored) != 1 {
			t.Errorf("%s: %d records", what, len(stored))
			continue
		}
		s := stored[0]
		if rel, _ := results[i]["release"].(map[string]any); rel != nil && rel["manifest"] != s.Manifest {
			t.Errorf("%s: answered manifest differs from the stored one", what)
		}
		if !strings.Contains(s.Manifest, wantRenderedBy) || s.Labels["team"] != fmt.Sprintf("t%d", i) || s.Labels["round"] != "1" || s.Labels["status"] != "deployed" {
			t.Errorf("%s: stored record: manifest %q, labels %v", what, s.Manifest, s.Labels)
		}
		wantConfig, _ := json.Marshal(valuesOf(i, 1))
		gotConfig, _ := json.Marshal(s.Config)
		if string(gotConfig) != string(wantConfig) {
			t.Errorf("%s: stored values %s, want %s", what, gotConfig, wantConfig)
		}
	}

	// Round 2: upgrades, again all at once. Releases refused in round 1 do not exist, so these
	// install and are refused again; refusedUpgrade ones fail as upgrades ("UPGRADE FAILED: …").
	for i := range n {
		var pr func(string) map[string]any
		if kind(i) != 4 {
			pr = postRenderer(i, 2)
		}
		calls[i].id, calls[i].ch = c.start(request(i, 2), pr)
	}
	for i := range n {
		results[i] = c.wait(t, calls[i].ch)
	}
	for i := range n {
		what := fmt.Sprintf("r%d upgrade", i)
		if kind(i) == 3 {
			if class, msg := frameError(results[i]); class != classFailed || msg != fmt.Sprintf("error while running post render on files: policy refuses r%d", i) {
				t.Errorf("%s: %v", what, results[i])
			}
			continue
		}
		if refusedUpgrade(i, 2) {
			if class, msg := frameError(results[i]); class != classFailed || msg != fmt.Sprintf("UPGRADE FAILED: error while running post render on files: policy refuses r%d round 2", i) {
				t.Errorf("%s: %v", what, results[i])
			}
			stored := storedReleases(t, cs, ns(i), fmt.Sprintf("r%d", i))
			cm, err := cs.CoreV1().ConfigMaps(ns(i)).Get(context.Background(), fmt.Sprintf("r%d-cm", i), metav1.GetOptions{})
			if len(stored) != 1 || stored[0].Info.Status != "deployed" || err != nil || cm.Data["greeting"] != fmt.Sprintf("hello-%d-1", i) {
				t.Errorf("%s: refused, yet stored %+v, ConfigMap %v (%v)", what, stored, cm.Data, err)
			}
			continue
		}
		wantRelease(t, what, results[i], map[string]any{"revision": float64(2), "status": "deployed", "description": "Upgrade complete",
			"notes": fmt.Sprintf("Release r%d greets hello-%d-2.\n", i, i)})
		stored := storedReleases(t, cs, ns(i), fmt.Sprintf("r%d", i))
		if len(stored) != 2 || stored[0].Info.Status != "superseded" || stored[1].Info.Status != "deployed" || stored[1].Labels["round"] != "2" {
			t.Errorf("%s: stored %+v", what, stored)
		}
	}

	// status and history of each, concurrently.
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := map[string]any{"release": fmt.Sprintf("r%d", i), "namespace": ns(i), "kubeconfig": kubeconfig}
			st := map[string]any{"op": "status"}
			hi := map[string]any{"op": "history"}
			for k, v := range base {
				st[k], hi[k] = v, v
			}
			status := c.call(t, st, nil)
			history := c.call(t, hi, nil)
			what := fmt.Sprintf("r%d", i)
			if kind(i) == 3 {
				for _, f := range []map[string]any{status, history} {
					if class, msg := frameError(f); class != classNotFound || msg != "release: not found" {
						t.Errorf("%s: never installed, yet %v", what, f)
					}
				}
				return
			}
			revisions, statuses := 2, []string{"superseded", "deployed"}
			if refusedUpgrade(i, 2) {
				revisions, statuses = 1, []string{"deployed"}
			}
			rel := wantRelease(t, what+" status", status, map[string]any{"revision": float64(revisions), "status": "deployed"})
			if up, _ := results[i]["release"].(map[string]any); up != nil && rel != nil && !reflect.DeepEqual(rel, up) {
				t.Errorf("%s: status %v differs from the upgrade's answer %v", what, rel, up)
			}
			hist, _ := history["releases"].([]any)
			if len(hist) != revisions || len(history) != 2 {
				t.Errorf("%s: history %v", what, history)
				return
			}
			for j, h := range hist {
				r := h.(map[string]any)
				wantStatus := statuses[j]
				if r["revision"] != float64(j+1) || r["status"] != wantStatus || r["manifest"] != "" || r["notes"] != "" || r["name"] != what || r["chartName"] != "engine-probe" || len(r) != 11 {
					t.Errorf("%s: history entry %d: %v", what, j, r)
				}
			}
		}()
	}
	wg.Wait()

	// Uninstall all at once.
	for i := range n {
		calls[i].id, calls[i].ch = c.start(map[string]any{"op": "uninstall", "release": fmt.Sprintf("r%d", i), "namespace": ns(i), "kubeconfig": kubeconfig, "timeoutMs": 300000, "wait": i%2 == 0}, nil)
	}
	for i := range n {
		f := c.wait(t, calls[i].ch)
		what := fmt.Sprintf("r%d uninstall", i)
		if kind(i) == 3 {
			if class, msg := frameError(f); class != classNotFound || msg != fmt.Sprintf("uninstall: Release not loaded: r%d: release: not found", i) {
				t.Errorf("%s: %v", what, f)
			}
			continue
		}
		if f["done"] != true || len(f) != 2 {
			t.Errorf("%s: %v", what, f)
		}
		if got := storedReleases(t, cs, ns(i), fmt.Sprintf("r%d", i)); len(got) != 0 {
			t.Errorf("%s: %d records left", what, len(got))
		}
		if _, err := cs.CoreV1().ConfigMaps(ns(i)).Get(context.Background(), fmt.Sprintf("r%d-cm", i), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: ConfigMap still there (%v)", what, err)
		}
	}
}

// TestEngineClusterAsTheCLI: the same sequence through the engine and through helm processes
// (this binary in plain mode, the flags of the protocol's definition) leaves the same records
// and answers the same.
func TestEngineClusterAsTheCLI(t *testing.T) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: the engine cluster tests need a control plane")
	}
	id := randomID("hx")
	t.Cleanup(func() { deleteNamespaces(t, kubeconfig, id) })
	cs := clusterClient(t, kubeconfig)
	nsE, nsC := id+"-e", id+"-c"
	createNamespaces(t, cs, nsE, nsC)
	env := isolatedEnv(t)
	c := newEngineClient(t, envList(env))
	chart := testdata(t, "engine")
	valuesDir := t.TempDir()

	type step struct {
		name   string
		req    map[string]any
		values string
		argv   []string // the CLI's flags before "-- RELEASE …", without --namespace/--kubeconfig
		args   []string // after "--"
	}
	steps := []step{
		{"install", map[string]any{"op": "upgrade", "chart": chart, "timeoutMs": 120000, "labels": map[string]string{"team": "blue", "tier": "x"}, "historyMax": 3, "description": "first"},
			`{"greeting":"hi","count":3,"big":1000000,"ratio":2.50,"e":1e3,"s":"010"}`,
			[]string{"upgrade", "--install", "--output=json", "--disable-openapi-validation", "--labels=team=blue", "--labels=tier=x", "--history-max=3", "--description=first", "--timeout=120000ms"},
			[]string{"r", chart}},
		{"status impersonating a user without rights", map[string]any{"op": "status", "impersonate": "hx-nobody"},
			"", []string{"get", "all", "--kube-as-user=hx-nobody"}, []string{"r"}},
		{"upgrade impersonating a user without rights", map[string]any{"op": "upgrade", "chart": chart, "timeoutMs": 120000, "impersonate": "hx-nobody"},
			`{}`, []string{"upgrade", "--install", "--output=json", "--disable-openapi-validation", "--kube-as-user=hx-nobody", "--timeout=120000ms"}, []string{"r", chart}},
		{"upgrade with force, no labels", map[string]any{"op": "upgrade", "chart": chart, "timeoutMs": 120000, "force": true, "disableHooks": true},
			`{"greeting":"again","count":4}`,
			[]string{"upgrade", "--install", "--output=json", "--disable-openapi-validation", "--server-side=true", "--force-conflicts", "--no-hooks", "--timeout=120000ms"},
			[]string{"r", chart}},
		{"upgrade with empty values (helm reuses the last ones)", map[string]any{"op": "upgrade", "chart": chart, "timeoutMs": 120000, "labels": map[string]string{"team": "null"}},
			`{}`,
			[]string{"upgrade", "--install", "--output=json", "--disable-openapi-validation", "--labels=team=null", "--timeout=120000ms"},
			[]string{"r", chart}},
		{"rollback to the previous revision", map[string]any{"op": "rollback", "timeoutMs": 120000},
			"", []string{"rollback", "--timeout=120000ms"}, []string{"r"}},
		{"rollback to revision 1 with force", map[string]any{"op": "rollback", "timeoutMs": 120000, "revision": 1, "force": true},
			"", []string{"rollback", "--server-side=true", "--force-conflicts", "--timeout=120000ms"}, []string{"r", "1"}},
		{"rollback to a revision that does not exist", map[string]any{"op": "rollback", "timeoutMs": 120000, "revision": 99},
			"", []string{"rollback", "--timeout=120000ms"}, []string{"r", "99"}},
		{"upgrade of another chart name", map[string]any{"op": "upgrade", "chart": testdata(t, "chart"), "timeoutMs": 120000},
			`{"greeting":"probe"}`,
			[]string{"upgrade", "--install", "--output=json", "--disable-openapi-validation", "--timeout=120000ms"},
			[]string{"r", testdata(t, "chart")}},
		{"status", map[string]any{"op": "status"}, "", []string{"get", "all", "--template={{.Release.Name}}"}, []string{"r"}},
		{"history", map[string]any{"op": "history"}, "", []string{"history", "--max=2147483647", "-o", "json"}, []string{"r"}},
		{"uninstall with a description", map[string]any{"op": "uninstall", "timeoutMs": 120000, "description": "bye", "wait": true},
			"", []string{"uninstall", "--timeout=120000ms", "--wait", "--description=bye"}, []string{"r"}},
		{"status after uninstall", map[string]any{"op": "status"}, "", []string{"get", "all"}, []string{"r"}},
		{"history after uninstall", map[string]any{"op": "history"}, "", []string{"history", "--max=2147483647", "-o", "json"}, []string{"r"}},
		{"uninstall again", map[string]any{"op": "uninstall", "timeoutMs": 120000}, "", []string{"uninstall", "--timeout=120000ms"}, []string{"r"}},
		{"rollback of nothing", map[string]any{"op": "rollback", "timeoutMs": 120000}, "", []string{"rollback", "--timeout=120000ms"}, []string{"r"}},
		{"install into a namespace that does not exist", map[string]any{"op": "upgrade", "chart": chart, "timeoutMs": 120000, "namespace": "{ns}-missing"},
			`{}`, []string{"upgrade", "--install", "--output=json", "--disable-openapi-validation", "--timeout=120000ms"}, []string{"r", chart}},
	}
	norm := func(s, ns string) string { return strings.ReplaceAll(s, ns, "{ns}") }
	for i, s := range steps {
		// The engine.
		req := map[string]any{"release": "r", "namespace": nsE, "kubeconfig": kubeconfig}
		for k, v := range s.req {
			req[k] = v
		}
		if v, ok := req["namespace"].(string); ok {
			req["namespace"] = strings.ReplaceAll(v, "{ns}", nsE)
		}
		if s.values != "" {
			req["values"] = s.values
		}
		got := c.call(t, req, nil)

		// helm.
		nsFlag := "--namespace=" + nsC
		if v, ok := s.req["namespace"].(string); ok {
			nsFlag = "--namespace=" + strings.ReplaceAll(v, "{ns}", nsC)
		}
		argv := append(append([]string{}, s.argv...), nsFlag, "--kubeconfig="+kubeconfig)
		if s.values != "" {
			f := filepath.Join(valuesDir, fmt.Sprintf("values-%d.json", i))
			if err := os.WriteFile(f, []byte(s.values), 0o600); err != nil {
				t.Fatal(err)
			}
			argv = append(argv, "--values="+f)
		}
		argv = append(append(argv, "--"), s.args...)
		cli := fresh(t, argv, env, "")

		what := fmt.Sprintf("step %d %q", i, s.name)
		if cli.ExitCode != 0 {
			class, msg := frameError(got)
			want := strings.TrimSuffix(strings.TrimPrefix(cli.Stderr, "Error: "), "\n")
			if class == "" || norm(msg, nsE) != norm(want, nsC) {
				t.Errorf("%s: engine %v; helm exits %d: %s", what, got, cli.ExitCode, cli.Stderr)
			}
			wantClass := classFailed
			if strings.Contains(want, "release: not found") {
				wantClass = classNotFound
			}
			if class != wantClass {
				t.Errorf("%s: class %s, want %s", what, class, wantClass)
			}
			continue
		}
		if _, failed := got["error"]; failed {
			t.Errorf("%s: engine failed %v; helm succeeded:\n%s", what, got, cli.Stdout)
			continue
		}
		switch s.req["op"] {
		case "upgrade":
			var h struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
				Version   int    `json:"version"`
				Manifest  string `json:"manifest"`
				Info      struct {
					Status, Description, Notes string
				} `json:"info"`
				Chart struct {
					Metadata struct{ Name, Version, AppVersion string } `json:"metadata"`
				} `json:"chart"`
				ApplyMethod string `json:"apply_method"`
			}
			if err := json.Unmarshal([]byte(cli.Stdout), &h); err != nil {
				t.Fatalf("%s: helm's output: %v\n%s", what, err, cli.Stdout)
			}
			wantRelease(t, what, got, map[string]any{"name": h.Name, "namespace": nsE, "revision": float64(h.Version), "status": h.Info.Status,
				"chartName": h.Chart.Metadata.Name, "chartVersion": h.Chart.Metadata.Version, "appVersion": h.Chart.Metadata.AppVersion,
				"notes": strings.ReplaceAll(h.Info.Notes, nsC, nsE), "manifest": strings.ReplaceAll(h.Manifest, nsC, nsE),
				"description": strings.ReplaceAll(h.Info.Description, nsC, nsE), "applyMethod": h.ApplyMethod})
		case "history":
			var h []struct {
				Revision    int    `json:"revision"`
				Status      string `json:"status"`
				Chart       string `json:"chart"`
				AppVersion  string `json:"app_version"`
				Description string `json:"description"`
			}
			if err := json.Unmarshal([]byte(cli.Stdout), &h); err != nil {
				t.Fatalf("%s: helm's output: %v\n%s", what, err, cli.Stdout)
			}
			rels, _ := got["releases"].([]any)
			if len(rels) != len(h) {
				t.Errorf("%s: engine %d revisions, helm %d", what, len(rels), len(h))
				continue
			}
			for j := range h {
				r := rels[j].(map[string]any)
				if r["revision"] != float64(h[j].Revision) || r["status"] != h[j].Status || fmt.Sprintf("%s-%s", r["chartName"], r["chartVersion"]) != h[j].Chart ||
					r["appVersion"] != h[j].AppVersion || r["description"] != h[j].Description {
					t.Errorf("%s: entry %d: engine %v, helm %+v", what, j, r, h[j])
				}
			}
		case "status":
			if _, ok := got["release"]; !ok {
				t.Errorf("%s: %v", what, got)
			}
		default:
			if got["done"] != true || len(got) != 2 {
				t.Errorf("%s: %v", what, got)
			}
		}
		// The stored records must be the same (but for namespaces and times).
		se, sc := storedReleases(t, cs, nsE, "r"), storedReleases(t, cs, nsC, "r")
		if len(se) != len(sc) {
			t.Errorf("%s: engine stored %d records, helm %d", what, len(se), len(sc))
			continue
		}
		for j := range se {
			e, h := se[j], sc[j]
			for _, l := range []map[string]string{e.Labels, h.Labels} {
				delete(l, "createdAt")
				delete(l, "modifiedAt")
			}
			ej, _ := json.Marshal(e)
			hj, _ := json.Marshal(h)
			if norm(string(ej), nsE) != norm(string(hj), nsC) || !reflect.DeepEqual(e.Labels, h.Labels) {
				t.Errorf("%s: record %d differs:\nengine %s %v\nhelm   %s %v", what, j+1, ej, e.Labels, hj, h.Labels)
			}
		}
	}
}

// TestEngineClusterCancel: {"cancel":id} during an install's hook: the call answers cancelled
// ("context canceled", as helm's SIGTERM handler makes it), the release is recorded failed, and
// stays so (nothing of the call reaches the API server after its answer); the engine lives on.
// A cancel while helm waits for a post-render answer ends the wait; nothing is stored.
func TestEngineClusterCancel(t *testing.T) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: the engine cluster tests need a control plane")
	}
	id := randomID("hk")
	t.Cleanup(func() { deleteNamespaces(t, kubeconfig, id) })
	cs := clusterClient(t, kubeconfig)
	createNamespaces(t, cs, id, id+"-p")
	c := newEngineClient(t, envList(isolatedEnv(t)))

	callID, ch := c.start(map[string]any{"op": "upgrade", "release": "r", "namespace": id, "kubeconfig": kubeconfig, "timeoutMs": 300000, "chart": testdata(t, "hang")}, nil)
	// Cancel once helm waits for the pre-install hook (its Pod exists).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := cs.CoreV1().Pods(id).Get(context.Background(), "r-pre-install", metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pre-install hook's Pod did not appear; engine stderr:\n%s", c.p.diagnostics())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	c.p.send(map[string]any{"cancel": callID})
	f := c.wait(t, ch)
	if class, msg := frameError(f); class != classCancelled || msg != "context canceled" {
		t.Errorf("cancelled install: %v", f)
	}
	status := map[string]any{"op": "status", "release": "r", "namespace": id, "kubeconfig": kubeconfig}
	wantRelease(t, "after the cancel", c.call(t, status, nil), map[string]any{"status": "failed", "description": `Release "r" failed: context canceled`})
	time.Sleep(3 * time.Second)
	wantRelease(t, "3 s after the cancel", c.call(t, status, nil), map[string]any{"status": "failed", "revision": float64(1)})

	// Cancel during the post-render wait.
	callID, ch = c.start(map[string]any{"op": "upgrade", "release": "p", "namespace": id + "-p", "kubeconfig": kubeconfig, "timeoutMs": 300000, "chart": testdata(t, "engine"), "postRender": true},
		func(string) map[string]any { return nil }) // never answers
	for c.renderedFor(callID) == "" {
		time.Sleep(50 * time.Millisecond)
	}
	c.p.send(map[string]any{"cancel": callID})
	f = c.wait(t, ch)
	if class, msg := frameError(f); class != classCancelled || msg != "error while running post render on files: context canceled" {
		t.Errorf("cancelled during post-render: %v", f)
	}
	if got := storedReleases(t, cs, id+"-p", "p"); len(got) != 0 {
		t.Errorf("cancelled during post-render: %d records stored", len(got))
	}
}
