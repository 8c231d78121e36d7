package main

// The engine's calls: each the code of the helm v4.1.4 command it stands for (pkg/cmd/upgrade.go,
// install.go, uninstall.go, rollback.go, get_all.go, history.go), with the flag values the
// protocol names and every other flag at its default, on a Configuration of the call's own.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"helm.sh/helm/v4/pkg/action"
	ci "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/loader"
	v2loader "helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/registry"
	ri "helm.sh/helm/v4/pkg/release"
	"helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

func (e *engine) dispatchOp(c *engineCall, req *engineRequest) engineResult {
	var res engineResult
	var err error
	switch req.Op {
	case "upgrade":
		var rel *release.Release
		if rel, err = e.upgrade(c, req); err == nil {
			res.Release = toEngineRelease(rel, true)
		}
	case "uninstall":
		if err = e.uninstall(c, req); err == nil {
			res.Done = true
		}
	case "rollback":
		if err = e.rollback(c, req); err == nil {
			res.Done = true
		}
	case "status":
		var rel *release.Release
		if rel, err = e.status(c, req); err == nil {
			res.Release = toEngineRelease(rel, true)
		}
	case "history":
		var rels []*release.Release
		if rels, err = e.history(c, req); err == nil {
			res.Releases = make([]engineRelease, 0, len(rels))
			for _, r := range rels {
				res.Releases = append(res.Releases, *toEngineRelease(r, false))
			}
		}
	default:
		err = fmt.Errorf("chartpilot-helm engine: unknown op %q", req.Op)
	}
	if err != nil {
		return engineResult{Error: &engineError{Class: classify(err, c.cancelled.Load()), Message: err.Error()}}
	}
	if res.Release == nil && res.Releases == nil && !res.Done {
		// An action that returned neither a release nor an error (helm does not).
		return engineResult{Error: &engineError{Class: classFailed, Message: "chartpilot-helm engine: helm returned no release"}}
	}
	return res
}

// classify turns a call's error into the protocol's class.
func classify(err error, cancelled bool) string {
	msg := err.Error()
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound) || strings.Contains(msg, driver.ErrReleaseNotFound.Error()):
		return classNotFound
	case cancelled:
		return classCancelled
	case errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err) ||
		// helm formats some errors with %s (hooks: "failed pre-install: %s"), which loses the chain.
		strings.Contains(msg, context.DeadlineExceeded.Error()) || strings.Contains(msg, "timed out waiting for the condition"):
		return classTimeout
	default:
		return classFailed
	}
}

func missing(field string) error {
	return fmt.Errorf("chartpilot-helm engine: request field %q is required", field)
}

// requireFields checks what every call needs; withTimeout for the ops that take helm's --timeout.
func requireFields(req *engineRequest, withTimeout bool) error {
	switch {
	case req.Release == "":
		return missing("release")
	case req.Namespace == "":
		return missing("namespace")
	case req.Kubeconfig == "" && req.Confine == nil:
		return missing("kubeconfig")
	case withTimeout && req.TimeoutMs == nil:
		return missing("timeoutMs")
	}
	return nil
}

func (req *engineRequest) timeout() time.Duration {
	return time.Duration(*req.TimeoutMs) * time.Millisecond
}

