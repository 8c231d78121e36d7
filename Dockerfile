# syntax=docker/dockerfile:1
# The chartpilot base image: the operator, Node 24 and helm 4.1.4 (chartpilot-helm), no charts. An operator is an
# image FROM this one that adds its watches.yaml and charts (what `chartpilot new` scaffolds):
#
#   FROM chartpilot:0.1.0
#   COPY watches.yaml /opt/chartpilot/watches.yaml
#   COPY charts/ /opt/chartpilot/charts/
#
# Build: npm run image        (buildah; bases built from Debian and npm, see docs/operations/packaging.md)
#    or: docker build -t chartpilot:0.1.0 .
# Behind a TLS-intercepting proxy, hand the build your CA bundle as a secret (never part of the
# image): docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt -t chartpilot:0.1.0 .
# linux/amd64 only. helm is chartpilot-helm (helm-worker/), built on the host: see the build stage.

# Node 24 with npm, for the build stage; only its node binary reaches the final image.
ARG NODE_IMAGE=node:24-bookworm-slim
# The operating system of the final image (glibc, libstdc++, ca-certificates, curl).
ARG DEBIAN_IMAGE=debian:bookworm-slim

FROM --platform=linux/amd64 ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would compile before the sources are here, and the `node`
# devDependency's install script would fetch a second Node we do not need. The optional `ca`
# secret is an extra CA bundle for registries reached through a TLS-intercepting proxy; it is
# mounted for this step only.
RUN --mount=type=secret,id=ca,target=/run/secrets/ca \
    if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi \
 && npm ci --ignore-scripts --no-audit --no-fund
# helm is chartpilot-helm (helm-worker/: helm v4.1.4's own main, plus the worker mode chartpilot
# keeps warm), built on the host from the Go module proxy and handed in as
# dist/image/chartpilot-helm: `npm run image` builds and places it (devcluster/provision.sh
# helm-worker); by hand, copy it there before `docker build`. The build fails on any other helm
# version than the one chartpilot is tested with, or on a helm without the worker mode.
COPY dist/image/chartpilot-helm /out/helm
RUN test "$(/out/helm version --template '{{.Version}}')" = "v4.1.4" \
 && echo | CHARTPILOT_HELM_WORKER=1 /out/helm | grep -q '"ready":true'
COPY tsconfig.json ./
COPY bin/ bin/
COPY src/ src/
COPY scripts/bundle.ts scripts/bundler.ts scripts/ascii-source.ts scripts/
# What `npm run build` does, through the image's node (npm's PATH would prefer the unused `node`
# devDependency's binary): tsc, then esbuild bundles its output into dist/bundle/ (scripts/
# bundler.ts), which has every dependency inside and fails to build if anything would still be
# loaded from node_modules at run time. So the image needs no node_modules, nor dist/src: with
# neither, bin/chartpilot.js cannot fall back to an unbundled start. The source maps stay behind.
RUN node node_modules/typescript/bin/tsc -p tsconfig.json \
 && node dist/scripts/bundle.js \
 && test -s dist/bundle/chartpilot.js && test -s dist/bundle/postrender.js \
 && rm dist/bundle/*.map

# The final stage starts from plain Debian, not from the Node image: npm, corepack, yarn and the
# C headers never reach it, only the node binary.
FROM --platform=linux/amd64 ${DEBIAN_IMAGE}
LABEL org.opencontainers.image.title="chartpilot" \
      org.opencontainers.image.description="Turns any Helm chart into a Kubernetes API (operator-sdk helm-operator compatible)" \
      org.opencontainers.image.licenses="Apache-2.0"
# HOME and helm's directories point at /tmp: the Deployment mounts an emptyDir there and keeps
# the root filesystem read-only.
ENV NODE_ENV=production \
    HELM_BIN=/usr/local/bin/helm \
    HOME=/tmp \
    HELM_CACHE_HOME=/tmp/helm/cache \
    HELM_CONFIG_HOME=/tmp/helm/config \
    HELM_DATA_HOME=/tmp/helm/data
# curl carries each post-render from helm to the operator's render server (src/helm/postrender/
# server.ts); without it the operator falls back to a Node process per helm call (0.08 CPU-s each).
# chartpilot's own Debian base (npm run image) has it already; debian:bookworm-slim gets it here.
RUN command -v curl >/dev/null || { apt-get update \
 && apt-get install -y --no-install-recommends curl \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log; }
# Largest and least often changed first, so a code change rebuilds only the last layers.
COPY --from=build /usr/local/bin/node /usr/local/bin/node
COPY --from=build /out/helm /usr/local/bin/helm
# One helm, under both names: plain helm for anyone who runs `helm`, and the warm workers
# `chartpilot run` starts (--helm-mode, docs/architecture/helm-engine.md "Helm kept warm").
RUN ln -s helm /usr/local/bin/chartpilot-helm
WORKDIR /opt/chartpilot
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/dist/bundle ./dist/bundle
COPY --from=build /src/bin ./bin
# Not root, and a numeric id so Kubernetes can verify runAsNonRoot without /etc/passwd.
USER 65532:65532
EXPOSE 8080 8081
# `chartpilot run`, as operator-sdk's helm-operator image runs `helm-operator run`: a Deployment's
# `args:` are appended to the ENTRYPOINT, and operator-sdk's scaffold passes only flags there, so
# switching an operator-sdk project is changing its Dockerfile's FROM. `run` hands over to another
# command given first (src/cli/main.ts): `args: [run, ...]` of earlier chartpilot Deployments and
# `podman run <image> generate ...` keep working. No CMD, and no --watches-file: `run` reads
# ./watches.yaml of the working directory (this WORKDIR, or operator-sdk's `WORKDIR ${HOME}`), else
# $HOME/watches.yaml, else /opt/chartpilot/watches.yaml (src/cli/watches-location.ts).
ENTRYPOINT ["node", "--max-semi-space-size=4", "--optimize-for-size", "/opt/chartpilot/bin/chartpilot.js", "run"]
