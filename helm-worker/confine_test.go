package main

// Confinement in the engine without a cluster: how a URL is read, which writes pass, that a
// refused request never reaches the server, that a body is read as the API server reads it, and
// the release storage guard (records.go), with the record MAC the operator's TypeScript makes.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

func TestRequestTargetOf(t *testing.T) {
	cases := []struct {
		url  string
		want *resourceTarget
	}{
		{"/api/v1/namespaces/team-a/configmaps/web", &resourceTarget{version: "v1", namespace: "team-a", resource: "configmaps", name: "web"}},
		{"/apis/apps/v1/namespaces/team-a/deployments/web/scale", &resourceTarget{group: "apps", version: "v1", namespace: "team-a", resource: "deployments", name: "web", subresource: "scale"}},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles/x", &resourceTarget{group: "rbac.authorization.k8s.io", version: "v1", resource: "clusterroles", name: "x"}},
		{"/api/v1/namespaces/kube-system", &resourceTarget{version: "v1", namespace: "kube-system", resource: "namespaces", name: "kube-system"}},
		{"/api/v1/namespaces/x/status", &resourceTarget{version: "v1", namespace: "x", resource: "namespaces", name: "x", subresource: "status"}},
		{"/api/v1/namespaces", &resourceTarget{version: "v1", resource: "namespaces"}},
		{"/api/v1/watch/namespaces/a/pods", &resourceTarget{version: "v1", namespace: "a", resource: "pods", watch: true}},
		{"/api/v1/namespaces/a/pods?watch=1&dryRun=All", &resourceTarget{version: "v1", namespace: "a", resource: "pods", watch: true, dryRun: true}},
		// Decoded as the API server decodes the path before splitting it.
		{"/api/v1/namespaces/team-a%2F..%2Fkube-system/configmaps/x", &resourceTarget{version: "v1", namespace: "team-a", resource: "..", name: "kube-system", subresource: "configmaps"}},
		{"/api/v1", nil},
		{"/apis/apps/v1", nil},
		{"/version", nil},
		{"/openapi/v2", nil},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := requestTargetOf(u)
		if c.want == nil {
			if ok {
				t.Errorf("%s: %+v, want no resource", c.url, got)
			}
			continue
		}
		if !ok || got != *c.want {
			t.Errorf("%s: %+v (%v), want %+v", c.url, got, ok, *c.want)
		}
	}
	for _, p := range []string{"/api/v1/namespaces/a//configmaps", "/api/v1/namespaces/a/../kube-system/configmaps", "/api/v1/./namespaces"} {
		if !hasOddSegments(p) {
			t.Errorf("%s: not refused as odd", p)
		}
	}
}

// fakeScopes is a discovery table.
type fakeScopes map[string]resourceInfo

func (f fakeScopes) find(_ context.Context, group, version, resource string) (resourceInfo, bool, error) {
	info, ok := f[group+"/"+version+"/"+resource]
	return info, ok, nil
}

var testScopes = fakeScopes{
	"/v1/configmaps": {kind: "ConfigMap", namespaced: true},
	"/v1/secrets":    {kind: "Secret", namespaced: true},
	"/v1/namespaces": {kind: "Namespace"},
	"rbac.authorization.k8s.io/v1/clusterroles": {kind: "ClusterRole"},
}

// wireFixture: a confining transport in front of a server that records what reached it.
type wireFixture struct {
	client  *http.Client
	server  *httptest.Server
	mu      sync.Mutex
	reached []string
	bodies  [][]byte
	c       *confinement
}

func newWireFixture(t *testing.T, allowCluster, allowCross bool) *wireFixture {
	f := &wireFixture{}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reached = append(f.reached, r.Method+" "+r.URL.Path)
		f.bodies = append(f.bodies, b)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(f.server.Close)
	f.c = &confinement{namespace: "team-a", allowClusterScoped: allowCluster, allowCrossNamespace: allowCross, scopes: testScopes, refused: &refusals{}}
	f.client = &http.Client{Transport: &confiningTransport{rt: http.DefaultTransport, c: f.c}}
	return f
}

func (f *wireFixture) do(t *testing.T, method, path, contentType string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.server.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var st metav1.Status
	_ = json.Unmarshal(b, &st)
	return res.StatusCode, st.Message
}

