"""The HorizontalPodAutoscaler controller: sets the replicas of anything with a scale subresource.

As upstream's, it never looks at a workload's kind: the HPA's ``scaleTargetRef`` (apiVersion and
kind) is mapped to resources through discovery (:meth:`Cluster.resources_for`), the target's
``autoscaling/v1`` Scale is read and written through the ``scale`` subresource, and the pods
are those its ``status.selector`` selects. Deployments, ReplicaSets, StatefulSets and custom
resources whose CRD declares a scale subresource are all handled alike.

Each HPA is synced every ``hpa_sync_period`` (upstream 15 s), the first time one period after it
appears. A sync reads the metrics (:mod:`kubesim.behaviour.pod_metrics`, Resource metrics only),
asks :mod:`kubesim.behaviour.replica_calculator` for a count per metric, keeps the highest,
normalizes it (:mod:`kubesim.behaviour.scale_normalization`), writes the Scale if the count
changes, and writes the status: current and desired replicas, current metrics, lastScaleTime and
the AbleToScale, ScalingActive and ScalingLimited conditions, with upstream's reasons, messages
and Events. Timestamps come from the API's clock.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from kubesemantics import label_selector
from kubesim.behaviour import pod_metrics
from kubesim.behaviour.events import EventRecorder
from kubesim.behaviour.informer import object_key
from kubesim.behaviour.quantity import QuantityError, format_milli, milli_value
from kubesim.behaviour.replica_calculator import (
    MetricError,
    Proposal,
    Timing,
    average_value_replicas,
    utilization_replicas,
)
from kubesim.behaviour.replicaset import cluster_now
from kubesim.behaviour.scale_normalization import (
    History,
    normalize,
    normalize_with_behavior,
    store_scale_event,
)
from kubesim.behaviour.settings import Settings
from kubesim.behaviour.shared_informers import Informers
from kubesim.behaviour.workqueue import WorkQueue
from kubesim.interface import GVR, HORIZONTALPODAUTOSCALERS, ApiError, Cluster, JsonObject

log = logging.getLogger(__name__)

KIND = "HorizontalPodAutoscaler"


class _Failed(Exception):
    """A step that stops the sync; the status has been set to say why."""


class _Unable(Exception):
    """A step that failed: the error returned upward, the Event and the condition it leaves."""

    def __init__(self, error: str, reason: str, message: str, event: str = "") -> None:
        super().__init__(error)
        self.error = error
        self.reason = reason
        self.message = message
        self.event = event or error


class _Sync:
    """One sync of one HPA: the status being built and the events it records."""

    def __init__(self, hpa: JsonObject, now: datetime, stamp: str) -> None:
        self.hpa = hpa
        self.now = now
        self.stamp = stamp
        old = hpa.get("status") or {}
        self.conditions: list[JsonObject] = [dict(c) for c in old.get("conditions") or []]

    def condition(self, type_: str, status: str, reason: str, message: str) -> None:
        """Upstream's setCondition: the transition time moves only when the status does."""
        for existing in self.conditions:
            if existing.get("type") == type_:
                break
        else:
            existing = {"type": type_}
            self.conditions.append(existing)
        if existing.get("status") != status:
            existing["lastTransitionTime"] = self.stamp
        existing.update(status=status, reason=reason, message=message)


