# The demo operator that deploy/ runs: the chartpilot base image plus this repository's
# watches.yaml and the sample chart (charts/webapp), exactly what an application image does.
#
#   npm run image     # builds both with buildah (docs/operations/packaging.md), or with docker:
#   docker build -t chartpilot:0.1.0 .                                        # the base image
#   docker build -f deploy/webapp.Dockerfile -t chartpilot-webapp:0.1.0 .     # this one
ARG BASE_IMAGE=chartpilot:0.1.0
FROM ${BASE_IMAGE}
COPY watches.yaml /opt/chartpilot/watches.yaml
COPY charts/ /opt/chartpilot/charts/
