/**
 * `chartpilot new --ansible`: a new operator repository whose kind is served by an Ansible role —
 * the role (a kubernetes.core.k8s task making a ConfigMap from the spec, its defaults and argument
 * specs), watches.yaml, a Dockerfile `FROM` the Ansible image, and deploy/ with the CRD (its schema
 * from the argument specs), RBAC (from the role's tasks), the Deployment and a sample. As for
 * charts, everything is checked before the first file is written.
 */
import { developSection, projectMakefile } from './makefile.js';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gvkProblems } from './crd.js';
import { ANSIBLE_IMAGE_NAME, defaultAnsibleImage, deployOptionProblems, IMAGE_HOME, packageVersion } from './deploy.js';
import { EnvironmentError, InputError } from './errors.js';
import { pluralOf } from './kind-names.js';
import { tableResolver } from './rbac-plan.js';
import { monitoringDefaults, renderBundle, type Env } from './render.js';
import { monitoringFiles } from './monitoring-cli.js';
import { errorMessage } from '../lib/errors.js';

export const NEW_ANSIBLE_HELP = `Usage: chartpilot new --ansible <dir> --group <group> --kind <Kind> [--version <version>] [flags]

Creates a new operator repository in <dir> (which must not exist or be empty) that serves the API
<Kind>.<version>.<group> with an Ansible role, run by chartpilot's Ansible image:

  roles/<kind>/         the role: tasks/main.yml (a kubernetes.core.k8s task making a ConfigMap
                        from the spec), defaults/main.yml, meta/argument_specs.yml
  watches.yaml          maps the kind to the role (a finalizer, commented out)
  Dockerfile            FROM the chartpilot Ansible image, adding watches.yaml and roles/
  deploy/               CRD (schema from the role's argument specs), RBAC (from the role's tasks),
                        the operator Deployment, its metrics Service, a sample CR, a Kustomization
  monitoring/           alerts (a PrometheusRule, a plain rule file) and a Grafana dashboard
  README.md             how to build, deploy and regenerate

Flags:
  --group <group>       the API group, a domain you own, e.g. apps.example.com (required)
  --kind <Kind>         the kind, CamelCase, e.g. Greeting (required)
  --version <version>   the API version (default v1alpha1)
  --name <name>         the operator's name (default <kind>-operator): Deployment, namespace <name>-system
  --image <ref>         the operator image to build and deploy (default <name>:0.1.0)
  --base-image <ref>    the chartpilot Ansible image to build FROM (default ${defaultAnsibleImage()})
  -h, --help            show this help`;

export interface NewAnsibleOptions {
  /** Absolute path of the directory to create. */
  readonly dir: string;
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly name?: string | undefined;
  readonly image?: string | undefined;
  readonly baseImage?: string | undefined;
}

export interface NewAnsibleDeps {
  readonly env: Env;
  readonly warn: (line: string) => void;
  readonly note: (line: string) => void;
  /** Why the directory cannot be used, if it cannot (new.ts's rule: absent or empty). */
  readonly dirProblems: (dir: string) => Promise<string[]>;
}

