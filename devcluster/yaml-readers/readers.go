package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/kustomize/kyaml/kio"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// reading is one reader's verdict on a stream: its objects, or why it refused the stream.
type reading struct {
	Objects []json.RawMessage `json:"objects"`
	// Documents is set for Kyaml only: what kyaml decides of each document helm goes on to use.
	Documents []document `json:"documents,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// document is one of kio.ParseAll's nodes as helm uses it: how many objects the kube client
// builds from it as kyaml writes it, and the file annotation splitAndDeannotate reads with
// GetMeta (go-yaml v3's raw text of the value), which groups documents into files.
type document struct {
	Objects int     `json:"objects"`
	File    *string `json:"file,omitempty"`
}

type result struct {
	Name string `json:"name"`
	// V2 is what helm's kube client builds from the stream (install, upgrade, rollback, uninstall
	// and hooks all Build their manifests this way): cli-runtime's resource builder as
	// pkg/kube/client.go's buildResourceList sets it up — NewYAMLOrJSONDecoder splitting
	// documents, sigs.k8s.io/yaml (go-yaml v2) to JSON, the unstructured decoder, lists flattened.
	V2 reading `json:"v2"`
	// Kyaml is kyaml's part in helm's reading, without go-yaml v3's typing of scalars, which helm
	// 4.1.4 never applies: the documents kio.ParseAll makes of the stream (as pkg/action/action.go's
	// splitAndDeannotate parses a post-renderer's output: its splitting, its unwrapping of a lone
	// List, the documents it drops as empty), each written alone by kio's writer and built by V2's
	// builder, in stream order; and the file annotation GetMeta reads of each. Its error is where
	// helm fails on kyaml's account (parsing, GetMeta, writing), never a JSON conversion helm does
	// not make.
	Kyaml reading `json:"kyaml"`
	// Helm is the whole path from a post-renderer's output to the API server: splitAndDeannotate
	// (kyaml parse, kio.StringAll re-emit per file), releaseutil.SortManifests (sigs.k8s.io/yaml
	// into a SimpleHead per document), then the release manifest and each hook built as V2 builds.
	// Objects come in helm's install order, not the stream's.
	Helm reading `json:"helm"`
	// Reemitted is kio.StringAll(kio.ParseAll(stream)): what helm's annotateAndMerge hands a
	// post-renderer for a template file holding this stream (without the file-name annotation).
	Reemitted *string `json:"reemitted,omitempty"`
	// Stored is what helm stores of the stream, taken as a post-renderer's output: the release
	// manifest, then each hook's manifest (what chartpilot reads back from a release record).
	Stored []string `json:"stored,omitempty"`
}

func readAll(c input) result {
	r := result{Name: c.Name}
	r.V2 = guarded(func() reading { return readV2(c.YAML) })
	r.Kyaml = guarded(func() reading { return readKyaml(c.YAML) })
	r.Helm = guarded(func() reading {
		objects, stored := readHelm(c.YAML)
		r.Stored = stored
		return objects
	})
	func() {
		defer func() { _ = recover() }() // no re-emission, then; Kyaml or Helm says why
		if nodes, err := kio.ParseAll(c.YAML); err == nil {
			if s, err := kio.StringAll(nodes); err == nil {
				r.Reemitted = &s
			}
		}
	}()
	return r
}

// guarded turns a reader's panic into an error: one hostile case must not hide the others.
func guarded(read func() reading) (out reading) {
	defer func() {
		if p := recover(); p != nil {
			out = reading{Objects: []json.RawMessage{}, Error: fmt.Sprintf("panic: %v", p)}
		}
	}()
	return read()
}

func failed(err error) reading { return reading{Objects: []json.RawMessage{}, Error: err.Error()} }

// readV2 is helm's buildResourceList (pkg/kube/client.go) without the server: a local builder
// (no REST mapping, so no default namespace and no OpenAPI schema — neither changes what is read).
func readV2(stream string) reading {
	infos, err := resource.NewLocalBuilder().
		ContinueOnError().
		Flatten().
		Unstructured().
		Stream(strings.NewReader(stream), "").
		Do().
		Infos()
	if err != nil {
		return failed(err)
	}
	out := reading{Objects: []json.RawMessage{}}
	for _, info := range infos {
		b, err := json.Marshal(info.Object)
		if err != nil {
			return failed(fmt.Errorf("marshalling %s: %w", info.ObjectName(), err))
		}
		out.Objects = append(out.Objects, b)
	}
	return out
}

func readKyaml(stream string) reading {
	nodes, err := kio.ParseAll(stream)
	if err != nil {
		return failed(err)
	}
	out := reading{Objects: []json.RawMessage{}, Documents: []document{}}
	for i, n := range nodes {
		// splitAndDeannotate's own look at each node.
		meta, err := n.GetMeta()
		if err != nil {
			return failed(fmt.Errorf("node %d: getting metadata: %w", i, err))
		}
		text, err := kio.StringAll([]*kyaml.RNode{n})
		if err != nil {
			return failed(fmt.Errorf("node %d: writing it: %w", i, err))
		}
		objects := readV2(text)
		if objects.Error != "" {
			return failed(fmt.Errorf("node %d as kyaml writes it: %s", i, objects.Error))
		}
		d := document{Objects: len(objects.Objects)}
		if f, ok := meta.Annotations[filenameAnnotation]; ok {
			d.File = &f
		}
		out.Objects = append(out.Objects, objects.Objects...)
		out.Documents = append(out.Documents, d)
	}
	return out
}

// readHelm gives helm's objects for a post-renderer's output, and the manifests helm stores.
func readHelm(stream string) (reading, []string) {
	files, err := splitAndDeannotate(stream)
	if err != nil {
		return failed(fmt.Errorf("error while parsing post rendered output: %w", err)), nil
	}
	hooks, manifests, err := util.SortManifests(files, nil, util.InstallOrder)
	if err != nil {
		return failed(err), nil
	}
	// The release manifest as renderResources (pkg/action/action.go) assembles it.
	var release bytes.Buffer
	for _, m := range manifests {
		fmt.Fprintf(&release, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	out := reading{Objects: []json.RawMessage{}}
	streams := []string{release.String()}
	for _, h := range hooks {
		streams = append(streams, h.Manifest)
	}
	for _, s := range streams {
		r := readV2(s)
		if r.Error != "" {
			return r, streams
		}
		out.Objects = append(out.Objects, r.Objects...)
	}
	return out, streams
}

// filenameAnnotation is pkg/action/action.go's (unexported there).
const filenameAnnotation = "postrenderer.helm.sh/postrender-filename"

// splitAndDeannotate is helm v4.1.4's (pkg/action/action.go), copied because it is unexported:
// how helm turns a post-renderer's output back into files.
func splitAndDeannotate(postrendered string) (map[string]string, error) {
	manifests, err := kio.ParseAll(postrendered)
	if err != nil {
		return nil, fmt.Errorf("error parsing YAML: %w", err)
	}

	manifestsByFilename := make(map[string][]*kyaml.RNode)
	for i, manifest := range manifests {
		meta, err := manifest.GetMeta()
		if err != nil {
			return nil, fmt.Errorf("getting metadata: %w", err)
		}
		fname := meta.Annotations[filenameAnnotation]
		if fname == "" {
			fname = fmt.Sprintf("generated-by-postrender-%d.yaml", i)
		}
		if err := manifest.PipeE(kyaml.ClearAnnotation(filenameAnnotation)); err != nil {
			return nil, fmt.Errorf("clearing filename annotation: %w", err)
		}
		manifestsByFilename[fname] = append(manifestsByFilename[fname], manifest)
	}

	reconstructed := make(map[string]string, len(manifestsByFilename))
	for fname, docs := range manifestsByFilename {
		fileContents, err := kio.StringAll(docs)
		if err != nil {
			return nil, fmt.Errorf("re-writing %s: %w", fname, err)
		}
		reconstructed[fname] = fileContents
	}
	return reconstructed, nil
}
