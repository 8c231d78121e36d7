package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	registrybundle "github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"sigs.k8s.io/yaml"
)

// loadedBundle is a bundle directory read as operator-sdk reads it: the objects of its manifests
// directory and that directory's media type (registry+v1, or helm, which has no content checks).
type loadedBundle struct {
	bundle    *apimanifests.Bundle
	mediaType string
}

// loadBundle finds the annotations (metadata/annotations.yaml, else the first file under dir that
// has any), takes the manifests directory they name (default manifests/) and loads it.
func loadBundle(dir string) (*loadedBundle, error) {
	annotations, err := findAnnotations(dir)
	if err != nil {
		return nil, err
	}
	manifestsDir := filepath.Join(dir, registrybundle.ManifestsDir)
	if named, ok := annotations[registrybundle.ManifestsLabel]; ok {
		manifestsDir = filepath.Join(dir, filepath.Clean(named))
	}
	mediaType, err := registrybundle.GetMediaType(manifestsDir)
	if err != nil {
		return nil, err
	}
	bundle, err := apimanifests.GetBundleFromDir(manifestsDir)
	if err != nil {
		return nil, err
	}
	return &loadedBundle{bundle: bundle, mediaType: mediaType}, nil
}

func findAnnotations(dir string) (map[string]string, error) {
	standard := filepath.Join(dir, registrybundle.MetadataDir, registrybundle.AnnotationsFile)
	annotations, err := readAnnotations(standard)
	if err == nil && len(annotations) > 0 {
		return annotations, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	// Bundles laid out otherwise: operator-sdk accepts the first file anywhere below that has annotations.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, walkErr error) error {
		if walkErr != nil {
			return walkErr
		}
		if len(annotations) > 0 || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		annotations, _ = readAnnotations(path) // files that are not annotations are skipped
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(annotations) == 0 {
		return nil, fmt.Errorf("no bundle metadata in %s: a bundle needs metadata/annotations.yaml with operators.operatorframework.io.bundle.* annotations (chartpilot generate bundle writes it)", dir)
	}
	return annotations, nil
}

func readAnnotations(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var metadata registrybundle.AnnotationMetadata
	if err := yaml.Unmarshal(data, &metadata); err != nil {
		return nil, fmt.Errorf("%s is not valid bundle metadata: %w", path, err)
	}
	return metadata.Annotations, nil
}
