"""Custom resources converted between versions, by the CRD's conversion webhook where it has one.

A CRD with ``spec.conversion.strategy: None`` (the default) converts by rewriting ``apiVersion``
only. With ``strategy: Webhook`` kubesim does what the upstream API server does:

- objects are stored in the CRD's storage version: a write in another version is converted to
  it after admission and before it is stored (and compared for a generation bump);
- every read in another version (get, list, watch events, the objects writes return, the
  current object a patch applies to) is converted to the requested version;
- a conversion is one ``ConversionReview`` (``apiextensions.k8s.io/v1``) POSTed over HTTPS to
  ``clientConfig`` (a URL, or a Service resolved as for admission webhooks), verified against
  ``caBundle``, with every object of the read in one request, presenting no client certificate
  (as upstream, which has no setting for one) unless
  :attr:`kubesim.admission.Admission.certificate_for_conversions` says to present the admission
  webhooks' one;
- the answer must carry the request's uid, ``result.status: Success``, as many objects as were
  sent, each of the desired version; a converted object may change only its labels and
  annotations in ``metadata`` (the rest is restored from the original, as upstream's
  ``restoreObjectMeta``). Anything else fails the request with 500 InternalError and
  upstream's ``conversion webhook for <group/version>, Kind=<kind> failed: ...`` message.

Only ``v1`` reviews are spoken; a CRD whose ``conversionReviewVersions`` lacks it fails the same
way. Calls time out after 30 s, upstream's fixed conversion webhook timeout.

Signature::

    Converter(admission: Admission, crd_of: Callable[[str], JsonObject | None])
        .uses_webhook(rt: ResourceType) -> bool
        async .convert(rt: ResourceType, objs: list[JsonObject], desired: str) -> list[JsonObject]
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Final

from kubesim import errors
from kubesim.admission import Admission, CallFailed
from kubesim.interface import ApiError
from kubesim.registry import ResourceType

JsonObject = dict[str, Any]

TIMEOUT_SECONDS: Final = 30.0
_KEPT_METADATA: Final = ("labels", "annotations")


class _ConversionFailed(Exception):
    pass


def webhook_config(crd: JsonObject | None) -> JsonObject | None:
    """The CRD's conversion webhook (``spec.conversion.webhook``), if it converts by webhook."""
    conversion = ((crd or {}).get("spec") or {}).get("conversion") or {}
    if conversion.get("strategy") != "Webhook":
        return None
    webhook = conversion.get("webhook")
    return webhook if isinstance(webhook, dict) else {}


def storage_api_version(crd: JsonObject) -> str:
    spec = crd.get("spec") or {}
    for version in spec.get("versions") or ():
        if isinstance(version, dict) and version.get("storage"):
            return f"{spec.get('group')}/{version.get('name')}"
    return ""


class Converter:
    def __init__(self, admission: Admission, crd_of: Callable[[str], JsonObject | None]) -> None:
        self.admission = admission
        self.crd_of = crd_of

    def uses_webhook(self, rt: ResourceType) -> bool:
        return rt.custom and webhook_config(self.crd_of(rt.crd_name)) is not None

    def storage_version(self, rt: ResourceType) -> str:
        crd = self.crd_of(rt.crd_name)
        return storage_api_version(crd) if crd is not None else rt.api_version

    async def convert(
        self, rt: ResourceType, objs: list[JsonObject], desired: str
    ) -> list[JsonObject]:
        """``objs`` as ``desired``; one review for all the objects of another version."""
        todo = [i for i, o in enumerate(objs) if o.get("apiVersion") != desired]
        if not todo:
            return objs
        crd = self.crd_of(rt.crd_name)
        webhook = webhook_config(crd)
        out = list(objs)
        if webhook is None:
            for i in todo:
                out[i] = {**objs[i], "apiVersion": desired}
            return out
        sources = [objs[i] for i in todo]
        try:
            converted = await self._call(webhook, sources, desired)
        except _ConversionFailed as e:
            raise _failure(sources[0], str(e)) from e
        for i, source, result in zip(todo, sources, converted, strict=True):
            out[i] = _checked(source, result, desired)
        return out

    async def _call(self, webhook: JsonObject, objs: list[JsonObject], desired: str) -> list[Any]:
        if "v1" not in (webhook.get("conversionReviewVersions") or ["v1"]):
            raise _ConversionFailed(
                "no supported conversion review versions: the webhook accepts "
                f"{webhook.get('conversionReviewVersions')}, kubesim sends v1"
            )
        uid = str(uuid.uuid4())
        review = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objs},
        }
        target = {"name": "conversion", "clientConfig": webhook.get("clientConfig") or {}}
        try:
            body = await self.admission.post(
                target, review, TIMEOUT_SECONDS,
                authenticate=self.admission.certificate_for_conversions)
        except CallFailed as e:
            raise _ConversionFailed(str(e)) from e
        response = body.get("response") if isinstance(body, dict) else None
        if not isinstance(response, dict):
            raise _ConversionFailed("the conversion review has no response")
        if response.get("uid") != uid:
            raise _ConversionFailed(f"expected response uid {uid!r}, got {response.get('uid')!r}")
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise _ConversionFailed(str(result.get("message") or "conversion failed"))
        converted = response.get("convertedObjects")
        if not isinstance(converted, list) or len(converted) != len(objs):
            got = len(converted) if isinstance(converted, list) else 0
            raise _ConversionFailed(f"expected {len(objs)} converted objects, got {got}")
        return converted


def _checked(source: JsonObject, result: Any, desired: str) -> JsonObject:
    if not isinstance(result, dict):
        raise _failure(source, "a converted object is not an object")
    if result.get("apiVersion") != desired:
        raise _failure(
            source,
            f"invalid converted object: expected apiVersion {desired!r}, "
            f"got {result.get('apiVersion')!r}",
        )
    if result.get("kind") != source.get("kind"):
        raise _failure(source, f"invalid converted object: expected kind {source.get('kind')!r}")
    # Only labels and annotations may change; everything else in metadata is the source's.
    metadata = dict(source.get("metadata") or {})
    new_metadata = result.get("metadata") or {}
    for key in _KEPT_METADATA:
        if isinstance(new_metadata, dict) and key in new_metadata:
            metadata[key] = new_metadata[key]
        else:
            metadata.pop(key, None)
    return {**result, "metadata": metadata}


def _failure(source: JsonObject, why: str) -> ApiError:
    return errors.internal(
        f"conversion webhook for {source.get('apiVersion')}, Kind={source.get('kind')} "
        f"failed: {why}"
    )
