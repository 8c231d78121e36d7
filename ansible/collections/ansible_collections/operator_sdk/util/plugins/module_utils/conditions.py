# -*- coding: utf-8 -*-
# Copyright chartpilot authors. Licensed under the Apache License, Version 2.0.
"""Status conditions as k8s_status merges them: by type, a condition's lastTransitionTime moving
only when its status changes (the Kubernetes API conventions), and what counts as "no change"."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import re

CONDITION_KEYS = ("type", "status", "reason", "message", "lastHeartbeatTime", "lastTransitionTime")
REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9]*)$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d)?(\.\d+)?(([+-]\d\d:\d\d)|Z)$")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate(conditions):
    """Conditions without unset keys; raises ValueError naming the first invalid field."""
    out = []
    for condition in conditions:
        if not isinstance(condition, dict):
            raise ValueError("each condition must be an object")
        c = dict((k, v) for k, v in condition.items() if v is not None)
        if isinstance(c.get("status"), bool):
            c["status"] = "True" if c["status"] else "False"
        for key in c:
            if key not in CONDITION_KEYS:
                raise ValueError("{0} is not a condition field (allowed: {1})".format(key, ", ".join(CONDITION_KEYS)))
        for key in ("type", "status"):
            if not c.get(key):
                raise ValueError("a condition needs `{0}`".format(key))
        if c["status"] not in ("True", "False", "Unknown"):
            raise ValueError('condition status must be "True", "False" or "Unknown", not {0!r}'.format(c["status"]))
        if c.get("reason") and not REASON.match(c["reason"]):
            raise ValueError("condition reason must be one CamelCase word, not {0!r}".format(c["reason"]))
        for key in ("lastHeartbeatTime", "lastTransitionTime"):
            if c.get(key) and not RFC3339.match(c[key]):
                raise ValueError("{0} must be an RFC 3339 date-time, not {1!r}".format(key, c[key]))
        out.append(c)
    return out


def merge(old_conditions, new_conditions, now):
    """old_conditions with new_conditions merged in by type (order kept, new types appended).

    A given condition replaces the old one of its type when any field but lastTransitionTime
    differs; otherwise the old one stays as it is. lastTransitionTime, unless given, is `now` for a
    new condition or a changed status, and the old value when only reason/message changed.
    """
    merged = copy.deepcopy(old_conditions or [])
    for condition in new_conditions:
        c = dict(condition)
        idx = next((i for i, o in enumerate(merged) if o.get("type") == c.get("type")), None)
        old = merged[idx] if idx is not None else None
        if old is not None and not any(k != "lastTransitionTime" and v != old.get(k) for k, v in c.items()):
            continue
        if "lastTransitionTime" not in c:
            if old is not None and old.get("status") == c.get("status") and old.get("lastTransitionTime"):
                c["lastTransitionTime"] = old["lastTransitionTime"]
            else:
                c["lastTransitionTime"] = now
        if idx is None:
            merged.append(c)
        else:
            merged[idx] = c
    return merged


def contains(obj, subset, replace_lists=False):
    """Whether obj already holds everything subset says: dicts key by key, lists as sets of items
    (replaced whole with replace_lists, except conditions), other values equal."""
    if isinstance(subset, dict):
        if not isinstance(obj, dict):
            return False
        for key, value in subset.items():
            if replace_lists and key != "conditions" and isinstance(value, list):
                if obj.get(key) != value:
                    return False
            elif not contains(obj.get(key), value, replace_lists):
                return False
        return True
    if isinstance(subset, (list, tuple)):
        return isinstance(obj, list) and all(item in obj for item in subset)
    return obj == subset