/** Creates the project; returns the files written, relative to `dir`. */
export async function newAnsibleProject(o: NewAnsibleOptions, deps: NewAnsibleDeps): Promise<string[]> {
  const problems = gvkProblems(o);
  problems.push(...(await deps.dirProblems(o.dir)));
  const role = o.kind.toLowerCase();
  const name = o.name ?? `${role}-operator`;
  const deploy = { name, namespace: `${name}-system`, serviceAccount: name, image: o.image ?? `${name}:0.1.0`, ansible: true };
  problems.push(...deployOptionProblems(deploy).map((p) => (o.name === undefined && p.startsWith('--name') ? `${p}; pass --name` : p)));
  if (o.baseImage !== undefined && (o.baseImage === '' || /\s/u.test(o.baseImage))) problems.push(`--base-image "${o.baseImage}" is not an image reference`);
  if (problems.length > 0) throw new InputError(problems);

  const source = new Map<string, string>([
    ['watches.yaml', watchesYaml(o, role)],
    [`roles/${role}/tasks/main.yml`, tasksYaml(o.kind)],
    [`roles/${role}/defaults/main.yml`, defaultsYaml(o.kind)],
    [`roles/${role}/meta/argument_specs.yml`, argumentSpecsYaml(o.kind)],
    [`roles/${role}/meta/main.yml`, metaYaml(o.kind)],
  ]);
  const written = await writeAll(o.dir, source);

  // deploy/ is rendered from the project just written, so its paths are the project's own.
  const bundle = await renderBundle({ ...deploy, watchesFile: join(o.dir, 'watches.yaml'), resolver: tableResolver }, deps.env);
  for (const n of bundle.notes) deps.note(n);
  for (const w of bundle.warnings) deps.warn(w);
  const files = new Map<string, string>();
  for (const [file, text] of bundle.files) files.set(`deploy/${file}`, text);
  // Beside deploy/, not in it: `kubectl apply -R -f deploy/` must not meet a PrometheusRule (CRDs
  // of the Prometheus Operator), a rule file or a dashboard.
  for (const [file, text] of monitoringFiles(monitoringDefaults(deploy))) files.set(`monitoring/${file}`, text);
  files.set('Dockerfile', dockerfile(o.baseImage ?? defaultAnsibleImage(), o.kind));
  files.set('.dockerignore', '# Only watches.yaml and roles/ go into the image.\n*\n!watches.yaml\n!roles\n');
  files.set('Makefile', projectMakefile({ name, namespace: deploy.namespace, image: deploy.image }));
  files.set('README.md', readme({ ...o, name, role, image: deploy.image, namespace: deploy.namespace }));
  written.push(...(await writeAll(o.dir, files)));
  return written;
}

async function writeAll(dir: string, files: ReadonlyMap<string, string>): Promise<string[]> {
  const written: string[] = [];
  try {
    for (const [file, text] of files) {
      await mkdir(dirname(join(dir, file)), { recursive: true });
      await writeFile(join(dir, file), text);
      written.push(file);
    }
  } catch (err) {
    throw new EnvironmentError(`cannot write to ${dir}: ${errorMessage(err)}`, { cause: err });
  }
  return written;
}

function watchesYaml(o: NewAnsibleOptions, role: string): string {
  return `# Each entry maps a custom resource kind to an Ansible role (operator-sdk's ansible-operator format).
# The role runs with the CR's spec as variables (camelCase keys become snake_case), plus
# ansible_operator_meta.name and .namespace, whenever something it depends on changes.
- group: ${o.group}
  version: ${o.version}
  kind: ${o.kind}
  role: ${role}
  # Deleting a ${o.kind} can run the role once more first, e.g. to clean up outside the cluster:
  # finalizer:
  #   name: ${o.group}/finalizer
  #   vars:
  #     state: absent
`;
}

function tasksYaml(kind: string): string {
  return `---
# The ${kind}'s objects. Each run gets the CR's spec as variables (see meta/argument_specs.yml) and
# ansible_operator_meta (the CR's name and namespace). Objects made in the CR's namespace get an
# ownerReference to it, so they go when it goes; chartpilot re-runs the role when one drifts.
- name: The ${kind}'s ConfigMap
  kubernetes.core.k8s:
    state: present
    definition:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: "{{ ansible_operator_meta.name }}-${kind.toLowerCase()}"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        message: "{{ message }}"
        log_level: "{{ log_level }}"
`;
}

function defaultsYaml(kind: string): string {
  return `---
# The ${kind}'s defaults: what a run uses for keys its spec leaves out (keep them in step with
# meta/argument_specs.yml, whose defaults the generated sample shows).
message: Hello from ${kind}
log_level: info
`;
}

function argumentSpecsYaml(kind: string): string {
  return `---
# The role's variables: Ansible checks them when the role runs, and \`chartpilot generate crd\`
# derives the ${kind} CRD's spec schema from them (a CR writes log_level as logLevel).
argument_specs:
  main:
    short_description: Makes the ConfigMap of a ${kind}.
    options:
      message:
        type: str
        default: Hello from ${kind}
        description: The text the ConfigMap holds under the key message.
      log_level:
        type: str
        default: info
        choices: [debug, info, warning, error]
        description: How much the application logs.
`;
}

function metaYaml(kind: string): string {
  return `---
galaxy_info:
  role_name: ${kind.toLowerCase()}
  description: Serves the ${kind} kind through chartpilot.
  min_ansible_version: "2.15"
dependencies: []
`;
}

