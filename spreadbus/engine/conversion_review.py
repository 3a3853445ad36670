"""ConversionReview (``apiextensions.k8s.io/v1``): the envelope around a feature's conversion.

A feature that serves a CRD in several versions registers one function converting one object to
a desired ``apiVersion`` (raising :class:`ConversionRefused` with a reason); this module reads the
review defensively, converts every object and answers, so a malformed review gets a ``Failure``
answer naming the field and never an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

API_VERSION: Final = "apiextensions.k8s.io/v1"

Convert = Callable[[Mapping[str, Any], str], dict[str, Any]]


class ConversionRefused(ValueError):
    """An object that cannot be converted; the message names what is wrong with it."""


def failed(message: str, uid: str = "", api_version: str = API_VERSION) -> dict[str, Any]:
    """A ConversionReview answer refusing the conversion with ``message``."""
    return {
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "response": {"uid": uid, "result": {"status": "Failure", "message": message}},
    }


def answer(body: object, convert: Convert) -> dict[str, Any]:
    """The ConversionReview answer for a request body (already decoded JSON); never raises."""
    request = body.get("request") if isinstance(body, dict) else None
    api_version = body.get("apiVersion") if isinstance(body, dict) else None
    api_version = api_version if isinstance(api_version, str) else API_VERSION
    uid = request.get("uid", "") if isinstance(request, dict) else ""
    uid = uid if isinstance(uid, str) else ""

    if not isinstance(request, dict) or not uid:
        return failed("request.uid: required", uid, api_version)
    desired = request.get("desiredAPIVersion")
    objects = request.get("objects")
    if not isinstance(desired, str) or not isinstance(objects, list):
        return failed("request.desiredAPIVersion and request.objects are required", uid,
                      api_version)
    converted = []
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict):
            return failed(f"request.objects[{index}]: must be an object", uid, api_version)
        try:
            converted.append(convert(obj, desired))
        except ConversionRefused as exc:
            return failed(f"request.objects[{index}]: {exc}", uid, api_version)
    return {
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}},
    }
