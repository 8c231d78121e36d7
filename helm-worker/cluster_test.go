package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestLeakageCluster: release commands against a real API server, the calls chartpilot makes,
// with and without impersonation, in different namespaces, with labels and storage drivers.
// The worker's calls work in namespaces "hw<id>w-*", the fresh processes' in "hw<id>f-*".
func TestLeakageCluster(t *testing.T) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("KUBECONFIG is not set: the cluster leakage table needs a control plane (test/integration/helm-worker.test.ts runs it with the suite's)")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := "hw" + hex.EncodeToString(b)
	prefix := map[string]string{"w": id + "w", "f": id + "f"}
	names := map[string]string{prefix["w"]: "{ns}", prefix["f"]: "{ns}"}
	expand := func(mode, s string) string { return strings.ReplaceAll(s, "{ns}", prefix[mode]) }
	t.Cleanup(func() { deleteNamespaces(t, kubeconfig, id) })

	base := isolatedEnv(t)
	base["KUBECONFIG"] = kubeconfig
	chart := testdata(t, "chart")
	const timeout = "--timeout=120s"
	steps := []step{
		{name: "install impersonating a user without rights: forbidden", argv: []string{"upgrade", "--install", "--namespace={ns}-a", "--create-namespace", "--kube-as-user=hw-nobody", "--output=json", timeout, "--", "r1", chart}},
		{name: "the same without --kube-as-user: installs", argv: []string{"upgrade", "--install", "--namespace={ns}-a", "--create-namespace", "--output=json", "--labels=team=blue", "--history-max=10", timeout, "--", "r1", chart}},
		{name: "metadata (labels)", argv: []string{"get", "metadata", "--namespace={ns}-a", "--output=json", "--", "r1"}},
		{name: "upgrade without labels, other values", argv: []string{"upgrade", "--install", "--namespace={ns}-a", "--output=json", "--set=greeting=two", timeout, "--", "r1", chart}},
		{name: "list in HELM_NAMESPACE", argv: []string{"list", "--output=json"}, env: map[string]string{"HELM_NAMESPACE": "{ns}-a"}},
		{name: "list in the default namespace", argv: []string{"list", "--output=json", "--filter=^r1$"}},
		{name: "status impersonating a user without rights", argv: []string{"status", "--namespace={ns}-a", "--kube-as-user=hw-nobody", "--", "r1"}},
		{name: "status without", argv: []string{"status", "--namespace={ns}-a", "--", "r1"}},
		{name: "install with the configmap driver", argv: []string{"upgrade", "--install", "--namespace={ns}-b", "--create-namespace", "--output=json", timeout, "--", "r2", chart}, env: map[string]string{"HELM_DRIVER": "configmap"}},
		{name: "list there with the default driver: none", argv: []string{"list", "--namespace={ns}-b", "--output=json"}},
		{name: "list there with the configmap driver", argv: []string{"list", "--namespace={ns}-b", "--output=json"}, env: map[string]string{"HELM_DRIVER": "configmaps"}},
		{name: "manifest of revision 1", argv: []string{"get", "manifest", "--namespace={ns}-a", "--revision=1", "--", "r1"}},
		{name: "history", argv: []string{"history", "--namespace={ns}-a", "--output=json", "--max=2147483647", "--", "r1"}},
		{name: "all, as chartpilot's status template", argv: []string{"get", "all", "--namespace={ns}-a", "--template={{.Release.Name}} {{.Release.Version}} {{.Release.Info.Status}}", "--", "r1"}},
		{name: "uninstall a release of another namespace: not found", argv: []string{"uninstall", "--namespace={ns}-b", timeout, "--", "r1"}},
		{name: "uninstall", argv: []string{"uninstall", "--namespace={ns}-a", timeout, "--", "r1"}},
		{name: "uninstall with the configmap driver", argv: []string{"uninstall", "--namespace={ns}-b", "--wait", timeout, "--", "r2"}, env: map[string]string{"HELM_DRIVER": "configmap"}},
		{name: "status after uninstall", argv: []string{"status", "--namespace={ns}-a", "--", "r1"}},
	}
	runTable(t, base, steps, expand, names)
}

func deleteNamespaces(t *testing.T, kubeconfig, prefix string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	for _, ns := range list.Items {
		if strings.HasPrefix(ns.Name, prefix) {
			if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
				t.Logf("cleanup: deleting namespace %s: %v", ns.Name, err)
			}
		}
	}
}
