/**
 * The Makefile `chartpilot new` writes: operator-sdk's develop loop (`make install run`, `make
 * deploy`, `make bundle`, `make docker-build`), with chartpilot's commands behind each target, so
 * a project made either way is driven the same way. Regenerating passes the names `new` chose
 * (`<chart>-operator`), which differ from `generate`'s own defaults (`chartpilot`). Pure.
 */

export interface MakefileOptions {
  /** The operator's name (its Deployment, prefix of its objects). */
  readonly name: string;
  /** The operator's namespace: where `make run` keeps its seal key, as the Deployment does. */
  readonly namespace: string;
  /** The image `docker-build` makes and `deploy/operator.yaml` names. */
  readonly image: string;
}

export function projectMakefile(o: MakefileOptions): string {
  const [repository, tag] = splitImage(o.image);
  return `# The develop loop (targets as in operator-sdk's scaffold), with chartpilot's commands.
# Needs chartpilot (npx chartpilot, or npm install -g chartpilot), kubectl and a cluster in
# KUBECONFIG; docker-build needs podman, buildah or docker.
IMG ?= ${repository}:${tag}
NAMESPACE ?= ${o.namespace}
CHARTPILOT ?= chartpilot
CONTAINER_TOOL ?= $(shell command -v podman || command -v docker || echo docker)

.PHONY: help install uninstall run deploy undeploy generate bundle docker-build docker-push

help: ## Show the targets
\t@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -e 's/:.*## /\\t/'

install: ## Install the CRDs (and the operator's namespace, where it keeps its seal key) into the cluster
\tkubectl create namespace $(NAMESPACE) --dry-run=client -o yaml | kubectl apply -f -
\tkubectl apply -f deploy/crds/

uninstall: ## Remove the CRDs, and with them every custom resource of their kinds
\tkubectl delete --ignore-not-found -f deploy/crds/

run: install ## Run the operator here against the cluster, with readable logs (Ctrl-C stops it)
\tPOD_NAMESPACE=$(NAMESPACE) $(CHARTPILOT) run --watches-file watches.yaml --log-format console

deploy: ## Deploy the operator in the cluster (namespace, CRDs, RBAC, Deployment) as deploy/ says
\tkubectl apply -k deploy/

undeploy: ## Remove what deploy applied
\tkubectl delete --ignore-not-found -k deploy/

generate: ## Write deploy/ again from watches.yaml and the chart or role, for the image IMG
\t$(CHARTPILOT) generate all --watches-file watches.yaml --output-dir deploy --name ${o.name} --namespace $(NAMESPACE) --service-account ${o.name} --image $(IMG)

bundle: ## An OLM bundle (bundle/ and bundle.Dockerfile) of version VERSION, for the image IMG
\t@test -n "$(VERSION)" || { echo 'make bundle VERSION=<semver>, e.g. VERSION=0.1.0'; exit 2; }
\t$(CHARTPILOT) generate bundle --watches-file watches.yaml --name ${o.name} --namespace $(NAMESPACE) --service-account ${o.name} --version $(VERSION) --image $(IMG)

docker-build: ## Build the operator image IMG
\t$(CONTAINER_TOOL) build -t $(IMG) .

docker-push: ## Push the operator image IMG
\t$(CONTAINER_TOOL) push $(IMG)
`;
}

/** The scaffold README's "Develop" section: the Makefile's loop, for a chart or a role. Markdown. */
export function developSection(what: 'chart' | 'role'): string {
  return `## Develop

The \`Makefile\` has operator-sdk's loop (\`make help\` lists it), with chartpilot's commands:

\`\`\`sh
make install                    # the CRDs (and the operator's namespace) into the cluster in KUBECONFIG
make run                        # the operator here, readable logs; edit the ${what} and it reloads (Ctrl-C stops it)
kubectl apply -f deploy/samples/ # in another terminal: a sample resource
make generate IMG=<image>       # deploy/ again after changing watches.yaml or the ${what}
make docker-build docker-push IMG=<image>
make deploy                     # the operator in the cluster, as deploy/ says
make bundle VERSION=0.1.0       # an OLM bundle
\`\`\`
`;
}

/** `repo:tag` (a registry port is not a tag); `latest` when the reference names none. */
function splitImage(image: string): [string, string] {
  const slash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  if (colon > slash) return [image.slice(0, colon), image.slice(colon + 1)];
  return [image, 'latest'];
}