// setup builds the call's settings and Configuration as helm's root command does for the
// flags --kubeconfig, --namespace and --kube-as-user, with HELM_DRIVER=secret: a fresh
// cli.New() (it reads the engine's environment, never writes it), its REST client getter, and
// action.Configuration.Init, but with a logger and hook output of the call's own. With
// "confine" the call reaches the API server as the engine's own connection (KUBECONFIG or the
// pod's service account, as the operator's) through confinement.go's rules, and its release
// storage through records.go's guard; with "kubeconfig", through the session that names.
func (c *engineCall) setup(req *engineRequest) (*cli.EnvSettings, *action.Configuration, error) {
	var conf *confinement
	var recordKey []byte
	if req.Confine != nil {
		var err error
		if conf, recordKey, err = c.confinementOf(req); err != nil {
			return nil, nil, err
		}
	}
	s := connectionSettings(req)
	s.SetNamespace(req.Namespace)
	getter := s.RESTClientGetter()
	cf, ok := getter.(*genericclioptions.ConfigFlags)
	if !ok {
		return nil, nil, fmt.Errorf("chartpilot-helm engine: helm's REST client getter is a %T, not *genericclioptions.ConfigFlags", getter)
	}
	if req.KubeCacheDir != "" {
		dir := req.KubeCacheDir
		cf.CacheDir = &dir
	}
	// Every client of the call (storage, kube client, discovery, the template engine's lookup)
	// gets its rest.Config from here, so every request of the call passes the guard (and, when
	// confined, the confinement).
	helmWrap := cf.WrapConfigFn
	cf.WrapConfigFn = func(rc *rest.Config) *rest.Config {
		if helmWrap != nil {
			rc = helmWrap(rc)
		}
		if conf != nil {
			rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &confiningTransport{rt: rt, c: conf} })
		}
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &guardTransport{rt: rt, ended: c.ended} })
		return rc
	}

	level := slog.LevelInfo // helm's logger without --debug drops debug records
	if s.Debug {
		level = slog.LevelDebug
	}
	c.logger = slog.New(slog.NewTextHandler(c.log, &slog.HandlerOptions{Level: level}))
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(c.logger.Handler()))
	if conf != nil {
		// Confined calls share the engine's connection, so they can share its discovery
		// (discovery.go): no disk cache written and read again per call, one REST mapper.
		_, shared, err := c.engine.sharedReads()
		if err != nil {
			return nil, nil, fmt.Errorf("chartpilot-helm engine: cannot read the API server's discovery: %w", err)
		}
		getter = &callGetter{flags: cf, disco: newCallDiscovery(shared, conf.crdsWritten.Load)}
	}
	if err := cfg.Init(getter, s.Namespace(), "secret"); err != nil {
		return nil, nil, err
	}
	if conf != nil {
		secrets, err := c.storageSecrets(req)
		if err != nil {
			return nil, nil, err
		}
		d := driver.NewSecrets(newRecordGuard(secrets, req.Release, req.Namespace, recordKey, c.refused))
		d.SetLogger(c.logger.Handler())
		cfg.Releases = storage.Init(d)
	}
	// helm's CLI sends hook pods' logs (helm.sh/hook-output-log-policy) to its stderr.
	cfg.SetHookOutputFunc(func(_, _, _ string) io.Writer { return c.log })
	return s, cfg, nil
}

// connectionSettings is cli.New() with the connection taken from KUBECONFIG (the kubeconfig the
// request names, or the engine's own) and --kube-as-user from the request; helm's other ways to
// name a server, context or identity (HELM_KUBEAPISERVER, HELM_KUBETOKEN, …) are not read, so
// nothing in the engine's environment can send a call elsewhere.
func connectionSettings(req *engineRequest) *cli.EnvSettings {
	s := cli.New()
	if req.Confine == nil {
		s.KubeConfig = req.Kubeconfig
	}
	s.KubeContext, s.KubeToken, s.KubeAPIServer, s.KubeCaFile, s.KubeTLSServerName = "", "", "", "", ""
	s.KubeInsecureSkipTLSVerify = false
	s.KubeAsGroups = nil
	s.KubeAsUser = req.Impersonate
	return s
}

// confinementOf reads a request's "confine".
func (c *engineCall) confinementOf(req *engineRequest) (*confinement, []byte, error) {
	spec := req.Confine
	if spec.Namespace == "" {
		return nil, nil, fmt.Errorf("chartpilot-helm engine: request field %q is required", "confine.namespace")
	}
	key, err := base64.StdEncoding.DecodeString(spec.RecordKey)
	if err != nil || len(key) < 16 {
		return nil, nil, fmt.Errorf("chartpilot-helm engine: confine.recordKey must be base64 of at least 16 bytes")
	}
	if !c.engine.recordCheck {
		key = nil
	}
	scopes, _, err := c.engine.sharedReads()
	if err != nil {
		return nil, nil, fmt.Errorf("chartpilot-helm engine: cannot read the API server's discovery for confinement: %w", err)
	}
	return &confinement{namespace: spec.Namespace, allowClusterScoped: spec.AllowClusterScoped, allowCrossNamespace: spec.AllowCrossNamespace, scopes: scopes, refused: c.refused}, key, nil
}

