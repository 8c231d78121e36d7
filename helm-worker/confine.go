package main

// Confinement in the engine (a request's "confine"): the same rules as the operator's API proxy
// (src/apiproxy/write-policy.ts, request-info.ts, records.ts), enforced on the call's own HTTP
// transport instead of in a second process. Every request of the call's chart client (helm's
// kube client, hooks, the template engine's lookup, discovery) passes confiningTransport, which
// decides from the URL as the API server reads it and the resource's scope from discovery, never
// from a manifest: a write outside the CR's namespace, of a cluster-scoped kind, or whose body
// names another namespace than its URL, is answered 403 here and never sent. Helm's release
// storage gets a client of its own (records.go), and the chart client may neither read nor write
// anything shaped like a release record.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	kyaml "sigs.k8s.io/yaml"
)

// confineSpec is a request's "confine": where the call may write, and the key its release
// records are proved with (src/helm/record-mac.ts deriveRecordKey, made by the operator).
type confineSpec struct {
	Namespace           string `json:"namespace"`
	AllowClusterScoped  bool   `json:"allowClusterScoped"`
	AllowCrossNamespace bool   `json:"allowCrossNamespace"`
	// RecordKey is base64 of the CR's record key (32 bytes). Never logged.
	RecordKey string `json:"recordKey"`
}

// maxRefusalsKept bounds a call's refusals (a chart looping over refused requests must not grow
// the engine's memory); as the proxy's MAX_REFUSALS_KEPT.
const maxRefusalsKept = 20

// maxWriteBody is the proxy's MAX_WRITE_BODY_BYTES.
const maxWriteBody = 8 << 20

// refusals is what a call's confinement refused, in order: the result's "refusals".
type refusals struct {
	mu   sync.Mutex
	list []string
}

func (r *refusals) add(message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) < maxRefusalsKept {
		r.list = append(r.list, message)
	}
}

func (r *refusals) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.list...)
}

// resourceTarget is what an API request addresses, read from its URL as the API server's
// RequestInfoFactory reads it.
type resourceTarget struct {
	group, version, namespace, resource, name, subresource string
	watch, dryRun                                          bool
}

// namespaceSubresources: `/api/v1/namespaces/x/status` is the Namespace x, not a resource in it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// requestTargetOf reads u; ok false for anything but an API resource (discovery, /version, …).
// The path is split as the API server splits it: the decoded path on "/".
func requestTargetOf(u *url.URL) (t resourceTarget, ok bool) {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		t.version, parts = parts[1], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		t.group, t.version, parts = parts[1], parts[2], parts[3:]
	default:
		return t, false
	}
	if len(parts) == 0 {
		return t, false
	}
	q := u.Query()
	t.watch = q.Get("watch") == "true" || q.Get("watch") == "1"
	t.dryRun = len(q["dryRun"]) > 0
	if parts[0] == "watch" {
		t.watch, parts = true, parts[1:]
	}
	if len(parts) > 1 && parts[0] == "namespaces" {
		t.namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	if len(parts) == 0 || parts[0] == "" {
		return t, false
	}
	t.resource = parts[0]
	if len(parts) > 1 {
		t.name = parts[1]
	}
	if len(parts) > 2 {
		t.subresource = parts[2]
	}
	return t, true
}

// hasOddSegments: an empty, "." or ".." segment, which no client-go request has and which
// routers may read differently.
func hasOddSegments(path string) bool {
	for _, s := range strings.Split(strings.Trim(path, "/"), "/") {
		if s == "" || s == "." || s == ".." {
			return true
		}
	}
	return false
}

// resourceInfo is a resource's kind and scope from discovery.
type resourceInfo struct {
	kind       string
	namespaced bool
}

// scopeLookup tells where objects of a resource live.
type scopeLookup interface {
	// find: ok false when the server does not serve the resource (after a fresh read).
	find(ctx context.Context, group, version, resource string) (resourceInfo, bool, error)
}

// discoveryScopes reads group/version discovery documents as the operator (discovery is the
// same for every identity), one per group/version, re-read on a miss at most once a second
// (a CRD the chart just created), as the proxy's DiscoveryResourceLookup.
type discoveryScopes struct {
	client discovery.DiscoveryInterface
	mu     sync.Mutex
	lists  map[string]*scopeList
}

