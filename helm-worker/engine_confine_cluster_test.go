package main

// Confinement in the engine against a real API server (skipped without KUBECONFIG): a tenant
// forges its release's record so that helm — which decodes stored manifests with go-yaml v2,
// applying `<<` in document order — reads an object and a post-delete hook as another
// namespace's. Confined calls change nothing there: the record check refuses the forgery, and
// with the record check switched off the wire rules alone refuse every write outside the
// namespace. An unconfined call on the same forgery, as the same identity, does the damage.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// localEngine is an engine in the test's process (so a test can switch its record check off),
// spoken to over its protocol.
type localEngine struct {
	e       *engine
	mu      sync.Mutex
	nextID  int
	results map[int]chan map[string]any
}

func newLocalEngine(t *testing.T, recordCheck bool) *localEngine {
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close(); r.Close() })
	l := &localEngine{e: newEngine(w, io.Discard), results: map[int]chan map[string]any{}}
	l.e.recordCheck = recordCheck
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var f map[string]any
			if json.Unmarshal(sc.Bytes(), &f) != nil {
				continue
			}
			l.mu.Lock()
			ch := l.results[frameID(f)]
			l.mu.Unlock()
			if ch != nil {
				ch <- f
			}
		}
	}()
	return l
}

func (l *localEngine) call(t *testing.T, req map[string]any) map[string]any {
	t.Helper()
	l.mu.Lock()
	l.nextID++
	id := l.nextID
	ch := make(chan map[string]any, 1)
	l.results[id] = ch
	l.mu.Unlock()
	req["id"] = id
	line, _ := json.Marshal(req)
	l.e.handleLine(line)
	select {
	case f := <-ch:
		return f
	case <-time.After(3 * time.Minute):
		t.Fatalf("call %d: no result within 3 minutes", id)
		return nil
	}
}

// lateMerge is an object that go-yaml v2 reads as targetNS/target while its own keys say
// ns/name (the merge key comes after them and repeats only keys the object has).
func lateMerge(ns, name, targetNS, target string) string {
	return "---\n# Source: engine/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n" +
		"  name: " + name + "\n  namespace: " + ns + "\n  <<: {namespace: " + targetNS + ", name: " + target + "}\ndata:\n  message: forged\n"
}

// forgeNext writes revision 2 of release in ns as a tenant can: revision 1's record, copied
// with its labels and MAC, with a post-delete hook creating victim/forged-hook and, when
// objectElsewhere, its manifest replaced by a late-merge object naming victim's ConfigMap
// cluster-config (helm stops an uninstall at a failed delete, before post-delete hooks).
func forgeNext(t *testing.T, cs kubernetes.Interface, ns, release, victim string, objectElsewhere bool) {
	t.Helper()
	ctx := context.Background()
	first, err := cs.CoreV1().Secrets(ns).Get(ctx, "sh.helm.release.v1."+release+".v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rel map[string]any
	if err := decodeStoredRelease(first.Data["release"], &rel); err != nil {
		t.Fatal(err)
	}
	rel["version"] = 2
	if objectElsewhere {
		rel["manifest"] = lateMerge(ns, release+"-cm", victim, "cluster-config")
	}
	rel["hooks"] = []any{map[string]any{"name": "forged-hook", "kind": "ConfigMap", "path": "engine/templates/hook.yaml",
		"manifest": lateMerge(ns, "forged-hook", victim, "forged-hook"), "events": []string{"post-delete"}}}
	text, _ := json.Marshal(rel)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(text)
	zw.Close()
	forged := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + release + ".v2", Namespace: ns, Labels: map[string]string{}, Annotations: first.Annotations},
		Type:       first.Type,
		Data:       map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))},
	}
	for k, v := range first.Labels {
		forged.Labels[k] = v
	}
	forged.Labels["version"] = "2"
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestEngineClusterConfinedWire(t *testing.T) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: the engine cluster tests need a control plane")
	}
	id := randomID("hw")
	t.Cleanup(func() { deleteNamespaces(t, kubeconfig, id) })
	cs := clusterClient(t, kubeconfig)
	tenant, victim := id+"-t", id+"-v"
	createNamespaces(t, cs, tenant, victim)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps(victim).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-config"}, Data: map[string]string{"owner": "platform"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	victimIntact := func(what string) {
		t.Helper()
		if _, err := cs.CoreV1().ConfigMaps(victim).Get(ctx, "cluster-config", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the victim's ConfigMap: %v", what, err)
		}
		if _, err := cs.CoreV1().ConfigMaps(victim).Get(ctx, "forged-hook", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the forged hook was created in the victim's namespace (%v)", what, err)
		}
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{5}, 32))
	confine := map[string]any{"namespace": tenant, "allowClusterScoped": false, "allowCrossNamespace": false, "recordKey": key}
	chart := testdata(t, "engine")
	checked, wireOnly := newLocalEngine(t, true), newLocalEngine(t, false)
	install := func(release string) {
		t.Helper()
		f := checked.call(t, map[string]any{"op": "upgrade", "release": release, "namespace": tenant, "confine": confine, "timeoutMs": 120000, "chart": chart, "values": `{"greeting":"hi"}`})
		if _, ok := f["release"]; !ok || f["refusals"] != nil {
			t.Fatalf("installing %s confined: %v", release, f)
		}
	}
	refusalsOf := func(f map[string]any) string {
		var out []string
		for _, r := range f["refusals"].([]any) {
			out = append(out, r.(string))
		}
		return strings.Join(out, "\n")
	}

	// The record check: the forged revision is never served.
	install("a")
	forgeNext(t, cs, tenant, "a", victim, true)
	for _, op := range []string{"uninstall", "upgrade", "rollback"} {
		f := checked.call(t, map[string]any{"op": op, "release": "a", "namespace": tenant, "confine": confine, "timeoutMs": 60000, "chart": chart, "values": `{}`, "revision": 1})
		if _, failed := f["error"]; !failed || !strings.Contains(refusalsOf(f), "refused to serve Helm release record") || !strings.Contains(refusalsOf(f), "sh.helm.release.v1.a.v2") {
			t.Errorf("%s of a forged release with the record check: %v", op, f)
		}
		victimIntact(op + " with the record check")
	}

	// The wire alone (no record check): helm reads the forgery as it likes, and every write it
	// then aims at the victim's namespace is refused.
	f := wireOnly.call(t, map[string]any{"op": "upgrade", "release": "a", "namespace": tenant, "confine": confine, "timeoutMs": 60000, "chart": chart, "values": `{}`})
	if !strings.Contains(refusalsOf(f), `refused to delete ConfigMap "cluster-config" in namespace `+victim) {
		t.Errorf("upgrade over the forgery, wire alone: %v", f)
	}
	victimIntact("upgrade, wire alone")
	install("b")
	forgeNext(t, cs, tenant, "b", victim, false)
	f = wireOnly.call(t, map[string]any{"op": "uninstall", "release": "b", "namespace": tenant, "confine": confine, "timeoutMs": 60000})
	// helm first deletes a hook's object of an earlier run (before-hook-creation), then creates it:
	// the first of them aimed elsewhere is refused, and the hook never runs.
	if !strings.Contains(refusalsOf(f), `ConfigMap "forged-hook" in namespace `+victim+`: objects of this custom resource must stay in its namespace`) {
		t.Errorf("uninstall of the forgery, wire alone: %v", f)
	}
	victimIntact("uninstall, wire alone")

	// The control: the same forgery, the same identity, unconfined — helm deletes the victim's
	// ConfigMap and creates the hook there.
	install("c")
	forgeNext(t, cs, tenant, "c", victim, true)
	f = checked.call(t, map[string]any{"op": "uninstall", "release": "c", "namespace": tenant, "kubeconfig": kubeconfig, "timeoutMs": 60000})
	if _, err := cs.CoreV1().ConfigMaps(victim).Get(ctx, "cluster-config", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("control: unconfined, the forgery did not delete the victim's ConfigMap (%v; result %v): the attack tests nothing", err, f)
	}
	if _, err := cs.CoreV1().ConfigMaps(victim).Get(ctx, "forged-hook", metav1.GetOptions{}); err != nil {
		t.Errorf("control: unconfined, the forged hook was not created in the victim's namespace: %v", err)
	}
}

