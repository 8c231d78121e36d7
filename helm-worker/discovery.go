package main

// Discovery shared by the engine's confined calls. A helm process reads the API server's
// discovery through a disk cache of its own and rebuilds its REST mapper from it; in the engine
// every call did the same (a disk cache written and read again per install, a mapper per call).
// Here the calls share one in-memory copy, kept in generations:
//
//   - A call's Invalidate() (helm's getCapabilities does one per install and upgrade, installCRDs
//     one after creating CRDs, the REST mapper one on an unknown kind) means "what I read from now
//     on was fetched after this moment": the call's next read gets a generation made after it,
//     a new one if the current is older. So a call never sees discovery older than a helm process
//     would at the same point (a fresh process fetches once and then trusts its copy; so does a
//     call here).
//   - Calls that never invalidate (uninstall, status, history) read the current generation and
//     its REST mapper without a request; a kind it does not know makes the mapper reset (the
//     deferred mapper's own rule), which invalidates for that call.
//
// Discovery is read as the engine (what it lists is the same for every identity); every
// request of a call itself is made as the call's identity, through its guards.

import (
	"sync"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// sharedDiscovery is the engine's discovery: the current generation, replaced when a call asks
// for one newer than it.
type sharedDiscovery struct {
	base    discovery.DiscoveryInterface
	mu      sync.Mutex
	current *discoveryGeneration
}

// discoveryGeneration is one in-memory copy (fetched lazily, after made) and the REST mapper
// built on it.
type discoveryGeneration struct {
	made   time.Time
	cache  discovery.CachedDiscoveryInterface
	mapper meta.ResettableRESTMapper
}

func newSharedDiscovery(cfg *rest.Config) (*sharedDiscovery, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &sharedDiscovery{base: dc}, nil
}

// since: a generation made at or after t (the zero time: the current one, whatever its age).
func (s *sharedDiscovery) since(t time.Time) *discoveryGeneration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.current == nil || s.current.made.Before(t) {
		cache := memory.NewMemCacheClient(s.base)
		s.current = &discoveryGeneration{made: time.Now(), cache: cache, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cache)}
	}
	return s.current
}

// callDiscovery is one call's view: the shared copy, as fresh as its last Invalidate asks.
type callDiscovery struct {
	shared *sharedDiscovery
	// started: when the call began; a copy made before is older than a helm process's would be.
	started time.Time
	// wroteCRDs: whether the call has written a CustomResourceDefinition (nil: never).
	wroteCRDs     func() bool
	mu            sync.Mutex
	invalidatedAt time.Time
}

func newCallDiscovery(shared *sharedDiscovery, wroteCRDs func() bool) *callDiscovery {
	return &callDiscovery{shared: shared, started: time.Now(), wroteCRDs: wroteCRDs}
}

var _ discovery.CachedDiscoveryInterface = (*callDiscovery)(nil)

func (c *callDiscovery) gen() *discoveryGeneration {
	c.mu.Lock()
	t := c.invalidatedAt
	c.mu.Unlock()
	return c.shared.since(t)
}

func (c *callDiscovery) Invalidate() {
	c.mu.Lock()
	c.invalidatedAt = time.Now()
	c.mu.Unlock()
}

func (c *callDiscovery) Fresh() bool                              { return c.gen().cache.Fresh() }
func (c *callDiscovery) RESTClient() rest.Interface               { return c.gen().cache.RESTClient() }
func (c *callDiscovery) WithLegacy() discovery.DiscoveryInterface { return c.gen().cache.WithLegacy() }
func (c *callDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	return c.gen().cache.ServerGroups()
}
func (c *callDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	return c.gen().cache.ServerResourcesForGroupVersion(gv)
}
func (c *callDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return c.gen().cache.ServerGroupsAndResources()
}
func (c *callDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return c.gen().cache.ServerPreferredResources()
}
func (c *callDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return c.gen().cache.ServerPreferredNamespacedResources()
}
func (c *callDiscovery) ServerVersion() (*version.Info, error) { return c.gen().cache.ServerVersion() }
func (c *callDiscovery) OpenAPISchema() (*openapi_v2.Document, error) {
	return c.gen().cache.OpenAPISchema()
}
func (c *callDiscovery) OpenAPIV3() openapi.Client { return c.gen().cache.OpenAPIV3() }