func TestConfiningTransport(t *testing.T) {
	cm := func(ns string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"` + ns + `"}}`)
	}
	refused := []struct {
		what, method, path, contentType string
		body                            []byte
		message                         string
	}{
		{"another namespace", "POST", "/api/v1/namespaces/kube-system/configmaps", "application/json", cm("kube-system"),
			`refused to create ConfigMap "web" in namespace kube-system: objects of this custom resource must stay in its namespace team-a; set allowCrossNamespace: true`},
		{"delete elsewhere", "DELETE", "/api/v1/namespaces/kube-system/configmaps/cluster-config", "", nil, `refused to delete ConfigMap "cluster-config" in namespace kube-system`},
		{"delete every one elsewhere", "DELETE", "/api/v1/namespaces/kube-system/configmaps", "", nil, `refused to deletecollection ConfigMap in namespace kube-system`},
		{"body names another namespace", "PUT", "/api/v1/namespaces/team-a/configmaps/web", "application/json", cm("kube-system"),
			`its metadata.namespace "kube-system" differs from the namespace "team-a" the request is sent to`},
		// go-yaml v2 (through sigs.k8s.io/yaml, as the API server reads apply-patch+yaml) applies
		// `<<` in document order: the later merge key wins over the object's own namespace.
		{"a late merge key, read as the server reads it", "PATCH", "/api/v1/namespaces/team-a/configmaps/web", "application/apply-patch+yaml",
			[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: team-a\n  <<: {namespace: kube-system}\n"), `differs from the namespace "team-a"`},
		{"cluster-scoped", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "application/json", []byte(`{"metadata":{"name":"escape"}}`),
			`refused to create ClusterRole "escape" (rbac.authorization.k8s.io/v1): it is cluster-scoped`},
		{"a Namespace", "DELETE", "/api/v1/namespaces/kube-system", "", nil, `refused to delete Namespace "kube-system" (v1): it is cluster-scoped`},
		{"unknown resource", "POST", "/apis/example.com/v1/namespaces/team-a/widgets", "application/json", []byte(`{}`), `the API server does not serve this resource`},
		{"a record's name", "PUT", "/api/v1/namespaces/team-a/secrets/sh.helm.release.v1.web.v3", "application/json",
			[]byte(`{"metadata":{"name":"sh.helm.release.v1.web.v3"},"type":"Opaque"}`), `named or typed like a Helm release record`},
		{"a record's type", "POST", "/api/v1/namespaces/team-a/secrets", "application/json",
			[]byte(`{"metadata":{"name":"innocent"},"type":"helm.sh/release.v1"}`), `named or typed like a Helm release record`},
		{"Secrets by collection", "DELETE", "/api/v1/namespaces/team-a/secrets", "", nil, `deleted one by one`},
		{"an odd path", "POST", "/api/v1/namespaces/team-a//configmaps", "application/json", cm("team-a"), `only API resources may be written`},
		{"not a resource", "POST", "/apis/apps/v1", "application/json", []byte(`{}`), `only API resources may be written`},
		{"a body nobody can check", "POST", "/api/v1/namespaces/team-a/configmaps", "text/plain", []byte("hello"), `cannot be checked`},
		{"JSON that is not", "POST", "/api/v1/namespaces/team-a/configmaps", "application/json", []byte("{"), `not valid JSON`},
		{"a record read", "GET", "/api/v1/namespaces/team-a/secrets/sh.helm.release.v1.web.v1", "", nil, `only helm's release storage reads them`},
		{"a record list", "GET", "/api/v1/namespaces/team-a/secrets?labelSelector=owner%3Dhelm%2Cname%3Dweb", "", nil, `only helm's release storage reads them`},
	}
	f := newWireFixture(t, false, false)
	for _, c := range refused {
		code, message := f.do(t, c.method, c.path, c.contentType, c.body)
		if code < 400 || !strings.Contains(message, c.message) {
			t.Errorf("%s: %d %q, want a refusal containing %q", c.what, code, message, c.message)
		}
	}
	if len(f.reached) != 0 {
		t.Errorf("refused requests reached the server: %v", f.reached)
	}
	if got := len(f.c.refused.all()); got != min(len(refused), maxRefusalsKept) {
		t.Errorf("%d refusals kept, want %d", got, min(len(refused), maxRefusalsKept))
	}

	// What is allowed reaches the server, body byte for byte.
	allowed := []struct{ method, path, contentType string }{
		{"POST", "/api/v1/namespaces/team-a/configmaps", "application/json"},
		{"PATCH", "/api/v1/namespaces/team-a/configmaps/web", "application/apply-patch+yaml"},
		{"DELETE", "/api/v1/namespaces/team-a/configmaps/web", ""},
		{"GET", "/api/v1/namespaces/kube-system/configmaps", ""},
		{"GET", "/api/v1/namespaces/team-a/secrets?labelSelector=app%3Dweb", ""},
	}
	f = newWireFixture(t, false, false)
	for _, a := range allowed {
		body := cm("team-a")
		if a.method == "GET" {
			body = nil
		}
		if code, message := f.do(t, a.method, a.path, a.contentType, body); code != 200 {
			t.Errorf("%s %s: %d %q, want it passed", a.method, a.path, code, message)
		}
	}
	if len(f.reached) != len(allowed) || !bytes.Equal(f.bodies[0], cm("team-a")) {
		t.Errorf("reached %v with bodies %q", f.reached, f.bodies)
	}

	// The entry's settings allow what they say, and only that.
	f = newWireFixture(t, true, true)
	for _, a := range []struct{ method, path string }{{"POST", "/api/v1/namespaces/kube-system/configmaps"}, {"POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"}} {
		if code, message := f.do(t, a.method, a.path, "application/json", []byte(`{"metadata":{"name":"x"}}`)); code != 200 {
			t.Errorf("allowed %s %s: %d %q", a.method, a.path, code, message)
		}
	}
	if code, _ := f.do(t, "POST", "/api/v1/namespaces/kube-system/configmaps", "application/json", cm("team-a")); code != 403 {
		t.Errorf("a body naming another namespace than its URL passed with allowCrossNamespace: %d", code)
	}
}

