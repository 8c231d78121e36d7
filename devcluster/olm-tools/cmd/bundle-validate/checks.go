package main

import (
	"fmt"
	"io"

	apivalidation "github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	validator "github.com/operator-framework/api/pkg/validation/interfaces"
	registrybundle "github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"github.com/sirupsen/logrus"
	k8svalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// formatErrors checks the directory layout and annotations.yaml against the media type
// (operator-registry's bundle format check); its problems come as one message, as operator-sdk
// reports them.
func formatErrors(dir string) []string {
	// No image registry: the validator uses it only to pull bundle images. Its debug lines go nowhere.
	format := registrybundle.NewImageValidator(nil, logrus.NewEntry(logTo(io.Discard)))
	err := format.ValidateBundleFormat(dir)
	if err == nil {
		return nil
	}
	return []string{fmt.Sprintf("error validating format in %s: %v", dir, err)}
}

// contentResults are the checks every bundle must pass: each object other than the CSV and CRDs
// must be a kind registry+v1 carries and have valid metadata; then operator-framework/api's
// bundle, CSV and CRD validators (all CRDs together).
func contentResults(b *loadedBundle) []apierrors.ManifestResult {
	own := apierrors.ManifestResult{Name: b.bundle.Name}
	if b.mediaType == registrybundle.HelmType {
		return []apierrors.ManifestResult{own}
	}
	for _, obj := range b.bundle.Objects {
		gvk := obj.GroupVersionKind()
		if gvk.Kind == "ClusterServiceVersion" || gvk.Kind == "CustomResourceDefinition" {
			continue
		}
		if supported, _ := registrybundle.IsSupported(gvk.Kind); b.mediaType == registrybundle.RegistryV1Type && !supported {
			own.Add(apierrors.ErrInvalidBundle(fmt.Sprintf("unsupported media type %s for bundle object", b.mediaType), gvk))
			continue
		}
		noNameCheck := func(string, bool) []string { return nil }
		if errs := k8svalidation.ValidateObjectMetaAccessor(obj, false, noNameCheck, field.NewPath("metadata")); len(errs) > 0 {
			own.Add(apierrors.ErrFailedValidation(fmt.Sprintf("error validating object: %s. %v", errs.ToAggregate(), obj), obj.GetName()))
		}
	}

	results := apivalidation.BundleValidator.Validate(b.bundle)
	if b.bundle.CSV != nil {
		results = append(results, apivalidation.ClusterServiceVersionValidator.Validate(b.bundle.CSV)...)
	} else {
		own.Add(apierrors.ErrInvalidBundle("no ClusterServiceVersion in bundle", b.bundle.Name))
	}
	var crds []any
	for _, crd := range b.bundle.V1beta1CRDs {
		crds = append(crds, crd)
	}
	for _, crd := range b.bundle.V1CRDs {
		crds = append(crds, crd)
	}
	if len(crds) > 0 {
		results = append(results, apivalidation.CustomResourceDefinitionValidator.Validate(crds...)...)
	}
	// Our own findings join the validators' result of the same name, else come last.
	for i := range results {
		if results[i].Name == own.Name {
			results[i].Add(own.Errors...)
			results[i].Add(own.Warnings...)
			return results
		}
	}
	return append(results, own)
}

// optionalValidator is one of the checks --select-optional picks by its labels.
type optionalValidator struct {
	validator.Validator
	name   string
	labels labels.Set
}

// optionalValidators are operator-sdk v1.42's, with the same names and labels; suite=operatorframework
// is what OperatorHub.io asks of a bundle.
var optionalValidators = []optionalValidator{
	{apivalidation.OperatorHubV2Validator, "operatorhubv2", labels.Set{"name": "operatorhubv2", "suite": "operatorframework"}},
	{apivalidation.StandardCapabilitiesValidator, "capabilities", labels.Set{"name": "capabilities", "suite": "operatorframework"}},
	{apivalidation.StandardCategoriesValidator, "categories", labels.Set{"name": "categories", "suite": "operatorframework"}},
	{apivalidation.OperatorHubValidator, "operatorhub", labels.Set{"name": "operatorhub"}}, //nolint:staticcheck // selectable by name, as in operator-sdk
	{apivalidation.CommunityOperatorValidator, "community", labels.Set{"name": "community"}},
	{apivalidation.AlphaDeprecatedAPIsValidator, "alpha-deprecated-apis", labels.Set{"name": "alpha-deprecated-apis", "suite": "operatorframework"}},
	{apivalidation.GoodPracticesValidator, "good-practices", labels.Set{"name": "good-practices", "suite": "operatorframework"}},
	{apivalidation.MultipleArchitecturesValidator, "multiarch", labels.Set{"name": "multiarch"}},
}

// selectOptional parses a --select-optional selector; one that matches no validator is a usage
// error (a typo would otherwise silently run nothing).
func selectOptional(raw string) (labels.Selector, error) {
	if raw == "" {
		return labels.Nothing(), nil
	}
	sel, err := labels.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("--select-optional %q is not a label selector: %w", raw, err)
	}
	for _, v := range optionalValidators {
		if sel.Matches(v.labels) {
			return sel, nil
		}
	}
	return nil, fmt.Errorf("--select-optional %q matches no validator: use suite=operatorframework or name=<one of %s>", raw, validatorNames())
}

func validatorNames() string {
	names := ""
	for i, v := range optionalValidators {
		if i > 0 {
			names += ", "
		}
		names += v.name
	}
	return names
}

// optionalResults runs the selected validators over every object of the bundle (they pick by
// type), the bundle itself and the --optional-values map (k8s-version=…, read by some of them).
func optionalResults(b *loadedBundle, sel labels.Selector, values map[string]string) []apierrors.ManifestResult {
	objs := b.bundle.ObjectsToValidate()
	for _, obj := range b.bundle.Objects {
		objs = append(objs, obj)
	}
	objs = append(objs, values)
	var results []apierrors.ManifestResult
	for _, v := range optionalValidators {
		if sel.Matches(v.labels) {
			results = append(results, v.Validate(objs...)...)
		}
	}
	return results
}