type scopeList struct {
	at        time.Time
	resources map[string]resourceInfo
}

const scopeRereadAfter = time.Second

func newDiscoveryScopes(cfg *rest.Config) (*discoveryScopes, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &discoveryScopes{client: dc, lists: map[string]*scopeList{}}, nil
}

func (d *discoveryScopes) find(_ context.Context, group, version, resource string) (resourceInfo, bool, error) {
	gv := version
	if group != "" {
		gv = group + "/" + version
	}
	d.mu.Lock()
	l := d.lists[gv]
	d.mu.Unlock()
	if l != nil {
		if info, ok := l.resources[resource]; ok {
			return info, true, nil
		}
		if time.Since(l.at) < scopeRereadAfter {
			return resourceInfo{}, false, nil
		}
	}
	l, err := d.load(gv)
	if err != nil {
		return resourceInfo{}, false, err
	}
	info, ok := l.resources[resource]
	return info, ok, nil
}

func (d *discoveryScopes) load(gv string) (*scopeList, error) {
	l := &scopeList{at: time.Now(), resources: map[string]resourceInfo{}}
	list, err := d.client.ServerResourcesForGroupVersion(gv)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if list != nil {
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue // a subresource: its scope is its resource's
			}
			l.resources[r.Name] = resourceInfo{kind: r.Kind, namespaced: r.Namespaced}
		}
	}
	d.mu.Lock()
	d.lists[gv] = l
	d.mu.Unlock()
	return l, nil
}

// confinement is one call's rules, shared by its transports.
type confinement struct {
	namespace           string
	allowClusterScoped  bool
	allowCrossNamespace bool
	scopes              scopeLookup
	refused             *refusals
	// crdsWritten: a write to a CustomResourceDefinition passed (discovery.go waits for it).
	crdsWritten atomic.Bool
}

// confiningTransport enforces c on every request of a call's chart client.
type confiningTransport struct {
	rt http.RoundTripper
	c  *confinement
}

var writeMethods = map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}

func (t *confiningTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		if target, ok := requestTargetOf(req.URL); ok && isRecordRead(target, req.URL) {
			return t.refuse(req, http.StatusForbidden, "refused to read Helm release records through a chart's client: only helm's release storage reads them")
		}
		return t.rt.RoundTrip(req)
	}
	verb, isWrite := writeMethods[req.Method]
	if !isWrite {
		return t.refuse(req, http.StatusForbidden, fmt.Sprintf("refused %s %s: only reads and writes of API resources are allowed in a helm call", req.Method, req.URL.Path))
	}
	target, ok := requestTargetOf(req.URL)
	if !ok || hasOddSegments(req.URL.Path) {
		return t.refuse(req, http.StatusForbidden, fmt.Sprintf("refused %s %s: only API resources may be written in a helm call", req.Method, req.URL.Path))
	}
	if verb == "delete" && target.name == "" {
		verb = "deletecollection"
	}
	body, err := readRequestBody(req)
	if err != nil {
		return t.refuse(req, http.StatusRequestEntityTooLarge, err.Error())
	}
	info, found, err := t.c.scopes.find(req.Context(), target.group, target.version, target.resource)
	if err != nil {
		return statusResponse(req, http.StatusServiceUnavailable, fmt.Sprintf("cannot tell where %s objects live: API discovery failed (%v); the call may retry", target.resource, err)), nil
	}
	meta, err := bodyMeta(req.Header.Get("Content-Type"), body, verb)
	if err != nil {
		return t.refuse(req, http.StatusBadRequest, fmt.Sprintf("refused to %s %s: %v", verb, target.resource, err))
	}
	if message := t.c.decideWrite(verb, target, info, found, meta); message != "" {
		return t.refuse(req, http.StatusForbidden, message)
	}
	if message := recordWriteProblem(verb, target, meta); message != "" {
		return t.refuse(req, http.StatusForbidden, message)
	}
	if target.group == "apiextensions.k8s.io" && target.resource == "customresourcedefinitions" {
		t.c.crdsWritten.Store(true)
	}
	out := req.Clone(req.Context())
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		out.ContentLength = int64(len(body))
	}
	return t.rt.RoundTrip(out)
}