// A protobuf body (what client-go's typed clients send for built-in kinds) is read with the
// scheme: its namespace and a Secret's type count as in JSON.
func TestConfiningTransportProtobuf(t *testing.T) {
	encode := func(obj runtime.Object) []byte {
		var buf bytes.Buffer
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	f := newWireFixture(t, false, false)
	elsewhere := encode(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "kube-system"}})
	if code, message := f.do(t, "POST", "/api/v1/namespaces/team-a/configmaps", "application/vnd.kubernetes.protobuf", elsewhere); code != 403 || !strings.Contains(message, `"kube-system" differs`) {
		t.Errorf("protobuf body naming another namespace: %d %q", code, message)
	}
	record := encode(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "x"}, Type: releaseRecordType})
	if code, message := f.do(t, "POST", "/api/v1/namespaces/team-a/secrets", "application/vnd.kubernetes.protobuf", record); code != 403 || !strings.Contains(message, "typed like a Helm release record") {
		t.Errorf("protobuf Secret of the record type: %d %q", code, message)
	}
	here := encode(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	if code, message := f.do(t, "POST", "/api/v1/namespaces/team-a/configmaps", "application/vnd.kubernetes.protobuf", here); code != 200 {
		t.Errorf("protobuf body in the namespace: %d %q", code, message)
	}
	if code, _ := f.do(t, "POST", "/api/v1/namespaces/team-a/configmaps", "application/vnd.kubernetes.protobuf", []byte("k8s\x00garbage")); code != 400 {
		t.Errorf("unreadable protobuf passed: %d", code)
	}
}

// The MAC is the operator's: this vector is what src/helm/record-mac.ts makes (its unit test,
// test/unit/apiproxy/records.test.ts, checks the same one), so a record stamped by either
// verifies in the other.
func TestRecordMACAsTheOperatorMakesIt(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString("JdCP//hgL3H2kshMBsNH0knBT/mJk+AWP5nLtPAoxF4=")
	labels := map[string]string{"owner": "helm", "name": "web", "version": "2", "status": "deployed", "chartpilot.io/fingerprint": "abc"}
	got := recordMAC(key, "team-a", "sh.helm.release.v1.web.v2", releaseRecordType, labels, []byte("H4sIAAAAAAAC/w=="))
	if want := "6XIqxjGBG9Fv9rH260AcE17SHcjM761dCqHZ5oq5pfE"; got != want {
		t.Errorf("record MAC %s, want the operator's %s", got, want)
	}
}

