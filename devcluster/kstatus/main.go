// kstatus computes the status of objects the way GitOps tools built on sigs.k8s.io/cli-utils do
// (Flux's kustomize-controller `wait: true`, cli-utils' appliers, Helm 4's --wait): status.Compute
// of pkg/kstatus/status over each object, unchanged.
//
// Usage: kstatus < objects.json (a JSON array) > statuses.json (one per object: {"status",
// "message"} or {"error"}); status is InProgress, Current, Failed, Terminating, NotFound or Unknown.
//
// For chartpilot's tests of its Reconciling/Stalled conditions: not part of the operator.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type result struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	var objects []map[string]interface{}
	if err := json.Unmarshal(input, &objects); err != nil {
		fail(fmt.Errorf("stdin is not a JSON array of objects: %w", err))
	}
	out := make([]result, 0, len(objects))
	for _, o := range objects {
		// Numbers as unstructured holds them from the API server (int64), not float64.
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(mustJSON(o)); err != nil {
			out = append(out, result{Error: err.Error()})
			continue
		}
		r, err := status.Compute(u)
		if err != nil {
			out = append(out, result{Error: err.Error()})
			continue
		}
		out = append(out, result{Status: r.Status.String(), Message: r.Message})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}

func mustJSON(v interface{}) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		fail(err)
	}
	return b
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kstatus:", err)
	os.Exit(1)
}
