"""Which addresses of a Service's Endpoints a webhook call may go to.

The calls themselves, round robin over a real Service, are in
tests/webhook/test_kubesim_spreads_calls_over_service_endpoints.py; here is the port and
readiness choice alone, on stored Endpoints objects.
"""

from __future__ import annotations

from typing import Any

from kubesim.admission import ready_endpoints


def subset(ips: list[str], ports: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"addresses": [{"ip": ip} for ip in ips], "ports": ports, **extra}


def test_every_ready_address_of_every_subset_listing_the_named_port_is_a_candidate() -> None:
    endpoints = {
        "subsets": [
            subset(["10.0.0.1", "10.0.0.2"], [{"name": "https", "port": 8443}]),
            subset(["10.0.0.3"], [{"name": "metrics", "port": 9090}]),
            subset(
                ["127.0.0.1"],
                [{"name": "https", "port": 9443}],
                notReadyAddresses=[{"ip": "127.0.0.2"}],
            ),
        ]
    }
    assert ready_endpoints(endpoints, "https") == [
        ("10.0.0.1", 8443),
        ("10.0.0.2", 8443),
        ("127.0.0.1", 9443),
    ]
    assert ready_endpoints(endpoints, "metrics") == [("10.0.0.3", 9090)]


def test_an_unnamed_service_port_takes_the_only_port_of_a_subset() -> None:
    endpoints = {
        "subsets": [
            subset(["10.0.0.1"], [{"name": "https", "port": 8443}]),
            subset(["10.0.0.2"], [{"name": "a", "port": 1}, {"name": "b", "port": 2}]),
            subset(["10.0.0.3"], [{"port": 7443}]),
        ]
    }
    assert ready_endpoints(endpoints, "") == [("10.0.0.1", 8443), ("10.0.0.3", 7443)]


def test_only_unready_addresses_or_malformed_entries_leave_no_candidate() -> None:
    endpoints = {
        "subsets": [
            {"notReadyAddresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 443}]},
            subset(["10.0.0.2"], [{"port": "443"}]),
            subset(["10.0.0.3"], [{"port": True}]),
            {"addresses": [{"ip": ""}, "10.0.0.4", {}], "ports": [{"port": 443}]},
            "not a subset",
        ]
    }
    assert ready_endpoints(endpoints, "") == []
    assert ready_endpoints({}, "") == []
