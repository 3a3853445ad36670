"""``spreadbus up --members``'s options and its kubeconfig, as pure functions: the members named
(each a DNS label, none twice, none the hub's domain), the topology of each (one for every
member, or one each), and one kubeconfig with a context per cluster, named for it."""

from __future__ import annotations

from typing import Any

import pytest

from spreadbus.cli.kubeconfig_contexts import merged_kubeconfig
from spreadbus.cli.up import member_names, member_topologies


def kubesim_kubeconfig(server: str, token: str) -> dict[str, Any]:
    """As kubesim writes its own: every entry named ``kubesim``."""
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "kubesim", "cluster": {"server": server}}],
            "users": [{"name": "kubesim", "user": {"token": token}}],
            "contexts": [{"name": "kubesim", "context": {"cluster": "kubesim", "user": "kubesim",
                                                         "namespace": "default"}}],
            "current-context": "kubesim"}


def test_each_cluster_is_a_context_named_for_it_and_the_host_is_current() -> None:
    merged = merged_kubeconfig({"host": kubesim_kubeconfig("https://h", "t0"),
                                "member1": kubesim_kubeconfig("https://m1", "t1")}, "host")
    assert merged["current-context"] == "host"
    assert merged["clusters"] == [{"name": "host", "cluster": {"server": "https://h"}},
                                  {"name": "member1", "cluster": {"server": "https://m1"}}]
    assert merged["users"] == [{"name": "host", "user": {"token": "t0"}},
                               {"name": "member1", "user": {"token": "t1"}}]
    assert merged["contexts"][1] == {"name": "member1", "context": {
        "cluster": "member1", "user": "member1", "namespace": "default"}}


def test_a_kubeconfig_without_its_current_context_is_refused_naming_it() -> None:
    broken = {**kubesim_kubeconfig("https://m1", "t"), "current-context": "gone"}
    with pytest.raises(ValueError, match="no context named 'gone'"):
        merged_kubeconfig({"host": kubesim_kubeconfig("https://h", "t"), "m": broken}, "host")
    with pytest.raises(ValueError, match="current context 'nowhere'"):
        merged_kubeconfig({"host": kubesim_kubeconfig("https://h", "t")}, "nowhere")


def test_members_are_dns_labels_named_once_and_not_the_hub() -> None:
    assert member_names("member1, member2") == ["member1", "member2"]
    assert member_names("") == []
    for bad, message in [("Member_1", "--members 'Member_1': "),
                         ("hub", "--members 'hub': is the hub's domain"),
                         ("a,a", "a member is named twice")]:
        with pytest.raises(ValueError, match=message):
            member_names(bad)


def test_one_topology_for_every_member_or_one_each() -> None:
    members = ["member1", "member2"]
    assert member_topologies("elastic", members) == {"member1": "elastic", "member2": "elastic"}
    assert member_topologies(None, members) == {"member1": None, "member2": None}
    assert member_topologies("member1=elastic", members) == {"member1": "elastic",
                                                             "member2": None}
    assert member_topologies("member1=elastic,member2=three-zones", members) == {
        "member1": "elastic", "member2": "three-zones"}
    with pytest.raises(ValueError, match="'member3' is none of the --members"):
        member_topologies("member3=elastic", members)
    with pytest.raises(ValueError, match="--topology 'member2': give MEMBER=TOPOLOGY"):
        member_topologies("member1=elastic,member2", members)