class HorizontalPodAutoscalerController:
    def __init__(self, cluster: Cluster, informers: Informers, settings: Settings) -> None:
        self.cluster = cluster
        self.informers = informers
        self.settings = settings
        self.events = EventRecorder(cluster, "horizontal-pod-autoscaler", enabled=settings.events)
        self.queue = WorkQueue("horizontalpodautoscaler", self._sync, workers=1)
        self.histories: dict[str, History] = {}
        # each HPA's pod selector as of its last sync (None: not synced yet, selects nothing)
        self.selectors: dict[str, label_selector.Selector | None] = {}
        informers.hpas.add_handler(self._on_hpa)

    def start(self) -> None:
        self.queue.start()

    async def stop(self) -> None:
        await self.queue.stop()
        await self.events.stop()

    def _on_hpa(self, old: JsonObject | None, new: JsonObject | None) -> None:
        # upstream's fixed-interval rate limiter: every HPA waits a sync period, new or changed
        if new is not None:
            key = object_key(new)
            self.selectors.setdefault(key, None)
            self.queue.add_after(key, self.settings.hpa_sync_period)
        elif old is not None:
            self.selectors.pop(object_key(old), None)

    async def _sync(self, key: str) -> None:
        hpa = self.informers.hpas.get(key)
        if hpa is None or hpa["metadata"].get("deletionTimestamp"):
            self.histories.pop(key, None)
            return
        try:
            await self._reconcile(key, hpa)
        except _Failed:
            pass
        except ApiError as exc:
            log.debug("horizontal pod autoscaler %s: %s", key, exc.message)
        finally:
            self.queue.add_after(key, self.settings.hpa_sync_period)

    # --- the reconcile ---------------------------------------------------------------------

    async def _reconcile(self, key: str, hpa: JsonObject) -> None:
        sync = _Sync(hpa, cluster_now(self.cluster), self.cluster.now())
        spec = hpa.get("spec") or {}
        status = hpa.get("status") or {}
        namespace = hpa["metadata"].get("namespace") or ""
        ref = spec.get("scaleTargetRef") or {}
        try:
            scale, resource = await self._scale(namespace, ref)
        except _Unable as failure:
            self.events.warning(hpa, KIND, "FailedGetScale", failure.error)
            sync.condition("AbleToScale", "False", "FailedGetScale", failure.message)
            # only the condition changes: the rest of the status stands as it was
            await self._write_status(
                sync,
                status,
                int(status.get("currentReplicas") or 0),
                status.get("currentMetrics"),
                rescaled=False,
            )
            raise _Failed from failure
        sync.condition(
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
        )
        current = int((scale.get("spec") or {}).get("replicas") or 0)
        history = self.histories.setdefault(key, History())
        history.record_initial(current, sync.now)
        minimum = spec.get("minReplicas")
        minimum = 1 if minimum is None else int(minimum)
        maximum = int(spec.get("maxReplicas") or 0)
        behavior = spec.get("behavior") if isinstance(spec.get("behavior"), dict) else None
        metric_statuses: list[JsonObject] | None = None
        desired, reason, rescale = 0, "", True
        if current == 0 and minimum != 0:
            rescale = False
            sync.condition(
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            )
        elif current > maximum:
            reason, desired = "Current number of replicas above Spec.MaxReplicas", maximum
        elif current < minimum:
            reason, desired = "Current number of replicas below Spec.MinReplicas", minimum
        else:
            proposed, metric, metric_statuses, error = self._replicas_for_metrics(sync, scale)
            if error is not None and proposed == -1:
                await self._write_status(sync, status, current, metric_statuses)
                self.events.warning(hpa, KIND, "FailedComputeMetricsReplicas", error)
                raise _Failed
            desired = max(desired, proposed)
            if desired > current:
                reason = f"{metric} above target"
            if desired < current:
                reason = "All metrics below target"
            desired = self._normalize(sync, history, behavior, current, desired, minimum, maximum)
            rescale = desired != current
        if rescale:
            updated = {**scale, "spec": {**(scale.get("spec") or {}), "replicas": desired}}
            try:
                await self.cluster.update(
                    resource, updated, namespace=namespace, subresource="scale"
                )
            except ApiError as exc:
                self.events.warning(
                    hpa,
                    KIND,
                    "FailedRescale",
                    f"New size: {desired}; reason: {reason}; error: {exc.message}",
                )
                sync.condition(
                    "AbleToScale",
                    "False",
                    "FailedUpdateScale",
                    f"the HPA controller was unable to update the target scale: {exc.message}",
                )
                await self._write_status(sync, status, current, metric_statuses)
                raise _Failed from exc
            sync.condition(
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
            )
            self.events.normal(
                hpa, KIND, "SuccessfulRescale", f"New size: {desired}; reason: {reason}"
            )
            store_scale_event(history, behavior, current, desired, sync.now)
        else:
            desired = current
        await self._write_status(
            sync, status, current, metric_statuses, desired=desired, rescaled=rescale
        )

    async def _scale(self, namespace: str, ref: JsonObject) -> tuple[JsonObject, GVR]:
        """The target's Scale and the resource it was read from (the first mapping that
        answers; the first mapping's error when none does)."""
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        prefix = "the HPA controller was unable to get the target's current scale: "
        if api_version.count("/") > 1:
            error = f"unexpected GroupVersion string: {api_version}"
            raise _Unable(error, "FailedGetScale", prefix + error)
        group = api_version.split("/")[0] if "/" in api_version else ""
        resources = self.cluster.resources_for(group, kind)
        if not resources:
            error = f'no matches for kind "{kind}" in group "{group}"'
            raise _Unable(error, "FailedGetScale", prefix + error)
        first: ApiError | None = None
        for resource in resources:
            try:
                scale = await self.cluster.get(
                    resource, str(ref.get("name") or ""), namespace=namespace, subresource="scale"
                )
            except ApiError as exc:
                first = first or exc
                continue
            return scale, resource
        error = first.message if first is not None else "unrecognized resource"
        raise _Unable(error, "FailedGetScale", prefix + error)

    def _normalize(
        self,
        sync: _Sync,
        history: History,
        behavior: JsonObject | None,
        current: int,
        desired: int,
        minimum: int,
        maximum: int,
    ) -> int:
        window = timedelta(seconds=self.settings.hpa_downscale_stabilization)
        if behavior is None:
            result = normalize(history, current, desired, minimum, maximum, sync.now, window)
        else:
            result = normalize_with_behavior(
                history, behavior, current, desired, minimum, maximum, sync.now, window
            )
        sync.condition("AbleToScale", "True", result.able_reason, result.able_message)
        sync.condition(
            "ScalingLimited",
            "True" if result.limited else "False",
            result.limited_reason,
            result.limited_message,
        )
        return result.replicas

    # --- metrics ---------------------------------------------------------------------------

    def _replicas_for_metrics(
        self, sync: _Sync, scale: JsonObject
    ) -> tuple[int, str, list[JsonObject] | None, str | None]:
        """(replicas, metric, statuses, error); replicas is -1 when nothing can be proposed."""
        hpa = sync.hpa
        selector_text = (scale.get("status") or {}).get("selector") or ""
        if not selector_text:
            self.events.warning(hpa, KIND, "SelectorRequired", "selector is required")
            sync.condition(
                "ScalingActive",
                "False",
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
            )
            return -1, "", None, "selector is required"
        try:
            selector = label_selector.parse(selector_text)
        except label_selector.SelectorError as exc:
            invalid_selector = (
                f"couldn't convert selector into a corresponding internal selector object: {exc}"
            )
            self.events.warning(hpa, KIND, "InvalidSelector", invalid_selector)
            sync.condition("ScalingActive", "False", "InvalidSelector", invalid_selector)
            return -1, "", None, invalid_selector
        namespace = hpa["metadata"].get("namespace") or ""
        pods = [
            p
            for p in self.informers.pods.by_index("namespace", namespace)
            if selector.matches(p["metadata"].get("labels"))
        ]
        key = object_key(hpa)
        if key in self.selectors:
            self.selectors[key] = selector
        controlling = self._hpas_selecting(namespace, pods)
        if len(controlling) > 1:
            ambiguous = (
                f"pods by selector {selector_text} are controlled by multiple HPAs: "
                f"[{' '.join(controlling)}]"
            )
            self.events.warning(hpa, KIND, "AmbiguousSelector", ambiguous)
            sync.condition("ScalingActive", "False", "AmbiguousSelector", ambiguous)
            return -1, "", None, ambiguous
        spec_replicas = int((scale.get("spec") or {}).get("replicas") or 0)
        metrics = [m for m in (hpa.get("spec") or {}).get("metrics") or [] if isinstance(m, dict)]
        statuses: list[JsonObject] = [{"type": ""} for _ in metrics]
        replicas, metric = 0, ""
        invalid = 0
        first: _Unable | None = None
        for i, spec in enumerate(metrics):
            try:
                proposal, name, statuses[i] = self._metric_replicas(sync, spec, spec_replicas, pods)
            except _Unable as failure:
                self.events.warning(hpa, KIND, failure.reason, failure.event)
                if first is None:
                    first = failure
                invalid += 1
                continue
            if replicas == 0 or proposal > replicas:
                replicas, metric = proposal, name
        error: str | None = None
        if first is not None:
            error = (
                f"invalid metrics ({invalid} invalid out of {len(metrics)}), "
                f"first error is: {first.error}"
            )
        if first is not None and (invalid >= len(metrics) or replicas < spec_replicas):
            sync.condition("ScalingActive", "False", first.reason, first.message)
            return -1, "", statuses, error
        sync.condition(
            "ScalingActive",
            "True",
            "ValidMetricFound",
            f"the HPA was able to successfully calculate a replica count from {metric}",
        )
        return replicas, metric, statuses, error

    def _hpas_selecting(self, namespace: str, pods: list[JsonObject]) -> list[str]:
        """The HPAs of the namespace whose last selector picks any of ``pods``."""
        prefix = f"{namespace}/"
        return sorted(
            key
            for key, selector in self.selectors.items()
            if selector is not None
            and key.startswith(prefix)
            and any(selector.matches(p["metadata"].get("labels")) for p in pods)
        )

    def _timing(self, now: datetime) -> Timing:
        return Timing(
            now=now,
            tolerance=self.settings.hpa_tolerance,
            cpu_initialization_period=timedelta(
                seconds=self.settings.hpa_cpu_initialization_period
            ),
            initial_readiness_delay=timedelta(seconds=self.settings.hpa_initial_readiness_delay),
        )

    def _metric_replicas(
        self, sync: _Sync, spec: JsonObject, current: int, pods: list[JsonObject]
    ) -> tuple[int, str, JsonObject]:
        """One metric's proposal, its name for messages and its status entry."""
        kind = str(spec.get("type") or "")
        if kind != "Resource":
            raise _unsupported(kind, spec)
        source: JsonObject = spec.get("resource") or {}
        name = str(source.get("name") or "")
        target: JsonObject = source.get("target") or {}
        samples = [pod_metrics.sample(p, name) for p in pods]
        timing = self._timing(sync.now)
        proposal: Proposal
        current_value: JsonObject
        try:
            if target.get("averageValue") is not None:
                try:
                    wanted = milli_value(str(target["averageValue"]))
                except QuantityError as exc:
                    raise MetricError(str(exc)) from exc
                try:
                    proposal = average_value_replicas(current, wanted, samples, name, timing)
                except MetricError as exc:
                    raise MetricError(f"failed to get {name} usage: {exc}") from exc
                current_value = {"averageValue": format_milli(proposal.average)}
                label = f"{name} resource"
            elif target.get("averageUtilization") is None:
                raise MetricError(
                    "invalid resource metric source: neither an average utilization target nor "
                    "an average value (usage) target was set"
                )
            else:
                utilization = int(target["averageUtilization"])
                try:
                    proposal = utilization_replicas(current, utilization, samples, name, timing)
                except MetricError as exc:
                    raise MetricError(f"failed to get {name} utilization: {exc}") from exc
                current_value = {
                    "averageUtilization": proposal.utilization,
                    "averageValue": format_milli(proposal.average),
                }
                label = f"{name} resource utilization (percentage of request)"
        except MetricError as exc:
            raise _Unable(
                f"failed to get {name} resource metric value: {exc}",
                "FailedGetResourceMetric",
                f"the HPA was unable to compute the replica count: {exc}",
                str(exc),
            ) from exc
        status = {"type": "Resource", "resource": {"name": name, "current": current_value}}
        return proposal.replicas, label, status

    # --- status ----------------------------------------------------------------------------

    async def _write_status(
        self,
        sync: _Sync,
        old: JsonObject,
        current: int,
        metric_statuses: list[JsonObject] | None,
        *,
        desired: int | None = None,
        rescaled: bool = False,
    ) -> None:
        """Upstream's setStatus and updateStatusIfNeeded: written only when it changed."""
        status: JsonObject = {
            "currentReplicas": current,
            "desiredReplicas": int(old.get("desiredReplicas") or 0) if desired is None else desired,
        }
        last_scale = sync.stamp if rescaled else old.get("lastScaleTime")
        if last_scale:
            status["lastScaleTime"] = last_scale
        if metric_statuses:
            status["currentMetrics"] = metric_statuses
        if sync.conditions:
            status["conditions"] = sync.conditions
        if _same(status, old):
            return
        hpa = sync.hpa
        try:
            written = await self.cluster.update(
                HORIZONTALPODAUTOSCALERS,
                {**hpa, "status": status},
                namespace=hpa["metadata"].get("namespace"),
                subresource="status",
            )
        except ApiError as exc:
            self.events.warning(hpa, KIND, "FailedUpdateStatus", exc.message)
            raise
        self.informers.hpas.write_result(written)


def _same(new: JsonObject, old: JsonObject) -> bool:
    def norm(s: JsonObject) -> dict[str, Any]:
        return {k: v for k, v in s.items() if v not in (None, 0, [], {})}

    return norm(new) == norm(old)


def _unsupported(kind: str, spec: JsonObject) -> _Unable:
    """Pods, Object, External and ContainerResource metrics: kubesim has no source for them."""
    reasons = {
        "Pods": ("FailedGetPodsMetric", "failed to get pods metric value"),
        "Object": ("FailedGetObjectMetric", "failed to get object metric value"),
        "External": ("FailedGetExternalMetric", "failed to get external metric value"),
        "ContainerResource": (
            "FailedGetContainerResourceMetric",
            "failed to get container metric value",
        ),
    }
    reason, prefix = reasons.get(kind, ("InvalidMetricSourceType", "unknown metric source type"))
    source = spec.get(kind[:1].lower() + kind[1:]) or {}
    name = (source.get("metric") or {}).get("name") or source.get("name") or kind
    error = f"unable to get metric {name}: kubesim serves only pod cpu and memory usage"
    return _Unable(
        f"{prefix}: {error}",
        reason,
        f"the HPA was unable to compute the replica count: {error}",
        error,
    )
