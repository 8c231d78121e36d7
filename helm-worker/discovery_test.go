package main

// The engine's shared discovery (discovery.go) against a small discovery server: calls that do
// not invalidate share one fetch; a call's Invalidate gets it a copy fetched after it; a kind the
// server gained since is found by the mapper's own reset.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

type discoveryServer struct {
	mu      sync.Mutex
	widgets bool
	// gadgetsAfter: /apis/example.com/v1 lists gadgets once /apis was fetched this many times.
	gadgetsAfter int
	fetches      map[string]int
}

func (d *discoveryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.fetches[r.URL.Path]++
	widgets := d.widgets
	d.mu.Unlock()
	var body any
	switch r.URL.Path {
	case "/api":
		body = map[string]any{"kind": "APIVersions", "versions": []string{"v1"}}
	case "/api/v1":
		body = map[string]any{"kind": "APIResourceList", "groupVersion": "v1", "resources": []any{
			map[string]any{"name": "configmaps", "kind": "ConfigMap", "namespaced": true, "verbs": []string{"get", "create"}}}}
	case "/apis":
		groups := []any{}
		if widgets {
			groups = append(groups, map[string]any{"name": "example.com", "versions": []any{map[string]any{"groupVersion": "example.com/v1", "version": "v1"}},
				"preferredVersion": map[string]any{"groupVersion": "example.com/v1", "version": "v1"}})
		}
		body = map[string]any{"kind": "APIGroupList", "groups": groups}
	case "/apis/example.com/v1":
		resources := []any{map[string]any{"name": "widgets", "kind": "Widget", "namespaced": true, "verbs": []string{"get", "create"}}}
		d.mu.Lock()
		if d.gadgetsAfter > 0 && d.fetches["/apis"] >= d.gadgetsAfter {
			resources = append(resources, map[string]any{"name": "gadgets", "kind": "Gadget", "namespaced": true, "verbs": []string{"get", "create"}})
		}
		d.mu.Unlock()
		body = map[string]any{"kind": "APIResourceList", "groupVersion": "example.com/v1", "resources": resources}
	case "/version":
		body = map[string]any{"major": "1", "minor": "33", "gitVersion": "v1.33.13"}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

func (d *discoveryServer) count(path string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fetches[path]
}

func TestSharedDiscovery(t *testing.T) {
	srv := &discoveryServer{fetches: map[string]int{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	shared, err := newSharedDiscovery(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	configMaps := schema.GroupKind{Kind: "ConfigMap"}

	// Calls that never invalidate (uninstall, status) share one fetch and one mapper.
	for i := 0; i < 5; i++ {
		c := newCallDiscovery(shared, nil)
		if _, err := (callMapper{c}).RESTMapping(configMaps, "v1"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := srv.count("/api/v1"); n != 1 {
		t.Errorf("5 calls without Invalidate fetched /api/v1 %d times, want once", n)
	}

	// A call that invalidates (helm's getCapabilities) reads a copy fetched after it, and the
	// calls after it share that one.
	c := newCallDiscovery(shared, nil)
	c.Invalidate()
	if _, _, err := c.ServerGroupsAndResources(); err != nil {
		t.Fatal(err)
	}
	if n := srv.count("/api/v1"); n != 2 {
		t.Errorf("after an Invalidate /api/v1 fetched %d times in all, want 2", n)
	}
	if _, _, err := (newCallDiscovery(shared, nil)).ServerGroupsAndResources(); err != nil || srv.count("/api/v1") != 2 {
		t.Errorf("the next call did not share the fresh copy: %v, %d fetches", err, srv.count("/api/v1"))
	}

	// A kind the server gained since (a CRD created meanwhile): a call that began after the copy
	// was made gets a newer one, without asking for it.
	srv.mu.Lock()
	srv.widgets = true
	srv.mu.Unlock()
	time.Sleep(time.Millisecond)
	m, err := (callMapper{newCallDiscovery(shared, nil)}).RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"}, "v1")
	if err != nil || m.Resource.Resource != "widgets" {
		t.Errorf("a new kind: %v, %v", m, err)
	}

	// Reset on a call's mapper (helm after installing CRDs) is that call's Invalidate.
	before := srv.count("/api/v1")
	d := newCallDiscovery(shared, nil)
	(callMapper{d}).Reset()
	if _, err := (callMapper{d}).RESTMapping(configMaps, "v1"); err != nil || srv.count("/api/v1") != before+1 {
		t.Errorf("after Reset: %v, /api/v1 fetched %d times, want %d", err, srv.count("/api/v1"), before+1)
	}

	// A call that wrote CRDs waits for discovery to list them; one that did not asks once.
	srv.mu.Lock()
	srv.widgets, srv.gadgetsAfter = true, srv.fetches["/apis"]+3
	srv.mu.Unlock()
	gadgets := schema.GroupKind{Group: "example.com", Kind: "Gadget"}
	if _, err := (callMapper{newCallDiscovery(shared, nil)}).RESTMapping(gadgets, "v1"); err == nil {
		t.Errorf("a call that wrote no CRD found a kind discovery lists only later")
	}
	if m, err := (callMapper{newCallDiscovery(shared, func() bool { return true })}).RESTMapping(gadgets, "v1"); err != nil || m.Resource.Resource != "gadgets" {
		t.Errorf("a call that wrote CRDs did not wait for discovery to list them: %v, %v", m, err)
	}
}