func (t *confiningTransport) refuse(req *http.Request, code int, message string) (*http.Response, error) {
	t.c.refused.add(message)
	return statusResponse(req, code, message), nil
}

// decideWrite is write-policy.ts's decideWrite: "" when allowed, else the message naming the
// object, the rule and the setting that would allow it.
func (c *confinement) decideWrite(verb string, t resourceTarget, info resourceInfo, found bool, meta objectMeta) string {
	gv := t.version
	if t.group != "" {
		gv = t.group + "/" + t.version
	}
	if !found {
		return fmt.Sprintf("refused to %s %s (%s): the API server does not serve this resource, so where it would land is unknown; "+
			"create its CustomResourceDefinition first (or fix the apiVersion/kind in the chart)", verb, t.resource, gv)
	}
	name := t.name
	if name == "" {
		name = meta.name
	}
	what := info.kind
	if name != "" {
		what += fmt.Sprintf(" %q", name)
	}
	if t.subresource != "" {
		what += " (" + t.subresource + ")"
	}
	if !info.namespaced {
		if c.allowClusterScoped {
			return ""
		}
		return fmt.Sprintf("refused to %s %s (%s): it is cluster-scoped, and objects of this custom resource must stay in its namespace %s; "+
			"set allowClusterScoped: true on the watches entry to allow cluster-scoped objects", verb, what, gv, c.namespace)
	}
	if t.namespace == "" {
		if verb == "deletecollection" {
			return fmt.Sprintf("refused to delete every %s in all namespaces: objects of this custom resource are in namespace %s", info.kind, c.namespace)
		}
		return fmt.Sprintf("refused to %s %s (%s): the request names no namespace", verb, what, gv)
	}
	if meta.namespace != "" && meta.namespace != t.namespace {
		return fmt.Sprintf("refused to %s %s: its metadata.namespace %q differs from the namespace %q the request is sent to; make them the same", verb, what, meta.namespace, t.namespace)
	}
	if t.namespace == c.namespace || c.allowCrossNamespace {
		return ""
	}
	return fmt.Sprintf("refused to %s %s in namespace %s: objects of this custom resource must stay in its namespace %s; "+
		"set allowCrossNamespace: true on the watches entry to allow other namespaces", verb, what, t.namespace, c.namespace)
}

// recordNamePattern is helm's Secret name for one revision (record-mac.ts RECORD_NAME).
var recordNamePattern = regexp.MustCompile(`^sh\.helm\.release\.v1\.(.+)\.v([1-9][0-9]{0,9})$`)

// ownerHelmSelector is storage.ts's OWNER_HELM: a label selector asking for helm's records.
var ownerHelmSelector = regexp.MustCompile(`(?:^|,)\s*owner\s*(?:==?)\s*helm\s*(?:,|$)`)

const releaseRecordType = "helm.sh/release.v1"

func isCoreSecrets(t resourceTarget) bool {
	return t.group == "" && t.resource == "secrets" && t.subresource == ""
}

// isRecordRead: a GET of a record's Secret, or a list or watch asking for helm's records.
func isRecordRead(t resourceTarget, u *url.URL) bool {
	if !isCoreSecrets(t) {
		return false
	}
	if t.name != "" {
		return recordNamePattern.MatchString(t.name)
	}
	return ownerHelmSelector.MatchString(u.Query().Get("labelSelector"))
}

// recordWriteProblem: a chart's client may not write anything shaped like a release record,
// nor delete Secrets by collection (records.ts, for requests that are not helm's storage).
func recordWriteProblem(verb string, t resourceTarget, meta objectMeta) string {
	if !isCoreSecrets(t) {
		return ""
	}
	if verb == "deletecollection" {
		return "refused to delete Secrets by collection in a helm call: release records are deleted one by one"
	}
	name := t.name
	if name == "" {
		name = meta.name
	}
	if recordNamePattern.MatchString(name) || recordNamePattern.MatchString(meta.name) || meta.secretType == releaseRecordType {
		return fmt.Sprintf("refused to %s Secret %q: it is named or typed like a Helm release record, which only helm's release storage writes (a chart object or hook may not be)", verb, name)
	}
	return ""
}

