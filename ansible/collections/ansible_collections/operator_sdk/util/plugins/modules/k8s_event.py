#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright chartpilot authors. Licensed under the Apache License, Version 2.0.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: k8s_event
short_description: Record a Kubernetes Event about an object
version_added: "0.0.1"
author: chartpilot authors
description:
  - Creates a core/v1 Event named I(name) in I(namespace), usually about the custom resource the role reconciles.
  - Recording the same event again (same name, same reason) counts it as a repeat, as kubelet and
    controllers do, raising C(count) and C(lastTimestamp) and keeping C(firstTimestamp); a different
    reason starts the count again at 1.
  - With I(appendTimestamp) every call creates a new Event whose name is I(name) followed by a dot
    and the current time in hexadecimal nanoseconds (the suffix Kubernetes' own recorders use).
  - The involved object's C(uid) and C(resourceVersion) are looked up when it exists.
  - Same arguments as operator-sdk's operator_sdk.util.k8s_event; chartpilot's own implementation.
extends_documentation_fragment:
  - kubernetes.core.k8s_auth_options
options:
  state:
    description: C(present) records the event, C(absent) deletes the Event of that name.
    type: str
    choices: [present, absent]
    default: present
  name:
    description: The Event's name.
    type: str
    required: true
  namespace:
    description: The Event's namespace (the involved object's, for a namespaced object).
    type: str
    required: true
  merge_type:
    description: Accepted for compatibility; the Event is always written whole.
    type: list
    elements: str
    choices: [json, merge, strategic-merge]
  message:
    description: A human-readable description.
    type: str
    required: true
  reason:
    description: Why the event happened, short and CamelCase by convention.
    type: str
    required: true
  reportingComponent:
    description: The component that emits the event, e.g. C(example.com/memcached-operator).
    type: str
  type:
    description: The event's type.
    type: str
    choices: [Normal, Warning]
  source:
    description: The event's source.
    type: dict
    suboptions:
      component:
        description: The emitting component.
        type: str
        required: true
  involvedObject:
    description: The object the event is about.
    type: dict
    suboptions:
      apiVersion:
        description: Its API version.
        type: str
        required: true
      kind:
        description: Its kind.
        type: str
        required: true
      name:
        description: Its name.
        type: str
        required: true
      namespace:
        description: Its namespace.
        type: str
        required: true
  appendTimestamp:
    description: Create a new Event on every call, its name suffixed with the time.
    type: bool
    default: false
requirements:
  - kubernetes >= 24.2.0 (the Python client)
  - the kubernetes.core collection
"""

EXAMPLES = r"""
- name: Tell the user the backup finished
  operator_sdk.util.k8s_event:
    name: "{{ ansible_operator_meta.name }}-backup"
    namespace: "{{ ansible_operator_meta.namespace }}"
    reason: BackupDone
    message: Backup written to {{ bucket }}
    type: Normal
    reportingComponent: example.com/backup-operator
    source:
      component: backup-operator
    involvedObject:
      apiVersion: example.com/v1alpha1
      kind: Backup
      name: "{{ ansible_operator_meta.name }}"
      namespace: "{{ ansible_operator_meta.namespace }}"
"""

RETURN = r"""
result:
  description: The Event as written (or as deleted, with I(state=absent)).
  returned: success
  type: dict
"""

import datetime
import time

from ansible_collections.operator_sdk.util.plugins.module_utils.client import (
    AUTH_ARG_SPEC,
    DynamicApiError,
    NotFoundError,
    api_client,
    api_error,
    find_resource,
    new_module,
)

ARGUMENT_SPEC = dict(
    AUTH_ARG_SPEC,
    state=dict(type="str", default="present", choices=["present", "absent"]),
    name=dict(type="str", required=True),
    namespace=dict(type="str", required=True),
    merge_type=dict(type="list", elements="str", choices=["json", "merge", "strategic-merge"]),
    message=dict(type="str", required=True),
    reason=dict(type="str", required=True),
    reportingComponent=dict(type="str"),
    type=dict(type="str", choices=["Normal", "Warning"]),
    source=dict(type="dict", options=dict(component=dict(type="str", required=True))),
    involvedObject=dict(type="dict", options=dict(
        apiVersion=dict(type="str", required=True),
        kind=dict(type="str", required=True),
        name=dict(type="str", required=True),
        namespace=dict(type="str", required=True),
    )),
    appendTimestamp=dict(type="bool", default=False),
)


def rfc3339(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def existing(events, name, namespace):
    try:
        return events.get(name=name, namespace=namespace).to_dict()
    except NotFoundError:
        return None


def involved(module, client, spec):
    """The involved object reference, with the uid and resourceVersion of the object when it exists."""
    if not spec:
        return None
    ref = dict(spec)
    resource = find_resource(client, ref["kind"], ref["apiVersion"])
    if resource is None:
        return ref
    try:
        obj = resource.get(name=ref["name"], namespace=ref["namespace"] if resource.namespaced else None).to_dict()
    except NotFoundError:
        return ref
    except DynamicApiError as exc:
        module.warn("could not read the involved object {0} {1}: {2}".format(ref["kind"], ref["name"], exc.reason))
        return ref
    ref["uid"] = obj["metadata"]["uid"]
    ref["resourceVersion"] = obj["metadata"]["resourceVersion"]
    return ref


def main():
    module = new_module(ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    client = api_client(module)
    events = find_resource(client, "Event", "v1")
    name, namespace = p["name"], p["namespace"]
    if p["appendTimestamp"]:
        name = "{0}.{1:x}".format(name, time.time_ns())

    try:
        prior = None if p["appendTimestamp"] else existing(events, name, namespace)
        if p["state"] == "absent":
            if prior is None:
                module.exit_json(changed=False, result={})
            if not module.check_mode:
                events.delete(name=name, namespace=namespace)
            module.exit_json(changed=True, result=prior)

        now = rfc3339(datetime.datetime.now(datetime.timezone.utc))
        event = dict(
            apiVersion="v1",
            kind="Event",
            metadata=dict(name=name, namespace=namespace),
            message=p["message"],
            reason=p["reason"],
            type=p.get("type"),
            source=p.get("source"),
            reportingComponent=p.get("reportingComponent") or "",
            involvedObject=involved(module, client, p.get("involvedObject")) or {},
            count=1,
            firstTimestamp=now,
            lastTimestamp=now,
        )
        event = dict((k, v) for k, v in event.items() if v is not None)
        if prior is None:
            result = event if module.check_mode else events.create(body=event, namespace=namespace).to_dict()
            module.exit_json(changed=True, result=result)
        # A repeat of the same event counts up; another reason under the same name starts over.
        if prior.get("reason") == p["reason"]:
            event["count"] = (prior.get("count") or 1) + 1
            event["firstTimestamp"] = prior.get("firstTimestamp") or now
        event["metadata"]["resourceVersion"] = prior["metadata"]["resourceVersion"]
        result = event if module.check_mode else events.replace(body=event, namespace=namespace).to_dict()
        module.exit_json(changed=True, result=result)
    except DynamicApiError as exc:
        module.fail_json(msg="Could not record the event {0} in {1}: {2}".format(name, namespace, exc.reason), error=api_error(exc))


if __name__ == "__main__":
    main()
