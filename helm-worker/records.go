package main

// Helm's release records in a confined call (src/apiproxy/records.ts, in the engine): helm's
// storage driver gets a Secrets client of its own, recordGuard, which serves a record only when
// its MAC proves it this CR's (src/helm/record-mac.ts: HMAC-SHA256 over the Secret exactly as
// stored, under the CR's record key) and stamps the MAC on every record helm writes. Whatever a
// tenant writes into a Secret, helm never reads it as history; nothing is parsed to decide.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// recordMACAnnotation is record-mac.ts's RECORD_MAC_ANNOTATION.
const recordMACAnnotation = "chartpilot.io/record-mac"

// recordMAC is record-mac.ts's recordMac: every field length-prefixed (8 bytes, big-endian),
// labels sorted by key and preceded by their count as decimal text; base64url without padding.
func recordMAC(key []byte, namespace, name, secretType string, labels map[string]string, release []byte) string {
	mac := hmac.New(sha256.New, key)
	field := func(b []byte) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		mac.Write(n[:])
		mac.Write(b)
	}
	field([]byte(namespace))
	field([]byte(name))
	field([]byte(secretType))
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	field([]byte(strconv.Itoa(len(keys))))
	for _, k := range keys {
		field([]byte(k))
		field([]byte(labels[k]))
	}
	field(release)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// recordGuard is the Secrets client of a confined call's release storage: one release in one
// namespace. Calls helm's Secrets driver never makes are refused.
type recordGuard struct {
	inner     corev1client.SecretInterface
	release   string
	namespace string
	// key proves the CR's records; nil only in tests that show the wire alone (no record check).
	key     []byte
	refused *refusals

	mu      sync.Mutex
	created int          // the revision this call created (its one Create)
	served  map[int]bool // revisions served to helm in this call, proved ours
}

var _ corev1client.SecretInterface = (*recordGuard)(nil)

func newRecordGuard(inner corev1client.SecretInterface, release, namespace string, key []byte, refused *refusals) *recordGuard {
	return &recordGuard{inner: inner, release: release, namespace: namespace, key: key, refused: refused, served: map[int]bool{}}
}

var secretsResource = schema.GroupResource{Resource: "secrets"}

func (g *recordGuard) refuse(name, message string) error {
	g.refused.add(message)
	return apierrors.NewForbidden(secretsResource, name, errors.New(message))
}

// revisionOf: the revision of this call's release that a Secret name is the record of; 0 if none.
func (g *recordGuard) revisionOf(name string) int {
	m := recordNamePattern.FindStringSubmatch(name)
	if m == nil || m[1] != g.release {
		return 0
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return 0
	}
	return n
}

func (g *recordGuard) proved(s *corev1.Secret) bool {
	if s.Namespace != g.namespace || string(s.Type) != releaseRecordType {
		return false
	}
	release, ok := s.Data["release"]
	if !ok {
		return false
	}
	want := recordMAC(g.key, g.namespace, s.Name, string(s.Type), s.Labels, release)
	return hmac.Equal([]byte(want), []byte(s.Annotations[recordMACAnnotation]))
}

// judge is records.ts's judgeRead: nil when every Secret is a proved record of this release
// (their revisions are noted as served), else the refusal.
func (g *recordGuard) judge(secrets []*corev1.Secret) error {
	if g.key == nil {
		return nil
	}
	var foreign []string
	var revisions []int
	for _, s := range secrets {
		r := g.revisionOf(s.Name)
		if r == 0 || !g.proved(s) {
			name := s.Name
			if name == "" {
				name = "(a Secret without a name)"
			}
			foreign = append(foreign, name)
			continue
		}
		revisions = append(revisions, r)
	}
	if len(foreign) > 0 {
		named := strings.Join(foreign[:min(3, len(foreign))], ", ")
		if len(foreign) > 3 {
			named += fmt.Sprintf(" and %d more", len(foreign)-3)
		}
		plural, them := "", "it"
		if len(foreign) > 1 {
			plural, them = "s", "them"
		}
		return g.refuse(foreign[0], fmt.Sprintf("refused to serve Helm release record%s %s in namespace %s: not written by chartpilot for this resource (release %s); delete %s if forged, or run `chartpilot adopt`",
			plural, named, g.namespace, g.release, them))
	}
	g.mu.Lock()
	for _, r := range revisions {
		g.served[r] = true
	}
	g.mu.Unlock()
	return nil
}

func (g *recordGuard) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	s, err := g.inner.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	if err := g.judge([]*corev1.Secret{s}); err != nil {
		return nil, err
	}
	return s, nil
}

func (g *recordGuard) List(ctx context.Context, opts metav1.ListOptions) (*corev1.SecretList, error) {
	list, err := g.inner.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	items := make([]*corev1.Secret, len(list.Items))
	for i := range list.Items {
		items[i] = &list.Items[i]
	}
	if err := g.judge(items); err != nil {
		return nil, err
	}
	return list, nil
}

