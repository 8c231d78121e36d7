#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright chartpilot authors. Licensed under the Apache License, Version 2.0.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: requeue_after
short_description: Ask the operator to reconcile this resource again after a while
version_added: "0.1.0"
author: chartpilot authors
description:
  - Returns the period in its result; the operator reads it from the task's runner event
    (C(runner_on_ok), C(event_data.res.period)) and runs the resource again that long after this
    run ends, whatever its reconcile period says.
  - Only the last C(requeue_after) of a run counts. The module changes nothing.
  - Same argument and result as operator-sdk's operator_sdk.util.requeue_after; chartpilot's own implementation.
options:
  time:
    description:
      - A duration in Go's notation, hours, minutes and seconds (also milliseconds), e.g. C(24s),
        C(1m), C(1h30m), C(1.5h).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Look again in 30 seconds, the database is still starting
  operator_sdk.util.requeue_after:
    time: 30s
"""

RETURN = r"""
period:
  description: The period exactly as given (what ansible-operator reads).
  returned: success
  type: str
  sample: 1m30s
period_seconds:
  description: The same period in seconds.
  returned: success
  type: float
  sample: 90.0
"""

import re

from ansible.module_utils.basic import AnsibleModule

PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text):
    """Seconds in a Go-style duration of h/m/s/ms parts; None when text is not one."""
    text = text.strip()
    if text == "" or text == "0":
        return 0.0 if text == "0" else None
    pos, total = 0, 0.0
    for m in PART.finditer(text):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * SECONDS[m.group(2)]
        pos = m.end()
    return total if pos == len(text) else None


def main():
    module = AnsibleModule(argument_spec=dict(time=dict(type="str", required=True)), supports_check_mode=True)
    period = module.params["time"]
    seconds = parse_duration(period)
    if seconds is None:
        module.fail_json(msg="requeue_after: time {0!r} is not a duration like 30s, 5m or 1h30m".format(period))
    module.exit_json(changed=False, period=period, period_seconds=seconds)


if __name__ == "__main__":
    main()
