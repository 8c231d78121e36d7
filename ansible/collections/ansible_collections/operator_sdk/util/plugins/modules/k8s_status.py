#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright chartpilot authors. Licensed under the Apache License, Version 2.0.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_status
short_description: Set fields and conditions on the status of a Kubernetes object
version_added: "0.0.1"
author: chartpilot authors
description:
  - Writes the status subresource of one object, normally the custom resource the role reconciles.
  - By default the given I(status) keys are merged into the current status and I(conditions) are
    merged with the current ones by C(type). Nothing is written when the status already holds
    everything given, so an unchanged re-run reports C(changed=false).
  - A condition's C(lastTransitionTime), unless given, is set to now when the condition is new or
    its C(status) changed, and kept when only its reason or message changed.
  - Conflicting writes (HTTP 409) are retried on the fresh object.
  - Same arguments as operator-sdk's operator_sdk.util.k8s_status; chartpilot's own implementation.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  api_version:
    description: The object's API version.
    type: str
    default: v1
    aliases: [api, version]
  kind:
    description: The object's kind (or its plural, singular or short name).
    type: str
    required: true
  name:
    description: The object's name.
    type: str
    required: true
  namespace:
    description: The object's namespace; omit for a cluster-scoped object.
    type: str
  status:
    description:
      - Keys to set on the status. One of I(status) or I(conditions) is required.
      - A C(conditions) key here is written as given, without validation; use I(conditions) instead.
    type: dict
  conditions:
    description:
      - Conditions to merge into C(status.conditions) by C(type) (replacing the whole status with I(replace)).
    type: list
    elements: dict
    suboptions:
      type:
        description: The condition's type, unique within the list.
        type: str
        required: true
      status:
        description: The condition's status.
        type: str
        choices: ["True", "False", "Unknown"]
        required: true
      reason:
        description: One CamelCase word.
        type: str
      message:
        description: A human-readable explanation.
        type: str
      lastHeartbeatTime:
        description: An RFC 3339 date-time.
        type: str
      lastTransitionTime:
        description: An RFC 3339 date-time; by default set when the condition's status changes.
        type: str
  replace:
    description: Replace the whole status (HTTP PUT of the status subresource) instead of merging into it.
    type: bool
    default: false
    aliases: [force]
  replace_lists:
    description:
      - When comparing with the current status, a list other than C(conditions) counts as unchanged
        only when equal, not when it merely contains the given items.
    type: bool
    default: false
requirements:
  - kubernetes >= 24.2.0 (the Python client)
  - the kubernetes.core collection
"""

EXAMPLES = r"""
- name: Report what the role did
  operator_sdk.util.k8s_status:
    api_version: apps.example.com/v1alpha1
    kind: Memcached
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      replicas: 3
    conditions:
      - type: Migrated
        status: "True"
        reason: MigrationDone
        message: schema v3 in place
"""

RETURN = r"""
result:
  description: The object after the write, or as it was when nothing had to change.
  returned: success
  type: dict
"""

import copy

from ansible_collections.operator_sdk.util.plugins.module_utils.client import (
    AUTH_ARG_SPEC,
    DynamicApiError,
    api_client,
    api_error,
    find_resource,
    new_module,
)
from ansible_collections.operator_sdk.util.plugins.module_utils.conditions import contains, merge, now_rfc3339, validate

CONDITION_SPEC = dict(
    type=dict(type="str", required=True),
    status=dict(type="str", required=True, choices=["True", "False", "Unknown"]),
    reason=dict(type="str"),
    message=dict(type="str"),
    lastHeartbeatTime=dict(type="str"),
    lastTransitionTime=dict(type="str"),
)

ARGUMENT_SPEC = dict(
    AUTH_ARG_SPEC,
    api_version=dict(type="str", default="v1", aliases=["api", "version"]),
    kind=dict(type="str", required=True),
    name=dict(type="str", required=True),
    namespace=dict(type="str"),
    status=dict(type="dict"),
    conditions=dict(type="list", elements="dict", options=CONDITION_SPEC),
    replace=dict(type="bool", default=False, aliases=["force"]),
    replace_lists=dict(type="bool", default=False),
)

ATTEMPTS = 5


def wanted_status(module):
    status = copy.deepcopy(module.params.get("status") or {})
    try:
        conditions = validate(module.params.get("conditions") or [])
    except ValueError as exc:
        module.fail_json(msg="The given conditions are invalid: {0}".format(exc))
    if conditions and "conditions" in status:
        module.fail_json(msg="Give conditions either in `conditions` or in `status.conditions`, not in both")
    if conditions:
        status["conditions"] = conditions
    return status


def one_attempt(module, resource, wanted):
    """(result, changed), or None after a write conflict (the object changed meanwhile)."""
    p = module.params
    try:
        instance = resource.get(name=p["name"], namespace=p.get("namespace")).to_dict()
    except DynamicApiError as exc:
        module.fail_json(msg="Could not read {0} {1}: {2}".format(p["kind"], p["name"], exc.reason), error=api_error(exc))
    current = instance.get("status") or {}
    now = now_rfc3339()
    if p["replace"]:
        new_status = copy.deepcopy(wanted)
        if "conditions" in new_status:
            new_status["conditions"] = merge(
                [c for c in current.get("conditions") or [] if any(n.get("type") == c.get("type") for n in new_status["conditions"])],
                new_status["conditions"], now)
        if new_status == current:
            return instance, False
    else:
        if not wanted:
            return instance, False
        new_status = copy.deepcopy(wanted)
        if isinstance(wanted.get("conditions"), list):
            new_status["conditions"] = merge(current.get("conditions"), wanted["conditions"], now)
        if contains(current, new_status, p["replace_lists"]):
            return instance, False
    if module.check_mode:
        return instance, True
    body = dict(
        apiVersion=instance["apiVersion"],
        kind=instance["kind"],
        metadata=dict(name=p["name"], resourceVersion=instance["metadata"]["resourceVersion"]),
        status=new_status,
    )
    if p.get("namespace"):
        body["metadata"]["namespace"] = p["namespace"]
    try:
        if p["replace"]:
            instance["status"] = new_status
            result = resource.status.replace(body=instance, namespace=p.get("namespace"))
        else:
            result = resource.status.patch(body=body, namespace=p.get("namespace"), content_type="application/merge-patch+json")
    except DynamicApiError as exc:
        if getattr(exc, "status", None) == 409:
            return None
        module.fail_json(msg="Could not write the status of {0} {1}: {2}".format(p["kind"], p["name"], exc.reason), error=api_error(exc))
    return result.to_dict(), True


def main():
    module = new_module(ARGUMENT_SPEC, supports_check_mode=True, required_one_of=[("status", "conditions")])
    p = module.params
    wanted = wanted_status(module)
    client = api_client(module)
    resource = find_resource(client, p["kind"], p["api_version"])
    if resource is None:
        module.fail_json(msg="The API server has no kind {0} in {1}".format(p["kind"], p["api_version"]))
    if "status" not in (resource.subresources or {}):
        module.fail_json(msg="{0} in {1} has no status subresource: enable it in its CRD (subresources: status: {{}})".format(resource.kind, resource.api_version))
    for _ in range(ATTEMPTS):
        outcome = one_attempt(module, resource, wanted)
        if outcome is not None:
            module.exit_json(result=outcome[0], changed=outcome[1])
    module.fail_json(msg="The status of {0} {1} kept changing under this write ({2} conflicts)".format(p["kind"], p["name"], ATTEMPTS))


if __name__ == "__main__":
    main()
