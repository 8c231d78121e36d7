#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright chartpilot authors. Licensed under the Apache License, Version 2.0.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: osdk_metric
short_description: Create or update a custom Prometheus metric served by the operator
version_added: "0.4.0"
author: chartpilot authors
description:
  - POSTs one metric operation as JSON to the operator's metrics endpoint (by default
    C(http://localhost:5050/metrics), which the operator serves to its runs); the operator registers
    the metric on first use and exposes it on its own /metrics. The body is documented in this
    collection's README.md.
  - Exactly one of I(counter), I(gauge), I(histogram) or I(summary) is given.
  - Same arguments as operator-sdk's operator_sdk.util.osdk_metric; chartpilot's own implementation.
options:
  name:
    description: The metric's name.
    type: str
    required: true
  description:
    description: The metric's help text.
    type: str
    required: true
  address:
    description: The metrics endpoint.
    type: str
    default: http://localhost:5050/metrics
  counter:
    description: A counter.
    type: dict
    suboptions:
      increment:
        description: Add 1.
        type: bool
      add:
        description: Add this (not negative) value.
        type: float
  gauge:
    description: A gauge.
    type: dict
    suboptions:
      set:
        description: Set to this value.
        type: float
      increment:
        description: Add 1.
        type: bool
      decrement:
        description: Subtract 1.
        type: bool
      add:
        description: Add this value.
        type: float
      subtract:
        description: Subtract this value.
        type: float
      set_to_current_time:
        description: Set to the current Unix time in seconds.
        type: bool
  histogram:
    description: A histogram (default buckets).
    type: dict
    suboptions:
      observe:
        description: Record one observation.
        type: float
  summary:
    description: A summary.
    type: dict
    suboptions:
      observe:
        description: Record one observation.
        type: float
"""

EXAMPLES = r"""
- name: Count backups
  operator_sdk.util.osdk_metric:
    name: backups_total
    description: Backups taken
    counter:
      increment: true

- name: Remember the size of the last backup
  operator_sdk.util.osdk_metric:
    name: backup_size_bytes
    description: Size of the last backup
    gauge:
      set: "{{ backup_size }}"
"""

RETURN = r"""
status_code:
  description: The endpoint's HTTP status, when it was not 200.
  returned: failure
  type: int
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError

KINDS = ("counter", "gauge", "histogram", "summary")

ARGUMENT_SPEC = dict(
    name=dict(type="str", required=True),
    description=dict(type="str", required=True),
    address=dict(type="str", default="http://localhost:5050/metrics"),
    counter=dict(type="dict", options=dict(increment=dict(type="bool"), add=dict(type="float"))),
    gauge=dict(type="dict", options=dict(
        set=dict(type="float"),
        increment=dict(type="bool"),
        decrement=dict(type="bool"),
        add=dict(type="float"),
        subtract=dict(type="float"),
        set_to_current_time=dict(type="bool"),
    )),
    histogram=dict(type="dict", options=dict(observe=dict(type="float"))),
    summary=dict(type="dict", options=dict(observe=dict(type="float"))),
)


def body(params):
    """The JSON body: name, description and the one metric given, its unset operations left out."""
    out = dict(name=params["name"], description=params["description"])
    for kind in KINDS:
        if params.get(kind) is not None:
            out[kind] = dict((k, v) for k, v in params[kind].items() if v is not None)
    return out


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        mutually_exclusive=[KINDS],
        required_one_of=[KINDS],
    )
    payload = json.dumps(body(module.params))
    try:
        open_url(module.params["address"], data=payload, method="POST", headers={"Content-Type": "application/json"},
                 timeout=10, validate_certs=True)
    except HTTPError as exc:
        module.fail_json(msg=exc.read().decode("utf-8", "replace") or str(exc), status_code=exc.code)
    except (URLError, OSError) as exc:
        module.fail_json(msg="Could not reach the metrics endpoint {0}: {1}".format(module.params["address"], exc))
    module.exit_json(changed=True)


if __name__ == "__main__":
    main()