function dockerfile(baseImage: string, kind: string): string {
  return `# The ${kind} operator: chartpilot's Ansible image (the Ansible runtime with kubernetes.core and
# operator_sdk.util) plus this repository's watches.yaml and roles.
# Build: docker build -t <image> .   or   buildah bud -t <image> .   (the image deploy/operator.yaml names)
FROM ${baseImage}
COPY watches.yaml ${IMAGE_HOME}/watches.yaml
COPY roles/ ${IMAGE_HOME}/roles/
`;
}

function readme(p: NewAnsibleOptions & { name: string; role: string; image: string; namespace: string }): string {
  const plural = pluralOf(p.kind);
  return `# ${p.name}

A Kubernetes operator that serves the API \`${p.kind}.${p.version}.${p.group}\` with the Ansible
role \`roles/${p.role}\`: for every ${p.kind}, chartpilot runs the role with the resource's \`spec\`
as variables. Generated by \`chartpilot new --ansible\` (chartpilot ${packageVersion()}).

## Layout

| path | what |
|---|---|
| \`watches.yaml\` | maps ${p.kind} to the role |
| \`roles/${p.role}/tasks/main.yml\` | what a run does: a ConfigMap from the spec |
| \`roles/${p.role}/meta/argument_specs.yml\` | the role's variables: Ansible checks them, the CRD's schema comes from them |
| \`roles/${p.role}/defaults/main.yml\` | the values of variables a spec leaves out |
| \`Makefile\` | the develop loop: \`make install run\`, \`deploy\`, \`generate\`, \`bundle\`, \`docker-build\` |
| \`Dockerfile\` | the operator image: chartpilot's Ansible image plus watches.yaml and roles/ |
| \`deploy/crds/\` | the CustomResourceDefinition |
| \`deploy/rbac.yaml\` | least-privilege permissions, read from the role's kubernetes.core tasks |
| \`deploy/operator.yaml\` | the Deployment (namespace \`${p.namespace}\`) |
| \`deploy/samples/\` | a sample ${p.kind}: its spec holds the argument specs' defaults |
| \`monitoring/\` | alerts (\`prometheus-rule.yaml\` for the Prometheus Operator, \`rules.yml\` for a plain Prometheus) and a Grafana dashboard (\`grafana-dashboard.json\`): apply them where Prometheus runs; \`chartpilot generate monitoring --help\` makes them again with other settings |

## Spec keys and role variables

The CR's spec keys are camelCase (\`logLevel\`), the role's variables snake_case (\`log_level\`):
chartpilot converts them as operator-sdk's ansible-operator does (\`snakeCaseParameters\`, on by
default). Add a variable to \`meta/argument_specs.yml\` and \`defaults/main.yml\`, then regenerate.

${developSection('role')}
## Build and deploy

The image is \`${p.baseImage ?? defaultAnsibleImage()}\` plus \`watches.yaml\` and \`roles/\`;
chartpilot's \`npm run image\` builds that base (\`${ANSIBLE_IMAGE_NAME}\`) next to the plain one.

\`\`\`sh
docker build -t ${p.image} .    # or: buildah bud -t ${p.image} .  (or podman build)
docker push ${p.image}          # your cluster must pull it: name it in deploy/operator.yaml
kubectl apply -k deploy/
kubectl wait --for condition=established crd/${plural}.${p.group}
kubectl apply -f deploy/samples/
kubectl get ${plural} -A
\`\`\`

Try the role without a cluster image first: \`POD_NAMESPACE=${p.namespace} chartpilot run --watches-file watches.yaml\`
on a machine with the Ansible runtime (\`npm run cluster:provision\` in chartpilot installs it).
Outside a pod the operator must be told the namespace it runs in (it keeps its seal key there);
create it first.

## After changing the role

Regenerate what depends on it (the CRD follows meta/argument_specs.yml, the RBAC the kinds the
tasks create):

\`\`\`sh
chartpilot generate all --output-dir deploy --name ${p.name} --namespace ${p.namespace} --service-account ${p.name} --image ${p.image}
\`\`\`

A task whose kind is computed (\`kind: "{{ kind }}"\`, a definition from a variable) cannot be
read: \`generate rbac\` names it under "Review" in deploy/rbac.yaml; grant it by hand.
`;
}