// storageSecrets is the Secrets client of the call's release storage: the call's identity and
// guard, and a transport that lets it reach nothing but Secrets in the release's namespace.
func (c *engineCall) storageSecrets(req *engineRequest) (corev1client.SecretInterface, error) {
	s := connectionSettings(req)
	s.SetNamespace(req.Namespace)
	cf := s.RESTClientGetter().(*genericclioptions.ConfigFlags)
	helmWrap := cf.WrapConfigFn
	prefix := "/api/v1/namespaces/" + req.Namespace + "/secrets"
	cf.WrapConfigFn = func(rc *rest.Config) *rest.Config {
		if helmWrap != nil {
			rc = helmWrap(rc)
		}
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &pathTransport{rt: rt, prefix: prefix} })
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &guardTransport{rt: rt, ended: c.ended} })
		return rc
	}
	rc, err := cf.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().Secrets(req.Namespace), nil
}

// pathTransport refuses any request outside one path prefix (the storage client's Secrets).
type pathTransport struct {
	rt     http.RoundTripper
	prefix string
}

func (p *pathTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path != p.prefix && !strings.HasPrefix(req.URL.Path, p.prefix+"/") || hasOddSegments(req.URL.Path) {
		return statusResponse(req, http.StatusForbidden, "refused: helm's release storage reaches the release's Secrets only"), nil
	}
	return p.rt.RoundTrip(req)
}

// guardTransport is the last wrapper of a call's transports: once the call has answered
// (ended), a request fails and one in flight is aborted. helm's install and upgrade return on a
// cancelled context while their work goes on in a goroutine (pkg/action install.go
// performInstallCtx, upgrade.go performUpgrade); in a helm process that goroutine dies with the
// process right after, in the engine it would go on and could record the release "deployed"
// after the call answered "cancelled". The TLS transport underneath stays client-go's shared one.
type guardTransport struct {
	rt    http.RoundTripper
	ended context.Context
}

// errCallEnded wraps context.Canceled: client-go's and kstatus's watchers then take it for the
// end they expect (no warning per retry) when helm's leftover goroutine still waits for a hook.
var errCallEnded = fmt.Errorf("chartpilot-helm engine: the call has ended: %w", context.Canceled)

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if g.ended.Err() != nil {
		return nil, errCallEnded
	}
	ctx, cancel := context.WithCancel(req.Context())
	stop := context.AfterFunc(g.ended, cancel)
	resp, err := g.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		stop()
		cancel()
		return nil, err
	}
	resp.Body = &guardedBody{ReadCloser: resp.Body, release: func() { stop(); cancel() }}
	return resp, nil
}

type guardedBody struct {
	io.ReadCloser
	release func()
}

