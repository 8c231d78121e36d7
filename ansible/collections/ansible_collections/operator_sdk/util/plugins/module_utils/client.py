# -*- coding: utf-8 -*-
# Copyright chartpilot authors. Licensed under the Apache License, Version 2.0.
"""The API client of operator_sdk.util's modules: kubernetes.core's own, so credentials come from
the same places as for kubernetes.core.k8s (module arguments, K8S_AUTH_* variables, a kubeconfig,
or the pod's service account) and a role needs no second configuration."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

IMPORT_ERROR = None
try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
    from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError, ResourceNotUniqueError
except ImportError:
    IMPORT_ERROR = traceback.format_exc()
    AUTH_ARG_SPEC = {}
    AnsibleK8SModule = None

    class DynamicApiError(Exception):
        pass

    class NotFoundError(DynamicApiError):
        pass

    class ResourceNotFoundError(Exception):
        pass

    class ResourceNotUniqueError(Exception):
        pass


def new_module(argument_spec, **kwargs):
    """An AnsibleK8SModule (kubernetes.core's module class) or a clear failure when it is missing."""
    if AnsibleK8SModule is None:
        from ansible.module_utils.basic import AnsibleModule

        module = AnsibleModule(argument_spec=argument_spec, **kwargs)
        module.fail_json(
            msg="operator_sdk.util needs the kubernetes.core collection and the kubernetes Python package "
            "(both are part of chartpilot's Ansible runtime: bash devcluster/ansible-runtime.sh)",
            exception=IMPORT_ERROR,
        )
    return AnsibleK8SModule(argument_spec=argument_spec, **kwargs)


def api_client(module):
    try:
        return get_api_client(module)
    except Exception as exc:  # kubernetes.core raises CoreException; any failure here is a configuration one
        module.fail_json(msg="Could not create a Kubernetes API client: {0}".format(exc))


def find_resource(client, kind, api_version):
    """The API resource for kind (or its plural, singular or short name) in api_version; None when unknown."""
    try:
        return client.resource(kind, api_version)
    except (ResourceNotFoundError, ResourceNotUniqueError):
        return None


def api_error(exc):
    """The parts of an API error worth showing (never the request, which may hold values)."""
    return dict(status=getattr(exc, "status", None), reason=getattr(exc, "reason", None), body=getattr(exc, "body", None))
