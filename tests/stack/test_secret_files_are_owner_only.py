"""Every file holding a secret is created readable by its owner alone, whatever the umask.

The kubeconfigs (with kubesim's bearer token), kubesim's state (Secrets among its objects), the
private keys and the nkey seeds are written through :func:`tlsserving.write_secret` or created
0600 at once: a umask of 0, which would leave an ordinary file 0666, changes nothing, and no
moment passes with the bytes in a file others may read. ``spreadbus up``'s own files are
checked on a running stack in ``tests/stack/test_local_stack.py``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesim import KubeSimThread
from spreadbus.runtime.bus_users import ensure_users, seed_file
from tests.fixtures.kubesim import kubesim_process
from tlsserving import make_ca, write_secret

OWNER_ONLY = 0o600


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask of 0: what is not created 0600 on purpose comes out readable by everyone."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_a_secret_is_owner_only_while_its_bytes_are_written(
    tmp_path: Path, open_umask: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "kubeconfig"
    seen: list[tuple[int, bytes]] = []
    replace = os.replace

    def checking_replace(source: str, destination: Path) -> None:
        seen.append((mode(Path(source)), Path(source).read_bytes()))
        replace(source, destination)

    monkeypatch.setattr(os, "replace", checking_replace)
    write_secret(target, b"token: t0p")
    assert seen == [(OWNER_ONLY, b"token: t0p")], "written whole into a file made 0600"
    assert mode(target) == OWNER_ONLY
    assert target.read_bytes() == b"token: t0p"
    assert [p.name for p in tmp_path.iterdir()] == ["kubeconfig"], "no partial file left"


def test_a_secret_replaces_a_file_others_could_read(tmp_path: Path) -> None:
    target = tmp_path / "ca.key"
    target.write_bytes(b"old")
    target.chmod(0o644)
    write_secret(target, b"new")
    assert mode(target) == OWNER_ONLY
    assert target.read_bytes() == b"new"


def test_a_written_key_is_owner_only_and_its_certificate_readable(
    tmp_path: Path, open_umask: None,
) -> None:
    (tmp_path / "ca.key").write_bytes(b"an earlier key")
    (tmp_path / "ca.key").chmod(0o644)
    paths = make_ca("test CA").write(tmp_path, "ca")
    assert mode(paths.key) == OWNER_ONLY
    assert paths.key.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert mode(paths.cert) & 0o444 == 0o444


def test_nkey_seeds_are_owner_only_in_an_owner_only_directory(
    tmp_path: Path, open_umask: None,
) -> None:
    credentials = tmp_path / "credentials"
    ensure_users(credentials, ["planner", "reader"])
    assert mode(credentials) == 0o700
    for user in ("planner", "reader"):
        assert mode(seed_file(credentials, user)) == OWNER_ONLY


def test_kubesims_kubeconfig_and_state_are_owner_only(tmp_path: Path, open_umask: None) -> None:
    state = tmp_path / "state.json"
    with kubesim_process(tmp_path / "kubeconfig", "--no-behaviour", f"--state={state}") as sim:
        assert "token:" in sim.kubeconfig.read_text()
        assert mode(sim.kubeconfig) == OWNER_ONLY
    assert sim.exit_code == 0
    assert state.exists(), "saved on stop"
    assert mode(state) == OWNER_ONLY


def test_an_in_process_kubesims_kubeconfig_is_owner_only(
    tmp_path: Path, open_umask: None,
) -> None:
    sim = KubeSimThread().start()
    try:
        written = sim.write_kubeconfig(tmp_path / "kubeconfig")
    finally:
        sim.stop()
    assert mode(written) == OWNER_ONLY