// memSecrets is an in-memory Secrets client (the part helm's driver uses).
type memSecrets struct {
	corev1client.SecretInterface
	ns    string
	items map[string]*corev1.Secret
}

func (m *memSecrets) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Secret, error) {
	if s, ok := m.items[name]; ok {
		return s.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(secretsResource, name)
}

func (m *memSecrets) List(_ context.Context, _ metav1.ListOptions) (*corev1.SecretList, error) {
	l := &corev1.SecretList{}
	for _, s := range m.items {
		l.Items = append(l.Items, *s.DeepCopy())
	}
	return l, nil
}

func (m *memSecrets) Create(_ context.Context, s *corev1.Secret, _ metav1.CreateOptions) (*corev1.Secret, error) {
	c := s.DeepCopy()
	c.Namespace = m.ns
	m.items[c.Name] = c
	return c, nil
}

func (m *memSecrets) Update(ctx context.Context, s *corev1.Secret, o metav1.UpdateOptions) (*corev1.Secret, error) {
	return m.Create(ctx, s, metav1.CreateOptions{})
}

func (m *memSecrets) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	delete(m.items, name)
	return nil
}

// storedRecord is a record as helm's driver makes it.
func storedRecord(t *testing.T, release, namespace string, revision int) *corev1.Secret {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	json.NewEncoder(zw).Encode(map[string]any{"name": release, "namespace": namespace, "version": revision, "manifest": "---\nkind: ConfigMap\n"})
	zw.Close()
	name := "sh.helm.release.v1." + release + ".v" + strconv.Itoa(revision)
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "helm", "name": release, "version": strconv.Itoa(revision), "status": "deployed"}},
		Type: releaseRecordType, Data: map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))}}
}