func (b *guardedBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// newEngineRegistryClient is pkg/cmd's newRegistryClient for the flags upgrade is given (no
// TLS, username or password flags): newDefaultRegistryClient(false, "", ""), its output into
// the call's log instead of the process's stderr.
func (c *engineCall) newRegistryClient(s *cli.EnvSettings) (*registry.Client, error) {
	return registry.NewClient(
		registry.ClientOptDebug(s.Debug),
		registry.ClientOptEnableCache(true),
		registry.ClientOptWriter(c.log),
		registry.ClientOptCredentialsFile(s.RegistryConfig),
		registry.ClientOptBasicAuth("", ""),
	)
}

// mergeValues is values.Options.MergeValues for one --values file whose content is text.
func mergeValues(text *string) (map[string]interface{}, error) {
	base := map[string]interface{}{}
	if text == nil {
		return base, nil
	}
	currentMap, err := v2loader.LoadValues(strings.NewReader(*text))
	if err != nil {
		// helm names the file here: "failed to parse <path>: …"; the engine's values have none.
		return nil, fmt.Errorf("failed to parse values: %w", err)
	}
	return v2loader.MergeMaps(base, currentMap), nil
}

// upgrade is `helm upgrade --install --namespace=NS --output=json --disable-openapi-validation
// [--labels k=v]... [--history-max=N] [--description=D] [--server-side=true --force-conflicts]
// [--no-hooks] [--post-renderer …] --timeout=Nms --values=FILE -- RELEASE CHART`
// (pkg/cmd/upgrade.go's RunE).
func (e *engine) upgrade(c *engineCall, req *engineRequest) (*release.Release, error) {
	if err := requireFields(req, true); err != nil {
		return nil, err
	}
	if req.Chart == "" {
		return nil, missing("chart")
	}
	s, cfg, err := c.setup(req)
	if err != nil {
		return nil, err
	}

	// The flags, as newUpgradeCmd binds them.
	client := action.NewUpgrade(cfg)
	client.Install = true
	client.DisableOpenAPIValidation = true
	client.Timeout = req.timeout()
	client.MaxHistory = s.MaxHistory // the flag's default: settings.MaxHistory
	if req.HistoryMax != nil {
		client.MaxHistory = *req.HistoryMax
	}
	client.Description = req.Description
	if len(req.Labels) > 0 {
		client.Labels = req.Labels
	}
	if req.Force {
		client.ServerSideApply = "true"
		client.ForceConflicts = true
	}
	client.DisableHooks = req.DisableHooks
	client.WaitStrategy = kube.HookOnlyStrategy // AddWaitFlag's default
	if req.PostRender {
		client.PostRenderer = &enginePostRenderer{e: e, c: c}
	}
	createNamespace := false

	// RunE.
	client.Namespace = s.Namespace()

	registryClient, err := c.newRegistryClient(s)
	if err != nil {
		return nil, fmt.Errorf("missing registry client: %w", err)
	}
	client.SetRegistryClient(registryClient)
	client.DryRunStrategy = action.DryRunNone

	if client.Install {
		histClient := action.NewHistory(cfg)
		histClient.Max = 1
		versions, err := histClient.Run(req.Release)
		if err == driver.ErrReleaseNotFound || isReleaseUninstalled(c.logger, versions) {
			instClient := action.NewInstall(cfg)
			instClient.CreateNamespace = createNamespace
			instClient.ChartPathOptions = client.ChartPathOptions
			instClient.ForceReplace = client.ForceReplace
			instClient.DryRunStrategy = client.DryRunStrategy
			instClient.DisableHooks = client.DisableHooks
			instClient.SkipCRDs = client.SkipCRDs
			instClient.Timeout = client.Timeout
			instClient.WaitStrategy = client.WaitStrategy
			instClient.WaitForJobs = client.WaitForJobs
			instClient.Devel = client.Devel
			instClient.Namespace = client.Namespace
			instClient.RollbackOnFailure = client.RollbackOnFailure
			instClient.PostRenderer = client.PostRenderer
			instClient.DisableOpenAPIValidation = client.DisableOpenAPIValidation
			instClient.SubNotes = client.SubNotes
			instClient.HideNotes = client.HideNotes
			instClient.SkipSchemaValidation = client.SkipSchemaValidation
			instClient.Description = client.Description
			instClient.DependencyUpdate = client.DependencyUpdate
			instClient.Labels = client.Labels
			instClient.EnableDNS = client.EnableDNS
			instClient.HideSecret = client.HideSecret
			instClient.TakeOwnership = client.TakeOwnership
			instClient.ForceConflicts = client.ForceConflicts
			instClient.ServerSideApply = client.ServerSideApply != "false"

			if isReleaseUninstalled(c.logger, versions) {
				instClient.Replace = true
			}

			return c.runInstall(s, []string{req.Release, req.Chart}, instClient, req.Values)
		} else if err != nil {
			return nil, err
		}
	}

	chartPath, err := client.LocateChart(req.Chart, s)
	if err != nil {
		return nil, err
	}

	vals, err := mergeValues(req.Values)
	if err != nil {
		return nil, err
	}

	// Check chart dependencies to make sure all are present in /charts
	ch, err := loader.Load(chartPath)
	if err != nil {
		return nil, err
	}

	ac, err := ci.NewAccessor(ch)
	if err != nil {
		return nil, err
	}
	if deps := ac.MetaDependencies(); len(deps) > 0 {
		if err := action.CheckDependencies(ch, deps); err != nil {
			// --dependency-update is not a protocol flag.
			return nil, fmt.Errorf("an error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: %w", err)
		}
	}

	if ac.Deprecated() {
		c.logger.Warn("this chart is deprecated")
	}

	// The CLI's context is cancelled by its SIGTERM handler; the call's by {"cancel":id}.
	reli, err := client.RunWithContext(c.ctx, req.Release, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("UPGRADE FAILED: %w", err)
	}
	return releaserToV1(reli)
}

// runInstall is pkg/cmd/install.go's runInstall (called by upgrade --install without the
// "INSTALLATION FAILED" wrapping of `helm install`).
func (c *engineCall) runInstall(s *cli.EnvSettings, args []string, client *action.Install, valuesText *string) (*release.Release, error) {
	c.logger.Debug("Original chart version", "version", client.Version)

	name, chartRef, err := client.NameAndChart(args)
	if err != nil {
		return nil, err
	}
	client.ReleaseName = name

	cp, err := client.LocateChart(chartRef, s)
	if err != nil {
		return nil, err
	}

	c.logger.Debug("Chart path", "path", cp)

	vals, err := mergeValues(valuesText)
	if err != nil {
		return nil, err
	}

	// Check chart dependencies to make sure all are present in /charts
	chartRequested, err := loader.Load(cp)
	if err != nil {
		return nil, err
	}

	ac, err := ci.NewAccessor(chartRequested)
	if err != nil {
		return nil, err
	}

	if err := checkIfInstallable(ac); err != nil {
		return nil, err
	}

	if ac.Deprecated() {
		c.logger.Warn("this chart is deprecated")
	}

	if req := ac.MetaDependencies(); len(req) > 0 {
		if err := action.CheckDependencies(chartRequested, req); err != nil {
			// --dependency-update is not a protocol flag.
			return nil, fmt.Errorf("an error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: %w", err)
		}
	}

	client.Namespace = s.Namespace()

	rel, err := client.RunWithContext(c.ctx, chartRequested, vals)
	v1, rerr := releaserToV1(rel)
	if rerr != nil {
		return nil, rerr
	}
	if err != nil {
		// The CLI returns the error alone (the release is only printed on success).
		return nil, err
	}
	return v1, nil
}

// checkIfInstallable is pkg/cmd/install.go's.
func checkIfInstallable(ch ci.Accessor) error {
	meta := ch.MetadataAsMap()

	switch meta["Type"] {
	case "", "application":
		return nil
	}
	return fmt.Errorf("%s charts are not installable", meta["Type"])
}

// isReleaseUninstalled is pkg/cmd/upgrade.go's, logging to the call's logger.
func isReleaseUninstalled(logger *slog.Logger, versionsi []ri.Releaser) bool {
	versions, err := releaseListToV1List(versionsi)
	if err != nil {
		logger.Error("cannot convert release list to v1 release list", "error", err)
		return false
	}
	return len(versions) > 0 && versions[len(versions)-1].Info.Status == common.StatusUninstalled
}

// uninstall is `helm uninstall --namespace=NS --timeout=Nms [--wait] [--no-hooks]
// [--description=D] -- RELEASE`. action.Uninstall takes no context: a cancel does not stop it.
func (e *engine) uninstall(c *engineCall, req *engineRequest) error {
	if err := requireFields(req, true); err != nil {
		return err
	}
	_, cfg, err := c.setup(req)
	if err != nil {
		return err
	}
	client := action.NewUninstall(cfg)
	client.DisableHooks = req.DisableHooks
	client.DeletionPropagation = "background" // --cascade's default, which validateCascadeFlag accepts
	client.Timeout = req.timeout()
	client.Description = req.Description
	client.WaitStrategy = kube.HookOnlyStrategy
	if req.Wait {
		client.WaitStrategy = kube.StatusWatcherStrategy // --wait without a value
	}

	res, err := client.Run(req.Release)
	if err != nil {
		return err
	}
	if res != nil && res.Info != "" {
		// What the CLI prints before `release "…" uninstalled` (resources kept by policy).
		c.logger.Info(res.Info)
	}
	return nil
}

// rollback is `helm rollback --namespace=NS [--server-side=true --force-conflicts] [--no-hooks]
// --timeout=Nms -- RELEASE [REVISION]`. action.Rollback takes no context: a cancel does not
// stop it.
func (e *engine) rollback(c *engineCall, req *engineRequest) error {
	if err := requireFields(req, true); err != nil {
		return err
	}
	s, cfg, err := c.setup(req)
	if err != nil {
		return err
	}
	client := action.NewRollback(cfg)
	client.Timeout = req.timeout()
	client.DisableHooks = req.DisableHooks
	client.MaxHistory = s.MaxHistory // the flag's default: settings.MaxHistory
	client.WaitStrategy = kube.HookOnlyStrategy
	if req.Force {
		client.ServerSideApply = "true"
		client.ForceConflicts = true
	}
	client.Version = req.Revision // no REVISION argument: 0, the previous revision
	client.DryRunStrategy = action.DryRunNone
	return client.Run(req.Release)
}

// status is what `helm get all --namespace=NS -- RELEASE` reads: the stored record of the
// current revision.
func (e *engine) status(c *engineCall, req *engineRequest) (*release.Release, error) {
	if err := requireFields(req, false); err != nil {
		return nil, err
	}
	_, cfg, err := c.setup(req)
	if err != nil {
		return nil, err
	}
	client := action.NewGet(cfg)
	client.Version = 0
	res, err := client.Run(req.Release)
	if err != nil {
		return nil, err
	}
	return releaserToV1(res)
}

// history is `helm history --namespace=NS --max=2147483647 -o json -- RELEASE` (getHistory),
// oldest first.
func (e *engine) history(c *engineCall, req *engineRequest) ([]*release.Release, error) {
	if err := requireFields(req, false); err != nil {
		return nil, err
	}
	_, cfg, err := c.setup(req)
	if err != nil {
		return nil, err
	}
	client := action.NewHistory(cfg)
	client.Max = math.MaxInt32
	histi, err := client.Run(req.Release)
	if err != nil {
		return nil, err
	}
	hist, err := releaseListToV1List(histi)
	if err != nil {
		return nil, err
	}

	releaseutil.Reverse(hist, releaseutil.SortByRevision)

	var rels []*release.Release
	for i := 0; i < min(len(hist), client.Max); i++ {
		rels = append(rels, hist[i])
	}
	if len(rels) == 0 {
		// The CLI would print []; the storage drivers answer "not found" before that.
		return nil, driver.ErrReleaseNotFound
	}
	// getReleaseHistory lists them from the end: oldest first.
	out := make([]*release.Release, 0, len(rels))
	for i := len(rels) - 1; i >= 0; i-- {
		out = append(out, rels[i])
	}
	return out, nil
}

// releaserToV1 is pkg/cmd's releaserToV1Release.
func releaserToV1(rel ri.Releaser) (*release.Release, error) {
	switch r := rel.(type) {
	case release.Release:
		return &r, nil
	case *release.Release:
		return r, nil
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("unsupported release type: %T", rel)
	}
}

func releaseListToV1List(ls []ri.Releaser) ([]*release.Release, error) {
	rls := make([]*release.Release, 0, len(ls))
	for _, val := range ls {
		rel, err := releaserToV1(val)
		if err != nil {
			return nil, err
		}
		rls = append(rls, rel)
	}
	return rls, nil
}

// toEngineRelease is the protocol's release object; full=false leaves manifest and notes empty.
func toEngineRelease(r *release.Release, full bool) *engineRelease {
	if r == nil {
		return nil
	}
	out := &engineRelease{
		Name:        r.Name,
		Namespace:   r.Namespace,
		Revision:    r.Version,
		ApplyMethod: r.ApplyMethod,
	}
	if r.Info != nil {
		out.Status = r.Info.Status.String()
		out.Description = r.Info.Description
		if full {
			out.Notes = r.Info.Notes
		}
	}
	if full {
		out.Manifest = r.Manifest
	}
	if r.Chart != nil && r.Chart.Metadata != nil {
		out.ChartName = r.Chart.Metadata.Name
		out.ChartVersion = r.Chart.Metadata.Version
		out.AppVersion = r.Chart.Metadata.AppVersion
	}
	return out
}