// admit is records.ts's decideWrite for create and update, then the stamp: a copy of s with its MAC.
func (g *recordGuard) admit(verb string, s *corev1.Secret) (*corev1.Secret, error) {
	what := "Helm release record " + s.Name
	revision := g.revisionOf(s.Name)
	if revision == 0 {
		return nil, g.refuse(s.Name, fmt.Sprintf("refused to %s %s: this helm call is for release %s in namespace %s only", verb, what, g.release, g.namespace))
	}
	if g.key == nil {
		return s, nil
	}
	g.mu.Lock()
	created, served := g.created, g.served[revision]
	g.mu.Unlock()
	if verb == "create" && created != 0 {
		return nil, g.refuse(s.Name, fmt.Sprintf("refused to create %s: this helm call already created revision %d", what, created))
	}
	if verb == "update" && revision != created && !served {
		return nil, g.refuse(s.Name, fmt.Sprintf("refused to update %s: this helm call neither created nor read that revision", what))
	}
	if problem := g.recordProblem(s, revision); problem != "" {
		return nil, g.refuse(s.Name, fmt.Sprintf("refused to %s %s: %s", verb, what, problem))
	}
	if verb == "create" {
		g.mu.Lock()
		g.created = revision
		g.mu.Unlock()
	}
	out := s.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[recordMACAnnotation] = recordMAC(g.key, g.namespace, out.Name, string(out.Type), out.Labels, out.Data["release"])
	return out, nil
}

// recordProblem is storage.ts's releaseRecordProblem on the typed Secret helm's driver made.
func (g *recordGuard) recordProblem(s *corev1.Secret, revision int) string {
	if string(s.Type) != releaseRecordType {
		return "it is not a Secret of type " + releaseRecordType
	}
	if s.Namespace != "" && s.Namespace != g.namespace {
		return "the body names another namespace"
	}
	if s.Labels["owner"] != "helm" || s.Labels["name"] != g.release || s.Labels["version"] != strconv.Itoa(revision) {
		return "its labels are not helm storage's (owner=helm, name=<release>, version=<revision>)"
	}
	var held struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Version   int    `json:"version"`
	}
	if err := decodeStoredRelease(s.Data["release"], &held); err != nil {
		return "data.release is not a Helm release"
	}
	if held.Name != g.release || held.Namespace != g.namespace || held.Version != revision {
		return "the release it holds is another release, namespace or revision"
	}
	return ""
}

// decodeStoredRelease reads data.release as helm's driver writes it: base64 of gzipped JSON.
func decodeStoredRelease(data []byte, into any) error {
	b, err := base64.StdEncoding.DecodeString(string(data))
	if err != nil {
		return err
	}
	if len(b) > 3 && bytes.Equal(b[:3], []byte{0x1f, 0x8b, 0x08}) {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return err
		}
		defer r.Close()
		if b, err = io.ReadAll(io.LimitReader(r, 64<<20)); err != nil {
			return err
		}
	}
	return json.Unmarshal(b, into)
}

func (g *recordGuard) Create(ctx context.Context, s *corev1.Secret, opts metav1.CreateOptions) (*corev1.Secret, error) {
	stamped, err := g.admit("create", s)
	if err != nil {
		return nil, err
	}
	return g.inner.Create(ctx, stamped, opts)
}

func (g *recordGuard) Update(ctx context.Context, s *corev1.Secret, opts metav1.UpdateOptions) (*corev1.Secret, error) {
	stamped, err := g.admit("update", s)
	if err != nil {
		return nil, err
	}
	return g.inner.Update(ctx, stamped, opts)
}

// Delete: any record of this call's release (helm's history pruning and uninstall).
func (g *recordGuard) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if g.revisionOf(name) == 0 {
		return g.refuse(name, fmt.Sprintf("refused to delete Helm release record %s: this helm call is for release %s in namespace %s only", name, g.release, g.namespace))
	}
	return g.inner.Delete(ctx, name, opts)
}

func (g *recordGuard) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return g.refuse("", "refused to delete Secrets by collection in a helm call: release records are deleted one by one")
}

func (g *recordGuard) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, g.refuse("", "refused to watch Helm release records: helm's release storage never watches them")
}

func (g *recordGuard) Patch(_ context.Context, name string, _ types.PatchType, _ []byte, _ metav1.PatchOptions, _ ...string) (*corev1.Secret, error) {
	return nil, g.refuse(name, fmt.Sprintf("refused to patch Helm release record %s: only helm's release storage writes records, and it never patches them", name))
}

func (g *recordGuard) Apply(_ context.Context, _ *applycorev1.SecretApplyConfiguration, _ metav1.ApplyOptions) (*corev1.Secret, error) {
	return nil, g.refuse("", "refused to apply a Helm release record: only helm's release storage writes records, and it never applies them")
}