func TestRecordGuard(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	mem := &memSecrets{ns: "team-a", items: map[string]*corev1.Secret{}}
	ctx := context.Background()
	g := newRecordGuard(mem, "web", "team-a", key, &refusals{})

	// Written by helm through the guard: stamped, and served back.
	if _, err := g.Create(ctx, storedRecord(t, "web", "team-a", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if mem.items["sh.helm.release.v1.web.v1"].Annotations[recordMACAnnotation] == "" {
		t.Fatal("the record was not stamped")
	}
	next := newRecordGuard(mem, "web", "team-a", key, &refusals{})
	if _, err := next.Get(ctx, "sh.helm.release.v1.web.v1", metav1.GetOptions{}); err != nil {
		t.Errorf("a stamped record is refused: %v", err)
	}
	if _, err := next.List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("a list of stamped records is refused: %v", err)
	}

	// A tenant's edit of the stored bytes, a copy under another revision, an unstamped record,
	// another CR's key: foreign, and a list holding one is refused whole.
	tampered := mem.items["sh.helm.release.v1.web.v1"].DeepCopy()
	tampered.Data["release"] = append(tampered.Data["release"], 'A')
	mem.items[tampered.Name] = tampered
	if _, err := newRecordGuard(mem, "web", "team-a", key, &refusals{}).Get(ctx, tampered.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not written by chartpilot for this resource") {
		t.Errorf("an edited record: %v", err)
	}
	mem.items = map[string]*corev1.Secret{}
	g = newRecordGuard(mem, "web", "team-a", key, &refusals{})
	g.Create(ctx, storedRecord(t, "web", "team-a", 1), metav1.CreateOptions{})
	copied := mem.items["sh.helm.release.v1.web.v1"].DeepCopy()
	copied.Name, copied.Labels["version"] = "sh.helm.release.v1.web.v2", "2"
	mem.items[copied.Name] = copied
	refused := &refusals{}
	if _, err := newRecordGuard(mem, "web", "team-a", key, refused).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "sh.helm.release.v1.web.v2") {
		t.Errorf("a list with a re-labelled copy: %v", err)
	}
	if len(refused.all()) != 1 {
		t.Errorf("refusals %v, want the one", refused.all())
	}
	delete(mem.items, copied.Name)
	if _, err := newRecordGuard(mem, "web", "team-a", bytes.Repeat([]byte{8}, 32), &refusals{}).Get(ctx, "sh.helm.release.v1.web.v1", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("another CR's key proved the record: %v", err)
	}
	mem.items["sh.helm.release.v1.web.v9"] = storedRecord(t, "web", "team-a", 9)
	if _, err := newRecordGuard(mem, "web", "team-a", key, &refusals{}).Get(ctx, "sh.helm.release.v1.web.v9", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("an unstamped record: %v", err)
	}
	delete(mem.items, "sh.helm.release.v1.web.v9")

	// Writes: one create per call, updates of what it created or was served, only its release,
	// only what helm's driver makes for that revision.
	g = newRecordGuard(mem, "web", "team-a", key, &refusals{})
	if _, err := g.Get(ctx, "sh.helm.release.v1.web.v1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Update(ctx, storedRecord(t, "web", "team-a", 1), metav1.UpdateOptions{}); err != nil {
		t.Errorf("updating a served revision: %v", err)
	}
	if _, err := g.Update(ctx, storedRecord(t, "web", "team-a", 4), metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("updating a revision neither created nor served: %v", err)
	}
	if _, err := g.Create(ctx, storedRecord(t, "web", "team-a", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Create(ctx, storedRecord(t, "web", "team-a", 3), metav1.CreateOptions{}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "already created revision 2") {
		t.Errorf("a second create: %v", err)
	}
	for what, s := range map[string]*corev1.Secret{
		"another release": storedRecord(t, "db", "team-a", 1),
		"holds another one": func() *corev1.Secret {
			s := storedRecord(t, "db", "team-a", 5)
			s.Name = "sh.helm.release.v1.web.v5"
			s.Labels["name"] = "web"
			return s
		}(),
		"wrong labels": func() *corev1.Secret { s := storedRecord(t, "web", "team-a", 6); s.Labels["version"] = "7"; return s }(),
		"not a record": func() *corev1.Secret { s := storedRecord(t, "web", "team-a", 8); s.Type = "Opaque"; return s }(),
	} {
		if _, err := newRecordGuard(mem, "web", "team-a", key, &refusals{}).Create(ctx, s, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s: created (%v)", what, err)
		}
	}
	if err := g.Delete(ctx, "sh.helm.release.v1.db.v1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("deleting another release's record: %v", err)
	}
	if err := g.Delete(ctx, "sh.helm.release.v1.web.v1", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting its own release's record: %v", err)
	}
	if _, err := g.Watch(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("watch: %v", err)
	}
	if err := g.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete collection: %v", err)
	}
}

// BenchmarkConfiningTransport: the layer's own CPU per request, for the requests an install
// makes most (a server-side apply of a Deployment, a GET), against a server on loopback; compare
// with BenchmarkUnconfinedTransport, the same requests without the layer.
func BenchmarkConfiningTransport(b *testing.B) { benchmarkTransport(b, true) }

func BenchmarkUnconfinedTransport(b *testing.B) { benchmarkTransport(b, false) }

func benchmarkTransport(b *testing.B, confined bool) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{}`))
	}))
	defer server.Close()
	scopes := fakeScopes{"apps/v1/deployments": {kind: "Deployment", namespaced: true}}
	var rt http.RoundTripper = http.DefaultTransport
	if confined {
		rt = &confiningTransport{rt: rt, c: &confinement{namespace: "team-a", scopes: scopes, refused: &refusals{}}}
	}
	client := &http.Client{Transport: rt}
	deployment := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team-a","labels":{"app.kubernetes.io/name":"web","app.kubernetes.io/instance":"web","chartpilot.io/owner-uid":"3f0c"},"annotations":{"meta.helm.sh/release-name":"web","meta.helm.sh/release-namespace":"team-a"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app.kubernetes.io/name":"web"}},"template":{"metadata":{"labels":{"app.kubernetes.io/name":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"100m","memory":"64Mi"}},"readinessProbe":{"httpGet":{"path":"/","port":80}}}]}}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest("PATCH", server.URL+"/apis/apps/v1/namespaces/team-a/deployments/web?fieldManager=helm&force=true", bytes.NewReader(deployment))
		req.Header.Set("Content-Type", "application/apply-patch+yaml")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("status %d", res.StatusCode)
		}
		get, _ := http.NewRequest("GET", server.URL+"/apis/apps/v1/namespaces/team-a/deployments/web", nil)
		res, err = client.Do(get)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
}