// callMapper is one call's REST mapper: the mapper of the generation its discovery view reads.
// Reset (after a call created CRDs) is the view's Invalidate. A kind the mapper does not know
// gets the call a copy fetched after the miss, once: what a helm process's mapper does, whose
// copy, read back from its disk cache, is never "fresh" (the deferred mapper's rule). It also
// covers the moment after a CRD is established and before discovery lists it.
type callMapper struct{ d *callDiscovery }

var _ meta.ResettableRESTMapper = callMapper{}

func mapWith[T any](m callMapper, f func(meta.RESTMapper) (T, error)) (T, error) {
	v, err := f(m.d.gen().mapper)
	if err == nil || !meta.IsNoMatchError(err) {
		return v, err
	}
	// After a call wrote CRDs, discovery may list them a moment after they are Established
	// (seconds on a loaded API server): such a call keeps asking, every crdPoll, up to crdSettle.
	deadline := time.Now().Add(crdSettle)
	for {
		m.d.Invalidate()
		v, err = f(m.d.gen().mapper)
		if err == nil || !meta.IsNoMatchError(err) || m.d.wroteCRDs == nil || !m.d.wroteCRDs() || time.Now().After(deadline) {
			return v, err
		}
		time.Sleep(crdPoll)
	}
}

const (
	crdSettle = 10 * time.Second
	crdPoll   = 250 * time.Millisecond
)

func (m callMapper) Reset() { m.d.Invalidate() }
func (m callMapper) KindFor(r schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	return mapWith(m, func(x meta.RESTMapper) (schema.GroupVersionKind, error) { return x.KindFor(r) })
}
func (m callMapper) KindsFor(r schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	return mapWith(m, func(x meta.RESTMapper) ([]schema.GroupVersionKind, error) { return x.KindsFor(r) })
}
func (m callMapper) ResourceFor(r schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	return mapWith(m, func(x meta.RESTMapper) (schema.GroupVersionResource, error) { return x.ResourceFor(r) })
}
func (m callMapper) ResourcesFor(r schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	return mapWith(m, func(x meta.RESTMapper) ([]schema.GroupVersionResource, error) { return x.ResourcesFor(r) })
}
func (m callMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	return mapWith(m, func(x meta.RESTMapper) (*meta.RESTMapping, error) { return x.RESTMapping(gk, versions...) })
}
func (m callMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	return mapWith(m, func(x meta.RESTMapper) ([]*meta.RESTMapping, error) { return x.RESTMappings(gk, versions...) })
}
func (m callMapper) ResourceSingularizer(resource string) (string, error) {
	return mapWith(m, func(x meta.RESTMapper) (string, error) { return x.ResourceSingularizer(resource) })
}

// callGetter is a confined call's REST client getter: its ConfigFlags for the connection (read
// once per call, copied for every client), the shared discovery and mapper for the rest.
type callGetter struct {
	flags *genericclioptions.ConfigFlags
	disco *callDiscovery

	once sync.Once
	rc   *rest.Config
	err  error
}

var _ genericclioptions.RESTClientGetter = (*callGetter)(nil)

func (g *callGetter) ToRESTConfig() (*rest.Config, error) {
	g.once.Do(func() { g.rc, g.err = g.flags.ToRESTConfig() })
	if g.err != nil {
		return nil, g.err
	}
	return rest.CopyConfig(g.rc), nil
}

func (g *callGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.disco, nil
}

func (g *callGetter) ToRESTMapper() (meta.RESTMapper, error) {
	// As ConfigFlags.ToRESTMapper: the deferred mapper behind kubectl's shortcut expander.
	return restmapper.NewShortcutExpander(callMapper{g.disco}, g.disco, func(string) {}), nil
}

func (g *callGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return g.flags.ToRawKubeConfigLoader()
}
