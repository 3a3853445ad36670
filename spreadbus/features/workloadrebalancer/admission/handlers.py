"""The WorkloadRebalancer validating webhook (``/validate-workloadrebalancer``).

Karmada has none: its CRD schema refuses what this refuses, with the same field paths, so a
cluster whose API server does not check the schema (kubesim included) answers the same. It
reads nothing but the object.
"""

from __future__ import annotations

from kubesemantics.field_errors import describe
from kubesemantics.lenient_json import as_map, as_str
from spreadbus.engine.admission_chain import ALLOW, Verdict, deny
from spreadbus.engine.review import AdmissionRequest
from spreadbus.features.workloadrebalancer.core.validation import validate_workloadrebalancer


async def validate(request: AdmissionRequest) -> Verdict:
    if request.operation not in ("CREATE", "UPDATE") or request.sub_resource:
        return ALLOW
    obj = request.object
    if obj is None:
        return deny("request.object: required", code=400, reason="BadRequest")
    errors = validate_workloadrebalancer(obj)
    if not errors:
        return ALLOW
    name = as_str(as_map(obj.get("metadata")).get("name"))
    lines = "; ".join(describe(e) for e in errors)
    causes = [{"field": e.field, "reason": f"Field{e.type}", "message": e.to_dict()["message"]}
              for e in errors]
    return deny(f'WorkloadRebalancer.apps.karmada.io "{name}" is invalid: {lines}', code=422,
                reason="Invalid", causes=causes)