// objectMeta is what a write's body says about the object, read as the API server reads it.
type objectMeta struct {
	name, namespace, secretType string
}

// bodyMeta reads a write body's metadata.name and .namespace (and a Secret's type) with the
// decoders the API server uses for that content type: sigs.k8s.io/json (case-sensitive) for
// JSON, sigs.k8s.io/yaml for YAML, the client-go scheme for protobuf. A body it cannot read is
// an error (fail closed). JSON patches and DeleteOptions name no object.
func bodyMeta(contentType string, body []byte, verb string) (objectMeta, error) {
	if len(bytes.TrimSpace(body)) == 0 || verb == "delete" || verb == "deletecollection" {
		return objectMeta{}, nil
	}
	mediaType := strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	var doc any
	switch mediaType {
	case "application/json", "application/merge-patch+json", "application/strategic-merge-patch+json", "":
		if err := kjson.Unmarshal(body, &doc); err != nil {
			return objectMeta{}, fmt.Errorf("the request body is not valid JSON")
		}
	case "application/json-patch+json":
		return objectMeta{}, nil
	case "application/apply-patch+yaml", "application/yaml":
		// helm and client-go send server-side applies as JSON, and go-yaml costs ~40 µs and
		// 100 KiB a body: JSON text is read as JSON (as the proxy does). Were a YAML reader to
		// read it otherwise, only this early check would differ: the URL decides where the
		// object lands, and the API server itself refuses a body naming another namespace.
		if trimmed := bytes.TrimSpace(body); len(trimmed) > 0 && trimmed[0] == '{' && kjson.Unmarshal(trimmed, &doc) == nil {
			break
		}
		doc = nil
		j, err := kyaml.YAMLToJSON(body)
		if err != nil {
			return objectMeta{}, fmt.Errorf("the request body is not valid YAML")
		}
		if err := kjson.Unmarshal(j, &doc); err != nil {
			return objectMeta{}, fmt.Errorf("the request body is not valid YAML")
		}
	case "application/vnd.kubernetes.protobuf":
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			return objectMeta{}, fmt.Errorf("the request body is protobuf of a kind this engine cannot read")
		}
		m := objectMeta{}
		if a, ok := obj.(metav1.Object); ok {
			m.name, m.namespace = a.GetName(), a.GetNamespace()
		}
		if s, ok := obj.(*corev1.Secret); ok {
			m.secretType = string(s.Type)
		}
		return m, nil
	default:
		return objectMeta{}, fmt.Errorf("the request body's content type %q cannot be checked", mediaType)
	}
	obj, _ := doc.(map[string]any)
	md, _ := obj["metadata"].(map[string]any)
	m := objectMeta{}
	m.name, _ = md["name"].(string)
	m.namespace, _ = md["namespace"].(string)
	m.secretType, _ = obj["type"].(string)
	return m, nil
}

func readRequestBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	b, err := io.ReadAll(io.LimitReader(req.Body, maxWriteBody+1))
	if err != nil {
		return nil, fmt.Errorf("the request body could not be read: %v", err)
	}
	if len(b) > maxWriteBody {
		return nil, fmt.Errorf("the request body is larger than %d bytes", maxWriteBody)
	}
	return b, nil
}

// statusResponse is the API server's way of saying no: a Status object, which client-go turns
// into the error helm reports.
func statusResponse(req *http.Request, code int, message string) *http.Response {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	reasons := map[int]metav1.StatusReason{
		http.StatusBadRequest: metav1.StatusReasonBadRequest, http.StatusForbidden: metav1.StatusReasonForbidden,
		http.StatusRequestEntityTooLarge: metav1.StatusReasonRequestEntityTooLarge, http.StatusServiceUnavailable: metav1.StatusReasonServiceUnavailable,
	}
	b, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Message: message, Reason: reasons[code], Code: int32(code)})
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b)), ContentLength: int64(len(b)), Request: req,
	}
}