// TestEngineClusterConfinedCRDChart: a chart with a CRD in crds/ and an object of that kind,
// installed by confined calls that share the engine's discovery (discovery.go): the copy read
// before the CRD existed must not hide the new kind, and a later call must find it. Without
// allowClusterScoped the CRD is refused by name.
func TestEngineClusterConfinedCRDChart(t *testing.T) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: the engine cluster tests need a control plane")
	}
	id := randomID("hd")
	group := id + ".chartpilot.test"
	t.Cleanup(func() { deleteNamespaces(t, kubeconfig, id) })
	cs := clusterClient(t, kubeconfig)
	t.Cleanup(func() {
		cs.Discovery().RESTClient().Delete().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets." + group).Do(context.Background())
	})
	ns := id + "-t"
	createNamespaces(t, cs, ns)
	chart := t.TempDir()
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: widgets\nversion: 0.1.0\n",
		"crds/widgets.yaml": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets." + group + "\nspec:\n  group: " + group +
			"\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n" +
			"    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
		"templates/widget.yaml": "apiVersion: " + group + "/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  size: 1\n",
	}
	for name, text := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(chart, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chart, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{6}, 32))
	e := newLocalEngine(t, true)
	// A first call makes the shared copy, before the CRD exists.
	if f := e.call(t, map[string]any{"op": "upgrade", "release": "first", "namespace": ns, "timeoutMs": 120000, "chart": testdata(t, "engine"), "values": `{}`,
		"confine": map[string]any{"namespace": ns, "recordKey": key}}); f["release"] == nil {
		t.Fatalf("first install: %v", f)
	}
	refused := e.call(t, map[string]any{"op": "upgrade", "release": "w", "namespace": ns, "timeoutMs": 120000, "chart": chart, "values": `{}`,
		"confine": map[string]any{"namespace": ns, "recordKey": key}})
	if !strings.Contains(fmt.Sprint(refused["refusals"]), `CustomResourceDefinition "widgets.`+group+`" (apiextensions.k8s.io/v1): it is cluster-scoped`) {
		t.Errorf("a CRD without allowClusterScoped: %v", refused)
	}
	allowed := map[string]any{"namespace": ns, "recordKey": key, "allowClusterScoped": true}
	f := e.call(t, map[string]any{"op": "upgrade", "release": "w2", "namespace": ns, "timeoutMs": 120000, "chart": chart, "values": `{}`, "confine": allowed})
	if rel, _ := f["release"].(map[string]any); rel == nil || rel["status"] != "deployed" || f["refusals"] != nil {
		t.Fatalf("installing a chart with its CRD, allowed: %v", f)
	}
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/" + group + "/v1/namespaces/" + ns + "/widgets/w2").DoRaw(context.Background()); err != nil {
		t.Errorf("the Widget was not created: %v", err)
	}
	// A later call without an Invalidate of its own (uninstall) maps the new kind.
	if f := e.call(t, map[string]any{"op": "uninstall", "release": "w2", "namespace": ns, "timeoutMs": 120000, "confine": allowed}); f["done"] != true {
		t.Errorf("uninstall: %v", f)
	}
}
